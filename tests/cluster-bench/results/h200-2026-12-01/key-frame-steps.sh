# The cost of keying each rank's tree in the domains' cube, on one H200
# (two ranks share it, so a step's wall time is both ranks' GPU work):
# a Milky Way of N (seed 7) on two ranks, 12 steps at θ = 0.75 and
# α = 0.1, logged every 4 steps, with each build in turn, twice.
#   bash key-frame-steps.sh N BUILD[:ENV=VALUE] ...
# (ENV=VALUE: one variable set for the ranks, e.g. frame2:NOFRAME=1.)
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
n=$1; shift
mkdir -p "$OUT"
args=(run --model milky-way -n "$n" --seed 7 --theta 0.75 --alpha 0.1
  --dt 0.0078125 --t-end 0.09375 --log-every 0.03125)
show() { python3 -c 'import json,sys
for l in sys.stdin:
    if l.startswith("{"):
        j=json.loads(l); g=j.get("gpu_phases_max_ms",{})
        print(sys.argv[1], "steps", j["steps"], "wall_s_per_step %.3f" % j["wall_s_per_step"],
              "walk_max_ms %.1f imported_walk_max_ms %.1f" % (g.get("walk",0), g.get("imported_walk",0)),
              "redraws", j.get("redraws"), "rel_energy_error %.3e" % j["rel_energy_error"])' "$1"; }
for round in 1 2; do
  for spec in "$@"; do
    build=${spec%%:*}; env=(); [ "$spec" != "$build" ] && env=(-x "${spec#*:}")
    w=.benchx/webgrav-$build; chmod +x "$w"
    tag=$(echo "$spec" | tr ':=' '--')-$n-$round
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "${env[@]}" "$w" "${args[@]}" \
      2> "$OUT/$tag.err" | tee "$OUT/$tag.jsonl" | show "$spec round $round"
  done
done
cd "$OUT" && tar czf steps-$n.tgz *.err *.jsonl && rm -f *.err *.jsonl
