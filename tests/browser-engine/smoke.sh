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
DAWN_NODE_VERSION=0.6.2
lab="${CARGO_TARGET_DIR:-target}/browser-engine-lab"
mkdir -p "$lab"
cargo build -q --release --target wasm32-unknown-unknown --no-default-features --lib
rm -rf "$lab/pkg"
wasm-bindgen --target experimental-nodejs-module --out-dir "$lab/pkg" \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/webgrav.wasm"
if ! grep -qs "\"version\": \"$DAWN_NODE_VERSION\"" "$lab/package.json"; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "webgpu@$DAWN_NODE_VERSION" >/dev/null && tar xzf "webgpu-$DAWN_NODE_VERSION.tgz")
  cp "$tmp/package/index.js" "$tmp/package/package.json" "$lab/"
  mkdir -p "$lab/dist/linux-x64"
  cp "$tmp/package/dist/linux-x64/dawn.node" "$lab/dist/linux-x64/"
  rm -rf "$tmp"
fi
cargo build -q --bin webgrav
ln -sf "$(realpath "${CARGO_TARGET_DIR:-target}/debug/webgrav")" "$lab/webgrav"
VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json WEBGRAV_LAB="$lab" \
  node tests/browser-engine/lab.mjs \
  '[{"bench":"direct","n":1024,"repeat":1},{"bench":"hermite4","n":512,"precision":"ds","repeat":1}]' \
  --check
