"""The fast capture (torch.export, the few ops the ONNX translation lacks rewritten node by node,
the exporter's translation) against PyTorch's exporter's full path (torch.onnx.export with
dynamo=True): the same report, every count an exact integer, on a CNN with BatchNorm and Dropout
(training and inference, a frozen layer; in bfloat16), GPT-2 (SDPA and eager attention; an
attention mask), Llama, Mixtral's experts, a ResNet, a module of mixed ops with an LSTM and one
with in-place Dropout and ReLU; a module with a node the fast path does not rewrite falls back
to the exporter, says why, and counts the same."""
import pytest
import torch
from torch import nn

import flopmeter
from flopmeter._capture import Capture, capture
from models import CNN, gpt2, llama, mixtral


def _both(m, args, train=True, kwargs=None):
    """The report of each path, and the fast capture's timings."""
    out = []
    for path in ("auto", "exporter"):
        timings = {}
        data, frozen = capture(m, args, kwargs, train=train, timings=timings, path=path)
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


class _Mixed(nn.Module):
    """GroupNorm, InstanceNorm, GELU, max pooling, bilinear upsampling, concatenation, a mean,
    stacking, log-softmax: ops the rewrite leaves to the translation, and an LSTM."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, padding=1)
        self.g = nn.GroupNorm(2, 8)
        self.i = nn.InstanceNorm2d(8, affine=True)
        self.rnn = nn.LSTM(8, 8, batch_first=True)

    def forward(self, x):
        y = self.i(torch.nn.functional.gelu(self.g(self.c(x))))
        z = torch.nn.functional.interpolate(torch.nn.functional.max_pool2d(y, 2),
                                            scale_factor=2, mode="bilinear")
        z = torch.cat([y, z], 1).mean((2, 3)).view(4, 2, 8)
        z = self.rnn(z)[0][:, -1]
        return torch.log_softmax(torch.stack([z, z.sigmoid()], 0).sum(0), -1)


class _InplaceDropout(nn.Module):
    """nn.Dropout(inplace=True) on a fresh tensor that is read again after it (MnasNet's
    classifier), and ReLU(inplace=True)."""

    def __init__(self):
        super().__init__()
        self.d = nn.Dropout(0.2, inplace=True)
        self.r = nn.ReLU(inplace=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        y = self.r(x.mean([2, 3]) * 2)
        return self.fc(self.d(y)) + y.sum()


def _bf16():
    torch.manual_seed(0)
    return CNN().to(torch.bfloat16), (torch.randn(2, 3, 16, 16, dtype=torch.bfloat16),)


CASES = {
    "mixed-ops": lambda: (_Mixed(), (torch.randn(4, 3, 16, 16),)),
    "inplace-dropout": lambda: (_InplaceDropout(), (torch.randn(2, 8, 4, 4),)),
    "cnn-bf16": _bf16,
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


def test_fast_equals_exporter_with_kwargs():
    m = gpt2()
    kw = {"input_ids": torch.randint(0, 128, (2, 16)),
          "attention_mask": torch.ones(2, 16, dtype=torch.long)}
    fast, slow, timings = _both(m, (), kwargs=kw)
    assert timings["path"] == "fast", timings.get("fallback")
    assert fast.to_dict() == slow.to_dict()


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


def test_count_uses_the_fast_path(monkeypatch):
    monkeypatch.delenv("FLOPMETER_CAPTURE", raising=False)
    m, args = _cnn()
    r = flopmeter.count(m, *args)
    assert r.capture["path"] == "fast"
