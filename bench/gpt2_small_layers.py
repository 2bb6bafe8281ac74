#!/usr/bin/python3
"""GPT-2 small's Dropout and embedding layers alone, at their full sizes, as ONNX files for
timing the CPU backend's kernels of those ops (bench/slow_paths.py, bench/RESULTS.md) where
PyTorch is not installed to export the whole network (bench/export_fullsize.py needs it):

    /usr/bin/python3 bench/gpt2_small_layers.py [--out DIR (default bench/data/fullsize)]

Made with onnx.helper alone (Debian's python3-onnx); the weights have dims and no data
(flopmeter reads shapes only). The batch is symbolic (`flopmeter measure FILE --batch B`), the
sequence 1024 tokens, as HuggingFace's GPT-2 small (openai-community/gpt2 config.json: 12 heads,
768 wide, 50257 words, dropout 0.1):

    gpt2_small_dropouts.onnx    x (B, 1024, 768) * w, then Dropout (the residual and embedding
                                dropouts' shape); a (B, 12, 1024, 1024) * wa, then Dropout (the
                                attention probabilities' dropout); the Muls give the Dropouts
                                an input that needs a gradient, and a same-sized op to compare
    gpt2_small_embeddings.onnx  Gather of wte (50257, 768) by ids (B, 1024) plus Gather of wpe
                                (1024, 768): the token and position embeddings, untied (the
                                built-in `gpt2` ties wte to the output projection)
"""
import argparse
import os

from onnx import TensorProto, helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
B = "batch"


def table(name, dims):
    return TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)


def dropouts():
    nodes = [helper.make_node("Mul", ["x", "w"], ["xs"], name="resid_scale"),
             helper.make_node("Dropout", ["xs"], ["d1"], ratio=0.1, name="resid_drop"),
             helper.make_node("Mul", ["a", "wa"], ["as"], name="attn_scale"),
             helper.make_node("Dropout", ["as"], ["d2"], ratio=0.1, name="attn_drop")]
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f, [B, 1024, 768]),
              helper.make_tensor_value_info("a", f, [B, 12, 1024, 1024])]
    outputs = [helper.make_tensor_value_info("d1", f, [B, 1024, 768]),
               helper.make_tensor_value_info("d2", f, [B, 12, 1024, 1024])]
    g = helper.make_graph(nodes, "gpt2_small_dropouts", inputs, outputs,
                          [table("w", [768]), table("wa", [1024])])
    # opset 11: the ratio is an attribute (from opset 12 it is an input)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])


def embeddings():
    nodes = [helper.make_node("Gather", ["wte", "ids"], ["e"], axis=0, name="wte"),
             helper.make_node("Gather", ["wpe", "pos"], ["p"], axis=0, name="wpe"),
             helper.make_node("Add", ["e", "p"], ["h"], name="add")]
    i64 = TensorProto.INT64
    inputs = [helper.make_tensor_value_info("ids", i64, [B, 1024]),
              helper.make_tensor_value_info("pos", i64, [1, 1024])]
    outputs = [helper.make_tensor_value_info("h", TensorProto.FLOAT, [B, 1024, 768])]
    g = helper.make_graph(nodes, "gpt2_small_embeddings", inputs, outputs,
                          [table("wte", [50257, 768]), table("wpe", [1024, 768])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "data", "fullsize"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, build in (("gpt2_small_dropouts", dropouts), ("gpt2_small_embeddings", embeddings)):
        path = os.path.join(args.out, name + ".onnx")
        save(build(), path)
        print(path)


if __name__ == "__main__":
    main()
