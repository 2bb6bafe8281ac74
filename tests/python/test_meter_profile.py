"""Meter.profile(): torch.profiler over a few steps of a CPU loop joined to the counted layers by
module path: per module its forward and backward time and its counted FLOPs; the loss computed
outside the model, AccumulateGrad and the optimizer reported as such, never spread over modules."""
import copy
import json

import pytest

torch = pytest.importorskip("torch")

import flopmeter  # noqa: E402
from flopmeter.meter import _module_of  # noqa: E402
from models import NEEDS_TORCH2_FRONTEND, TORCH2_FRONTEND, gpt2  # noqa: E402


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 8))
    x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
    rep = flopmeter.count(model, (x,)).to_dict()
    # the layers by module path, as a PyTorch 2 export names them ("0", "1", "2"); the loss
    # flopmeter adds belongs to no module
    rep = copy.deepcopy(rep)
    paths = {"Gemm": iter(["0", "2"]), "ReLU": iter(["1"])}
    for layer in rep["layers"]:
        if layer["op"] in paths:
            layer["name"] = next(paths[layer["op"]])
    assert [l["name"] for l in rep["layers"]][:3] == ["0", "1", "2"]
    return model, x, y, rep


def step(model, opt, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()


def layer_flops(rep, name):
    l = next(l for l in rep["layers"] if l["name"] == name)
    return sum(l[p]["flops"] for p in ("fwd", "bwd_data", "bwd_weight"))


def test_profile_joins_modules(setup):
    model, x, y, rep = setup
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    meter = flopmeter.Meter(model, (x,), device="h100", warmup=0, report=rep)
    meter.reset()
    for _ in range(3):
        step(model, opt, x, y)
        meter.step()
    with meter.profile(steps=3) as prof:
        for _ in range(5):               # the profile ends by itself after 3 steps
            step(model, opt, x, y)
            meter.step()
    assert prof.done and meter.last_profile is prof
    # the profiled steps are not among the timed ones; timing went on after them
    assert len(meter.step_times) == 3 + 2

    d = prof.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["steps"] == 3
    rows = {r["module"]: r for r in d["modules"]}
    for name in ("0", "2"):             # Linear: forward and both backward GEMMs
        r = rows[name]
        assert r["type"] == "Linear"
        assert r["fwd_s"] > 0 and r["bwd_s"] > 0
        assert r["flops"] == layer_flops(rep, name)
        assert r["achieved_flops"] == pytest.approx(r["flops"] / r["time_s"], rel=1e-12)
        assert r["utilization"] == pytest.approx(r["achieved_flops"] / meter.peak["flops"])
        # the roofline position from the device table's bandwidth
        assert r["intensity"] == pytest.approx(r["flops"] / r["bytes"])
        assert r["bound"] in ("memory", "compute")
        assert r["attainable_flops"] <= meter.peak["flops"]
    assert rows["1"]["type"] == "ReLU" and rows["1"]["fwd_s"] > 0
    assert rows["1"]["flops"] == layer_flops(rep, "1")
    assert "" not in rows or rows[""]["flops"] == 0   # Sequential runs no op of its own

    # the loss is computed outside the model: its time and its counted FLOPs are unattributed
    un = d["unattributed"]
    assert any("cross_entropy" in o["name"] for o in un["ops"])
    assert "loss" in un["layers"] and un["flops"] > 0
    w = d["where"]
    assert w["optimizer_s"] > 0 and w["unattributed_s"] > 0
    assert w["modules_s"] == pytest.approx(sum(r["time_s"] for r in d["modules"]))
    assert w["by_class"]["matmul"] > 0 and w["by_class"]["optimizer"] > 0
    assert sum(w["by_class"].values()) == pytest.approx(
        w["modules_s"] + w["optimizer_s"] + w["accumulate_grad_s"] + w["unattributed_s"])
    text = prof.table()
    assert "where the step goes" in text and "\n0 " in text

    # the hooks are gone: a later forward records nothing and costs nothing extra
    assert not model[0]._forward_hooks and not model[0]._forward_pre_hooks


def test_profile_errors_and_early_stop(setup):
    model, x, y, rep = setup
    meter = flopmeter.Meter(model, (x,), peak=1e12, report=rep)
    with pytest.raises(ValueError, match="steps"):
        meter.profile(steps=0)
    prof = meter.profile(steps=10)
    with pytest.raises(RuntimeError, match="already running"):
        meter.profile()
    with pytest.raises(RuntimeError, match="prof.stop"):
        prof.to_dict()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step(model, opt, x, y)
    meter.step()
    prof.stop()                         # the loop ended early
    assert prof.to_dict()["steps"] == 1
    assert prof.to_dict()["modules"][0]["bound"] is None   # peak= alone: no bandwidth


def test_module_of():
    paths = {"", "model", "model.layers", "model.layers.0", "model.layers.0.attn",
             "model.layers.0.attn.q_proj", "head"}
    assert _module_of("model.layers.0.attn.q_proj", paths) == "model.layers.0.attn.q_proj"
    assert _module_of("model.layers.0.attn/Softmax_2", paths) == "model.layers.0.attn"
    assert _module_of("model.layers.0.attn.scaled_dot_product_attention", paths) == \
        "model.layers.0.attn"
    assert _module_of("/Add_3", paths) == ""
    assert _module_of("loss", paths) is None
    assert _module_of("node_linear", paths) is None
    assert _module_of("headless.x", paths) is None


def _every_flop_once(d, rep, micro_batches=1):
    """Every counted FLOP of the step is in exactly one module's row or among the layers in no
    module: nothing lost, nothing counted twice."""
    total = sum(l[p]["flops"] for l in rep["layers"] for p in ("fwd", "bwd_data", "bwd_weight"))
    placed = sum(r["flops"] for r in d["modules"]) + d["unattributed"]["flops"]
    assert placed == total * micro_batches


def test_profile_places_every_counted_flop_once(setup):
    model, x, y, rep = setup
    meter = flopmeter.Meter(model, (x,), peak=1e12, report=rep, micro_batches=2)
    prof = meter.profile(steps=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step(model, opt, x, y)
    meter.step()
    _every_flop_once(prof.to_dict(), rep, micro_batches=2)


@pytest.mark.skipif(not TORCH2_FRONTEND, reason=NEEDS_TORCH2_FRONTEND)
def test_profile_of_gpt2_by_module_path():
    """A tiny GPT-2 from its config: the layers PyTorch 2's exporter names by module path join
    the modules the profiler timed, forward and backward."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = gpt2(layers=1, embd=32, heads=2, positions=32)
    ids = torch.randint(0, 128, (2, 16))
    meter = flopmeter.Meter(model, (), {"input_ids": ids, "labels": ids}, device="h100",
                            warmup=0)
    assert meter.tokens_per_step == 32
    rep = meter._count
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with meter.profile(steps=2) as prof:
        for _ in range(2):
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad()
            meter.step()
    d = prof.to_dict()
    rows = {r["module"]: r for r in d["modules"]}
    for path in ("transformer.h.0.mlp.c_fc", "transformer.h.0.attn.c_attn", "lm_head"):
        r = rows[path]
        want = sum(l[p]["flops"] for l in rep["layers"]
                   if l["name"] == path or l["name"].startswith(path + "/")
                   for p in ("fwd", "bwd_data", "bwd_weight"))
        assert want > 0 and r["flops"] == want, path
        assert r["fwd_s"] > 0 and r["bwd_s"] > 0, path
    attn = rows["transformer.h.0.attn"]           # scaled_dot_product_attention runs here
    assert attn["flops"] > 0 and attn["fwd_s"] > 0 and attn["bwd_s"] > 0
    assert d["where"]["by_class"]["attention"] > 0
    _every_flop_once(d, rep)
