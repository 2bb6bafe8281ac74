#!/usr/bin/env python3
"""Writes the Nsight Systems test inputs in nsys/: CONSTRUCTED, not captured (no GPU and no
public nvtx_gpu_proj_sum / nvtx_kern_sum CSV with a traceable source was at hand). The files
have the headers and the preamble `nsys stats --format csv` writes (the columns of NVIDIA's
Nsight Systems User Guide, "Report Scripts": nvtx_gpu_proj_sum, nvtx_kern_sum), and values
summarised from a small made-up timeline the way those reports define them: per range name and
style, the projected durations (first GPU operation's start to last one's end) added, their
mean, median, min, max and sample standard deviation (rounded to 0.1 ns, as the reports do),
and so on. The range names are the ones flopmeter's CUDA steps push ("<layer> fwd", ...),
prefixed with ":" as nsys writes ranges of the default domain.

    /usr/bin/python3 tests/data/profiles/make_nsys_inputs.py
"""
import os
import statistics

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nsys")

# three steps of a small CNN; per range: (name, level, children, [(gpu ops, projected ns,
# CPU ns) per step]); "step" encloses the others
TIMELINE = [
    (":step", 0, 7, [(16, 1650211, 2400118), (16, 1598804, 2301977), (16, 1601533, 2298410)]),
    (":conv1 fwd", 1, 0, [(3, 402113, 80211), (3, 398470, 79115), (3, 399001, 78842)]),
    (":relu1 fwd", 1, 0, [(1, 21077, 9050), (1, 20996, 8814), (1, 21003, 8779)]),
    (":fc fwd", 1, 0, [(2, 55120, 31007), (2, 54988, 30112), (2, 55013, 29985)]),
    (":fc bwd_data", 1, 0, [(2, 60231, 30550), (2, 60004, 29874), (2, 60119, 30001)]),
    (":fc bwd_weight", 1, 0, [(2, 61877, 29411), (2, 61590, 29302), (2, 61702, 29288)]),
    (":conv1 bwd_weight", 1, 0, [(3, 811420, 95530), (3, 790233, 94107), (3, 792120, 93966)]),
    (":optimizer SGD", 1, 0, [(3, 90114, 150210), (3, 89950, 148873), (3, 90002, 149117)]),
]

# nvtx_kern_sum: (range, pid, tid, kernel, [kernel ns per launch]); one range instance per step
KERNELS = [
    (":conv1 fwd", 4711, 4711, "void cudnn::cnn::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, true, false, true>(int, int, int, const T1 *, int, T2 *, const T1 *, kernel_conv_params, unsigned long long, int, float, float, int, const T2 *, const T2 *, bool, int, int)",
     [380112, 376540, 377001]),
    (":conv1 fwd", 4711, 4711, "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<T3>, const T1 *, T2 *)",
     [9011, 8996, 9002, 8870, 8901, 8950]),
    (":relu1 fwd", 4711, 4711, "fm_relu_fwd", [20013, 19990, 20002]),
    (":fc fwd", 4711, 4711, "ampere_sgemm_32x32_sliced1x4_tn", [41225, 41113, 41190]),
    (":fc fwd", 4711, 4711, "fm_bias_add", [6011, 5998, 6003]),
    (":optimizer SGD", 4711, 4711, "fm_sgd_update", [29870, 29911, 29850, 29902, 29877, 29890, 29860, 29905, 29881]),
    ("", 4711, 4711, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char *, 2>>(int, T2, T3)",
     [1503, 1498]),
]


def r1(x):
    return f"{round(x, 1):.1f}"


def stats(v):
    return [str(sum(v)), r1(statistics.mean(v)), r1(statistics.median(v)), str(min(v)),
            str(max(v)), r1(statistics.stdev(v)) if len(v) > 1 else "0.0"]


def proj_sum():
    out = ["Generating SQLite file run.sqlite from run.nsys-rep",
           "Processing [run.sqlite] with [/opt/nvidia/nsight-systems/2024.5.1/host-linux-x64/"
           "reports/nvtx_gpu_proj_sum.py]... ",
           "Range,Style,Total Proj Time (ns),Total Range Time (ns),Range Instances,Proj Avg (ns),"
           "Proj Med (ns),Proj Min (ns),Proj Max (ns),Proj StdDev (ns),Total GPU Ops,"
           "Avg GPU Ops,Avg Range Lvl,Avg Num Child"]
    rows = []
    for name, lvl, child, inst in TIMELINE:
        proj = [p for _, p, _ in inst]
        ops = sum(o for o, _, _ in inst)
        s = stats(proj)
        rows.append((sum(proj), [name, "PushPop", s[0], str(sum(c for _, _, c in inst)),
                                 str(len(inst))] + s[1:] + [str(ops), r1(ops / len(inst)),
                                                            r1(lvl), r1(child)]))
    rows.sort(key=lambda r: -r[0])   # the report orders by Total Proj Time, largest first
    return out + [",".join(f'"{c}"' if "," in c else c for c in r) for _, r in rows]


def kern_sum():
    out = ["Processing [run.sqlite] with [/opt/nvidia/nsight-systems/2024.5.1/host-linux-x64/"
           "reports/nvtx_kern_sum.py]... ",
           "NVTX Range,Style,PID,TID,NVTX Inst,Kern Inst,Total Time (ns),Avg (ns),Med (ns),"
           "Min (ns),Max (ns),StdDev (ns),Kernel Name"]
    rows = []
    for rng, pid, tid, kern, v in KERNELS:
        s = stats(v)
        rows.append((rng, -sum(v), [rng, "PushPop" if rng else "", str(pid), str(tid),
                                    "3" if rng else "0", str(len(v))] + s + [kern]))
    rows.sort(key=lambda r: (r[0], r[1]))   # by range, then total time, largest first
    return out + [",".join(f'"{c}"' if "," in c or '"' in c else c for c in r)
                  for _, _, r in rows]


def main():
    for name, lines in (("nvtx_gpu_proj_sum.csv", proj_sum()), ("nvtx_kern_sum.csv", kern_sum())):
        with open(os.path.join(HERE, name), "w", newline="") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
