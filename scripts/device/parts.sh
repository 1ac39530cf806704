# Sourced by the three-call device scripts (moe_h200.sh, constrained_gpu.sh): the build of
# pack_build.sh split in three (split -n 3 -d .device/build.tar.xz .device/build.part_),
# because one call carries at most 64 MiB with the checkout. The first two calls stash their
# part on the machine; the third joins them and unpacks (unpack.sh), so it carries
# .device/origin.txt too (the checkout path the ctest files name).
stash_part() {  # stash_part N: keeps .device/build.part_0N for the last call
  mkdir -p /tmp/carry && cp ".device/build.part_0$1" /tmp/carry/
}
join_parts() {  # the two stashed parts and this call's third, unpacked into build/
  cat /tmp/carry/build.part_00 /tmp/carry/build.part_01 .device/build.part_02 > .device/build.tar.xz
  source scripts/device/unpack.sh
}
