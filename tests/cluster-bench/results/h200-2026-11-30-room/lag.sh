# The trees imported step by step after decompositions (issue 46), from
# the repository root on one GPU with `.gl/` and the builds in `.benchx/`:
#   bash lag.sh BUILD [BUILD ...]   (.benchx/webgrav-BUILD)
# Two ranks share the GPU: a Milky Way of 2^27 particles, 12 steps, a log
# line every step, with the start's decomposition only (`--redraw-every
# 100`) and with a redraw every 4 steps. Files: $OUT/BUILD-every-K.*
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/*
mkdir -p "$OUT"
for b in "$@"; do for every in 100 4; do
echo "== $b redraw every $every"
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 ".benchx/webgrav-$b" run -n 134217728 --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.375 --log-every 0.03125 --redraw-every $every --potential-sum solver > "$OUT/$b-every-$every.jsonl" 2> "$OUT/$b-every-$every.err"
python3 - "$OUT/$b-every-$every.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l)
    print(j["steps"], "s/step %.3f" % j["wall_s_per_step"], "redraws", j["redraws"], "imported", j["imported_particles"], "n", j["rank_n_min"], j["rank_n_max"])
PY
done; done
