"""Across ranks: every rank's meter summary gathered into the job's, and the printed summary.

Each rank meters its own step (its own batch, its own clock); ``gather_summary`` collects the
ranks' summaries with ``torch.distributed.all_gather_object`` over the job's process group and
derives the job's figures. A data-parallel step ends when the slowest rank ends it, so the
job's step time is the slowest rank's median, and the job's MFU is the work of every rank over
that time and every rank's peak.

Deliberately not here: any process-group set-up (the job's own group is used, never a new one)
and any collective outside ``summary()`` (so ``Meter.step()`` stays local and cheap).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

__all__ = ["is_distributed", "gather_summary", "format_summary"]

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


def _sum(xs: List[Optional[float]]) -> Optional[float]:
    if any(x is None for x in xs):
        return None
    return sum(xs)  # type: ignore[arg-type]


def _div(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


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
    samples = _sum([r["samples_per_step"] for r in ranks])
    tokens = _sum([r["tokens_per_step"] for r in ranks])

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
