#!/usr/bin/env bash
# A Milky Way on every GPU of the host through what a parallel run
# offers, in one call of the device tool: block steps with a checkpoint
# and a series of per-rank parts, the checkpoint resumed, and the parts
# read back as a run's input. From the repository root, with .gl/ and
# the build under .benchx/ carried (built with `cargo build --release
# --no-default-features --features mpi`):
#   bash tests/cluster-bench/everything.sh BUILD N
source "$(dirname "$0")/gpu-host.sh"
b=$1
n=$2
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none ${MPI_ARGS:-} -np $gpus"
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x ".benchx/$b"
block=(--dt 0.125 --timesteps block --levels 3 --eta 0.02 --rebuild 16)
work=$(mktemp -d)
timed() {
  local start
  start=$(date +%s.%N)
  "$@"
  echo "== command $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s" >&2
}
echo "== $b, $gpus GPUs, N = $n: block steps, a checkpoint and per-rank parts" >&2
timed $mpi ".benchx/$b" run --model milky-way -n "$n" --seed 1 --eps 0.1 "${block[@]}" \
  --t-end 0.25 --log-every 0.125 --checkpoint "$work/c.ckpt" --checkpoint-every 0.25 \
  --snap-every 0.25 --bonsai-names --snap-dir "$work/parts" --snap-format bonsai
ls -l "$work" "$work/parts" >&2
echo "== $b: the checkpoint resumed" >&2
timed $mpi ".benchx/$b" run --resume "$work/c.ckpt" --t-end 0.375 --checkpoint-every 0 \
  --snap-every 0
echo "== $b: the parts as input" >&2
timed $mpi ".benchx/$b" run --in "$work/parts/snap_00000.2500-0" --eps 0.1 "${block[@]}" \
  --t-end 0.375
rm -rf "$work"
