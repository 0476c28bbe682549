#!/usr/bin/env bash
# A galaxy model on every GPU of the host beside one GPU, in one call of
# the device tool: how long the ranks take to make their first particles,
# and the steps of the weak-scaled run. From the repository root, with
# .gl/ and the builds under .benchx/ carried (built with `cargo build
# --release --no-default-features --features mpi`):
#   bash tests/cluster-bench/models.sh BUILD[,BUILD...] MODEL N_PER_GPU
# For each build: `webgrav run --model MODEL` with N_PER_GPU on one GPU,
# then with N_PER_GPU × GPUS under mpirun on every GPU, STEPS steps
# (default 16) of dt = 1/128, θ = 0.75, α = 0 (the opening-angle MAC), a
# JSON log line every 8 steps; stderr says when the start was ready.
# LIMIT (seconds, default 300) ends a run that takes longer.
source "$(dirname "$0")/gpu-host.sh"
IFS=, read -ra builds <<< "$1"
model=$2
n=$3
steps=${STEPS:-16}
dt=0.0078125
limit=${LIMIT:-300}
args=(--model "$model" --theta 0.75 --alpha 0 --dt $dt
  --t-end "$(python3 -c "print($steps * $dt)")" --log-every "$(python3 -c "print(8 * $dt)")")
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none ${MPI_ARGS:-} -np $gpus"
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
for b in "${builds[@]}"; do
  chmod +x ".benchx/$b"
  echo "== $b, one GPU, N = $n" >&2
  start=$(date +%s.%N)
  timeout "$limit" ".benchx/$b" run -n "$n" "${args[@]}"
  echo "== command $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s" >&2
  echo "== $b, $gpus GPUs, N = $((n * gpus))" >&2
  start=$(date +%s.%N)
  timeout "$limit" $mpi ".benchx/$b" run -n "$((n * gpus))" "${args[@]}"
  echo "== command $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s" >&2
done
