"""What a device-to-device copy reaches when it moves as few bytes as a short benchmark row.

The per-op table states memory-bound rows as a fraction of the copy bandwidth of 2^28
f32 (2 GiB of traffic). Rows that move tens of MB take tens of microseconds, where the
launch, the ramp-up of the first wave and the drain of the last are a visible share; this
prints the same fraction for PyTorch's copy (x.clone(), timed as compare_cuda.py times
every row: CUDA events, warm-up, median of >= 20) at each given traffic size, so a short
row's fraction can be read against what a copy of its size reaches.

    python3 bench/copy_at_size.py            # the sizes of the short rows of the table
    python3 bench/copy_at_size.py 25 64 128  # traffic in MB (read + written)
"""
import statistics
import sys

import torch


def median_us(fn, runs=50):
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def copy_gbs(traffic_bytes):
    x = torch.empty(int(traffic_bytes // 2 // 4), dtype=torch.float32, device="cuda").normal_()
    us = median_us(lambda: x.clone())
    return us, 2 * x.numel() * 4 / us / 1e3


sizes_mb = [float(a) for a in sys.argv[1:]] or [25.2, 50.3, 64.2, 128.4, 201.3, 268.4]
ceiling_us, ceiling = copy_gbs(2 * (1 << 28) * 4)
print(f"copy of 2^28 f32 (2147 MB of traffic): {ceiling_us:.1f} us, {ceiling:.0f} GB/s (the table's ceiling)")
print("| traffic | copy time | copy GB/s | of the 2^28 ceiling |")
print("|---|---|---|---|")
for mb in sizes_mb:
    us, gbs = copy_gbs(mb * 1e6)
    print(f"| {mb:.1f} MB | {us:.2f} us | {gbs:.0f} | {100 * gbs / ceiling:.0f}% |")
