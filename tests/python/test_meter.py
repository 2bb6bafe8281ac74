"""flopmeter.Meter on a CPU loop: its step times against an independent perf_counter timing of
the same steps, its summary (JSON, the figures from the count, no accumulation), the peak from
the device table, and bad input refused with a message that says what to do."""
import json
import statistics
import subprocess
import time

import pytest

torch = pytest.importorskip("torch")

import flopmeter  # noqa: E402
from flopmeter import FlopmeterError  # noqa: E402


def mlp(width=32):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 4))


@pytest.fixture(scope="module")
def captured():
    """The small MLP at batch 8, captured once (flopmeter.capture) for every call below."""
    model = mlp()
    x = torch.randn(8, 16)
    return model, x, flopmeter.capture(model, (x,))


@pytest.fixture(scope="module")
def counted(captured):
    """Its count, shared by the tests that pass report=."""
    model, x, cap = captured
    return model, x, flopmeter.count(cap).to_dict()


def train_step(model, opt, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()


def test_median_agrees_with_perf_counter():
    """The Meter counts at construction (a real count), then times 20 steps of uneven length;
    an independent perf_counter around each step (start of the step to after meter.step())
    agrees step by step, and the medians within 5%."""
    torch.set_num_threads(1)
    model = mlp(256)
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    meter = flopmeter.Meter(model, (x,), peak=1e12, warmup=2)
    meter.reset()
    independent = []
    for i in range(22):
        t0 = time.perf_counter()
        train_step(model, opt, x, y)
        time.sleep(0.004 * (i % 3))          # 0, 4, 8 ms more: neighbours differ
        meter.step()
        independent.append(time.perf_counter() - t0)
    independent = independent[2:]            # the Meter's 2 warm-up steps
    times = meter.step_times
    assert len(times) == 20
    med, ind = statistics.median(times), statistics.median(independent)
    assert abs(med - ind) <= 0.05 * ind, (med, ind)
    # step by step: the same steps, not merely similar statistics (an off-by-one shows here)
    for k, (a, b) in enumerate(zip(times, independent)):
        assert abs(a - b) <= 0.0015 + 0.05 * b, (k, a, b)
    s = meter.summary()
    assert s["step_s"]["median"] == pytest.approx(med, rel=1e-12)
    assert s["steps"] == 20 and s["timer"] == "perf_counter"


def test_warmup_dropped(counted):
    model, x, rep = counted
    meter = flopmeter.Meter(model, (x,), peak=1e12, warmup=3, report=rep)
    meter.reset()
    for i in range(10):
        if i < 3:
            time.sleep(0.05)                 # slow first steps (compilation, allocator)
        meter.step()
    times = meter.step_times
    assert len(times) == 7
    assert max(times) < 0.05
    meter.reset(warmup=0)
    meter.step()
    assert len(meter.step_times) == 1


def test_summary_figures_json_and_no_accumulation(counted):
    model, x, rep = counted
    t = rep["totals"]
    fwd = t["fwd"]["flops"]
    bwd = t["bwd_data"]["flops"] + t["bwd_weight"]["flops"]
    meter = flopmeter.Meter(model, (x,), peak=2e12, warmup=0, report=rep)

    empty = meter.summary()                  # before any step: figures unknown, not 0 or NaN
    assert empty["steps"] == 0 and empty["mfu"] is None and empty["step_s"] is None
    json.dumps(empty, allow_nan=False)

    y = torch.randint(0, 4, (8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(5):
        train_step(model, opt, x, y)
        meter.step()
    s5 = meter.summary()
    for _ in range(5):
        train_step(model, opt, x, y)
        meter.step()
    s = meter.summary()
    text = json.dumps(s, allow_nan=False)    # JSON, with no NaN or infinity
    assert json.loads(text) == s

    f = s["flops_per_step"]
    assert f == {"model": fwd + bwd, "hardware": fwd + bwd, "forward": fwd, "backward": bwd,
                 "optimizer": t["optimizer"]["flops"], "theory": 3 * fwd}
    assert s5["flops_per_step"] == f         # per step: never a running total
    med = statistics.median(meter.step_times)
    assert s["step_s"]["median"] == pytest.approx(med, rel=1e-12)
    assert s["step_s"]["p90"] >= s["step_s"]["median"]
    assert s["mfu"] == pytest.approx((fwd + bwd) / med / 2e12, rel=1e-12)
    assert s["hfu"] == pytest.approx(s["mfu"], rel=1e-12)
    assert s["samples_per_s"] == pytest.approx(8 / med, rel=1e-12)
    assert s["tokens_per_s"] is None         # float features: no tokens
    m = s["methods"]
    assert m["counted"]["step_utilization"] == s["mfu"]
    assert m["theory"]["step_flops"] == 3 * fwd
    assert m["theory"]["step_utilization"] == pytest.approx(3 * fwd / med / 2e12, rel=1e-12)
    assert m["counted+optimizer"]["step_flops"] == fwd + bwd + t["optimizer"]["flops"]
    assert s["peak"]["flops"] == 2e12 and "given" in s["peak"]["source"]
    assert "world_size" not in s             # no process group here
    assert "Epoch AI" in flopmeter.distributed.format_summary(s)


def test_tokens_and_micro_batches(counted):
    _, _, rep = counted
    emb = torch.nn.Sequential(torch.nn.Embedding(100, 16), torch.nn.Linear(16, 4))
    ids = torch.randint(0, 100, (4, 12))
    meter = flopmeter.Meter(emb, (ids,), peak=1e12, report=rep)
    assert (meter.samples_per_step, meter.tokens_per_step) == (4, 48)
    meter = flopmeter.Meter(emb, (), {"input_ids": ids}, peak=1e12, report=rep,
                            micro_batches=3)
    assert (meter.samples_per_step, meter.tokens_per_step) == (12, 144)
    t = rep["totals"]
    fb = t["fwd"]["flops"] + t["bwd_data"]["flops"] + t["bwd_weight"]["flops"]
    assert meter.flops_per_step["model"] == 3 * fb
    assert meter.flops_per_step["optimizer"] == t["optimizer"]["flops"]  # once per step
    meter = flopmeter.Meter(emb, (ids,), peak=1e12, report=rep, tokens_per_step=1000)
    assert meter.tokens_per_step == 1000


def _cli_device(name):
    out = subprocess.run([flopmeter._lib.cli_path(), "device", name, "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["devices"][0]


def test_peak_from_device_table(counted):
    model, x, rep = counted
    h100 = _cli_device("h100")
    m = flopmeter.Meter(model, (x,), device="h100", precision="bf16", report=rep)
    assert m.peak["flops"] == h100["peak_tensor_flops"]["bf16"]
    assert m.peak["device"] == h100["name"] and h100["name"] in m.peak["source"]
    # fp32 parameters on the CPU: the fp32 ceiling (the H100 has no fp32 tensor cores)
    m = flopmeter.Meter(model, (x,), device="h100", report=rep)
    assert m.peak["precision"] == "fp32"
    assert m.peak["flops"] == h100["peak_vector_flops"]["fp32"]
    a100 = _cli_device("a100")
    m = flopmeter.Meter(model, (x,), device="a100", precision="tf32", report=rep)
    assert m.peak["flops"] == a100["peak_tensor_flops"]["tf32"]
    # bf16 on a T4 (no bf16 units): the library's rule, fp32 arithmetic, said in the source
    t4 = _cli_device("t4")
    m = flopmeter.Meter(model, (x,), device="t4", precision="bf16", report=rep)
    assert m.peak["flops"] == t4["peak_vector_flops"]["fp32"]
    assert "fp32 vector" in m.peak["source"]
    # peak= wins over the table
    m = flopmeter.Meter(model, (x,), device="a100", peak=100e12, report=rep)
    assert m.peak["flops"] == 100e12
    # neither: no utilization, and the summary says what to pass
    m = flopmeter.Meter(model, (x,), report=rep)
    assert m.peak["flops"] is None and "device=" in m.peak["source"]
    assert m.summary()["mfu"] is None


def test_bad_input_is_refused_with_what_to_do(counted):
    model, x, rep = counted
    with pytest.raises(FlopmeterError, match=r"unknown device 'nosuch-gpu'.*flopmeter devices"):
        flopmeter.Meter(model, (x,), device="nosuch-gpu", report=rep)
    # nanoGPT's peak typed in TFLOP/s
    with pytest.raises(FlopmeterError, match=r"not TFLOP/s.*peak=312e12"):
        flopmeter.Meter(model, (x,), peak=312, report=rep)
    with pytest.raises(FlopmeterError, match=r"positive"):
        flopmeter.Meter(model, (x,), peak=-1e12, report=rep)
    with pytest.raises(FlopmeterError, match=r"more than any one device"):
        flopmeter.Meter(model, (x,), peak=1e20, report=rep)
    with pytest.raises(FlopmeterError, match=r"precision='fp4'.*bf16"):
        flopmeter.Meter(model, (x,), device="h100", precision="fp4", report=rep)
    with pytest.raises(FlopmeterError, match=r"T4 has no fp8 peak.*fp16"):
        flopmeter.Meter(model, (x,), device="t4", precision="fp8", report=rep)
    with pytest.raises(FlopmeterError, match=r"device=3"):
        flopmeter.Meter(model, (x,), device=3, report=rep)
    with pytest.raises(TypeError, match=r"torch.nn.Module"):
        flopmeter.Meter("resnet50", (x,), peak=1e12)
    with pytest.raises(ValueError, match=r"warmup"):
        flopmeter.Meter(model, (x,), peak=1e12, warmup=-1, report=rep)
    with pytest.raises(ValueError, match=r"micro_batches"):
        flopmeter.Meter(model, (x,), peak=1e12, micro_batches=0, report=rep)
    with pytest.raises(ValueError, match=r"inference count.*train=True"):
        flopmeter.Meter(model, (x,), peak=1e12, report=dict(rep, mode="infer"))
    with pytest.raises(TypeError, match=r"flopmeter.count"):
        flopmeter.Meter(model, (x,), peak=1e12, report={"layers": []})
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"needs a GPU"):
            flopmeter.Meter(model, (x,), peak=1e12, timer="cuda", report=rep)


class _Attention(torch.nn.Module):
    """One self-attention block through scaled_dot_product_attention: 2 heads of 8."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, 2, 8).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.out(a.transpose(1, 2).reshape(b, s, 16))


def test_hardware_flops_add_flash_attention_recompute():
    """HFU divides the hardware FLOPs: the model FLOPs plus FlashAttention's backward computing
    Q K^T again, 2 b h s s d = 2 x 2 x 2 x 8 x 8 x 8 FLOPs for this block."""
    model = _Attention()
    x = torch.randn(2, 8, 16)
    meter = flopmeter.Meter(model, (x,), peak=1e12, warmup=0)
    f = meter.flops_per_step
    assert f["hardware"] - f["model"] == 2 * 2 * 2 * 8 * 8 * 8
    meter.step()
    s = meter.summary()
    assert s["hfu"] == pytest.approx(s["mfu"] * f["hardware"] / f["model"], rel=1e-12)
    assert "FlashAttention" in s["hardware_flops_source"]
    # a count given as a dict carries no recomputation: said so, hardware = model
    m2 = flopmeter.Meter(model, (x,), peak=1e12, report=meter._count)
    assert m2.flops_per_step["hardware"] == m2.flops_per_step["model"] == f["model"]
    assert "none known" in m2.summary()["hardware_flops_source"]


def test_methods_equal_the_librarys_utilization(captured):
    """The Meter's Epoch AI methods for its median step equal `flopmeter utilization` for that
    step time (the library's own figures), against a given peak and against the device table's."""
    model, x, cap = captured
    rep = flopmeter.count(cap)
    y = torch.randint(0, 4, (8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for kw in ({"peak": 2e12}, {"device": "h100", "precision": "bf16"}, {"device": "a100"}):
        meter = flopmeter.Meter(model, (x,), warmup=0, report=rep, **kw)
        for _ in range(3):
            train_step(model, opt, x, y)
            meter.step()
        s = meter.summary()
        u = flopmeter.utilization(cap, step_time=s["step_s"]["median"], **kw).to_dict()
        assert u["peak_flops"] == s["peak"]["flops"], kw
        for name in ("theory", "counted", "counted+optimizer"):
            assert s["methods"][name]["step_flops"] == u["methods"][name]["step_flops"]
            assert s["methods"][name]["step_utilization"] == pytest.approx(
                u["methods"][name]["step_utilization"], rel=1e-9), (kw, name)
