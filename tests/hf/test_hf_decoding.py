"""Decoding Hugging Face models with explorer.decoding, checked against transformers itself."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from explorer.decoding import (  # noqa: E402
    StepDecoder, beam_search, greedy, greedy_batch, sample, score, score_ids,
)
from explorer.decoding.scoring import encode_context  # noqa: E402

PROMPTS = {"gpt2": "the cat sat", "marian": "the cat sat on the mat", "t5": "the dog ran in the park"}


def reference_greedy(workspace, context, max_new):
    """transformers' own generate: ids of the new tokens and their log-probabilities."""
    hf = workspace.model.hf
    ids = torch.tensor([context], device=hf.device)
    out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                      max_new_tokens=max_new, output_logits=True, return_dict_in_generate=True)
    start = len(context) if workspace.family == "hf-causal-lm" else 1  # the prompt / decoder start
    new = out.sequences[0, start:].tolist()
    logprobs = [F.log_softmax(step[0].double(), -1)[t].item() for step, t in zip(out.logits, new)]
    return new, logprobs


def teacher_forced(workspace, context, target_ids):
    """log p of each target id from one forward pass of the transformers model."""
    hf, config = workspace.model.hf, workspace.model.config
    with torch.no_grad():
        if workspace.family == "hf-causal-lm":
            fed = torch.tensor([context + target_ids[:-1]])
            logits = hf(input_ids=fed).logits[0, len(context) - 1:]
        else:
            fed = torch.tensor([[config.start_id] + target_ids[:-1]])
            logits = hf(input_ids=torch.tensor([context]), decoder_input_ids=fed).logits[0]
    logprobs = F.log_softmax(logits.double(), -1)
    return [logprobs[i, t].item() for i, t in enumerate(target_ids)]


@pytest.mark.parametrize("name", ["gpt2", "marian", "t5"])
def test_greedy_is_generate(hf_workspace, name):
    workspace = hf_workspace(name)
    context = encode_context(workspace, PROMPTS[name])
    assert context == workspace.tokenizer.hf(PROMPTS[name])["input_ids"]  # nothing added
    hypothesis = greedy(workspace.model, context, max_len=12, tokenizer=workspace.tokenizer)
    ids, logprobs = reference_greedy(workspace, context, 12)
    assert hypothesis.token_ids == ids
    assert len(ids) <= 12  # max_len counts new tokens
    assert hypothesis.token_logprobs == pytest.approx(logprobs, abs=1e-5)
    assert hypothesis.score == pytest.approx(sum(hypothesis.token_logprobs), abs=1e-9)


def test_eos_ends_a_hypothesis(hf_models, tmp_path):
    """Make the third greedy token the model's eos (config only, same weights): both stop there."""
    from explorer.hf import open_hf_model

    workspace = open_hf_model(hf_models("marian"))
    context = encode_context(workspace, PROMPTS["marian"])
    first = greedy(workspace.model, context, max_len=6, tokenizer=workspace.tokenizer).token_ids
    eos = next(t for t in first if t != workspace.model.config.start_id)
    folder = tmp_path / "marian-eos"
    shutil.copytree(hf_models("marian"), folder)
    for name in ("config.json", "generation_config.json"):
        config = json.loads((folder / name).read_text())
        config["eos_token_id"] = eos
        (folder / name).write_text(json.dumps(config))
    changed = open_hf_model(folder)
    hypothesis = greedy(changed.model, context, max_len=6, tokenizer=changed.tokenizer)
    assert hypothesis.finished and hypothesis.token_ids == first[: first.index(eos) + 1]
    assert hypothesis.token_ids == reference_greedy(changed, context, 6)[0]


@pytest.mark.parametrize("name", ["gpt2", "marian", "t5"])
def test_beam_scores_are_teacher_forced(hf_workspace, name):
    workspace = hf_workspace(name)
    context = encode_context(workspace, PROMPTS[name])
    result = beam_search(workspace.model, context, beam_size=4, alpha=0.0, max_len=8,
                         tokenizer=workspace.tokenizer)
    for hypothesis in result.nbest:
        reference = teacher_forced(workspace, context, hypothesis.token_ids)
        assert hypothesis.token_logprobs == pytest.approx(reference, abs=1e-5)
        assert hypothesis.score == pytest.approx(sum(reference), abs=1e-4)
    assert result.best.score >= result.greedy.score - 1e-5  # length penalty 0: never worse
    # every node of the tree is a real candidate: its log-prob is the model's
    node = max(result.nodes[1:], key=lambda n: n.step)
    path = result.path(node.id)
    reference = teacher_forced(workspace, context, [n.token_id for n in path])
    assert [n.logprob for n in path] == pytest.approx(reference, abs=1e-5)


