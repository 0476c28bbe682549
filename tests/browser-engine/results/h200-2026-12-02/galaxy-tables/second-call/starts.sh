#!/usr/bin/env bash
# One call: galaxy starts with the tables in a fifth of the time (after)
# against 8052f36 (before), alternated; then each model's first frame in a
# fresh process (browser engine only), twice; then V8 without its baseline
# tier, for the record.
cd "$(dirname "$0")/.."
run() { # name native pkg sets...
  local name=$1 native=$2 pkg=$3; shift 3
  mkdir -p "$OUT/$name"
  OUT="$OUT/$name" LAB_NATIVE=$native LAB_PKG=$pkg timeout 150 bash tests/browser-engine/lab.sh "$@" > "$OUT/$name/stdout.txt" 2>&1 || echo "$name failed: $?"
  echo "== $name $(date +%T) validation errors: $(grep -c -i validation "$OUT/$name/stdout.txt")"
}
run after1 webgrav pkg galaxy-starts
run before1 webgrav-before pkg-before galaxy-starts
run after2 webgrav pkg galaxy-starts
for round in 1 2; do
  sizes="1048576 16777216"; [ $round = 2 ] && sizes=1048576
  for n in $sizes; do
    for m in plummer milky-way galaxy-crash minor-mergers galaxy-merger disk-galaxy hernquist; do
      LAB_ARGS="--only browser" run "fresh$round-$m-$n" webgrav pkg "[{\"bench\":\"frame\",\"n\":$n,\"model\":\"$m\",\"repeat\":1}]"
      [ $round = 1 ] && [ $n = 1048576 ] && LAB_ARGS="--only browser" run "freshbefore-$m-$n" webgrav-before pkg-before "[{\"bench\":\"frame\",\"n\":$n,\"model\":\"$m\",\"repeat\":1}]"
    done
  done
done
for m in milky-way galaxy-crash; do
  LAB_ARGS="--only browser" LAB_NODE_FLAGS="--no-liftoff" run "nolift-$m" webgrav pkg "[{\"bench\":\"frame\",\"n\":1048576,\"model\":\"$m\",\"repeat\":1}]"
done
cd "$OUT" && tar czf starts.tgz after1 before1 after2 fresh* nolift* && rm -rf after1 before1 after2 fresh* nolift*
