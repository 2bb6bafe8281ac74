"""The C library through ctypes: where libflopmeter.so is, the structs of flopmeter.h that a
session needs, and one function that runs a session and renders its report.

Nothing here counts, predicts or formats: the library does, through its public API
(include/flopmeter.h). The structs mirror the header field for field; tests/python/test_layout.py
compiles the header and checks every offset and size, so a change to the header that this file
does not follow fails a test instead of writing the wrong field.
"""

import ctypes
import os
import shutil
import sys
import threading

__all__ = ["FlopmeterError", "lib", "library_path", "cli_path", "run_session", "TASKS"]


class FlopmeterError(ValueError):
    """An error of the C library (its message, and its status as .status), or bad input that
    flopmeter refuses before calling it. A ValueError: the input was wrong, not the program."""

    def __init__(self, message, status="invalid argument"):
        super().__init__(message)
        self.message = message
        self.status = status


_HERE = os.path.dirname(os.path.abspath(__file__))


def library_path():
    """Where libflopmeter.so is: $FLOPMETER_LIB, else the copy the wheel bundles."""
    env = os.environ.get("FLOPMETER_LIB")
    if env:
        return env
    for name in ("libflopmeter.so", "libflopmeter.dylib"):
        p = os.path.join(_HERE, "lib", name)
        if os.path.exists(p):
            return p
    raise FlopmeterError(
        "libflopmeter is not installed next to the flopmeter package (%s): install the package "
        "with `pip install .` from the repository, or point FLOPMETER_LIB at a built "
        "libflopmeter.so" % os.path.join(_HERE, "lib"), "not found")


def cli_path():
    """Where the flopmeter CLI is: $FLOPMETER_CLI, else the copy the wheel bundles, else the
    library's build directory (a build tree), else PATH."""
    env = os.environ.get("FLOPMETER_CLI")
    if env:
        return env
    p = os.path.join(_HERE, "bin", "flopmeter")
    if os.path.exists(p):
        return p
    libenv = os.environ.get("FLOPMETER_LIB")
    if libenv:
        p = os.path.join(os.path.dirname(libenv), "flopmeter")
        if os.path.exists(p):
            return p
    p = shutil.which("flopmeter")
    if p and os.path.realpath(p) != os.path.realpath(sys.argv[0] or ""):
        return p
    raise FlopmeterError("the flopmeter CLI is not installed next to the package: install it "
                         "with `pip install .` or set FLOPMETER_CLI", "not found")


# ---- the structs of flopmeter.h (mirrored; tests/python/test_layout.py checks them) ----

FM_MAX_DIMS = 8
_progress_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                ctypes.c_int)


class Shape(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int), ("dims", ctypes.c_int64 * FM_MAX_DIMS)]


class ZooOpts(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("input", Shape), ("classes", ctypes.c_int64),
                ("dtype", ctypes.c_int), ("with_loss", ctypes.c_bool)]


class LoadOpts(ctypes.Structure):
    _fields_ = [("zoo", ZooOpts), ("bindings", ctypes.c_void_p), ("n_bindings", ctypes.c_size_t),
                ("batch_given", ctypes.c_bool), ("dtype_given", ctypes.c_bool),
                ("values", ctypes.c_void_p), ("n_values", ctypes.c_size_t),
                ("model_data", ctypes.c_void_p), ("model_size", ctypes.c_size_t),
                ("config", ctypes.c_char_p), ("seq", ctypes.c_int64),
                ("decoder_seq", ctypes.c_int64), ("decode", ctypes.c_bool)]


class CountOpts(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("optimizer", ctypes.c_int)]


class PredictOpts(ctypes.Structure):
    _fields_ = [("device", ctypes.c_void_p), ("precision", ctypes.c_int),
                ("torch_default", ctypes.c_bool), ("ppp_compute", ctypes.c_double),
                ("ppp_memory", ctypes.c_double), ("launch_overhead_us", ctypes.c_double),
                ("ppp_comm", ctypes.c_double), ("calibration", ctypes.c_void_p)]


class MeasureOpts(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("mode", ctypes.c_int), ("precision", ctypes.c_int),
                ("warmup", ctypes.c_int), ("steps", ctypes.c_int), ("threads", ctypes.c_int),
                ("per_layer", ctypes.c_bool), ("channels_last", ctypes.c_bool),
                ("cuda_graph", ctypes.c_bool), ("seed", ctypes.c_uint64),
                ("lr", ctypes.c_double), ("momentum", ctypes.c_double),
                ("progress", _progress_fn), ("progress_user", ctypes.c_void_p),
                ("memory_limit", ctypes.c_double), ("cold_cache", ctypes.c_bool),
                ("flush_bytes", ctypes.c_double), ("flush_node", ctypes.c_char_p)]


