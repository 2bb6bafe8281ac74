#!/usr/bin/env python3
"""Parameter counts of HuggingFace models built from config.json files (from_config: random
weights, nothing downloaded), one line per file: PATH PARAMS (model.parameters(), every
shared tensor once). The reference for flopmeter's language-model builder
(tests/test_llm.c holds the closed forms; this checks them against transformers)."""
import json
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM


def count(path):
    cfg = json.load(open(path))
    config = AutoConfig.for_model(**cfg)
    mt = cfg["model_type"]
    with torch.device("meta"):
        if mt == "bert":
            model = AutoModelForMaskedLM.from_config(config)
        elif mt == "t5":
            model = AutoModelForSeq2SeqLM.from_config(config)
        else:
            model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


for path in sys.argv[1:]:
    print(path, count(path))
