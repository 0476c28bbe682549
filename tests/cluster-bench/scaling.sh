#!/usr/bin/env bash
# Weak and strong scaling of the tree code on the GPUs of one host, beside
# one GPU, in one call of the device tool. From the repository root, with
# .gl/ (the Vulkan loader's packages, docs/ENVIRONMENT) and .benchx/webgrav
# (built here with `cargo build --release --no-default-features --features
# mpi`, so it needs no HDF5) carried:
#   bash tests/cluster-bench/scaling.sh N_PER_GPU [N_PER_GPU ...]
# For each N per GPU: `webgrav bench tree` at N on one GPU, then `webgrav
# run` on every GPU of the host with N per GPU (weak) and with N in all
# (strong). Every line is JSON (the runs' log lines carry "ranks"): a log
# line every 8 steps, whose wall_s_per_step is the mean of those 8
# (the steps' own time; before 2026-11-30's c79f6bc it included the log's
# diagnostics; the log line's "redraws" counts the decompositions so far); STEPS steps
# (default 24), θ = THETA (default 0.75, the opening-angle MAC); WEBGRAV
# names another build to run (e.g. an older commit's, beside this one);
# MPI_ARGS adds options to mpirun (e.g. Open MPI's MCA settings).
source "$(dirname "$0")/gpu-host.sh"
w=${WEBGRAV:-.benchx/webgrav}
chmod +x "$w"
steps=${STEPS:-24}
theta=${THETA:-0.75}
dt=0.0078125
t_end=$(python3 -c "print($steps * $dt)")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >&2
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none ${MPI_ARGS:-} -np $gpus"
for n in "$@"; do
  echo "== one GPU, N = $n" >&2
  "$w" bench tree -n "$n" --theta "$theta" --alpha 0 --repeat 3
  for total in $((n * gpus)) "$n"; do
    echo "== $gpus GPUs, N = $total" >&2
    $mpi "$w" run --model plummer -n "$total" --theta "$theta" --alpha 0 --dt $dt \
      --t-end "$t_end" --log-every "$(python3 -c "print(8 * $dt)")"
  done
done
