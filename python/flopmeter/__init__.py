"""flopmeter for PyTorch: the FLOPs, MACs, bytes, parameters and memory of a training step of a
torch.nn.Module, its place on a device's roofline and its predicted time, from the flopmeter C
library (libflopmeter, bundled with the package).

    import flopmeter, torch, torchvision
    model = torchvision.models.resnet18()
    report = flopmeter.count(model, torch.randn(8, 3, 224, 224))
    print(report)                      # the table `flopmeter count` prints
    report.to_dict()["totals"]         # the keys of `flopmeter count --format json`
    flopmeter.predict(model, torch.randn(8, 3, 224, 224), device="h100")

The module is captured in memory in training mode (torch.export, then PyTorch's exporter's
translation to ONNX: the exporter's model, made without its second trace of the program) and
counted by the library; a built-in model name ("resnet50") or an .onnx file
works too. docs/python.md says what capture keeps and loses.
"""

import ctypes
import math
import os

from ._lib import FlopmeterError, SessionOpts, TASKS, MODE_INFER, MODE_TRAIN
from ._lib import lib, parse_enum, run_session, _b
from ._capture import Capture, CaptureError, capture_module
from .report import Report
from .meter import Meter

__version__ = "0.1.0"
__all__ = ["count", "roofline", "predict", "utilization", "capture", "Capture", "Report",
           "FlopmeterError", "CaptureError", "check_peak", "__version__"]


def check_peak(peak):
    """A peak in FLOP/s, checked: a number (312e12) or a string the CLI takes ("312T",
    "312TFLOP/s"). A figure no device has (below 1 GFLOP/s: 312 meant 312e12; above 1e17 per
    device) is refused with what to give instead."""
    if isinstance(peak, str):
        out = ctypes.c_double()
        if not lib.fm_flops_parse(peak.encode(), ctypes.byref(out)):
            raise FlopmeterError("peak=%r is not a FLOP/s figure: give a number in FLOP/s "
                                 "(312e12) or a string such as '312T' or '312TFLOP/s'" % peak)
        value = out.value
    else:
        try:
            value = float(peak)
        except (TypeError, ValueError):
            raise FlopmeterError("peak=%r is not a number: give FLOP/s, e.g. peak=312e12"
                                 % (peak,)) from None
    if not math.isfinite(value) or value <= 0:
        raise FlopmeterError("peak=%r: give a positive FLOP/s figure, e.g. peak=312e12" % (peak,))
    if value < 1e9:
        guess = "%ge12" % value if value >= 1 else "%g" % value
        raise FlopmeterError(
            "peak=%r FLOP/s is below any device flopmeter would quote (under 1 GFLOP/s): the "
            "peak is in FLOP/s, not TFLOP/s; for %g TFLOP/s give peak=%s (or peak='%gT')"
            % (peak, value, guess, value))
    if value > 1e17:
        raise FlopmeterError(
            "peak=%r FLOP/s is more than any one device has (over 100 PFLOP/s): give the peak "
            "of one device, in FLOP/s (e.g. 989e12 for an H100's dense BF16)" % (peak,))
    return value


class _Keep:
    """Python objects a SessionOpts points into, alive until the session has run."""

    def __init__(self):
        self.items = []

    def bytes(self, s):
        if s is None:
            return None
        b = s.encode() if isinstance(s, str) else bytes(s)
        self.items.append(b)
        return b


