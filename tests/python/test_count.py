"""flopmeter.count of modules captured in memory, against PyTorch's own figures:
  - MACs of matmul, convolution and attention equal FlopCounterMode's, forward and forward +
    backward (a CNN with a frozen layer, a tiny GPT-2 and Llama built from configs), attention's
    backward with FlashAttention's recomputation as hardware FLOPs;
  - parameters exact, trainable ones apart (requires_grad=False);
  - training mode as PyTorch trains: BatchNorm and Dropout in the training graph, the module's
    own mode restored after the capture;
  - a built-in name through the package equals the CLI's JSON and table; layers_frame."""
import json
import os
import subprocess

import pytest
import torch

import flopmeter
from models import (CNN, NEEDS_TORCH2_FRONTEND, TORCH2_FRONTEND, fcm, gpt2, llama, macs_of)

ALL = ("fwd", "bwd_data", "bwd_weight")


def _cli(*args):
    from flopmeter._lib import cli_path

    return subprocess.run([cli_path()] + list(args), capture_output=True, text=True)


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(0)
    m = CNN()
    m.conv1.weight.requires_grad_(False)   # a frozen layer
    x = torch.randn(4, 3, 16, 16)
    return m, x, flopmeter.count(m, x)


def test_cnn_macs_equal_flopcountermode(cnn):
    m, x, r = cnn
    fwd, _ = fcm(m, (x,), backward=False)
    both, per_op = fcm(m, (x,), backward=True)
    assert 2 * macs_of(r, ("fwd",)) == fwd
    # the frozen conv1 has no weight gradient and, being first, no input gradient either
    assert 2 * macs_of(r, ALL) == both, per_op
    assert fwd > 0 and both > 2 * fwd


def test_cnn_training_graph(cnn):
    m, x, r = cnn
    ops = [layer["op"] for layer in r["layers"]]
    assert "BatchNorm" in ops and "Dropout" in ops
    bn = next(layer for layer in r["layers"] if layer["op"] == "BatchNorm")
    infer = flopmeter.count(m, x, train=False)
    bn_infer = next(layer for layer in infer["layers"] if layer["op"] == "BatchNorm")
    # batch statistics: a training BatchNorm computes the batch's mean and variance (an
    # inference one applies the running ones) and has weight gradients
    assert bn["fwd"]["flops"] > bn_infer["fwd"]["flops"]
    assert bn["bwd_weight"]["flops"] > 0
    assert "Dropout" not in [layer["op"] for layer in infer["layers"]]
    assert r["mode"] == "train" and r["optimizer"] == "sgd"
    assert r["loss"]["losses"][0]["kind"] == "cross-entropy"
    assert m.training   # the capture restored the module's mode
    m.eval()
    flopmeter.count(m, x)
    assert not m.training and not m.bn1.training
    m.train()


def test_cnn_inference(cnn):
    m, x, _ = cnn
    r = flopmeter.count(m, x, train=False)
    assert r["mode"] == "infer"
    fwd, _ = fcm(m, (x,), backward=False)
    assert 2 * macs_of(r, ("fwd",)) == fwd
    assert r.flops("bwd_data") == 0 and r.flops("bwd_weight") == 0


@pytest.mark.skipif(not TORCH2_FRONTEND, reason=NEEDS_TORCH2_FRONTEND)
def test_cnn_params_exact(cnn):
    m, _, r = cnn
    assert r.params == sum(p.numel() for p in m.parameters())
    assert r.trainable_params == sum(p.numel() for p in m.parameters() if p.requires_grad)
    assert r.trainable_params == r.params - m.conv1.weight.numel()


@pytest.mark.skipif(not TORCH2_FRONTEND, reason=NEEDS_TORCH2_FRONTEND)
def test_layers_named_by_module_path(cnn):
    _, _, r = cnn
    names = [layer["name"] for layer in r["layers"]]
    for want in ("conv1", "bn1", "conv2", "drop", "fc"):
        assert want in names, names
    df = r.layers_frame()
    assert list(df["name"]) == names
    assert int(df.loc[df["name"] == "conv2", "fwd_macs"].iloc[0]) == 4 * 16 * 8 * 8 * 8 * 9


def test_trainable_follows_requires_grad():
    """Even where the frontend adds a phantom parameter, freezing a layer removes exactly its
    weights from the trainable ones and its weight gradient from the step."""
    torch.manual_seed(0)
    m = CNN()
    x = torch.randn(2, 3, 16, 16)
    a = flopmeter.count(m, x)
    m.fc.requires_grad_(False)
    b = flopmeter.count(m, x)
    frozen = m.fc.weight.numel() + m.fc.bias.numel()
    assert b.params == a.params
    assert b.trainable_params == a.trainable_params - frozen
    fc_macs = 2 * 10 * 16 * 8 * 8
    assert macs_of(a, ("bwd_weight",), ("matmul",)) == fc_macs
    assert macs_of(b, ("bwd_weight",), ("matmul",)) == 0


@pytest.fixture(scope="module")
def tiny_gpt2():
    m = gpt2()
    x = torch.randint(0, 128, (2, 16))
    return m, x, flopmeter.count(m, x)


