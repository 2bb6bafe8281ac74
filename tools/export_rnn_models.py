#!/usr/bin/python3
"""Exports PyTorch's recurrent layers to the small ONNX fixtures of tests/test_onnx.c
(test_pytorch_rnns) and checks the MAC formula of src/ops/rnn.c against PyTorch's own
definition of each cell.

Run with Debian's python3 (python3-torch 1.13, python3-onnx 1.12):

    /usr/bin/python3 tools/export_rnn_models.py [--out tests/data/onnx] [--peers DIR]

Each model is one nn.LSTM, nn.GRU or nn.RNN (tanh or relu; 1 or 2 layers; one or two
directions; batch_first or not), hidden 8 or 12, input 4, T = 5 steps, batch N = 2, exported at
opset 14 with its (tiny) weights. The dims are restated in tests/test_onnx.c, whose formulas
are written from them.

The check: every model's forward is run a second time as PyTorch documents the cell
(https://pytorch.org/docs/1.13/generated/torch.nn.LSTM.html, GRU, RNN), step by step with
F.linear on the module's own weights; its outputs must equal the module's, and the MACs of
those F.linear calls (rows x in x out each) must equal flopmeter's formula
T*N*D*G*H*(I_l + H) summed over layers (G = 4, 3, 1; I_l = I for the first layer, D*H after).
With --peers DIR (thop and ptflops installed there: pip install --target DIR thop ptflops)
the script also prints what those tools count for the same modules (docs/counting.md).

PyTorch's exporter writes the LSTM gates in ONNX's order i o f c (PyTorch keeps i f g o) and
exports GRU with linear_before_reset = 1 (gates z r h; PyTorch keeps r z n): neither changes a
count.
"""
import argparse
import os
import sys

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

I, T, N = 4, 5, 2
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}

# name, cell, hidden, layers, bidirectional, batch_first, nonlinearity (RNN)
MODELS = [
    ("rnn_lstm2_bi", "LSTM", 8, 2, True, False, None),
    ("rnn_lstm_bf", "LSTM", 8, 1, False, True, None),
    ("rnn_gru2_bi", "GRU", 12, 2, True, False, None),
    ("rnn_gru_bf", "GRU", 8, 1, False, True, None),
    ("rnn_tanh2", "RNN", 8, 2, False, False, "tanh"),
    ("rnn_relu_bi_bf", "RNN", 8, 1, True, True, "relu"),
]


def make(cell, hidden, layers, bi, bf, nl):
    kw = dict(num_layers=layers, bidirectional=bi, batch_first=bf)
    if cell == "RNN":
        return nn.RNN(I, hidden, nonlinearity=nl, **kw)
    return getattr(nn, cell)(I, hidden, **kw)


class OutputOnly(nn.Module):
    """The layer's output sequence only (the states stay inside)."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


def formula_macs(cell, hidden, layers, bi):
    d = 2 if bi else 1
    total = 0
    for layer in range(layers):
        i_l = I if layer == 0 else d * hidden
        total += T * N * d * GATES[cell] * hidden * (i_l + hidden)
    return total


def reference(m, cell, x, nl):
    """The module's forward written out as PyTorch's documentation defines the cell; returns
    (output, MACs of its products)."""
    macs = [0]

    def lin(v, w, b):
        macs[0] += v.shape[0] * w.shape[1] * w.shape[0]
        return F.linear(v, w, b)

    if m.batch_first:
        x = x.transpose(0, 1)
    d = 2 if m.bidirectional else 1
    inp = x
    for layer in range(m.num_layers):
        outs = []
        for k in range(d):
            sfx = "_l%d%s" % (layer, "_reverse" if k else "")
            w_ih, w_hh = getattr(m, "weight_ih" + sfx), getattr(m, "weight_hh" + sfx)
            b_ih, b_hh = getattr(m, "bias_ih" + sfx), getattr(m, "bias_hh" + sfx)
            h = torch.zeros(N, m.hidden_size)
            c = torch.zeros(N, m.hidden_size)
            ys = [None] * T
            steps = range(T - 1, -1, -1) if k else range(T)
            for t in steps:
                gi, gh = lin(inp[t], w_ih, b_ih), lin(h, w_hh, b_hh)
                if cell == "LSTM":
                    i_, f_, g_, o_ = (gi + gh).chunk(4, 1)
                    c = torch.sigmoid(f_) * c + torch.sigmoid(i_) * torch.tanh(g_)
                    h = torch.sigmoid(o_) * torch.tanh(c)
                elif cell == "GRU":
                    ir, iz, in_ = gi.chunk(3, 1)
                    hr, hz, hn = gh.chunk(3, 1)
                    r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
                    n = torch.tanh(in_ + r * hn)
                    h = (1 - z) * n + z * h
                else:
                    h = torch.tanh(gi + gh) if nl == "tanh" else torch.relu(gi + gh)
                ys[t] = h
            outs.append(torch.stack(ys))
        inp = torch.cat(outs, 2)
    if m.batch_first:
        inp = inp.transpose(0, 1)
    return inp, macs[0]


def peers(m, x):
    out = {}
    try:
        import thop
        macs, _ = thop.profile(OutputOnly(m), inputs=(x,), verbose=False)
        out["thop"] = int(macs)
    except Exception as e:  # noqa: BLE001 - report what the peer did
        out["thop"] = "error: %s" % e
    try:
        import ptflops
        macs, _ = ptflops.get_model_complexity_info(
            m, tuple(x.shape), as_strings=False, print_per_layer_stat=False,
            input_constructor=lambda s: torch.zeros(*s))
        out["ptflops"] = int(macs)
    except Exception as e:  # noqa: BLE001
        out["ptflops"] = "error: %s" % e
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                   "data", "onnx"))
    ap.add_argument("--peers", help="a directory with thop and ptflops installed")
    args = ap.parse_args()
    if args.peers:
        sys.path.insert(0, args.peers)
    torch.manual_seed(0)
    ok = True
    for name, cell, hidden, layers, bi, bf, nl in MODELS:
        m = make(cell, hidden, layers, bi, bf, nl).eval()
        x = torch.randn((N, T, I) if bf else (T, N, I))
        with torch.no_grad():
            y, macs = reference(m, cell, x, nl)
            want = m(x)[0]
        same = torch.allclose(y, want, atol=1e-5)
        f = formula_macs(cell, hidden, layers, bi)
        line = "%-16s %-4s H=%-2d L=%d D=%d bf=%d: cell MACs %d, formula %d%s" % (
            name, cell, hidden, layers, 2 if bi else 1, bf, macs, f,
            "" if same and macs == f else "  MISMATCH")
        if args.peers:
            line += "  " + " ".join("%s=%s" % kv for kv in peers(m, x).items())
        print(line)
        ok = ok and same and macs == f
        path = os.path.join(args.out, name + "_op14.onnx")
        torch.onnx.export(OutputOnly(m), (x,), path, opset_version=14, input_names=["x"],
                          output_names=["y"], do_constant_folding=True)
        onnx.checker.check_model(onnx.load(path))
    if not ok:
        sys.exit("the cell's MACs differ from the formula")


if __name__ == "__main__":
    main()
