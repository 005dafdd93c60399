"""Configs: JSON round trip, presets, validation, build_model for every family, parameter counts."""

import pytest
import torch

from explorer.families import get_family
from seqmodels import build_model, config_from_dict, config_from_json, config_to_json, count_parameters, make_config
from seqmodels.config import TransformerConfig, with_vocab
from seqmodels.families import model_families, preset_names

# every family a config alone builds (a user model's family has no presets: its own code builds it)
FAMILIES = [name for name, family in model_families().items() if family.presets]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("preset", [None, *preset_names()])
def test_json_round_trip(family, preset):
    config = make_config(family, preset, vocab_size=37)
    text = config_to_json(config)
    again = config_from_json(text)
    assert again == config and type(again) is type(config)
    assert config_to_json(again) == text
    assert again.family == family and again.vocab_size == 37
    if preset is not None:
        for name, value in model_families()[family].presets[preset].items():
            assert getattr(again, name) == value


def test_overrides_beat_presets_and_none_overrides_are_ignored():
    config = make_config("gpt", "small", d_model=96, num_heads=None)
    assert config.d_model == 96 and config.num_heads == model_families()["gpt"].presets["small"]["num_heads"]
    assert with_vocab(config, 50).vocab_size == 50
    seq2seq = with_vocab(make_config("transformer"), 50, src_vocab_size=60)
    assert (seq2seq.vocab_size, seq2seq.src_vocab_size) == (50, 60)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: make_config("lstm-lm"), "unknown model family"),
        (lambda: make_config("gpt", "huge"), "unknown preset"),
        (lambda: make_config("gpt", d_model=30, num_heads=4), "divisible"),
        (lambda: make_config("gpt", num_heads=0), "divisible"),
        (lambda: make_config("gpt", d_model=12, num_heads=4, positional="rope"), "even"),
        (lambda: make_config("rnn-lm", d_model=12), "no setting d_model"),
        (lambda: make_config("bert", positional="alibi"), "positional"),
        (lambda: make_config("seq2seq", cell="tcn"), "unknown cell"),
        (lambda: make_config("seq2seq", attention="magic"), "unknown attention"),
        (lambda: config_from_dict({"family": "gpt", "d_modle": 3}), "no setting d_modle"),
        (lambda: config_from_dict({"d_model": 3}), "unknown model family"),
    ],
)
def test_bad_configs_are_rejected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("family", FAMILIES)
def test_build_model_for_every_family(family):
    torch.manual_seed(0)
    config = make_config(family, "tiny", vocab_size=30)
    model = build_model(config)
    assert model.config is config
    tokens = torch.randint(5, 30, (2, 6))
    if get_family(family).has_source:  # an encoder-decoder
        src = torch.randint(5, config.src_vocab_size, (2, 7))
        logits = model(src, tokens)
    else:
        logits = model(tokens)
    assert logits.shape == (2, 6, 30)
    assert torch.isfinite(logits).all()


def hand_count(config: TransformerConfig) -> int:
    """Parameters of a Transformer family model, added up from the architecture."""
    d, ff, v, n = config.d_model, config.d_ff, config.vocab_size, config.num_layers
    attention = 3 * d * d + 3 * d + d * d + d  # in_proj weight and bias, out_proj
    feed_forward = d * ff + ff + ff * d + d
    norm = 2 * d
    encoder_layer = attention + feed_forward + 2 * norm
    decoder_layer = 2 * attention + feed_forward + 3 * norm
    final_norm = norm if config.norm_first else 0
    positions = config.max_len * d if config.positional == "learned" else 0  # per embedding
    head = 0 if config.tie_weights else v * d
    if config.family == "transformer":
        embeddings = config.src_vocab_size * d + v * d + 2 * positions
        return embeddings + n * (encoder_layer + decoder_layer) + 2 * final_norm + head
    total = v * d + positions + n * encoder_layer + final_norm + head
    if config.family == "bert":
        total += d * d + d + norm + v  # masked-LM head: dense, LayerNorm, output bias
    return total


@pytest.mark.parametrize("family", ["transformer", "gpt", "bert"])
@pytest.mark.parametrize(
    "overrides",
    [
        dict(),
        dict(tie_weights=False, positional="learned"),
        dict(norm_first=False, positional="rope", num_layers=3),
    ],
)
def test_count_parameters_matches_a_hand_count(family, overrides):
    config = make_config(family, "tiny", vocab_size=41, src_vocab_size=29, max_len=20, **overrides)
    model = build_model(config)
    assert count_parameters(model) == hand_count(config)


def test_count_parameters_counts_tied_weights_once_and_skips_frozen_ones():
    config = make_config("gpt", "tiny", vocab_size=41, max_len=20)
    model = build_model(config)
    total = count_parameters(model)
    every_tensor = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    assert every_tensor - total == 41 * config.d_model  # the shared embedding / output matrix
    model.embed.token.weight.requires_grad_(False)
    assert count_parameters(model) == total - 41 * config.d_model
    assert count_parameters(model, trainable_only=False) == total
