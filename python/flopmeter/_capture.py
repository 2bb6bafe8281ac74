"""Capture: a torch.nn.Module and its inputs, as PyTorch runs them, to an ONNX model in memory.

PyTorch's ONNX exporter with dynamo=True traces the module with torch.export (the graph the
module runs for these inputs: Python control flow resolved, every aten op recorded with its
shapes) and translates the ATen graph to ONNX. In training mode the graph is the training one:
BatchNorm normalizes with the batch's statistics and updates its running ones, Dropout draws its
mask. optimize=False keeps the graph as traced (the optimizer would fold constants and fuse).
The result stays in memory: the model's bytes go to the C library (fm_session_opts.model_data),
never to a file.

What it does not do: count anything (the library counts the ONNX graph by its rules), run the
model (torch.export traces with fake tensors), or keep the weights' values: an initializer
larger than the library ever reads values of (65536 elements) is handed over as a reference
to external data, which counting never opens (only its shape and type matter).
"""

import contextlib
import logging
import re
import time
import warnings

from ._lib import FlopmeterError

# the largest initializer whose values the ONNX frontend may read (OX_FOLD_MAX): constants of
# shapes and indices are that small; weights beyond it are shapes only
_KEEP_VALUES_MAX = 65536


class CaptureError(FlopmeterError):
    """The module could not be captured by PyTorch's exporter (torch.export): the message says
    why and what to do."""

    def __init__(self, message):
        super().__init__(message, "capture")


def _torch():
    try:
        import torch
    except ImportError:
        raise FlopmeterError("counting a torch.nn.Module needs PyTorch: pip install torch (or "
                             "give a built-in model name or an .onnx file)", "not found") from None
    return torch


def _leaves(torch, obj, path, out):
    """Every tensor in args/kwargs, with where it is ("args[0]", "kwargs['x']")."""
    if isinstance(obj, torch.Tensor):
        out.append((path, obj))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _leaves(torch, v, "%s[%d]" % (path, i), out)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _leaves(torch, v, "%s[%r]" % (path, k), out)
    return out


def check_inputs(model, args, kwargs):
    """Refuses, with what to do, what the exporter would fail on obscurely or count wrong: a
    module that is not one, an input on another device than the module's parameters."""
    torch = _torch()
    if not isinstance(model, torch.nn.Module):
        raise FlopmeterError("flopmeter counts a torch.nn.Module, a built-in model name or an "
                             ".onnx file; got %s" % type(model).__name__)
    tensors = _leaves(torch, args, "args", []) + _leaves(torch, kwargs or {}, "kwargs", [])
    if not tensors:
        raise FlopmeterError("no tensor among the inputs: give the module's inputs as args (a "
                             "tensor or a tuple of them) and/or kwargs, e.g. "
                             "flopmeter.count(model, torch.randn(8, 3, 224, 224))")
    devices = {}
    for name, p in list(model.named_parameters()) + list(model.named_buffers()):
        devices.setdefault(p.device, name)
    if len(devices) > 1:
        listed = ", ".join("%s (%s)" % (d, n) for d, n in devices.items())
        raise FlopmeterError("the module's parameters are on several devices: %s; flopmeter "
                             "captures a module on one device: move it with model.to(device)"
                             % listed)
    if devices:
        mdev = next(iter(devices))
        for path, t in tensors:
            if t.device != mdev:
                raise FlopmeterError(
                    "input %s is on %s but the module's parameters are on %s: put them on one "
                    "device, e.g. inputs with x.to('%s') or the module with model.to('%s')"
                    % (path, t.device, mdev, mdev, t.device))


@contextlib.contextmanager
def _mode(model, train):
    """The module in training (or eval) mode for the capture, every submodule's mode restored
    after it."""
    saved = [(m, m.training) for m in model.modules()]
    model.train(train)
    try:
        yield
    finally:
        for m, t in saved:
            m.training = t


