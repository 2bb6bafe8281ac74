"""The fast capture: torch.export's graph translated to ONNX by PyTorch's exporter, without the
exporter's second trace of the whole program.

PyTorch's exporter (torch.onnx.export(dynamo=True)) spends most of its time in one step:
ExportedProgram.run_decompositions, which traces the exported program a second time through
AOTAutograd (functionalization, fake-tensor propagation of every op) to rewrite the few kinds of
op the ONNX translation has no function for (bench/capture_parts.py: GPT-2 small at sequence
1024, 1.05 s of the exporter's 1.74 s; torch.export 0.45 s, the translation 0.19 s). Here only
those nodes are rewritten, each by a rule (_RULES) that writes what run_decompositions writes for
it (Dropout's native_dropout, BatchNorm's _native_batch_norm_legit_functional, reshape's view or
clone + _unsafe_view ...); in-place ops on fresh tensors become functional, views get their
sizes written out, the nodes are renamed as the trace names them, and the exporter's own passes,
translation (the torchlib functions, the same metadata: module paths, parameter names) and opset
conversion make the ONNX model. It is then the model the exporter writes, op for op, and the C
library counts it by the same rules: tests/python/test_fast_capture.py and
bench/capture_paths.py compare the two paths' reports.

What it does not do: translate an op itself (the exporter's functions do), or guess. A graph with
a node it has no rule for (an op the translation lacks that run_decompositions would rewrite; an
in-place op on a view, an input or a parameter; a mutation of a buffer that something reads; a
higher-order op) or whose translation fails is refused with the reason (Unsupported), and the
caller falls back to the exporter's full path (flopmeter's capture records why in its
timings["fallback"]). It uses the exporter's internals (torch.onnx._internal): on a PyTorch
whose internals differ it fails, and the caller falls back the same way.
"""

import contextlib
import operator

_STATE = {}


class Unsupported(Exception):
    """The graph has a node the fast path does not rewrite: the message says which."""


def _tables():
    """The registry, the set of ops it translates, the decomposition table split as
    run_decompositions splits it (CompositeImplicitAutograd ops apart), built once."""
    if _STATE:
        return _STATE
    from torch.onnx._internal.exporter import _decomp, _registration
    from torch.export.exported_program import _split_decomp_table_to_cia_and_python_decomp
    from torch.export.exported_program import _special_op_to_preserve_cia

    from torch.onnx import _constants

    # the exporter's registry and opset: torch.onnx.export's default (opset 20, the model then
    # converted to it, which also drops the nodes no output needs)
    opset = _constants.ONNX_DEFAULT_OPSET
    registry = _registration.ONNXRegistry.from_torchlib(opset_version=opset)
    impl = set(_decomp.get_onnx_implemented_overloads(registry))
    table = _decomp.create_onnx_friendly_decomposition_table(impl)
    cia, py = _split_decomp_table_to_cia_and_python_decomp(dict(table))
    preserved = {op for op, fn in cia.items() if fn is _special_op_to_preserve_cia}
    _STATE.update(opset=opset, registry=registry, impl=impl, cia=cia, py=py, preserved=preserved)
    return _STATE


def _is_cia(op):
    import torch
    return torch._C._dispatch_has_kernel_for_dispatch_key(
        op.name(), torch._C.DispatchKey.CompositeImplicitAutograd)


def _needs_rewrite(op, st):
    """Whether run_decompositions would replace op: a CompositeImplicitAutograd op it does not
    preserve, or an op its table decomposes."""
    if op in st["preserved"]:
        return False
    if _is_cia(op):
        return True
    return op in st["py"]


_ASSERTS = ("aten._assert_tensor_metadata.default", "aten._assert_async.default",
            "aten._assert_async.msg", "aten._assert_scalar.default",
            "aten.sym_constrain_range_for_size.default")


def _functional_of(op):
    """aten.relu_.default -> aten.relu.default (None when there is none)."""
    import torch
    if str(op) == "aten.bernoulli_.float":   # the functional form has another overload name
        return torch.ops.aten.bernoulli.p
    name = op._schema.name.split("::")[1]
    if not name.endswith("_"):
        return None
    packet = getattr(torch.ops.aten, name[:-1], None)
    if packet is None:
        return None
    return getattr(packet, op._overloadname, None)


