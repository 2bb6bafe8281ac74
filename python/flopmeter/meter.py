"""Meter: the utilization of the user's own PyTorch training loop.

The step's work is counted once, at construction, by ``flopmeter.count`` (libflopmeter's rules, in
training mode); the loop then only calls ``meter.step()``, which reads a clock (``perf_counter``
on the CPU) or records a CUDA event (on a GPU; the events are resolved lazily, so nothing
synchronizes inside the step). ``summary()`` joins the two into step time, throughput, MFU and
HFU, with Epoch AI's utilization methods beside them (Hobbhahn 2022); under ``torchrun`` it
gathers every rank's figures (``flopmeter.distributed``). ``profile()`` joins ``torch.profiler``
over a few steps to the counted layers by module path.

Deliberately not here: counting (libflopmeter, through ``flopmeter.count``), any FLOP formula, the
device table (libflopmeter's), and a running FLOP total: the count is per step and never
accumulates, so a meter reports the same step FLOPs after 10 steps as after 10,000.
"""
from __future__ import annotations

import collections
import math
import sys
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

__all__ = ["Meter", "Profile"]

# Precisions the device table knows (docs/json.md), and what a torch dtype computes in by default.
_PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")

_CONVENTION = ("FLOP = 2 x MAC + other operations; model FLOPs = forward + backward (input and "
               "weight gradients) as counted, without recomputation; hardware FLOPs add what "
               "the step recomputes (FlashAttention's backward, activation checkpointing); "
               "MFU = model FLOPs / step time / peak (PaLM, Chowdhery et al. 2022)")


def _version() -> str:
    try:
        from . import __version__  # type: ignore[attr-defined]
        return str(__version__)
    except Exception:  # the package's __init__ may still be importing this module
        return "0.1.0"


# ---------------------------------------------------------------------------------------------
# small statistics (a summary must not need numpy)

def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on a sorted list."""
    n = len(sorted_xs)
    pos = (n - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, n - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def _step_stats(times: Sequence[float]) -> Optional[Dict[str, float]]:
    if not times:
        return None
    xs = sorted(times)
    return {"median": _quantile(xs, 0.5), "p90": _quantile(xs, 0.9),
            "mean": sum(xs) / len(xs), "min": xs[0], "max": xs[-1]}


def _div(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


# ---------------------------------------------------------------------------------------------
# clocks

class _WallTimer:
    """Step boundaries from time.perf_counter: the CPU runs the step, so wall time is its time."""

    kind = "perf_counter"

    def __init__(self) -> None:
        self._last = time.perf_counter()

    def restart(self) -> None:
        self._last = time.perf_counter()

    def mark(self) -> Tuple[float, ...]:
        now = time.perf_counter()
        dt = now - self._last
        self._last = now
        return (dt,)

    def flush(self) -> Tuple[float, ...]:
        return ()


class _CudaTimer:
    """Step boundaries as CUDA events on the current stream.

    An event records where the stream is when the step ends; the time between two events is
    the GPU's time for the step, whether the GPU or the CPU (launch-bound) was the limit. The
    events are resolved only once both have completed (``query()`` never blocks), so the step
    never waits on the GPU; ``flush`` (called by ``summary()``) waits for the last one.
    """

    kind = "cuda-events"
    # Unresolved events kept before the oldest is waited for (at a step boundary): the GPU is
    # then this many steps behind the CPU, which a real loop never is (its memory would run out).
    _MAX_PENDING = 1024
    # query() costs a driver call; trying to resolve every few steps keeps step() cheaper.
    _RESOLVE_EVERY = 16

    def __init__(self, device: Any) -> None:
        import torch
        self._torch = torch
        self._device = device
        self._pending: collections.deque = collections.deque()
        self._since_resolve = 0
        self.restart()

    def _record(self) -> None:
        ev = self._torch.cuda.Event(enable_timing=True)
        ev.record(self._torch.cuda.current_stream(self._device))
        self._pending.append(ev)

    def restart(self) -> None:
        self._pending.clear()
        self._record()

    def _resolve(self, block: bool) -> List[float]:
        out: List[float] = []
        while len(self._pending) >= 2:
            a, b = self._pending[0], self._pending[1]
            if block:
                b.synchronize()
            elif not b.query():
                break
            out.append(a.elapsed_time(b) / 1e3)  # ms -> s
            self._pending.popleft()
        return out

    def mark(self) -> Sequence[float]:
        self._record()
        self._since_resolve += 1
        if len(self._pending) > self._MAX_PENDING:
            self._pending[1].synchronize()  # at the step boundary, never inside the step
            self._since_resolve = self._RESOLVE_EVERY
        if self._since_resolve >= self._RESOLVE_EVERY:
            self._since_resolve = 0
            return self._resolve(block=False)
        return ()

    def flush(self) -> Sequence[float]:
        return self._resolve(block=True)


# ---------------------------------------------------------------------------------------------
# inputs, model and count

def _unwrap(model: Any) -> Any:
    """The module the user wrote: DistributedDataParallel and DataParallel keep it in .module;
    torch.compile's OptimizedModule in ._orig_mod."""
    import torch
    seen = 0
    while seen < 8:
        seen += 1
        if isinstance(model, (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)):
            model = model.module
            continue
        orig = getattr(model, "_orig_mod", None)
        if isinstance(orig, torch.nn.Module):
            model = orig
            continue
        break
    return model


