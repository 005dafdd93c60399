"""The family registry: every registered family builds, round-trips its config, trains a step with
its own loss and feed, probes, and decodes if it decodes; a family from outside the table plugs in
through register_family / register_model_family alone."""

import dataclasses
import importlib.util
import math
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import explorer.families as registry
import seqmodels.families as model_registry
from explorer.analysis.embeddings import available_embeddings
from explorer.analysis.hidden import hidden_snapshot
from explorer.analysis.probe import probe
from explorer.analysis.streams import state_streams
from explorer.data.batching import IGNORE_INDEX
from explorer.decoding.scoring import encode_context, score_ids
from explorer.decoding.search import greedy, is_language_model
from explorer.errors import UserError
from explorer.events import StepMetrics
from explorer.families import Family, Lazy, families, family_of, get_family, module_at
from explorer.training import DataSpec, TrainConfig, Trainer, build_workspace
from explorer.training.feeds import make_feed
from explorer.training.setup import data_kind
from seqmodels.config import PAD_ID, config_from_json, config_to_json, make_config
from seqmodels.families import ModelFamily, model_families

FAMILIES = list(families())
SIZES = dict(d_model=32, num_heads=2, num_layers=1, d_ff=64, dropout=0.0, max_len=32,
             embed_dim=16, hidden_size=32)


def tiny_workspace(name: str):
    family = get_family(name)
    spec = (DataSpec(task="copy", n_train=64, n_val=8) if family.has_source
            else DataSpec(task="brackets", n_train=64, n_val=8))
    settings = {f.name for f in dataclasses.fields(family.model.config_class)}
    return build_workspace(spec, name, seed=0, **{k: v for k, v in SIZES.items() if k in settings})


def train_config(**changes) -> TrainConfig:
    values = dict(steps=1, batch_size=8, context=16, lr=1e-3, eval_every=0, eval_examples=8,
                  bleu_examples=0, device="cpu", num_threads=1)
    return TrainConfig(**{**values, **changes})


# Hugging Face architectures built from scratch, listed with the [hf] extra (explorer/hf/architectures.py)
HF_ARCHITECTURES = (["hf-gpt2", "hf-bert", "hf-marian", "hf-t5"]
                    if importlib.util.find_spec("transformers") else [])


def test_the_app_and_models_know_the_same_families():
    # a user model's families (explorer.usermodel) are unlisted and have no presets: its code builds it
    buildable = [name for name, family in model_families().items() if family.presets]
    assert FAMILIES == buildable == ["rnn-lm", "seq2seq", "transformer", "gpt", "bert", *HF_ARCHITECTURES]


@pytest.mark.parametrize("name", FAMILIES)
def test_every_named_behaviour_resolves(name):
    family = get_family(name)
    for behaviour in (family.loss, family.feed, family.encode_probe):
        assert callable(behaviour.resolve() if isinstance(behaviour, Lazy) else behaviour)
    if family.max_len_field is not None:
        assert family.max_len_field in {f.name for f in dataclasses.fields(family.model.config_class)}


def test_one_definition_of_a_language_model():
    lms = [name for name in FAMILIES if get_family(name).is_lm]
    assert lms == ["rnn-lm", "gpt", "bert", *[n for n in HF_ARCHITECTURES if n in ("hf-gpt2", "hf-bert")]]
    for name in FAMILIES:
        model = get_family(name).model.build(make_config(name, "tiny"))
        assert is_language_model(model) == (data_kind(name) == "lm") == get_family(name).is_lm


