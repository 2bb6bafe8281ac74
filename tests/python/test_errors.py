"""Bad input gets a Python exception that says what to do, never a crash of the interpreter:
a module the exporter cannot capture, an input on another device than the module, a device the
table lacks (the library's message, with the nearest names), a peak in the wrong unit, and the
library's own failures (its message, its status)."""
import pytest
import torch
from torch import nn

import flopmeter
from models import CNN


class DataDependent(nn.Module):
    """Its output's shape depends on the input's values, read as Python numbers."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        n = int(x.abs().sum().item() * 1000) % 7 + 1
        return self.fc(x).repeat(n, 1)


class NotTensors(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return object()


def test_uncapturable_module():
    m = NotTensors()
    with pytest.raises(flopmeter.CaptureError) as e:
        flopmeter.count(m, torch.randn(2, 4))
    msg = str(e.value)
    assert "could not capture NotTensors" in msg and "Found <class 'object'> in output" in msg
    assert "torch.export" in msg and "flopmeter.count('model.onnx')" in msg
    assert isinstance(e.value, flopmeter.FlopmeterError) and isinstance(e.value, ValueError)
    assert isinstance(e.value.__cause__, Exception)   # the exporter's own error, kept


def test_shape_from_data():
    """PyTorch 2.15's exporter traces it (the shape fixed at the traced value) but the graph's
    shape rests on a value computed from data: the library says which node and why. An older
    exporter refuses it: a CaptureError."""
    with pytest.raises(flopmeter.FlopmeterError) as e:
        flopmeter.count(DataDependent(), torch.randn(2, 4))
    if isinstance(e.value, flopmeter.CaptureError):
        assert "could not capture DataDependent" in str(e.value)
    else:
        assert "not known before running the network" in str(e.value)


def test_input_on_another_device():
    m = CNN()
    with pytest.raises(flopmeter.FlopmeterError) as e:
        flopmeter.count(m, torch.randn(1, 3, 16, 16, device="meta"))
    msg = str(e.value)
    assert "input args[0] is on meta" in msg and "parameters are on cpu" in msg
    assert "model.to(" in msg and "x.to(" in msg
    with pytest.raises(flopmeter.FlopmeterError, match=r"kwargs\['x'\] is on meta"):
        flopmeter.count(m, (), {"x": torch.randn(1, 3, 16, 16, device="meta")})


def test_device_not_in_table():
    with pytest.raises(flopmeter.FlopmeterError) as e:
        flopmeter.predict("resnet18", device="h1000")
    msg = str(e.value)
    assert "unknown device 'h1000'" in msg and "h100" in msg and "flopmeter devices" in msg
    assert e.value.status == "invalid argument"
    with pytest.raises(flopmeter.FlopmeterError, match="device's name as a string"):
        flopmeter.predict("resnet18", device=torch.device("cpu"))


def test_peak_in_the_wrong_unit():
    with pytest.raises(flopmeter.FlopmeterError) as e:
        flopmeter.predict("resnet18", device="a100", peak=312)
    assert "peak=312e12" in str(e.value) and "TFLOP/s" in str(e.value)
    for bad in (0, -5, float("nan"), "fast", 1e20):
        with pytest.raises(flopmeter.FlopmeterError, match="peak"):
            flopmeter.check_peak(bad)
    assert flopmeter.check_peak("312T") == 312e12
    assert flopmeter.check_peak(312e12) == 312e12
    r = flopmeter.predict("resnet18", device="a100", peak="312T")
    assert r.task == "predict"


def test_other_bad_input():
    with pytest.raises(flopmeter.FlopmeterError, match="torch.nn.Module, a built-in"):
        flopmeter.count(42, torch.randn(1))
    with pytest.raises(flopmeter.FlopmeterError, match="needs its inputs"):
        flopmeter.count(CNN())
    with pytest.raises(flopmeter.FlopmeterError, match="no tensor among the inputs"):
        flopmeter.count(CNN(), ())
    with pytest.raises(flopmeter.FlopmeterError, match="optimizer='lbfgs'"):
        flopmeter.count("resnet18", optimizer="lbfgs")
    with pytest.raises(flopmeter.FlopmeterError, match="did you mean resnet18"):
        flopmeter.count("resnet1")
    with pytest.raises(flopmeter.FlopmeterError, match="batch=0"):
        flopmeter.count("resnet18", batch=0)
    with pytest.raises(flopmeter.FlopmeterError) as e:
        flopmeter.count(b"not an onnx model")
    assert e.value.status != "invalid argument" or "model" in str(e.value)
    with pytest.raises(flopmeter.FlopmeterError, match="empty"):
        flopmeter.count(b"")
    with pytest.raises(flopmeter.FlopmeterError, match=r"loss=: 'resnet18' has no tensor named 'no_such_output'"):
        flopmeter.count("resnet18", loss="no_such_output")