def _model_opts(task, model, args, kwargs, o, keep, *, train, loss, batch, input, classes):
    """Fills the model part of o: a built-in name or a file (the library loads it), ONNX bytes,
    or a torch.nn.Module captured to ONNX bytes. Returns the capture's timings (or None)."""
    timings = None
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if isinstance(model, str):
        if args is not None or kwargs is not None:
            raise FlopmeterError("args and kwargs go with a torch.nn.Module; a built-in model "
                                 "name or an .onnx file takes batch=, input= and classes=")
        o.model = keep.bytes(model)
    else:
        frozen = []
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
            name = "model"
        else:
            if isinstance(model, Capture):
                cap = model
                if args is not None or kwargs is not None:
                    raise FlopmeterError("a Capture holds its inputs already: give no args")
                if cap.train != train:
                    raise FlopmeterError(
                        "this Capture is of %s mode; capture again with train=%s"
                        % ("training" if cap.train else "eval", train))
            else:
                if args is None:
                    raise FlopmeterError("counting a torch.nn.Module needs its inputs: "
                                         "flopmeter.%s(model, args) with args a tensor or a "
                                         "tuple of the forward's arguments (kwargs: a dict)"
                                         % task)
                if input is not None or classes is not None:
                    raise FlopmeterError("input= and classes= shape a built-in model; a "
                                         "module's inputs are args and kwargs")
                cap = capture_module(model, args, kwargs, train=train)
            data, frozen, name, timings = cap.data, cap.frozen, cap.name, cap.timings
            if frozen:
                names = [keep.bytes(n) for n in frozen]
                arr = (ctypes.c_char_p * len(names))(*names)
                keep.items.append(arr)
                o.frozen = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
                o.n_frozen = len(names)
        o.model = keep.bytes(name)
        buf = ctypes.c_char_p(data)
        keep.items.append((data, buf))
        o.model_data = ctypes.cast(buf, ctypes.c_void_p)
        o.model_size = len(data)
    if batch is not None:
        if not isinstance(batch, int) or isinstance(batch, bool) or batch <= 0:
            raise FlopmeterError("batch=%r: give a positive integer" % (batch,))
        if not isinstance(model, str):
            raise FlopmeterError("batch= goes with a built-in model name or an .onnx file; a "
                                 "module's batch is its inputs'")
        o.load.zoo.batch = batch
        o.load.batch_given = True
    if input is not None:
        text = "x".join(str(int(d)) for d in input) if isinstance(input, (tuple, list)) \
            else str(input)
        with _CtxOnce() as ctx:
            st = lib.fm_shape_parse(ctx, text.encode(), ctypes.byref(o.load.zoo.input))
            if st:
                raise FlopmeterError("input=%r: %s" % (input, lib.fm_ctx_error(ctx).decode()))
    if classes is not None:
        o.load.zoo.classes = int(classes)
    if loss is not None:
        if not isinstance(loss, str):
            raise FlopmeterError("loss=%r: give the name of the output the loss goes on (None: "
                                 "the loss policy's choice)" % (loss,))
        o.loss_on = keep.bytes(loss)
    return timings


class _CtxOnce:
    def __enter__(self):
        self.p = ctypes.c_void_p()
        if lib.fm_ctx_new(None, ctypes.byref(self.p)):
            raise MemoryError("flopmeter: out of memory")
        return self.p

    def __exit__(self, *exc):
        lib.fm_ctx_free(self.p)


def _session(task, model, args, kwargs, *, train=True, optimizer="sgd", loss=None, dtype=None,
             device=None, precision=None, peak=None, batch=None, input=None, classes=None,
             devices_file=None, dataset_size=None, epochs=None, gpus=None, interconnect=None,
             step_time=None, summary=False):
    o = SessionOpts()
    lib.fm_session_opts_init(ctypes.byref(o), TASKS[task])
    keep = _Keep()
    if not isinstance(train, bool):
        raise FlopmeterError("train=%r: True (a training step) or False (inference)" % (train,))
    o.count.mode = MODE_TRAIN if train else MODE_INFER
    if optimizer is not None:
        o.count.optimizer = parse_enum("fm_optimizer_parse", optimizer, "optimizer",
                                       ("sgd", "adam", "none"))
    if dtype is not None:
        o.load.zoo.dtype = parse_enum("fm_dtype_parse", _dtype_name(dtype), "dtype",
                                      ("fp32", "fp16", "bf16", "fp64", "fp8"))
        o.load.dtype_given = True
    if precision is not None:
        p = ctypes.c_int()
        td = ctypes.c_bool()
        if not lib.fm_precision_parse_policy(_b(_dtype_name(precision)), ctypes.byref(p),
                                             ctypes.byref(td)):
            raise FlopmeterError("precision=%r is not one flopmeter knows: give fp64, fp32, "
                                 "tf32, fp16, bf16, fp8, int8 or torch-default" % (precision,))
        o.precision, o.torch_default, o.precision_given = p.value, td.value, True
    if device is not None:
        if not isinstance(device, str):
            raise FlopmeterError("device=%r: give a device's name as a string (h100, a100, "
                                 "'NVIDIA A100-SXM4-80GB', cpu); flopmeter devices lists them"
                                 % (device,))
        o.device = keep.bytes(device)
    if devices_file is not None:
        o.devices_file = keep.bytes(os.fspath(devices_file))
    if peak is not None:
        o.peak = check_peak(peak)
    if dataset_size is not None:
        o.dataset_size = int(dataset_size)
    if epochs is not None:
        o.epochs = float(epochs)
    if gpus is not None:
        o.gpus = int(gpus)
    if interconnect is not None:
        o.interconnect = keep.bytes(interconnect)
    if step_time is not None:
        o.step_s = float(step_time)
    timings = _model_opts(task, model, args, kwargs, o, keep, train=train, loss=loss,
                          batch=batch, input=input, classes=classes)
    texts = run_session(o, formats=("json", "table"), report_opts={"summary": bool(summary)})
    return Report(task, texts["json"], texts["table"], capture=timings)


