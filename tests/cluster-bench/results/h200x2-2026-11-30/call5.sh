#!/usr/bin/env bash
# The solver's host buffers kept across redraws (carry) beside 561b5ac
# (final), two rounds, on two H200s.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" / ; done
ldconfig
mkdir -p "$OUT/x"
chmod +x .benchx/*
for round in 1 2; do
  STEPS=48 bash tests/cluster-bench/steps.sh webgrav-final,webgrav-carry 8388608 33554432 > "$OUT/x/steps-$round.log" 2>&1
done
grep "steps on\|^==" "$OUT/x/steps-1.log" "$OUT/x/steps-2.log"
