#!/usr/bin/env bash
# The CLI's start, builds alternated in one call (BUILDS: names of
# .benchx/webgrav-NAME): a 2^27 - 1 Plummer sphere generated and ready
# to step (--t-end 0: it reports its start); 8 steps with a log line
# every 2; a 2^26 Milky Way's start.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
B=$PWD/.benchx
cd /tmp
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T="/usr/bin/time -f wall_%e_s,_faults_%R,_peak_%M_KiB"
for round in 1 2; do
  for b in ${BUILDS:-csvpar2 gpuref measure}; do
    W=$B/webgrav-$b
    echo "== $b round $round plummer -n 134217727 --t-end 0"
    $T $W run --model plummer -n 134217727 --seed 1 --t-end 0 2>&1 | grep -E "generated|ready in|wall|rror|^\{"
    echo "== $b round $round plummer -n 134217727, 8 steps of 1/64, a log line every 2"
    $T $W run --model plummer -n 134217727 --seed 1 --dt 0.015625 --t-end 0.125 --log-every 0.03125 2>&1 | grep -E "generated|ready in|wall|rror|relative energy|^\{" | sed -E 's/"phase_ms":\{[^}]*\},//'
    echo "== $b round $round milky-way -n 67108864 --t-end 0"
    $T $W run --model milky-way -n 67108864 --seed 1 --t-end 0 2>&1 | grep -E "generated|ready in|wall|rror"
  done
done
