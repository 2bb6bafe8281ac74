/* The built-in device table: dense datasheet figures (no 2:4 sparsity) of common accelerators,
 * each row with the vendor document it was taken from (docs/devices.md lists every document
 * with its URL). Figures the documents do not confirm carry FM_DEVF_* / per-precision
 * unverified bits (printed with a '?'); unknown is 0.
 * It holds no CPUs: a CPU's ceilings come from `flopmeter probe --save`, not a datasheet. */
#include "hw.h"

#include <string.h>

/* Units: TFLOP/s (or TOPS for int8), GB/s, GB, MB, all decimal as the datasheets print them.
 * The exponent is pasted onto the literal (66.9 -> 66.9e12) so that every figure is the double
 * nearest the printed decimal, exactly as a test or a device file writes it. */
#define TF(x) x##e12
#define GBS(x) x##e9
#define GB(x) x##e9
#define MB(x) x##e6
#define P(prec) (1u << (prec))

/* Precision order inside the brace lists: fp64, fp32, tf32, fp16, bf16, fp8, int8. */
#define PEAKS(fp64, fp32, tf32, fp16, bf16, fp8, int8)                                           \
    { TF(fp64), TF(fp32), TF(tf32), TF(fp16), TF(bf16), TF(fp8), TF(int8) }

/* Interconnect per GPU, bidirectional: NVLink per generation as NVIDIA's NVLink page gives it
 * (2: 300, 3: 600, 4: 900, 5: 1800 GB/s), PCIe x16 as the PCI-SIG rates (docs/devices.md). */
#define LINK(label, gbs) .interconnect = label, .interconnect_bw = GBS(gbs)
#define NVLINK2 LINK("NVLink2", 300)
#define NVLINK3 LINK("NVLink3", 600)
#define NVLINK4 LINK("NVLink4", 900)
#define NVLINK5 LINK("NVLink5", 1800)
#define PCIE3 LINK("PCIe Gen3 x16", 32)
#define PCIE4 LINK("PCIe Gen4 x16", 64)
#define PCIE5 LINK("PCIe Gen5 x16", 128)

