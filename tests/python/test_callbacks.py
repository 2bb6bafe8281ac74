"""flopmeter.callbacks: the HuggingFace TrainerCallback logs MFU in a 2-step Trainer.train() of a
tiny model built from its config (no network, no weights), where every logging callback sees
it; the Lightning callback imports only where Lightning is installed."""
import importlib.util
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate "
                                         "(tools/requirements-test.txt pins it)")



class _Images(torch.utils.data.Dataset):
    """8 random 3x32x32 images in 3 classes."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"pixel_values": torch.randn(3, 32, 32, generator=g), "labels": i % 3}


def test_hf_callback_logs_mfu_in_two_steps(tmp_path):
    from transformers import (ResNetConfig, ResNetForImageClassification, Trainer,
                              TrainerCallback, TrainingArguments)
    from flopmeter.callbacks import FlopmeterCallback

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = ResNetForImageClassification(ResNetConfig(
        embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3))

    seen = []

    class Recorder(TrainerCallback):      # stands for a report_to integration (TensorBoard...)
        def on_log(self, args, state, control, logs=None, **kwargs):
            seen.append(dict(logs))

    cb = FlopmeterCallback(peak=1e12, warmup=0, every_n_steps=1)
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=2,
                             per_device_train_batch_size=4, logging_steps=100,
                             report_to="none", use_cpu=True, save_strategy="no",
                             disable_tqdm=True, dataloader_num_workers=0)
    trainer = Trainer(model=model, args=args, train_dataset=_Images(),
                      callbacks=[Recorder(), cb])
    trainer.train()

    # the Meter was built from the first batch (counted at the end of step 1, labels and the
    # model's own loss included) and timed step 2
    assert cb.meter is not None and cb.feed.failed is None
    s = cb.meter.summary()
    assert s["steps"] == 1 and s["samples_per_step"] == 4
    assert s["flops_per_step"]["model"] > 0
    steps = [h for h in trainer.state.log_history if "flopmeter/mfu" in h]
    assert [h["step"] for h in steps] == [2]   # forced by every_n_steps (logging_steps=100)
    logged = steps[0]
    assert logged["flopmeter/mfu"] == pytest.approx(s["mfu"], rel=1e-12)
    assert logged["flopmeter/mfu"] > 0
    assert logged["flopmeter/step_s"] == pytest.approx(s["step_s"]["median"], rel=1e-12)
    assert logged["flopmeter/samples_per_s"] == pytest.approx(4 / s["step_s"]["median"])
    assert "flopmeter/tokens_per_s" not in logged   # images: no tokens, no made-up figure
    assert "loss" in logged                          # the trainer's own log line
    # a callback listed before FlopmeterCallback saw the figures too
    assert any("flopmeter/mfu" in logs for logs in seen)


def test_hf_callback_that_cannot_count_does_not_stop_training(tmp_path, caplog):
    """A model whose step cannot be counted: a warning, no figures, and training goes on."""
    from transformers import Trainer, TrainingArguments
    from flopmeter.callbacks import FlopmeterCallback

    class Odd(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(3 * 32 * 32, 3)

        def forward(self, pixel_values, labels):
            # data-dependent control flow: the exporter cannot capture it
            h = self.w(pixel_values.flatten(1))
            if h.sum() > 0:
                h = h * 2
            return {"loss": torch.nn.functional.cross_entropy(h, labels), "logits": h}

    cb = FlopmeterCallback(peak=1e12, warmup=0, every_n_steps=1)
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=2,
                             per_device_train_batch_size=4, report_to="none", use_cpu=True,
                             save_strategy="no", disable_tqdm=True)
    trainer = Trainer(model=Odd(), args=args, train_dataset=_Images(), callbacks=[cb])
    with caplog.at_level("WARNING", logger="flopmeter"):
        trainer.train()
    assert trainer.state.global_step == 2
    assert cb.meter is None and cb.feed.failed
    assert "no MFU for this run" in caplog.text
    assert not any("flopmeter/mfu" in h for h in trainer.state.log_history)


def test_callbacks_module_imports_no_framework():
    code = ("import sys, flopmeter.callbacks as c; "
            "print('transformers' in sys.modules, 'lightning' in sys.modules, "
            "'pytorch_lightning' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False", "False"]


def test_lightning_callback_needs_lightning():
    import flopmeter.callbacks as c
    if importlib.util.find_spec("lightning") or importlib.util.find_spec("pytorch_lightning"):
        cls = c.FlopmeterLightningCallback
        assert cls.__name__ == "FlopmeterLightningCallback"
        assert cls(peak=1e12).meter is None
    else:
        with pytest.raises(ImportError, match=r"pip install lightning"):
            c.FlopmeterLightningCallback
    with pytest.raises(AttributeError):
        c.NoSuchCallback
    with pytest.raises(ValueError, match=r"every_n_steps"):
        c.FlopmeterCallback(every_n_steps=0)


def test_lightning_callback_logic_against_a_stand_in(monkeypatch):
    """Lightning is not installed here: its Callback base is replaced by a stand-in to check the
    callback's own logic (the Meter built from the first forward's inputs, stepped once per
    optimizer step under gradient accumulation, figures through pl_module.log_dict every N
    steps). That it works inside a real Lightning Trainer is not tested."""
    import types
    import flopmeter.callbacks as c

    pkg = types.ModuleType("lightning")
    sub = types.ModuleType("lightning.pytorch")
    sub.Callback = type("Callback", (), {})
    pkg.pytorch = sub
    monkeypatch.setitem(sys.modules, "lightning", pkg)
    monkeypatch.setitem(sys.modules, "lightning.pytorch", sub)
    monkeypatch.setattr(c, "_MADE", {})
    cls = c.FlopmeterLightningCallback

    class Module(torch.nn.Module):         # a LightningModule's part the callback uses
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                           torch.nn.Linear(32, 4))
            self.logged = []

        def forward(self, x):
            return self.net(x)

        def log_dict(self, d, on_step=True, on_epoch=False):
            self.logged.append((trainer.global_step, dict(d)))

    trainer = types.SimpleNamespace(log_every_n_steps=2, accumulate_grad_batches=2,
                                    global_step=0)
    module = Module()
    cb = cls(peak=1e12, warmup=0)
    cb.on_train_start(trainer, module)
    opt = torch.optim.SGD(module.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    for batch_idx in range(12):            # 6 optimizer steps of 2 micro-batches
        torch.nn.functional.cross_entropy(module(x), y).backward()
        if batch_idx % 2:
            opt.step()
            opt.zero_grad()
            trainer.global_step += 1
        cb.on_train_batch_end(trainer, module, None, (x, y), batch_idx)
    cb.on_train_end(trainer, module)

    m = cb.meter
    assert m is not None and m.micro_batches == 2 and m.samples_per_step == 16
    assert len(m.step_times) == 5          # built after step 1, then 5 steps timed
    assert [step for step, _ in module.logged] == [2, 4, 6]
    last = module.logged[-1][1]
    assert last["flopmeter/mfu"] == pytest.approx(m.summary()["mfu"], rel=1e-12)
    assert not module._forward_pre_hooks   # the capture hook is gone