def _strip_weights(ir_model):
    """Weights as shapes: every initializer with more than _KEEP_VALUES_MAX elements, and every
    one on the meta device, becomes a reference to external data that is never read (its name,
    type and shape stay)."""
    from onnxscript import ir   # onnx_ir in onnxscript >= 0.3, its own copy before

    for value in ir_model.graph.initializers.values():
        t = value.const_value
        if t is None:
            continue
        # a module built on the meta device (too big to build for real) has no values at all
        raw = getattr(t, "raw", None)
        on_meta = getattr(getattr(raw, "device", None), "type", None) == "meta"
        if t.size <= _KEEP_VALUES_MAX and not on_meta:
            continue
        value.const_value = ir.ExternalTensor(
            "flopmeter-weights-not-kept", 0, t.nbytes, t.dtype, shape=t.shape,
            name=value.name or t.name)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _why(e):
    """The root cause of an exporter failure in one line: the exporter wraps torch.export's
    error (the one that says what in the module could not be traced) in its own."""
    root = e
    while root.__cause__ is not None and root.__cause__ is not root:
        root = root.__cause__
    lines = [ln.strip() for ln in _ANSI.sub("", str(root)).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    for ln in lines[1:]:
        if len(text) > 300:
            break
        text += " " + ln
    if len(text) > 400:
        text = text[:400] + "..."
    return "%s: %s" % (type(root).__name__, text) if text else type(root).__name__


@contextlib.contextmanager
def _hf_experts(model):
    """A transformers MoE model runs its experts through torch's grouped_mm by default, which
    PyTorch's exporter cannot translate (and an "eager" loop over the experts hit depends on
    the routing's values). For the capture its experts run as "batched_mm": each token's top-k
    experts' weights gathered and multiplied, the same MACs (tokens x k x each expert's), in ops
    ONNX has. The model's own setting is restored."""
    get = getattr(model, "get_experts_implementation", None)
    put = getattr(model, "set_experts_implementation", None)
    saved = None
    if get is not None and put is not None:
        try:
            saved = get()
            if any(v not in (None, "batched_mm") for v in saved.values()):
                put({k: "batched_mm" for k in saved})
            else:
                saved = None
        except Exception:   # a model that has no experts refuses the setting
            saved = None
    try:
        yield
    finally:
        if saved is not None:
            put(saved)


def _hf_kwargs(model, kwargs):
    """A HuggingFace model returns its key/value cache unless told not to: a training step keeps
    none (and torch.export cannot return a DynamicCache), so use_cache=False unless given."""
    import inspect

    cfg = getattr(model, "config", None)
    if cfg is None or not hasattr(cfg, "use_cache") or "use_cache" in kwargs:
        return kwargs
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return kwargs
    if "use_cache" in params:
        kwargs = dict(kwargs)
        kwargs["use_cache"] = False
    return kwargs


def _module_of(torch, fn):
    """The module a checkpointed function runs: the module itself, a bound method of one
    (layer.forward, layer.__call__), or either inside functools.partial (transformers'
    GradientCheckpointingLayer passes partial(forward, self, **kwargs)); None for a plain
    function."""
    import functools

    for _ in range(8):
        if isinstance(fn, torch.nn.Module):
            return fn
        if isinstance(fn, functools.partial):
            # transformers' layers checkpoint partial(forward, self, **kwargs)
            if fn.args and isinstance(fn.args[0], torch.nn.Module) and \
                    getattr(fn.func, "__self__", None) is None:
                return fn.args[0]
            fn = fn.func
            continue
        owner = getattr(fn, "__self__", None)
        return owner if isinstance(owner, torch.nn.Module) else None
    return None


@contextlib.contextmanager
def _checkpoints(torch, model, out):
    """Records, while the module is captured, each torch.utils.checkpoint call it makes: the
    module path of the function checkpointed (out["paths"]), or, for a function that is no
    module's, a count (out["unattributed"]). torch.export inlines a checkpointed region like
    any other code (no tag on its nodes), so the calls are seen where checkpoint hands the
    function to its reentrant (CheckpointFunction.apply) or non-reentrant implementation;
    both are looked up at call time, also by a checkpoint bound early (functools.partial)."""
    import torch.utils.checkpoint as cp

    names = {id(m): n for n, m in model.named_modules()}

    def note(fn):
        m = _module_of(torch, fn)
        if m is not None and id(m) in names:
            out["paths"].append(names[id(m)])
        else:
            out["unattributed"] += 1

    saved = {}
    impl = getattr(cp, "_checkpoint_without_reentrant_generator_impl", None)
    if callable(impl):
        def gen(fn, *a, **k):
            note(fn)
            return impl(fn, *a, **k)
        saved["_checkpoint_without_reentrant_generator_impl"] = impl
        cp._checkpoint_without_reentrant_generator_impl = gen
    reentrant = getattr(cp, "CheckpointFunction", None)
    if reentrant is not None:
        class _Recorded:
            # the forward alone, as the module's own call: torch.export records no module
            # path inside an autograd.Function, and the capture needs no backward of its own
            @staticmethod
            def apply(fn, preserve, *args):
                note(fn)
                return fn(*args)
        saved["CheckpointFunction"] = reentrant
        cp.CheckpointFunction = _Recorded
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(cp, k, v)


def _sdpa_scores_macs(prog):
    """The MACs of the score matrix Q K^T of every scaled_dot_product_attention call the module
    made (b x h_q x s_q x s_k x d), from the traced program's shapes: what FlashAttention's
    backward computes a second time (it keeps no score matrix)."""
    ep = getattr(prog, "exported_program", None)
    out = []
    if ep is None:
        return out
    for n in ep.graph.nodes:
        target = str(n.target)
        if n.op != "call_function" or "scaled_dot_product" not in target or "backward" in target:
            continue
        try:
            q = n.args[0].meta["val"].shape
            k = n.args[1].meta["val"].shape
            b = 1
            for dim in q[:-2]:
                b *= int(dim)
            out.append(b * int(q[-2]) * int(k[-2]) * int(q[-1]))
        except (KeyError, AttributeError, IndexError, TypeError):
            continue   # a shape torch left symbolic: not counted
    return out


class Capture:
    """A module captured once: its ONNX model in memory (data), the names of its frozen
    parameters, what capture took (timings: export_s, serialize_s, onnx_bytes, and the score
    MACs of its attention calls). count, roofline, predict and utilization take it in place of
    the module, so that a loop counts its model once (flopmeter.capture(model, args))."""

    def __init__(self, data, frozen, timings, name, train):
        self.data = data
        self.frozen = list(frozen)
        self.timings = dict(timings)
        self.name = name
        self.train = train

    def __repr__(self):
        return "<flopmeter.Capture of %s: %d bytes of ONNX, %s>" % (
            self.name, len(self.data), "training" if self.train else "inference")


def capture_module(model, args, kwargs=None, train=True, path=None):
    """flopmeter.capture: model(*args, **kwargs) captured in training (or eval) mode."""
    timings = {}
    data, frozen = capture(model, args, kwargs, train=train, timings=timings, path=path)
    return Capture(data, frozen, timings, type(model).__name__, train)


def _fast_export(model, args, kwargs, parts):
    """The fast capture (_fast.py): torch.export, the few ops the ONNX translation lacks
    rewritten in place, the exporter's translation. (program, None), or (None, why) when the
    graph has something it does not rewrite (then the exporter's full path runs: a debug
    note says why, and the capture's timings["fallback"])."""
    from . import _fast

    try:
        return _fast.export(model, args, kwargs, parts), None
    except Exception as e:   # Unsupported, or torch.export's own failure: the exporter decides
        why = "%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[0][:300])
        logging.getLogger("flopmeter").debug(
            "flopmeter: the fast capture of %s fell back to PyTorch's exporter (%s)",
            type(model).__name__, why)
        return None, why


def _exporter(torch, model, args, kwargs):
    """torch.onnx.export(dynamo=True) of the module, its failure a CaptureError."""
    try:
        return torch.onnx.export(model, args, kwargs=kwargs or None, dynamo=True,
                                 optimize=False, verbose=False, report=False)
    except Exception as e:  # the exporter raises many kinds; all mean "not captured"
        raise CaptureError(
            "flopmeter could not capture %s with PyTorch's exporter (torch.export, then "
            "ONNX): %s. Make its forward traceable by torch.export for these inputs (no "
            "Python branch on a tensor's value, no .item() or .tolist() feeding shapes, "
            "outputs of tensors, tuples, lists or dicts), or export an ONNX file yourself "
            "and count it: flopmeter.count('model.onnx')"
            % (type(model).__name__, _why(e))) from e


def capture(model, args, kwargs=None, train=True, timings=None, path=None):
    """The ONNX model (bytes) PyTorch's exporter makes of model(*args, **kwargs) in training
    (train=True) or eval mode, and the names of its frozen parameters (requires_grad=False).
    timings, a dict, gets the seconds of each part. path: "auto" (the fast capture, falling
    back to the exporter's full path) or "exporter" (torch.onnx.export alone); None: the
    environment's FLOPMETER_CAPTURE, else "auto"."""
    torch = _torch()
    if path is None:
        import os
        path = os.environ.get("FLOPMETER_CAPTURE") or "auto"
    if path not in ("auto", "exporter"):
        raise FlopmeterError("capture path %r (FLOPMETER_CAPTURE): 'auto' or 'exporter'"
                             % (path,))
    if isinstance(args, torch.Tensor) or isinstance(args, dict) or not isinstance(args, (tuple, list)):
        args = (args,)
    args = tuple(args)
    check_inputs(model, args, kwargs)
    kwargs = _hf_kwargs(model, dict(kwargs or {}))
    t0 = time.perf_counter()
    fallback = None
    ckpt = {"paths": [], "unattributed": 0}
    with _mode(model, train), _hf_experts(model), _checkpoints(torch, model, ckpt), \
            warnings.catch_warnings():
        # "Exporting a model while it is in training mode": that is the point here
        warnings.simplefilter("ignore")
        prog = None
        parts = {}
        if path == "auto":
            prog, fallback = _fast_export(model, args, kwargs, parts)
        if prog is None:
            prog = _exporter(torch, model, args, kwargs)
    t1 = time.perf_counter()
    # the exporter names a parameter's initializer by its module path ("layer1.0.conv1.weight")
    inits = set(prog.model.graph.initializers)
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad and n in inits]
    scores = _sdpa_scores_macs(prog)
    _strip_weights(prog.model)
    data = prog.model_proto.SerializeToString()
    t2 = time.perf_counter()
    if timings is not None:
        timings["export_s"] = t1 - t0
        timings["serialize_s"] = t2 - t1
        timings["onnx_bytes"] = len(data)
        timings["sdpa_scores_macs"] = scores
        # a region the fast path and the exporter's both traced is recorded twice: once each
        timings["checkpointed"] = sorted(set(ckpt["paths"]))
        timings["checkpoint_unattributed"] = ckpt["unattributed"]
        timings["path"] = "exporter" if path != "auto" or fallback else "fast"
        if fallback:
            timings["fallback"] = fallback
        else:
            timings.update(parts)
    return data, frozen
