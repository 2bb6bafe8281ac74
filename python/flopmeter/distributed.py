"""Across ranks: every rank's meter summary gathered into the job's, and the printed summary.

Each rank meters its own step (its own batch, its own clock); ``gather_summary`` collects the
ranks' summaries with ``torch.distributed.all_gather_object`` over the job's process group and
derives the job's figures. A data-parallel step ends when the slowest rank ends it, so the
job's step time is the slowest rank's median, and the job's MFU is the work of every rank over
that time and every rank's peak.

Tensor parallelism (``parallelize_module``: DTensor parameters sharded over a 1-D mesh) gives
each rank a share of every sharded layer: ``count_tensor_parallel`` counts the module with each
DTensor parameter replaced by its local shard (``to_local()``, the same storage) and the parallel
styles' input/output hooks set aside, so the capture runs the rank's own matmuls at their local
shapes; what every rank computes in full (a replicated bias, a norm, the loss) is counted in full
on each. The job's samples are the ranks' over the tensor-parallel degree (a group of ranks
shares each sample).

Deliberately not here: any process-group set-up (the job's own group is used, never a new one),
any collective outside ``summary()`` (so ``Meter.step()`` stays local and cheap), and sequence
parallelism (a norm run on a sequence shard is counted on the whole sequence it is given).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional

__all__ = ["is_distributed", "gather_summary", "format_summary", "tensor_parallel_size",
           "count_tensor_parallel"]

# A rank's entry in "ranks": the figures that differ between ranks.
_RANK_KEYS = ("steps", "step_s", "samples_per_step", "tokens_per_step", "samples_per_s",
              "tokens_per_s", "achieved_flops", "mfu", "hfu")


def is_distributed(group: Any = None) -> bool:
    """True when torch.distributed has a process group to gather over."""
    try:
        import torch.distributed as dist
    except Exception:
        return False
    return bool(dist.is_available() and dist.is_initialized())


def _dtensor_params(model: Any) -> List[Any]:
    try:
        from torch.distributed.tensor import DTensor
    except Exception:
        return []
    return [p for p in list(model.parameters()) + list(model.buffers())
            if isinstance(p, DTensor)]


def _is_fsdp2(model: Any) -> bool:
    try:
        from torch.distributed.fsdp import FSDPModule
    except Exception:
        return False
    return any(isinstance(m, FSDPModule) for m in model.modules())


def _tp_mesh(model: Any) -> Any:
    """The one 1-D device mesh the module's DTensor parameters live on (None without any);
    anything else (FSDP2, a 2-D mesh, several meshes) raises with what to pass instead."""
    from . import FlopmeterError
    ps = _dtensor_params(model)
    if not ps:
        return None
    if _is_fsdp2(model):
        raise FlopmeterError(
            "the model's parameters are sharded by FSDP2 (fully_shard), and a Meter counts the "
            "step of the module as written: create the Meter before fully_shard(...) (the count "
            "is the full model's FLOPs for this rank's batch), or pass "
            "report=flopmeter.count(unsharded_model, args) yourself (with tensor parallelism "
            "too: a count of this rank's share)")
    meshes: List[Any] = []
    for p in ps:   # equal meshes may be distinct objects
        if not any(p.device_mesh == m for m in meshes):
            meshes.append(p.device_mesh)
    mesh = meshes[0]
    if len(meshes) > 1 or mesh.ndim != 1:
        raise FlopmeterError(
            "the model's DTensor parameters are on %s: a Meter counts tensor parallelism over "
            "one 1-D device mesh; pass report= a count of this rank's share (flopmeter.count "
            "of a module built with the local shapes)"
            % ("several device meshes" if len(meshes) > 1 else "a %d-D mesh" % mesh.ndim))
    return mesh


def tensor_parallel_size(model: Any) -> int:
    """The tensor-parallel degree: the size of the mesh the DTensor parameters are on; 1
    without DTensor parameters (and under FSDP2, which shards storage, not compute)."""
    from . import FlopmeterError
    if not _dtensor_params(model) or _is_fsdp2(model):
        return 1
    try:
        mesh = _tp_mesh(model)
    except FlopmeterError:   # a mesh it cannot read: the count came as report=
        return 1
    return int(mesh.size()) if mesh is not None else 1


def _is_dtensor_hook(fn: Any) -> bool:
    """A hook that torch.distributed.tensor registered (parallelize_module's styles,
    distribute_module): its code lives in that package."""
    for f in (fn, getattr(fn, "func", None)):
        code = getattr(f, "__code__", None)
        if code is not None:
            name = code.co_filename.replace(os.sep, "/")
            return "/torch/distributed/tensor/" in name
    return False


_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks")


def count_tensor_parallel(model: Any, count: Callable[[], Any]) -> Any:
    """``count()`` of this rank's share of a tensor-parallel module.

    For the call, every DTensor parameter (and buffer) is replaced by a plain parameter over its
    local shard, and the forward hooks torch.distributed.tensor put on the modules (which turn
    inputs into DTensors and outputs back) are set aside: the module then runs exactly the
    local computation the rank runs, a column-parallel linear on the whole input with its
    output columns, a row-parallel one on its input columns, with no collective (the
    all-reduce that adds the row-parallel partial sums moves data, it computes no model FLOP).
    Everything is put back afterwards, even when the count fails.
    """
    import torch
    _tp_mesh(model)   # refuses FSDP2 and meshes it cannot read
    from torch.distributed.tensor import DTensor
    swapped: List[Any] = []
    hooks: List[Any] = []
    try:
        for mod in model.modules():
            for kind in ("_parameters", "_buffers"):
                table = getattr(mod, kind)
                for name, t in list(table.items()):
                    if isinstance(t, DTensor):
                        local = t.to_local().detach()
                        table[name] = (torch.nn.Parameter(local, requires_grad=t.requires_grad)
                                       if kind == "_parameters" else local)
                        swapped.append((table, name, t))
            for attr in _HOOK_DICTS:
                d = getattr(mod, attr)
                keep = type(d)((k, h) for k, h in d.items() if not _is_dtensor_hook(h))
                if len(keep) != len(d):
                    setattr(mod, attr, keep)
                    hooks.append((mod, attr, d))
        return count()
    finally:
        for table, name, t in reversed(swapped):
            table[name] = t
        for mod, attr, d in reversed(hooks):
            setattr(mod, attr, d)


def _sum(xs: List[Optional[float]]) -> Optional[float]:
    if any(x is None for x in xs):
        return None
    return sum(xs)  # type: ignore[arg-type]


def _div(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _per_group(x: Optional[float], tp: int) -> Optional[float]:
    if x is None or tp == 1:
        return x
    return x // tp if x % tp == 0 else x / tp


def job_summary(ranks: List[Dict[str, Any]], rank: int) -> Dict[str, Any]:
    """The job's summary from every rank's local summary (in rank order).

    Job step time: the slowest rank's median (``p90``: the largest p90). Throughput: every
    rank's samples and tokens over that time. Job MFU: every rank's model FLOPs / the job's
    step time / the sum of the ranks' peaks (the ranks' own MFUs are in ``ranks``).
    """
    base = dict(ranks[rank])
    stats = [r["step_s"] for r in ranks]
    timed = [i for i, s in enumerate(stats) if s is not None]
    slowest = max(timed, key=lambda i: stats[i]["median"]) if len(timed) == len(ranks) else None
    med = stats[slowest]["median"] if slowest is not None else None
    step_s = None
    if slowest is not None:
        step_s = {"median": med,
                  "p90": max(s["p90"] for s in stats),
                  "mean": max(s["mean"] for s in stats),
                  "min": max(s["min"] for s in stats),
                  "max": max(s["max"] for s in stats)}

    flops = {k: sum(int(r["flops_per_step"][k]) for r in ranks)
             for k in ranks[0]["flops_per_step"]}
    peak = _sum([r["peak"]["flops"] for r in ranks])
    # under tensor parallelism a group of tp ranks works on the same samples
    tp = max(int(r.get("tensor_parallel", 1) or 1) for r in ranks)
    samples = _per_group(_sum([r["samples_per_step"] for r in ranks]), tp)
    tokens = _per_group(_sum([r["tokens_per_step"] for r in ranks]), tp)

    def util(f: int) -> Optional[float]:
        return _div(_div(f, med), peak)

    devices = sorted(set(str(r["peak"]["device"]) for r in ranks))
    base.update({
        "world_size": len(ranks),
        "rank": rank,
        "steps": min(r["steps"] for r in ranks),
        "step_s": step_s,
        "samples_per_step": samples,
        "tokens_per_step": tokens,
        "samples_per_s": _div(samples, med),
        "tokens_per_s": _div(tokens, med),
        "flops_per_step": flops,
        "achieved_flops": {"model": _div(flops["model"], med),
                           "hardware": _div(flops["hardware"], med)},
        "peak": {"flops": peak,
                 "source": ("the sum of the ranks' peaks; rank 0: %s" % ranks[0]["peak"]["source"])
                 if peak is not None else ranks[0]["peak"]["source"],
                 "device": ranks[0]["peak"]["device"] if len(devices) == 1 else ", ".join(devices),
                 "precision": ranks[0]["peak"]["precision"]},
        "mfu": util(flops["model"]),
        "hfu": util(flops["hardware"]),
        "methods": {
            "counted": {"step_flops": flops["model"], "step_utilization": util(flops["model"])},
            "theory": {"step_flops": flops["theory"], "step_utilization": util(flops["theory"])},
            "counted+optimizer": {"step_flops": flops["model"] + flops["optimizer"],
                                  "step_utilization": util(flops["model"] + flops["optimizer"])},
        },
        "lower_bound": any(r["lower_bound"] for r in ranks),
        "slowest_rank": ({"rank": slowest, "step_s": med} if slowest is not None else None),
        "ranks": [dict({"rank": i, "peak_flops": r["peak"]["flops"],
                        "flops_per_step": {"model": r["flops_per_step"]["model"],
                                           "hardware": r["flops_per_step"]["hardware"]}},
                       **{k: r[k] for k in _RANK_KEYS})
                  for i, r in enumerate(ranks)],
    })
    return base


def gather_summary(local: Dict[str, Any], group: Any = None) -> Dict[str, Any]:
    """Gathers every rank's local summary (a collective: every rank of ``group`` calls it)."""
    import torch.distributed as dist
    world = dist.get_world_size(group)
    rank = dist.get_rank(group)
    objs: List[Any] = [None] * world
    dist.all_gather_object(objs, local, group=group)
    return job_summary(objs, rank)


