"""Trainer callbacks that meter a HuggingFace ``Trainer`` or a PyTorch Lightning ``Trainer``.

``FlopmeterCallback`` (a ``transformers.TrainerCallback``) and ``FlopmeterLightningCallback``
(a ``lightning.pytorch.Callback``) build a ``flopmeter.Meter`` from the first batch the model
sees (captured by a forward pre-hook, counted once at the end of the first step), call
``meter.step()`` at the end of every optimizer step, and log MFU, HFU, tokens/s, samples/s and
the median step time to the trainer's logger every N steps.

Deliberately not here: any timing or counting of their own (the Meter's), and imports of
transformers or Lightning at module import: each class is made the first time it is asked
for (``flopmeter.callbacks.FlopmeterCallback``), so this module imports without either.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Dict, Optional

_log = logging.getLogger("flopmeter")


class _Feed:
    """What both callbacks share: the first batch's inputs, the Meter, and the figures to log."""

    def __init__(self, meter: Any, every_n_steps: Optional[int], prefix: str,
                 example_args: Any, example_kwargs: Optional[Dict[str, Any]],
                 gather: Optional[bool], meter_kwargs: Dict[str, Any]) -> None:
        if every_n_steps is not None and (not isinstance(every_n_steps, int)
                                          or every_n_steps < 1):
            raise ValueError("every_n_steps=%r: log every N optimizer steps, N >= 1 (None: "
                             "whenever the trainer logs)" % (every_n_steps,))
        self.meter = meter
        self.every_n_steps = every_n_steps
        self.prefix = prefix
        self.gather = gather
        self.meter_kwargs = dict(meter_kwargs)
        self._args = example_args
        self._kwargs = example_kwargs
        self._hook = None
        self.failed: Optional[str] = None

    def attach(self, model: Any) -> None:
        """Captures the first forward call's inputs (when no Meter or example inputs were
        given). Only references are kept, until the Meter is built."""
        if self.meter is not None or self._args is not None or self._kwargs is not None \
                or self._hook is not None:
            return

        def grab(_mod: Any, args: Any, kwargs: Any) -> None:
            if self._args is None and self._kwargs is None:
                self._args = tuple(args)
                self._kwargs = dict(kwargs)
            self.detach()

        self._hook = model.register_forward_pre_hook(grab, with_kwargs=True)

    def detach(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def step_end(self, model: Any, micro_batches: int) -> None:
        """The end of an optimizer step: build the Meter after the first, else time the step."""
        if self.failed:
            return
        if self.meter is not None:
            self.meter.step()
            return
        if self._args is None and self._kwargs is None:
            return  # the model has not run yet (or runs under another name: pass example_args)
        from .meter import Meter
        kw = dict(self.meter_kwargs)
        kw.setdefault("micro_batches", micro_batches)
        try:
            self.meter = Meter(model, self._args or (), self._kwargs or None, **kw)
        except Exception as e:  # metering must never stop a training run
            self.failed = "%s: %s" % (type(e).__name__, e)
            _log.warning("flopmeter: no MFU for this run, the model's step could not be "
                         "counted (%s); pass meter=flopmeter.Meter(...) built yourself",
                         self.failed)
        finally:
            self._args = self._kwargs = None

    def due(self, step: int) -> bool:
        return self.every_n_steps is not None and step > 0 and step % self.every_n_steps == 0

    def figures(self) -> Dict[str, float]:
        """The figures to log: nothing before the first timed step. Under torch.distributed
        (gather: default) a collective that every rank reaches at the same step."""
        if self.meter is None:
            return {}
        s = self.meter.summary(gather=self.gather)
        if not s["steps"]:
            return {}
        p = self.prefix
        out = {p + "mfu": s["mfu"], p + "hfu": s["hfu"], p + "tokens_per_s": s["tokens_per_s"],
               p + "samples_per_s": s["samples_per_s"],
               p + "step_s": s["step_s"]["median"] if s["step_s"] else None,
               p + "tflops": (s["achieved_flops"]["model"] / 1e12
                              if s["achieved_flops"]["model"] is not None else None)}
        return {k: float(v) for k, v in out.items() if v is not None}


def _hf_class() -> type:
    try:
        from transformers import TrainerCallback
    except ImportError as e:
        raise ImportError("flopmeter.callbacks.FlopmeterCallback is a transformers "
                          "TrainerCallback: pip install transformers (%s)" % e) from None

    class FlopmeterCallback(TrainerCallback):
        """Logs MFU, HFU, tokens/s, samples/s and step time of a HuggingFace ``Trainer`` run.

        Example::

            from flopmeter.callbacks import FlopmeterCallback
            trainer = Trainer(model=model, args=args, train_dataset=ds,
                              callbacks=[FlopmeterCallback(device="h100", every_n_steps=50)])
            trainer.train()   # logs flopmeter/mfu, flopmeter/tokens_per_s, ... every 50 steps

        The Meter is built from the first batch the model sees (its forward's inputs, labels
        included, so the model's own loss is counted), at the end of the first optimizer step,
        with ``micro_batches`` = ``gradient_accumulation_steps``; ``meter_kwargs``
        (``device``, ``peak``, ``precision``, ``warmup``, ``tokens_per_step`` ...) go to it.
        ``every_n_steps``: also make the trainer log every N steps (None: add the figures
        whenever it logs, ``logging_steps``). The figures go into the trainer's logs (every
        ``report_to`` integration, and ``trainer.state.log_history``); the callback moves
        itself ahead of the integrations so they see them. Under ``torch.distributed`` they are
        the job's (gathered over the ranks).
        """

        def __init__(self, meter: Any = None, *, every_n_steps: Optional[int] = None,
                     prefix: str = "flopmeter/", example_args: Any = None,
                     example_kwargs: Optional[Dict[str, Any]] = None,
                     gather: Optional[bool] = None, **meter_kwargs: Any) -> None:
            self.feed = _Feed(meter, every_n_steps, prefix, example_args, example_kwargs,
                              gather, meter_kwargs)
            self._moved = False

        @property
        def meter(self) -> Any:
            """The Meter (None before the end of the first step)."""
            return self.feed.meter

        def _move_ahead(self) -> None:
            # The report_to integrations (TensorBoard, W&B ...) are the trainer's first
            # callbacks and a user's come after them, so they would log before this one adds
            # its figures to `logs`. The handler is the caller of every event (call_event);
            # a new list, not the one being iterated, puts this callback first from the next
            # event on. If the trainer is not laid out so, nothing changes (the figures still
            # reach log_history and the callbacks after this one).
            self._moved = True
            try:
                handler = sys._getframe(2).f_locals.get("self")
            except ValueError:
                return
            cbs = getattr(handler, "callbacks", None)
            if type(handler).__name__ == "CallbackHandler" and isinstance(cbs, list) \
                    and any(c is self for c in cbs):
                handler.callbacks = [self] + [c for c in cbs if c is not self]

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                           **kwargs: Any) -> None:
            if not self._moved:
                self._move_ahead()
            if model is not None:
                self.feed.attach(model)

        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None,
                        **kwargs: Any) -> Any:
            self.feed.step_end(model, max(1, int(getattr(args, "gradient_accumulation_steps",
                                                         1) or 1)))
            if self.feed.due(state.global_step):
                control.should_log = True
            return control

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None,
                   **kwargs: Any) -> None:
            if logs is None or "train_runtime" in logs or any(
                    k.startswith(("eval_", "test_")) for k in logs):
                return  # a training step's log only (every rank decides alike)
            figs = self.feed.figures()
            logs.update(figs)
            if state.log_history and figs:
                state.log_history[-1].update(figs)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.feed.detach()

    return FlopmeterCallback


