"""Where the capture's time goes, for GPT-2 small (from its config, sequence 1024) and ResNet-50
(batch 8, 224x224), both in training mode: PyTorch's exporter's steps (torch.export as it calls
it, ExportedProgram.run_decompositions with its passes, the ONNX translation, the opset
conversion) and the fast capture's (torch.export without stack recording, the node rewrite and
passes, the same translation and conversion), then serializing with weights as shapes. Medians
of --repeat runs after one warm-up.

    python bench/capture_parts.py [--repeat 3] [gpt2] [resnet50]
"""
import argparse
import statistics
import time
import warnings

import torch

from flopmeter import _capture, _fast


def models(names):
    if "gpt2" in names:
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024,
                         bos_token_id=0, eos_token_id=0)
        yield "GPT-2 small, seq 1024", GPT2LMHeadModel(cfg), \
            (torch.randint(0, 50257, (1, 1024)),), {"use_cache": False}
    if "resnet50" in names:
        import torchvision
        yield "ResNet-50, batch 8", torchvision.models.resnet50(), \
            (torch.randn(8, 3, 224, 224),), {}


def exporter_parts(m, args, kw):
    from torch.onnx import _constants, _flags
    from torch.onnx._internal._lazy_import import onnxscript_apis
    from torch.onnx._internal.exporter import _core, _registration

    reg = _registration.ONNXRegistry.from_torchlib(opset_version=_constants.ONNX_DEFAULT_OPSET)
    t = [time.perf_counter()]
    with torch.fx.experimental._config.patch(backed_size_oblivious=True):
        ep = torch.export.export(m, args, kwargs=kw, strict=False,
                                 prefer_deferred_runtime_asserts_over_guards=(
                                     _flags.PREFER_DEFERRED_RUNTIME_ASSERTS_OVER_GUARDS))
    t.append(time.perf_counter())
    ep = _core._prepare_exported_program_for_export(ep, registry=reg)
    t.append(time.perf_counter())
    prog = _core._exported_program_to_onnx_program(ep, registry=reg)
    t.append(time.perf_counter())
    prog.model = onnxscript_apis.convert_version(prog.model, _constants.ONNX_DEFAULT_OPSET)
    t.append(time.perf_counter())
    _capture._strip_weights(prog.model)
    prog.model_proto.SerializeToString()
    t.append(time.perf_counter())
    return dict(zip(("torch.export", "run_decompositions + passes", "ONNX translation",
                     "opset conversion", "serialize"), [b - a for a, b in zip(t, t[1:])]))


def fast_parts(m, args, kw):
    parts = {}
    prog = _fast.export(m, args, kw, parts)
    t = time.perf_counter()
    _capture._strip_weights(prog.model)
    prog.model_proto.SerializeToString()
    return {"torch.export (no stacks)": parts["torch_export_s"],
            "rewrite + passes": parts["rewrite_s"], "ONNX translation": parts["translate_s"],
            "opset conversion": parts["opset_s"], "serialize": time.perf_counter() - t}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("models", nargs="*", default=["gpt2", "resnet50"])
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    for title, m, args, kw in models(a.models):
        m.train()
        print("%s, %d threads" % (title, torch.get_num_threads()))
        for label, fn in (("exporter", exporter_parts), ("fast", fast_parts)):
            fn(m, args, kw)
            runs = [fn(m, args, kw) for _ in range(a.repeat)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print("  %-8s %.2f s: %s" % (label, sum(med.values()), ", ".join(
                "%s %.2f s" % (k, v) for k, v in med.items())), flush=True)


if __name__ == "__main__":
    main()
