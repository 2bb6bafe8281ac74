"""flopmeter.count of a GPT-2-small-sized module (12 layers, 768 wide, 12 heads, 50257-word
vocabulary, built from its config: no weights downloaded) at sequence 1024, capture included,
against PyTorch's FlopCounterMode running one forward + backward of it on the CPU, in one run.

    python bench/python_count.py [--seq 1024] [--batch 1] [--repeat 3]

Prints each figure's median over --repeat runs, wall and CPU time (the first run of each is a
warm-up: it imports and compiles what later runs reuse; its time is printed too), the parts of
flopmeter.count (the capture: torch.export, the fast path's rewrite, the ONNX translation and
opset conversion; serializing; the library's load and count and render), the same count through
PyTorch's exporter's full path (torch.onnx.export, FLOPMETER_CAPTURE=exporter) for comparison,
and the ratio to FlopCounterMode. Run it with the library on the path (make python-test's
FLOPMETER_LIB, or the installed package)."""
import argparse
import os
import statistics
import time

import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import GPT2Config, GPT2LMHeadModel

import flopmeter


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=a.seq,
                     bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg)
    model.train()
    x = torch.randint(0, cfg.vocab_size, (a.batch, a.seq))

    def fm_once():
        t, c = time.perf_counter(), time.process_time()
        r = flopmeter.count(model, x)
        cpu.setdefault("fm", []).append(time.process_time() - c)
        return time.perf_counter() - t, r

    def exporter_once():
        os.environ["FLOPMETER_CAPTURE"] = "exporter"
        try:
            t = time.perf_counter()
            r = flopmeter.count(model, x)
            return time.perf_counter() - t, r
        finally:
            del os.environ["FLOPMETER_CAPTURE"]

    def fcm_once():
        t, c = time.perf_counter(), time.process_time()
        counter = FlopCounterMode(display=False)
        with counter:
            model(x).logits.sum().backward()
        model.zero_grad(set_to_none=True)
        cpu.setdefault("fcm", []).append(time.process_time() - c)
        return time.perf_counter() - t, counter.get_total_flops()

    cpu = {}

    first_t, _ = fm_once()
    fcm_once()
    exporter_once()
    cpu.clear()
    fm_t, fcm_t, ex_t, parts = [], [], [], []
    for _ in range(a.repeat):
        t, r = fm_once()
        fm_t.append(t)
        parts.append(r.capture)
        t, fl = fcm_once()
        fcm_t.append(t)
        t, rex = exporter_once()
        ex_t.append(t)
    assert rex.to_dict() == r.to_dict(), "the two capture paths counted differently"
    fm_s, fcm_s = statistics.median(fm_t), statistics.median(fcm_t)
    export_s = statistics.median(p["export_s"] for p in parts)
    ser_s = statistics.median(p["serialize_s"] for p in parts)
    print("GPT-2 small (%d params), batch %d, sequence %d, %d threads"
          % (sum(p.numel() for p in model.parameters()), a.batch, a.seq, torch.get_num_threads()))
    med = {k: statistics.median(p.get(k, 0.0) for p in parts)
           for k in ("torch_export_s", "rewrite_s", "translate_s", "opset_s")}
    print("flopmeter.count        %.2f s  (capture, %s path, %.2f s: torch.export %.2f s, "
          "rewrite %.2f s, ONNX translation %.2f s, opset %.2f s; serialize %.3f s, library "
          "%.3f s; ONNX %.1f MB)"
          % (fm_s, parts[-1]["path"], export_s, med["torch_export_s"], med["rewrite_s"],
             med["translate_s"], med["opset_s"], ser_s, fm_s - export_s - ser_s,
             parts[-1]["onnx_bytes"] / 1e6))
    print("flopmeter.count through torch.onnx.export (the exporter's full path): %.2f s, "
          "the same report" % statistics.median(ex_t))
    print("FlopCounterMode fwd+bwd %.2f s" % fcm_s)
    print("ratio flopmeter / FlopCounterMode: %.2f (wall), %.2f (CPU time: flopmeter %.2f s, "
          "FlopCounterMode %.2f s)" % (fm_s / fcm_s, statistics.median(cpu["fm"]) /
                                       statistics.median(cpu["fcm"]), statistics.median(cpu["fm"]),
                                       statistics.median(cpu["fcm"])))
    print("first flopmeter.count in the process (imports, dynamo's first trace): %.2f s" % first_t)
    print("FLOPs: flopmeter model %d (matmul+attention MACs x2: %d), hardware %d; "
          "FlopCounterMode %d"
          % (r.model_flops, 2 * sum(r["by_class"][c][p]["macs"] for c in ("matmul", "attention")
                                    if c in r["by_class"]
                                    for p in ("fwd", "bwd_data", "bwd_weight")),
             r.hardware_flops, fl))


if __name__ == "__main__":
    main()
