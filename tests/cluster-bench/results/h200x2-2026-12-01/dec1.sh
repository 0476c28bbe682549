# Two H200s: weak scaling at 125,829,120 a GPU, 32 steps, the build with
# the spanning split (shares) against the one before (nosplit); then a
# Milky Way of 2^27 written to one .bonsai file and read back by two
# ranks, in shares (shares) and whole by rank 0 (nosplit).
mkdir -p "$OUT"
STEPS=32 bash tests/cluster-bench/weak.sh webgrav-shares,webgrav-nosplit 125829120 > "$OUT/weak.jsonl" 2> "$OUT/weak.err"
grep -E "==|start ready|steps on" "$OUT/weak.err"
python3 - "$OUT/weak.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); g=j.get("gpu_phases_max_ms",{})
    print(j["steps"], "s/step %.4f" % j["wall_s_per_step"], "redraws", j.get("redraws"), j.get("redraws_for_imports"), "imported", int(j.get("imported_particles",0)), "imp walk %.0f" % g.get("imported_walk",0))
PY
tm() { if [ -x /usr/bin/time ]; then /usr/bin/time -v "$@"; else time "$@"; fi; }
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"
chmod +x .benchx/webgrav-*
tm $mpi .benchx/webgrav-shares run -n 134217728 --model milky-way --seed 1 --t-end 0 --out /tmp/mw.bonsai 2> "$OUT/write.err" > /dev/null
grep -E "start ready|Elapsed|Maximum resident" "$OUT/write.err"; ls -la /tmp/mw.bonsai*
for b in shares nosplit shares nosplit; do
  echo "== read by $b"
  tm $mpi .benchx/webgrav-$b run --in /tmp/mw.bonsai --dt 0.03125 --t-end 0.0625 --log-every 0.0625 > "$OUT/read-$b.jsonl" 2> "$OUT/read-$b.err"
  grep -E "reading its own|start ready|steps on|Elapsed|Maximum resident|error" "$OUT/read-$b.err"
done
