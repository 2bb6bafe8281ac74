#!/usr/bin/env python3
"""flopmeter plan against published large-scale training runs.

Each row is a configuration whose paper reports the parallel plan and the throughput it
achieved. flopmeter predicts the step time from the plan alone, with ONE set of efficiency
fractions for every row (plan's defaults: 75% of the tensor peak, 72% of memory and link
bandwidth; --ppp-* here changes them for all rows at once);
the predicted per-GPU throughput is then computed in the source's own FLOP convention and
compared with the reported figure.

  python3 bench/plan_accuracy.py [--flopmeter build/flopmeter] [--markdown]

Sources:
  N21: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", table 1 (A100 80GB, Selene: DGX A100, 8 HDR InfiniBand per node).
       FLOPs per step 96 B s l h^2 (1 + s/6h + V/16lh) (full recomputation counted).
       Runs: full recomputation, attention unfused (2021), no distributed optimizer. The
       micro-batch, the schedule and the data-parallel wrapper of each row are those of the
       authors' own script for the table (examples/sc21/run_table_1.sh in NVIDIA/Megatron-LM):
       micro-batch 16 to 1, the interleaved schedule where it sets
       --num-layers-per-virtual-pipeline-stage (76B, 145B, 310B, 530B: v = 3, 2, 2, 3),
       PyTorch's DistributedDataParallel (gradients all-reduced in buckets during the
       backward) for the rows without pipeline parallelism, Megatron's own ("local": after
       the pipeline flush) for the others.
  K22: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
       tables 3 and 5 (MFU): 72 B s l h^2 (1 + s/6h + V/12lh) model FLOPs per step, selective
       recomputation with sequence parallelism, data-parallel size 1, micro-batch 1.
  S22: Smith et al. 2022, "Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B",
       section 2.4: global batch 1920 on 280, 350 and 420 DGX A100 servers (TP 8, PP 35, DP 8,
       10, 12): 60.1, 50.2 and 44.4 s an iteration, 126, 121 and 113 TFLOP/s per GPU (their
       figures match Narayanan et al.'s FLOP formula, recomputation counted). DeepSpeed's
       pipeline engine with ZeRO-1, activation checkpointing, gradients reduced after the
       pipeline flush; micro-batch 1 assumed.
  L3:  Dubey et al. 2024, "The Llama 3 Herd of Models", table 4: Llama 3 405B on 8,192 and
       16,384 H100s (TP 8, PP 16, CP 1 or 16), BF16 MFU. Not in the headline: the paper does not
       give the interleaving depth v of its modified schedule, which moves the bubble by 2-3x,
       so the rows are shown at v = 1 and at the deepest v the 128 stage slots allow (8), with
       FSDP-style sharding of gradients and optimizer states (ZeRO-2), sequence parallelism,
       no recomputation, the embedding and head each in a layer's slot (--balance-embedding).
  DSV3: DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", sections 3.1-3.2 and table 1: 2.664M
       H800 GPU-hours of pre-training for 14.8T tokens (180K a trillion; 1,543 tokens/s a GPU)
       on 2,048 H800s, pp 16, ep 64 over 8 nodes, ZeRO-1, no tp, sequence 4,096, batch 15,360
       (after a ramp from 3,072), planned on the h800 device and the hgx-h800 cluster (the
       report's 160 GB/s NVLink and 50 GB/s IB per GPU). Not in the headline: the report
       trains the matmuls in FP8 with its DualPipe schedule, which hides the all-to-all, and
       recomputes only the norms and MLA's up-projections, with activations cached in FP8;
       the plan models bf16 or fp8 1F1B with the all-to-all exposed, no multi-token
       prediction module, selective (does not fit its memory model) or full recomputation.
       All four are printed, none tuned.
  ZeRO: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
       Models", table 1: per-GPU model-state memory of a 7.5B model (K = 12, fp16 gradients)
       at data-parallel size 64, for ZeRO stages 0-3 (here the 7.47B megatron-gpt-7.5b).
"""
import argparse
import json
import statistics
import subprocess
import sys

A100_PEAK = 312e12
S, V = 2048, 51200

