"""PyTorch's side of the sdpa_causal rows, alone, for profiling its kernel next to wick's
(scripts/device/profile_kernel.sh with CMD='python3 bench/torch_sdpa.py B DTYPE').

    python3 bench/torch_sdpa.py 8 bf16     # 8 x 12 heads x 1024 x 64, causal, 40 calls
"""
import sys

import torch

b = int(sys.argv[1]) if len(sys.argv) > 1 else 8
dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[sys.argv[2] if len(sys.argv) > 2 else "bf16"]
q, k, v = (torch.randn(b, 12, 1024, 64, device="cuda").to(dt) for _ in range(3))
for _ in range(40):
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
torch.cuda.synchronize()
