# Two H200s: a Milky Way of 2^26 on one GPU and on two (strong), and of
# 2^27 on two (weak), 24 steps, the defaults (α = 0.1), a log line every 8.
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
mkdir -p "$OUT"
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/webgrav-*
w=.benchx/webgrav-shares
common="--model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.75 --log-every 0.25"
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"
show() { python3 -c '
import json,sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        j=json.loads(l); print(j["steps"], "s/step %.4f" % j["wall_s_per_step"], "redraws", j.get("redraws"), "imported", int(j.get("imported_particles",0)))
' "$1"; }
$w run -n 67108864 $common > "$OUT/one-2p26.jsonl" 2> "$OUT/one-2p26.err"; echo "== one GPU 2^26"; show "$OUT/one-2p26.jsonl"
$mpi $w run -n 67108864 $common > "$OUT/two-2p26.jsonl" 2> "$OUT/two-2p26.err"; echo "== two GPUs 2^26"; grep -E "steps on|start ready" "$OUT/two-2p26.err"; show "$OUT/two-2p26.jsonl"
$mpi $w run -n 134217728 $common > "$OUT/two-2p27.jsonl" 2> "$OUT/two-2p27.err"; echo "== two GPUs 2^27"; grep -E "steps on|start ready" "$OUT/two-2p27.err"; show "$OUT/two-2p27.jsonl"
