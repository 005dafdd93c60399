"""User models opened as workspaces: what the panels read equals torch's own modules' output, and
decoding equals loops written here."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from explorer.analysis.hidden import hidden_snapshot
from explorer.analysis.probe import probe
from explorer.decoding import search
from explorer.decoding.scoring import encode_context, score
from explorer.errors import UserError
from explorer.usermodel.adapter import Adapter
from explorer.usermodel.loader import make_workspace, open_model_file
from tests.usermodel import homework_gpt, homework_seq2seq

HERE = Path(__file__).parent
SEQ2SEQ = f"{HERE / 'homework_seq2seq.py'}:build"
VOCAB = homework_seq2seq.VOCAB
BOS, EOS = VOCAB.index("<bos>"), VOCAB.index("<eos>")


@pytest.fixture(scope="module")
def homework():
    workspace = open_model_file(SEQ2SEQ)
    return workspace, workspace.model.inner


def ids(text):
    return [VOCAB.index(t) for t in text.split()]


def test_seq2seq_attention_equals_need_weights_output(homework):
    workspace, model = homework
    snapshot = probe(workspace, "a b c d", "e f g", step=0)
    (cross,) = snapshot.attention
    assert cross.kind == "cross" and cross.layer == 0
    src, tgt_in = torch.tensor([ids("a b c d") + [EOS]]), torch.tensor([[BOS] + ids("e f g")])
    with torch.no_grad():
        memory, state = model.encoder(model.embed(src))
        decoded, _ = model.decoder(model.embed(tgt_in), state)
        _, weights = model.attention(decoded, memory, memory, need_weights=True,
                                     average_attn_weights=False)  # (1, H, T, S)
    assert cross.weights.shape == (2, 4, 5)
    assert cross.weights == pytest.approx(weights[0].numpy(), abs=1e-6)
    assert cross.rows == ["e", "f", "g", "<eos>"] and cross.cols == ["a", "b", "c", "d", "<eos>"]


def test_seq2seq_hidden_states_equal_the_lstm_outputs(homework):
    workspace, model = homework
    snapshot = hidden_snapshot(workspace, "a b c d", "e f g")
    layers = {layer.name: layer for layer in snapshot.layers}
    assert set(layers) == {"encoder.l0", "decoder.l0"}
    src, tgt_in = torch.tensor([ids("a b c d") + [EOS]]), torch.tensor([[BOS] + ids("e f g")])
    with torch.no_grad():
        memory, (h, c) = model.encoder(model.embed(src))
        decoded, _ = model.decoder(model.embed(tgt_in), (h, c))
    assert layers["encoder.l0"].hidden == pytest.approx(memory[0].T.numpy(), abs=1e-5)
    assert layers["decoder.l0"].hidden == pytest.approx(decoded[0].T.numpy(), abs=1e-5)
    assert layers["encoder.l0"].cell[:, -1] == pytest.approx(c[0, 0].numpy(), abs=1e-5)
    # the gates replay torch's equations: c_t = f c_{t-1} + i g
    gates = layers["encoder.l0"].gates
    cell = layers["encoder.l0"].cell
    assert cell[:, 1] == pytest.approx(gates["f"][:, 1] * cell[:, 0] + gates["i"][:, 1]
                                       * gates["g"][:, 1], abs=1e-5)
    # and gradients per time step reach the recurrent states
    assert len(probe(workspace, "a b c d", "e f g", 0).grad_time["encoder.l0"]) == 5


def _next_logprobs(model, src, prefix):
    with torch.no_grad():
        return F.log_softmax(model(torch.tensor([src]), torch.tensor([prefix]))[0, -1].double(), -1)


def test_greedy_equals_a_loop(homework):
    workspace, model = homework
    src = encode_context(workspace, "a b c")
    assert src == ids("a b c") + [EOS]
    prefix = [BOS]
    for _ in range(8):
        prefix.append(int(_next_logprobs(model, src, prefix).argmax()))
        if prefix[-1] == EOS:
            break
    hypothesis = search.greedy(workspace.model, src, max_len=8, tokenizer=workspace.tokenizer)
    assert hypothesis.token_ids == prefix[1:]


def test_beam_equals_a_loop(homework):
    workspace, model = homework
    src, k, max_len = encode_context(workspace, "h g f"), 3, 5
    live, finished = [(0.0, [BOS])], []
    for step in range(max_len):
        candidates = sorted(((score + float(lp), prefix + [token])
                             for score, prefix in live
                             for token, lp in enumerate(_next_logprobs(model, src, prefix))),
                            key=lambda c: -c[0])[: 2 * k]
        live = []
        for rank, (score, prefix) in enumerate(candidates):
            if prefix[-1] == EOS or step == max_len - 1:
                if rank < k:
                    finished.append((score, prefix))
            elif len(live) < k:
                live.append((score, prefix))
        if len(finished) >= k or not live:
            break
    best_score, best = max(finished, key=lambda f: f[0])
    result = search.beam_search(workspace.model, src, beam_size=k, max_len=max_len, alpha=0.0,
                                tokenizer=workspace.tokenizer)
    assert result.nbest[0].token_ids == best[1:]
    assert result.nbest[0].score == pytest.approx(best_score, abs=1e-5)  # float32 logits


def test_scoring_is_teacher_forced_log_probability(homework):
    workspace, model = homework
    result = score(workspace, "a b", "c d")
    src, target = ids("a b") + [EOS], ids("c d") + [EOS]
    with torch.no_grad():
        logits = model(torch.tensor([src]), torch.tensor([[BOS] + target[:-1]]))
    expected = F.log_softmax(logits.double(), -1)[0, torch.arange(3), torch.tensor(target)].sum()
    assert result.total == pytest.approx(float(expected), abs=1e-6)


def test_fast_decoding_through_encode_and_step_gives_the_same_beam(homework):
    workspace, model = homework

    def encode(model, src):
        memory, (h, c) = model.encoder(model.embed(src))
        # batch first, so beam search picks rows of every tensor
        return {"memory": memory, "h": h.transpose(0, 1), "c": c.transpose(0, 1)}

    def step(model, tokens, state):
        hc = (state["h"].transpose(0, 1).contiguous(), state["c"].transpose(0, 1).contiguous())
        decoded, (h, c) = model.decoder(model.embed(tokens[:, None]), hc)
        context, _ = model.attention(decoded, state["memory"], state["memory"])
        logits = model.out(torch.cat([decoded, context], dim=-1))[:, 0]
        return logits, {**state, "h": h.transpose(0, 1), "c": c.transpose(0, 1)}

    fast = make_workspace(model, VOCAB, Adapter(encode=encode, step=step))
    src = encode_context(fast, "h g f")
    slow_result = search.beam_search(workspace.model, src, beam_size=3, max_len=6)
    fast_result = search.beam_search(fast.model, src, beam_size=3, max_len=6)
    assert [h.token_ids for h in fast_result.nbest] == [h.token_ids for h in slow_result.nbest]
    assert fast_result.nbest[0].score == pytest.approx(slow_result.nbest[0].score, abs=1e-6)
    assert fast_result.nodes[1].attention is not None  # the cross-attention of each step


def _reference_attention(queries_keys, heads, length):
    """softmax(QKᵀ/√d + causal mask) per head, from the (B, T, D) queries and keys."""
    q, k = queries_keys
    d = q.shape[-1] // heads
    q = q.view(1, length, heads, d).transpose(1, 2)  # (1, H, T, d)
    k = k.view(1, length, heads, d).transpose(1, 2)
    mask = torch.full((length, length), float("-inf")).triu(1)
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d) + mask, dim=-1)[0]


@pytest.mark.parametrize("kind", ["layers", "sdpa"])
def test_gpt_attention_equals_softmax_qk_plus_mask(kind):
    model, vocab = homework_gpt.build(kind)
    workspace = make_workspace(model, vocab, Adapter(split="chars"))
    assert workspace.model.config.family == "user-lm"
    text = "abc dea"
    seen = []  # each attention's (queries, keys), from torch's own hooks on the user's modules
    if kind == "layers":
        def keep(module, args):
            x = args[0]
            w, b = module.self_attn.in_proj_weight, module.self_attn.in_proj_bias
            q, k, _ = F.linear(x, w, b).chunk(3, dim=-1)
            seen.append((q, k))
        handles = [block.register_forward_pre_hook(keep) for block in model.blocks]
    else:
        def keep(module, args, output):
            q, k, _ = output.split(output.shape[-1] // 3, dim=-1)
            seen.append((q, k))
        handles = [attn.qkv.register_forward_hook(keep) for attn in model.attn]
    try:
        snapshot = probe(workspace, text, "", step=0)
    finally:
        for handle in handles:
            handle.remove()
    assert [(a.kind, a.layer) for a in snapshot.attention] == [("decoder", 0), ("decoder", 1)]
    length = len(text) - 1  # the probe predicts each next character
    for attention, pair in zip(snapshot.attention, seen):
        expected = _reference_attention([t.detach() for t in pair], 2, length)
        assert attention.weights == pytest.approx(expected.numpy(), abs=1e-5)
    # the residual stream per block (TransformerEncoderLayer outputs) feeds gradient-through-depth
    if kind == "layers":
        assert snapshot.grad_depth_labels and len(snapshot.grad_depth) == 2
    # an idle model keeps no hooks
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_gpt_decodes_a_prompt_like_a_loop():
    model, vocab = homework_gpt.build("layers")
    workspace = make_workspace(model, vocab, Adapter(split="chars"))
    context = encode_context(workspace, "abc")
    prefix = list(context)
    for _ in range(5):
        with torch.no_grad():
            prefix.append(int(model(torch.tensor([prefix]))[0, -1].argmax()))
        if prefix[-1] == vocab.index("<eos>"):
            break
    hypothesis = search.greedy(workspace.model, context, max_len=5, tokenizer=workspace.tokenizer)
    assert hypothesis.token_ids == prefix[len(context):]


def test_tokenizers_accepted_and_refused():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    model, _ = homework_seq2seq.build()
    backend = Tokenizer(WordLevel({t: i for i, t in enumerate(VOCAB)}, unk_token="<unk>"))
    backend.pre_tokenizer = Whitespace()
    workspace = make_workspace(model, backend)
    assert encode_context(workspace, "a b z") == [4, 5, 3, EOS]
    with pytest.raises(UserError, match=r"^tokenizer: got builtins.dict; accepted: a Hugging "
                                        r"Face tokenizer, a tokenizers.Tokenizer, or a list"):
        make_workspace(model, {"a": 1})
    class ThreeInputs(torch.nn.Module):
        def forward(self, a, b, c):
            return a

    with pytest.raises(UserError, match="kind: the model's forward takes 3 inputs"):
        make_workspace(ThreeInputs(), VOCAB)
