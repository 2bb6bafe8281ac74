"""Activation checkpointing in hardware FLOPs: a module that runs blocks through
torch.utils.checkpoint (reentrant or not, as a module or a partial of its __call__) has
hardware FLOPs = model FLOPs + the forward FLOPs of the checkpointed blocks' layers, the same
model FLOPs as without checkpointing; without checkpointing hardware = model FLOPs (no attention)
or model + attention's recomputation; a transformers model with gradient checkpointing on has
its decoder layers recorded."""
import functools

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import flopmeter
from models import gpt2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(32, 16)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Stack(nn.Module):
    """Three blocks and a head; style says how blocks 0 and 1 are checkpointed."""

    def __init__(self, style=None):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.head = nn.Linear(16, 4)
        self.style = style

    def forward(self, x):
        for i, b in enumerate(self.blocks):
            if self.style is None or i == 2:
                x = b(x)
            elif self.style == "module":
                x = checkpoint(b, x, use_reentrant=False)
            elif self.style == "partial":
                x = functools.partial(checkpoint, use_reentrant=False)(
                    functools.partial(b.__call__), x)
            elif self.style == "reentrant":
                x = checkpoint(b, x, use_reentrant=True)
        return self.head(x)


def _fwd_of(report, prefixes):
    return sum(layer["fwd"]["flops"] for layer in report["layers"]
               if any(layer["name"] == p or layer["name"].startswith(p + ".") or
                      layer["name"].startswith(p + "/") for p in prefixes))


@pytest.fixture(scope="module")
def plain():
    x = torch.randn(8, 16)
    return x, flopmeter.count(Stack(), x)


def test_no_checkpoint_hardware_equals_model(plain):
    _, r = plain
    assert r.checkpointed == [] and r.checkpoint_recompute_flops == 0
    assert r.attention_recompute_flops == 0
    assert r.hardware_flops == r.model_flops > 0


# (checkpoint(block.forward, x) is attributed to the block as well, but bypasses the module's
# __call__: torch.export then names the block's bare ops, its ReLU here, by the caller's path)
@pytest.mark.parametrize("style", ["module", "partial", "reentrant"])
def test_checkpointed_blocks_added(plain, style):
    x, base = plain
    r = flopmeter.count(Stack(style), x)
    assert r.checkpointed == ["blocks.0", "blocks.1"]
    assert r.to_dict() == base.to_dict()            # the model's own count is unchanged
    blocks = _fwd_of(r, ["blocks.0", "blocks.1"])
    # each block: two linears (8x16x32 and 8x32x16 MACs, bias adds) and a ReLU, forward only
    macs = 2 * (8 * 16 * 32 + 8 * 32 * 16)
    assert blocks >= 2 * macs
    assert sum(layer["fwd"]["macs"] for layer in r["layers"]
               if layer["name"].startswith("blocks.0") or layer["name"].startswith("blocks.1")) \
        == macs
    assert r.checkpoint_recompute_flops == blocks
    assert r.hardware_flops == r.model_flops + blocks
    assert not any(layer["name"].startswith("blocks.2") and layer["name"] in r.checkpointed
                   for layer in r["layers"])
    # inference recomputes nothing
    assert flopmeter.count(Stack(style), x, train=False).checkpoint_recompute_flops == 0


def test_plain_function_is_reported_unattributed():
    class F(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            return checkpoint(lambda t: torch.relu(self.fc(t)), x, use_reentrant=False)

    r = flopmeter.count(F(), torch.randn(4, 16))
    assert r.checkpointed == [] and r.capture["checkpoint_unattributed"] == 1


def test_hf_gradient_checkpointing():
    m = gpt2()
    x = torch.randint(0, 128, (2, 16))
    base = flopmeter.count(m, x)
    m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    r = flopmeter.count(m, x)
    assert r.checkpointed == ["transformer.h.0", "transformer.h.1"]
    assert r.to_dict() == base.to_dict()
    layers = _fwd_of(r, ["transformer.h.0", "transformer.h.1"])
    assert layers > 0 and r.checkpoint_recompute_flops == layers
    assert r.hardware_flops == r.model_flops + r.attention_recompute_flops + layers
    assert base.hardware_flops == base.model_flops + base.attention_recompute_flops


def test_meter_hardware_flops_include_checkpointing(plain):
    """The Meter's hardware FLOPs per step (HFU's numerator) add the recomputation, and its
    note says where it comes from."""
    x, _ = plain
    m = Stack("module")
    r = flopmeter.count(m, x)
    meter = flopmeter.Meter(m, (x,), peak=1e12, warmup=0, report=r)
    for _ in range(2):
        m(x).sum().backward()
        meter.step()
    f = meter.summary()["flops_per_step"]
    assert f["hardware"] == f["model"] + r.checkpoint_recompute_flops
    assert f["hardware"] > f["model"]
    assert "blocks.0, blocks.1" in meter.summary()["hardware_flops_source"]