def _tensors(args: Sequence[Any], kwargs: Dict[str, Any]) -> List[Any]:
    import torch
    out = []

    def walk(x: Any, depth: int = 0) -> None:
        if depth > 4:
            return
        if isinstance(x, torch.Tensor):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y, depth + 1)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y, depth + 1)
    walk(list(args))
    walk(kwargs)
    return out


def _infer_batch(args: Sequence[Any], kwargs: Dict[str, Any]) -> Tuple[Optional[int], Optional[int]]:
    """(samples, tokens) of one micro-batch, from the inputs.

    Samples: the first dimension of the first input tensor (or of ``input_ids`` /
    ``inputs_embeds`` / ``pixel_values`` given by keyword). Tokens: the elements of
    ``input_ids``, or of a first input of integer dtype with two dimensions (token ids,
    B x S); an ``inputs_embeds`` (B x S x D) gives B x S. None where the inputs do not say.
    """
    import torch
    for key in ("input_ids", "inputs_embeds", "pixel_values", "input_values", "x"):
        t = kwargs.get(key)
        if isinstance(t, torch.Tensor) and t.dim() >= 1:
            samples = int(t.shape[0])
            if key == "input_ids":
                return samples, int(t.numel())
            if key == "inputs_embeds" and t.dim() == 3:
                return samples, int(t.shape[0] * t.shape[1])
            return samples, None
    ts = _tensors(args, kwargs)
    if not ts or ts[0].dim() < 1:
        return None, None
    first = ts[0]
    samples = int(first.shape[0])
    if not first.is_floating_point() and not first.is_complex() and first.dim() == 2 \
            and first.dtype != torch.bool:
        return samples, int(first.numel())
    return samples, None


def _report_dict(report: Any) -> Dict[str, Any]:
    d = report.to_dict() if hasattr(report, "to_dict") else report
    if not isinstance(d, dict) or "totals" not in d:
        raise TypeError("report= takes what flopmeter.count returns (or its .to_dict()): an "
                        "object with totals.fwd.flops etc.; got %r" % type(report).__name__)
    if d.get("mode", "train") != "train":
        raise ValueError("report= is an inference count (mode %r); a Meter needs a training "
                         "count: flopmeter.count(model, args, train=True)" % d.get("mode"))
    return d


def _recompute_flops(report: Any) -> Tuple[int, str]:
    """FLOPs the step computes again (hardware FLOPs - model FLOPs), and what they are."""
    attn = getattr(report, "attention_recompute_flops", None)
    if attn is None:
        return 0, ("none known (a count given as a dict): hardware FLOPs = model FLOPs")
    ckpt = int(getattr(report, "checkpoint_recompute_flops", 0) or 0)
    parts = []
    if attn:
        parts.append("FlashAttention's backward recomputing each attention's score matrix")
    if ckpt:
        parts.append("the forward again of the activation-checkpointed modules (%s)"
                     % ", ".join(report.checkpointed))
    if parts:
        return int(attn) + ckpt, ("model FLOPs + " + " + ".join(parts) +
                                  " (flopmeter.Report.hardware_flops)")
    return 0, ("no recomputation the count knows of (no attention, no activation "
               "checkpointing): hardware FLOPs = model FLOPs")


def _optimizer_name(optimizer: Any) -> str:
    """'sgd' / 'adam' / 'none' for flopmeter.count, from a name or a torch optimizer."""
    if optimizer is None:
        return "none"
    if isinstance(optimizer, str):
        return optimizer
    import torch
    if isinstance(optimizer, torch.optim.Optimizer):
        name = type(optimizer).__name__.lower()
        if "adam" in name:  # Adam, AdamW, NAdam, RAdam, Adamax: two moments per parameter
            return "adam"
        return "sgd"
    raise TypeError("optimizer= takes 'sgd', 'adam', 'none' or a torch.optim.Optimizer; got %r"
                    % type(optimizer).__name__)


def _has_dtensor_params(model: Any) -> bool:
    try:
        from torch.distributed.tensor import DTensor
    except Exception:
        return False
    return any(isinstance(p, DTensor) for p in model.parameters())


def _count(model: Any, args: Sequence[Any], kwargs: Dict[str, Any], optimizer: str,
           loss: Any, dtype: Any) -> Any:
    from . import count  # the package's binding over libflopmeter

    def run() -> Any:
        return count(model, tuple(args), kwargs or None, train=True, optimizer=optimizer,
                     loss=loss, dtype=dtype)
    if _has_dtensor_params(model):   # tensor parallel: this rank's share; FSDP2 refused
        from .distributed import count_tensor_parallel
        return count_tensor_parallel(model, run)
    return run()


# ---------------------------------------------------------------------------------------------
# peak

# enum fm_class's FM_CLASS_MATMUL (flopmeter.h): the ceiling utilization is quoted against.
_FM_CLASS_MATMUL = 1


def _lib_device_calls() -> Any:
    """libflopmeter's device-table calls, with their signatures (flopmeter.h)."""
    import ctypes
    from ._lib import lib
    d = lib.dll
    P, S, I = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    for name, res, argt in (
            ("fm_devices_load", I, [P, S, ctypes.POINTER(P)]),
            ("fm_devices_free", None, [P]),
            ("fm_devices_find", I, [P, P, S, ctypes.POINTER(P)]),
            ("fm_devices_match", I, [P, P, S, ctypes.POINTER(P)]),
            ("fm_device_save_json", I, [P, P, S]),
            ("fm_device_util_peak", ctypes.c_double, [P, I, ctypes.c_bool]),
            ("fm_device_ceiling", ctypes.c_double, [P, I, I, ctypes.POINTER(I),
                                                    ctypes.POINTER(ctypes.c_bool)]),
            ("fm_precision_name", S, [I]),
            ("fm_precision_parse", ctypes.c_bool, [S, ctypes.POINTER(I)])):
        f = getattr(d, name)
        f.restype, f.argtypes = res, argt
    return d


