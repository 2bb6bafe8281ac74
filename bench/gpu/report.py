#!/usr/bin/env python3
"""Joins gpu_bench's and torch_bench.py's JSON lines into the markdown tables of
bench/RESULTS.md: throughput against PyTorch eager (same model, batch, precision, layout),
flopmeter's predicted step time against the measured one, and the probe against the
datasheet and against PyTorch's own matmul and copy.

  report.py FLOPMETER.jsonl TORCH.jsonl [PROBE_FM.jsonl PROBE_TORCH.jsonl]
"""
import json
import sys


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
    return out


def key(r):
    return (r["model"], r["batch"], r["precision"], r["layout"])


def throughput(fm, th):
    torch = {key(r): r for r in th if "probe" not in r}
    rows = {}
    for r in fm:
        if "probe" in r:
            continue
        rows.setdefault(key(r), {})[r.get("graph", 0)] = r
    print("| model | batch | precision | layout | PyTorch eager img/s | flopmeter img/s | ratio "
          "| flopmeter --graph img/s | ratio | predicted step (roofline / PALEO) | measured "
          "step | measured / PALEO |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in sorted(rows):
        t = torch.get(k, {})
        plain, graph = rows[k].get(0, {}), rows[k].get(1, {})
        ti = t.get("img_s")

        def cell(r):
            if not r:
                return "-", "-"
            if "error" in r:
                return "error", "-"
            ratio = "%.2f" % (r["img_s"] / ti) if ti else "-"
            return "%.0f" % r["img_s"], ratio

        p_img, p_ratio = cell(plain)
        g_img, g_ratio = cell(graph)
        ref = plain if plain and "error" not in plain else graph
        if ref and "error" not in ref and ref.get("pred_paleo_ms"):
            pred = "%.1f / %.1f ms" % (ref["pred_roofline_ms"], ref["pred_paleo_ms"])
            meas = "%.1f ms" % ref["step_ms"]
            ratio = "%.2f" % (ref["step_ms"] / ref["pred_paleo_ms"])
        else:
            pred = meas = ratio = "-"
        tcell = "%.0f" % ti if ti else ("error" if "error" in t else "-")
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            k[0], k[1], k[2], k[3], tcell, p_img, p_ratio, g_img, g_ratio, pred, meas, ratio))
    errs = [r for r in fm + th if "error" in r]
    for r in errs:
        print("\nerror (%s %s %s %s %s): %s" % (r["tool"], r.get("model"), r.get("batch"),
                                               r.get("precision"), r.get("layout"), r["error"]))


def probe(pf, pt):
    f = next((r for r in pf if "probe" in r), {})
    t = next((r for r in pt if "probe" in r), {})
    print("| figure | flopmeter probe (median) | datasheet | probe / datasheet | PyTorch "
          "| probe / PyTorch |")
    print("|---|---:|---:|---:|---:|---:|")
    names = [("fma_fp32", "FMA fp32 (vector)", 1e12, "TFLOP/s"),
             ("fma_fp16", "FMA fp16 (vector, half2)", 1e12, "TFLOP/s"),
             ("fma_bf16", "FMA bf16 (vector, bf162)", 1e12, "TFLOP/s"),
             ("fma_fp64", "FMA fp64 (vector)", 1e12, "TFLOP/s"),
             ("gemm_fp32", "GEMM fp32 8192^3 (cuBLASLt)", 1e12, "TFLOP/s"),
             ("gemm_tf32", "GEMM tf32 8192^3", 1e12, "TFLOP/s"),
             ("gemm_fp16", "GEMM fp16 8192^3", 1e12, "TFLOP/s"),
             ("gemm_bf16", "GEMM bf16 8192^3", 1e12, "TFLOP/s"),
             ("copy_Bps", "device-to-device copy, 1 GiB (read + write)", 1e9, "GB/s"),
             ("triad_Bps", "STREAM triad, 3 x 1 GiB", 1e9, "GB/s")]
    for k, label, scale, unit in names:
        a = f.get(k, {})
        b = t.get(k, {})
        m = a.get("median")
        d = a.get("datasheet")
        tm = b.get("median")
        fmt = lambda v: ("%.1f %s" % (v / scale, unit)) if v else "-"
        print("| %s | %s | %s | %s | %s | %s |" % (
            label, fmt(m), fmt(d), "%.2f" % (m / d) if m and d else "-", fmt(tm),
            "%.2f" % (m / tm) if m and tm else "-"))


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    throughput(load(argv[0]), load(argv[1]))
    if len(argv) >= 4:
        print()
        probe(load(argv[2]), load(argv[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
