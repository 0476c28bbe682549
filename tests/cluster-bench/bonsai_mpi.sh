#!/usr/bin/env bash
# Bonsai's MPI build beside webgrav's runs on several ranks, on the GPUs of
# one host, in one call of the device tool. From the repository root, with
# .gl/ and .benchx/ carried: .benchx/webgrav (`cargo build --release
# --no-default-features --features mpi`), .benchx/build_bonsai.sh and
# .benchx/Bonsai/runtime (treecode/Bonsai 581fa8e with
# ../shared/peers/bonsai-cuda13.diff and then bonsai-mpi-nvcc.diff, beside
# this script, applied: the MPI build's host files hold std::vector<v4sf>,
# whose initializer_list nvcc refuses when it compiles them as CUDA):
#   bash tests/cluster-bench/bonsai_mpi.sh N_PER_GPU [N_PER_GPU ...]
# Bonsai is built as build_bonsai.sh builds it, with -DUSE_MPI and Open
# MPI's include directories and libraries (its CMake option USE_MPI adds
# the same define; the sources are the same). For each N per GPU both
# codes run a Plummer sphere of N per GPU on every GPU (θ = 0.75; webgrav
# at $THETA if set: 0.73 gives Bonsai's errors at 0.75, BENCHMARKS.md;
# ε = 0.01, dt = 1/128, 24 steps): webgrav's log lines (JSON, a line per 8
# steps) and Bonsai's per-step wall times from its `iter=` lines.
source "$(dirname "$0")/gpu-host.sh"
export PATH=$PATH:/usr/local/cuda/bin
inc=$(mpicxx --showme:incdirs | tr ' ' '\n' | sed '/^$/d; s/^/-I/' | tr '\n' ' ')
libs="$(mpicxx --showme:libdirs | tr ' ' '\n' | sed '/^$/d; s/^/-L/' | tr '\n' ' ') \
$(mpicxx --showme:libs | tr ' ' '\n' | sed '/^$/d; s/^/-l/' | tr '\n' ' ')"
# Open MPI's C++ bindings do not compile as CUDA (nvcc -x cu): left out.
sed -e 's/^DEFS="-DUSE_CUB -DKEPLER"/DEFS="-DUSE_CUB -DKEPLER -DUSE_MPI -DOMPI_SKIP_MPICXX"/' \
    -e "s|^INC=\"|INC=\"$inc |" \
    -e "s|-lrt -lgomp|-lrt -lgomp $libs|" .benchx/build_bonsai.sh > /tmp/build_bonsai_mpi.sh
( bash /tmp/build_bonsai_mpi.sh .benchx/Bonsai/runtime /tmp/bmpi > /tmp/bmpi.log 2>&1 ) &
build=$!
w=.benchx/webgrav
chmod +x "$w"
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none"
dt=0.0078125
theta=${THETA:-0.75}
for n in "$@"; do
  [ "${CODES:-both}" = bonsai ] && break
  for p in 1 "$gpus"; do
    echo "== webgrav, $p GPUs, N = $n per GPU" >&2
    if [ "$p" = 1 ]; then
      "$w" bench tree -n "$n" --theta "$theta" --alpha 0 --repeat 3
    else
      $mpi -np "$p" "$w" run --model plummer -n $((n * p)) --theta "$theta" --alpha 0 \
        --dt $dt --t-end "$(python3 -c "print(24 * $dt)")" --log-every "$(python3 -c "print(8 * $dt)")"
    fi
  done
done
wait $build
grep -h -B2 -A8 'error' /tmp/bmpi/*.log 2>/dev/null | head -60 >&2
tail -2 /tmp/bmpi.log >&2
b=/tmp/bmpi/bonsai2_slowdust
ulimit -s unlimited
for n in "$@"; do
  for p in 1 "$gpus"; do
    d=/tmp/brun/$n.$p; mkdir -p "$d"; cd "$d"
    timeout 240 $mpi -np "$p" "$b" --plummer "$n" -o 0.75 -e 0.01 -t $dt -T 1000 -I 24 \
      > run.out 2> run.err
    rc=$?
    cd - > /dev/null
    # Wall time per step from the last two iter= lines' t_sim.
    python3 - "$d/run.out" "$n" "$p" "$rc" <<'PY'
import re, sys, json
path, n, p, rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seen = {}
for m in re.finditer(r"iter=(\d+).*?t_sim=\s*([0-9.eE+-]+)", open(path).read()):
    seen.setdefault(int(m.group(1)), float(m.group(2)))
t = sorted(seen.items())
per_step = (t[-1][1] - t[-9][1]) / (t[-1][0] - t[-9][0]) if len(t) > 9 else None
print(json.dumps({"code": "bonsai", "ranks": p, "n_per_gpu": n, "rc": rc, "steps_seen": len(t), "s_per_step_last_8": per_step}))
PY
    tail -3 "$d/run.err" >&2
  done
done