static const struct fm_device builtin[] = {
    /* ---- Kepler ---- */
    {.name = "K80", .aliases = "k80,k80-board", .kind = "gpu",
     .arch = "Kepler GK210 x2",
     .peak_vector = PEAKS(2.91, 8.73, 0, 0, 0, 0, 0), .peak_tensor = PEAKS(0, 0, 0, 0, 0, 0, 0),
     .mem_bw = GBS(480), .mem_bytes = GB(24), .l2_bytes = MB(3), .boost_mhz = 875, .units = 26,
     .tdp_w = 300, PCIE3,
     .source = "NVIDIA Tesla K80 datasheet and board specification (\"Tesla K80 GPU "
               "Accelerator\", BD-07317-001, NVIDIA): the whole board (two GK210 dies, 2 x 13 "
               "SMX, 2 x 1.5 MB L2); software sees two devices, each half of these (k80-die). The "
               "board's 8.73 / 2.91 TFLOP/s (fp32 / fp64 with GPU Boost) are what PALEO-style "
               "percent-of-peak estimates for the K80 divide by",
     .unverified = FM_DEVF_L2},
    /* nvidia-smi and PyTorch name each die "Tesla K80": its alias matches that name best */
    {.name = "K80 (one die)", .aliases = "k80-die,gk210,tesla-k80", .kind = "gpu",
     .arch = "Kepler GK210",
     .peak_vector = PEAKS(1.46, 4.37, 0, 0, 0, 0, 0), .mem_bw = GBS(240), .mem_bytes = GB(12),
     .l2_bytes = MB(1.5), .boost_mhz = 875, .units = 13, .tdp_w = 150, PCIE3,
     .source = "NVIDIA Tesla K80 datasheet (\"Tesla K80 GPU Accelerator\", NVIDIA) halved: "
               "one of the board's two GK210 devices",
     .unverified = FM_DEVF_L2 | FM_DEVF_TDP},
    /* ---- Pascal ---- */
    {.name = "P100 SXM2", .aliases = "p100,p100-sxm2,tesla-p100", .kind = "gpu",
     .arch = "Pascal GP100", .peak_vector = PEAKS(5.3, 10.6, 0, 21.2, 0, 0, 0),
     .mem_bw = GBS(732), .mem_bytes = GB(16), .l2_bytes = MB(4), .boost_mhz = 1480, .units = 56,
     .tdp_w = 300, .interconnect = "NVLink1", .interconnect_bw = GBS(160),
     .source = "NVIDIA Tesla P100 datasheet (\"NVIDIA Tesla P100 GPU Accelerator\", NVIDIA, "
               "NVLink/SXM2 column); no tensor cores: fp16 runs on the vector units at twice the "
               "fp32 rate. NVLink1's 160 GB/s (NVIDIA's Pascal whitepaper) is marked unverified",
     .unverified = FM_DEVF_INTERCONNECT},
    {.name = "P100 PCIe 16GB", .aliases = "p100-pcie", .kind = "gpu", .arch = "Pascal GP100",
     .peak_vector = PEAKS(4.7, 9.3, 0, 18.7, 0, 0, 0), .mem_bw = GBS(732), .mem_bytes = GB(16),
     .l2_bytes = MB(4), .boost_mhz = 1303, .units = 56, .tdp_w = 250, PCIE3,
     .source = "NVIDIA Tesla P100 datasheet (\"NVIDIA Tesla P100 GPU Accelerator\", NVIDIA, "
               "PCIe 16 GB column); fp16 on the vector units"},
    /* ---- Volta ---- */
    {.name = "V100 SXM2 32GB", .aliases = "v100,v100-sxm2,tesla-v100", .kind = "gpu",
     .arch = "Volta GV100", .peak_vector = PEAKS(7.8, 15.7, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(0, 0, 0, 125, 0, 0, 0), .mem_bw = GBS(900), .mem_bytes = GB(32),
     .l2_bytes = MB(6), .boost_mhz = 1530, .units = 80, .tdp_w = 300, NVLINK2,
     .source = "NVIDIA V100 datasheet (\"NVIDIA Tesla V100 GPU Accelerator\", NVIDIA, SXM2 "
               "column); tensor cores run fp16 only (125 TFLOP/s, the V100 peak of Verma's "
               "ImageNet roofline study, NYU 2022)"},
    {.name = "V100 PCIe", .aliases = "v100-pcie", .kind = "gpu", .arch = "Volta GV100",
     .peak_vector = PEAKS(7.0, 14.0, 0, 0, 0, 0, 0), .peak_tensor = PEAKS(0, 0, 0, 112, 0, 0, 0),
     .mem_bw = GBS(900), .mem_bytes = GB(32), .l2_bytes = MB(6), .boost_mhz = 1380, .units = 80,
     .tdp_w = 250, PCIE3,
     .source = "NVIDIA V100 datasheet (\"NVIDIA Tesla V100 GPU Accelerator\", NVIDIA, PCIe "
               "column); sold with 16 or 32 GB, 32 GB listed"},
    /* ---- Turing ---- */
    {.name = "T4", .aliases = "t4,tesla-t4", .kind = "gpu", .arch = "Turing TU104",
     .peak_vector = PEAKS(0.25, 8.1, 0, 0, 0, 0, 0), .peak_tensor = PEAKS(0, 0, 0, 65, 0, 0, 130),
     .mem_bw = GBS(320), .mem_bytes = GB(16), .l2_bytes = MB(4), .boost_mhz = 1590, .units = 40,
     .tdp_w = 70, PCIE3,
     .source = "NVIDIA T4 datasheet (\"NVIDIA T4 Tensor Core GPU\", NVIDIA): fp32, fp16 "
               "mixed-precision and int8 peaks, memory, bandwidth, power"},
    {.name = "RTX 2080 Ti", .aliases = "2080ti,rtx2080ti", .kind = "gpu", .arch = "Turing TU102",
     .peak_vector = PEAKS(0.42, 13.4, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(0, 0, 0, 53.8, 0, 0, 215), .mem_bw = GBS(616), .mem_bytes = GB(11),
     .l2_bytes = MB(5.5), .boost_mhz = 1545, .units = 68, .tdp_w = 250, PCIE3,
     .source = "NVIDIA Turing architecture whitepaper (\"NVIDIA Turing GPU Architecture\", "
               "WP-09183-001, NVIDIA; GeForce: fp16 tensor math with fp32 accumulate at half the "
               "headline rate)",
     .unverified = FM_DEVF_PEAK, .unverified_tensor = P(FM_PREC_FP16) | P(FM_PREC_INT8)},
    /* ---- Ampere ---- */
    {.name = "RTX 3090", .aliases = "3090,rtx3090", .kind = "gpu", .arch = "Ampere GA102",
     .peak_vector = PEAKS(0.56, 35.6, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(0, 0, 35.6, 71, 71, 0, 284), .mem_bw = GBS(936), .mem_bytes = GB(24),
     .l2_bytes = MB(6), .boost_mhz = 1695, .units = 82, .tdp_w = 350, PCIE4,
     .source = "NVIDIA Ampere GA102 whitepaper (\"NVIDIA Ampere GA102 GPU Architecture\", "
               "NVIDIA; GeForce: fp32-accumulate tensor rate)"},
    {.name = "A100 SXM 40GB", .aliases = "a100-40gb,a100-sxm-40gb", .kind = "gpu",
     .arch = "Ampere GA100", .peak_vector = PEAKS(9.7, 19.5, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(19.5, 0, 156, 312, 312, 0, 624), .mem_bw = GBS(1555),
     .mem_bytes = GB(40), .l2_bytes = MB(40), .boost_mhz = 1410, .units = 108, .tdp_w = 400,
     NVLINK3,
     .source = "NVIDIA A100 datasheet (\"NVIDIA A100 Tensor Core GPU\", NVIDIA, SXM4 40 GB "
               "column; 312 TFLOP/s and 1555 GB/s are the A100 figures of Verma's ImageNet "
               "roofline study, NYU 2022)"},
    {.name = "A100 SXM 80GB", .aliases = "a100,a100-sxm,a100-80gb,a100-sxm-80gb", .kind = "gpu",
     .arch = "Ampere GA100", .peak_vector = PEAKS(9.7, 19.5, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(19.5, 0, 156, 312, 312, 0, 624), .mem_bw = GBS(2039),
     .mem_bytes = GB(80), .l2_bytes = MB(40), .boost_mhz = 1410, .units = 108, .tdp_w = 400,
     NVLINK3,
     .source = "NVIDIA A100 datasheet (\"NVIDIA A100 Tensor Core GPU\", NVIDIA, SXM4 80 GB "
               "column)"},
    {.name = "A100 PCIe 80GB", .aliases = "a100-pcie,a100-pcie-80gb", .kind = "gpu",
     .arch = "Ampere GA100", .peak_vector = PEAKS(9.7, 19.5, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(19.5, 0, 156, 312, 312, 0, 624), .mem_bw = GBS(1935),
     .mem_bytes = GB(80), .l2_bytes = MB(40), .boost_mhz = 1410, .units = 108, .tdp_w = 300,
     PCIE4,
     .source = "NVIDIA A100 datasheet (\"NVIDIA A100 Tensor Core GPU\", NVIDIA, PCIe 80 GB "
               "column)",
     .unverified = FM_DEVF_BANDWIDTH | FM_DEVF_TDP},
    {.name = "A10", .aliases = "a10", .kind = "gpu", .arch = "Ampere GA102",
     .peak_vector = PEAKS(0.49, 31.2, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(0, 0, 62.5, 125, 125, 0, 250), .mem_bw = GBS(600), .mem_bytes = GB(24),
     .l2_bytes = MB(6), .boost_mhz = 1695, .units = 72, .tdp_w = 150, PCIE4,
     .source = "NVIDIA A10 datasheet (\"NVIDIA A10 Tensor Core GPU\", NVIDIA)",
     .unverified = FM_DEVF_PEAK,
     .unverified_vector = P(FM_PREC_FP64)},
    {.name = "A30", .aliases = "a30", .kind = "gpu", .arch = "Ampere GA100",
     .peak_vector = PEAKS(5.2, 10.3, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(10.3, 0, 82, 165, 165, 0, 330), .mem_bw = GBS(933), .mem_bytes = GB(24),
     .l2_bytes = MB(24), .boost_mhz = 1440, .units = 56, .tdp_w = 165, PCIE4,
     .source = "NVIDIA A30 datasheet (\"NVIDIA A30 Tensor Core GPU\", NVIDIA)",
     .unverified = FM_DEVF_PEAK,
     .unverified_tensor = P(FM_PREC_TF32) | P(FM_PREC_FP16) | P(FM_PREC_BF16) | P(FM_PREC_INT8)},
    /* ---- Ada ---- */
    {.name = "L4", .aliases = "l4", .kind = "gpu", .arch = "Ada AD104",
     .peak_vector = PEAKS(0.47, 30.3, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(0, 0, 60, 121, 121, 242.5, 242.5), .mem_bw = GBS(300),
     .mem_bytes = GB(24), .l2_bytes = MB(48), .boost_mhz = 2040, .units = 58, .tdp_w = 72,
     PCIE4,
     .source = "NVIDIA L4 datasheet (\"NVIDIA L4 Tensor Core GPU\", NVIDIA; dense halves of "
               "the sparse figures)"},
    {.name = "L40S", .aliases = "l40s", .kind = "gpu", .arch = "Ada AD102",
     .peak_vector = PEAKS(1.43, 91.6, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(0, 0, 183, 362, 362, 733, 733), .mem_bw = GBS(864), .mem_bytes = GB(48),
     .l2_bytes = MB(96), .boost_mhz = 2520, .units = 142, .tdp_w = 350, PCIE4,
     .source = "NVIDIA L40S datasheet (\"NVIDIA L40S GPU\", NVIDIA; dense)",
     .unverified = FM_DEVF_L2},
    {.name = "RTX 4090", .aliases = "4090,rtx4090", .kind = "gpu", .arch = "Ada AD102",
     .peak_vector = PEAKS(1.29, 82.6, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(0, 0, 82.6, 165.2, 165.2, 330.3, 660.6), .mem_bw = GBS(1008),
     .mem_bytes = GB(24), .l2_bytes = MB(72), .boost_mhz = 2520, .units = 128, .tdp_w = 450,
     PCIE4,
     .source = "NVIDIA Ada Lovelace whitepaper (\"NVIDIA Ada GPU Architecture\", NVIDIA; "
               "GeForce: fp32-accumulate tensor rate)"},
    /* ---- Hopper ---- */
    {.name = "H100 SXM5 80GB", .aliases = "h100,h100-sxm,h100-sxm5", .kind = "gpu",
     .arch = "Hopper GH100", .peak_vector = PEAKS(33.5, 66.9, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(66.9, 0, 494.7, 989.4, 989.4, 1978.9, 1978.9), .mem_bw = GBS(3350),
     .mem_bytes = GB(80), .l2_bytes = MB(50), .boost_mhz = 1980, .units = 132, .tdp_w = 700,
     NVLINK4,
     .source = "NVIDIA H100 datasheet (\"NVIDIA H100 Tensor Core GPU\", NVIDIA, SXM5 column, "
               "dense: half the printed sparse figures), to the decimals of NVIDIA's \"H100 "
               "Tensor Core GPU Architecture\" whitepaper; fp32 = 132 SMs x 128 lanes x 2 x 1.98 "
               "GHz. Tensor figures are quoted at 1830 MHz; a tuned bf16 GEMM reaches about "
               "780-800 TFLOP/s"},
    {.name = "H100 PCIe 80GB", .aliases = "h100-pcie", .kind = "gpu", .arch = "Hopper GH100",
     .peak_vector = PEAKS(25.6, 51.2, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(51.2, 0, 378, 756, 756, 1513, 1513), .mem_bw = GBS(2000),
     .mem_bytes = GB(80), .l2_bytes = MB(50), .boost_mhz = 1755, .units = 114, .tdp_w = 350,
     PCIE5,
     .source = "NVIDIA H100 datasheet (\"NVIDIA H100 Tensor Core GPU\", NVIDIA, PCIe column, "
               "dense) and the \"H100 Tensor Core GPU Architecture\" whitepaper"},
    {.name = "H100 NVL 94GB", .aliases = "h100-nvl", .kind = "gpu", .arch = "Hopper GH100",
     .peak_vector = PEAKS(30, 60, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(60, 0, 417.5, 835.5, 835.5, 1670.5, 1670.5), .mem_bw = GBS(3900),
     .mem_bytes = GB(94), .l2_bytes = MB(50), .boost_mhz = 0, .units = 132, .tdp_w = 400,
     PCIE5,
     .source = "NVIDIA H100 NVL product brief (\"NVIDIA H100 NVL GPU\", PB-11773-001, NVIDIA) "
               "and the NVL column of the H100 datasheet, per GPU (dense); the NVLink bridge "
               "between the pair is not modelled, PCIe Gen5 is listed",
     .unverified = FM_DEVF_PEAK | FM_DEVF_L2 | FM_DEVF_CLOCK | FM_DEVF_INTERCONNECT,
     .unverified_vector = P(FM_PREC_FP64) | P(FM_PREC_FP32),
     .unverified_tensor = P(FM_PREC_FP64) | P(FM_PREC_TF32) | P(FM_PREC_FP16) | P(FM_PREC_BF16) |
                          P(FM_PREC_FP8) | P(FM_PREC_INT8)},
    {.name = "H200 SXM 141GB", .aliases = "h200,h200-sxm", .kind = "gpu", .arch = "Hopper GH100",
     .peak_vector = PEAKS(34, 67, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(67, 0, 494.7, 989.4, 989.4, 1979, 1979), .mem_bw = GBS(4800),
     .mem_bytes = GB(141), .l2_bytes = MB(50), .boost_mhz = 1980, .units = 132, .tdp_w = 700,
     NVLINK4,
     .source = "NVIDIA H200 datasheet (\"NVIDIA H200 Tensor Core GPU\", NVIDIA, SXM column, "
               "dense)"},
    /* The H100 SXM5 made for export (2023): the same GH100 with 132 SMs, NVLink cut to 400
     * GB/s and fp64 to about 1 TFLOP/s. NVIDIA's H800 datasheet was not at hand: the other
     * figures are the H100 SXM5's, marked unverified (docs/devices.md). */
    {.name = "H800 SXM5 80GB", .aliases = "h800,h800-sxm,h800-sxm5", .kind = "gpu",
     .arch = "Hopper GH100", .peak_vector = PEAKS(1, 66.9, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(1, 0, 494.7, 989.4, 989.4, 1978.9, 1978.9), .mem_bw = GBS(3350),
     .mem_bytes = GB(80), .l2_bytes = MB(50), .boost_mhz = 1980, .units = 132, .tdp_w = 700,
     LINK("NVLink4", 400),
     .source = "NVIDIA H800 Tensor Core GPU datasheet (SXM5, NVIDIA, 2023), not retrieved: "
               "the H100 SXM5's figures (H100 datasheet and whitepaper, dense) for every peak "
               "but fp64, 80 GB HBM3 and its 3.35 TB/s; 132 SMs as DeepSeek-AI 2024 "
               "(DeepSeek-V3 Technical Report, arXiv 2412.19437, section 3.5.1) counts them; "
               "NVLink 400 GB/s bidirectional (not 900) and fp64 about 1 TFLOP/s as published "
               "H800/H100 comparisons give them. Confirmed there: 80 GB, 132 SMs, NVLink 400 GB/s; "
               "not confirmed in NVIDIA's words: the peaks, bandwidth, clock, L2, TDP",
     .unverified = FM_DEVF_PEAK | FM_DEVF_BANDWIDTH | FM_DEVF_L2 | FM_DEVF_CLOCK | FM_DEVF_TDP,
     .unverified_vector = P(FM_PREC_FP64) | P(FM_PREC_FP32),
     .unverified_tensor = P(FM_PREC_FP64) | P(FM_PREC_TF32) | P(FM_PREC_FP16) | P(FM_PREC_BF16) |
                          P(FM_PREC_FP8) | P(FM_PREC_INT8)},
    /* ---- Blackwell ---- */
    {.name = "B200 (HGX)", .aliases = "b200", .kind = "gpu", .arch = "Blackwell",
     .peak_vector = PEAKS(37, 75, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(37, 0, 1100, 2250, 2250, 4500, 4500), .mem_bw = GBS(7700),
     .mem_bytes = GB(180), .l2_bytes = 0, .boost_mhz = 0, .units = 148, .tdp_w = 1000,
     NVLINK5,
     .source = "NVIDIA GB200 NVL72 specifications, HGX B200 column (\"NVIDIA GB200 NVL72\", "
               "NVIDIA), per GPU (dense: half the printed sparse figures)",
     .unverified = FM_DEVF_UNITS | FM_DEVF_CLOCK | FM_DEVF_L2},
    {.name = "GB200 (per GPU)", .aliases = "gb200", .kind = "gpu", .arch = "Blackwell",
     .peak_vector = PEAKS(40, 80, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(40, 0, 1250, 2500, 2500, 5000, 5000), .mem_bw = GBS(8000),
     .mem_bytes = GB(186), .l2_bytes = 0, .boost_mhz = 0, .units = 148, .tdp_w = 1200,
     NVLINK5,
     .source = "NVIDIA GB200 NVL72 specifications (\"NVIDIA GB200 NVL72\", NVIDIA), per GPU "
               "(dense: half the printed sparse figures)",
     .unverified = FM_DEVF_UNITS | FM_DEVF_CLOCK | FM_DEVF_L2},
    /* ---- AMD ---- */
    {.name = "MI250X (module, 2 GCDs)", .aliases = "mi250x", .kind = "gpu", .arch = "CDNA2",
     .peak_vector = PEAKS(47.9, 47.9, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(95.7, 0, 0, 383, 383, 0, 383), .mem_bw = GBS(3277),
     .mem_bytes = GB(128), .l2_bytes = MB(16), .boost_mhz = 1700, .units = 220, .tdp_w = 560,
     .interconnect = "Infinity Fabric", .interconnect_bw = 0,
     .source = "AMD Instinct MI250X datasheet (\"AMD Instinct MI250X Accelerator\", AMD), "
               "whole module (software sees two GCDs, each half); fp32 95.7 TFLOP/s only with "
               "packed math, 47.9 listed; units are CUs; Infinity Fabric bandwidth is left "
               "unknown (0)",
     .unverified = FM_DEVF_INTERCONNECT},
    {.name = "MI300X", .aliases = "mi300x", .kind = "gpu", .arch = "CDNA3",
     .peak_vector = PEAKS(81.7, 81.7, 0, 0, 0, 0, 0),
     .peak_tensor = PEAKS(163.4, 0, 653.7, 1307.4, 1307.4, 2614.9, 2614.9), .mem_bw = GBS(5300),
     .mem_bytes = GB(192), .l2_bytes = MB(32), .boost_mhz = 2100, .units = 304, .tdp_w = 750,
     .interconnect = "Infinity Fabric", .interconnect_bw = 0,
     .source = "AMD Instinct MI300X data sheet (\"AMD Instinct MI300X Accelerator\", AMD; "
               "dense); fp32 163.4 TFLOP/s only packed; L2 32 MB plus 256 MB Infinity Cache; "
               "units are CUs; Infinity Fabric bandwidth is left unknown (0)",
     .unverified = FM_DEVF_INTERCONNECT},
    /* ---- Google TPU (per chip) ---- */
    {.name = "TPU v4", .aliases = "tpuv4,tpu-v4", .kind = "tpu", .arch = "TPU v4",
     .peak_tensor = PEAKS(0, 0, 0, 0, 275, 0, 275), .mem_bw = GBS(1200),
     .mem_bytes = 32.0 * 1024 * 1024 * 1024, .boost_mhz = 1050, .interconnect = "ICI",
     .source = "Google Cloud TPU documentation, \"TPU v4\" (Google), per chip: bf16 and int8 "
               "on the MXUs only (32 GiB HBM); ICI bandwidth is left unknown (0)",
     .unverified = FM_DEVF_INTERCONNECT},
    {.name = "TPU v5e", .aliases = "tpuv5e,tpu-v5e", .kind = "tpu", .arch = "TPU v5e",
     .peak_tensor = PEAKS(0, 0, 0, 0, 197, 0, 393), .mem_bw = GBS(819), .mem_bytes = GB(16),
     .boost_mhz = 1500, .interconnect = "ICI",
     .source = "Google Cloud TPU documentation, \"TPU v5e\" (Google), per chip: bf16 and "
               "int8 on the MXUs only; ICI bandwidth is left unknown (0)",
     .unverified = FM_DEVF_INTERCONNECT},
};

size_t fm_hw_builtin_count(void)
{
    return sizeof(builtin) / sizeof(builtin[0]);
}

const struct fm_device *fm_hw_builtin(size_t i)
{
    return i < fm_hw_builtin_count() ? &builtin[i] : NULL;
}

/* ---- links for data parallelism (NVIDIA's NVLink page, PCI-SIG; docs/devices.md) ---- */

static const struct fm_link links[] = {
    {"nvlink2", GBS(300), "NVLink2 (V100 SXM2), 300 GB/s per GPU bidirectional"},
    {"nvlink3", GBS(600), "NVLink3 (A100 SXM), 600 GB/s per GPU bidirectional"},
    {"nvlink4", GBS(900), "NVLink4 (H100/H200 SXM), 900 GB/s per GPU bidirectional"},
    {"nvlink5", GBS(1800), "NVLink5 (B200/GB200), 1800 GB/s per GPU bidirectional"},
    {"pcie3", GBS(32), "PCIe Gen3 x16, about 32 GB/s bidirectional"},
    {"pcie4", GBS(64), "PCIe Gen4 x16, about 64 GB/s bidirectional"},
    {"pcie5", GBS(128), "PCIe Gen5 x16, about 128 GB/s bidirectional"},
};

size_t fm_link_count(void)
{
    return sizeof(links) / sizeof(links[0]);
}

const struct fm_link *fm_link_get(size_t i)
{
    return i < fm_link_count() ? &links[i] : NULL;
}
