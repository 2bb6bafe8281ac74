#!/usr/bin/env python3
"""Writes ncu/dialects/: one small file per CSV dialect Nsight Compute has written since 2019
(docs/profiles.md lists them). They are constructed, not captured: the column sets, their order,
the quoting, the units and the row shapes are those of the versions named below (NVIDIA's Nsight
Compute CLI manuals 2019.3-2025.x and published ncu output, SOURCES.md); the kernels and the
values are chosen so that tests/test_ncu.c can check every figure with integers worked out by
hand. Each file is written byte for byte by this script; do not edit the files.

    python3 tests/data/profiles/make_ncu_dialects.py
"""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ncu", "dialects")

FP32 = ["sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"]


def q(fields):
    """ncu quotes every field and doubles the quotes inside one."""
    return ",".join('"' + f.replace('"', '""') + '"' for f in fields)


def write(name, lines, crlf=False):
    with open(os.path.join(HERE, name), "w", newline="") as f:
        f.write(("\r\n" if crlf else "\n").join(lines) + ("\r\n" if crlf else "\n"))


# 2019.1-2020.1 (nv-nsight-cu-cli): "Kernel Time" (the launch's wall-clock timestamp, not a
# duration), no launch geometry, no rule columns; human-named section metrics with "nsecond",
# "usecond" and "cycle/nsecond" units; thousands separators.
H2019 = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
         "Stream", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]


def v2019():
    rows = ["==PROF== Connected to process 21524 (/home/user/rodinia_3.1/cuda/cfd/euler3d)",
            "==PROF== Disconnected from process 21524", q(H2019)]
    kern = [("0", "cuda_compute_step_factor", "2020-Apr-07 17:01:05", "nsecond", "3,520",
             "12,582,912", ("1,048,576", "0", "2,097,152")),
            ("1", "cuda_compute_flux", "2020-Apr-07 17:01:06", "usecond", "1.47",
             "4,194,304", ("524,288", "262,144", "1,572,864"))]
    for kid, name, when, tu, tv, dram, fp in kern:
        base = [kid, "21524", "euler3d", "127.0.0.1", name, when, "1", "7"]
        rows.append(q(base + ["GPU Speed Of Light", "Memory Frequency", "cycle/second",
                              "772,656,250"]))
        rows.append(q(base + ["GPU Speed Of Light", "SM Frequency", "cycle/nsecond", "1.38"]))
        rows.append(q(base + ["GPU Speed Of Light", "Duration", tu, tv]))
        rows.append(q(base + ["GPU Speed Of Light", "SOL FB", "%", "39.60"]))
        rows.append(q(base + ["Command line profiler metrics", "dram__bytes.sum", "byte", dram]))
        for m, v in zip(FP32, fp):
            rows.append(q(base + ["Command line profiler metrics", m, "inst", v]))
    write("v2019_kernel_time.csv", rows)


# 2020.2-2021.1: the rule columns in the header; metric rows end after "Metric Value" with a
# trailing comma (13 fields against the header's 15), rule rows carry the rule's text and no
# metric. The A100 capture of a PyTorch GPT-2 step this reproduces failed with "a row with 13
# fields where the header (line 1) has 15".
GELU = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
        "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
        "{lambda()#1}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
        "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
        "{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(float)#1}, "
        "at::detail::Array<char*, 2>)")


