"""The ways people write sequence models, each opened as written (`--model FILE.py:build`) and
checked against its own computation: greedy and beam equal loops written here, scores equal the
model's own teacher-forced log-probability, attention equals weights recomputed here."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from explorer.analysis.probe import probe
from explorer.decoding import search
from explorer.decoding.scoring import encode_context, score
from explorer.usermodel.loader import open_model_file

HERE = Path(__file__).parent


def _annotated_logits(model, src, tgt):
    from tests.usermodels.annotated import subsequent_mask

    src_mask = (src != 0).unsqueeze(-2)
    tgt_mask = (tgt != 0).unsqueeze(-2) & subsequent_mask(tgt.size(-1))
    return model.generator(model(src, tgt, src_mask, tgt_mask))


def _bahdanau_logits(model, src, tgt):
    trg = torch.cat([tgt, tgt[:, :1]], dim=1).t()  # (T + 1, B): the last input is never read
    return model(src.t(), trg, 1.0)[1:].transpose(0, 1)  # teacher forcing always: (B, T, V)


def _translation_logits(model, src, tgt):
    from tests.usermodels.tutorials import create_mask

    src, tgt = src.t(), tgt.t()  # time-major, as the tutorial feeds it
    src_mask, tgt_mask, src_padding, tgt_padding = create_mask(src, tgt)
    return model(src, tgt, src_mask, tgt_mask, src_padding, tgt_padding,
                 src_padding).transpose(0, 1)


def _gru_tutorial_logits(model, src, tgt):
    """The tutorial's decoder loop with teacher forcing: forward_step per target position."""
    outputs, hidden = model["encoder"](src)
    steps = []
    for position in range(tgt.shape[1]):
        output, hidden, _ = model["decoder"].forward_step(tgt[:, position : position + 1], hidden,
                                                           outputs)
        steps.append(output)
    return torch.cat(steps, dim=1)  # (B, T, V)


def _gpt_logits(model, ids):
    return model(ids, targets=ids)[0]


def _rnn_model_logits(model, ids):
    from tests.usermodels.more_models import rnn_model_forward

    return rnn_model_forward(model, ids)


# case -> (build, the model's own teacher-forced logits (B, T, V))
SEQ2SEQ = {
    "lstm_mha": ("lstm_mha.py:build", lambda m, s, t: m(s, t)),
    "annotated": ("annotated.py:build", _annotated_logits),
    "bahdanau": ("bahdanau.py:build", _bahdanau_logits),
    "translation_transformer": ("tutorials.py:build_transformer", _translation_logits),
    "gru_tutorial": ("tutorials.py:build_gru", _gru_tutorial_logits),
}
LM = {
    "gpt_sdpa": ("gpt/build.py:build", _gpt_logits),
    "gpt_by_hand": ("gpt/build.py:build_manual", _gpt_logits),
    "transformer": ("more_models.py:build", lambda m, ids: m(ids)),
    "char_lstm": ("more_models.py:build_lstm", lambda m, ids: m(ids)[0]),
}


def _open(build: str, **kwargs):
    where, _, function = build.partition(":")
    if kwargs:  # build arguments: through a Recorder-free path, the loader's own call
        from explorer.usermodel.loader import call_build, make_workspace

        model, tokenizer, adapter = call_build(f"{HERE / where}:{function}", kwargs)
        return make_workspace(model, tokenizer, adapter)
    return open_model_file(f"{HERE / where}:{function}")


@pytest.fixture(scope="module", params=sorted(SEQ2SEQ))
def seq2seq(request):
    build, logits = SEQ2SEQ[request.param]
    workspace = _open(build)
    return workspace, workspace.model.inner, logits


@pytest.fixture(scope="module", params=sorted(LM) + ["object", "logprob", "time_major",
                                                     "rnn_model"])
def lm(request):
    extra = {"object": ("object", lambda m, ids: m(ids).logits),
             "logprob": ("logprob", lambda m, ids: m(ids)),
             "time_major": ("transformer_time_major", lambda m, ids: m(ids)),
             "rnn_model": ("rnn_model", _rnn_model_logits)}
    if request.param in extra:
        case, logits = extra[request.param]
        workspace = _open("more_models.py:build", case=case)
    else:
        build, logits = LM[request.param]
        workspace = _open(build)
    return workspace, workspace.model.inner, logits


def _next(logits_fn, model, *inputs):
    with torch.no_grad():
        return F.log_softmax(logits_fn(model, *[torch.tensor([x]) for x in inputs])[0, -1]
                             .double(), -1)