def _lightning_class() -> type:
    try:
        from lightning.pytorch import Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback  # the package's name before Lightning 2.0
        except ImportError as e:
            raise ImportError("flopmeter.callbacks.FlopmeterLightningCallback is a PyTorch "
                              "Lightning Callback: pip install lightning (%s)" % e) from None

    class FlopmeterLightningCallback(Callback):
        """Logs MFU, HFU, tokens/s, samples/s and step time of a Lightning run.

        Example::

            from flopmeter.callbacks import FlopmeterLightningCallback
            trainer = L.Trainer(callbacks=[FlopmeterLightningCallback(device="h100")])

        The Meter is built from the inputs of the first ``LightningModule.forward`` call (a
        ``training_step`` that calls ``self(x)``; otherwise pass ``example_args`` or a
        ``meter``), and the figures go through ``pl_module.log_dict`` every ``every_n_steps``
        optimizer steps (default: the trainer's ``log_every_n_steps``).
        """

        def __init__(self, meter: Any = None, *, every_n_steps: Optional[int] = None,
                     prefix: str = "flopmeter/", example_args: Any = None,
                     example_kwargs: Optional[Dict[str, Any]] = None,
                     gather: Optional[bool] = None, **meter_kwargs: Any) -> None:
            self.feed = _Feed(meter, every_n_steps, prefix, example_args, example_kwargs,
                              gather, meter_kwargs)

        @property
        def meter(self) -> Any:
            return self.feed.meter

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            if self.feed.every_n_steps is None:
                self.feed.every_n_steps = max(1, int(getattr(trainer, "log_every_n_steps",
                                                             50) or 50))
            self.feed.attach(pl_module)

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                               batch_idx: int) -> None:
            accum = max(1, int(getattr(trainer, "accumulate_grad_batches", 1) or 1))
            if (batch_idx + 1) % accum:
                return  # not the end of an optimizer step
            self.feed.step_end(pl_module, accum)
            if self.feed.due(trainer.global_step):
                figs = self.feed.figures()
                if figs:
                    pl_module.log_dict(figs, on_step=True, on_epoch=False)

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            self.feed.detach()

    return FlopmeterLightningCallback


_MADE: Dict[str, type] = {}
_MAKERS = {"FlopmeterCallback": _hf_class, "FlopmeterLightningCallback": _lightning_class}


def __dir__() -> Any:
    # no __all__: `from flopmeter.callbacks import *` would make both classes and so need both
    # frameworks
    return sorted(list(globals()) + list(_MAKERS))


def __getattr__(name: str) -> Any:
    # PEP 562: a class is made (and its framework imported) only when asked for.
    if name in _MAKERS:
        if name not in _MADE:
            _MADE[name] = _MAKERS[name]()
        return _MADE[name]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
