#!/usr/bin/env bash
# One call (issue 47, item 2; run as .lab/cuts.sh, compile.mjs then in
# .lab, since tests/browser-engine/compile.mjs): modules cut to what each entry point
# reaches (after) against 7920b15 (before, whole modules).
#  1. compile.mjs: every composed module's pipelines, whole (wgsl/) and
#     cut per entry point (wgsl-cut/), on fresh Dawn devices;
#  2. every model's first frame in a fresh Node process at 2^20, the
#     browser engine, after and before alternated, twice; at 2^24 once;
#     and natively once each at 2^20.
cd "$(dirname "$0")/.."
bash tests/browser-engine/lab.sh > /dev/null 2>&1 || true  # unpack node, dawn, libs
mkdir -p "$OUT/compiles"
.lab/node tests/browser-engine/compile.mjs wgsl --no-probe > "$OUT/compiles/whole.jsonl" 2>&1
.lab/node tests/browser-engine/compile.mjs wgsl-cut --no-probe > "$OUT/compiles/cut.jsonl" 2>&1
echo "== compiles $(date +%T)"
run() { # name native pkg sets...
  local name=$1 native=$2 pkg=$3; shift 3
  mkdir -p "$OUT/$name"
  OUT="$OUT/$name" LAB_NATIVE=$native LAB_PKG=$pkg timeout 120 bash tests/browser-engine/lab.sh "$@" > "$OUT/$name/stdout.txt" 2>&1 || echo "$name failed: $?"
  echo "== $name $(date +%T) validation errors: $(grep -c -i validation "$OUT/$name/stdout.txt")"
}
spec() { echo "[{\"bench\":\"frame\",\"n\":$2,\"model\":\"$1\",\"repeat\":1}]"; }
models="plummer hernquist disk-galaxy milky-way galaxy-merger galaxy-crash minor-mergers"
for round in 1 2; do
  for m in $models; do
    LAB_ARGS="--only browser" run "after$round-$m-1048576" webgrav pkg "$(spec $m 1048576)"
    LAB_ARGS="--only browser" run "before$round-$m-1048576" webgrav-before pkg-before "$(spec $m 1048576)"
  done
done
for m in plummer milky-way galaxy-crash; do
  LAB_ARGS="--only browser" run "after1-$m-16777216" webgrav pkg "$(spec $m 16777216)"
  LAB_ARGS="--only browser" run "before1-$m-16777216" webgrav-before pkg-before "$(spec $m 16777216)"
done
for m in plummer milky-way galaxy-crash; do
  LAB_ARGS="--only native" run "native-after-$m-1048576" webgrav pkg "$(spec $m 1048576)"
  LAB_ARGS="--only native" run "native-before-$m-1048576" webgrav-before pkg-before "$(spec $m 1048576)"
done
cd "$OUT" && tar czf cuts.tgz compiles after* before* native* && rm -rf compiles after* before* native*
