#!/usr/bin/env bash
# What the domains' redraw schedule costs and buys (issue 46): one Plummer
# sphere on one GPU, then on two ranks with `--redraw-every 1, 2, 4, …`
# and the default (`auto`: when the steps' lost time exceeds a redraw's
# cost), 64 steps at θ = 0.75, α = 0, dt = 1/128. Between redraws a
# rank's particles stay its own, and the trees' errors then act alike
# step after step: the energy drifts (as a one-GPU tree refitted between
# builds does). From the repository root with .gl/ and .benchx/webgrav
# carried (built with `cargo build --release --no-default-features
# --features mpi`), on a host with two GPUs:
#   bash tests/cluster-bench/redraws.sh
# Each line: |dE/E| at each log line, the redraws, wall seconds per step.
source "$(dirname "$0")/gpu-host.sh"
w=${WEBGRAV:-.benchx/webgrav}
chmod +x "$w"
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"
summary() {
  python3 -c 'import json, sys
ls = [json.loads(l) for l in sys.stdin if l.startswith("{")]
print(" ".join("%+.2e" % l["rel_energy_error"] for l in ls),
      "| redraws", ls[-1].get("redraws"), "| s/step %.4f" % (ls[-1]["wall_s"] / ls[-1]["steps"]))'
}
# N, the energy's potential (exact: the precise sum, N² work a report;
# solver: the trees' own, for the step's cost), the log interval, then
# the redraw schedules.
schedules() {
  local n=$1 rule=$2 every=$3
  shift 3
  local common=(run --model plummer -n "$n" --seed 7 --theta 0.75 --alpha 0 --dt 0.0078125
    --t-end 0.5 --log-every "$every" --potential-sum "$rule")
  echo "N=$n P1: $("$w" "${common[@]}" 2>/dev/null | summary)"
  for r in "$@"; do
    local x=()
    [ "$r" != auto ] && x=(--redraw-every "$r")
    echo "N=$n P2 redraw $r: $($mpi "$w" "${common[@]}" "${x[@]}" 2>/dev/null | summary)"
  done
}
schedules 131072 exact 0.0625 1 2 4 8 16 auto
schedules 1048576 exact 0.5 1 4 8 auto
schedules 4194304 solver 0.5 1 4 8 auto
schedules 16777216 solver 0.5 1 4 8 auto
