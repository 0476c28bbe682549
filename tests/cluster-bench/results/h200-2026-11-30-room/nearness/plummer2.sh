for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/*
mkdir -p $OUT
for round in 1; do for b in room near; do
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 .benchx/webgrav-$b run --model plummer -n 33554432 --seed 1 --eps 0.01 --theta 0.73 --alpha 0 --dt 0.0078125 --t-end 0.125 --log-every 0.03125 --potential-sum solver > $OUT/plummer-$b-$round.jsonl 2> $OUT/plummer-$b-$round.err
python3 - $OUT/plummer-$b-$round.jsonl $b <<'PY'
import json,sys
print(sys.argv[2], " | ".join("%d: %.4f s, %d imported" % (j["steps"], j["wall_s_per_step"], j["imported_particles"]) for j in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{"))))
PY
done; done
