# Sourced on the GPU machine from the checkout root: unpacks the carried build
# (.device/build.tar.xz from pack_build.sh) and sets the environment (env.sh).
origin=$(sed -n 's/^checkout path: //p' .device/origin.txt)
# The carried build refers to the checkout by the path it was built at.
if [[ "$origin" != "$PWD" ]]; then mkdir -p "$(dirname "$origin")"; ln -sfn "$PWD" "$origin"; fi
mkdir -p build && tar -C build -xJf .device/build.tar.xz
# The ctest files name the build folder it was made in (BUILD_DIR of pack_build.sh).
built_in=$(sed -n 's/^build dir: //p' .device/origin.txt)
if [[ -n "$built_in" && "$built_in" != build && ! -e "$built_in" ]]; then ln -sfn build "$built_in"; fi
source scripts/device/env.sh
export LD_LIBRARY_PATH="$PWD/build/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# gguf-py (for bench/make_llama_gguf.py), when it was carried as .device/gguf-py.tar.xz.
if [[ -f .device/gguf-py.tar.xz ]]; then
  mkdir -p /tmp/gg && tar -C /tmp/gg -xJf .device/gguf-py.tar.xz
  export PYTHONPATH=/tmp/gg/gguf-py${PYTHONPATH:+:$PYTHONPATH}
fi
