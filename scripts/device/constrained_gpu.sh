#!/usr/bin/env bash
# GPU machine, three calls: constrained decoding (issue 40) on CUDA. The build of
# pack_build.sh (TESTS="test_constrained test_grammar test_engine") is split in three
# (split -n 3, or -n 4 since the checkout is about 52 MB: -d .device/build.tar.xz .device/build.part_): a call carries 64 MiB at most,
# the checkout included.
#   STAGE=start: carries .device/build.part_00 and .device/gguf-py.tar.xz; stashes the part and
#     starts writing the Llama-3.2-1B-shaped F16 file (bench/make_llama_gguf.py).
#   STAGE=part (PART=1, then PART=2 when split in four): carries .device/build.part_0$PART; stashes it.
#   STAGE=run: carries the last part (.device/build.part_02, or _03 when split in four) and .device/origin.txt; joins the build, runs the three test programs,
#     then `wick serve` on the GPU under bench/serve_load.py at 1/8/32/64 streams, without a
#     constraint and with response_format json_object and a GBNF grammar, side by side.
# Writes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/parts.sh
out=${OUT:-/tmp/out}; m=/tmp/m
mkdir -p "$out" "$m"
if [[ ${STAGE:-run} == start ]]; then
  stash_part 0
  mkdir -p /tmp/gg && tar -C /tmp/gg -xJf .device/gguf-py.tar.xz
  setsid bash -c "PYTHONPATH=/tmp/gg/gguf-py python3 bench/make_llama_gguf.py --shape 1b --dtype f16 --out $m/part.gguf \
    && mv $m/part.gguf $m/l1b-f16.gguf" > $m/make.log 2>&1 < /dev/null &
  nvidia-smi -L
  exit 0
fi
if [[ ${STAGE:-run} == part ]]; then
  stash_part "${PART:-1}"
  exit 0
fi
join_parts
nvidia-smi -L
(cd build && timeout 300 ctest -j8 --timeout 250 -R "Constrained|Grammar|TokenTable|Engine" \
  -E "CliConstrained|JsonSchema|MiniLM|ToolCalls|ReasoningSplit" > "$out/ctest.log" 2>&1)
echo "ctest rc=$?"
grep -E "tests passed|tests failed" "$out/ctest.log"
grep -E "\((Failed|SEGFAULT|Timeout|Exception|Subprocess aborted)\)" "$out/ctest.log" | head -20
while [[ ! -f $m/l1b-f16.gguf ]]; do sleep 3; [[ -s $m/make.log ]] && grep -q Error $m/make.log && cat $m/make.log && exit 1; done
w=build/tools/wick/wick
$w serve --model $m/l1b-f16.gguf --device cuda:0 --parallel 64 --ctx-size 640 --port 8090 > "$out/serve.log" 2>&1 &
spid=$!
for i in $(seq 120); do curl -sf http://127.0.0.1:8090/health > /dev/null && break; sleep 1; done
# A grammar that every token can continue (no sentence ends it), so that each request makes
# its 256 tokens as the unconstrained ones do and the throughputs compare.
gbnf='root ::= "{\"a\": [" [0-9]{1,3} ("," [0-9]{1,3})*'
for variant in none json_object grammar; do
  case $variant in
    none) extra='{}' ;;
    json_object) extra='{"response_format": {"type": "json_object"}}' ;;
    grammar) extra=$(python3 -c 'import json,sys; print(json.dumps({"grammar": sys.argv[1]}))' "$gbnf") ;;
  esac
  echo "== $variant"
  timeout 400 python3 bench/serve_load.py --server wick=http://127.0.0.1:8090 --concurrency ${NPL:-1,8,32,64} \
    --prompt-tokens 256 --max-tokens 256 --reps ${REPS:-2} --rounds 1 --extra "$extra" --out "$out/load_$variant.md" 2>&1 | tail -8
done
kill $spid; wait $spid
grep -E "constrained|error" "$out/serve.log" | head -5
