#!/usr/bin/env bash
# On the GPU machine (through the device tool), from the repository root,
# with .gl/ and .lab/ carried (prepare.sh, and a build before a change as
# .lab/webgrav-before.xz and .lab/pkg-before/):
#   bash tests/browser-engine/fresh-starts.sh ROUNDS N "MODEL ..." [WHERE] [ORDER]
# Each model's first frame (`bench frame`, one spec) in a fresh process,
# as a page load, for the build after the change and the one before,
# alternated; WHERE is `browser` (the default: Dawn in Node) or `native`,
# ORDER `after-first` (the default) or `before-first`. Each run's output
# goes to $OUT/{after,before}ROUND-MODEL-N/stdout.txt, and is then packed
# into $OUT/starts-N-WHERE.tgz (the device tool brings back a few dozen
# files); $OUT/summary-N-WHERE.txt and the output hold each run's start
# figures.
set -uo pipefail
cd "$(dirname "$0")/../.."
rounds=$1 n=$2 models=$3 where=${4:-browser} order=${5:-after-first}
out="${OUT:-.lab/out}"
bash tests/browser-engine/lab.sh > /dev/null 2>&1 || true # unpack Node, dawn.node, the drivers
builds="after before"
[ "$order" = before-first ] && builds="before after"
names=()
for round in $(seq "$rounds"); do
  for m in $models; do
    for build in $builds; do
      name="$build$round-$m-$n"
      [ "$where" = native ] && name="native-$name"
      suffix=""
      [ "$build" = before ] && suffix="-before"
      mkdir -p "$out/$name"
      OUT="$out/$name" LAB_NATIVE="webgrav$suffix" LAB_PKG="pkg$suffix" LAB_ARGS="--only $where" \
        timeout 120 bash tests/browser-engine/lab.sh \
        "[{\"bench\":\"frame\",\"n\":$n,\"model\":\"$m\",\"repeat\":1}]" \
        > "$out/$name/stdout.txt" 2>&1 || echo "$name failed: $?"
      echo "== $name $(date +%T) validation errors: $(grep -c -i validation "$out/$name/stdout.txt")"
      names+=("$name")
    done
  done
done
cd "$out" || exit 1
keys='first_frame_ms|first_picture_ms|picture_compile_ms|compile_ms|generate_ms|setup_ms|view_ms|next_model_ms|frame_wall_ms'
for name in "${names[@]}"; do
  echo "$name $(grep -oE "\"($keys)\":[0-9.]+" "$name/stdout.txt" | tr '\n' ' ')"
done | tee "summary-$n-$where.txt"
tar czf "starts-$n-$where.tgz" "${names[@]}" && rm -rf "${names[@]}"
