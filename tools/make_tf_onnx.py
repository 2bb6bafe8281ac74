#!/usr/bin/python3
"""tf2onnx exports of tiny Keras models for tests/test_onnx.c (tests/data/onnx/tf2onnx/):
a CNN (Conv2D 3x3 same 3 -> 8, ReLU, MaxPool 2, Conv2D 3x3 valid 8 -> 16, GlobalAveragePool,
Dense 10) and an LSTM (16 units over 8 features, 5 steps, then Dense 4), batch 2, NHWC as
Keras writes it (tf2onnx inserts the Transposes).

Run: PYTHONPATH=<site with tensorflow-cpu and tf2onnx> /usr/bin/python3 tools/make_tf_onnx.py OUT
"""
import os
import sys


def main(out):
    os.makedirs(out, exist_ok=True)
    import tensorflow as tf
    import tf2onnx
    tf.random.set_seed(0)
    cnn = tf.keras.Sequential([
        tf.keras.Input((8, 8, 3), batch_size=2),
        tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Conv2D(16, 3, padding="valid"),
        tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(10),
    ])
    lstm = tf.keras.Sequential([
        tf.keras.Input((5, 8), batch_size=2),
        tf.keras.layers.LSTM(16),
        tf.keras.layers.Dense(4),
    ])
    for name, m, shape in (("keras_cnn", cnn, (2, 8, 8, 3)), ("keras_lstm", lstm, (2, 5, 8))):
        spec = (tf.TensorSpec(shape, tf.float32, name="x"),)
        # from_keras fails on Keras 3 models (a KeyError on its output names): convert the
        # model's call as a tf.function instead
        fn = tf.function(lambda x, m=m: m(x), input_signature=spec)
        tf2onnx.convert.from_function(fn, input_signature=spec, opset=13,
                                      output_path=os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
