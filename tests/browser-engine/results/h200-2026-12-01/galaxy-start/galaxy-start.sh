#!/usr/bin/env bash
# One call: galaxies started on the GPU (after) against d64b042 (before), alternated.
cd "$(dirname "$0")/.."
run() { # name native pkg sets...
  local name=$1 native=$2 pkg=$3; shift 3
  mkdir -p "$OUT/$name"
  OUT="$OUT/$name" LAB_NATIVE=$native LAB_PKG=$pkg timeout 175 bash tests/browser-engine/lab.sh "$@" > "$OUT/$name/stdout.txt" 2>&1 || echo "$name failed: $?"
  echo "== $name $(date +%T)"
  grep -h '^{' "$OUT/$name"/*.jsonl | grep -o '"host":"[a-z]*"\|"model":"[a-z-]*"\|"n":[0-9]*\|"first_frame_ms":[0-9.]*\|"generate_ms":[0-9.]*\|"setup_ms":[0-9.]*\|"view_ms":[0-9.]*\|"next_model_ms":[0-9.]*\|"frame_wall_ms":[0-9.]*' | tr '\n' ' ' | sed 's/"host":/\n/g'; echo
  echo "validation errors: $(grep -c -i validation "$OUT/$name/lab.log")"
}
run after1 webgrav pkg galaxy-starts
run before1 webgrav-before pkg-before galaxy-starts
run after2 webgrav pkg galaxy-starts
cd "$OUT" && tar czf galaxy.tgz after1 before1 after2 && rm -rf after1 before1 after2
