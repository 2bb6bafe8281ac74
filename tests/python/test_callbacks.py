"""flopmeter.callbacks: the HuggingFace TrainerCallback logs MFU in a 2-step Trainer.train() of a
tiny model built from its config (no network, no weights), where every logging callback sees
it; the Lightning callback logs to the logger of a real 2-step Trainer.fit() under gradient
accumulation."""
import importlib.util
import math
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


def test_lightning_callback_needs_lightning(monkeypatch):
    import flopmeter.callbacks as c
    if importlib.util.find_spec("lightning") or importlib.util.find_spec("pytorch_lightning"):
        cls = c.FlopmeterLightningCallback
        assert cls.__name__ == "FlopmeterLightningCallback"
        assert cls(peak=1e12).meter is None
    # without either package (None in sys.modules: `import` raises ImportError)
    for name in ("lightning", "lightning.pytorch", "pytorch_lightning"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(c, "_MADE", {})
    with pytest.raises(ImportError, match=r"pip install lightning"):
        c.FlopmeterLightningCallback
    with pytest.raises(AttributeError):
        c.NoSuchCallback
    with pytest.raises(ValueError, match=r"every_n_steps"):
        c.FlopmeterCallback(every_n_steps=0)


def test_lightning_callback_logs_mfu_in_a_real_trainer():
    """A 2-step Trainer.fit() of a tiny LightningModule on the CPU, 2 micro-batches per step:
    the callback builds its Meter from the first forward's token ids, times step 2 and logs
    MFU, HFU, tokens/s, samples/s and step time to the trainer's logger, consistent with one
    another and with the Meter's count."""
    L = pytest.importorskip("lightning.pytorch", reason="tools/requirements-test.txt pins "
                            "lightning")
    from lightning.pytorch.loggers import Logger
    from flopmeter.callbacks import FlopmeterLightningCallback

    class Memory(Logger):                    # what a CSV or TensorBoard logger is given
        def __init__(self):
            super().__init__()
            self.rows = []

        @property
        def name(self):
            return "memory"

        @property
        def version(self):
            return 0

        def log_hyperparams(self, params, *args, **kwargs):
            pass

        def log_metrics(self, metrics, step=None):
            self.rows.append(dict(metrics))

    V, D, B, S = 50, 16, 4, 12

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, D)
            self.head = torch.nn.Linear(D, V)

        def forward(self, ids):
            return self.head(self.emb(ids))

        def training_step(self, batch, batch_idx):
            (ids,) = batch
            logits = self(ids)
            return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V),
                                                     ids[:, 1:].reshape(-1))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randint(0, V, (4 * B, S))), batch_size=B)
    logger = Memory()
    cb = FlopmeterLightningCallback(peak=1e12, warmup=0)   # every_n_steps: log_every_n_steps
    trainer = L.Trainer(max_steps=2, accelerator="cpu", devices=1, logger=logger,
                        log_every_n_steps=1, accumulate_grad_batches=2,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[cb])
    module = Tiny()
    trainer.fit(module, data)

    assert trainer.global_step == 2
    m = cb.meter
    assert m is not None and cb.feed.failed is None
    assert m.micro_batches == 2 and m.samples_per_step == 2 * B
    assert m.tokens_per_step == 2 * B * S
    # the count: 2 micro-batches of the module's own forward (the head's matmul at least)
    assert m.flops_per_step["forward"] >= 2 * (2 * B * S * D * V)
    assert len(m.step_times) == 1          # built after step 1, step 2 timed
    assert not module._forward_pre_hooks   # the capture hook is gone

    rows = [r for r in logger.rows if any(k.startswith("flopmeter/") for k in r)]
    assert len(rows) == 1, logger.rows     # step 1 has no timed step yet: nothing logged
    row = rows[0]
    keys = {"flopmeter/mfu", "flopmeter/hfu", "flopmeter/tokens_per_s",
            "flopmeter/samples_per_s", "flopmeter/step_s", "flopmeter/tflops"}
    assert keys <= set(row), row
    for k in keys:
        assert math.isfinite(row[k]) and row[k] > 0, (k, row[k])
    step_s = row["flopmeter/step_s"]
    # Lightning keeps logged values as float32 tensors: 1e-6
    assert step_s == pytest.approx(m.step_times[0], rel=1e-6)
    assert row["flopmeter/mfu"] == pytest.approx(m.flops_per_step["model"] / (step_s * 1e12),
                                                 rel=1e-6)
    assert row["flopmeter/tokens_per_s"] == pytest.approx(2 * B * S / step_s, rel=1e-6)
    assert row["flopmeter/samples_per_s"] == pytest.approx(2 * B / step_s, rel=1e-6)
    assert row["flopmeter/tflops"] == pytest.approx(row["flopmeter/mfu"], rel=1e-6)  # 1e12
