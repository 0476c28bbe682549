for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/*
mkdir -p $OUT
for round in 1 2; do
for b in before room; do
echo "== $b round $round"
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 .benchx/webgrav-$b run -n 134217728 --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.5 --log-every 0.125 --redraw-every 4 > $OUT/$b-$round.jsonl 2> $OUT/$b-$round.err
python3 - $OUT/$b-$round.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); p=j["phases_max_s"]
    print(j["steps"], "s/step %.3f" % j["wall_s_per_step"], "redraw %.3f setup %.3f decompose %.3f" % (p["rebalance"], p["rebalance_setup"], p["rebalance_decompose"]), "gpu", j["gpu_phases_max_ms"], "imported", j["imported_particles"])
PY
tail -2 $OUT/$b-$round.err
done
done
