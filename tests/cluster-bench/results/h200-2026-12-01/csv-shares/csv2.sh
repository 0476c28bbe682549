#!/usr/bin/env bash
# CSV written and read by two builds in one call (BUILDS: names of
# .benchx/webgrav-NAME), one GPU and ranks sharing it.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
B=$PWD/.benchx
M="mpirun --allow-run-as-root --oversubscribe --bind-to none"
N=${N:-16777216}
cd /tmp
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for b in ${BUILDS:-csv csvpar}; do
  W=$B/webgrav-$b
  echo "=== build $b"
  /usr/bin/time -f "command: %e s" $W run --model plummer -n $N --seed 1 --t-end 0 --out $b.csv 2>&1 | grep -E "wrote|command:"
  sed '1000i # time = 0' $b.csv > $b-whole.csv
  echo "== one GPU, whole read"
  /usr/bin/time -f "command: %e s" $W run --in $b.csv --theta 0.75 --alpha 0 --t-end 0 2>&1 | grep -E "read|command:|rror"
  for f in $b-whole $b; do
    for np in 2 4; do
      echo "== $f.csv, $np ranks"
      /usr/bin/time -f "command: %e s" $M -np $np $W run --in $f.csv --theta 0.75 --alpha 0 --t-end 0 2>&1 | grep -E "initial state|reading its own|command:|rror"
    done
  done
done
set -- ${BUILDS:-csv csvpar}
cmp $1.csv $2.csv && echo "the builds wrote the same bytes"
rm -f /tmp/*.csv
