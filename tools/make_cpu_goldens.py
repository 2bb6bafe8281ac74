#!/usr/bin/python3
"""Golden data for tests/test_cpu_backend.c: one training step of a small CNN in PyTorch.

The CNN (names as flopmeter's builder gives them, so the starting values agree):
    conv1   Conv2d(3, 4, 3, padding=1, bias=True)
    bn1     BatchNorm2d(4)                         training mode: batch statistics
    relu    ReLU
    maxpool MaxPool2d(3, stride=2, padding=1, ceil_mode=True)     16x16 -> 9x9
    conv2   Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=False)  -> 5x5
    bn2     BatchNorm2d(8)
    relu2   ReLU
    avgpool AdaptiveAvgPool2d(2)                   5 -> 2: uneven windows (0..3, 2..5)
    flatten, fc Linear(32, 10), CrossEntropyLoss (mean)
on an input of 2x3x16x16, with SGD (lr 0.01, momentum 0.9).

Every starting value (parameters, BatchNorm buffers, input, labels) comes from a bit-exact
reimplementation of fm_init_values (src/backend/init.c): SplitMix64 seeded by FNV-1a of the
tensor name xor the seed, uniform in +-1/sqrt(fan_in) for weights and biases (a bias uses its
layer's weight fan-in), BatchNorm weight 1 / bias 0 / running mean 0 / running var 1, inputs
standard normal by Box-Muller in float64 rounded to float32, labels uniform in [0, classes).
The test checks those values bit for bit against what flopmeter produced, then compares the
step's results with stated tolerances.

Output (tests/data/goldens/cpu_small_cnn.txt), one record per line:
    <kind> <name> <count> <v1> <v2> ...
kind: init (starting value), out (logits), loss, grad (gradient after backward), step (value
after the SGD step, parameters and BatchNorm running statistics). Floats are printed with 9
significant digits (float32 round-trips).

Run: /usr/bin/python3 tools/make_cpu_goldens.py   (Debian's python3-torch 1.13; CPU only)
"""
import math
import os
import struct
import sys

import torch

SEED = 1
MASK = (1 << 64) - 1
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "goldens",
                   "cpu_small_cnn.txt")


def splitmix64(state):
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & MASK
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def uniform01(state):
    return (splitmix64(state) >> 11) * (1.0 / 9007199254740992.0)


def name_seed(seed, name):
    h = 1469598103934665603 ^ seed
    for b in name.encode():
        h ^= b
        h = (h * 1099511628211) & MASK
    return h


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def init_uniform(name, n, fan_in, seed=SEED):
    s = [name_seed(seed, name)]
    bound = 1.0 / math.sqrt(fan_in)
    return [f32((2.0 * uniform01(s) - 1.0) * bound) for _ in range(n)]


def init_normal(name, n, seed=SEED):
    s = [name_seed(seed, name)]
    out = []
    for i in range(0, n, 2):
        u1, u2 = uniform01(s), uniform01(s)
        u1 = max(u1, 1e-300)
        r = math.sqrt(-2.0 * math.log(u1))
        out.append(f32(r * math.cos(2.0 * math.pi * u2)))
        if i + 1 < n:
            out.append(f32(r * math.sin(2.0 * math.pi * u2)))
    return out


def init_labels(name, n, classes, seed=SEED):
    s = [name_seed(seed, name)]
    return [splitmix64(s) % classes for _ in range(n)]


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1, bias=True)
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.relu = torch.nn.ReLU()
        self.maxpool = torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.conv2 = torch.nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.relu2 = torch.nn.ReLU()
        self.avgpool = torch.nn.AdaptiveAvgPool2d(2)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.avgpool(self.relu2(self.bn2(self.conv2(x))))
        return self.fc(torch.flatten(x, 1))


def fmt(values):
    return " ".join("%.9g" % v for v in values)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = SmallCNN()
    records = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            n = p.numel()
            if name.startswith("bn"):
                vals = [1.0 if name.endswith("weight") else 0.0] * n
            else:
                layer = name.rsplit(".", 1)[0]
                w = dict(model.named_parameters())[layer + ".weight"]
                fan_in = w[0].numel()
                vals = init_uniform(name, n, fan_in)
            p.copy_(torch.tensor(vals, dtype=torch.float32).reshape(p.shape))
            records.append(("init", name, p.detach().flatten().tolist()))
        for name, b in model.named_buffers():
            if name.endswith("num_batches_tracked"):
                continue
            vals = [1.0 if name.endswith("running_var") else 0.0] * b.numel()
            b.copy_(torch.tensor(vals, dtype=torch.float32).reshape(b.shape))
            records.append(("init", name, b.flatten().tolist()))
    x = torch.tensor(init_normal("input", 2 * 3 * 16 * 16), dtype=torch.float32).reshape(2, 3, 16, 16)
    labels = torch.tensor(init_labels("labels", 2, 10), dtype=torch.int64)
    records.append(("init", "input", x.flatten().tolist()))
    records.append(("init", "labels", [float(v) for v in labels.tolist()]))

    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    opt.zero_grad()
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    records.append(("out", "fc", logits.detach().flatten().tolist()))
    records.append(("loss", "loss", [loss.item()]))
    for name, p in model.named_parameters():
        records.append(("grad", name, p.grad.flatten().tolist()))
    opt.step()
    for name, p in model.named_parameters():
        records.append(("step", name, p.detach().flatten().tolist()))
    for name, b in model.named_buffers():
        if not name.endswith("num_batches_tracked"):
            records.append(("step", name, b.flatten().tolist()))

    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("# generated by tools/make_cpu_goldens.py with torch %s; do not edit\n"
                % torch.__version__)
        for kind, name, vals in records:
            f.write("%s %s %d %s\n" % (kind, name, len(vals), fmt(vals)))
    print("wrote %s (%d records)" % (os.path.relpath(OUT), len(records)), file=sys.stderr)


if __name__ == "__main__":
    main()
