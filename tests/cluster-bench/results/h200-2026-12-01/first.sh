# The start's decomposition, on the host (BUILD old) against the GPU
# (BUILD new), with RANKS ranks (default 2) on the GPUs there are (two
# ranks may share one): a Milky Way of N in all (seed 1, ε = 0.1), one
# step, the log line after it, alternated ROUNDS times (default 2).
#   bash first.sh OLD NEW N...
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/webgrav-*
mkdir -p "$OUT"
old=$1; new=$2; shift 2
tm() { if [ -x /usr/bin/time ]; then /usr/bin/time -v "$@"; else "$@"; fi; }
for n in "$@"; do
for round in $(seq ${ROUNDS:-2}); do
for b in $old $new; do
  name="first-$b-$n-$round"
  echo "== $name"
  tm mpirun --allow-run-as-root --oversubscribe --bind-to none -np ${RANKS:-2} ".benchx/webgrav-$b" run \
    -n "$n" --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.03125 --log-every 0.03125 \
    --potential-sum solver > "$OUT/$name.jsonl" 2> "$OUT/$name.err"
  grep -E "generated|start ready|Elapsed|Maximum resident|rror" "$OUT/$name.err"
  python3 - "$OUT/$name.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); p=j.get("phases_max_s",{})
    print({k: round(v,3) for k,v in p.items() if k.startswith("rebalance")}, "E", j.get("energy"))
PY
done
done
done
# Then redraws during a run: the last N, 8 steps, a redraw every 2, a
# log line every step (its rebalance_* parts are the last redraw's).
for round in $(seq ${ROUNDS:-2}); do
for b in $old $new; do
  name="redraws-$b-$round"
  echo "== $name"
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np ${RANKS:-2} ".benchx/webgrav-$b" run \
    -n "$n" --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.25 --log-every 0.03125 \
    --redraw-every 2 --potential-sum solver > "$OUT/$name.jsonl" 2> "$OUT/$name.err"
  grep -E "steps on|rror" "$OUT/$name.err"
  python3 - "$OUT/$name.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); p=j.get("phases_max_s",{})
    if j["steps"] % 2 == 0:
        print(j["steps"], "s/step %.4f" % j["wall_s_per_step"], {k.replace("rebalance_",""): round(v,3) for k,v in p.items() if k.startswith("rebalance")})
PY
done
done