def _beam_loop(next_logprobs, root, eos, k, max_len):
    live, finished = [(0.0, [root])], []
    for step in range(max_len):
        candidates = sorted(((s + float(lp), p + [t]) for s, p in live
                             for t, lp in enumerate(next_logprobs(p))),
                            key=lambda c: -c[0])[: 2 * k]
        live = []
        for rank, (s, p) in enumerate(candidates):
            if p[-1] == eos or step == max_len - 1:
                if rank < k:
                    finished.append((s, p))
            elif len(live) < k:
                live.append((s, p))
        if len(finished) >= k or not live:
            break
    return max(finished, key=lambda f: f[0])


def test_seq2seq_greedy_beam_and_score_equal_the_models_own(seq2seq):
    workspace, model, logits_fn = seq2seq
    config = workspace.model.config
    src = encode_context(workspace, "a b c")
    prefix = [config.start_id]
    for _ in range(6):
        prefix.append(int(_next(logits_fn, model, src, prefix).argmax()))
        if prefix[-1] == config.eos_id:
            break
    greedy = search.greedy(workspace.model, src, max_len=6, tokenizer=workspace.tokenizer)
    assert greedy.token_ids == prefix[1:]
    best_score, best = _beam_loop(lambda p: _next(logits_fn, model, src, p), config.start_id,
                                  config.eos_id, 3, 5)
    result = search.beam_search(workspace.model, src, beam_size=3, max_len=5, alpha=0.0)
    assert result.nbest[0].token_ids == best[1:]
    assert result.nbest[0].score == pytest.approx(best_score, abs=1e-5)
    target = [workspace.tokenizer.token_to_id(t) for t in "d e".split()] + [config.eos_id]
    with torch.no_grad():
        own = logits_fn(model, torch.tensor([src]), torch.tensor([[config.start_id] + target[:-1]]))
    expected = F.log_softmax(own.double(), -1)[0, torch.arange(3), torch.tensor(target)].sum()
    assert score(workspace, "a b c", "d e").total == pytest.approx(float(expected), abs=1e-5)


def test_lm_greedy_beam_and_score_equal_the_models_own(lm):
    workspace, model, logits_fn = lm
    config = workspace.model.config
    context = encode_context(workspace, "abc")
    assert context == [workspace.tokenizer.token_to_id(c) for c in "abc"]  # characters
    prefix = list(context)
    for _ in range(5):
        prefix.append(int(_next(logits_fn, model, prefix).argmax()))
        if prefix[-1] == config.eos_id:
            break
    greedy = search.greedy(workspace.model, context, max_len=5, tokenizer=workspace.tokenizer)
    assert greedy.token_ids == prefix[len(context):]
    best_score, best = _beam_loop(lambda p: _next(logits_fn, model, context[:-1] + p),
                                  context[-1], config.eos_id, 3, 4)
    result = search.beam_search(workspace.model, context, beam_size=3, max_len=4, alpha=0.0)
    assert result.nbest[0].token_ids == best[1:]
    assert result.nbest[0].score == pytest.approx(best_score, abs=1e-5)
    text = "ab cd"
    fed = [config.start_id] + [workspace.tokenizer.token_to_id(c) for c in text]
    target = fed[1:] + [config.eos_id]
    with torch.no_grad():
        own = logits_fn(model, torch.tensor([fed]))
    expected = F.log_softmax(own.double(), -1)[0, torch.arange(len(target)),
                                                 torch.tensor(target)].sum()
    assert score(workspace, None, text).total == pytest.approx(float(expected), abs=1e-5)


@pytest.fixture(scope="module")
def reverser():
    """Case 1 trained briefly to reverse letters (one length per batch: it knows no padding)."""
    from explorer.usermodel.loader import make_workspace
    from tests.usermodels.lstm_mha import build

    model, vocab = build(seed=0)
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for step in range(200):
        src = torch.randint(4, len(vocab), (32, 1 + step % 8))  # (B, S) letters
        tgt = torch.cat([src.flip(1), torch.full((32, 1), 2)], dim=1)  # reversed, <eos>
        tgt_in = torch.cat([torch.full((32, 1), 1), tgt[:, :-1]], dim=1)  # <bos> first
        src = torch.cat([src, torch.full((32, 1), 2)], dim=1)  # tokens + <eos>
        loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return make_workspace(model.eval(), vocab)


