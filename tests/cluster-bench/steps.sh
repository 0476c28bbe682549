#!/usr/bin/env bash
# Runs on every GPU of the host, one build after another in one call of
# the device tool, for comparing builds (before and after a change) on the
# same machine. From the repository root, with .gl/ and the builds under
# .benchx/ carried (built with `cargo build --release
# --no-default-features --features mpi`):
#   bash tests/cluster-bench/steps.sh BUILD[,BUILD...] N [N ...]
# For each N (in all) and build: `mpirun -np GPUS .benchx/BUILD run` of a
# Plummer sphere, θ = 0.75 (opening-angle MAC), dt = 1/128, STEPS steps
# (default 48), a JSON log line every 8 with the slowest rank's phases.
source "$(dirname "$0")/gpu-host.sh"
steps=${STEPS:-48}
dt=0.0078125
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none ${MPI_ARGS:-} -np $gpus"
IFS=, read -ra builds <<< "$1"
shift
for n in "$@"; do
  for b in "${builds[@]}"; do
    chmod +x ".benchx/$b"
    echo "== $b, $gpus GPUs, N = $n" >&2
    $mpi ".benchx/$b" run --model plummer -n "$n" --theta 0.75 --alpha 0 --dt $dt \
      --t-end "$(python3 -c "print($steps * $dt)")" --log-every "$(python3 -c "print(8 * $dt)")"
  done
done
