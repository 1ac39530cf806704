"""PyTorch's side of a unary elementwise row alone, for profiling its kernel next to wick's
(scripts/device/profile_kernel.sh with CMD='python3 bench/torch_unary.py OP DTYPE N').

    python3 bench/torch_unary.py exp bf16 268435456     # 30 calls of torch.exp
"""
import sys

import torch

op = getattr(torch, sys.argv[1] if len(sys.argv) > 1 else "exp")
dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[sys.argv[2] if len(sys.argv) > 2 else "bf16"]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 28
x = torch.randn(n, device="cuda").to(dt)
for _ in range(30):
    op(x)
torch.cuda.synchronize()