def _device_table_entry(name: Optional[str], gpu_name: Optional[str] = None,
                        precision: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The device table's entry for NAME (as `flopmeter device NAME --format json` prints it,
    the table being the built-ins plus the user's device files), or, with gpu_name, the entry
    that fits a GPU's own name (None when none does); with precision, also "util_peak": the
    peak utilization is quoted against at that precision (the library's one rule)."""
    import ctypes
    import json
    import os
    import tempfile
    from ._lib import _Ctx
    d = _lib_device_calls()
    with _Ctx() as ctx:
        devs = ctypes.c_void_p()
        st = d.fm_devices_load(ctx.p, None, ctypes.byref(devs))
        if st:
            ctx.fail(st)
        try:
            dev = ctypes.c_void_p()
            if gpu_name is not None:
                if d.fm_devices_match(ctx.p, devs, gpu_name.encode(), ctypes.byref(dev)):
                    return None
            else:
                st = d.fm_devices_find(ctx.p, devs, str(name).encode(), ctypes.byref(dev))
                if st:
                    ctx.fail(st)
            fd, path = tempfile.mkstemp(prefix="flopmeter-device-", suffix=".json")
            os.close(fd)
            try:
                st = d.fm_device_save_json(ctx.p, dev, path.encode())
                if st:
                    ctx.fail(st)
                with open(path) as f:
                    entry = json.load(f)["devices"][0]
            finally:
                os.unlink(path)
            if precision is not None:
                p = ctypes.c_int()
                if not d.fm_precision_parse(precision.encode(), ctypes.byref(p)):
                    raise ValueError("precision=%r is not one of %s"
                                     % (precision, ", ".join(_PRECISIONS)))
                entry["util_peak"] = float(d.fm_device_util_peak(dev, p.value, False))
                # which units that peak is (the same conv/matmul ceiling): bf16 on a T4 is
                # fp32 arithmetic on the vector units
                applied, tensor = ctypes.c_int(), ctypes.c_bool()
                d.fm_device_ceiling(dev, _FM_CLASS_MATMUL, p.value, ctypes.byref(applied),
                                    ctypes.byref(tensor))
                entry["util_units"] = "%s %s" % (
                    d.fm_precision_name(applied.value).decode(),
                    "tensor-core" if tensor.value else "vector")
            return entry
        finally:
            d.fm_devices_free(devs)


def _default_precision(model: Any, on_cuda: bool) -> str:
    import torch
    dt = None
    for p in model.parameters():
        if p.is_floating_point():
            dt = p.dtype
            break
    if dt is torch.bfloat16:
        return "bf16"
    if dt is torch.float16:
        return "fp16"
    if dt is torch.float64:
        return "fp64"
    # fp32 parameters: matmuls run on TF32 tensor cores when PyTorch is told to allow it.
    if on_cuda and (torch.backends.cuda.matmul.allow_tf32
                    or torch.get_float32_matmul_precision() != "highest"):
        return "tf32"
    return "fp32"


def _resolve_peak(model: Any, device: Optional[str], peak: Any, precision: Optional[str],
                  on_cuda: bool) -> Dict[str, Any]:
    """{"flops", "source", "device", "precision", "bandwidth_bytes_per_s"}; flops None if unknown.

    peak= wins (checked by flopmeter.check_peak: FLOP/s, not TFLOP/s); else the device table's
    peak for the precision, by the rule every flopmeter command quotes utilization against
    (the conv/matmul ceiling: matrix units where the device has them); with neither, on a GPU,
    the table's entry that fits torch.cuda.get_device_name().
    """
    from . import FlopmeterError, check_peak
    if precision is not None and precision not in _PRECISIONS:
        raise FlopmeterError("precision=%r is not one flopmeter knows: give one of %s"
                             % (precision, ", ".join(_PRECISIONS)))
    if device is not None and not isinstance(device, str):
        raise FlopmeterError("device=%r: give a name from flopmeter's device table (\"h100\", "
                             "\"a100\"; `flopmeter devices` lists them)" % (device,))
    given = check_peak(peak) if peak is not None else None
    prec = precision or _default_precision(model, on_cuda)
    how = ""
    entry = None
    if device is not None:
        entry = _device_table_entry(device, precision=prec)
    elif given is None and on_cuda:
        import torch
        gpu = torch.cuda.get_device_name(torch.cuda.current_device())
        entry = _device_table_entry(None, gpu_name=gpu, precision=prec)
        how = "; the entry that fits this GPU's name (%s)" % gpu
    out: Dict[str, Any] = {
        "flops": None, "source": None, "device": entry["name"] if entry else None,
        "precision": prec if given is None else precision,
        "bandwidth_bytes_per_s": (entry.get("mem_bw_bytes_per_s") or None) if entry else None}
    if given is not None:
        out["flops"] = given
        out["source"] = "given (peak=%g FLOP/s)" % given
        return out
    if entry is None:
        out["source"] = ("unknown: pass device= (a name from flopmeter's device table) or "
                         "peak= (FLOP/s)")
        return out
    if not entry["util_peak"]:
        vec = entry.get("peak_vector_flops") or {}
        ten = entry.get("peak_tensor_flops") or {}
        have = [p for p in _PRECISIONS if vec.get(p) or ten.get(p)]
        raise FlopmeterError("%s has no %s peak in flopmeter's device table (it has: %s): "
                             "pass precision= one of those, or peak= in FLOP/s"
                             % (entry["name"], prec, ", ".join(have) or "none"))
    out["flops"] = entry["util_peak"]
    units = entry["util_units"]
    out["source"] = ("%s, %s: the %s peak (dense), flopmeter's device table%s%s"
                     % (entry["name"], prec, units, how,
                        "" if precision else "; precision from the parameters' dtype (pass "
                        "precision= under autocast)"))
    return out


# ---------------------------------------------------------------------------------------------
# Meter

class Meter:
    """Meters a training loop: step time, throughput, MFU and HFU, from one count.

    Example::

        meter = flopmeter.Meter(model, (x,), device="h100")   # or peak=989e12; counts once
        for x, y in loader:
            loss = loss_fn(model(x), y); loss.backward(); opt.step(); opt.zero_grad()
            meter.step()                                        # times the step, cheap
        print(meter.summary()["mfu"])

    Args:
        model: the ``nn.Module`` being trained (a DDP / ``torch.compile`` wrapper is unwrapped).
            Under FSDP2, create the Meter before ``fully_shard``; under tensor parallelism
            (DTensor parameters) the count is this rank's share.
        args, kwargs: one micro-batch's inputs, as the model is called (counted once, now).
        device: a name from flopmeter's device table (``"h100"``, ``"a100"``): the peak is the
            table's dense peak for ``precision``.
        peak: the peak in FLOP/s per device (``989e12``), instead of or over ``device``.
        precision: the compute precision whose peak applies (``"bf16"``, ``"tf32"``, ...);
            default: the parameters' dtype (TF32 for fp32 on a GPU when PyTorch allows it).
        tokens_per_step, samples_per_step: per optimizer step on this rank; default: from the
            inputs (the batch dimension; ``input_ids``' elements) times ``micro_batches``.
        warmup: timed steps dropped at the start (compilation, allocator warm-up).
        micro_batches: forward+backward passes per optimizer step (gradient accumulation).
        optimizer: ``"sgd"``, ``"adam"``, ``"none"`` or the ``torch.optim.Optimizer`` itself.
        loss, dtype: passed to ``flopmeter.count``.
        report: a count already made (``flopmeter.count(...)`` or its ``to_dict()``): no count.
        timer: ``"auto"`` (CUDA events when the model is on a GPU, else ``perf_counter``),
            ``"cuda"`` or ``"wall"``.
        group: the process group to gather over (default: the job's default group).
    """

    def __init__(self, model: Any, args: Any = (), kwargs: Optional[Dict[str, Any]] = None, *,
                 device: Optional[str] = None, peak: Optional[float] = None,
                 precision: Optional[str] = None, tokens_per_step: Optional[int] = None,
                 samples_per_step: Optional[int] = None, warmup: int = 2,
                 micro_batches: int = 1, optimizer: Any = "sgd", loss: Any = None,
                 dtype: Any = None, report: Any = None, timer: str = "auto",
                 group: Any = None) -> None:
        import torch
        if not isinstance(model, torch.nn.Module):
            raise TypeError("Meter(model, args): model is the torch.nn.Module being trained; "
                            "got %r" % type(model).__name__)
        if not isinstance(args, (tuple, list)):
            args = (args,)
        kwargs = dict(kwargs or {})
        if not isinstance(warmup, int) or warmup < 0:
            raise ValueError("warmup=%r: the number of first steps to drop, 0 or more"
                             % (warmup,))
        if not isinstance(micro_batches, int) or micro_batches < 1:
            raise ValueError("micro_batches=%r: forward+backward passes per optimizer step, "
                             "1 or more" % (micro_batches,))
        if timer not in ("auto", "cuda", "wall"):
            raise ValueError("timer=%r: 'auto', 'cuda' or 'wall'" % (timer,))
        for name, v in (("tokens_per_step", tokens_per_step),
                        ("samples_per_step", samples_per_step)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ValueError("%s=%r: a whole number per optimizer step" % (name, v))

        self.model = _unwrap(model)
        self._model_name = type(self.model).__name__   # before fully_shard renames the class
        self.warmup = warmup
        self.micro_batches = micro_batches
        self.group = group

        first = next((p for p in self.model.parameters()), None)
        if first is None:
            ts = _tensors(args, kwargs)
            first = ts[0] if ts else None
        on_cuda = first is not None and first.device.type == "cuda"
        if timer == "cuda" or (timer == "auto" and on_cuda):
            if not torch.cuda.is_available():
                raise ValueError("timer='cuda' needs a GPU; torch.cuda.is_available() is False")
            self._cuda_device = first.device if on_cuda else torch.device("cuda")
            self._timer_factory = lambda: _CudaTimer(self._cuda_device)
        else:
            self._timer_factory = _WallTimer

        # The peak first: a bad device name or peak fails before the (slower) count.
        self.peak = _resolve_peak(self.model, device, peak, precision, on_cuda)

        if report is None:
            report = _count(self.model, args, kwargs, _optimizer_name(optimizer), loss, dtype)
        self._count = _report_dict(report)
        recompute, hw_note = _recompute_flops(report)
        s, t = _infer_batch(args, kwargs)
        self.samples_per_step = samples_per_step if samples_per_step is not None else (
            s * micro_batches if s is not None else None)
        self.tokens_per_step = tokens_per_step if tokens_per_step is not None else (
            t * micro_batches if t is not None else None)

        tot = self._count["totals"]
        fwd = int(tot["fwd"]["flops"])
        bwd = int(tot["bwd_data"]["flops"]) + int(tot["bwd_weight"]["flops"])
        opt = int(tot["optimizer"]["flops"])
        hw = fwd + bwd + recompute
        m = micro_batches
        self.flops_per_step = {
            "model": (fwd + bwd) * m, "hardware": hw * m, "forward": fwd * m,
            "backward": bwd * m, "optimizer": opt, "theory": 3 * fwd * m}
        self._hardware_note = hw_note
        self._lower_bound = bool(tot.get("lower_bound", False))
        from .distributed import tensor_parallel_size
        self.tensor_parallel = tensor_parallel_size(self.model)

        self._times: List[float] = []
        self._dropped = 0
        self._profile: Optional["Profile"] = None
        self.last_profile: Optional["Profile"] = None
        self._timer = self._timer_factory()

    # -- the loop ---------------------------------------------------------------------------

    def step(self) -> None:
        """Marks the end of a training step (call it after ``optimizer.step()``).

        On the CPU this reads ``perf_counter``; on a GPU it records a CUDA event and never
        waits for the GPU. The first ``warmup`` steps are dropped. The first step is timed
        from the Meter's construction (or ``reset()``).
        """
        if self._profile is not None:
            self._profile._on_step()
            return
        for dt in self._timer.mark():
            self._add(dt)

    def _add(self, dt: float) -> None:
        if self._dropped < self.warmup:
            self._dropped += 1
        else:
            self._times.append(dt)

    def reset(self, warmup: Optional[int] = None) -> None:
        """Forgets the timed steps and starts timing from now (call just before the loop when
        much happens between the Meter's construction and the first step)."""
        if warmup is not None:
            if not isinstance(warmup, int) or warmup < 0:
                raise ValueError("warmup=%r: 0 or more" % (warmup,))
            self.warmup = warmup
        self._times.clear()
        self._dropped = 0
        self._timer.restart()

    @property
    def step_times(self) -> List[float]:
        """The timed steps' durations in seconds, in order (warm-up dropped)."""
        for dt in self._timer.flush():
            self._add(dt)
        return list(self._times)

    # -- results ----------------------------------------------------------------------------

    def local_summary(self) -> Dict[str, Any]:
        """This process's figures (no gathering); ``summary()`` without a process group."""
        times = self.step_times
        st = _step_stats(times)
        med = st["median"] if st else None
        f = self.flops_per_step
        peak = self.peak["flops"]

        def util(flops: int) -> Optional[float]:
            return _div(_div(flops, med), peak)

        methods = {
            "counted": {"step_flops": f["model"], "step_utilization": util(f["model"])},
            "theory": {"step_flops": f["theory"], "step_utilization": util(f["theory"])},
            "counted+optimizer": {"step_flops": f["model"] + f["optimizer"],
                                  "step_utilization": util(f["model"] + f["optimizer"])},
        }
        return {
            "flopmeter": _version(),
            "model": self._model_name,
            "timer": self._timer.kind,
            "warmup": self.warmup,
            "steps": len(times),
            "step_s": st,
            "micro_batches": self.micro_batches,
            "tensor_parallel": self.tensor_parallel,
            "samples_per_step": self.samples_per_step,
            "tokens_per_step": self.tokens_per_step,
            "samples_per_s": _div(self.samples_per_step, med),
            "tokens_per_s": _div(self.tokens_per_step, med),
            "flops_per_step": dict(f),
            "hardware_flops_source": self._hardware_note,
            "achieved_flops": {"model": _div(f["model"], med),
                               "hardware": _div(f["hardware"], med)},
            "peak": {k: self.peak[k] for k in ("flops", "source", "device", "precision")},
            "mfu": util(f["model"]),
            "hfu": util(f["hardware"]),
            "methods": methods,
            "lower_bound": self._lower_bound,
            "convention": _CONVENTION,
        }

    def summary(self, gather: Optional[bool] = None) -> Dict[str, Any]:
        """The meter's figures as a JSON-serializable dict.

        Keys: ``step_s`` (``median``, ``p90``, ``mean``, ``min``, ``max``; None before any
        timed step), ``samples_per_s``, ``tokens_per_s``, ``mfu``, ``hfu``, ``flops_per_step``
        (``model``: forward + backward without recomputation; ``hardware``: with it;
        ``forward``, ``backward``, ``optimizer``, ``theory`` = 3 x forward), ``peak``
        (``flops``, ``source``), and ``methods``: Epoch AI's (Hobbhahn 2022) ``counted``,
        ``theory`` and ``counted+optimizer``, each ``step_flops`` and ``step_utilization``.

        Under ``torch.distributed`` (``gather`` defaults to True when a process group is
        initialized) this is a collective, so every rank must call it: the top-level figures
        are then the job's, and ``world_size``, ``rank``, ``ranks`` (one entry per rank) and
        ``slowest_rank`` are added (``flopmeter.distributed``).
        """
        from . import distributed
        local = self.local_summary()
        if gather is None:
            gather = distributed.is_distributed(self.group)
        if not gather:
            return local
        return distributed.gather_summary(local, self.group)

    def print_summary(self, file: Any = None, gather: Optional[bool] = None,
                      rank: int = 0) -> Dict[str, Any]:
        """Gathers (a collective, under torch.distributed) and prints the summary once, on
        ``rank``; returns the summary on every rank."""
        from . import distributed
        s = self.summary(gather=gather)
        if s.get("rank", 0) == rank:
            print(distributed.format_summary(s), file=file or sys.stdout, flush=True)
        return s

    def profile(self, steps: int = 3, *, record_shapes: bool = False) -> "Profile":
        """Runs ``torch.profiler`` over the next ``steps`` steps (each ended by ``step()``) and
        joins its ops to the counted layers by module path: per module, time, achieved FLOP/s,
        utilization, roofline position and where the step's time goes. The profiled steps
        are not among the timed ones (the profiler slows them).

        Example::

            prof = meter.profile(steps=3)      # or: with meter.profile(steps=3) as prof: ...
            for x, y in loader:
                ...; meter.step()              # the 3rd step after this stops the profiler
            print(prof.table())
        """
        if not isinstance(steps, int) or steps < 1:
            raise ValueError("steps=%r: the number of steps to profile, 1 or more" % (steps,))
        if self._profile is not None:
            raise RuntimeError("a profile is already running (it ends after %d steps)"
                               % self._profile.steps)
        self._profile = Profile(self, steps, record_shapes)
        return self._profile

    def _profile_ended(self, prof: "Profile") -> None:
        self._profile = None
        self.last_profile = prof
        self._timer.restart()

    def __repr__(self) -> str:
        return ("Meter(%s, steps=%d, flops_per_step=%d, peak=%s)"
                % (type(self.model).__name__, len(self._times), self.flops_per_step["model"],
                   self.peak["flops"]))


# ---------------------------------------------------------------------------------------------
# profile: torch.profiler joined to the count by module path

_RANGE = "flopmeter::"
_BWD = "autograd::engine::evaluate_function: "


def _module_of(layer_name: str, paths: Any) -> Optional[str]:
    """The module a counted layer belongs to: the longest module path it names, or None.

    A PyTorch 2 layer is named by its module path ("layers.0.attn.q_proj") and, where the
    module holds several ops, the op after a slash ("layers.0.attn/Softmax_2"; "/Add" for an op
    of the model's own forward). A name that holds no module path (a loss flopmeter added, an
    ONNX node name) belongs to no module.
    """
    head = layer_name.split("/", 1)[0]
    if head in paths:
        return head
    parts = head.split(".")
    for k in range(len(parts) - 1, 0, -1):
        cand = ".".join(parts[:k])
        if cand in paths:
            return cand
    return None


def _op_classifier() -> Any:
    """name -> op class of a profiler event, by the library's rule (fm_trace_op_class: the
    classes `flopmeter trace` sums time by); "other" when the library cannot be asked."""
    import ctypes
    try:
        from ._lib import lib
        d = lib.dll
        d.fm_trace_op_class.restype, d.fm_trace_op_class.argtypes = ctypes.c_int, [
            ctypes.c_char_p]
        d.fm_trace_class_name.restype, d.fm_trace_class_name.argtypes = ctypes.c_char_p, [
            ctypes.c_int]
    except Exception:
        return lambda name: "other"
    cache: Dict[str, str] = {}

    def classify(name: str) -> str:
        c = cache.get(name)
        if c is None:
            c = d.fm_trace_class_name(d.fm_trace_op_class(name.encode())).decode()
            cache[name] = c
        return c
    return classify


class Profile:
    """A profile of a few training steps, joined to the count by module path.

    Made by ``Meter.profile(steps)``; results (``to_dict()``, ``table()``) once ``done``.
    Time is the CPU time of each op (its GPU kernels' time when the model is on a GPU), summed
    over the ops that PyTorch ran for the module: forward ops run inside the module's
    ``forward`` (the innermost module owns them), backward ops through their autograd node's
    sequence number (the forward op that made the node). Ops that neither places in a module
    (a loss outside the model, AccumulateGrad, anything run between the steps) are reported
    as such, never spread over modules.
    """

    def __init__(self, meter: Meter, steps: int, record_shapes: bool) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile
        self.steps = steps
        self.done = False
        self._meter = meter
        self._stepped = 0
        self._times: List[float] = []
        self._result: Optional[Dict[str, Any]] = None
        self._gpu = isinstance(meter._timer, _CudaTimer)
        self._stack: List[Any] = []
        self._hooks: List[Any] = []
        self._paths: Dict[str, str] = {}
        enter = torch.ops.profiler._record_function_enter_new
        leave = torch.ops.profiler._record_function_exit

        names: Dict[int, str] = {}   # id(module) -> range name; the modules are not touched

        def pre(mod: Any, _inp: Any) -> None:
            self._stack.append(enter(names[id(mod)], None))

        def post(mod: Any, _inp: Any, _out: Any) -> None:
            if self._stack:
                leave(self._stack.pop())

        self._types: Dict[str, str] = {}
        for path, mod in meter.model.named_modules():
            names[id(mod)] = _RANGE + path
            self._paths[path] = path
            self._types[path] = type(mod).__name__
            self._hooks.append(mod.register_forward_pre_hook(pre))
            self._hooks.append(mod.register_forward_hook(post, always_call=True))
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self._gpu else [])
        self._prof = profile(activities=acts, record_shapes=record_shapes)
        self._prof.__enter__()
        self._timer = meter._timer_factory()

    # called by Meter.step()
    def _on_step(self) -> None:
        self._times.extend(self._timer.mark())
        self._stepped += 1
        if self._stepped >= self.steps:
            self.stop()

    def stop(self) -> None:
        """Ends the profile now (after fewer steps than asked, if the loop ended early)."""
        if self.done:
            return
        self._times.extend(self._timer.flush())
        self._prof.__exit__(None, None, None)
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        self.done = True
        try:
            self._result = self._analyze()
        finally:
            self._meter._profile_ended(self)

    def __enter__(self) -> "Profile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- analysis ---------------------------------------------------------------------------

    def _analyze(self) -> Dict[str, Any]:
        events = self._prof.events()
        gpu = self._gpu

        def dur(e: Any) -> float:
            if gpu:  # device_time_total since PyTorch 2.4; cuda_time_total before
                t = getattr(e, "device_time_total", None)
                return (t if t is not None else e.cuda_time_total) / 1e6  # us -> s
            return e.cpu_time_total / 1e6

        def is_op(e: Any) -> bool:
            # record_function ranges (ours, the optimizer's, the user's) are not ops; older
            # PyTorch has no is_user_annotation, so the known ones go by name too
            return not getattr(e, "is_user_annotation", False) and not e.name.startswith(
                (_RANGE, "Optimizer.", "ProfilerStep#"))

        def ancestors(e: Any) -> Iterable[Any]:
            p = e.cpu_parent
            while p is not None:
                yield p
                p = p.cpu_parent

        def innermost_module(e: Any) -> Optional[str]:
            for a in ancestors(e):
                if a.name.startswith(_RANGE):
                    return a.name[len(_RANGE):]
            return None

        # forward op (thread, sequence number) -> module: the backward node it made is its.
        seq_module: Dict[Tuple[int, int], str] = {}
        for e in events:
            if e.sequence_nr is None or e.sequence_nr < 0 or not is_op(e) \
                    or e.name.startswith(_BWD):
                continue
            if any(a.name.startswith(_BWD) for a in ancestors(e)):
                continue
            m = innermost_module(e)
            if m is not None:
                seq_module.setdefault((e.thread, e.sequence_nr), m)

        fwd_s: Dict[str, float] = collections.defaultdict(float)
        bwd_s: Dict[str, float] = collections.defaultdict(float)
        buckets = {"optimizer": 0.0, "accumulate_grad": 0.0, "unattributed_fwd": 0.0,
                   "unattributed_bwd": 0.0, "unattributed_other": 0.0}
        unattributed_ops: Dict[str, float] = collections.defaultdict(float)
        by_class: Dict[str, float] = collections.defaultdict(float)
        op_class = _op_classifier()
        for e in events:
            if not is_op(e) or any(is_op(a) for a in ancestors(e)):
                continue  # only the outermost ops: a nested op's time is in its parent's
            d = dur(e)
            names = [a.name for a in ancestors(e)]
            if any(n.startswith("Optimizer.") for n in names):
                by_class["optimizer"] += d
            else:
                by_class[op_class(e.name[len(_BWD):] if e.name.startswith(_BWD)
                                  else e.name)] += d
            if e.name.startswith(_BWD):
                if "AccumulateGrad" in e.name:
                    buckets["accumulate_grad"] += d
                    continue
                m = seq_module.get((e.fwd_thread, e.sequence_nr))
                if m is not None:
                    bwd_s[m] += d
                else:
                    buckets["unattributed_bwd"] += d
                    unattributed_ops[e.name[len(_BWD):]] += d
            elif any(n.startswith("Optimizer.") for n in names):
                buckets["optimizer"] += d
            else:
                m = innermost_module(e)
                if m is not None:
                    fwd_s[m] += d
                else:
                    buckets["unattributed_other"] += d
                    unattributed_ops[e.name] += d

        meter = self._meter
        steps = max(self._stepped, 1)
        peak = meter.peak["flops"]
        bw = meter.peak.get("bandwidth_bytes_per_s")
        mb = meter.micro_batches

        # counted layers -> module
        paths = self._paths
        layer_flops: Dict[str, int] = collections.defaultdict(int)
        layer_bytes: Dict[str, int] = collections.defaultdict(int)
        layer_n: Dict[str, int] = collections.defaultdict(int)
        unjoined: List[str] = []
        unjoined_flops = 0
        for layer in meter._count.get("layers", []):
            fl = sum(int(layer[ph]["flops"]) for ph in ("fwd", "bwd_data", "bwd_weight"))
            by = sum(int(layer[ph]["bytes_read"]) + int(layer[ph]["bytes_written"])
                     for ph in ("fwd", "bwd_data", "bwd_weight"))
            m = _module_of(layer["name"], paths)
            if m is None:
                unjoined.append(layer["name"])
                unjoined_flops += fl * mb
                continue
            layer_flops[m] += fl * mb
            layer_bytes[m] += by * mb
            layer_n[m] += 1

        step_time = (sum(self._times) / len(self._times)) if self._times else None
        modules = []
        for m in sorted(set(fwd_s) | set(bwd_s) | set(layer_flops),
                        key=lambda k: -(fwd_s.get(k, 0.0) + bwd_s.get(k, 0.0))):
            t = (fwd_s.get(m, 0.0) + bwd_s.get(m, 0.0)) / steps
            fl = layer_flops.get(m, 0)
            by = layer_bytes.get(m, 0)
            achieved = _div(fl, t) if fl else None
            row: Dict[str, Any] = {
                "module": m, "type": self._types.get(m, ""),
                "layers": layer_n.get(m, 0),
                "fwd_s": fwd_s.get(m, 0.0) / steps, "bwd_s": bwd_s.get(m, 0.0) / steps,
                "time_s": t, "share": _div(t, step_time),
                "flops": fl, "bytes": by,
                "achieved_flops": achieved,
                "utilization": _div(achieved, peak),
                "intensity": _div(fl, by) if by else None,
            }
            if bw and peak and by and fl:
                inten = fl / by
                attainable = min(peak, bw * inten)
                row["bound"] = "compute" if bw * inten >= peak else "memory"
                row["attainable_flops"] = attainable
                row["roofline_utilization"] = _div(achieved, attainable)
            else:
                row["bound"] = None
                row["attainable_flops"] = None
                row["roofline_utilization"] = None
            modules.append(row)

        per = {k: v / steps for k, v in buckets.items()}
        mod_total = sum(r["time_s"] for r in modules)
        ops_total = mod_total + sum(per.values())
        where = {
            "step_s": step_time,
            "modules_s": mod_total,
            "modules_fwd_s": sum(r["fwd_s"] for r in modules),
            "modules_bwd_s": sum(r["bwd_s"] for r in modules),
            "optimizer_s": per["optimizer"],
            "accumulate_grad_s": per["accumulate_grad"],
            "unattributed_s": per["unattributed_bwd"] + per["unattributed_other"],
            # every outermost op by flopmeter's op class (the classes `flopmeter trace` uses)
            "by_class": {k: v / steps for k, v in sorted(by_class.items(),
                                                         key=lambda kv: -kv[1])},
            # what the step spends outside PyTorch's ops: Python, the data loader, and (on a
            # GPU) time the GPU waits for work; may be negative on a CPU with intra-op threads
            "outside_ops_s": (step_time - ops_total) if step_time is not None else None,
        }
        top_unattributed = sorted(unattributed_ops.items(), key=lambda kv: -kv[1])[:10]
        return {
            "steps": self._stepped,
            "time_basis": "GPU kernel time" if gpu else "CPU time of the outermost ops",
            "peak": {k: meter.peak[k] for k in ("flops", "source", "device", "precision")},
            "bandwidth_bytes_per_s": bw,
            "where": where,
            "modules": modules,
            "optimizer": {"time_s": per["optimizer"],
                          "flops": meter.flops_per_step["optimizer"]},
            "unattributed": {"time_s": where["unattributed_s"],
                             "ops": [{"name": n, "time_s": t / steps}
                                     for n, t in top_unattributed],
                             "layers": unjoined, "flops": unjoined_flops},
        }

    def to_dict(self) -> Dict[str, Any]:
        """The profile as a JSON-serializable dict (after the profiled steps)."""
        if not self.done:
            raise RuntimeError("the profile runs until %d steps have ended (meter.step()); "
                               "%d so far: call prof.stop() to end it now"
                               % (self.steps, self._stepped))
        assert self._result is not None
        return self._result

    def table(self, top: int = 20) -> str:
        """The per-module table, largest time first, and where the step's time goes."""
        from .distributed import _ms, _pct, _si
        d = self.to_dict()
        w = d["where"]
        lines = ["flopmeter profile: %d steps, %s; step %s ms; peak %s" % (
            d["steps"], d["time_basis"], _ms(w["step_s"]), _si(d["peak"]["flops"], "FLOP/s"))]
        row = "%-40s %-16s %9s %9s %7s %11s %14s %8s %8s"
        lines.append(row % ("module", "type", "fwd ms", "bwd ms", "share", "work",
                            "achieved", "util", "bound"))
        for r in d["modules"][:top]:
            name = r["module"] or "(model)"
            lines.append(row % (
                name if len(name) <= 40 else "..." + name[-37:], r["type"][:16],
                _ms(r["fwd_s"]), _ms(r["bwd_s"]), _pct(r["share"]),
                _si(r["flops"], "FLOP") if r["flops"] else "-",
                _si(r["achieved_flops"], "FLOP/s"), _pct(r["utilization"]),
                r["bound"] or "-"))
        if len(d["modules"]) > top:
            lines.append("... %d more modules (to_dict() has them all)"
                         % (len(d["modules"]) - top))
        lines.append("where the step goes (ms): modules %s (forward %s, backward %s), "
                     "optimizer %s, AccumulateGrad %s, unattributed ops %s, outside ops %s" % (
                         _ms(w["modules_s"]), _ms(w["modules_fwd_s"]), _ms(w["modules_bwd_s"]),
                         _ms(w["optimizer_s"]), _ms(w["accumulate_grad_s"]),
                         _ms(w["unattributed_s"]), _ms(w["outside_ops_s"])))
        lines.append("by op class (ms): " + ", ".join(
            "%s %s" % (k, _ms(v)) for k, v in w["by_class"].items()))
        un = d["unattributed"]
        if un["ops"]:
            lines.append("unattributed ops (in no module's forward or backward): " + ", ".join(
                "%s %s ms" % (o["name"], _ms(o["time_s"])) for o in un["ops"][:5]))
        if un["layers"]:
            lines.append("counted layers in no module: %s (%s)" % (
                ", ".join(un["layers"][:5]) + (" ..." if len(un["layers"]) > 5 else ""),
                _si(un["flops"], "FLOP")))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table() if self.done else "Profile(%d of %d steps)" % (self._stepped,
                                                                            self.steps)
