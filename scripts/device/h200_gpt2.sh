#!/usr/bin/env bash
# GPU machine, after h200_check.sh unpacked the build: GPT-2 small against transformers
# eager (bench/gpt2_h200.py) into $OUT/gpt2_table.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
source scripts/device/env.sh
timeout ${GPT2_TIMEOUT:-300} python3 bench/gpt2_h200.py --wick build/tools/wick/wick > "$out/gpt2_table.md" 2> "$out/gpt2.log"
echo "gpt2_h200 rc=$?"
cat "$out/gpt2_table.md"; tail -5 "$out/gpt2.log"