@pytest.mark.parametrize("name", FAMILIES)
def test_every_preset_builds_and_round_trips_its_config(name):
    for preset in model_families()[name].presets:
        config = make_config(name, preset, vocab_size=30)
        assert config_from_json(config_to_json(config)) == config
        assert family_of(config) is get_family(name)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_trains_a_step_with_its_loss_and_feed(name):
    workspace = tiny_workspace(name)
    family = family_of(workspace.model)
    feed = make_feed(workspace, train_config())
    batch = feed.train_batch(1)
    output = family.loss(workspace.model, batch, 0.0, None, None)
    # the loss is the mean cross-entropy over the positions the family predicts, computed here apart
    ignore = PAD_ID if family.has_source else IGNORE_INDEX
    targets = batch.tgt_out if family.has_source else batch.targets
    expected = F.cross_entropy(output.logits.flatten(0, 1), targets.flatten(), ignore_index=ignore)
    torch.testing.assert_close(output.loss, expected)
    if family.masked_lm:  # only the masked positions are predicted
        assert 0 < output.tokens < targets.numel()
    events = list(Trainer(workspace, train_config()).run())
    losses = [e.loss for e in events if isinstance(e, StepMetrics)]
    assert len(losses) == 1 and math.isfinite(losses[0])


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_probes_through_time_or_depth(name):
    workspace = tiny_workspace(name)
    source, target = workspace.data.val[0]
    snapshot = probe(workspace, source or "(()())", target)
    if family_of(workspace.model).recurrent:
        assert snapshot.grad_time and not snapshot.grad_depth
    else:
        assert len(snapshot.grad_depth) == workspace.model.config.num_layers * (
            2 if family_of(workspace.model).has_source else 1)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_that_decodes_decodes_and_scores_what_it_decoded(name):
    workspace = tiny_workspace(name)
    family = family_of(workspace.model)
    text = "((" if family.is_lm else workspace.data.val[0][0]  # a prompt, or a source to translate
    if not family.decodes:
        with pytest.raises(UserError, match="masked language model"):
            encode_context(workspace, text)
        return
    context = encode_context(workspace, text)
    hypothesis = greedy(workspace.model, context, max_len=6, tokenizer=workspace.tokenizer)
    assert 1 <= len(hypothesis.token_ids) <= 6
    scored = score_ids(workspace.model, context, hypothesis.token_ids)
    assert scored.total == pytest.approx(hypothesis.score, abs=1e-4)


def test_a_family_from_outside_the_table_plugs_in(monkeypatch):
    """What issue 13's Hugging Face wrappers do: register both sides without editing a table."""
    from seqmodels.config import TransformerConfig
    from seqmodels.transformer import GPT

    model_families()  # the built-ins first, so the copies below hold them
    monkeypatch.setattr(model_registry, "_REGISTERED", dict(model_registry._REGISTERED))
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))
    model_registry.register_model_family(ModelFamily(
        "toy-gpt", TransformerConfig, GPT, presets={"tiny": dict(d_model=16, num_heads=2,
                                                                   num_layers=1, d_ff=32)}))
    gpt = get_family("gpt")
    registry.register_family(Family(
        "toy-gpt", "A GPT registered from outside", has_source=False, recurrent=False,
        has_positions=True, loss=gpt.loss, feed=gpt.feed, encode_probe=gpt.encode_probe,
        max_len_field="max_len", stacks=gpt.stacks, embeddings=gpt.embeddings, logit_lens=gpt.logit_lens,
        layers=gpt.layers))
    workspace = build_workspace(DataSpec(task="brackets", n_train=64, n_val=8), "toy-gpt",
                                preset="tiny", max_len=32)
    assert workspace.family == "toy-gpt" and not workspace.is_seq2seq
    events = list(Trainer(workspace, train_config()).run())
    assert events[-1].reason == "done"
    assert greedy(workspace.model, encode_context(workspace, "(("), max_len=3).token_ids
    # the analyses find the stacks, embeddings and lens where the entry says, not by family name
    snapshot = hidden_snapshot(workspace, "(())")
    assert [stack.stream for stack in snapshot.stacks] == ["decoder"] and snapshot.lens is not None
    assert available_embeddings(workspace.model) == ["input", "output"]
    assert "decoder.layer0" in state_streams(workspace, workspace.data.val, max_tokens=50)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_names_modules_its_model_has(name):
    """The analysis fields (stacks, embeddings, logit_lens) point at real modules of the model,
    and an LM's one stack is the one its trace names."""
    workspace = tiny_workspace(name)
    family, model = family_of(workspace.model), workspace.model
    paths = [path for path, _ in family.stacks.values()] + list(family.embeddings.values()) + list(family.logit_lens)
    assert all(isinstance(module_at(model, path), torch.nn.Module) for path in paths)
    assert all(hasattr(module_at(model, path), "weight") for path in family.embeddings.values())
    source, target = workspace.data.val[0]
    stacks = {name.split(".", 1)[0] for name in hidden_snapshot(workspace, source, target).streams()}
    assert stacks == set(family.stacks)
    assert family.lm_stack == (next(iter(stacks)) if family.is_lm else None)


def test_unknown_families_are_one_line_errors():
    with pytest.raises(UserError, match="unknown model family 'lstm-lm'; choose one of rnn-lm"):
        get_family("lstm-lm")


def test_the_tables_load_without_torch():
    code = ("import sys, explorer.families, seqmodels.scores, seqmodels.config\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n"
            "print(' '.join(explorer.families.family_names()))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == FAMILIES
