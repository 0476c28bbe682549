#!/usr/bin/env bash
# Here (the CI-like machine): builds what the lab carries to the GPU machine
# into .lab/ (git-ignored, under the device tool's 64 MiB): the native CLI
# (release), the web build (release wasm, wasm-bindgen for Node), Node
# itself and dawn.node (npm `webgpu`, Linux x64 only), the big ones xz'd.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
DAWN_NODE_VERSION=0.6.2
mkdir -p .lab
cargo build --release --bin webgrav
xz -T2 -c target/release/webgrav > .lab/webgrav.xz
rm -f .lab/webgrav
cargo build --release --target wasm32-unknown-unknown --no-default-features --lib
rm -rf .lab/pkg
wasm-bindgen --target experimental-nodejs-module --out-dir .lab/pkg \
  target/wasm32-unknown-unknown/release/webgrav.wasm
if [ ! -f .lab/dist/linux-x64/dawn.node.xz ] || ! grep -q "\"version\": \"$DAWN_NODE_VERSION\"" .lab/package.json; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "webgpu@$DAWN_NODE_VERSION" >/dev/null && tar xzf "webgpu-$DAWN_NODE_VERSION.tgz")
  cp "$tmp/package/index.js" "$tmp/package/package.json" .lab/
  mkdir -p .lab/dist/linux-x64
  xz -T2 -c "$tmp/package/dist/linux-x64/dawn.node" > .lab/dist/linux-x64/dawn.node.xz
  rm -rf "$tmp"
fi
[ -f .lab/node.xz ] || xz -T2 -c "$(command -v node)" > .lab/node.xz
rm -f .lab/node .lab/dist/linux-x64/dawn.node
du -sh .lab