def v2021_rules():
    h = H2019 + ["Rule Name", "Rule Type", "Rule Description"]
    rows = [q(h)]
    kern = [("0", "ampere_sgemm_128x64_tn", "35.84", "25,165,824", ("0", "0", "1,207,959,552")),
            ("1", GELU, "6.14", "25,231,360", ("3,145,728", "9,437,184", "12,582,912"))]
    for kid, name, tv, dram, fp in kern:
        base = [kid, "3817", "python3.8", "127.0.0.1", name, "2022-Mar-14 10:21:0" + kid, "1", "7"]
        sol = "GPU Speed Of Light Throughput"
        rows.append(q(base + [sol, "DRAM Throughput", "%", "41.32"]) + ",")
        rows.append(q(base + [sol, "Duration", "usecond", tv]) + ",")
        rows.append(q(base + [sol, "", "", "", "SOLBottleneck", "WRN",
                              "This kernel exhibits low compute throughput and memory bandwidth "
                              "utilization relative to the peak performance of this device. "
                              "Achieved compute throughput and/or memory bandwidth below 60.0% "
                              "of peak typically indicate latency issues."]))
        rows.append(q(base + ["Command line profiler metrics", "dram__bytes.sum", "byte", dram])
                    + ",")
        for m, v in zip(FP32, fp):
            rows.append(q(base + ["Command line profiler metrics", m, "inst", v]) + ",")
    write("v2021_rules_short_rows.csv", rows)


# 2021.2-2022.x: launch geometry ("Block Size", "Grid Size", "Device", "CC") instead of
# "Kernel Time", the rule columns, and NVTX columns (ncu --nvtx) before "Kernel Name"; rows as
# wide as the header (empty rule cells). CRLF line ends, as the Windows build writes them.
NVTX_PP = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
NVTX_SS = "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def v2022_nvtx():
    h = ["ID", "Process ID", "Process Name", "Host Name", NVTX_PP, NVTX_SS, "Kernel Name",
         "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name",
         "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type",
         "Rule Description"]
    rows = [q(h)]
    kern = [("0", "attn", "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
             "8,192", "1,048,576", ("0", "0", "0")),
            ("1", "mlp", "void at::native::elementwise_kernel<128, 2>(int, at::native::gpu_kernel_impl)",
             "2,048", "262,144", ("65,536", "65,536", "0"))]
    for kid, rng, name, tv, dram, fp in kern:
        nv = '5120  "<default domain>:step:none:none:none:none:none:none"  ' \
             '"<default domain>:' + rng + ':none:none:none:none:none:none" '
        base = [kid, "5120", "python3", "127.0.0.1", nv, "", name, "1", "7", "(128, 1, 1)",
                "(216, 1, 1)", "0", "8.6"]
        cmd = "Command line profiler metrics"
        rows.append(q(base + [cmd, "dram__bytes.sum", "byte", dram, "", "", ""]))
        rows.append(q(base + [cmd, "gpu__time_duration.sum", "nsecond", tv, "", "", ""]))
        for m, v in zip(FP32, fp):
            rows.append(q(base + [cmd, m, "inst", v, "", "", ""]))
    write("v2022_nvtx_rules.csv", rows, crlf=True)


# 2023.1 and later: "Estimated Speedup Type" and "Estimated Speedup" after the rule columns;
# two processes (ncu --target-processes all, a FlashAttention program launched by a driver
# script); an "n/a" value on a metric flopmeter reads; scaled units ("usecond").
FLASH_FWD = ("void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
             "cutlass::half_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::half_t> >, false, "
             "false, false, false, true, true, false>(Flash_fwd_params)")
FLASH_BWD = ("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, "
             "128, 8, 2, 4, 2, false, false, cutlass::half_t, Flash_kernel_traits<64, 128, 128, 8, "
             "cutlass::half_t> >, false, false, false, false, false, false>(Flash_bwd_params)")