def _si(x: Optional[float], unit: str = "") -> str:
    """1.234e9 -> '1.234 G' + unit; None -> '-'."""
    if x is None:
        return "-"
    for scale, pre in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"),
                       (1e3, "k")):
        if abs(x) >= scale:
            return "%.4g %s%s" % (x / scale, pre, unit)
    return "%.4g %s" % (x, unit) if unit else "%.4g" % x


def _ms(x: Optional[float]) -> str:
    return "-" if x is None else "%.4g" % (x * 1e3)


def _pct(x: Optional[float]) -> str:
    """A utilization: 41.2%, and small ones with their digits (0.0031%), not 0.0%."""
    if x is None:
        return "-"
    return "%.1f%%" % (x * 100) if x >= 0.01 else "%.2g%%" % (x * 100)


def format_summary(s: Dict[str, Any]) -> str:
    """A summary as the few lines ``Meter.print_summary()`` prints."""
    peak = s["peak"]
    world = s.get("world_size")
    head = "flopmeter meter: %s, %d timed steps (%s, %d warm-up dropped)" % (
        s["model"], s["steps"], s["timer"], s["warmup"])
    if world:
        head += ", %d ranks" % world
    lines = [head]
    f = s["flops_per_step"]
    lines.append("work per step%s: %s model (forward %s + backward %s), %s hardware, %s "
                 "optimizer%s" % (" (all ranks)" if world else "", _si(f["model"], "FLOP"),
                                  _si(f["forward"], "FLOP"), _si(f["backward"], "FLOP"),
                                  _si(f["hardware"], "FLOP"), _si(f["optimizer"], "FLOP"),
                                  "; a lower bound (ops flopmeter does not count)"
                                  if s.get("lower_bound") else ""))
    lines.append("peak: %s" % (("%s%s (%s)" % (
        _si(peak["flops"], "FLOP/s"), " in all" if world else "", peak["source"]))
        if peak["flops"] is not None else peak["source"]))
    row = "%-6s %10s %10s %12s %12s %14s %8s %8s"
    lines.append(row % ("rank", "step ms", "p90 ms", "samples/s", "tokens/s", "achieved",
                        "MFU", "HFU"))

    def line(name: str, r: Dict[str, Any]) -> str:
        st = r["step_s"] or {}
        return row % (name, _ms(st.get("median")), _ms(st.get("p90")),
                      _si(r["samples_per_s"]), _si(r["tokens_per_s"]),
                      _si(r["achieved_flops"]["model"], "FLOP/s"), _pct(r["mfu"]),
                      _pct(r["hfu"]))

    for r in s.get("ranks", []):
        lines.append(line(str(r["rank"]), r))
    lines.append(line("job" if world else "-", s))
    if world and s.get("slowest_rank"):
        lines.append("slowest rank: %d (median step %s ms)" % (
            s["slowest_rank"]["rank"], _ms(s["slowest_rank"]["step_s"])))
    m = s["methods"]
    lines.append("Epoch AI's methods (Hobbhahn 2022): counting %s, theory (3 x forward) %s, "
                 "counting + optimizer %s" % (_pct(m["counted"]["step_utilization"]),
                                              _pct(m["theory"]["step_utilization"]),
                                              _pct(m["counted+optimizer"]["step_utilization"])))
    return "\n".join(lines)
