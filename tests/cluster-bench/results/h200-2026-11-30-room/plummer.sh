# A Plummer sphere of 2^25 on two ranks sharing one GPU (θ = 0.73, α = 0,
# 16 steps, a log line every 4), builds alternated ROUNDS times; from the
# repository root with `.gl/` and the builds in `.benchx/`:
#   ROUNDS=2 bash plummer.sh BUILD [BUILD ...]
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/*
mkdir -p "$OUT"
for round in $(seq "${ROUNDS:-1}"); do for b in "$@"; do
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 ".benchx/webgrav-$b" run --model plummer -n 33554432 --seed 1 --eps 0.01 --theta 0.73 --alpha 0 --dt 0.0078125 --t-end 0.125 --log-every 0.03125 --potential-sum solver > "$OUT/plummer-$b-$round.jsonl" 2> "$OUT/plummer-$b-$round.err"
python3 - "$OUT/plummer-$b-$round.jsonl" "$b" <<'PY'
import json,sys
print(sys.argv[2], " | ".join("%d: %.4f s, %d imported" % (j["steps"], j["wall_s_per_step"], j["imported_particles"]) for j in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{"))))
PY
done; done
