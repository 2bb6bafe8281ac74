"""The fast capture (torch.export, the few ops the ONNX translation lacks rewritten node by node,
the exporter's translation) against PyTorch's exporter's full path (torch.onnx.export with
dynamo=True): the same report, every count an exact integer, on a CNN with BatchNorm and Dropout
(training and inference, a frozen layer), GPT-2 (SDPA and eager attention), Llama, Mixtral's
experts and a ResNet; a module with a node the fast path does not rewrite falls back to the
exporter, says why, and counts the same."""
import pytest
import torch
from torch import nn

import flopmeter
from flopmeter._capture import Capture, capture
from models import CNN, gpt2, llama, mixtral


def _both(m, args, train=True):
    """The report of each path, and the fast capture's timings."""
    out = []
    for path in ("auto", "exporter"):
        timings = {}
        data, frozen = capture(m, args, train=train, timings=timings, path=path)
        cap = Capture(data, frozen, timings, type(m).__name__, train)
        out.append((flopmeter.count(cap, train=train), timings))
    (fast, ft), (slow, st) = out
    assert st["path"] == "exporter" and "fallback" not in st
    return fast, slow, ft


def _cnn():
    torch.manual_seed(0)
    m = CNN()
    m.conv1.weight.requires_grad_(False)
    return m, (torch.randn(4, 3, 16, 16),)


def _resnet():
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    return tv.models.resnet18(), (torch.randn(2, 3, 64, 64),)


CASES = {
    "cnn": _cnn,
    "gpt2-sdpa": lambda: (gpt2(), (torch.randint(0, 128, (2, 16)),)),
    "gpt2-eager": lambda: (gpt2("eager"), (torch.randint(0, 128, (2, 16)),)),
    "llama": lambda: (llama(), (torch.randint(0, 128, (2, 16)),)),
    "mixtral": lambda: (mixtral(), (torch.randint(0, 128, (2, 8)),)),
    "resnet18": _resnet,
}


@pytest.mark.parametrize("train", [True, False], ids=["train", "infer"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_equals_exporter(name, train):
    m, args = CASES[name]()
    fast, slow, timings = _both(m, args, train=train)
    assert timings["path"] == "fast", timings.get("fallback")
    assert fast.to_dict() == slow.to_dict()
    assert str(fast) == str(slow)
    assert fast.flops() > 0 and fast.params == sum(p.numel() for p in m.parameters())
    assert timings["sdpa_scores_macs"] == slow.capture["sdpa_scores_macs"]


class _InputWrite(nn.Module):
    """Writes its input in place: the fast path does not rewrite a write to an input."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x.mul_(2)
        return self.fc(x)


def test_unsupported_node_falls_back(caplog):
    torch.manual_seed(0)
    m = _InputWrite()
    x = torch.randn(3, 8)
    with caplog.at_level("DEBUG", logger="flopmeter"):
        fast, slow, timings = _both(m, (x,))
    assert timings["path"] == "exporter"
    assert "mul_" in timings["fallback"] and "input" in timings["fallback"]
    assert any("fell back" in r.getMessage() for r in caplog.records)
    assert fast.to_dict() == slow.to_dict()
    assert 2 * 3 * 8 * 4 == fast["by_class"]["matmul"]["fwd"]["macs"] * 2


def test_count_uses_the_fast_path():
    m, args = _cnn()
    r = flopmeter.count(m, *args)
    assert r.capture["path"] == "fast"
