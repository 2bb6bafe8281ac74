"""The Meter's GPU clock without a GPU: torch.cuda.Event replaced by a stand-in whose completion
the test decides, to show that meter.step() never waits for the GPU (no synchronize while
events are pending, only non-blocking queries), that steps are resolved once both of their
events completed, and that summary() waits for the last ones and loses none."""
import pytest

torch = pytest.importorskip("torch")

import flopmeter  # noqa: E402
from flopmeter import meter as meter_mod  # noqa: E402


class FakeGPU:
    def __init__(self):
        self.clock_ms = 0.0          # the GPU's clock
        self.done_upto = -1          # events with an index <= this have completed
        self.events = []
        self.syncs = 0
        self.queries = 0

    def event_class(gpu):
        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing
                self.t = None
                self.i = None

            def record(self, stream=None):
                gpu.clock_ms += 10.0 + len(gpu.events) % 3     # 10, 11, 12 ms steps
                self.t = gpu.clock_ms
                self.i = len(gpu.events)
                gpu.events.append(self)

            def query(self):
                gpu.queries += 1
                return self.i <= gpu.done_upto

            def synchronize(self):
                gpu.syncs += 1
                gpu.done_upto = max(gpu.done_upto, self.i)

            def elapsed_time(self, other):
                assert self.i <= gpu.done_upto and other.i <= gpu.done_upto, \
                    "elapsed_time of an event that has not completed"
                return other.t - self.t
        return Event


@pytest.fixture
def gpu(monkeypatch):
    g = FakeGPU()
    monkeypatch.setattr(torch.cuda, "Event", g.event_class())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: "stream")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    return g


def test_cuda_timer_never_waits_inside_steps(gpu):
    model = torch.nn.Linear(4, 4)
    rep = {"mode": "train", "layers": [],
           "totals": {p: {"flops": 1000} for p in ("fwd", "bwd_data", "bwd_weight",
                                                   "optimizer")}}
    m = flopmeter.Meter(model, (torch.randn(2, 4),), peak=1e12, report=rep, timer="cuda",
                        warmup=2)
    assert isinstance(m._timer, meter_mod._CudaTimer)
    for _ in range(40):                 # the GPU is behind: nothing has completed
        m.step()
    assert gpu.syncs == 0 and m._times == []
    gpu.done_upto = 20                  # the first 20 steps' events complete
    for _ in range(16):                 # resolved at the next check, without waiting
        m.step()
    assert gpu.syncs == 0
    assert len(m._times) == 20 - 2      # events 0..20 make 20 steps, 2 of them warm-up
    assert gpu.queries > 0
    s = m.summary()                     # waits for the rest, once
    assert gpu.syncs >= 1
    assert s["steps"] == 56 - 2 and s["timer"] == "cuda-events"
    expect = [(10.0 + i % 3) / 1e3 for i in range(1, 57)][2:]
    assert m.step_times == pytest.approx(expect)
    assert s["step_s"]["median"] == pytest.approx(0.011)


def test_cuda_timer_bounds_pending_events(gpu):
    t = meter_mod._CudaTimer("cuda")
    marks = meter_mod._CudaTimer._MAX_PENDING + 50
    got = []
    for _ in range(marks):
        got.extend(t.mark())
    # more pending than the bound: the oldest was waited for, at a step boundary, and resolved
    assert gpu.syncs > 0
    assert len(t._pending) <= meter_mod._CudaTimer._MAX_PENDING + 1
    got.extend(t.flush())
    assert len(got) == marks            # every step once, none lost
