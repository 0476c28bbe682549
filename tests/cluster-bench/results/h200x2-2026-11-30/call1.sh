#!/usr/bin/env bash
# The GPU redraw (a7f41f0) beside the host one (167baf2's build), two H200s.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / ; done
ldconfig
mkdir -p "$OUT/x"
nvidia-smi -L
chmod +x .benchx/*
echo "== bit for bit on the H200 (two ranks as threads on GPU 0)"
.benchx/cluster-test redraws_on_the_gpu --nocapture 2>&1 | tail -6
echo "== steps"
STEPS=48 bash tests/cluster-bench/steps.sh webgrav-before,webgrav-after 8388608 33554432 > "$OUT/x/steps.log" 2>&1
tail -3 "$OUT/x/steps.log"
echo "== beside Bonsai"
cp .benchx/webgrav-after .benchx/webgrav
THETA=0.73 bash tests/cluster-bench/bonsai_mpi.sh 4194304 16777216 > "$OUT/x/bonsai.log" 2>&1
tail -12 "$OUT/x/bonsai.log"
