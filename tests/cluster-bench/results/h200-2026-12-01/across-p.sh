# Consistency across P on one H200 (the ranks share it): a Plummer
# sphere of N (seed 7), 64 steps (θ = 0.75, α = 0, dt = 1/128, the tree
# built every step), the potential summed exactly at the start and the
# end, with P = 1 (no mpirun), 2, 4 and 8 ranks, each with the default
# redraws and with a redraw every step. |ΔE/E| at the end.
#   bash across-p.sh BUILD N
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
w=.benchx/webgrav-$1; n=$2
chmod +x "$w"
mkdir -p "$OUT"
args=(run --model plummer -n "$n" --seed 7 --theta 0.75 --alpha 0 --rebuild 1
  --dt 0.0078125 --t-end 0.5 --log-every 0.5 --potential-sum exact)
end() { python3 -c 'import json,sys
for l in sys.stdin:
    if l.startswith("{"): j=json.loads(l)
print(sys.argv[1], "steps", j["steps"], "rel_energy_error %.3e" % j["rel_energy_error"], "redraws", j.get("redraws"), "wall_s %.1f" % j.get("wall_s", 0))' "$1"; }
"$w" "${args[@]}" 2> "$OUT/p1.err" | tee "$OUT/p1.jsonl" | end "P=1"
for p in 2 4 8; do
  for redraw in default 1; do
    extra=(); [ $redraw = 1 ] && extra=(--redraw-every 1)
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np $p "$w" "${args[@]}" "${extra[@]}" \
      2> "$OUT/p$p-$redraw.err" | tee "$OUT/p$p-$redraw.jsonl" | end "P=$p redraws=$redraw"
  done
done
