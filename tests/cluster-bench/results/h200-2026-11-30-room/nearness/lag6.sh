for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/*
mkdir -p $OUT
for b in near; do for every in 100 4; do
echo "== $b redraw every $every"
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 .benchx/webgrav-$b run -n 134217728 --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.375 --log-every 0.03125 --redraw-every $every --potential-sum solver > $OUT/$b-every-$every.jsonl 2> $OUT/$b-every-$every.err
python3 - $OUT/$b-every-$every.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); p=j["phases_max_s"]
    print(j["steps"], "s/step %.3f" % j["wall_s_per_step"], "redraws", j["redraws"], "imported", j["imported_particles"], "exported", j["exported_particles"], "n", j["rank_n_min"], j["rank_n_max"])
PY
done; done
