#!/usr/bin/env bash
# The web build as the lab runs it, into DIR: the release wasm (as Trunk
# builds it), wasm-bindgen's Node module of it in DIR/pkg, and the npm
# package `webgpu` (dawn.node, Chrome's WebGPU engine; Linux x64 only) in
# DIR, fetched once per version. prepare.sh and smoke.sh share it.
#   bash tests/browser-engine/web-build.sh DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
DAWN_NODE_VERSION=0.6.2
dir="$1"
mkdir -p "$dir"
cargo build -q --release --target wasm32-unknown-unknown --no-default-features --lib
rm -rf "$dir/pkg"
wasm-bindgen --target experimental-nodejs-module --out-dir "$dir/pkg" \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/webgrav.wasm"
# (prepare.sh keeps dawn.node compressed.)
if ! grep -qs "\"version\": \"$DAWN_NODE_VERSION\"" "$dir/package.json" \
  || ! ls "$dir"/dist/linux-x64/dawn.node* >/dev/null 2>&1; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "webgpu@$DAWN_NODE_VERSION" >/dev/null && tar xzf "webgpu-$DAWN_NODE_VERSION.tgz")
  cp "$tmp/package/index.js" "$tmp/package/package.json" "$dir/"
  mkdir -p "$dir/dist/linux-x64"
  rm -f "$dir/dist/linux-x64/dawn.node.xz"
  cp "$tmp/package/dist/linux-x64/dawn.node" "$dir/dist/linux-x64/"
  rm -rf "$tmp"
fi
