"""numpy side of bench/elementwise_cpu.cpp: the same ops and shapes, best of 7, GB/s."""
import time, numpy as np, sys
def best(f, reps=7):
    f(); b = 1e30
    for _ in range(reps):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b * 1e3
n = 1 << 24
a = np.random.rand(n).astype(np.float32); b = np.random.rand(n).astype(np.float32)
m = np.random.rand(4096, 4096).astype(np.float32); r = np.random.rand(4096).astype(np.float32)
def gelu(x): return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
for name, f, by in [("add f32 2^24", lambda: a + b, 12 * n), ("exp f32 2^24", lambda: np.exp(a), 8 * n),
                    ("gelu f32 2^24", lambda: gelu(a), 8 * n), ("add row-bcast 4096x4096", lambda: m + r, 8 * 4096 * 4096),
                    ("add col-bcast 4096x4096", lambda: m + r[:, None], 8 * 4096 * 4096),
                    ("add transposed 4096x4096", lambda: m.T + m, 12 * 4096 * 4096)]:
    ms = best(f); print(f"{name:28s} {ms:8.2f} ms  {by / ms / 1e6:7.2f} GB/s")
print(np.__version__, sys.executable)
