#!/usr/bin/env bash
# Consistency across P (issue 46): one Plummer sphere on one GPU and on
# every GPU of the host, 64 steps (θ = 0.75, α = 0 and 0.1, dt = 1/128,
# the tree built every step on both), the potential energy summed
# precisely at the start and the end (`--potential-sum exact`: every rank
# sums its own particles' potentials against all, in double-single) and,
# beside it, from the trees' own potentials (`solver`). From the
# repository root with .gl/ and .benchx/webgrav carried (built with
# `cargo build --release --no-default-features --features mpi`):
#   bash tests/cluster-bench/agreement.sh N [N ...]
# stdout: each run's log lines (JSON: at the end, or every LOG_EVERY of
# simulated time) with "P", "N", "alpha" and "rule" added; stderr: the
# runs' own (its "first forces and read-out" includes the start's exact
# sum). ALPHAS and RULES choose others than "0 0.1" and "exact solver".
source "$(dirname "$0")/gpu-host.sh"
w=${WEBGRAV:-.benchx/webgrav}
chmod +x "$w"
dt=0.0078125
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none -np $gpus"
tag() {
  python3 -c 'import json, sys
t = dict(zip(["P", "N", "alpha", "rule"], sys.argv[1:]))
for line in sys.stdin:
    if line.startswith("{"):
        print(json.dumps({**t, **json.loads(line)}), flush=True)' "$@"
}
for n in "$@"; do
  for alpha in ${ALPHAS:-0 0.1}; do
    for rule in ${RULES:-exact solver}; do
      args=(run --model plummer -n "$n" --seed 7 --theta 0.75 --alpha "$alpha" --rebuild 1
        --dt $dt --t-end 0.5 --log-every "${LOG_EVERY:-0.5}" --potential-sum "$rule")
      echo "== one GPU, N = $n, alpha $alpha, $rule" >&2
      "$w" "${args[@]}" | tag 1 "$n" "$alpha" "$rule"
      echo "== $gpus GPUs, N = $n, alpha $alpha, $rule" >&2
      $mpi "$w" "${args[@]}" | tag "$gpus" "$n" "$alpha" "$rule"
    done
  done
done