def _mutated_arg(op):
    """The index of the argument an op writes, or None for a functional op; -1 when it writes
    several or an output it does not return."""
    idx = [i for i, a in enumerate(op._schema.arguments)
           if a.alias_info is not None and a.alias_info.is_write]
    if not idx:
        return None
    return idx[0] if len(idx) == 1 else -1


def _is_view(n):
    import torch
    return n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and \
        n.target.is_view


def _readers_after(gm, node, target):
    """The nodes after node that read target (they read the value node wrote)."""
    later = []
    seen = False
    for n in gm.graph.nodes:
        if n is node:
            seen = True
        elif seen and target in n.all_input_nodes:
            later.append(n)
    return later


def _inplace_to_functional(gm, node, placeholders):
    """An in-place op made functional: on a buffer nothing reads after it (BatchNorm's
    num_batches_tracked += 1), the node goes (the exporter drops buffer updates from the ONNX
    outputs); on an intermediate tensor no view shares, the functional op takes its place and
    every later reader of the tensor reads the new value. Anything else is refused."""
    op = node.target
    i = _mutated_arg(op)
    if i is None:
        return
    if i != 0:
        raise Unsupported("%s writes an argument other than its first" % op)
    target = node.args[0]
    later = _readers_after(gm, node, target)
    if target.op == "placeholder":
        kind = placeholders.get(target.name)
        if kind == "buffer" and not node.users and not later:
            gm.graph.erase_node(node)
            return
        raise Unsupported("%s writes the %s %s" % (op, kind or "input", target.name))
    if _is_view(target) or any(_is_view(u) for u in target.users):
        raise Unsupported("%s writes %s, which a view shares" % (op, target.name))
    fop = _functional_of(op)
    if fop is None:
        raise Unsupported("%s has no functional form" % op)
    with gm.graph.inserting_before(node):
        new = gm.graph.call_function(fop, node.args, node.kwargs)
    new.meta = dict(node.meta)
    node.replace_all_uses_with(new)
    for n in later:
        n.replace_input_with(target, new)
    gm.graph.erase_node(node)
    return new


def _val(n):
    import torch
    v = n.meta.get("val") if hasattr(n, "meta") else None
    return v if isinstance(v, torch.Tensor) else None


def _emit(gm, at, target, args, kwargs=None, name=None):
    """A new node before at, with at's metadata (module path, stack) and its own value computed
    in the program's fake mode."""
    import torch
    kwargs = kwargs or {}
    new = gm.graph.create_node("call_function", target, tuple(args), dict(kwargs),
                               name=name or _base_name(target))
    new.meta = {k: v for k, v in at.meta.items() if k not in ("val", "tensor_meta")}
    vals = torch.fx.node.map_arg((new.args, new.kwargs), lambda a: a.meta["val"])
    mode = torch._guards.detect_fake_mode([a.meta["val"] for a in new.all_input_nodes])
    with mode:
        new.meta["val"] = target(*vals[0], **vals[1])
    new.meta["flopmeter_new"] = True
    return new


def _replace(gm, node, new):
    """node's readers read new, and node goes. A program output is renamed in the program's
    signature (rewrite), which only a node made here may take over."""
    name = node.name
    is_output = any(u.op == "output" for u in node.users)
    if is_output and new.meta.get("flopmeter_new") is not True:
        raise Unsupported("%s, an output of the program, would become another node"
                          % node.target)
    node.replace_all_uses_with(new)
    gm.graph.erase_node(node)
    if is_output:
        gm.meta.setdefault("flopmeter_renamed", {})[name] = new


def _first_of(gm, node, target, args, kwargs=None):
    """node replaced by getitem(target(args), 0), as run_decompositions writes the ops that
    return a tuple (native_dropout, the batch norms)."""
    import operator as op_mod
    with gm.graph.inserting_before(node):
        t = _emit(gm, node, target, args, kwargs)
        g = _emit(gm, node, op_mod.getitem, (t, 0), name="getitem")
    _replace(gm, node, g)


