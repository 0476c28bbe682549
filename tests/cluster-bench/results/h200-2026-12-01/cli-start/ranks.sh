#!/usr/bin/env bash
# Log lines of a run on two ranks sharing the one GPU, two builds
# alternated (BUILDS: names of .benchx/webgrav-NAME): a Plummer sphere of
# N (2^25) in all, 8 steps of 1/64, a log line after every step.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
B=$PWD/.benchx
M="mpirun --allow-run-as-root --oversubscribe --bind-to none"
N=${N:-33554432}
cd /tmp
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for b in ${BUILDS:-measure ranks}; do
    echo "== $b round $round: 2 ranks, plummer -n $N, 8 steps, a log line every step"
    /usr/bin/time -f "wall %e s" $M -np 2 $B/webgrav-$b run --model plummer -n $N --seed 1 --theta 0.75 --alpha 0 --dt 0.015625 --t-end 0.125 --log-every 0.015625 2>&1 | grep -E "ready|wall|rror|^\{" | sed -E 's/"phases?_[a-z_]*":\{[^}]*\},//g' | cut -c1-600
  done
done
