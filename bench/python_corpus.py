"""flopmeter.count of every model of the PyTorch 2 corpus (tools/export_torch2_corpus.py builds
them from configs, no weights) captured in memory, against PyTorch's own figures: parameters
(trainable apart), and FlopCounterMode's forward and forward + backward against flopmeter's
matmul, convolution and attention MACs (model FLOPs, and hardware FLOPs with FlashAttention's
recomputation where FlopCounterMode counts it). One row per model, with the capture's time.

    python bench/python_corpus.py [MODEL ...]

FlopCounterMode is known to be wrong for grouped convolutions' weight gradients (groups times
too large) and MoE experts run through grouped_mm (zero): those rows say so instead of "=".
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import export_torch2_corpus as corpus  # noqa: E402

import flopmeter  # noqa: E402


def macs(r, phases):
    bc = r.to_dict()["by_class"]
    return sum(bc[c][p]["macs"] for c in ("conv", "matmul", "attention") if c in bc
               for p in phases)


def main():
    names = sys.argv[1:] or list(corpus.MODELS)
    print("| model | params | trainable | FCM fwd | FCM fwd+bwd | capture s | notes |")
    print("|---|---|---|---|---|---|---|")
    bad = 0
    for name in names:
        torch.manual_seed(0)
        model, inputs = corpus.MODELS[name]()
        model.train()
        facts = corpus.pytorch_facts(model, inputs)
        t = time.perf_counter()
        try:
            r = flopmeter.count(model, (), inputs)
        except flopmeter.FlopmeterError as e:
            print("| %s | error: %s |||||" % (name, str(e)[:200]))
            bad += 1
            continue
        dt = time.perf_counter() - t
        fwd = 2 * macs(r, ("fwd",))
        both = 2 * macs(r, ("fwd", "bwd_data", "bwd_weight"))

        def cmp(ours, theirs, alt=None):
            if ours == theirs:
                return "="
            if alt is not None and alt == theirs:
                return "= (hw)"
            return "%d vs %d (%+.2f%%)" % (ours, theirs, 100.0 * (ours - theirs) / max(theirs, 1))

        row = [cmp(r.params, facts["params"]), cmp(r.trainable_params, facts["params_trainable"]),
               cmp(fwd, facts["flops_fwd"]),
               cmp(both, facts["flops_fwd_bwd"], both + r.attention_recompute_flops)]
        bad += sum(c not in ("=", "= (hw)") for c in row)
        print("| %s | %s | %.1f | %s |" % (name, " | ".join(row), dt, "; ".join(facts["notes"])))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
