#!/usr/bin/env bash
# The page's first frame, before and after, alternated twice in one call.
cd "$(dirname "$0")/.."
for round in 1 2; do
  for b in before after; do
    if [ $b = before ]; then nat=webgrav-before; pkg=pkg-before; else nat=webgrav; pkg=pkg; fi
    mkdir -p "$OUT/$b$round"
    OUT="$OUT/$b$round" LAB_NATIVE=$nat LAB_PKG=$pkg timeout 250 bash tests/browser-engine/lab.sh first-frames frames > "$OUT/$b$round/stdout.txt" 2>&1 || echo "$b$round failed: $?"
    for f in "$OUT/$b$round"/*.jsonl; do
      echo "## $b$round $(basename "$f")"
      grep -o '"n":[0-9]*\|"first_frame_ms":[0-9.]*\|"generate_ms":[0-9.]*\|"setup_ms":[0-9.]*\|"view_ms":[0-9.]*\|"next_model_ms":[0-9.]*\|"frame_wall_ms":[0-9.]*' "$f" | tr '\n' ' ' | sed 's/"n":/\n n=/g'
      echo
    done
  done
done
for d in "$OUT"/*/; do echo "$d validation errors: $(grep -c 'validation' "$d/lab.log")"; done
(cd "$OUT" && tar czf all.tgz before1 before2 after1 after2 && rm -rf before1 before2 after1 after2)
