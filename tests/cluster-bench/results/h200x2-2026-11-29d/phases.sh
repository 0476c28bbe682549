# Per-step phases of two ranks at N, redrawn every step against the default.
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
w=.benchx/webgrav; chmod +x $w
mkdir -p $OUT/x
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"
for n in 33554432; do
  common=(run --model plummer -n $n --seed 7 --theta 0.75 --alpha 0 --dt 0.0078125 --t-end 0.25 --log-every 0.0078125 --potential-sum solver)
  $mpi $w "${common[@]}" --redraw-every 1 > $OUT/x/every1-$n.jsonl 2> $OUT/x/every1-$n.err
  $mpi $w "${common[@]}" > $OUT/x/auto-$n.jsonl 2> $OUT/x/auto-$n.err
  $w "${common[@]/33554432/16777216}" > $OUT/x/p1-half-$n.jsonl 2> $OUT/x/p1-half.err
done
