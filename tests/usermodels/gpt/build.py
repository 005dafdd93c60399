"""Case 4: the build file beside nanoGPT's model.py, importing it as a script would."""

import torch
from model import GPT, GPTConfig

CHARS = ["\n", " "] + list("abcdefgh") + ["<eos>"]


def build(flash=True, seed=0):
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=len(CHARS), flash=flash))
    return model, CHARS


def build_manual(seed=0):
    """Case 5: the same GPT with attention written by hand (nanoGPT without flash)."""
    return build(flash=False, seed=seed)
