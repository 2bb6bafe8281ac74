"""Reports: what the library rendered for a session, as data and as text.

A Report holds the library's JSON (the same document as `flopmeter <command> --format json`,
docs/json.md) and its table (what the command prints), both rendered by the C library
(fm_session_render); it parses the JSON and reshapes nothing: .to_dict() has the CLI's keys.
"""

import copy
import json

__all__ = ["Report"]

_PHASES = ("fwd", "bwd_data", "bwd_weight", "optimizer")


class Report:
    """The result of flopmeter.count, .roofline or .predict.

    print(report) gives the CLI's table; report.to_dict() the CLI's JSON as a dict;
    report.to_json() its text; report.layers_frame() a pandas DataFrame, one row per layer.
    """

    def __init__(self, task, json_text, table, capture=None):
        self.task = task
        self._json = json_text
        self._table = table
        self._dict = json.loads(json_text)
        # how the module was captured: exporter seconds, ONNX size (None: a name or a file)
        self.capture = capture

    # ---- the library's figures ----
    def to_dict(self):
        """The report as `flopmeter <command> --format json` prints it (a copy)."""
        return copy.deepcopy(self._dict)

    def to_json(self, indent=None):
        """The JSON text: the library's own (indent=None), or re-indented."""
        if indent is None:
            return self._json
        return json.dumps(self._dict, indent=indent)

    def __getitem__(self, key):
        return self._dict[key]

    def __contains__(self, key):
        return key in self._dict

    def keys(self):
        return self._dict.keys()

    def __str__(self):
        return self._table

    def __repr__(self):
        d = self._dict
        what = d.get("model", "?")
        tot = d.get("totals")
        if self.task == "count" and isinstance(tot, dict):
            flops = sum(tot.get(p, {}).get("flops", 0) for p in _PHASES)
            return "<flopmeter.Report count of %r: %d FLOP per step, %d parameters>" % (
                what, flops, tot.get("params", 0))
        return "<flopmeter.Report %s of %r>" % (self.task, what)

    def _repr_pretty_(self, p, cycle):   # IPython shows the table
        p.text(self._table)

    # ---- shortcuts to the count's totals ----
    @property
    def params(self):
        """Parameters (elements; each shared tensor once)."""
        return self._totals()["params"]

    @property
    def trainable_params(self):
        return self._totals()["trainable_params"]

    def flops(self, phase=None):
        """FLOPs of the step (phase=None) or of one phase: fwd, bwd_data, bwd_weight,
        optimizer."""
        t = self._totals()
        if phase is None:
            return sum(t[p]["flops"] for p in _PHASES if p in t)
        return t[phase]["flops"]

    def macs(self, phase=None):
        t = self._totals()
        if phase is None:
            return sum(t[p]["macs"] for p in _PHASES if p in t)
        return t[phase]["macs"]

    def _totals(self):
        t = self._dict.get("totals")
        if not isinstance(t, dict):
            raise KeyError("this %s report has no count totals" % self.task)
        return t

    # ---- model FLOPs and hardware FLOPs ----
    @property
    def model_flops(self):
        """The step's FLOPs as the model defines them (the library's count, no recomputation):
        what MFU divides."""
        return self.flops()

    @property
    def attention_recompute_flops(self):
        """FLOPs FlashAttention's backward adds by computing each attention's score matrix
        Q K^T again (2 x b x h x s_q x s_k x d per scaled_dot_product_attention call of a
        captured module, in a training step; 0 for inference, names and files)."""
        if not self.capture or self._dict.get("mode") != "train":
            return 0
        return 2 * sum(self.capture.get("sdpa_scores_macs", []))

    @property
    def checkpointed(self):
        """The module paths the captured module ran through torch.utils.checkpoint (activation
        checkpointing: their forward runs again in the backward); [] for names and files."""
        return list((self.capture or {}).get("checkpointed", []))

    @property
    def checkpoint_recompute_flops(self):
        """FLOPs activation checkpointing adds: the forward FLOPs, as this report counts them,
        of every layer inside a module the step ran through torch.utils.checkpoint (its
        forward runs a second time in the backward); 0 for inference, names and files. A
        layer is inside module path P when its name is P or starts with "P." or "P/"."""
        paths = self.checkpointed
        if not paths or self._dict.get("mode") != "train":
            return 0
        total = 0
        for layer in self._dict.get("layers", []):
            name = layer.get("name", "")
            if name == "loss":
                continue
            if any(p == "" or name == p or name.startswith(p + ".") or name.startswith(p + "/")
                   for p in paths):
                total += int(layer["fwd"]["flops"])
        return total

    @property
    def hardware_flops(self):
        """The FLOPs the hardware executes for the step: model FLOPs + FlashAttention's
        backward recomputing the score matrices + the forward again of the layers the module
        checkpoints (torch.utils.checkpoint): what HFU divides."""
        return (self.model_flops + self.attention_recompute_flops +
                self.checkpoint_recompute_flops)

    # ---- as a table of data ----
    def layers(self):
        """The per-layer records, flattened: nested objects become 'phase_key' columns."""
        rows = []
        for layer in self._dict.get("layers", []):
            rows.append(_flatten(layer))
        return rows

    def layers_frame(self):
        """A pandas DataFrame with one row per layer (pandas must be installed)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("layers_frame() needs pandas: pip install pandas (or use "
                              "report.layers(), a list of dicts)") from None
        return pd.DataFrame(self.layers())


def _flatten(obj, prefix="", out=None):
    out = {} if out is None else out
    for k, v in obj.items():
        key = prefix + k
        if isinstance(v, dict):
            _flatten(v, key + "_", out)
        elif isinstance(v, list) and v and all(isinstance(x, int) for x in v) and k in (
                "output", "shape"):
            out[key] = "x".join(str(x) for x in v)
        else:
            out[key] = v
    return out
