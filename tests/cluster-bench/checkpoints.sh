#!/usr/bin/env bash
# A checkpoint written and resumed on every GPU of the host, build after
# build in one call of the device tool. From the repository root, with
# .gl/ and the builds under .benchx/ carried (built with `cargo build
# --release --no-default-features --features mpi`):
#   bash tests/cluster-bench/checkpoints.sh BUILD[,BUILD...] N
# For each build: a Milky Way of N (in all) under mpirun (RANKS ranks,
# default one a GPU; ranks beyond the GPUs share them), one step of
# dt = 1/128 (θ = 0.75, α = 0) with a checkpoint after it, then the
# checkpoint resumed for one more step. stderr says how long the
# checkpoint took (newer builds), when the start was ready and each
# rank's peak host memory; `== command` lines time each command.
source "$(dirname "$0")/gpu-host.sh"
IFS=, read -ra builds <<< "$1"
n=$2
dt=0.0078125
np=${RANKS:-$gpus}
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none ${MPI_ARGS:-} -np $np"
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
timed() {
  local start
  start=$(date +%s.%N)
  "$@"
  echo "== command $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s" >&2
}
for b in "${builds[@]}"; do
  chmod +x ".benchx/$b"
  rm -f c.ckpt
  echo "== $b, $np ranks on $gpus GPUs, N = $n: write" >&2
  timed $mpi ".benchx/$b" run --model milky-way -n "$n" --theta 0.75 --alpha 0 --dt $dt \
    --t-end $dt --checkpoint c.ckpt --checkpoint-every $dt
  ls -l c.ckpt >&2
  echo "== $b, $np ranks on $gpus GPUs, N = $n: resume" >&2
  timed $mpi ".benchx/$b" run --resume c.ckpt --t-end "$(python3 -c "print(2 * $dt)")"
done
rm -f c.ckpt
