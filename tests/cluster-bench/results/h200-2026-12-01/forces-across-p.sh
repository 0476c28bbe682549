# Force errors across P on one H200 (the ranks share it): `webgrav
# forces` of a model of N (seed 7) with P = 1 (no mpirun), 2, 4 and 8,
# against the f64 direct sum on 4096 sampled particles, θ = 0.75 with
# α = 0 and α = 0.1 (--alphas).
#   bash forces-across-p.sh BUILD MODEL N
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
w=.benchx/webgrav-$1; model=$2; n=$3
chmod +x "$w"
args=(forces --model "$model" -n "$n" --seed 7 --solver tree --theta 0.75 --alphas 0,0.1
  --compare direct --sample 4096)
show() { python3 -c 'import json,sys
for l in sys.stdin:
    if l.startswith("{"):
        j=json.loads(l); e=j["acc_error"]
        print(sys.argv[1], "alpha", j["alpha"], "median %.4e p90 %.4e p99 %.4e max %.4e" % (e["median"], e["p90"], e["p99"], e["max"]))' "$1"; }
"$w" "${args[@]}" 2>/dev/null | show "P=1"
for p in 2 4 8; do
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np $p "$w" "${args[@]}" 2>/dev/null | show "P=$p"
done