def test_mixed_length_batches_decode_as_one_by_one(reverser):
    """Case 1: 20 sources of mixed lengths, alone and together, greedy and beam."""
    from explorer.usermodel.adapter import Adapter
    from explorer.usermodel.loader import make_workspace

    workspace = reverser
    assert not workspace.model.handles_padding
    rng = random.Random(0)
    sources = [" ".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 9)))
               for _ in range(20)]
    contexts = [encode_context(workspace, s) for s in sources]
    alone = [search.greedy(workspace.model, c, max_len=8).token_ids for c in contexts]
    together = [h.token_ids for h in search.greedy_batch(workspace.model, contexts, max_len=8)]
    assert together == alone
    short = search.greedy(workspace.model, encode_context(workspace, "a b c"), max_len=8,
                          tokenizer=workspace.tokenizer)
    assert short.text == "c b a"  # it reverses
    # fed the pads (as if it took a mask), the batch changes answers: what the grouping prevents
    padded = make_workspace(workspace.model.inner, workspace.tokenizer, Adapter(pad_mask=True))
    assert [h.token_ids for h in search.greedy_batch(padded.model, contexts, max_len=8)] != alone
    outputs = search.greedy_ids(workspace.model, contexts, [8] * 20)
    assert [ids for ids, _ in outputs] == alone
    beams = search.beam_search_batch(workspace.model, contexts, beam_size=2, max_len=6)
    assert [b.best.token_ids for b in beams] == [
        search.beam_search(workspace.model, c, beam_size=2, max_len=6).best.token_ids
        for c in contexts]


def _qk(linear, x, heads):
    batch, length, dim = x.shape
    q, k, _ = linear(x).split(dim, dim=-1)
    shape = (batch, length, heads, dim // heads)
    return q.view(shape).transpose(1, 2), k.view(shape).transpose(1, 2)  # (B, H, T, d)


@pytest.mark.parametrize("build", ["gpt/build.py:build", "gpt/build.py:build_manual"])
def test_gpt_attention_equals_masked_softmax(build):
    """Cases 4 and 5: SDPA with is_causal, and attention written by hand, both captured."""
    workspace = _open(build)
    model = workspace.model.inner
    seen = []
    handles = [block.attn.register_forward_pre_hook(lambda m, args: seen.append(args[0]))
               for block in model.transformer.h]
    try:
        snapshot = probe(workspace, "abc dea", "", step=0)
    finally:
        for handle in handles:
            handle.remove()
    assert [(a.kind, a.layer) for a in snapshot.attention] == [("decoder", 0), ("decoder", 1)]
    for attention, block, x in zip(snapshot.attention, model.transformer.h, seen):
        with torch.no_grad():
            q, k = _qk(block.attn.c_attn, x, 2)
        length = q.shape[2]
        mask = torch.full((length, length), float("-inf")).triu(1)
        expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + mask, -1)[0]
        assert attention.weights == pytest.approx(expected.numpy(), abs=1e-5)


def test_bahdanau_attention_and_hidden_states_equal_its_own():
    """Case 3: the hand-written attention found in its module, the GRUs' states through time."""
    from explorer.analysis.hidden import hidden_snapshot

    workspace = _open("bahdanau.py:build")
    model = workspace.model.inner
    snapshot = probe(workspace, "a b c", "d e", step=0)
    (cross,) = snapshot.attention
    src = torch.tensor([encode_context(workspace, "a b c")])  # (1, S)
    tgt = [workspace.tokenizer.token_to_id(t) for t in ["<sos>", "d", "e"]]
    weights, states = [], []
    with torch.no_grad():
        memory, hidden = model.encoder(src.t())
        for token in tgt:
            weights.append(model.decoder.attention(hidden, memory)[0])
            _, hidden = model.decoder(torch.tensor([token]), hidden, memory)
            states.append(hidden[0])
    assert cross.kind == "cross" and cross.weights.shape == (1, 3, 4)
    assert cross.weights[0] == pytest.approx(torch.stack(weights).numpy(), abs=1e-5)
    layers = {layer.name: layer for layer in hidden_snapshot(workspace, "a b c", "d e").layers}
    assert layers["encoder.l0"].hidden == pytest.approx(memory[:, 0, :8].T.numpy(), abs=1e-5)
    assert layers["decoder.l0"].hidden == pytest.approx(torch.stack(states).T.numpy(), abs=1e-5)


