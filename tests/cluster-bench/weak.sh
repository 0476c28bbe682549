#!/usr/bin/env bash
# Weak scaling of shared steps, builds side by side in one call of the
# device tool. From the repository root, with .gl/ and the builds under
# .benchx/ carried (built with `cargo build --release
# --no-default-features --features mpi`):
#   bash tests/cluster-bench/weak.sh BUILD[,BUILD...] N [N ...]
# For each N (particles per GPU): a Milky Way (seed 1, ε = 0.1, α = 0.1,
# dt = 1/32, STEPS steps, default 16) of N on one GPU with the first build,
# then of N × GPUS under mpirun with each build in turn, ROUNDS times
# (default 1). A build named NAME:nosm runs NAME with
# WEBGRAV_NO_SHARED_MEMORY=1 (the trees through MPI). A JSON log line
# every 8 steps; its `wall_s_per_step` (one GPU's and the ranks') is the
# mean wall time of those steps alone, without the start, the read-outs
# and the log's diagnostics.
source "$(dirname "$0")/gpu-host.sh"
steps=${STEPS:-16}
rounds=${ROUNDS:-1}
dt=0.03125
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none ${MPI_ARGS:-} -np $gpus"
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
IFS=, read -ra builds <<< "$1"
shift
common=(--model milky-way --seed 1 --eps 0.1 --dt $dt
  --t-end "$(python3 -c "print($steps * $dt)")" --log-every "$(python3 -c "print(8 * $dt)")")
df -h /dev/shm >&2
for n in "$@"; do
  first=${builds[0]%%:*}
  chmod +x .benchx/*
  echo "== $first, one GPU, N = $n" >&2
  ".benchx/$first" run -n "$n" "${common[@]}"
  for round in $(seq "$rounds"); do
    for b in "${builds[@]}"; do
      name=${b%%:*}
      env=()
      [ "$b" != "$name" ] && env=(-x WEBGRAV_NO_SHARED_MEMORY=1)
      echo "== $b, $gpus GPUs, N = $((n * gpus)) in all, round $round" >&2
      $mpi "${env[@]}" ".benchx/$name" run -n "$((n * gpus))" "${common[@]}"
    done
  done
done
