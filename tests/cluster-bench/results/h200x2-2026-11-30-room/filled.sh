for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/*
mkdir -p $OUT
nvidia-smi -L
for b in before room; do
echo "== $b"
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 .benchx/webgrav-$b run -n 251658240 --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 1.0 --log-every 0.25 > $OUT/filled-$b.jsonl 2> $OUT/filled-$b.err
tail -3 $OUT/filled-$b.err
python3 - $OUT/filled-$b.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); p=j["phases_max_s"]
    print(j["steps"], "s/step %.4f" % j["wall_s_per_step"], "redraws", j["redraws"], j["redraws_for_imports"], "last redraw %.2f setup %.2f decompose %.2f" % (p["rebalance"], p["rebalance_setup"], p["rebalance_decompose"]), "imported", j["imported_particles"])
PY
done