@pytest.mark.skipif(not TORCH2_FRONTEND, reason=NEEDS_TORCH2_FRONTEND)
def test_gpt2_equals_flopcountermode(tiny_gpt2):
    m, x, r = tiny_gpt2
    fwd, _ = fcm(m, (x,), backward=False)
    both, per_op = fcm(m, (x,), backward=True)
    assert 2 * macs_of(r, ("fwd",)) == fwd
    # attention dropout: PyTorch runs SDPA as its math path on the CPU (batched matmuls, no
    # recomputation), and so does FlopCounterMode count it
    assert 2 * macs_of(r, ALL) == both, per_op
    assert r.params == sum(p.numel() for p in m.parameters())   # tied lm_head counted once
    assert r["loss"]["losses"][0]["kind"] == "next-token cross-entropy"


@pytest.mark.skipif(not TORCH2_FRONTEND, reason=NEEDS_TORCH2_FRONTEND)
def test_llama_equals_flopcountermode():
    m = llama()
    x = torch.randint(0, 128, (2, 16))
    r = flopmeter.count(m, x)
    fwd, _ = fcm(m, (x,), backward=False)
    both, per_op = fcm(m, (x,), backward=True)
    assert 2 * macs_of(r, ("fwd",)) == fwd
    # no attention dropout: FlashAttention on the CPU, whose backward FlopCounterMode counts
    # with the score matrix computed again: flopmeter's hardware FLOPs add exactly that
    b, h, s, d = 2, 4, 16, 16
    assert r.attention_recompute_flops == 2 * 2 * (b * h * s * s * d)   # two layers
    assert 2 * macs_of(r, ALL) + r.attention_recompute_flops == both, per_op
    assert r.hardware_flops == r.model_flops + r.attention_recompute_flops
    assert r.params == sum(p.numel() for p in m.parameters())


def test_name_equals_cli():
    r = flopmeter.count("resnet18", batch=2, optimizer="adam")
    out = _cli("count", "resnet18", "--batch", "2", "--optimizer", "adam", "--format", "json")
    assert out.returncode == 0
    assert r.to_json() == out.stdout
    assert r.to_dict() == json.loads(out.stdout)
    table = _cli("count", "resnet18", "--batch", "2", "--optimizer", "adam")
    assert str(r) == table.stdout
    assert r.params == 11689512
    assert json.loads(r.to_json(indent=2)) == r.to_dict()


def test_onnx_bytes_and_file(tmp_path):
    torch.manual_seed(0)
    m = CNN().eval()
    x = torch.randn(1, 3, 16, 16)
    path = str(tmp_path / "cnn.onnx")
    torch.onnx.export(m, (x,), path, dynamo=True, optimize=False)
    a = flopmeter.count(path)
    with open(path, "rb") as f:
        b = flopmeter.count(f.read())
    assert a.flops() == b.flops() and a.params == b.params
    assert a.flops() > 0


def test_predict_and_roofline_of_a_module(cnn):
    m, x, r = cnn
    p = flopmeter.predict(m, x, device="a100")
    d = p.to_dict()
    assert p.task == "predict" and "A100" in str(p)
    cli = _cli("predict", "resnet18", "--device", "a100", "--format", "json")
    assert set(json.loads(cli.stdout)) == set(d)
    rl = flopmeter.roofline(m, x, device="h100", summary=True)
    assert rl.task == "roofline" and "H100" in str(rl)
    assert set(rl.to_dict()) == set(json.loads(_cli("roofline", "resnet18", "--device", "h100",
                                                    "--format", "json").stdout))


def test_layers_frame_of_a_name():
    pd = pytest.importorskip("pandas")
    r = flopmeter.count("resnet18")
    df = r.layers_frame()
    assert isinstance(df, pd.DataFrame)
    assert len(df) == len(r["layers"])
    assert df["fwd_flops"].sum() == r.flops("fwd")
    assert df.loc[0, "name"] == "conv1" and df.loc[0, "output"] == "1x64x112x112"


def test_python_m_flopmeter_is_the_cli():
    import sys

    env = dict(os.environ)
    for args, rc in ((["count", "resnet18"], 0), (["count", "resnet18", "--format", "json"], 0),
                     (["count", "no_such_model"], 1), (["count"], 2),
                     (["count", "resnet18", "--batch", "0"], 2)):
        py = subprocess.run([sys.executable, "-m", "flopmeter"] + args, capture_output=True,
                            text=True, env=env)
        cli = _cli(*args)
        assert (py.returncode, py.stdout, py.stderr) == (cli.returncode, cli.stdout, cli.stderr)
        assert py.returncode == rc, (args, py.stderr)


def test_capture_once(cnn):
    """A Capture counts like the module it was made of, and serves every call without a second
    capture; utilization divides the counted FLOPs by time x peak."""
    m, x, r = cnn
    cap = flopmeter.capture(m, x)
    assert cap.frozen == ["conv1.weight"] and cap.train
    assert flopmeter.count(cap).to_dict() == r.to_dict()
    u = flopmeter.utilization(cap, step_time=0.01, device="a100")
    d = u.to_dict()
    cli = _cli("utilization", "resnet18", "--device", "a100", "--step-time", "10ms", "--format",
               "json")
    assert set(d) == set(json.loads(cli.stdout))
    counted = d["methods"]["counted+optimizer"]
    assert counted["step_flops"] == r.flops()
    assert counted["step_utilization"] == pytest.approx(r.flops() / (0.01 * d["peak_flops"]))
    p = flopmeter.utilization(cap, step_time=0.01, peak=1e12)
    assert p["peak_flops"] == 1e12
    with pytest.raises(flopmeter.FlopmeterError, match="train=False"):
        flopmeter.count(cap, train=False)
    with pytest.raises(flopmeter.FlopmeterError, match="step_time"):
        flopmeter.utilization(cap, step_time=0)