def test_annotated_transformer_attention_equals_its_own_p_attn():
    """Case 2: the weights its MultiHeadedAttention keeps in `self.attn`."""
    workspace = _open("annotated.py:build")
    model = workspace.model.inner
    snapshot = probe(workspace, "a b c", "d e", step=0)
    kinds = [(a.kind, a.layer) for a in snapshot.attention]
    assert kinds == [("encoder", 0), ("encoder", 1), ("decoder", 0), ("cross", 0), ("decoder", 1),
                     ("cross", 1)]
    with torch.no_grad():
        src = torch.tensor([encode_context(workspace, "a b c")])
        tgt = torch.tensor([[1] + [workspace.tokenizer.token_to_id(t) for t in "d e".split()]])
        _annotated_logits(model, src, tgt)
    own = [model.encoder.layers[0].self_attn.attn, model.encoder.layers[1].self_attn.attn,
           model.decoder.layers[0].self_attn.attn, model.decoder.layers[0].src_attn.attn,
           model.decoder.layers[1].self_attn.attn, model.decoder.layers[1].src_attn.attn]
    for attention, weights in zip(snapshot.attention, own):
        assert attention.weights == pytest.approx(weights[0].numpy(), abs=1e-5)


def test_train_mode_is_probed_in_eval_and_given_back():
    """Case 9: dropout off while the explorer reads, the user's mode afterwards."""
    workspace = _open("more_models.py:build", case="train_mode")
    model = workspace.model.inner
    assert model.training
    first = score(workspace, None, "abc").total
    assert score(workspace, None, "abc").total == first  # no dropout
    assert model.training and all(m.training for m in model.modules())


def test_a_model_that_takes_masks_shares_padded_batches():
    """Case 2: The Annotated Transformer's src_mask is filled from the pads, so sources of mixed
    lengths share one padded batch and come out as alone."""
    workspace = _open("annotated.py:build")
    assert workspace.model.handles_padding
    contexts = [encode_context(workspace, s) for s in ["a", "b c d e f", "g h a"]]
    together = search.greedy_batch(workspace.model, contexts, max_len=6)
    assert [h.token_ids for h in together] == [
        search.greedy(workspace.model, c, max_len=6).token_ids for c in contexts]


@pytest.mark.parametrize("build", sorted(b for b, _ in [*SEQ2SEQ.values(), *LM.values()]))
def test_explorer_show_opens_the_objects_as_the_file_does(build):
    """`explorer.show(model, tokenizer)` (its core half) reads each model as `--model` does."""
    from explorer.usermodel.loader import call_build
    from explorer.usermodel.show import shown_workspace

    where, _, function = build.partition(":")
    model, tokenizer, adapter = call_build(f"{HERE / where}:{function}")
    model.eval()
    source = "a b c" if "gpt" not in build and "more" not in build else None
    shown = shown_workspace(model, tokenizer, source=source, adapter=adapter)
    opened = _open(build)
    context = encode_context(opened, source or "ab")
    assert (search.greedy(shown.model, context, max_len=5).token_ids
            == search.greedy(opened.model, context, max_len=5).token_ids)
    assert shown.model.notes == opened.model.notes


