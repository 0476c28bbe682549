for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
mkdir -p $OUT/x
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"
for n in 33554432 8388608; do
for b in 64 256 64 256; do
  w=.benchx/webgrav-$b; chmod +x $w
  $mpi $w run --model plummer -n $n --seed 7 --theta 0.75 --alpha 0 --dt 0.0078125 --t-end 0.25 --log-every 0.03125 --potential-sum solver > $OUT/x/b$b-$n.jsonl 2> $OUT/x/b$b-$n.err
  tail -n 1 $OUT/x/b$b-$n.err
done; done