def test_score_matches_teacher_forcing(hf_workspace):
    workspace = hf_workspace("t5")
    result = score(workspace, "the cat sat", "der hund")
    target = workspace.tokenizer.hf(text_target="der hund")["input_ids"]  # ends in </s> already
    assert result.tokens == workspace.tokenizer.tokens(target)
    reference = teacher_forced(workspace, encode_context(workspace, "the cat sat"), target)
    assert result.logprobs == pytest.approx(reference, abs=1e-5)


def test_seq2seq_batch_pads_sources(hf_workspace):
    """A batch of sources of different lengths decodes like each source alone."""
    workspace = hf_workspace("marian")
    contexts = [encode_context(workspace, text) for text in ("the cat", "a dog ran in the park today")]
    together = greedy_batch(workspace.model, contexts, max_len=6, tokenizer=workspace.tokenizer)
    for context, hypothesis in zip(contexts, together):
        alone = greedy(workspace.model, context, max_len=6, tokenizer=workspace.tokenizer)
        assert hypothesis.token_ids == alone.token_ids
        assert hypothesis.token_logprobs == pytest.approx(alone.token_logprobs, abs=1e-5)


def test_sampling_logprobs_are_the_models(hf_workspace):
    workspace = hf_workspace("gpt2")
    context = encode_context(workspace, PROMPTS["gpt2"])
    drawn = sample(workspace.model, context, top_k=5, seed=3, max_len=6, tokenizer=workspace.tokenizer)
    ids = drawn.hypothesis.token_ids
    assert all(step.chosen in step.token_ids.tolist() for step in drawn.steps)
    assert drawn.hypothesis.token_logprobs == pytest.approx(teacher_forced(workspace, context, ids), abs=1e-5)


def test_step_decoder_back_and_forth(hf_workspace):
    workspace = hf_workspace("marian")
    decoder = StepDecoder(workspace, PROMPTS["marian"], "beam", beam_size=3, max_len=5)
    decoder.step()
    decoder.step()
    before = [h.token_ids for h in decoder.beam]
    topk = decoder.topk.token_ids
    decoder.step()
    decoder.back()
    assert [h.token_ids for h in decoder.beam] == before and decoder.topk.token_ids == topk
    assert decoder.attention.shape[:2] == (2, 4)  # (layers, heads, source)
    while decoder.step():
        pass
    full = beam_search(workspace.model, encode_context(workspace, PROMPTS["marian"]), beam_size=3,
                       max_len=5, tokenizer=workspace.tokenizer)
    assert decoder.output.token_ids == full.best.token_ids


def test_tokens_the_generation_config_forbids(hf_models, tmp_path):
    """One-token bad_words_ids (opus-mt forbids <pad>) never come out, as in generate."""
    from explorer.hf import open_hf_model

    folder = tmp_path / "marian-bad-words"
    shutil.copytree(hf_models("marian"), folder)
    workspace = open_hf_model(folder)
    context = encode_context(workspace, PROMPTS["marian"])
    banned = greedy(workspace.model, context, max_len=4, tokenizer=workspace.tokenizer).token_ids[0]
    config = json.loads((folder / "generation_config.json").read_text())
    config["bad_words_ids"] = [[banned]]
    (folder / "generation_config.json").write_text(json.dumps(config))
    changed = open_hf_model(folder)
    hypothesis = greedy(changed.model, context, max_len=8, tokenizer=changed.tokenizer)
    assert banned not in hypothesis.token_ids
    ids = torch.tensor([context])
    out = changed.model.hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                    max_new_tokens=8, output_scores=True, return_dict_in_generate=True)
    new = out.sequences[0, 1:].tolist()
    assert hypothesis.token_ids == new
    expected = [F.log_softmax(s[0].double(), -1)[t].item() for s, t in zip(out.scores, new)]
    assert hypothesis.token_logprobs == pytest.approx(expected, abs=1e-5)
    assert score_ids(changed.model, context, [banned]).total == -float("inf")


@pytest.mark.parametrize("name", ["marian", "t5"])
def test_evaluation_greedy_drops_finished_rows_like_greedy_alone(hf_workspace, name):
    """`greedy_ids` reorders the model's own cache as rows finish; each row equals greedy alone."""
    from explorer.decoding.search import greedy_ids

    workspace = hf_workspace(name)
    texts = ("the cat", "a dog ran in the park today", "the dog ran")
    contexts = [encode_context(workspace, text) for text in texts]
    limits = [8, 3, 6]
    for context, limit, (ids, finished) in zip(contexts, limits,
                                               greedy_ids(workspace.model, contexts, limits)):
        alone = greedy(workspace.model, context, max_len=limit, tokenizer=workspace.tokenizer)
        assert (ids, finished) == (alone.token_ids, alone.finished)
