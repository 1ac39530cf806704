#!/usr/bin/env python3
"""Sums an `ncu --metrics gpu__time_duration.sum --csv` log by kernel name: what a run's
kernels cost, largest first.   python3 scripts/device/ncu_summary.py NCU.csv [TOP]"""
import collections
import csv
import sys

rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr, rows = rows[0], rows[1:]
ki, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
tot = collections.defaultdict(float)
cnt = collections.Counter()
for r in rows:
    name = r[ki][:110]
    tot[name] += float(r[vi].replace(",", "")) * scale.get(r[ui], 1.0)
    cnt[name] += 1
print(f"{len(rows)} kernels, {sum(tot.values()) / 1e3:.1f} us total")
for n, v in sorted(tot.items(), key=lambda x: -x[1])[: int(sys.argv[2]) if len(sys.argv) > 2 else 40]:
    print(f"{v / 1e3:9.1f} us {cnt[n]:5d}x {v / cnt[n] / 1e3:7.2f} us/each  {n}")
