#!/usr/bin/env bash
# Redraws on the GPU (a7f41f0: after), and with the redraw's kernels built
# at the start (warm), beside the host's (167baf2: before), two rounds;
# then Bonsai beside warm at webgrav's equal-accuracy theta.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / ; done
ldconfig
mkdir -p "$OUT/x"
chmod +x .benchx/*
STEPS=48 bash tests/cluster-bench/steps.sh webgrav-before,webgrav-after,webgrav-warm 8388608 33554432 > "$OUT/x/steps.log" 2>&1
STEPS=48 bash tests/cluster-bench/steps.sh webgrav-before,webgrav-after,webgrav-warm 8388608 33554432 > "$OUT/x/steps2.log" 2>&1
grep "steps on" "$OUT/x/steps.log" "$OUT/x/steps2.log"
cp .benchx/webgrav-warm .benchx/webgrav
THETA=0.73 bash tests/cluster-bench/bonsai_mpi.sh 4194304 16777216 > "$OUT/x/bonsai.log" 2>&1
grep -E '"code"|steps on' "$OUT/x/bonsai.log"
