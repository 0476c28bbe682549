#!/usr/bin/env bash
# Block time steps beside shared ones, on one GPU and on every GPU of the
# host, in one call of the device tool. From the repository root, with
# .gl/ and the build under .benchx/ carried (built with `cargo build
# --release --no-default-features --features mpi`):
#   bash tests/cluster-bench/block.sh BUILD N [N ...]
# For each N (in all): a Milky Way (seed 1, ε = 0.1, α = 0.1) to
# T (default 1) with shared steps of dt = 1/32, then with block steps of
# dt = 1/8, --levels 4 --eta 0.02 --rebuild 16 (BENCHMARKS.md, "Block time
# steps for the tree"): on one GPU where N fits, then under mpirun on
# every GPU. A JSON log line halfway and at the end of each (`wall_s`,
# |ΔE/E|, `particles_per_level`: the second half's steps are the first
# line's `wall_s` from the second's, without the start); LIMIT (seconds,
# default 300) ends a run that takes longer.
source "$(dirname "$0")/gpu-host.sh"
b=$1
shift
t_end=${T:-1}
limit=${LIMIT:-300}
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none ${MPI_ARGS:-} -np $gpus"
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x ".benchx/$b"
common=(--model milky-way --seed 1 --eps 0.1 --t-end "$t_end"
  --log-every "$(python3 -c "print($t_end / 2)")")
shared=(--dt 0.03125)
block=(--dt 0.125 --timesteps block --levels 4 --eta 0.02 --rebuild 16)
for n in "$@"; do
  for how in shared block; do
    declare -n opts=$how
    for where in one all; do
      if [ "$where" = one ]; then
        [ "$n" -le 134217727 ] || continue
        echo "== $b, $how steps, one GPU, N = $n" >&2
        timeout "$limit" ".benchx/$b" run -n "$n" "${common[@]}" "${opts[@]}"
      else
        echo "== $b, $how steps, $gpus GPUs, N = $n" >&2
        timeout "$limit" $mpi ".benchx/$b" run -n "$n" "${common[@]}" "${opts[@]}"
      fi
    done
  done
done