class SessionOpts(ctypes.Structure):
    _fields_ = [("task", ctypes.c_int), ("model", ctypes.c_char_p), ("load", LoadOpts),
                ("count", CountOpts), ("loss_on", ctypes.c_char_p), ("device", ctypes.c_char_p),
                ("devices_file", ctypes.c_char_p), ("spec", ctypes.c_char_p),
                ("precision", ctypes.c_int), ("precision_given", ctypes.c_bool),
                ("torch_default", ctypes.c_bool), ("predict", PredictOpts),
                ("dataset_size", ctypes.c_uint64), ("epochs", ctypes.c_double),
                ("gpus", ctypes.c_int), ("interconnect", ctypes.c_char_p),
                ("peak", ctypes.c_double), ("step_s", ctypes.c_double),
                ("epoch_s", ctypes.c_double), ("run", MeasureOpts),
                ("epoch_samples", ctypes.c_uint64), ("memory_cap", ctypes.c_double),
                ("dry_run", ctypes.c_bool), ("progress", _progress_fn),
                ("progress_user", ctypes.c_void_p), ("force_calibration", ctypes.c_bool),
                ("model_data", ctypes.c_void_p), ("model_size", ctypes.c_size_t),
                ("frozen", ctypes.POINTER(ctypes.c_char_p)), ("n_frozen", ctypes.c_size_t)]


class ReportOpts(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int), ("per_layer_detail", ctypes.c_bool),
                ("by_class", ctypes.c_bool), ("by_module", ctypes.c_bool),
                ("layers", ctypes.c_bool),
                ("summary", ctypes.c_bool), ("loss", ctypes.c_void_p),
                ("memory", ctypes.c_void_p), ("export_note", ctypes.c_char_p),
                ("peers", ctypes.c_void_p), ("llm", ctypes.c_void_p)]


# the structs the layout test checks, by their C names
STRUCTS = {"fm_shape": Shape, "fm_zoo_opts": ZooOpts, "fm_load_opts": LoadOpts,
           "fm_count_opts": CountOpts, "fm_predict_opts": PredictOpts,
           "fm_measure_opts": MeasureOpts, "fm_session_opts": SessionOpts,
           "fm_report_opts": ReportOpts}

# enum fm_task, enum fm_format, enum fm_mode: their values in flopmeter.h
TASKS = {"count": 0, "roofline": 1, "predict": 2, "utilization": 3, "measure": 4}
FORMATS = {"table": 0, "csv": 1, "json": 2}
MODE_TRAIN, MODE_INFER = 0, 1


class _Lib:
    """libflopmeter, loaded once on first use, with the signatures of the calls made here."""

    def __init__(self):
        self._dll = None
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self.dll, name)

    @property
    def dll(self):
        if self._dll is None:
            with self._lock:
                if self._dll is None:
                    self._dll = self._load()
        return self._dll

    @staticmethod
    def _load():
        path = library_path()
        try:
            d = ctypes.CDLL(path)
        except OSError as e:
            raise FlopmeterError("could not load %s: %s (reinstall the package with `pip "
                                 "install .`)" % (path, e), "not found") from None
        P, S, I = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        sig = {
            "fm_ctx_new": (I, [P, ctypes.POINTER(P)]),
            "fm_ctx_free": (None, [P]),
            "fm_ctx_error": (S, [P]),
            "fm_status_to_string": (S, [I]),
            "fm_dealloc": (None, [P, P]),
            "fm_session_opts_init": (None, [ctypes.POINTER(SessionOpts), I]),
            "fm_session_run": (I, [P, ctypes.POINTER(SessionOpts), ctypes.POINTER(P)]),
            "fm_session_free": (None, [P]),
            "fm_session_render": (I, [P, ctypes.POINTER(ReportOpts), ctypes.POINTER(P),
                                      ctypes.POINTER(ctypes.c_size_t)]),
            "fm_report_opts_init": (None, [ctypes.POINTER(ReportOpts)]),
            "fm_dtype_parse": (ctypes.c_bool, [S, ctypes.POINTER(I)]),
            "fm_optimizer_parse": (ctypes.c_bool, [S, ctypes.POINTER(I)]),
            "fm_precision_parse_policy": (ctypes.c_bool, [S, ctypes.POINTER(I),
                                                          ctypes.POINTER(ctypes.c_bool)]),
            "fm_flops_parse": (ctypes.c_bool, [S, ctypes.POINTER(ctypes.c_double)]),
            "fm_shape_parse": (I, [P, S, ctypes.POINTER(Shape)]),
        }
        for name, (res, args) in sig.items():
            f = getattr(d, name)
            f.restype = res
            f.argtypes = args
        return d