def _dtype_name(d):
    """torch.float16 -> "float16" (the library's parser takes it), strings as they are."""
    s = str(d)
    return s[len("torch."):] if s.startswith("torch.") else s


def count(model, args=None, kwargs=None, *, train=True, optimizer="sgd", loss=None, dtype=None,
          device=None, precision=None, batch=None, input=None, classes=None):
    """The work of one training step (train=False: one inference step) of model: FLOPs, MACs,
    bytes, parameters and memory, per layer and in total, as `flopmeter count` reports them.

    model: a torch.nn.Module (run as model(*args, **kwargs) and captured by PyTorch's
    exporter), a built-in model name ("resnet50"; batch=, input="3x224x224", classes=) or an
    .onnx file, or the bytes of an ONNX model. optimizer: "sgd" (with momentum), "adam" or
    "none". loss: the output the step's loss goes on (None: the library's policy). dtype:
    store every float tensor in it (torch.float16, "bf16"). device: also check the step's
    memory against the device's. Returns a Report."""
    return _session("count", model, args, kwargs, train=train, optimizer=optimizer, loss=loss,
                    dtype=dtype, device=device, precision=precision, batch=batch, input=input,
                    classes=classes)


def capture(model, args, kwargs=None, *, train=True):
    """Captures model(*args, **kwargs) once (PyTorch's exporter, in memory) for later calls:
    count, roofline, predict and utilization take the returned Capture in place of the module
    and do not capture again."""
    return capture_module(model, args, kwargs, train=train)


def utilization(model, args=None, kwargs=None, *, step_time, device="h100", peak=None,
                train=True, optimizer="sgd", loss=None, dtype=None, precision=None, batch=None,
                input=None, classes=None, devices_file=None, dataset_size=None):
    """Utilization of a step that took step_time seconds on device (or against peak FLOP/s),
    by the methods of Epoch AI's utilization study, as `flopmeter utilization` reports it.
    Returns a Report."""
    if not isinstance(step_time, (int, float)) or isinstance(step_time, bool) or \
            not math.isfinite(step_time) or step_time <= 0:
        raise FlopmeterError("step_time=%r: give the measured step in seconds (0.25 for 250 ms)"
                             % (step_time,))
    return _session("utilization", model, args, kwargs, train=train, optimizer=optimizer,
                    loss=loss, dtype=dtype, device=device, precision=precision, peak=peak,
                    batch=batch, input=input, classes=classes, devices_file=devices_file,
                    dataset_size=dataset_size, step_time=step_time)


def roofline(model, args=None, kwargs=None, *, device="h100", train=True, optimizer="sgd",
             loss=None, dtype=None, precision=None, batch=None, input=None, classes=None,
             devices_file=None, summary=False):
    """The step placed on device's roofline (each layer and phase: compute or memory bound,
    time at the roofline), as `flopmeter roofline` reports it. Returns a Report."""
    return _session("roofline", model, args, kwargs, train=train, optimizer=optimizer, loss=loss,
                    dtype=dtype, device=device, precision=precision, batch=batch, input=input,
                    classes=classes, devices_file=devices_file, summary=summary)


def predict(model, args=None, kwargs=None, *, device="h100", train=True, optimizer="sgd",
            loss=None, dtype=None, precision=None, peak=None, batch=None, input=None,
            classes=None, devices_file=None, dataset_size=None, epochs=None, gpus=None,
            interconnect=None, summary=False):
    """The predicted step time on device (and, with dataset_size, the epoch and the run; with
    gpus, data parallelism), as `flopmeter predict` reports it. peak: FLOP/s to quote
    utilization against instead of the device's (312e12, not 312). Returns a Report."""
    return _session("predict", model, args, kwargs, train=train, optimizer=optimizer, loss=loss,
                    dtype=dtype, device=device, precision=precision, peak=peak, batch=batch,
                    input=input, classes=classes, devices_file=devices_file,
                    dataset_size=dataset_size, epochs=epochs, gpus=gpus,
                    interconnect=interconnect, summary=summary)
