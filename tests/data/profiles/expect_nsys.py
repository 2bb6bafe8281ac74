#!/usr/bin/env python3
"""Independent totals of the Nsight Systems inputs in nsys/, read with nothing but the csv
module (not flopmeter): per file the rows, the times added (nvtx_gpu_proj_sum: Total Proj Time;
nvtx_kern_sum: Total Time), the instances added (Range Instances; Kern Inst), the GPU
operations added (Total GPU Ops; Kern Inst), the projected time of the outermost ranges (Avg
Range Lvl 0), the number of distinct ranges and each range's GPU time. Writes nsys/expected.txt,
which tests/test_ncu.c compares with flopmeter's reading (integers exactly, times to 1e-9).

    /usr/bin/python3 tests/data/profiles/expect_nsys.py
"""
import csv
import os
from decimal import Decimal

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nsys")
FILES = ["nvtx_gpu_proj_sum.csv", "nvtx_kern_sum.csv"]


def table(path):
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(("Range,", "NVTX Range,")))
    rows = list(csv.DictReader(lines[start:]))
    return rows


def seconds(ns):
    return Decimal(ns) / Decimal(10**9)


def main():
    out = ["# file,key,value: written by expect_nsys.py; do not edit"]
    for name in FILES:
        rows = table(os.path.join(HERE, name))
        proj = "Total Proj Time (ns)" in rows[0]
        time_col = "Total Proj Time (ns)" if proj else "Total Time (ns)"
        inst_col = "Range Instances" if proj else "Kern Inst"
        ops_col = "Total GPU Ops" if proj else "Kern Inst"
        name_col = "Range" if proj else "NVTX Range"
        ranges = {}
        for r in rows:
            key = (r[name_col], r["Style"])
            ranges[key] = ranges.get(key, 0) + int(r[time_col])
        vals = [("rows", len(rows)),
                ("total_s", seconds(sum(int(r[time_col]) for r in rows))),
                ("instances", sum(int(r[inst_col]) for r in rows)),
                ("gpu_ops", sum(int(r[ops_col]) for r in rows)),
                ("ranges", len(ranges))]
        if proj:
            vals.append(("top_level_s", seconds(sum(int(r[time_col]) for r in rows
                                                    if Decimal(r["Avg Range Lvl"]) == 0))))
        for (rng, _), ns in ranges.items():
            vals.append(("range_s:" + rng, seconds(ns)))
        out += [f"{name},{k},{v}" for k, v in vals]
    with open(os.path.join(HERE, "expected.txt"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
