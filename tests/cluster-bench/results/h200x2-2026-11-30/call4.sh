#!/usr/bin/env bash
# 561b5ac (final) on two H200s: the GPU redraw bit for bit against the
# host's on NVIDIA (release tests/cluster.rs), then 48 steps beside
# 167baf2 (before).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / ; done
ldconfig
mkdir -p "$OUT/x"
chmod +x .benchx/*
.benchx/cluster-test redraws_on_the_gpu --nocapture 2>&1 | tail -5
STEPS=48 bash tests/cluster-bench/steps.sh webgrav-before,webgrav-final 8388608 33554432 > "$OUT/x/steps.log" 2>&1
grep "steps on" "$OUT/x/steps.log"
