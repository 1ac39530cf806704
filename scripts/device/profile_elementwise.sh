#!/usr/bin/env bash
# GPU machine: Nsight Compute metrics of one contiguous f32 exp over 2^28 elements, wick's
# kernel against PyTorch's, to see where the last few % of bandwidth go.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/unpack.sh
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_sectors_srcunit_tex_op_write.sum,smsp__cycles_active.avg
ncu --clock-control none --metrics $m --launch-skip 5 --launch-count 1 build/tools/wick/wick bench --device cuda --filter "^${OP:-exp} 268435456 f32" 2>&1 | grep -E "^\s+(gpu__|dram__|launch__|smsp__|sm__|lts__)|void"
python3 - > /tmp/t.py <<'PY'
PY
cat > /tmp/t.py <<'PY'
import torch, os
x = torch.randn(1 << 28, device="cuda")
op = os.environ.get("OP", "exp")
for _ in range(8):
    y = torch.exp(x) if op == "exp" else x + x
torch.cuda.synchronize()
PY
ncu --clock-control none --metrics $m --launch-skip 5 --launch-count 1 python3 /tmp/t.py 2>&1 | grep -E "^\s+(gpu__|dram__|launch__|smsp__|sm__|lts__)|void"
