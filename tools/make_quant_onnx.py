#!/usr/bin/python3
"""Real files made by ONNX Runtime's own tools, for tests/test_onnx.c (tests/data/onnx/ort/).

Two steps, two Pythons (Debian's torch 1.13 wants Debian's numpy; onnxruntime from PyPI wants
its own):
  /usr/bin/python3 tools/make_quant_onnx.py export OUT
      PyTorch exports of tiny float models: an MLP, an LSTM, a CNN, a transformer encoder layer
  PYTHONPATH=/path/to/onnxruntime-site /usr/bin/python3 tools/make_quant_onnx.py ort OUT
      onnxruntime.quantization.quantize_dynamic (MLP -> DynamicQuantizeLinear + MatMulInteger,
      LSTM -> DynamicQuantizeLSTM), quantize_static in QDQ and QOperator formats (CNN, with a
      tiny calibration reader), onnxruntime.transformers.optimizer (model_type bert) on the
      encoder layer
The models are tiny so the files (weights included) are a few KB; shapes are fixed (batch 2)
so the tests need no bindings.
"""
import os
import sys


def export(out):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 8)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    class RNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(8, 16)

        def forward(self, x):
            return self.lstm(x)[0]

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, padding=1)
            self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.fc = nn.Linear(16 * 4 * 4, 10)

        def forward(self, x):
            x = torch.relu(self.c1(x))
            x = torch.relu(self.c2(x))
            return self.fc(torch.flatten(x, 1))

    def save(m, x, name, opset=13):
        m.eval()
        torch.onnx.export(m, x, os.path.join(out, name), opset_version=opset,
                          input_names=["x"], output_names=["y"])

    save(MLP(), torch.randn(2, 16), "mlp_fp32.onnx")
    save(RNN(), torch.randn(5, 2, 8), "lstm_fp32.onnx")
    save(CNN(), torch.randn(2, 3, 8, 8), "cnn_fp32.onnx")
    enc = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu",
                                     batch_first=True)
    save(enc, torch.randn(2, 6, 32), "encoder_fp32.onnx", opset=14)


def ort(out):
    import numpy as np
    from onnxruntime.quantization import (QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static, CalibrationDataReader)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    p = lambda n: os.path.join(out, n)
    quantize_dynamic(p("mlp_fp32.onnx"), p("mlp_dynamic.onnx"), weight_type=QuantType.QInt8)
    quantize_dynamic(p("lstm_fp32.onnx"), p("lstm_dynamic.onnx"), weight_type=QuantType.QInt8,
                     op_types_to_quantize=["LSTM"])

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.data = iter([{"x": rng.standard_normal((2, 3, 8, 8)).astype(np.float32)}
                              for _ in range(4)])

        def get_next(self):
            return next(self.data, None)

    quant_pre_process(p("cnn_fp32.onnx"), p("cnn_pre.onnx"))
    quantize_static(p("cnn_pre.onnx"), p("cnn_qdq.onnx"), Reader(), quant_format=QuantFormat.QDQ)
    quantize_static(p("cnn_pre.onnx"), p("cnn_qop.onnx"), Reader(),
                    quant_format=QuantFormat.QOperator)
    os.remove(p("cnn_pre.onnx"))
    from onnxruntime.transformers import optimizer
    m = optimizer.optimize_model(p("encoder_fp32.onnx"), model_type="bert", num_heads=4,
                                 hidden_size=32, opt_level=0)
    m.save_model_to_file(p("encoder_bert_opt.onnx"))
    print("fused:", m.get_fused_operator_statistics())


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("export", "ort"):
        sys.exit(__doc__)
    os.makedirs(sys.argv[2], exist_ok=True)
    (export if sys.argv[1] == "export" else ort)(sys.argv[2])
