#!/usr/bin/env bash
# Here (the CI-like machine): builds what the lab carries to the GPU machine
# into .lab/ (git-ignored, under the device tool's 64 MiB): the native CLI
# (release), the web build and dawn.node (web-build.sh), and Node itself,
# the big ones xz'd.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p .lab
cargo build --release --bin webgrav
xz -T2 -c target/release/webgrav > .lab/webgrav.xz
rm -f .lab/webgrav
bash tests/browser-engine/web-build.sh .lab
dawn=.lab/dist/linux-x64/dawn.node
if [ -f "$dawn" ]; then
  xz -T2 -c "$dawn" > "$dawn.xz"
  rm -f "$dawn"
fi
[ -f .lab/node.xz ] || xz -T2 -c "$(command -v node)" > .lab/node.xz
rm -f .lab/node
du -sh .lab
