# Sourced by the multi-call device scripts (moe_h200.sh, constrained_gpu.sh, gptoss_gpu.sh):
# the build of pack_build.sh split in parts (split -n N -d .device/build.tar.xz
# .device/build.part_, N = 3 or 4), because one call carries at most 64 MiB with the checkout
# (about 52 MB of tracked files since the DeepSeek and gpt-oss fixtures: take N = 4). Every
# call but the last stashes its part on the machine; the last joins them with its own and
# unpacks (unpack.sh), so it carries .device/origin.txt too (the checkout path the ctest
# files name).
stash_part() {  # stash_part K: keeps .device/build.part_0K for the last call
  mkdir -p /tmp/carry && cp ".device/build.part_0$1" /tmp/carry/
}
join_parts() {  # the stashed parts and this call's (the last: .device/build.part_0*), unpacked into build/
  local own
  own=$(ls .device/build.part_0* | tail -1)
  cat /tmp/carry/build.part_0* "$own" > .device/build.tar.xz
  source scripts/device/unpack.sh
}
