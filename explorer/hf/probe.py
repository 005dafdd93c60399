"""The attention probe's input for a Hugging Face encoder-decoder (analysis.probe's Encoded).

The source is exactly `tokenizer(text)`; the target is what the model is trained on
(`tokenizer(text_target=...)`, ending in eos), fed after the model's decoder start token.
"""

from __future__ import annotations

import torch

from explorer.analysis.probe import Encoded


def encode_pair(workspace, source: str, target: str) -> Encoded:
    config, tokenizer = workspace.model.config, workspace.tokenizer
    src = tokenizer.encode(source)
    tgt_out = tokenizer.encode_target(target)
    tgt_in = [config.start_id] + tgt_out[:-1]
    if config.max_src_len:
        src = src[: config.max_src_len]
    if config.max_len:
        tgt_in, tgt_out = tgt_in[: config.max_len], tgt_out[: config.max_len]
    return Encoded(
        inputs=(torch.tensor([src]), torch.tensor([tgt_in])),
        targets=torch.tensor([tgt_out]),
        labels={"source": tokenizer.tokens(src), "target_in": tokenizer.tokens(tgt_in),
                "target_out": tokenizer.tokens(tgt_out)},
    )