# (model, hidden, layers, gpus, tp, pp, global batch, reported TFLOP/s per GPU, micro-batch,
#  interleaving depth v, data-parallel gradients overlapped with the backward)
N21 = [
    ("megatron-gpt-1.7b", 2304, 24, 32, 1, 1, 512, 137, 16, 1, True),
    ("megatron-gpt-3.6b", 3072, 30, 64, 2, 1, 512, 138, 16, 1, True),
    ("megatron-gpt-7.5b", 4096, 36, 128, 4, 1, 512, 142, 16, 1, True),
    ("megatron-gpt-18b", 6144, 40, 256, 8, 1, 1024, 135, 8, 1, True),
    ("megatron-gpt-39b", 8192, 48, 512, 8, 2, 1536, 138, 4, 1, False),
    ("megatron-gpt-76b", 10240, 60, 1024, 8, 4, 1792, 140, 2, 3, False),
    ("megatron-gpt-145b", 12288, 80, 1536, 8, 8, 2304, 148, 2, 2, False),
    ("megatron-gpt-310b", 16384, 96, 1920, 8, 16, 2160, 155, 1, 2, False),
    ("megatron-gpt-530b", 20480, 105, 2520, 8, 35, 2520, 163, 1, 3, False),
    ("megatron-gpt-1t", 25600, 128, 3072, 8, 64, 3072, 163, 1, 1, False),
]
# (model, hidden, layers, gpus, tp, pp, global batch, reported MFU)
# (model, gpus, dp, reported TFLOP/s per GPU)
S22 = [
    ("megatron-gpt-530b", 2240, 126),
    ("megatron-gpt-530b", 2800, 121),
    ("megatron-gpt-530b", 3360, 113),
]
K22 = [
    ("megatron-gpt-22b", 6144, 48, 8, 8, 1, 4, 0.415),
    ("megatron-gpt-175b", 12288, 96, 64, 8, 8, 64, 0.514),
    ("megatron-gpt-530b", 20480, 105, 280, 8, 35, 280, 0.560),
    ("megatron-gpt-1t", 25600, 128, 512, 8, 64, 512, 0.563),
]


