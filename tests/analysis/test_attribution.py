"""Attribution of an output token to the source and the target prefix (explorer.analysis.attribution),
checked against Captum's Saliency, InputXGradient and LayerIntegratedGradients on the embedding
layers, on a GRU seq2seq with additive attention and on a Transformer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.analysis.attribution import AttributionSettings, attribute, attribute_item
from explorer.analysis.attribution_input import attribution_input
from explorer.errors import UserError
from explorer.training import DataSpec, TrainConfig, Trainer, build_workspace
from seqmodels.config import PAD_ID, UNK_ID
from tests.attribution_reference import assert_matches_captum, embedding_forward

pytest.importorskip("captum")


@pytest.fixture(scope="module")
def gru():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="copy", n_train=32, n_val=4), "seq2seq", seed=0, cell="gru",
                           attention="additive", embed_dim=8, hidden_size=12)


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=64)


def _modules(workspace):
    """The token embeddings, named here independently of the family registry."""
    model = workspace.model
    if workspace.model.config.family == "seq2seq":
        return [model.src_embedding, model.tgt_embedding]
    return [model.src_embed.token, model.tgt_embed.token]


@pytest.mark.parametrize("name", ["gru", "transformer"])
@pytest.mark.parametrize("method", ["saliency", "grad-input", "ig"])
def test_matches_captum(name, method, request):
    workspace = request.getfixturevalue(name)
    item = attribution_input(workspace, "abcab", "abcab")
    item.rows = [item.rows[1], item.rows[-1]]  # a middle token and <eos>
    settings = AttributionSettings(method=method, steps=20, batch_size=7, baseline="pad")
    result = attribute_item(workspace.model, item, settings)
    baselines = [torch.full_like(t, PAD_ID) for t in item.inputs]
    assert_matches_captum(result, workspace.model, item.inputs, _modules(workspace), item.rows, method,
                          baselines=baselines, steps=20, batch_size=7)
    if method == "ig":  # the gap: f(baseline) from the baseline embeddings themselves (Captum's
        # delta runs the baseline ids, whose <pad> also masks attention: another point)
        modules = _modules(workspace)
        for r, row in enumerate(item.rows):
            forward = embedding_forward(workspace.model, item.inputs, modules, row.position, row.token_id)
            with torch.no_grad():
                at_baseline = forward(*[m(b) for m, b in zip(modules, baselines)]).item()
                at_input = forward(*[m(t) for m, t in zip(modules, item.inputs)]).item()
            expected = np.nansum(result.scores[r]) - (at_input - at_baseline)
            assert result.gap[r] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("name", ["gru", "transformer"])
def test_completeness_gap_below_one_percent_at_300_steps(name, request):
    workspace = request.getfixturevalue(name)
    for baseline in ("pad", "zero", "unk"):
        settings = AttributionSettings(method="ig", steps=300, batch_size=100, baseline=baseline)
        result = attribute(workspace, "abcab", "abcab", settings, rows=[2])
        change = abs(result.target[0] - result.baseline_target[0])
        assert change > 1e-3  # a path that changes nothing would make any gap look small
        assert abs(result.gap[0]) < 0.01 * change
        assert result.warning is None


def test_contrastive_quantity_is_the_difference_of_two_attributions(transformer):
    """Gradients are linear: grad of log p(a) - log p(b) = grad log p(a) - grad log p(b)."""
    item = attribution_input(transformer, "abc", "cba")
    row = item.rows[0]
    tokenizer = transformer.tokenizer
    alternative = "b" if row.label != "b" else "c"
    settings = AttributionSettings(method="grad-input")
    contrast = attribute(transformer, "abc", "cba", AttributionSettings(method="grad-input", contrast=alternative),
                         rows=[0])
    plain = attribute(transformer, "abc", "cba", settings, rows=[0])
    item.rows = [row.__class__(row.position, tokenizer.token_to_id(alternative), alternative)]
    other = attribute_item(transformer.model, item, settings)
    np.testing.assert_allclose(contrast.scores, plain.scores - other.scores, atol=1e-5)
    assert contrast.target[0] == pytest.approx(plain.target[0] - other.target[0], abs=1e-5)


def test_occlusion_replace_and_drop_against_direct_forward_passes(transformer):
    model = transformer.model.eval()
    item = attribution_input(transformer, "abcd", "dcba")
    row = item.rows[2]

    def log_p(src, tgt, position):
        with torch.no_grad():
            return model(src, tgt)[0, position].log_softmax(-1)[row.token_id].item()

    src, tgt = item.inputs
    full = log_p(src, tgt, row.position)
    replaced = attribute(transformer, "abcd", "dcba",
                         AttributionSettings(method="occlusion", baseline="unk", batch_size=3), rows=[2])
    dropped = attribute(transformer, "abcd", "dcba",
                        AttributionSettings(method="occlusion", occlusion="drop"), rows=[2])
    for j in range(src.size(1)):
        unk = src.clone()
        unk[0, j] = UNK_ID
        assert replaced.scores[0, j] == pytest.approx(full - log_p(unk, tgt, row.position), abs=1e-5)
        kept = torch.cat([src[:, :j], src[:, j + 1:]], 1)
        assert dropped.scores[0, j] == pytest.approx(full - log_p(kept, tgt, row.position), abs=1e-5)
    n_src = src.size(1)
    for j in range(tgt.size(1)):  # the prefix: dropping a token before the row moves it left
        value = dropped.scores[0, n_src + j]
        if j > row.position:
            assert np.isnan(value)
        else:
            kept = torch.cat([tgt[:, :j], tgt[:, j + 1:]], 1)
            assert value == pytest.approx(full - log_p(src, kept, row.position - 1), abs=1e-5)


def test_reversed_source_reads_in_text_order():
    """reverse_source embeds the source backwards: columns still follow the text."""
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="copy", n_train=8, n_val=2), "seq2seq", seed=0,
                                embed_dim=8, hidden_size=12, attention="none",
                                bidirectional_encoder=False, reverse_source=True)
    model = workspace.model.eval()
    item = attribution_input(workspace, "abc", "abc")
    row = item.rows[0]
    src, tgt = item.inputs
    occluded = attribute(workspace, "abc", "abc", AttributionSettings(method="occlusion", baseline="unk"),
                         rows=[0])
    products = attribute(workspace, "abc", "abc", AttributionSettings(method="grad-input"), rows=[0])
    with torch.no_grad():
        full = model(src, tgt)[0, 0].log_softmax(-1)[row.token_id].item()
        unknown = src.clone()
        unknown[0, 0] = UNK_ID  # the text's first token
        first = model(unknown, tgt)[0, 0].log_softmax(-1)[row.token_id].item()
    assert occluded.scores[0, 0] == pytest.approx(full - first, abs=1e-5)
    seen = []
    handle = model.src_embedding.register_forward_hook(
        lambda m, a, out: seen.append(out.detach().requires_grad_()) or seen[-1])
    try:
        log_p = model(src, tgt)[0, 0].log_softmax(-1)[row.token_id]
    finally:
        handle.remove()
    (grad,) = torch.autograd.grad(log_p, seen)
    reading_order = (grad * seen[0]).sum(-1)[0].detach()  # (Ts,) the last text token first
    np.testing.assert_allclose(products.scores[0, : src.size(1)], reading_order.flip(0).numpy(), atol=1e-6)


def test_planted_copy_attributes_each_token_to_the_source_token_it_copies():
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="copy", n_train=512, n_val=8), "seq2seq", seed=0,
                                cell="gru", attention="additive", embed_dim=16, hidden_size=32)
    source = "qwerty"
    for steps in (300, 600, 900, 1200):  # until it copies: how long that takes depends on the CPU's rounding
        config = TrainConfig(steps=steps, batch_size=32, lr=0.01, optimizer="adam", eval_every=10_000,
                             num_threads=1)
        for _ in Trainer(workspace, config).run():
            pass
        result = attribute(workspace, source, "", AttributionSettings(method="occlusion"))
        if "".join(result.rows[:-1]) == source:
            break
    assert "".join(result.rows[:-1]) == source  # the model copies
    copied = result.scores[:-1, : len(source) + 1]  # rows: the copied tokens; columns: the source
    assert (copied.argmax(1) == np.arange(len(source))).all()
    # mostly: over half of the source's total effect on the copied tokens, on average. One row can
    # split its effect: occluding an earlier token also changes every later GRU encoder state (on
    # this machine's CPU, 'e' owes 4.7 to itself and 4.3 to 'q'), so each row alone is not asked to.
    share = np.diag(copied) / np.abs(copied).sum(1)
    assert share.mean() > 0.5 and (share > 0.3).all()


@pytest.mark.parametrize("settings, message", [
    (AttributionSettings(method="ig", steps=0), "at least 1 step"),
    (AttributionSettings(method="saliency", contrast="no-such-token"), "not in the model's vocabulary"),
    (AttributionSettings(method="magic"), "unknown attribution method"),
    (AttributionSettings(baseline="mean"), "unknown baseline"),
])
def test_bad_input_is_one_line_user_error(transformer, settings, message):
    with pytest.raises(UserError, match=message) as caught:
        attribute(transformer, "abc", "cba", settings)
    assert "\n" not in str(caught.value)


def test_hooks_leave_other_threads_forward_passes_alone(transformer):
    """A decoding panel may run the same model in another thread while an attribution runs."""
    import threading

    from explorer.analysis.attribution import embedding_hooks

    model = transformer.model.eval()
    item = attribution_input(transformer, "abc", "cba")
    with torch.no_grad():
        expected = model(*item.inputs)
        zeros = [torch.zeros(1, t.size(1), model.src_embed.token.embedding_dim) for t in item.inputs]
        seen = {}
        with embedding_hooks(item, replace=zeros):
            worker = threading.Thread(target=lambda: seen.setdefault("logits", model(*item.inputs)))
            worker.start()
            worker.join()
            replaced = model(*item.inputs)
    torch.testing.assert_close(seen["logits"], expected)
    assert not torch.allclose(replaced, expected)
