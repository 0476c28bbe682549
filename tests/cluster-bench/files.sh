#!/usr/bin/env bash
# One snapshot file from every GPU of the host beside one GPU's, in one
# call of the device tool: each rank writes its own records at their
# place in the file (`snapshot::parted`). From the repository root, with
# .gl/ and the build under .benchx/ carried (`cargo build --release
# --no-default-features --features mpi`):
#   bash tests/cluster-bench/files.sh BUILD MODEL N FORMAT[,FORMAT...]
# For each format: MODEL with N particles at t = 0 written by one GPU and
# by every GPU (the two files compared byte for byte: at t = 0 they hold
# the same particles, and Bonsai's and Gadget's records no potential),
# then N per GPU on every GPU. stderr has each write's time ("wrote … in
# … s") and each command's.
source "$(dirname "$0")/gpu-host.sh"
b=".benchx/$1"
model=$2
n=$3
IFS=, read -ra formats <<< "$4"
chmod +x "$b"
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none -np $gpus"
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1
dir=/tmp/files
mkdir -p $dir
timed() {
  local start
  start=$(date +%s.%N)
  timeout "${LIMIT:-300}" "$@"
  echo "== command $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s" >&2
}
for f in "${formats[@]}"; do
  run=(run --model "$model" --t-end 0)
  echo "== $f, one GPU, N = $n" >&2
  timed "$b" "${run[@]}" -n "$n" --out "$dir/one.$f"
  echo "== $f, $gpus GPUs, N = $n" >&2
  timed $mpi "$b" "${run[@]}" -n "$n" --out "$dir/parts.$f"
  for side in "" .webgrav_kind .iord; do
    [ -e "$dir/one.$f$side" ] || [ -e "$dir/parts.$f$side" ] || continue
    if cmp "$dir/one.$f$side" "$dir/parts.$f$side" >&2; then
      echo "== one.$f$side and parts.$f$side are the same $(stat -c %s "$dir/one.$f$side") bytes" >&2
    fi
  done
  rm -f "$dir"/one.* "$dir"/parts.*
  echo "== $f, $gpus GPUs, N = $((n * gpus))" >&2
  timed $mpi "$b" "${run[@]}" -n "$((n * gpus))" --out "$dir/all.$f"
  ls -l "$dir" >&2
  rm -f "$dir"/all.*
done
