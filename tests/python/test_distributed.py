"""flopmeter.Meter across ranks: `torchrun --nproc_per_node 2` on the CPU (gloo) for DDP, FSDP2
and tensor parallelism (tests/python/dist_meter_script.py), each printing one summary with both
ranks. Under DDP and FSDP2 the counts are the full model's FLOPs for each rank's own batch; under
tensor parallelism each rank's share of the model (half of each split matmul, the replicated
parts in full), against formulas; no count accumulates across steps."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402


HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "dist_meter_script.py")

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not in this PyTorch")


@pytest.fixture(scope="module")
def job():
    """One torchrun job that runs DDP, FSDP2 and tensor parallelism (one start-up for all):
    {"stdout", "modes", "ddp": (summary, first), "fsdp": ..., "tp": ..., "counts": [rank 0's,
    rank 1's], "layers": the unsharded model's layers at batch 8, "tp_layers": [rank 0's, ...]}."""
    modes = ["ddp"]
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
        modes.append("fsdp")
    except ImportError:
        pass
    try:
        from torch.distributed.tensor.parallel import parallelize_module  # noqa: F401
        modes.append("tp")
    except ImportError:
        pass
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["OMP_NUM_THREADS"] = "1"
    cmd = [sys.executable, "-m", "torch.distributed.run",  # torchrun
           "--standalone", "--nproc_per_node", "2", SCRIPT] + modes
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, "torchrun failed (%d):\n%s\n%s" % (p.returncode, p.stdout[-3000:],
                                                                  p.stderr[-5000:])
    out = {"stdout": p.stdout, "modes": modes, "counts": [], "tp_layers": {}}
    for line in p.stdout.splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "FLOPMETER_LAYERS":
            out["layers"] = json.loads(rest.partition(" ")[2])
        elif tag == "FLOPMETER_TPA_FULL":
            out["tpa_full"] = json.loads(rest)
        elif tag == "FLOPMETER_TPA":
            r, _, text = rest.partition(" ")
            out.setdefault("tpa", {})[int(r)] = json.loads(text)
        elif tag == "FLOPMETER_TP_LAYERS":
            r, _, text = rest.partition(" ")
            out["tp_layers"][int(r)] = json.loads(text)
        elif tag in ("FLOPMETER_JSON", "FLOPMETER_FIRST"):
            mode, _, text = rest.partition(" ")
            out.setdefault(mode, {})[tag] = json.loads(text)
        elif tag == "FLOPMETER_COUNT":
            t = json.loads(rest.partition(" ")[2])
            out["counts"].append({"model": t["fwd"]["flops"] + t["bwd_data"]["flops"]
                                  + t["bwd_weight"]["flops"], "forward": t["fwd"]["flops"]})
    return out


def _check_printed(job, mode):
    stdout = job["stdout"]
    # one summary per mode, printed by rank 0 only, each with a row per rank and one for the job
    heads = [i for i, l in enumerate(stdout.splitlines()) if l.startswith("flopmeter meter:")]
    lines = stdout.splitlines()
    assert len(heads) == len(job["modes"]), stdout
    head = heads[job["modes"].index(mode)]
    assert "2 ranks" in lines[head], lines[head]
    rows = [l.split()[0] for l in lines[head + 4:head + 7]]
    assert rows == ["0", "1", "job"], "\n".join(lines[head:head + 9])


def _check(job, mode):
    _check_printed(job, mode)

    s, first = job[mode]["FLOPMETER_JSON"], job[mode]["FLOPMETER_FIRST"]
    counts = job["counts"]
    assert s["world_size"] == 2 and s["rank"] == 0
    assert [r["rank"] for r in s["ranks"]] == [0, 1]
    # 8 steps, 1 warm-up dropped, on each rank
    assert [r["steps"] for r in s["ranks"]] == [7, 7]
    assert first["steps"] == 3

    # each rank counts the full model for its own batch (rank 1's is twice rank 0's)
    for r, want in zip(s["ranks"], counts):
        assert r["flops_per_step"]["model"] == want["model"]
        assert r["samples_per_step"] == 8 + 8 * r["rank"]
    job_model = counts[0]["model"] + counts[1]["model"]
    assert s["flops_per_step"]["model"] == job_model
    assert s["flops_per_step"]["theory"] == 3 * (counts[0]["forward"] + counts[1]["forward"])
    # the count is per step: after 4 steps and after 8 the same
    assert first["flops_per_step"] == s["flops_per_step"]

    # the job: the slowest rank's median, every rank's work, every rank's peak
    meds = [r["step_s"]["median"] for r in s["ranks"]]
    slow = max(range(2), key=lambda i: meds[i])
    assert s["slowest_rank"] == {"rank": slow, "step_s": meds[slow]}
    assert s["step_s"]["median"] == meds[slow]
    assert s["peak"]["flops"] == 2e12
    assert s["mfu"] == pytest.approx(job_model / meds[slow] / 2e12, rel=1e-12)
    assert s["samples_per_s"] == pytest.approx(24 / meds[slow], rel=1e-12)
    for r in s["ranks"]:
        assert r["mfu"] == pytest.approx(r["flops_per_step"]["model"] / r["step_s"]["median"]
                                         / 1e12, rel=1e-12)


def test_ddp_two_ranks(job):
    _check(job, "ddp")


def test_fsdp2_two_ranks(job):
    if "fsdp" not in job:
        pytest.skip("torch.distributed.fsdp.fully_shard (FSDP2) is not in this PyTorch")
    _check(job, "fsdp")


def _phases(layer):
    return [int(layer[p]["flops"]) for p in ("fwd", "bwd_data", "bwd_weight")]


def test_tensor_parallel_two_ranks(job):
    """Linear(32, 64) column-parallel, ReLU, Linear(64, 8) row-parallel over 2 ranks, batch 8
    on both: each rank counts half of each matmul, the row-parallel bias and the loss (on the
    all-reduced, replicated output) in full."""
    if "tp" not in job["modes"]:
        pytest.skip("torch.distributed.tensor.parallel is not in this PyTorch")
    _check_printed(job, "tp")
    s, first = job["tp"]["FLOPMETER_JSON"], job["tp"]["FLOPMETER_FIRST"]
    B, mm0, mm2 = 8, 2 * 8 * 32 * 64, 2 * 8 * 64 * 8   # batch; each linear's matmul FLOPs
    full = {l["name"]: _phases(l) for l in job["layers"]}
    # the unsharded model at batch 8, from the formulas (matmul + bias; no input gradient of
    # the first layer, whose input needs none)
    assert full["0"] == [mm0 + B * 64, 0, mm0 + B * 64]
    assert full["1"] == [B * 64, B * 64, 0]
    assert full["2"] == [mm2 + B * 8, mm2, mm2 + B * 8]
    assert sorted(full) == ["0", "1", "2", "loss"]
    replicated = 2 * B * 8 + sum(full["loss"])   # the row-parallel bias (fwd, grad); the loss
    unsharded = sum(sum(v) for v in full.values())
    share = (unsharded - replicated) // 2 + replicated
    assert (unsharded - replicated) % 2 == 0

    assert sorted(job["tp_layers"]) == [0, 1]
    for rank in (0, 1):
        mine = {l["name"]: _phases(l) for l in job["tp_layers"][rank]}
        assert sorted(mine) == sorted(full)
        assert mine["0"] == [x // 2 for x in full["0"]]     # half the output columns
        assert mine["1"] == [x // 2 for x in full["1"]]     # ReLU on them
        assert mine["2"] == [mm2 // 2 + B * 8, mm2 // 2, mm2 // 2 + B * 8]  # half the inputs
        assert mine["loss"] == full["loss"]
        assert sum(sum(v) for v in mine.values()) == share
        r = s["ranks"][rank]
        assert r["flops_per_step"]["model"] == share
        assert r["samples_per_step"] == 8
        assert r["steps"] == 7
        assert r["mfu"] == pytest.approx(share / r["step_s"]["median"] / 1e12, rel=1e-12)

    # the job: both shares (the whole model once, the replicated parts twice); the two ranks
    # run the same 8 samples
    assert s["world_size"] == 2 and s["tensor_parallel"] == 2
    assert s["flops_per_step"]["model"] == 2 * share == unsharded + replicated
    assert s["samples_per_step"] == 8
    med = s["step_s"]["median"]
    assert med == max(r["step_s"]["median"] for r in s["ranks"])
    assert s["samples_per_s"] == pytest.approx(8 / med, rel=1e-12)
    assert s["mfu"] == pytest.approx(2 * share / med / 2e12, rel=1e-12)
    assert first["flops_per_step"] == s["flops_per_step"]


def test_tensor_parallel_attention_two_ranks(job):
    """A causal attention block split by heads over 2 ranks (q, k, v column-parallel, o
    row-parallel, 2 of 4 heads each): every op of the rank's count is exactly half the
    unsharded block's, but what each rank computes in full: the causal mask (built from the
    sequence length), o's bias (added after the all-reduce) and the loss."""
    if "tp" not in job["modes"]:
        pytest.skip("torch.distributed.tensor.parallel is not in this PyTorch")
    full = {l["name"]: _phases(l) for l in job["tpa_full"]}
    replicated = {n for n in full if n.startswith("scaled_dot_product_attention/")
                  and n.split("/")[1] in ("Trilu", "Equal", "Where")} | {"o/Add", "loss"}
    assert len(replicated) == 5, sorted(full)
    # the split ops are there and not zero: the matmuls of q, k, v, o and attention
    assert full["q/MatMul"][0] == 2 * 2 * 16 * 32 * 32
    assert full["o/Add"][0] == 2 * 16 * 32
    assert sorted(job["tpa"]) == [0, 1]
    for rank in (0, 1):
        mine = {l["name"]: _phases(l) for l in job["tpa"][rank]}
        assert sorted(mine) == sorted(full)
        for name, f in full.items():
            want = f if name in replicated else [v // 2 for v in f]
            assert all(v % 2 == 0 for v in f) or name in replicated, (name, f)
            assert mine[name] == want, (name, f, mine[name])


def test_job_summary_of_ranks():
    """The job's figures from two ranks' summaries, without processes: a slow rank sets the
    job's step, and the job's MFU is all the work over it and all the peak."""
    from flopmeter.distributed import format_summary, job_summary

    def rank(med, flops, samples):
        st = {"median": med, "p90": med * 1.5, "mean": med, "min": med, "max": med * 2}
        return {"model": "M", "timer": "perf_counter", "warmup": 0, "steps": 5, "step_s": st,
                "micro_batches": 1, "samples_per_step": samples, "tokens_per_step": None,
                "samples_per_s": samples / med, "tokens_per_s": None,
                "flops_per_step": {"model": flops, "hardware": flops, "forward": flops // 3,
                                   "backward": flops - flops // 3, "optimizer": 10,
                                   "theory": 3 * (flops // 3)},
                "achieved_flops": {"model": flops / med, "hardware": flops / med},
                "peak": {"flops": 1e12, "source": "given", "device": None, "precision": None},
                "mfu": flops / med / 1e12, "hfu": flops / med / 1e12,
                "methods": {}, "lower_bound": False}
    ranks = [rank(0.010, 3_000_000_000, 8), rank(0.020, 6_000_000_000, 16)]
    s = job_summary(ranks, 1)
    assert s["rank"] == 1 and s["world_size"] == 2
    assert s["slowest_rank"] == {"rank": 1, "step_s": 0.020}
    assert s["step_s"]["p90"] == 0.030
    assert s["mfu"] == pytest.approx(9e9 / 0.020 / 2e12)
    assert s["samples_per_s"] == pytest.approx(24 / 0.020)
    assert s["tokens_per_s"] is None
    assert s["methods"]["counted+optimizer"]["step_flops"] == 9_000_000_020
    assert [r["mfu"] for r in s["ranks"]] == [ranks[0]["mfu"], ranks[1]["mfu"]]
    text = format_summary(s)
    assert "slowest rank: 1" in text and "\njob " in text
    json.dumps(s, allow_nan=False)
