for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/webgrav-*
mkdir -p "$OUT"
mpirun --allow-run-as-root --oversubscribe --bind-to none -x WEBGRAV_WORK=1 -np 2 .benchx/webgrav-work run -n 134217728 --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.1875 --log-every 0.03125 --redraw-every 4 --potential-sum solver > "$OUT/work.jsonl" 2> "$OUT/work.err"
grep -E "^work|steps on" "$OUT/work.err"
python3 - "$OUT/work.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); g=j["gpu_phases_max_ms"]
    print(j["steps"], "s/step %.3f" % j["wall_s_per_step"], "imported", int(j["imported_particles"]), int(j["imported_cells"]), "gpu walk %.0f imp %.0f" % (g["walk"], g["imported_walk"]))
PY
