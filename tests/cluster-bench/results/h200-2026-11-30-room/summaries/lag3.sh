for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
chmod +x .benchx/*
mkdir -p $OUT
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x TRACE_DUMP=$OUT .benchx/webgrav-trace run -n 134217728 --model milky-way --seed 1 --eps 0.1 --dt 0.03125 --t-end 0.25 --log-every 0.03125 --redraw-every 4 --alpha 0 --potential-sum solver 2>&1 | grep -v '^rank' | python3 -c '
import sys, json
for l in sys.stdin:
    if l.startswith("{"):
        j = json.loads(l); print("step", j["steps"], "imported", j["imported_particles"], "s/step %.3f" % j["wall_s_per_step"])
'
cd $OUT && tar czf summaries.tgz summary-*.bin && rm summary-*.bin; ls
