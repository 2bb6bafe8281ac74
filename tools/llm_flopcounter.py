#!/usr/bin/env python3
"""PyTorch's FlopCounterMode on a HuggingFace model built from a config.json (from_config,
random weights, nothing downloaded), forward of one sequence of SEQ tokens with SDPA:
PATH TOTAL {op: flops}. Compared with `flopmeter count --config PATH --seq SEQ --infer`
(2 x the MACs of its matmul and attention layers) in docs/zoo.md.
usage: tools/llm_flopcounter.py CONFIG.json SEQ"""
import json
import sys

import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModelForCausalLM

path, seq = sys.argv[1], int(sys.argv[2])
cfg = json.load(open(path))
config = AutoConfig.for_model(**cfg)
config._attn_implementation = "sdpa"
model = AutoModelForCausalLM.from_config(config).eval()
ids = torch.randint(0, cfg["vocab_size"], (1, seq))
with torch.no_grad(), FlopCounterMode(display=False) as fc:
    model(ids)
print(path, fc.get_total_flops(),
      {str(k): v for k, v in fc.get_flop_counts()["Global"].items()})
