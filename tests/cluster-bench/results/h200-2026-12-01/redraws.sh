# Redraws during a run with two ranks sharing one H200: for each BUILD,
# alternated ROUNDS times (default 2), a Milky Way of N in all (seed 1,
# ε = 0.1, α = 0.1), 8 steps, a redraw every 2, a log line every step.
# The outputs are kept in $OUT/redraws.tgz (the tool returns few files).
#   bash redraws.sh N BUILD...
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/webgrav-*
mkdir -p "$OUT/r"
n=$1; shift
tm() { if [ -x /usr/bin/time ]; then /usr/bin/time -v "$@"; else "$@"; fi; }
for round in $(seq ${ROUNDS:-2}); do
for b in "$@"; do
  name="redraws-$b-$round"
  echo "== $name"
  tm mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 ".benchx/webgrav-$b" run \
    -n "$n" --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.25 --log-every 0.03125 \
    --redraw-every 2 --potential-sum solver > "$OUT/r/$name.jsonl" 2> "$OUT/r/$name.err"
  grep -E "start ready|steps on|Maximum resident|rror" "$OUT/r/$name.err"
  python3 - "$OUT/r/$name.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); p=j.get("phases_max_s",{})
    if j["steps"] % 2 == 0 or j["steps"] == 1:
        print(j["steps"], "s/step %.4f" % j["wall_s_per_step"], "E %.12f" % j["energy"], {k.replace("rebalance_",""): round(v,3) for k,v in p.items() if k.startswith("rebalance")})
PY
done
done
tar czf "$OUT/redraws.tgz" -C "$OUT" r && rm -rf "$OUT/r"
