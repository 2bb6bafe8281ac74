"""The fast capture against PyTorch's exporter's full path, model by model: every model of the
PyTorch 2 corpus (tools/export_torch2_corpus.py, built from configs, no weights) counted from
each path, in training and inference mode; the two reports must be equal (every count, every
layer, the table); prints which path the fast capture took (or why it fell back) and the seconds
of each capture.

    python bench/capture_paths.py [MODEL ...]      (MODEL: the corpus's or torchvision's)

Run it with the library on the path (make python-test's FLOPMETER_LIB, or the installed
package). Exit status 1 when any report differs."""
import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import export_torch2_corpus as corpus  # noqa: E402

import flopmeter  # noqa: E402
from flopmeter._capture import Capture, capture  # noqa: E402


def count(model, inputs, train, path):
    t = {}
    t0 = time.perf_counter()
    data, frozen = capture(model, (), inputs, train=train, timings=t, path=path)
    dt = time.perf_counter() - t0
    return flopmeter.count(Capture(data, frozen, t, "m", train), train=train), t, dt


def torchvision_model(name):
    """A torchvision classifier outside the corpus, at 64x64 (MaxViT at the 224x224 it needs)."""
    def build():
        import torchvision
        kw = {"aux_logits": False, "init_weights": False} if name == "googlenet" else {}
        side = 224 if name.startswith("maxvit") else 64
        return getattr(torchvision.models, name)(**kw), {"x": torch.randn(2, 3, side, side)}
    return build


class _Positional(torch.nn.Module):
    """A torchvision model called with its input as a keyword: capture passes kwargs."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)


def main():
    warnings.simplefilter("ignore")
    names = sys.argv[1:] or list(corpus.MODELS)
    print("| model | mode | fast path | exporter s | fast s | same report |")
    print("|---|---|---|---:|---:|---|")
    bad = 0
    for name in names:
        torch.manual_seed(0)
        if name in corpus.MODELS:
            model, inputs = corpus.MODELS[name]()
        else:
            model, inputs = torchvision_model(name)()
            model = _Positional(model)
        for train in (True, False):
            try:
                slow, _, ts = count(model, inputs, train, "exporter")
            except flopmeter.FlopmeterError as e:
                print("| %s | %s | exporter error: %s |||" % (
                    name, "train" if train else "infer", str(e)[:120]))
                continue
            fast, t, tf = count(model, inputs, train, "auto")
            same = fast.to_dict() == slow.to_dict() and str(fast) == str(slow)
            bad += not same
            how = "fast" if t["path"] == "fast" else "fell back: " + t.get("fallback", "")[:100]
            print("| %s | %s | %s | %.2f | %.2f | %s |" % (
                name, "train" if train else "infer", how, ts, tf, "yes" if same else "**NO**"),
                flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
