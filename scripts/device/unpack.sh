# Sourced on the GPU machine from the checkout root: unpacks the carried build
# (.device/build.tar.xz from pack_build.sh) and sets the environment (env.sh).
origin=$(sed -n 's/^checkout path: //p' .device/origin.txt)
# The carried build refers to the checkout by the path it was built at.
if [[ "$origin" != "$PWD" ]]; then mkdir -p "$(dirname "$origin")"; ln -sfn "$PWD" "$origin"; fi
mkdir -p build && tar -C build -xJf .device/build.tar.xz
source scripts/device/env.sh
