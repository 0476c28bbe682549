#!/usr/bin/env bash
# The lab's own check, here on the CI machine: Dawn in Node finds no
# adapter on lavapipe (Mesa 22.3 lacks a Vulkan feature Dawn requires), but
# runs on the SwiftShader Vulkan driver that Debian's Chromium ships. Runs
# the web build (release wasm, as Trunk builds it) under Dawn beside the
# debug CLI on two small configurations and fails on any error or when the
# two builds have no figure in common.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
lab="${CARGO_TARGET_DIR:-target}/browser-engine-lab"
bash tests/browser-engine/web-build.sh "$lab"
cargo build -q --features mpi --bin webgrav   # the features of the tests: no rebuild
ln -sf "$(realpath "${CARGO_TARGET_DIR:-target}/debug/webgrav")" "$lab/webgrav"
VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json WEBGRAV_LAB="$lab" \
  node tests/browser-engine/lab.mjs \
  '[{"bench":"direct","n":1024,"repeat":1},{"bench":"hermite4","n":512,"precision":"ds","repeat":1}]' \
  --check
