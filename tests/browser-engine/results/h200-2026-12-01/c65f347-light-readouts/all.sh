#!/usr/bin/env bash
# One call: the page's frames with the read-outs timed (lab), then the
# parallel start, two builds alternated.
cd "$(dirname "$0")/.."
for b in share ranks; do xz -dc .benchx/webgrav-$b.xz > .benchx/webgrav-$b; chmod +x .benchx/webgrav-$b; done
mkdir -p "$OUT/lab"
OUT="$OUT/lab" timeout 200 bash tests/browser-engine/lab.sh frames first-frames > "$OUT/lab/stdout.txt" 2>&1 || echo "lab failed: $?"
grep -h '^{' "$OUT/lab"/*.jsonl | grep -o '"host":"[a-z]*"\|"n":[0-9]*\|"first_frame_ms":[0-9.]*\|"readout_ms":[0-9.]*\|"light_readout_ms":[0-9.]*' | tr '\n' ' ' | sed 's/"host":/\n/g'; echo
echo "validation errors: $(grep -c validation "$OUT/lab/lab.log")"
BUILDS="ranks share" timeout 330 bash .benchx/start-ranks.sh 2>&1 | tee "$OUT/start-ranks.txt"
