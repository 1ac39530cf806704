#!/usr/bin/env bash
# Packs a CUDA build made here (BLA_STATIC=ON, or OpenBLAS carried in deps/; the CUDA
# module libwick_cuda.so beside it) into .device/build.tar.xz, to be carried to the GPU machine, where
# scripts/device/h200_check.sh unpacks it. The ctest files keep this checkout's absolute
# paths, so the GPU machine links this path to its copy of the checkout.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
mkdir -p .device
files=(src/libwick.so src/libwick_cuda.so tools/wick/wick CTestTestfile.cmake tests/CTestTestfile.cmake)
# wick-bench (`wick bench`'s op table rows); the device scripts call `wick lm-bench` and
# `wick batched-bench`, which the wick command holds too. NO_WICK_BENCH=1 leaves it out.
[[ -n "${NO_WICK_BENCH:-}" ]] || files+=(tools/wick/wick-bench)
# TESTS="test_llama test_gpt2": only those test programs (the carried tree is capped at 64 MiB).
pattern='tests/test_*'
[[ -n "${TESTS:-}" ]] && pattern=$(printf 'tests/%s ' $TESTS)
while IFS= read -r f; do files+=("$f"); done < <(cd "$build" && ls $pattern tests/*.cmake 2>/dev/null | sort -u)
# Debian libraries libwick.so and the wick command (cpp-httplib and OpenSSL: `wick serve`) link that the
# GPU machine (no apt) lacks: carried in deps/, which unpack.sh puts on LD_LIBRARY_PATH.
# OpenBLAS (with its Fortran runtime) too when the build links it dynamically (no BLA_STATIC).
rm -rf "$build/deps" && mkdir -p "$build/deps"
ldd "$build/src/libwick.so" "$build/tools/wick/wick" |
  awk '/libpcre2|libutf8proc|libcpp-httplib|libssl|libcrypto|libopenblas|libgfortran|libquadmath/ {print $3}' |
  sort -u | xargs -r -I{} cp -L {} "$build/deps/"
files+=(deps)
# Stripped copies (symbol tables off, the dynamic symbols kept): ~2 MB less to carry.
stage=$(mktemp -d)
tar -C "$build" -cf - "${files[@]}" | tar -C "$stage" -xf -
find "$stage" -type f \( -name '*.so' -o -perm -u+x \) -exec strip --strip-unneeded {} + 2>/dev/null || true
tar -C "$stage" -cf - "${files[@]}" | xz -T2 -9 > .device/build.tar.xz
rm -rf "$stage"
echo "checkout path: $PWD" > .device/origin.txt
echo "build dir: $build" >> .device/origin.txt
ls -la .device
