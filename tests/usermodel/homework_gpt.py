"""Two GPT-style language models written with plain torch.nn, with no explorer code.

`TorchLayersGPT` stacks nn.TransformerEncoderLayer with a causal mask; `SDPAGPT` calls
F.scaled_dot_product_attention itself. Characters are the tokens.
"""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = ["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefgh ")


class TorchLayersGPT(nn.Module):
    def __init__(self, vocab_size=len(VOCAB), dim=16, heads=2, layers=2, max_len=32):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True)
            for _ in range(layers))
        self.lm_head = nn.Linear(dim, vocab_size)

    def forward(self, ids):
        length = ids.shape[1]
        x = self.tokens(ids) + self.positions(torch.arange(length))  # (B, T, D)
        mask = nn.Transformer.generate_square_subsequent_mask(length)  # (T, T): 0 / -inf
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=True)
        return self.lm_head(x)  # (B, T, V)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)
                   for t in (q, k, v))  # (B, H, T, D/H)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(batch, length, dim))


class SDPAGPT(nn.Module):
    def __init__(self, vocab_size=len(VOCAB), dim=16, heads=2, layers=2, max_len=32):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.attn = nn.ModuleList(CausalSelfAttention(dim, heads) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.lm_head = nn.Linear(dim, vocab_size)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))  # (B, T, D)
        for attn, norm in zip(self.attn, self.norms):
            x = x + attn(norm(x))
        return self.lm_head(x)


def build(kind="layers", seed=0):
    torch.manual_seed(seed)
    model = TorchLayersGPT() if kind == "layers" else SDPAGPT()
    return model.eval(), VOCAB
