"""Small models the tests count, built from code or configs (no weights downloaded), and the
figures PyTorch's FlopCounterMode gives for them."""
import os

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from conftest import ROOT

# PyTorch 2 exports name their layers by module path and write no phantom conv bias once the
# ONNX frontend reads the exporter's node metadata (its PyTorch 2 corpus and its exporter script
# come with that work): until then the tests that need module-path names or exact parameters of
# a convolution without bias say so and skip.
TORCH2_FRONTEND = (os.path.exists(os.path.join(ROOT, "tools", "export_torch2_corpus.py")) or
                   os.environ.get("FLOPMETER_TEST_TORCH2") == "1")
NEEDS_TORCH2_FRONTEND = "the ONNX frontend does not read PyTorch 2's module paths yet"


class CNN(nn.Module):
    """conv (no bias) / batchnorm / relu / conv (bias) / dropout / linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        return self.fc(self.drop(x.flatten(1)))


def gpt2(attn="sdpa", layers=2, embd=64, heads=4, vocab=128, positions=64):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=layers, n_embd=embd, n_head=heads, vocab_size=vocab,
                     n_positions=positions, bos_token_id=0, eos_token_id=0,
                     attn_implementation=attn)
    torch.manual_seed(0)
    return GPT2LMHeadModel(cfg)


def llama(attn="sdpa"):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                      max_position_embeddings=64, bos_token_id=0, eos_token_id=0,
                      pad_token_id=0, attn_implementation=attn)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg)


def fcm(model, args, backward):
    """FlopCounterMode's total (FLOPs = 2 x MACs of matmul, conv, attention) of one forward,
    or forward + backward of the sum of the (first) output, in training mode; the inputs need
    no gradient, as in flopmeter's count."""
    model.train()
    torch.manual_seed(0)
    counter = FlopCounterMode(display=False)
    with counter:
        out = model(*args)
        if hasattr(out, "logits"):
            out = out.logits
        if backward:
            out.sum().backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops(), counter.get_flop_counts()["Global"]


def macs_of(report, phases, classes=("conv", "matmul", "attention")):
    """flopmeter's MACs of the classes FlopCounterMode counts, over the given phases."""
    bc = report.to_dict()["by_class"]
    return sum(bc[c][p]["macs"] for c in classes if c in bc for p in phases)