def _r_drop_or_identity(gm, node, aten):
    x, p = node.args[0], node.args[1]
    train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", True)
    if train and p != 0:
        _first_of(gm, node, aten.native_dropout.default, (x, p, True))
    else:
        _replace(gm, node, x)


def _r_inplace_dropout(gm, node, aten):
    """dropout_ in eval mode (or p = 0) is the identity. In training, on a fresh tensor no view
    shares, it is what functionalization makes of it: a mask drawn like the tensor
    (empty_like, bernoulli), scaled, multiplied in, and every later reader reads the product.
    On a view or an input it writes the base as well: not rewritten here."""
    x, p = node.args[0], node.args[1]
    train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", True)
    if not train or p == 0:
        _replace(gm, node, x)
        return
    if x.op != "call_function" or _is_view(x) or any(_is_view(u) for u in x.users):
        raise Unsupported("an in-place dropout in training of an input or a view")
    later = _readers_after(gm, node, x)
    with gm.graph.inserting_before(node):
        e = _emit(gm, node, aten.empty_like.default, (x,))
        b = _emit(gm, node, aten.bernoulli.p, (e, 1 - p))
        d = _emit(gm, node, aten.div.Scalar, (b, 1 - p))
        new = _emit(gm, node, aten.mul.Tensor, (x, d))
    _replace(gm, node, new)
    for n in later:
        n.replace_input_with(x, new)


def _r_batch_norm(gm, node, aten):
    x, w, b, rm, rv, training, momentum, eps = node.args[:8]
    if rm is None or rv is None:
        raise Unsupported("a batch norm without running statistics")
    if training:
        _first_of(gm, node, aten._native_batch_norm_legit_functional.default,
                  (x, w, b, rm, rv, True, momentum, eps))
    else:
        _first_of(gm, node, aten._native_batch_norm_legit_no_training.default,
                  (x, w, b, rm, rv, momentum, eps))


def _r_contiguous(gm, node, aten):
    x = node.args[0]
    v = _val(x)
    if v is None:
        raise Unsupported("contiguous of a value without a shape")
    if v.is_contiguous():
        _replace(gm, node, x)
        return
    import torch
    with gm.graph.inserting_before(node):
        c = _emit(gm, node, aten.clone.default, (x,), {"memory_format": torch.contiguous_format})
    _replace(gm, node, c)


def _r_reshape(gm, node, aten):
    import torch
    x, size = node.args[0], list(node.args[1])
    v = _val(x)
    if v is None or any(isinstance(d, torch.fx.Node) for d in size):
        raise Unsupported("a reshape with symbolic sizes")
    out = [int(d) for d in _val(node).shape]
    mode = torch._guards.detect_fake_mode([v])
    try:
        with mode:
            v.view(out)
        viewable = True
    except (RuntimeError, ValueError):   # strides no view can express: a copy
        viewable = False
    with gm.graph.inserting_before(node):
        if viewable:
            new = _emit(gm, node, aten.view.default, (x, size))
        else:
            c = _emit(gm, node, aten.clone.default, (x,),
                      {"memory_format": torch.contiguous_format})
            new = _emit(gm, node, aten._unsafe_view.default, (c, out))
    _replace(gm, node, new)


def _r_flatten(gm, node, aten):
    x = node.args[0]
    v = _val(x)
    if v is None or not v.is_contiguous():
        raise Unsupported("flatten of a tensor that is not contiguous")
    with gm.graph.inserting_before(node):
        new = _emit(gm, node, aten.view.default, (x, [int(d) for d in _val(node).shape]))
    _replace(gm, node, new)


def _r_unflatten(gm, node, aten):
    x = node.args[0]
    with gm.graph.inserting_before(node):
        new = _emit(gm, node, aten.view.default, (x, [int(d) for d in _val(node).shape]))
    _replace(gm, node, new)


