// The CPU backend's worker threads: how many the CPU kernels split their work over
// (default: the hardware's threads, or $WICK_NUM_THREADS), and a way to change it.
#pragma once

namespace wick {

int cpu_num_threads();
// 1 disables threading; takes effect for later ops. Values below 1 raise InvalidArgument.
void set_cpu_num_threads(int n);

}  // namespace wick
