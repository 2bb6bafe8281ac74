#!/usr/bin/python3
"""The expected figures of a PyTorch profiler trace, read independently of flopmeter (plain json
module) for tests/test_trace.c: steps (ProfilerStep#N) and their median, per-op calls, total and
self time, and the FLOPs PyTorch's profiler computes with with_flops=True (its formulas for
aten::conv2d, mm, addmm, bmm, baddbmm, mul and add, from "Input Dims" and "Concrete Inputs"),
each op once: an op whose FLOPs are counted has no ancestor with FLOPs on its thread.

usage: python3 tests/data/profiles/expect_trace.py TRACE.json > TRACE.expected.json
"""
import json
import sys


def tol(t):
    return 1e-3 + 4.5e-16 * abs(t)


def flops(e):
    name = e.get("name", "")
    args = e.get("args") or {}
    dims = args.get("Input Dims")
    if not isinstance(dims, list) or not name.startswith("aten::"):
        return None
    op = name[6:]
    try:
        if op == "conv2d":
            conc = args["Concrete Inputs"]
            ints = [json.loads(conc[i]) if conc[i].startswith("[") else [int(conc[i])]
                    for i in (3, 4, 5, 6)]
            (sh, sw), (ph, pw), (dh, dw), (g,) = ints
            n, cin, h, w = dims[0]
            cout, _, kh, kw = dims[1]
            oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
            ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
            return 2 * n * oh * ow * kh * kw * cin * cout // g
        if op in ("mm", "addmm", "bmm", "baddbmm"):
            a, b = (dims[1], dims[2]) if op in ("addmm", "baddbmm") else (dims[0], dims[1])
            if op in ("mm", "addmm"):
                return 2 * a[0] * a[1] * b[1]
            return 2 * a[0] * a[1] * a[2] * b[2]
        if op in ("mul", "add"):
            n = 1
            for d in dims[0]:
                n *= d
            return n
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return None


def main():
    with open(sys.argv[1]) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    cpu = []
    for i, e in enumerate(events):
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if cat is None and e.get("pid") == "CUDA functions":
            continue
        if cat not in (None, "cpu_op", "Operator", "user_annotation"):
            continue
        cpu.append((i, e))
    steps = sorted((e["ts"], e["dur"], e["name"]) for _, e in cpu
                   if e["name"].startswith("ProfilerStep#"))
    times = sorted(d * 1e-6 for _, d, _ in steps)
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])

    def step_of(ts):
        found = 0
        for k, (s, d, _) in enumerate(steps):
            if s <= ts + tol(ts):
                found = k + 1
        if found:
            s, d, _ = steps[found - 1]
            if ts <= s + d + tol(s + d):
                return found
        return 0

    # nesting per thread: sorted by start, the longer first, then file order
    thread = lambda e: "%s/%s" % (e.get("pid"), e.get("tid"))
    order = sorted(cpu, key=lambda ie: (thread(ie[1]), ie[1]["ts"], -ie[1]["dur"], ie[0]))
    info = {}
    stack = []
    cur = None
    for i, e in order:
        if thread(e) != cur:
            stack, cur = [], thread(e)
        while stack:
            p = info[stack[-1]]["e"]
            end = p["ts"] + p["dur"]
            if e["ts"] >= p["ts"] - tol(end) and e["ts"] + e["dur"] <= end + tol(end):
                break
            stack.pop()
        f = flops(e)
        above = bool(stack) and info[stack[-1]]["flops_in"]
        info[i] = {"e": e, "flops": f, "counted": f is not None and not above,
                   "flops_in": above or f is not None, "child": 0.0}
        if stack:
            info[stack[-1]]["child"] += e["dur"]
        stack.append(i)

    ops = {}
    step_flops = [0] * len(steps)
    nested = 0
    for i, e in cpu:
        k = step_of(e["ts"])
        if not k:
            continue
        s = steps[k - 1]
        if (e["ts"], e["dur"], e["name"]) == s:
            continue
        r = info[i]
        o = ops.setdefault(e["name"], {"calls": 0, "total_s": 0.0, "self_s": 0.0,
                                        "profiler_flops": 0, "flops_calls": 0})
        o["calls"] += 1
        o["total_s"] += e["dur"] * 1e-6
        o["self_s"] += max(0.0, e["dur"] - r["child"]) * 1e-6
        if r["flops"] is not None:
            if r["counted"]:
                o["profiler_flops"] += r["flops"]
                o["flops_calls"] += 1
                step_flops[k - 1] += r["flops"]
            else:
                nested += r["flops"]
    # GPU kernels (Kineto's "kernel" events): each belongs to the step its launch was made in,
    # the runtime call (cuda_runtime / cuda_driver) of the same correlation id
    launch = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                launch.setdefault(c, e["ts"])
    kern = [[0, 0.0] for _ in steps]
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        c = (e.get("args") or {}).get("correlation")
        k = step_of(launch.get(c, e["ts"]))
        if k:
            kern[k - 1][0] += 1
            kern[k - 1][1] += e["dur"] * 1e-6
    out = {
        "source": "tests/data/profiles/expect_trace.py " + sys.argv[1].split("/")[-1],
        "form": "kineto" if isinstance(data, dict) else "legacy",
        "steps": [{"name": nm, "time_s": d * 1e-6, "profiler_flops": step_flops[k],
                   "kernels": kern[k][0], "kernel_s": kern[k][1]}
                  for k, (_, d, nm) in enumerate(steps)],
        "step_s": median,
        "profiler_flops": sum(step_flops),
        "nested_flops": nested,
        "ops": ops,
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