def _r_to(gm, node, aten):
    x = node.args[0]
    a, b = _val(x), _val(node)
    if a is None or b is None or a.device != b.device:
        raise Unsupported("%s across devices" % node.target)
    if a.dtype == b.dtype:
        _replace(gm, node, x)
        return
    with gm.graph.inserting_before(node):
        new = _emit(gm, node, aten._to_copy.default, (x,), {"dtype": b.dtype})
    _replace(gm, node, new)


def _r_adaptive_avg_pool2d(gm, node, aten):
    """A global pooling is mean over the last two dims, restrided (as_strided) to the strides
    the op would give when they differ (a channels-last input); an even window avg_pool2d of a
    contiguous input; anything else is not rewritten here."""
    x, out = node.args[0], list(node.args[1])
    v = _val(x)
    if v is None:
        raise Unsupported("an adaptive average pooling of a value without a shape")
    h, w = int(v.shape[-2]), int(v.shape[-1])
    with gm.graph.inserting_before(node):
        if out == [1, 1]:
            new = _emit(gm, node, aten.mean.dim, (x, [-1, -2], True))
            want = _val(node)
            if tuple(new.meta["val"].stride()) != tuple(want.stride()):
                new = _emit(gm, node, aten.as_strided.default,
                            (new, [int(d) for d in want.shape], [int(d) for d in want.stride()]))
        elif v.is_contiguous() and h % out[0] == 0 and w % out[1] == 0:
            k = [h // out[0], w // out[1]]
            new = _emit(gm, node, aten.avg_pool2d.default, (x, k, k))
        else:
            raise Unsupported("an adaptive average pooling with uneven windows or strides")
    _replace(gm, node, new)


def _r_diff(gm, node, aten):
    args = list(node.args) + [None] * (5 - len(node.args))
    y, n, dim, prepend, append = args[:5]
    n = 1 if n is None else n
    dim = -1 if dim is None else dim
    n = node.kwargs.get("n", n)
    dim = node.kwargs.get("dim", dim)
    prepend = node.kwargs.get("prepend", prepend)
    append = node.kwargs.get("append", append)
    if n != 1:
        raise Unsupported("diff of order %s" % n)
    with gm.graph.inserting_before(node):
        src = y
        if prepend is not None or append is not None:
            parts = [t for t in (prepend, y, append) if t is not None]
            src = _emit(gm, node, aten.cat.default, (parts, dim))
        length = int(_val(src).shape[dim])
        lo = _emit(gm, node, aten.slice.Tensor, (src, dim, 0, length - 1))
        hi = _emit(gm, node, aten.slice.Tensor, (src, dim, 1, length))
        new = _emit(gm, node, aten.sub.Tensor, (hi, lo))
    _replace(gm, node, new)


def _r_chunk(gm, node, aten):
    x, chunks = node.args[0], node.args[1]
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    size = int(_val(x).shape[dim])
    with gm.graph.inserting_before(node):
        new = _emit(gm, node, aten.split.Tensor, (x, (size + chunks - 1) // chunks, dim))
    _replace(gm, node, new)


def _r_rename(target_name):
    def rule(gm, node, aten):
        packet, overload = target_name.split(".")
        t = getattr(getattr(aten, packet), overload)
        with gm.graph.inserting_before(node):
            new = _emit(gm, node, t, node.args, node.kwargs)
        _replace(gm, node, new)
    return rule


# what run_decompositions makes of the ATen ops the ONNX translation has no function for, written
# out (tests/python/test_fast_capture.py compares the counts with the exporter's own path)
_RULES = {
    "aten.dropout.default": _r_drop_or_identity,
    "aten.dropout_.default": _r_inplace_dropout,
    "aten.batch_norm.default": _r_batch_norm,
    "aten.contiguous.default": _r_contiguous,
    "aten.reshape.default": _r_reshape,
    "aten.flatten.using_ints": _r_flatten,
    "aten.unflatten.int": _r_unflatten,
    "aten.to.dtype": _r_to,
    "aten.to.dtype_layout": _r_to,
    "aten.to.device": _r_to,
    "aten.adaptive_avg_pool2d.default": _r_adaptive_avg_pool2d,
    "aten.diff.default": _r_diff,
    "aten.chunk.default": _r_chunk,
    "aten.__and__.Tensor": _r_rename("bitwise_and.Tensor"),
    "aten.__or__.Tensor": _r_rename("bitwise_or.Tensor"),
    "aten.swapaxes.default": _r_rename("transpose.int"),
    "aten.min.other": _r_rename("minimum.default"),
    "aten.max.other": _r_rename("maximum.default"),
}


def _base_name(op):
    """aten.slice.Tensor -> "slice", as run_decompositions names its nodes (the graph adds
    _1, _2 ...)."""
    if isinstance(op, type(operator.getitem)) or not hasattr(op, "_schema"):
        return getattr(op, "__name__", "node")
    return op._schema.name.split("::")[-1]


# views whose size argument run_decompositions writes out in full (functionalization replays
# each view with the sizes it resolved: view(x, [-1, 16]) becomes view(x, [2, 16])); the ONNX
# translation writes the sizes as they are, and a -1 hides a shape from the library's reader
_SIZED_VIEWS = ("aten.view.default", "aten.expand.default", "aten._unsafe_view.default")


def _resolve_sizes(n):
    import torch
    if str(n.target) not in _SIZED_VIEWS or len(n.args) < 2:
        return
    v = n.meta.get("val")
    size = n.args[1]
    if not isinstance(v, torch.Tensor) or not isinstance(size, (list, tuple)):
        return
    if any(isinstance(d, torch.fx.Node) for d in size) or -1 not in size:
        return
    shape = [int(d) for d in v.shape]
    if len(shape) == len(size):
        n.args = (n.args[0], shape) + tuple(n.args[2:])


def _outputs_of(node):
    """How many values a tuple-returning op gives (its getitems), 0 for a single tensor."""
    v = node.meta.get("val")
    return len(v) if isinstance(v, (list, tuple)) else 0


def _rename_like_retrace(gm, sig):
    """Every op node renamed as run_decompositions' trace names it: in graph order, the op's
    name (aten.view.default -> view, view_1 ...), a tuple-returning op's getitems right after it,
    one per output whether read or not (BatchNorm's five, Dropout's two), through torch.fx's own
    namer (which avoids builtins: slice_1 first). The ONNX values are named after the nodes, and
    the report names an output by its value (the loss's "output"); the program's signature
    follows the new names of its outputs."""
    import torch
    ns = torch.fx.graph._Namespace()
    new = {}
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "get_attr"):
            new[n] = ns.create_name(n.name, n)
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target is operator.getitem:
            continue
        base = n.target.overloadpacket.__name__ if hasattr(n.target, "overloadpacket") \
            else getattr(n.target, "__name__", "node")
        new[n] = ns.create_name(gm.graph._target_to_str(base), n)
        k = _outputs_of(n)
        if k:
            items = {u.args[1]: u for u in n.users
                     if u.op == "call_function" and u.target is operator.getitem}
            for i in range(k):
                u = items.get(i)
                new_name = ns.create_name("getitem", u)
                if u is not None:
                    new[u] = new_name
    missed = [n for n in gm.graph.nodes
              if n.op == "call_function" and n not in new]
    if missed:
        raise Unsupported("%s read outside its op's outputs" % missed[0].name)
    old = {n: n.name for n in new}
    for n, name in new.items():
        object.__setattr__(n, "name", name)
    out = [n for n in gm.graph.nodes if n.op == "output"]
    for n in out:
        new[n] = ns.create_name("output", n)
    gm.graph._graph_namespace = ns
    by_old = {old[n]: n.name for n in old}
    for spec in sig.output_specs:
        name = getattr(spec.arg, "name", None)
        if name in by_old and by_old[name] != name:
            spec.arg = type(spec.arg)(name=by_old[name])


def rewrite(ep):
    """ep's graph rewritten in place to what run_decompositions would make of it for the ONNX
    translation; raises Unsupported with the reason when it cannot."""
    import torch

    st = _tables()
    gm = ep.graph_module
    sig = ep.graph_signature
    placeholders = {}
    for spec in sig.input_specs:
        kind = spec.kind.name.lower()
        placeholders[spec.arg.name] = {"user_input": "input"}.get(kind, kind)
    for n in list(gm.graph.nodes):
        if n.op == "call_module" or n.op == "get_attr" and isinstance(
                getattr(gm, n.target, None), torch.fx.GraphModule):
            raise Unsupported("a higher-order op (%s)" % n.target)
        if n.op != "call_function":
            continue
        t = n.target
        if t is operator.getitem:
            continue
        if not isinstance(t, torch._ops.OpOverload):
            raise Unsupported("%s is not an ATen op" % getattr(t, "__name__", t))
        if str(t) in _ASSERTS:
            gm.graph.erase_node(n)
            continue
        if str(t) in _RULES:
            _RULES[str(t)](gm, n, torch.ops.aten)
            continue
        if _mutated_arg(t) is not None:
            n = _inplace_to_functional(gm, n, placeholders)
            if n is None:
                continue
            t = n.target
        rule = _RULES.get(str(t))
        if rule is not None:
            rule(gm, n, torch.ops.aten)
            continue
        if _needs_rewrite(t, st):
            raise Unsupported("%s (no rule for it here)" % t)
        if t not in st["impl"]:
            raise Unsupported("%s has no ONNX translation" % t)
        _resolve_sizes(n)
    renamed = gm.meta.pop("flopmeter_renamed", {})
    for spec in sig.output_specs:
        name = getattr(spec.arg, "name", None)
        seen = set()
        while name in renamed and name not in seen:
            seen.add(name)
            new = renamed[name].name
            spec.arg = type(spec.arg)(name=new)
            name = new
    _rename_like_retrace(gm, sig)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return ep


@contextlib.contextmanager
def _no_stack_traces(torch):
    import torch.fx.config as cfg

    saved = getattr(cfg, "do_not_emit_stack_traces", False)
    cfg.do_not_emit_stack_traces = True
    try:
        yield
    finally:
        cfg.do_not_emit_stack_traces = saved


def export(model, args, kwargs, timings=None):
    from torch.onnx._internal.exporter import _flags
    return _flags.set_onnx_exporting_flag(_export)(model, args, kwargs,
                                                   {} if timings is None else timings)


def _export(model, args, kwargs, timings):
    """The ONNXProgram of model(*args, **kwargs): torch.export as the exporter calls it, the
    local rewrite, the exporter's translation. Raises Unsupported (fall back) or what
    torch.export raised (the module cannot be traced at all)."""
    import torch
    from torch.onnx import _flags
    from torch.onnx._internal.exporter import _core, _fx_passes

    import time

    st = _tables()
    t0 = time.perf_counter()
    # no Python stack recorded per node (torch.fx.config.do_not_emit_stack_traces): a third of
    # torch.export's time on GPT-2, and the counts never read it (the module path comes from
    # nn_module_stack, which stays)
    with torch.fx.experimental._config.patch(backed_size_oblivious=True), \
            _no_stack_traces(torch):
        ep = torch.export.export(
            model, args, kwargs=kwargs or None, strict=False,
            prefer_deferred_runtime_asserts_over_guards=(
                _flags.PREFER_DEFERRED_RUNTIME_ASSERTS_OVER_GUARDS))
        t1 = time.perf_counter()
        rewrite(ep)
        gm = ep.graph_module
        _fx_passes.insert_type_promotion_nodes(gm)
        gm = _fx_passes.remove_assertion_nodes(gm)
        ep._graph_module = gm
    try:
        from torch.onnx._internal._lazy_import import onnxscript_apis

        t2 = time.perf_counter()
        prog = _core._exported_program_to_onnx_program(ep, registry=st["registry"])
        t3 = time.perf_counter()
        prog.model = onnxscript_apis.convert_version(prog.model, st["opset"])
        t4 = time.perf_counter()
        timings.update(torch_export_s=t1 - t0, rewrite_s=t2 - t1, translate_s=t3 - t2,
                       opset_s=t4 - t3)
        return prog
    except Exception as e:
        raise Unsupported("the ONNX translation failed: %s: %s"
                          % (type(e).__name__, str(e).splitlines()[0][:200])) from e
