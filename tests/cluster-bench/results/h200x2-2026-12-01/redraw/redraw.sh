# Two H200s: redraws whose sorted arrays become the new state (inplace,
# 4e54df4) against 9277c10 (shares): weak scaling at 125,829,120 a GPU,
# 32 steps, and a Milky Way of 2^27, 12 steps, a redraw every 4.
mkdir -p "$OUT"
parts() {
python3 - "$1" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); p=j.get("phases_max_s",{})
    r={k.replace("rebalance_",""):round(v,3) for k,v in p.items() if k.startswith("rebalance")}
    print(j["steps"], "s/step %.4f" % j["wall_s_per_step"], "redraws", j.get("redraws"), j.get("redraws_for_imports"), r)
PY
}
STEPS=32 bash tests/cluster-bench/weak.sh webgrav-inplace,webgrav-shares 125829120 > "$OUT/weak.jsonl" 2> "$OUT/weak.err"
grep -E "==|start ready|steps on|peak" "$OUT/weak.err"
parts "$OUT/weak.jsonl"
ROUNDS=1 bash .benchx/x2b.sh inplace shares > "$OUT/x2b.out" 2>&1
grep -E "==|steps on|start ready" "$OUT/x2b.out"
mkdir -p /tmp/x && tar xzf "$OUT/all.tgz" -C /tmp/x && for f in /tmp/x/mw-*.jsonl; do echo "$f"; parts "$f" | awk 'NR%4==0 || NR==1'; done
