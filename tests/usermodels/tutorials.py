"""Two more encoder-decoders as PyTorch's own tutorials write them, shrunk.

* `translation_transformer`: "Language Translation with nn.Transformer": a Seq2SeqTransformer whose
  forward takes time-major ids and seven arguments (src_mask, tgt_mask, the padding masks), opened
  with `Adapter(forward=...)` that builds the masks as the tutorial's `create_mask` does;
* `gru_tutorial`: "NLP From Scratch: Translation with a Sequence to Sequence Network and
  Attention": an EncoderRNN and an AttnDecoderRNN with BahdanauAttention (batch first, weights
  `F.softmax(scores, dim=-1)` returned and multiplied into the keys with torch.bmm), two modules
  held in a ModuleDict, opened with `Adapter(encode=, step=)`.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

import explorer

VOCAB = ["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefgh")
PAD_IDX = 0


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=64):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding.unsqueeze(-2))

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, emb_size):
        super().__init__()
        self.embedding, self.emb_size = nn.Embedding(vocab_size, emb_size), emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, layers=2, emb_size=16, nhead=2, src_vocab=len(VOCAB), tgt_vocab=len(VOCAB),
                 dim_feedforward=32, dropout=0.1):
        super().__init__()
        self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=layers,
                                          num_decoder_layers=layers,
                                          dim_feedforward=dim_feedforward, dropout=dropout)
        self.generator = nn.Linear(emb_size, tgt_vocab)
        self.src_tok_emb = TokenEmbedding(src_vocab, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask,
                                tgt_padding_mask, memory_key_padding_mask)
        return self.generator(outs)


def generate_square_subsequent_mask(sz):
    mask = (torch.triu(torch.ones((sz, sz))) == 1).transpose(0, 1)
    return mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, float(0.0))


def create_mask(src, tgt):  # time-major (S, N), (T, N)
    src_seq_len, tgt_seq_len = src.shape[0], tgt.shape[0]
    tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
    src_mask = torch.zeros((src_seq_len, src_seq_len)).type(torch.bool)
    src_padding_mask = (src == PAD_IDX).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def transformer_forward(model, src, tgt):  # batch first in, (B, T, V) out
    src, tgt = src.t(), tgt.t()
    src_mask, tgt_mask, src_padding, tgt_padding = create_mask(src, tgt)
    logits = model(src, tgt, src_mask, tgt_mask, src_padding, tgt_padding, src_padding)
    return logits.transpose(0, 1)


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


def gru_encode(model, src):
    outputs, hidden = model["encoder"](src)
    return {"outputs": outputs, "hidden": hidden.transpose(0, 1)}  # batch first


def gru_step(model, tokens, state):
    output, hidden, _ = model["decoder"].forward_step(
        tokens[:, None], state["hidden"].transpose(0, 1).contiguous(), state["outputs"])
    return output[:, 0], {**state, "hidden": hidden.transpose(0, 1)}


def build_transformer(seed=0):
    torch.manual_seed(seed)
    return (Seq2SeqTransformer(), VOCAB,
            explorer.Adapter(kind="seq2seq", forward=transformer_forward, pad_mask=True))


def build_gru(seed=0):
    torch.manual_seed(seed)
    model = nn.ModuleDict({"encoder": EncoderRNN(len(VOCAB), 16),
                           "decoder": AttnDecoderRNN(16, len(VOCAB))})
    return model, VOCAB, explorer.Adapter(kind="seq2seq", encode=gru_encode, step=gru_step)
