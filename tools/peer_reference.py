#!/usr/bin/python3
"""What the other FLOP counters print for flopmeter's built-in architectures, run for real.

For every built-in model (torchvision's definition, weights=None, no auxiliary heads), at batch 1
and its default input (the evaluation crop of the default weights: 224, 299 for inception_v3,
240..600 for efficientnet_b1..b7), this runs each peer on the torchvision module and writes
tests/data/peers/<model>.json, which tests/test_peers.c compares flopmeter's fm_peers against:

    fvcore            FlopCountAnalysis(model, x).total()                 (jit trace)
    ptflops           get_model_complexity_info(..., backend="pytorch")   (module hooks and
                                                                          patched functionals)
    ptflops_aten      get_model_complexity_info(..., backend="aten")      (dispatch mode)
    thop              thop.profile(model, (x,))                           (module hooks)
    pthflops          pthflops.count_ops(model, x)                        (torch.fx, its default)
    flop_counter_fwd  torch.utils.flop_counter.FlopCounterMode: model(x)
    flop_counter_bwd  the same around model(x).sum().backward(): forward + backward, with the
                      input not requiring grad (the parameters do)
    torchvision       the exact conv + linear MACs (no bias) of a forward pass, which the
                      weights' metadata "_ops" publishes rounded (shown as "GFLOPS" in
                      torchvision's model table; read from the second interpreter's
                      torchvision, since 0.14 has no "_ops")

Each peer runs in evaluation mode (the tools put the model in eval themselves). The ONNX files
of tests/data/onnx named <model>_op13.onnx / <model>_op17.onnx are exports of these same modules
(tools/export_onnx.py), so each fixture also lists them: the test counts them too.

Two interpreters, because FlopCounterMode first shipped in PyTorch 2.1 and Debian's
python3-torch is 1.13:

  * this script runs with Debian's python3 (python3-torch 1.13, python3-torchvision 0.14) and
    a venv on top of it that holds the pure-Python peers, installed without dependencies so
    that pip does not replace Debian's torch:

        /usr/bin/python3 -m venv --system-site-packages /tmp/peers-venv
        /tmp/peers-venv/bin/python -m pip install --no-deps fvcore iopath yacs tabulate \\
            termcolor portalocker tqdm ptflops thop pthflops

  * FlopCounterMode runs in a second interpreter with PyTorch >= 2.1 and a torchvision built
    for it (--flop-counter-python; a plain venv with `pip install torch torchvision`). The
    models are built there on the meta device, so nothing is computed.

    /tmp/peers-venv/bin/python tools/peer_reference.py \\
        --flop-counter-python /tmp/fcm-venv/bin/python [--out tests/data/peers] [names...]

The fixture format (one JSON object per file, one peer per line, so that the C test reads it
with a plain scan) is described in tests/data/peers/README.md.
"""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import warnings

# The built-in table of src/frontend/zoo/zoo.c, in its order (as tools/torchvision_reference.py).
MODELS = [
    "alexnet",
    "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "wide_resnet50_2",
    "resnext50_32x4d",
    "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small",
    "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3",
    "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7",
    "googlenet", "inception_v3",
]

PEERS = ["fvcore", "ptflops", "ptflops_aten", "thop", "pthflops", "flop_counter_fwd",
         "flop_counter_bwd", "torchvision"]
UNITS = {"fvcore": "MACs", "ptflops": "MACs", "ptflops_aten": "MACs", "thop": "MACs",
         "pthflops": "FLOPs", "flop_counter_fwd": "FLOPs", "flop_counter_bwd": "FLOPs",
         "torchvision": "MACs"}


def build(name, models):
    fn = getattr(models, name)
    if name in ("googlenet", "inception_v3"):
        # no auxiliary heads: they run only in training, and flopmeter's built-ins leave them out
        return fn(weights=None, aux_logits=False, init_weights=False)
    return fn(weights=None)


def crop_size(name, models):
    """The evaluation crop of the model's default weights, from torchvision's metadata."""
    size = models.get_model_weights(name).DEFAULT.transforms().crop_size
    return size[0] if isinstance(size, (list, tuple)) else size


def exact_int(v, what):
    """The peers return ints, floats (thop sums in float64) or numpy scalars: each must hold an
    integer exactly, or the fixture would not be exact."""
    f = float(v)
    if f != int(f) or abs(f) >= 2 ** 53:
        raise SystemExit(f"{what}: {v!r} is not an exact integer")
    return int(v)


def quiet():
    """The peers print tables and warnings; the figures are what they return."""
    return contextlib.redirect_stdout(io.StringIO())


def conv_linear_macs(model, x, torch):
    """torchvision's definition of its published figure: Conv2d and Linear MACs, no bias."""
    total = [0]

    def conv_hook(mod, inp, out):
        n, cout, ho, wo = out.shape
        kh, kw = mod.kernel_size
        total[0] += n * cout * ho * wo * (mod.in_channels // mod.groups) * kh * kw

    def linear_hook(mod, inp, out):
        total[0] += inp[0].numel() // mod.in_features * mod.in_features * mod.out_features

    handles = []
    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            handles.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, torch.nn.Linear):
            handles.append(m.register_forward_hook(linear_hook))
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return total[0]


