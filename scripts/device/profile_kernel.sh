#!/usr/bin/env bash
# GPU machine: one kernel of a `wick bench` row under Nsight Compute: time, DRAM and issue
# rates, where the warps stall (per issued instruction), shared-memory bank conflicts and
# tensor-pipe use, for deciding what limits it.
#   FILTER='^conv2d_tf32 ' KERNEL=conv2d_igemm bash scripts/device/profile_kernel.sh
#   FILTER='^qmatvec_q4_k_q8act 14336x4096' KERNEL=matvec_kernel bash scripts/device/profile_kernel.sh
# CMD replaces the profiled command (e.g. PyTorch's side of a row, for comparing the two):
#   CMD='python3 bench/torch_sdpa.py' FILTER=torch_sdpa KERNEL=flash bash scripts/device/profile_kernel.sh
# EXTRA adds metrics (comma-separated), e.g. EXTRA=sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
source scripts/device/unpack.sh
stalls=""
for s in long_scoreboard short_scoreboard wait barrier math_pipe_throttle lg_throttle mio_throttle not_selected \
  selected no_instruction dispatch_stall branch_resolving membar tex_throttle; do
  stalls+="smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio,"
done
metrics="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,\
sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,\
sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,${EXTRA:+$EXTRA,}${stalls%,}"
name=$(echo "${FILTER}" | tr -c 'A-Za-z0-9_' '_')
timeout ${NCU_TIMEOUT:-120} ncu --clock-control none --metrics "$metrics" --csv --launch-skip ${SKIP:-20} \
  --launch-count 1 -k "regex:${KERNEL}" ${CMD:-build/tools/wick/wick bench --device cuda --filter "${FILTER}"} \
  > "$out/ncu_$name.csv" 2> "$out/ncu_$name.err"
python3 - "$out/ncu_$name.csv" "$FILTER" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows: print(sys.argv[2], "no kernel profiled"); sys.exit()
hdr, rows = rows[0], rows[1:]
ki, mi, vi = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value")
print(sys.argv[2], "|", rows[0][ki][:90])
for r in rows:
    m = r[mi].replace("smsp__average_warps_issue_stalled_", "stall ").replace("_per_issue_active.ratio", "")
    print(f"  {m:70s} {r[vi]}")
PY
