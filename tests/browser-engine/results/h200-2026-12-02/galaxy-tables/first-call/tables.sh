#!/usr/bin/env bash
# One call: galaxy tables in a fifth of the time (after) against 8052f36
# (before), alternated; then each model's first frame at 2^20 in a fresh
# process (browser engine only); then a CPU profile of one.
cd "$(dirname "$0")/.."
run() { # name native pkg sets...
  local name=$1 native=$2 pkg=$3; shift 3
  mkdir -p "$OUT/$name"
  OUT="$OUT/$name" LAB_NATIVE=$native LAB_PKG=$pkg timeout 120 bash tests/browser-engine/lab.sh "$@" > "$OUT/$name/stdout.txt" 2>&1 || echo "$name failed: $?"
  echo "== $name $(date +%T)"
  grep -h '^{' "$OUT/$name"/stdout.txt | grep -o '"host":"[a-z]*"\|"model":"[a-z-]*"\|"n":[0-9]*\|"first_frame_ms":[0-9.]*\|"generate_ms":[0-9.]*\|"setup_ms":[0-9.]*\|"view_ms":[0-9.]*\|"next_model_ms":[0-9.]*' | tr '\n' ' ' | sed 's/"host":/\n/g'; echo
  echo "validation errors: $(grep -c -i validation "$OUT/$name/stdout.txt")"
}
G='[{"bench":"frame","n":1048576,"model":"milky-way"},{"bench":"frame","n":1048576,"model":"galaxy-crash"},{"bench":"frame","n":1048576,"model":"minor-mergers"}]'
run after1 webgrav pkg "$G"
run before1 webgrav-before pkg-before "$G"
run after2 webgrav pkg "$G"
for m in plummer milky-way galaxy-crash minor-mergers galaxy-merger disk-galaxy; do
  LAB_ARGS="--only browser" run "fresh-$m" webgrav pkg "[{\"bench\":\"frame\",\"n\":1048576,\"model\":\"$m\",\"repeat\":1}]"
done
for m in milky-way plummer; do
  LAB_ARGS="--only browser" run "fresh-before-$m" webgrav-before pkg-before "[{\"bench\":\"frame\",\"n\":1048576,\"model\":\"$m\",\"repeat\":1}]"
done
mkdir -p "$OUT/prof"
LAB_ARGS="--only browser" LAB_NODE_FLAGS="--cpu-prof --cpu-prof-dir=$OUT/prof" run prof-run webgrav pkg '[{"bench":"frame","n":1048576,"model":"galaxy-crash","repeat":1}]'
cd "$OUT" && tar czf tables.tgz after1 before1 after2 fresh-* prof prof-run && rm -rf after1 before1 after2 fresh-* prof prof-run