def pure_python_peers(name):
    """fvcore, ptflops (both backends), thop, pthflops and torchvision's metadata, on Debian's
    torch."""
    import torch
    from torchvision import models
    from fvcore.nn import FlopCountAnalysis
    from ptflops import get_model_complexity_info
    from thop import profile
    from pthflops import count_ops

    torch.manual_seed(0)
    hw = crop_size(name, models)
    out = {}
    # a fresh module for each peer: ptflops and thop leave attributes and buffers behind
    model = build(name, models).eval()
    x = torch.randn(1, 3, hw, hw)
    fca = FlopCountAnalysis(model, x)
    fca.unsupported_ops_warnings(False)
    fca.uncalled_modules_warnings(False)
    out["fvcore"] = exact_int(fca.total(), "fvcore")

    for key, backend in (("ptflops", "pytorch"), ("ptflops_aten", "aten")):
        model = build(name, models).eval()
        with quiet():
            macs, _ = get_model_complexity_info(model, (3, hw, hw), as_strings=False,
                                                print_per_layer_stat=False, backend=backend)
        if macs is None:
            raise SystemExit(f"{name}: ptflops ({backend}) failed")
        out[key] = exact_int(macs, key)

    model = build(name, models).eval()
    with quiet():
        macs, _ = profile(model, (x,), verbose=False)
    out["thop"] = exact_int(macs, "thop")

    model = build(name, models).eval()
    with quiet():
        ops, _ = count_ops(model, x, print_readable=False, verbose=False)
    out["pthflops"] = exact_int(ops, "pthflops")

    model = build(name, models).eval()
    out["torchvision"] = conv_linear_macs(model, x, torch)
    return hw, out


FLOP_COUNTER_CHILD = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
import torch, torchvision
from torchvision import models
from torch.utils.flop_counter import FlopCounterMode
res = {"torch": torch.__version__, "torchvision": torchvision.__version__, "models": {}}
for name, hw in json.loads(sys.argv[1]):
    kw = dict(aux_logits=False, init_weights=False) if name in ("googlenet", "inception_v3") else {}
    with torch.device("meta"):
        model = getattr(models, name)(weights=None, **kw).eval()
        x = torch.empty(1, 3, hw, hw)
    with FlopCounterMode(display=False) as f:
        model(x)
    fwd = f.get_total_flops()
    with FlopCounterMode(display=False) as f:
        model(x).sum().backward()
    # the published figure: torchvision 0.14 has no "_ops" in its metadata, later ones do
    weights = models.get_model_weights(name)
    published = sorted({str(w.meta["_ops"]) for w in weights})
    res["models"][name] = [int(fwd), int(f.get_total_flops()), published,
                           str(weights.DEFAULT.meta["_ops"])]
print(json.dumps(res))
"""


def flop_counter_peers(python, jobs):
    """FlopCounterMode forward and forward + backward, in an interpreter with PyTorch >= 2.1."""
    r = subprocess.run([python, "-c", FLOP_COUNTER_CHILD, json.dumps(jobs)], check=True,
                       capture_output=True, text=True)
    return json.loads(r.stdout)


def versions():
    from importlib import metadata
    import torch
    import torchvision
    v = {"torch": torch.__version__, "torchvision": torchvision.__version__}
    for dist in ("fvcore", "ptflops", "thop", "pthflops"):
        v[dist] = metadata.version(dist)
    # Debian's torch calls itself 1.13.0a0; the package version says which release it is
    for pkg in ("python3-torch", "python3-torchvision"):
        try:
            r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                               text=True, check=True)
            v["debian_" + pkg] = r.stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            pass
    return v


def write_fixture(path, name, hw, figures, onnx, tools):
    """One peer a line: tests/test_peers.c scans for `"<peer>": {"value": N`."""
    lines = ["{",
             f'  "model": "{name}",',
             f'  "input": [1, 3, {hw}, {hw}],',
             '  "mode": "forward in evaluation mode; flop_counter_bwd: forward + backward",',
             f'  "tools": {json.dumps(tools, sort_keys=True)},',
             f'  "onnx": {json.dumps(onnx)},',
             '  "peers": {']
    for i, key in enumerate(PEERS):
        extra = ""
        if key == "torchvision":
            extra = f', "published_gflops": "{figures["torchvision_published"]}"'
        comma = "," if i + 1 < len(PEERS) else ""
        lines.append(f'    "{key}": {{"value": {figures[key]}, "unit": "{UNITS[key]}"{extra}}}'
                     f'{comma}')
    lines += ["  }", "}", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = os.path.join(here, "..", "tests", "data")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(data, "peers"))
    ap.add_argument("--flop-counter-python", required=True,
                    help="an interpreter with PyTorch >= 2.1 and its torchvision")
    ap.add_argument("names", nargs="*", default=MODELS)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    from torchvision import models
    os.makedirs(args.out, exist_ok=True)

    jobs = [(name, crop_size(name, models)) for name in args.names]
    fc = flop_counter_peers(args.flop_counter_python, jobs)
    tools = versions()
    tools["torch_flop_counter"] = fc["torch"]
    tools["torchvision_flop_counter"] = fc["torchvision"]   # also the published metadata
    for name in args.names:
        hw, figures = pure_python_peers(name)
        fwd, bwd, published, default = fc["models"][name]
        if len(published) != 1:
            raise SystemExit(f"{name}: the weights publish different figures {published}")
        if fwd != 2 * figures["torchvision"]:
            # both torchvision versions must define the same network, or the figures mix two
            raise SystemExit(f"{name}: FlopCounterMode {fwd} != 2 x conv + linear MACs")
        figures["flop_counter_fwd"], figures["flop_counter_bwd"] = fwd, bwd
        figures["torchvision_published"] = default
        onnx = [f"onnx/{name}_op{o}.onnx" for o in (13, 17)
                if os.path.exists(os.path.join(data, "onnx", f"{name}_op{o}.onnx"))]
        write_fixture(os.path.join(args.out, f"{name}.json"), name, hw, figures, onnx, tools)
        print(f"{name:20s} " + " ".join(f"{k}={figures[k]}" for k in PEERS), file=sys.stderr)


if __name__ == "__main__":
    main()