def v2023_speedup():
    h = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
         "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
         "Metric Value", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
         "Estimated Speedup"]
    rows = ["==PROF== Connected to process 4711 (/usr/bin/python3.10)",
            "==PROF== Connected to process 4712 (/usr/bin/python3.10)", q(h)]
    kern = [("0", "4711", FLASH_FWD, "412.74", "201,326,592", "4,194,304",
             ("16,777,216", "33,554,432", "8,388,608")),
            ("1", "4712", FLASH_BWD, "1,093.41", "n/a", "12,582,912",
             ("50,331,648", "67,108,864", "25,165,824"))]
    for kid, pid, name, tv, dram, tens, fp in kern:
        base = [kid, pid, "python3.10", "127.0.0.1", name, "1", "7", "(128, 1, 1)",
                "(32, 16, 4)", "0", "8.0"]
        e = ["", "", "", "", ""]
        cmd = "Command line profiler metrics"
        rows.append(q(base + [cmd, "dram__bytes.sum", "byte", dram] + e))
        rows.append(q(base + [cmd, "gpu__time_duration.sum", "usecond", tv] + e))
        rows.append(q(base + [cmd, "sm__inst_executed_pipe_tensor.sum", "inst", tens] + e))
        for m, v in zip(FP32, fp):
            rows.append(q(base + [cmd, m, "inst", v] + e))
        rows.append(q(base + ["GPU Speed Of Light Throughput", "", "", "", "SOLBottleneck", "OPT",
                              "Memory is more heavily utilized than Compute: Look at the Memory "
                              "Workload Analysis section to identify the DRAM bottleneck.",
                              "global", "37.29"]))
    write("v2023_speedup_processes.csv", rows)


# The raw page (--page raw) with its row of units, printed with --print-units base (nsecond,
# byte, cycle/second instead of usecond, Mbyte, Ghz): 2021.2+ columns.
RAW_H = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
         "Block Size", "Grid Size", "Device", "CC"]
RAW_M = ["dram__bytes.sum", "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second"] + FP32


def raw_base_units():
    rows = [q(RAW_H + RAW_M), q([""] * len(RAW_H) + ["byte", "nsecond", "cycle/second", "inst",
                                                     "inst", "inst"])]
    kern = [("0", "ampere_sgemm_64x32_sliced1x4_tn",
             ["8,388,608", "15,360", "1,410,000,000", "1,000,000", "0", "2,000,000"]),
            ("1", "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, "
                  "unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float, unsigned int>)",
             ["4,096", "2,048", "1,410,000,000", "0", "3", "0"])]
    for kid, name, vals in kern:
        rows.append(q([kid, "9001", "python3", "127.0.0.1", name, "1", "7", "(256, 1, 1)",
                       "(80, 1, 1)", "0", "8.0"] + vals))
    write("raw_base_units.csv", rows)


# The raw page without its row of units: read in ncu's base units. 2019.x columns.
def raw_no_units():
    h = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
         "Stream"]
    rows = [q(h + RAW_M[:2] + FP32)]
    rows.append(q(["0", "812", "a.out", "127.0.0.1", "saxpy(int, float, float*, float*)",
                   "2019-Nov-02 09:12:44", "1", "7", "65,536", "4,096", "10", "20", "30"]))
    rows.append(q(["1", "812", "a.out", "127.0.0.1", "zero(float*)", "2019-Nov-02 09:12:44", "1",
                   "7", "0", "1,024", "0", "0", "0"]))
    write("raw_no_units.csv", rows)


# A future version: columns no version so far writes (in the middle and at the end) are read
# around and named in the notes.
def future_columns():
    h = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Signature",
         "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name",
         "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type",
         "Rule Description", "Estimated Speedup Type", "Estimated Speedup", "Green Context"]
    rows = [q(h)]
    base = ["0", "66", "bench", "127.0.0.1", "scale_kernel", "scale_kernel(float*, int)", "1", "7",
            "(256, 1, 1)", "(4, 1, 1)", "0", "12.0", "Command line profiler metrics"]
    e = ["", "", "", "", "", "0"]
    rows.append(q(base + ["dram__bytes.sum", "byte", "1,024"] + e))
    rows.append(q(base + ["gpu__time_duration.sum", "nsecond", "512"] + e))
    for m in FP32:
        rows.append(q(base + [m, "inst", "1"] + e))
    write("future_columns.csv", rows)


if __name__ == "__main__":
    os.makedirs(HERE, exist_ok=True)
    v2019()
    v2021_rules()
    v2022_nvtx()
    v2023_speedup()
    raw_base_units()
    raw_no_units()
    future_columns()