lib = _Lib()


def _b(s):
    return None if s is None else s.encode()


def parse_enum(parser, text, what, choices):
    """An option's enum value through the library's own parser (fm_dtype_parse ...)."""
    out = ctypes.c_int(0)
    if not getattr(lib, parser)(_b(str(text)), ctypes.byref(out)):
        raise FlopmeterError("%s=%r is not one flopmeter knows: give one of %s"
                             % (what, text, ", ".join(choices)))
    return out.value


class _Ctx:
    """A context for one call: made, used, freed."""

    def __enter__(self):
        self.p = ctypes.c_void_p()
        if lib.fm_ctx_new(None, ctypes.byref(self.p)) != 0:
            raise MemoryError("flopmeter: out of memory making a context")
        return self

    def __exit__(self, *exc):
        lib.fm_ctx_free(self.p)

    def fail(self, status):
        msg = python_words((lib.fm_ctx_error(self.p) or b"").decode(errors="replace"))
        name = lib.fm_status_to_string(status).decode()
        if status == 1:   # FM_ERR_NOMEM
            raise MemoryError("flopmeter: " + (msg or name))
        raise FlopmeterError(msg or name, name)


# The C library names the option field a program set (fm_session_opts.loss_on); a Python user
# set a keyword argument: the message names that instead, as the CLI names its flag.
_KEYWORDS = (
    ("fm_session_opts.loss_on", "loss="), ("fm_session_opts.device", "device="),
    ("fm_session_opts.devices_file", "devices_file="), ("fm_session_opts.peak", "peak="),
    ("fm_session_opts.precision", "precision="), ("fm_session_opts.step_s", "step_time="),
    ("fm_session_opts.dataset_size", "dataset_size="), ("fm_session_opts.epochs", "epochs="),
    ("fm_session_opts.gpus", "gpus="), ("fm_session_opts.interconnect", "interconnect="),
    ("fm_session_opts.frozen", "requires_grad=False parameters"),
    ("fm_count_opts.optimizer", "optimizer="), ("FM_MODE_INFER", "train=False"),
    ("fm_zoo_opts.batch", "batch="), ("fm_zoo_opts.input", "input="),
    ("fm_zoo_opts.dtype", "dtype="), ("fm_load_opts.bindings", "input="),
)


def python_words(message):
    """message with each option field the library names replaced by the keyword argument that
    sets it (whole words only: fm_session_opts.epoch_s is not fm_session_opts.epoch_samples)."""
    import re
    for field, keyword in _KEYWORDS:
        message = re.sub(re.escape(field) + r"(?![A-Za-z0-9_])", keyword, message)
    return message


def run_session(opts, formats=("json", "table"), report_opts=None):
    """Runs a session (a SessionOpts the caller filled) and renders its report in each format;
    returns {format: text}. The library's failures become FlopmeterError with its message."""
    with _Ctx() as ctx:
        s = ctypes.c_void_p()
        st = lib.fm_session_run(ctx.p, ctypes.byref(opts), ctypes.byref(s))
        if st:
            ctx.fail(st)
        try:
            out = {}
            for fmt in formats:
                ro = ReportOpts()
                lib.fm_report_opts_init(ctypes.byref(ro))
                for k, v in (report_opts or {}).items():
                    setattr(ro, k, v)
                ro.format = FORMATS[fmt]
                text = ctypes.c_void_p()
                n = ctypes.c_size_t()
                st = lib.fm_session_render(s, ctypes.byref(ro), ctypes.byref(text),
                                           ctypes.byref(n))
                if st:
                    ctx.fail(st)
                try:
                    out[fmt] = ctypes.string_at(text, n.value).decode()
                finally:
                    lib.fm_dealloc(ctx.p, text)
            return out
        finally:
            lib.fm_session_free(s)
