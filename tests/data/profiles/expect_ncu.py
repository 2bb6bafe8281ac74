#!/usr/bin/env python3
"""Independent totals of the Nsight Compute captures in ncu/, read with nothing but the csv
module (not flopmeter): per file the kernels, the FLOPs per precision (add + mul + 2 x fma
thread instructions), the tensor-pipe instructions, the DRAM bytes and the time. Writes
ncu/expected.txt, which tests/test_ncu.c compares with flopmeter's reading (integers exactly,
times to a relative 1e-9).

    python3 tests/data/profiles/expect_ncu.py
"""
import csv
import os
from decimal import Decimal
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["sgemm_a100_smsp.csv", "cutlass_v100_sm.csv", "flash_b200_raw.csv",
         "flopmeter_alexnet_h100_nvtx.csv", "cublaslt_b200_rules.csv",
         "cfd_v100_kernel_time.csv"]
TIME_UNITS = {"nsecond": Fraction(1, 10**9), "ns": Fraction(1, 10**9), "usecond": Fraction(1, 10**6),
              "us": Fraction(1, 10**6), "msecond": Fraction(1, 1000), "ms": Fraction(1, 1000),
              "second": Fraction(1), "s": Fraction(1)}


def number(text):
    return Fraction(Decimal(text.replace(",", "")))


def kernels_of(path):
    """{id: {metric: (unit, value)}} in file order, from either form."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(l for l in lines[start:] if l and not l.startswith("==")))
    header = rows[0]
    out = {}
    if "Metric Name" in header:
        ix = {h: i for i, h in enumerate(header)}
        for r in rows[1:]:
            k = out.setdefault(r[ix["ID"]], {})
            k.setdefault(r[ix["Metric Name"]], (r[ix["Metric Unit"]], r[ix["Metric Value"]]))
    else:
        units = rows[1]
        for r in rows[2:]:
            out[r[0]] = {h: (u, v) for h, u, v in zip(header, units, r)}
    return out


def metric(k, name):
    for prefix in ("sm__", "smsp__"):
        if prefix + name in k:
            return number(k[prefix + name][1])
    return None


def main():
    lines = ["# file,key,value: written by expect_ncu.py; do not edit"]
    for name in FILES:
        ks = kernels_of(os.path.join(HERE, "ncu", name))
        tot = {"kernels": len(ks)}
        for prec, p in (("fp64", "d"), ("fp32", "f"), ("fp16", "h")):
            vals = []
            for k in ks.values():
                parts = [metric(k, "sass_thread_inst_executed_op_%s%s_pred_on.sum" % (p, op))
                         for op in ("add", "mul", "fma")]
                vals.append(None if None in parts else parts[0] + parts[1] + 2 * parts[2])
            tot[prec + "_flops"] = None if None in vals else sum(vals)
        ti = [metric(k, "inst_executed_pipe_tensor.sum") for k in ks.values()]
        tot["tensor_inst"] = None if None in ti else sum(ti)
        dram = [number(k["dram__bytes.sum"][1]) if "dram__bytes.sum" in k else None for k in ks.values()]
        tot["dram_bytes"] = None if None in dram else sum(dram)
        t = Fraction(0)
        for k in ks.values():
            if "gpu__time_duration.sum" in k:
                unit, v = k["gpu__time_duration.sum"]
                t += number(v) * TIME_UNITS[unit]
            elif "Duration" in k:   # the details sections' name (GPU Speed Of Light Throughput)
                unit, v = k["Duration"]
                t += number(v) * TIME_UNITS[unit]
            else:
                t += metric(k, "cycles_elapsed.avg") / metric(k, "cycles_elapsed.avg.per_second")
        tot["time_s"] = t
        for key, v in tot.items():
            if v is None:
                text = "missing"
            elif key == "time_s":
                text = "%.17g" % float(v)
            else:
                assert v.denominator == 1 if isinstance(v, Fraction) else True
                text = str(int(v))
            lines.append("%s,%s,%s" % (name, key, text))
    with open(os.path.join(HERE, "ncu", "expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