def plan(fm, model, gpus, tp, pp, gb, extra, ppp):
    cmd = [fm, "plan", model, "--gpus", str(gpus), "--device", "a100", "--cluster", "dgx-a100",
           "--tp", str(tp), "--pp", str(pp), "--global-batch", str(gb), "--seq", str(S),
           "--no-flash-attention", "--format", "json"] + extra + ppp
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("flopmeter failed: %s\n%s" % (" ".join(cmd), out.stderr))
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flopmeter", default="build/flopmeter")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--ppp-compute")
    ap.add_argument("--ppp-memory")
    ap.add_argument("--ppp-comm")
    a = ap.parse_args()
    ppp = []
    for k in ("compute", "memory", "comm"):
        v = getattr(a, "ppp_" + k)
        if v:
            ppp += ["--ppp-" + k, v]
    rows = []
    for model, h, l, gpus, tp, pp, gb, tf, mbs, v, overlap in N21:
        j = plan(a.flopmeter, model, gpus, tp, pp, gb,
                 ["--recompute", "full", "--zero", "0", "--micro-batch", str(mbs),
                  "--interleave", str(v)] + ([] if overlap else ["--no-overlap"]), ppp)
        flops = 96 * gb * S * l * h * h * (1 + S / (6 * h) + V / (16 * l * h))
        pred = flops / (j["step_s"] * gpus) / 1e12
        rows.append(("N21", model, gpus, tp, pp, gb, tf, pred, j, mbs, v))
    for model, gpus, tf in S22:
        h, l, gb = 20480, 105, 1920
        j = plan(a.flopmeter, model, gpus, 8, 35, gb,
                 ["--recompute", "full", "--zero", "1", "--no-overlap"], ppp)
        flops = 96 * gb * S * l * h * h * (1 + S / (6 * h) + V / (16 * l * h))
        pred = flops / (j["step_s"] * gpus) / 1e12
        rows.append(("S22", model, gpus, 8, 35, gb, tf, pred, j, 1, 1))
    for model, h, l, gpus, tp, pp, gb, mfu in K22:
        j = plan(a.flopmeter, model, gpus, tp, pp, gb,
                 ["--recompute", "selective", "--sequence-parallel", "--zero", "0"], ppp)
        flops = 72 * gb * S * l * h * h * (1 + S / (6 * h) + V / (12 * l * h))
        pred = flops / (j["step_s"] * gpus) / 1e12
        rows.append(("K22", model, gpus, tp, pp, gb, mfu * A100_PEAK / 1e12, pred, j, 1, 1))
    errs = []
    if a.markdown:
        print("| source | model | GPUs | TP | PP | batch | micro-batch | v | reported TFLOP/s/GPU | "
              "predicted | error | predicted memory/GPU |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for src, model, gpus, tp, pp, gb, rep, pred, j, mbs, v in rows:
        err = (pred - rep) / rep
        errs.append(abs(err))
        if a.markdown:
            print("| %s | %s | %d | %d | %d | %d | %d | %d | %.0f | %.0f | %+.1f%% | %.1f GB |" % (
                src, model, gpus, tp, pp, gb, mbs, v, rep, pred, 100 * err,
                j["memory_per_gpu_bytes"] / 1e9))
        else:
            print("%-4s %-20s %5d tp%d pp%-3d gb%-5d mb%-2d v%d reported %6.1f predicted %6.1f"
                  "  %+6.1f%%  mem %.1f GB" % (src, model, gpus, tp, pp, gb, mbs, v, rep, pred,
                                               100 * err, j["memory_per_gpu_bytes"] / 1e9))
    print("\n%d rows: median |error| %.1f%%, largest %.1f%%" % (
        len(errs), 100 * statistics.median(errs), 100 * max(errs)))
    for src in ("N21", "S22", "K22"):
        e = [abs(r[7] - r[6]) / r[6] for r in rows if r[0] == src]
        print("  %s: %d rows, median |error| %.1f%%, largest %.1f%%" % (
            src, len(e), 100 * statistics.median(e), 100 * max(e)))

    print("\nLlama 3 405B (Dubey et al. 2024, table 4), BF16 MFU:")
    l3 = [(8192, 1, 2048, 8192, 0.43), (16384, 1, 2048, 8192, 0.41),
          (16384, 16, 128, 131072, 0.38)]
    for gpus, cp, gb, seq, mfu in l3:
        preds = []
        for v in (1, 8):
            cmd = [a.flopmeter, "plan", "llama-3.1-405b", "--gpus", str(gpus), "--device", "h100",
                   "--tp", "8", "--pp", "16", "--cp", str(cp), "--global-batch", str(gb),
                   "--seq", str(seq), "--zero", "2", "--sequence-parallel",
                   "--balance-embedding", "--interleave", str(v), "--format", "json"] + ppp
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode:
                sys.exit("flopmeter failed: %s\n%s" % (" ".join(cmd), out.stderr))
            j = json.loads(out.stdout)
            preds.append((j["mfu"], j["memory_per_gpu_bytes"], j["fits"]))
        print("  %5d GPUs cp %-2d seq %6d: reported %.0f%%; predicted %.1f%% at v=1 (%+.0f%%, "
              "%.1f GB), %.1f%% at v=8 (%+.0f%%, %.1f GB)" % (
                  gpus, cp, seq, 100 * mfu, 100 * preds[0][0], 100 * (preds[0][0] / mfu - 1),
                  preds[0][1] / 1e9, 100 * preds[1][0], 100 * (preds[1][0] / mfu - 1),
                  preds[1][1] / 1e9))

    print("\nDeepSeek-V3 pre-training (DeepSeek-AI 2024): 2.664M H800 GPU-hours for 14.8T "
          "tokens, 2,048 GPUs, pp 16, ep 64, ZeRO-1 (H800s on hgx-h800):")
    for prec in ("bf16", "fp8"):
        for rc in ("selective", "full"):
            cmd = [a.flopmeter, "plan", "deepseek-v3", "--gpus", "2048", "--device", "h800",
                   "--cluster", "hgx-h800", "--tp", "1", "--pp", "16", "--ep", "64",
                   "--zero", "1", "--global-batch", "15360", "--seq", "4096", "--recompute", rc,
                   "--precision", prec, "--tokens", "14.8T", "--format", "json"] + ppp
            j = json.loads(subprocess.run(cmd, capture_output=True, text=True,
                                          check=True).stdout)
            hours = j["gpu_hours"]
            print("  %-4s recompute %-9s: predicted %.2fM GPU-hours (%+.0f%%), %.0f tokens/s a "
                  "GPU (reported 1543), %.1f GB a GPU%s" % (
                      prec, rc, hours / 1e6, 100 * (hours / 2.664e6 - 1),
                      j["tokens_per_s"] / 2048, j["memory_per_gpu_bytes"] / 1e9,
                      "" if j["fits"] else " (does not fit 80 GB)"))

    print("\nZeRO (Rajbhandari et al. 2020, table 1): 7.5B model, 64 GPUs, model states per GPU")
    for zero, paper in ((0, 120.0), (1, 31.4), (2, 16.6), (3, 1.88)):
        cmd = [a.flopmeter, "plan", "megatron-gpt-7.5b", "--gpus", "64", "--device", "a100",
               "--global-batch", "64", "--bf16-grads", "--zero", str(zero), "--format", "json"]
        j = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        m = j["memory"]
        states = (m["weights_bytes"] + m["gradients_bytes"] + m["optimizer_bytes"]) / 1e9
        print("  ZeRO-%d: paper %.2f GB, flopmeter %.2f GB (%+.1f%%; %.3fB parameters)" % (
            zero, paper, states, 100 * (states / paper - 1), j["params_per_gpu"] / 1e9))


if __name__ == "__main__":
    main()
