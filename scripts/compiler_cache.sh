# Sourced by setup.sh, sanitize.sh and fuzz/run_briefly.sh: when ccache is installed, the
# compilers run through it, with paths taken relative to the checkout so that another
# clone on the same machine (a CI run, a worktree) reuses the objects. Without ccache
# nothing changes. Sets wick_cache_args (extra configure arguments). NOHASHDIR: objects
# built with -g (the sanitizer and fuzz builds) are reused across folders too; their debug
# info then names the first folder that built them (stack traces keep the right file
# and line, relative to the checkout).
wick_cache_args=()
if command -v ccache >/dev/null && [[ -z "${WICK_NO_CCACHE:-}" ]]; then
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
  wick_cache_args=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
                   -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
