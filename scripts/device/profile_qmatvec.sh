#!/usr/bin/env bash
# GPU machine: Nsight Compute times of the quantized matvec kernels alone (no host launch
# cost), with DRAM throughput and occupancy, for the given bench rows.
#   ROWS="qmatvec_q4_0_q8act_4096x4096 qmatvec_q6_k_4096x4096" bash scripts/device/profile_qmatvec.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
source scripts/device/unpack.sh
metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size
for row in ${ROWS:-qmatvec_q4_0_q8act_4096x4096}; do
  timeout ${NCU_TIMEOUT:-60} ncu --clock-control none --metrics $metrics --csv --launch-skip 40 --launch-count 6 \
    build/tools/wick/wick bench --device cuda --filter "^${row%_*} ${row##*_} " > "$out/ncu_$row.csv" 2> "$out/ncu_$row.err"
  python3 - "$out/ncu_$row.csv" "$row" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows: print(sys.argv[2], "no kernels"); sys.exit()
hdr, rows = rows[0], rows[1:]
ki, mi, vi = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value")
vals = collections.defaultdict(list)
for r in rows: vals[(r[ki][:60], r[mi])].append(float(r[vi].replace(",", "")))
for (k, m), v in sorted(vals.items()): print(f"{sys.argv[2]:32s} {k:60s} {m:55s} {sum(v)/len(v):10.2f}")
PY
done
