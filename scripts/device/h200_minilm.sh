#!/usr/bin/env bash
# GPU machine: all-MiniLM-L6-v2 on cuda:0 against the oracle, and its throughput against
# sentence-transformers. Needs .device/minilm.tar.xz (the model folder; the embedding rows
# the tests never use are zeroed so the archive fits the transfer limit) and the build.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
SANITIZE=0 bash scripts/device/h200_check.sh > "$out/check.txt" 2>&1
tail -5 "$out/check.txt"
mkdir -p /tmp/minilm && tar -C /tmp/minilm -xJf .device/minilm.tar.xz
export WICK_MINILM_DIR=/tmp/minilm/minilm LD_LIBRARY_PATH=$PWD/build/src
./build/tests/test_minilm 2>&1 | tail -4
./build/tools/wick/wick embed --similarity --device cuda "A man is eating food." "A man is eating a piece of bread." "The new movie is awesome"
python3 bench/minilm_h200.py --wick build/tools/wick/wick --model /tmp/minilm/minilm --device cuda 2>&1 | tee "$out/minilm_bench.txt" | grep -v Warning
