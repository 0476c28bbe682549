# Two H200s, a rank on each: a Milky Way of 2^27 (12 steps, a redraw
# every 4, a log line every step) and a Plummer sphere of 2^24 (θ = 0.73,
# α = 0, 16 steps, a log line every 4) for each BUILD, alternated twice;
# then the filled GPUs (251,658,240, 32 steps) for the last BUILD.
#   bash x2b.sh BUILD...
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/webgrav-*
mkdir -p "$OUT"
show() {
python3 - "$1" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    j=json.loads(l); p=j["phases_max_s"]; g=j["gpu_phases_max_ms"]
    print(j["steps"], "s/step %.4f" % j["wall_s_per_step"], "redraws", j["redraws"], j["redraws_for_imports"], "imported", int(j["imported_particles"]), "gpu walk %.0f imp %.0f build %.0f host build %.3f" % (g["walk"], g["imported_walk"], g["build"], p["build"]), "redraw %.2f" % p["rebalance"])
PY
}
run() {  # name build args...
name=$1; b=$2; shift 2
echo "== $name"
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 ".benchx/webgrav-$b" run "$@" --potential-sum solver > "$OUT/$name.jsonl" 2> "$OUT/$name.err"
grep -E "steps on|start ready" "$OUT/$name.err"; show "$OUT/$name.jsonl"
}
mw="-n 134217728 --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.375 --log-every 0.03125 --redraw-every 4"
pl="--model plummer -n 16777216 --seed 1 --eps 0.01 --theta 0.73 --alpha 0 --dt 0.0078125 --t-end 0.125 --log-every 0.03125"
for round in ${ROUNDS:-1 2}; do
for b in "$@"; do run "mw-$b-$round" $b $mw; done
for b in "$@"; do run "plummer-$b-$round" $b $pl; done
done
for b in "$@"; do last=$b; done
[ -n "$FILLED" ] && run "filled-$last" $last -n 251658240 --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 1.0 --log-every 0.25
cd "$OUT" && tar czf all.tgz *.jsonl *.err && rm -f *.jsonl *.err
