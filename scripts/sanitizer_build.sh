# Sourced by scripts/sanitize.sh and fuzz/run_briefly.sh: configures the instrumented builds
# of CI the same way for both, so that the fuzz run reuses the ASan build's objects instead of
# compiling the library a second time.
#
#   sanitizer_configure asan BUILD_DIR   clang, ASan + UBSan, the test suite AND the libFuzzer
#                                        targets in one tree (libwick also carries the
#                                        fuzzers' coverage hooks; the tests never call them)
#   sanitizer_configure tsan BUILD_DIR   clang, ThreadSanitizer, the test suite
#
# Both: -O1 (the instrumented suite stays fast enough; -O0 doubles its run time) with line
# tables only (stack traces keep file:line; full debug info costs compile and link time) and
# a unity build (CMAKE_UNITY_BUILD: the library's sources compiled eight to a translation
# unit, so each batch parses the shared headers once). Both need clang: libFuzzer is clang's,
# and one compiler for both keeps their objects' flags alike.
sanitizer_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$sanitizer_root/scripts/compiler_cache.sh"

sanitizer_configure() {
  local kind=$1 build=$2 flags
  case $kind in
    asan) flags=(-DWICK_SANITIZE=ON -DWICK_TSAN=OFF -DWICK_FUZZ=ON) ;;
    tsan) flags=(-DWICK_TSAN=ON -DWICK_SANITIZE=OFF -DWICK_FUZZ=OFF) ;;
    *) echo "sanitizer_configure: unknown kind '$kind' (asan or tsan)" >&2; return 2 ;;
  esac
  CC=clang CXX=clang++ cmake -S "$sanitizer_root" -B "$build" "${wick_cache_args[@]}" -G Ninja \
    -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" -DCMAKE_UNITY_BUILD=ON \
    -DWICK_CUDA=OFF -DWICK_BENCH=OFF -DWICK_TESTS=ON "${flags[@]}"
}
