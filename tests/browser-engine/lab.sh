#!/usr/bin/env bash
# On the GPU machine (through the device tool), from the repository root,
# with .gl/ (the Vulkan loader's packages) and .lab/ (prepare.sh) carried:
#   bash tests/browser-engine/lab.sh SET [SET ...]
# runs lab.mjs for each set and leaves the JSON lines in $OUT (or .lab/out):
# SET.native.jsonl and SET.browser.jsonl, and lab.log, everything printed.
# LAB_ARGS (e.g. "--only browser"), DAWN_FLAGS (Dawn's toggles, for
# experiments: a page gets Chrome's defaults), LAB_NATIVE and LAB_PKG (the
# native binary, .lab/NAME[.xz], and the web build, .lab/DIR, e.g. those
# before a change) pass through to lab.mjs; LAB_NODE_FLAGS to Node (e.g.
# "--cpu-prof --cpu-prof-dir=DIR": read the profiles with profile.mjs).
set -euo pipefail
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
[ -x .lab/node ] || { xz -dc .lab/node.xz > .lab/node; chmod +x .lab/node; }
[ -f .lab/dist/linux-x64/dawn.node ] || xz -dc .lab/dist/linux-x64/dawn.node.xz > .lab/dist/linux-x64/dawn.node
native="${LAB_NATIVE:-webgrav}"
[ -x ".lab/$native" ] || { xz -dc ".lab/$native.xz" > ".lab/$native"; chmod +x ".lab/$native"; }
out="${OUT:-.lab/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
".lab/$native" info || true
# Every line (JSON and the ratio tables) also goes to $out/lab.log.
for set in "$@"; do
  echo "== $set"
  .lab/node ${LAB_NODE_FLAGS:-} tests/browser-engine/lab.mjs "$set" --out "$out" ${LAB_ARGS:-}
done 2>&1 | tee -a "$out/lab.log"
