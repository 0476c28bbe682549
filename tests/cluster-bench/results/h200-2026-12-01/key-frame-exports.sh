# What each rank exports with and without the domains' key frame: a
# Milky Way of N (seed 7) on two ranks sharing one H200, 4 steps logged
# every step, at α = 0 and 0.1.
#   bash key-frame-exports.sh BUILD N
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
w=.benchx/webgrav-$1; n=$2
chmod +x "$w"
for alpha in 0 0.1; do
  for env in FRAME=1 NOFRAME=1; do
    echo "alpha $alpha $env"
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x $env "$w" run --model milky-way -n "$n" \
      --seed 7 --theta 0.75 --alpha $alpha --dt 0.0078125 --t-end 0.03125 --log-every 0.0078125 2>/dev/null |
      python3 -c 'import json,sys
for l in sys.stdin:
    if l.startswith("{"):
        j=json.loads(l); g=j["gpu_phases_max_ms"]
        print(" step", j["steps"], "exported", int(j["exported_particles"]), "cells", int(j["exported_cells"]), "pot %.9g" % j["potential"],
              "err %.3e" % j["rel_energy_error"], "redraws", j["redraws"], "wall/step %.3f" % j["wall_s_per_step"], "walk %.1f imported %.1f" % (g["walk"], g["imported_walk"]))'
  done
done