def test_char_lstm_hidden_states_equal_the_lstm_outputs():
    """Case 7: both layers' h_t through time, as nn.LSTM computes them."""
    from explorer.analysis.hidden import hidden_snapshot

    workspace = _open("more_models.py:build_lstm")
    model = workspace.model.inner
    layers = {layer.name: layer for layer in hidden_snapshot(workspace, "abc de", "").layers}
    ids = torch.tensor([[workspace.tokenizer.token_to_id(c) for c in "abc de"]])
    with torch.no_grad():
        first = torch.nn.LSTM(16, 16, batch_first=True)  # the first layer alone
        first.load_state_dict({k: v for k, v in model.lstm.state_dict().items()
                               if k.endswith("_l0")})
        h0, _ = first(model.embed(ids))
        h1, _ = model.lstm(model.embed(ids))
    assert layers["lm.l0"].hidden == pytest.approx(h0[0].T.numpy(), abs=1e-5)
    assert layers["lm.l1"].hidden == pytest.approx(h1[0].T.numpy(), abs=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_a_model_on_the_gpu_decodes_and_scores_as_its_own_loop():
    """Case 9: the model where the user put it; inputs follow it."""
    workspace = _open("gpt/build.py:build")
    model = workspace.model.inner.cuda().eval()
    context = encode_context(workspace, "abc")
    prefix = list(context)
    eos = workspace.model.config.eos_id
    with torch.no_grad():
        for _ in range(5):
            prefix.append(int(model(torch.tensor([prefix], device="cuda"))[0][0, -1].argmax()))
            if prefix[-1] == eos:
                break
    assert search.greedy(workspace.model, context, max_len=5).token_ids == prefix[len(context):]
    fed = torch.tensor([[1, 2, 3]], device="cuda")  # " " (the start id) a b
    with torch.no_grad():
        own = F.log_softmax(_gpt_logits(model, fed).double(), -1)
    expected = own[0, torch.arange(3), torch.tensor([2, 3, eos], device="cuda")].sum()
    assert score(workspace, None, "ab").total == pytest.approx(float(expected), abs=1e-5)


def test_the_training_loss_of_a_stepped_model_is_its_own_cross_entropy():
    """Case 3: training and evaluation get teacher-forced logits by stepping, never calling
    forward(src, trg, teacher_forcing_ratio); the loss is the model's own."""
    from explorer.data.batching import Batch
    from explorer.usermodel.feed import user_loss

    workspace = _open("bahdanau.py:build")
    model = workspace.model.inner
    src = torch.tensor([encode_context(workspace, "a b c")])
    tgt_in, tgt_out = torch.tensor([[1, 5, 6]]), torch.tensor([[5, 6, 2]])
    with torch.no_grad():
        loss = user_loss(workspace.model, Batch(src=src, tgt_in=tgt_in, tgt_out=tgt_out)).loss
        own = _bahdanau_logits(model, src, tgt_in)  # (1, 3, V)
    assert float(loss) == pytest.approx(float(F.cross_entropy(own[0], tgt_out[0])), abs=1e-5)


def test_tutorial_attention_equals_the_weights_its_decoder_returns():
    """The PyTorch tutorial's AttnDecoderRNN returns its attention weights per step;
    nn.Transformer's layers are MultiheadAttention: encoder, decoder and cross maps."""
    workspace = _open("tutorials.py:build_gru")
    model = workspace.model.inner
    snapshot = probe(workspace, "a b c", "d e", step=0)
    (cross,) = snapshot.attention
    src = torch.tensor([encode_context(workspace, "a b c")])
    weights = []
    with torch.no_grad():
        outputs, hidden = model["encoder"](src)
        for token in [1] + [workspace.tokenizer.token_to_id(t) for t in "d e".split()]:
            _, hidden, attn = model["decoder"].forward_step(torch.tensor([[token]]), hidden,
                                                            outputs)
            weights.append(attn[0, 0])
    assert cross.kind == "cross"
    assert cross.weights[0] == pytest.approx(torch.stack(weights).numpy(), abs=1e-5)
    translation = _open("tutorials.py:build_transformer")
    kinds = [(a.kind, a.layer) for a in probe(translation, "a b c", "d e", step=0).attention]
    assert kinds == [("encoder", 0), ("encoder", 1), ("decoder", 0), ("cross", 0), ("decoder", 1),
                     ("cross", 1)]


def test_the_examples_evaluation_of_a_padding_unaware_model_is_its_one_by_one_answer(reverser):
    """Case 1 in the Examples table: outputs and losses as each pair alone gives them."""
    from explorer.analysis.examples import evaluate_examples

    workspace = reverser
    model = workspace.model.inner
    rng = random.Random(1)
    words = lambda n: " ".join(rng.choice("abcdefgh") for _ in range(n))  # noqa: E731
    pairs = [(words(rng.randint(1, 8)), words(rng.randint(1, 6))) for _ in range(12)]
    table = evaluate_examples(workspace, pairs, batch_size=5, max_len=6)
    eos = workspace.model.config.eos_id
    for row, (source, reference) in enumerate(pairs):
        alone = search.greedy(workspace.model, encode_context(workspace, source), max_len=6,
                              tokenizer=workspace.tokenizer)
        assert table.column("output")[row] == alone.text
        target = [workspace.tokenizer.token_to_id(t) for t in reference.split()] + [eos]
        with torch.no_grad():
            own = model(torch.tensor([encode_context(workspace, source)]),
                        torch.tensor([[workspace.model.config.start_id] + target[:-1]]))
        expected = -F.log_softmax(own.double(), -1)[0, torch.arange(len(target)),
                                                     torch.tensor(target)].sum()
        assert table.column("loss")[row] == pytest.approx(float(expected), abs=1e-4)
