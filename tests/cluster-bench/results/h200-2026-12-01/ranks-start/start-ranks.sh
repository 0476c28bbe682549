#!/usr/bin/env bash
# A parallel run's start, two builds alternated in one call (BUILDS: names
# of .benchx/webgrav-NAME): a Plummer sphere of N in all on 2 and 4 ranks
# sharing the one GPU, ready to step (--t-end 0: it reports its start).
set -u
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
B=$PWD/.benchx
M="mpirun --allow-run-as-root --oversubscribe --bind-to none"
cd /tmp
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T="/usr/bin/time -f wall_%e_s,_peak_%M_KiB"
for round in 1 2; do
  for b in ${BUILDS:-ranks share}; do
    for spec in "2 33554432" "2 67108864" "4 67108864"; do
      set -- $spec
      echo "== $b round $round: $1 ranks, plummer -n $2 --t-end 0"
      $T $M -np $1 $B/webgrav-$b run --model plummer -n $2 --seed 1 --theta 0.75 --alpha 0 --t-end 0 2>&1 | grep -E "generated|ready in|wall|rror|relative energy" | cut -c1-300
    done
  done
done
