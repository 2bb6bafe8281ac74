#!/usr/bin/env python3
"""What flopmeter.Meter.step() costs a training loop, against a 10 ms step (goal: under 1%).

Two measurements:
  1. the call itself: meter.step() called back to back N times (the Meter's perf_counter read,
     or on a GPU its CUDA event record and the occasional non-blocking query), per call;
  2. a loop of 10 ms steps (a busy wait, so the OS scheduler's sleep granularity does not
     enter) run with and without meter.step(), alternating, the median of each: the
     difference is the overhead as a loop sees it (noisier than 1: it is within the noise).

Run: PYTHONPATH=python FLOPMETER_LIB=build/libflopmeter.so python bench/meter_overhead.py
     [--calls 200000] [--steps 200] [--step-ms 10] [--timer wall|cuda]
"""
import argparse
import statistics
import time

import torch

import flopmeter


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--step-ms", type=float, default=10.0)
    ap.add_argument("--timer", choices=("wall", "cuda"), default="wall")
    a = ap.parse_args()

    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4))
    x = torch.randn(8, 16)
    report = flopmeter.count(model, (x,))          # once, as a Meter does at construction
    if a.timer == "cuda":
        model, x = model.cuda(), x.cuda()
    meter = flopmeter.Meter(model, (x,), peak=1e12, report=report, timer=a.timer, warmup=0)

    # 1. the call
    meter.reset()
    t0 = time.perf_counter()
    for _ in range(a.calls):
        meter.step()
    call_s = (time.perf_counter() - t0) / a.calls
    step_s = a.step_ms / 1e3
    print("meter.step() (%s): %.3f us per call = %.4f%% of a %g ms step (goal < 1%%)"
          % (meter.summary()["timer"], call_s * 1e6, 100 * call_s / step_s, a.step_ms))

    # 2. a loop of steps, with and without the call, alternating so drift hits both alike
    meter.reset()
    plain, metered = [], []
    for i in range(2 * a.steps):
        t0 = time.perf_counter()
        busy(step_s)
        if i % 2:
            meter.step()
            metered.append(time.perf_counter() - t0)
        else:
            plain.append(time.perf_counter() - t0)
    mp, mm = statistics.median(plain), statistics.median(metered)
    print("loop of %d steps of %g ms: median %.4f ms without, %.4f ms with meter.step(): "
          "%+.4f%%" % (a.steps, a.step_ms, mp * 1e3, mm * 1e3, 100 * (mm - mp) / mp))
    s = meter.summary()
    print("the Meter's own median of those steps: %.4f ms (each spans a step without and one "
          "with the call: 2 x %g ms)" % (s["step_s"]["median"] * 1e3, a.step_ms))


if __name__ == "__main__":
    main()
