"""Every panel on Hugging Face models: tiny random GPT-2, Marian, T5, BERT and DistilBERT folders
opened in the real main window, each view checked against transformers' own outputs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from explorer.ui.panels.attention import MEAN_OF_HEADS  # noqa: E402
from tests.hf.conftest import hf_models  # noqa: E402,F401 - the tiny model folders

SOURCE, TARGET = "the cat sat on the mat", "die katze sitzt auf der matte"


def open_model(qtbot, make_main_window, folder):
    """The real window, the folder opened as File ▸ Open does, the first probe drawn."""
    window = make_main_window()
    window.resize(1400, 900)
    window.show()
    window.controller.open_checkpoint(str(folder))
    qtbot.waitUntil(lambda: window.bus.workspace is not None, timeout=60_000)
    attention = window.panels["attention"]
    qtbot.waitUntil(lambda: attention.has_content() and not window.bus.probing
                    and not window.controller.jobs.busy, timeout=60_000)
    return window


def probe_inputs(workspace, source, target):
    """The probe's model inputs written out from the tokenizer itself (explorer adds nothing)."""
    tokenizer, config = workspace.tokenizer.hf, workspace.model.config
    if workspace.family == "hf-seq2seq":
        tgt_out = tokenizer(text_target=target)["input_ids"]
        if tgt_out[-1] != config.eos_id:
            tgt_out = tgt_out + [config.eos_id]
        return {"input_ids": torch.tensor([tokenizer(source)["input_ids"]]),
                "decoder_input_ids": torch.tensor([[config.start_id] + tgt_out[:-1]])}
    ids = tokenizer(source)["input_ids"]
    return {"input_ids": torch.tensor([ids])}  # a causal LM's probe reads every token typed


def eager_outputs(workspace, **inputs):
    """transformers' own output_attentions (eager attention, the same weights). The adapter's
    switch holds its lock: the panels' decoding workers use the same model meanwhile."""
    with workspace.model.attention_weights(), torch.no_grad():
        return workspace.model.hf(**inputs, output_attentions=True)


def reference_maps(workspace, source, target):
    out = eager_outputs(workspace, **probe_inputs(workspace, source, target))
    if workspace.family == "hf-seq2seq":
        return {"encoder": out.encoder_attentions, "decoder": out.decoder_attentions,
                "cross": out.cross_attentions}
    kind = "decoder" if workspace.family == "hf-causal-lm" else "encoder"
    return {kind: out.attentions}


def check_attention_and_model_view(qtbot, window, name):
    """Every attention map, one head large, the mean of heads and the model view (every layer x
    head) equal transformers' output_attentions on the probe input."""
    panel, workspace = window.panels["attention"], window.bus.workspace
    panel.source_edit.setText(SOURCE)
    panel.target_edit.setText(TARGET)
    panel.request_probe()
    qtbot.waitUntil(lambda: panel.snapshot.source == SOURCE and not window.bus.probing, timeout=30_000)
    expected = reference_maps(workspace, SOURCE, TARGET)
    assert {kind for kind, _ in panel.maps} == set(expected)
    for (kind, layer), attention in panel.maps.items():
        np.testing.assert_allclose(attention.weights, expected[kind][layer][0].numpy(), atol=1e-5)
    for kind, maps in expected.items():
        layer, head = len(maps) - 1, maps[0].shape[1] - 1
        panel.select(kind, layer, head)  # one layer and head, large
        np.testing.assert_allclose(panel.heatmap.image.image, maps[layer][0, head].numpy(), atol=1e-5)
        panel.select(kind, 0, MEAN_OF_HEADS)
        np.testing.assert_allclose(panel.heatmap.image.image, maps[0][0].mean(0).numpy(), atol=1e-5)
        panel.model_view_box.setChecked(True)  # every layer x head
        assert sorted(panel.grid.tiles()) == [(l, h) for l in range(len(maps)) for h in range(maps[0].shape[1])]
        for (l, h), tile in panel.grid.tiles().items():  # one mosaic; these maps need no averaging
            np.testing.assert_allclose(tile, maps[l][0, h].numpy(), atol=1e-5)
        panel.model_view_box.setChecked(False)
    tokens = workspace.tokenizer.tokens
    if name in ("marian", "t5"):  # cross-attention: target rows over source columns
        cross = panel.maps[("cross", 0)]
        assert cross.cols == tokens(workspace.tokenizer.hf(SOURCE)["input_ids"])
        assert cross.rows == tokens(workspace.tokenizer.encode_target(TARGET))


def check_learned_positions(window, name):
    """The model's own learned table and its cosine similarity; no relative bias, one line why."""
    panel, hf = window.panels["positional"], window.bus.workspace.model.hf
    module = {"gpt2": "transformer.wpe", "bert": "bert.embeddings.position_embeddings"}[name]
    table = hf.get_submodule(module).weight.detach().double().numpy()
    assert panel.model_positions.kind == "learned"
    np.testing.assert_allclose(panel.model_map.matrix, table, atol=1e-6)
    assert panel.table_choice.currentData() == "model"  # 64 positions > 32 dims: M_k is a test
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    np.testing.assert_allclose(panel.similarity_map.matrix, unit @ unit.T, atol=1e-5)
    assert module in panel.status.text()
    assert not panel.relative_view.has_content()
    assert "no relative-position bias" in panel.relative_view.status.text()


def check_marian_sinusoid(window):
    """Marian's table is the lecture notes' formula, sin dimensions first, then cos."""
    panel = window.panels["positional"]
    assert panel.model_positions.kind == "sinusoidal"
    table = panel.model_positions.table
    n, d = table.shape
    angles = np.arange(n)[:, None] / 10000 ** (np.arange(0, d, 2) / d)[None, :]  # the notes' n / L^(2j/d)
    np.testing.assert_allclose(table, np.concatenate([np.sin(angles), np.cos(angles)], 1), atol=1e-6)
    assert "sinusoidal PE (sin half, cos half)" in panel.status.text()


def check_t5_relative_bias(window):
    """No table (one line why), and the bias per head is the model's own compute_bias."""
    panel, hf = window.panels["positional"], window.bus.workspace.model.hf
    assert panel.model_positions is None
    # said in the view, with no empty heatmap (it had a ±1e-12 colour bar), nor in the export
    assert panel.model_view.empty and panel.model_view.message.startswith("No position table: T5")
    assert "model" not in panel.plot_items()
    assert "T5 adds a learned bias per head" in panel.status.text()
    view = panel.relative_view
    # the headless CSV's tables (no Qt) are the panel's, read through the family's registry entry
    from explorer.export.positional import opening_view, positional_tables

    assert positional_tables(opening_view(window.bus.workspace.model)) == panel.tables()
    view.length_box.setValue(20)
    for stack, attention in (("encoder", hf.encoder.block[0].layer[0].SelfAttention),
                             ("decoder", hf.decoder.block[0].layer[0].SelfAttention)):
        view.stack_box.setCurrentIndex(view.stack_box.findData(stack))
        with torch.no_grad():
            expected = attention.compute_bias(20, 20)[0].numpy()  # (H, Q, K), the model's own
        for head in range(4):
            view.head_box.setCurrentIndex(head)
            np.testing.assert_allclose(view.heatmap.matrix, expected[head], atol=1e-6)
        assert ("both directions" if stack == "encoder" else "causal") in view.status.text()
    assert "relative_bias" in panel.tables() and "relative_bias" in panel.plot_items()


def check_parameter_gradient_per_layer(qtbot, window):
    """The probe's ||dL/dθ|| per layer (checked against autograd in tests/hf/test_hf_gradients.py)
    drawn by layer; the time-step view says in one line why it does not apply."""
    panel = window.panels["gradients"]
    window.show_panel("gradients")  # out of sight, it holds its draws
    qtbot.waitUntil(lambda: panel.snapshot is not None and panel.param_curve.curve.yData is not None,
                    timeout=30_000)
    snapshot = panel.snapshot
    assert snapshot.grad_params_labels == [
        "embeddings", "encoder.layer0", "encoder.layer1", "decoder.layer0", "decoder.layer1"]
    np.testing.assert_allclose(panel.param_curve.curve.yData, snapshot.grad_params)
    assert panel.param_curve.labels == ["embeddings", "encoder 1", "encoder 2", "decoder 1", "decoder 2"]
    assert panel.views["depth"].isVisibleTo(panel) and not panel.views["through_time"].isVisibleTo(panel)
    assert "no gradient through time" in panel.status.text()
    assert panel.tables()["params"][1][0] == ["embeddings", pytest.approx(snapshot.grad_params[0])]


def check_step_through(window, name):
    """Three steps are generate's first three tokens; the bars its next-token distribution."""
    panel, workspace = window.panels["step"], window.bus.workspace
    panel.set_source(SOURCE)
    assert panel.decoder is not None, panel.output_label.text()
    for _ in range(3):
        assert panel.step()
    hf, context = workspace.model.hf, workspace.tokenizer.hf(SOURCE)["input_ids"]
    ids = torch.tensor([context])
    out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                      max_new_tokens=4, output_logits=True, return_dict_in_generate=True)
    start = len(context) if name == "gpt2" else 1
    generated = out.sequences[0, start:].tolist()
    assert panel.decoder.output.token_ids == generated[:3]
    # the bars: the top 10 of the model's next-token distribution after those three tokens
    probs = F.softmax(out.logits[3][0].double(), -1)
    values, best = probs.topk(10)
    assert panel.topk_chart.labels == workspace.tokenizer.tokens(best.tolist())
    np.testing.assert_allclose(panel.topk_chart.values, values.numpy(), atol=1e-5)
    if name == "marian":  # the cross-attention row of the position being predicted, top layer
        fed = torch.tensor([[workspace.model.config.start_id] + generated[:3]])
        cross = eager_outputs(workspace, input_ids=ids, decoder_input_ids=fed).cross_attentions
        np.testing.assert_allclose(panel.attention_chart.values, cross[-1][0, :, 3].mean(0).numpy(),
                                   atol=1e-5)


def check_beam_tree(qtbot, window, name):
    """The beam tree's best score is the model's teacher-forced log-likelihood of its ids."""
    panel, workspace = window.panels["beam"], window.bus.workspace
    panel.set_source(SOURCE)
    qtbot.waitUntil(lambda: panel.result is not None and not panel.busy()
                    and panel.source_box.text() == SOURCE, timeout=30_000)
    best = panel.result.best
    assert panel.result.nodes and best.token_ids
    hf, config = workspace.model.hf, workspace.model.config
    context = workspace.tokenizer.hf(SOURCE)["input_ids"]
    with torch.no_grad():
        if name == "gpt2":
            logits = hf(input_ids=torch.tensor([context + best.token_ids[:-1]])).logits[0, len(context) - 1:]
        else:
            fed = torch.tensor([[config.start_id] + best.token_ids[:-1]])
            logits = hf(input_ids=torch.tensor([context]), decoder_input_ids=fed).logits[0]
    logprobs = F.log_softmax(logits.double(), -1)
    expected = sum(logprobs[i, t].item() for i, t in enumerate(best.token_ids))
    assert best.score == pytest.approx(expected, abs=1e-4)
    assert panel.result.source_tokens == workspace.tokenizer.tokens(context)


def check_compare(qtbot, window):
    """Greedy, beam and sampling side by side; greedy is generate's."""
    panel, workspace = window.panels["compare"], window.bus.workspace
    with qtbot.waitSignal(panel.compared, timeout=30_000):
        panel.set_source(SOURCE, TARGET)
    outputs = {o.strategy: o for o in panel.outputs}
    assert set(outputs) == {"greedy", "beam", "sample"}
    greedy = outputs["greedy"].hypothesis
    ids = torch.tensor([workspace.tokenizer.hf(SOURCE)["input_ids"]])
    out = workspace.model.hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                      num_beams=1, max_new_tokens=len(greedy.token_ids))
    assert greedy.token_ids == out[0, 1:].tolist()
    assert outputs["greedy"].bleu is not None  # sentence BLEU against the reference


def check_parallel_file_bleu(qtbot, window, tmp_path):
    """BLEU of a parallel file is sacreBLEU of generate's greedy translations."""
    from sacrebleu.metrics import BLEU

    panel, workspace = window.panels["bleu"], window.bus.workspace
    hf, tokenizer = workspace.model.hf, workspace.tokenizer.hf
    long_reference = "the dog and the cat are friends and the bird sang a song in the park"
    sources = [SOURCE, "a dog ran in the park", "the bird sang a song"]
    longest = len(tokenizer(long_reference)["input_ids"])
    budget = min(2 * longest + 10, hf.config.max_position_embeddings)  # the panel's rule, capped

    def translate(source):  # transformers' own greedy, as `generate` decodes it
        ids = torch.tensor([tokenizer(source)["input_ids"]])
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                          max_new_tokens=budget)
        return tokenizer.decode(out[0], skip_special_tokens=True)

    hypotheses = [translate(s) for s in sources]
    # one reference shares the model's first words: BLEU is not 0, so the n-gram counts are a test
    references = [" ".join(hypotheses[0].split()[:4]), long_reference, "the bird sang"]
    assert max(len(tokenizer(r)["input_ids"]) for r in references) == longest
    path = tmp_path / "parallel.tsv"
    path.write_text("".join(f"{s}\t{r}\n" for s, r in zip(sources, references)), encoding="utf-8")
    with qtbot.waitSignal(panel.file_row.scored, timeout=60_000):
        panel.file_row.score_file(str(path))
    scored = panel.file_row.last
    assert scored.hypotheses == hypotheses
    expected = BLEU().corpus_score(hypotheses, [references])
    assert panel.breakdown.score == pytest.approx(expected.score, abs=1e-9) and expected.score > 0
    assert list(panel.breakdown.counts) == list(expected.counts)
    assert list(panel.breakdown.totals) == list(expected.totals)
    assert f"BLEU = {expected.score:.2f}" in panel.summary.text()
    assert "3 sentences of parallel.tsv" in panel.file_row.status.text()


def check_fill_mask(qtbot, window):
    """The step panel's fill-mask view: top-k per mask is the logits' top-k, the attention row is
    output_attentions' row of the masked position; decoding panels say why they do not apply."""
    panel, workspace = window.panels["step"], window.bus.workspace
    assert panel.fill_view.isVisibleTo(panel) and not panel.decode_page.isVisibleTo(panel)
    text = "the [MASK] sat on the [MASK]"
    panel.fill_view.top_k_box.setValue(4)
    panel.set_source(text)
    assert panel.has_content()
    ids = workspace.tokenizer.hf(text)["input_ids"]
    masks = [i for i, t in enumerate(ids) if t == workspace.tokenizer.hf.mask_token_id]
    out = eager_outputs(workspace, input_ids=torch.tensor([ids]))
    probs = F.softmax(out.logits[0].double(), -1)
    assert panel.fill_view.mask_box.count() == len(masks) == 2
    for number, position in enumerate(masks):
        panel.fill_view.mask_box.setCurrentIndex(number)
        values, best = probs[position].topk(4)
        assert panel.fill_view.topk_chart.labels == workspace.tokenizer.tokens(best.tolist())
        np.testing.assert_allclose(panel.fill_view.topk_chart.values, values.numpy(), atol=1e-9)
        # the masked position's attention row: top layer, mean of heads by default, then head 2
        np.testing.assert_allclose(panel.fill_view.attention_chart.values,
                                   out.attentions[-1][0, :, position].mean(0).numpy(), atol=1e-5)
        panel.fill_view.picker.select(0, 1)
        np.testing.assert_allclose(panel.fill_view.attention_chart.values,
                                   out.attentions[0][0, 1, position].numpy(), atol=1e-5)
        panel.fill_view.picker.select(len(out.attentions) - 1, None)
    assert panel.tables()["fill"][1][0][:4] == [1, masks[0], 1, int(probs[masks[0]].argmax())]
    panel.set_source("the cat sat")  # no mask: one line why
    assert not panel.has_content() and "no mask" in panel.fill_view.text_label.text()
    # decoding panels say in one line why they do not apply
    beam = window.panels["beam"]
    qtbot.waitUntil(lambda: "masked language model" in beam.status.text(), timeout=30_000)


def test_fill_view_on_our_own_bert(qtbot):
    from explorer.decoding.fill import fill_mask
    from explorer.ui.bus import AppBus
    from explorer.ui.panels.step_decoding import StepDecodingPanel
    from tests.training.conftest import make_tiny_workspace

    bus = AppBus()
    panel = StepDecodingPanel(bus)
    qtbot.addWidget(panel)
    workspace = make_tiny_workspace("bert")
    bus.set_workspace(workspace)
    panel.set_source("(([MASK]))")
    assert panel.masked and panel.has_content()
    expected = fill_mask(workspace, "(([MASK]))", top_k=panel.fill_view.top_k_box.value())
    mask = expected.masks[0]
    workspace.model.eval()
    with torch.no_grad():
        logits = workspace.model(torch.tensor([expected.token_ids]))[0]
    best = F.softmax(logits[mask.position].double(), -1).topk(len(mask.predictions))
    np.testing.assert_allclose(panel.fill_view.topk_chart.values, best.values.numpy(), atol=1e-6)
    assert [p.token_id for p in mask.predictions] == best.indices.tolist()


def check_file_bleu_needs_a_source(window):
    row = window.panels["bleu"].file_row
    assert not row.button.isEnabled() and "encoder-decoder" in row.status.text()
    # and no empty BLEU axes: the plot's place says the same
    assert window.panels["bleu"].plot_state.message == row.status.text()


def check_curves_say_there_is_no_history(window):
    """A folder just opened has no recorded training: one line why, no empty 0-1 axes."""
    curves = window.panels["curves"]
    assert curves.view_state.empty and curves.plot_items() == {}
    assert "no recorded training and no data" in curves.view_state.message


def test_gpt2_in_every_panel(qtbot, make_main_window, hf_models):
    window = open_model(qtbot, make_main_window, hf_models("gpt2"))
    check_attention_and_model_view(qtbot, window, "gpt2")
    check_learned_positions(window, "gpt2")
    check_step_through(window, "gpt2")
    check_beam_tree(qtbot, window, "gpt2")
    check_file_bleu_needs_a_source(window)
    check_curves_say_there_is_no_history(window)


def test_marian_in_every_panel(qtbot, make_main_window, hf_models, tmp_path):
    window = open_model(qtbot, make_main_window, hf_models("marian"))
    check_attention_and_model_view(qtbot, window, "marian")
    check_marian_sinusoid(window)
    check_parameter_gradient_per_layer(qtbot, window)
    check_step_through(window, "marian")
    check_compare(qtbot, window)
    check_parallel_file_bleu(qtbot, window, tmp_path)


def test_t5_in_every_panel(qtbot, make_main_window, hf_models):
    window = open_model(qtbot, make_main_window, hf_models("t5"))
    check_attention_and_model_view(qtbot, window, "t5")
    check_t5_relative_bias(window)
    check_beam_tree(qtbot, window, "t5")


@pytest.mark.parametrize("name", ["bert", "distilbert"])
def test_masked_lms_in_every_panel(qtbot, make_main_window, hf_models, name):
    window = open_model(qtbot, make_main_window, hf_models(name))
    check_attention_and_model_view(qtbot, window, name)
    if name == "bert":
        check_learned_positions(window, name)
    check_fill_mask(qtbot, window)


def test_gpt2_small_sized_table_skips_the_shift_fits_with_one_line(qtbot):
    """GPT-2 small's 1024 x 768 table: shown with its similarity, but no d x d least-squares fits
    (seconds each) on the GUI thread; the page says why."""
    from types import SimpleNamespace

    from transformers import GPT2Config, GPT2LMHeadModel

    from explorer.hf.adapter import HFCausalLM, HFModelConfig
    from explorer.ui.bus import AppBus
    from explorer.ui.panels.positional import MAX_FIT_DIMS, PositionalPanel

    config = GPT2Config(vocab_size=50, n_positions=1024, n_embd=768, n_layer=1, n_head=12)
    adapter = HFCausalLM(GPT2LMHeadModel(config).eval(), HFModelConfig(
        "hf-causal-lm", "gpt2", 50, 1024, None, None, None, 0))
    panel = PositionalPanel(AppBus())
    qtbot.addWidget(panel)
    panel.set_workspace(SimpleNamespace(model=adapter))
    assert panel.model_map.matrix.shape == (1024, 768) and panel.similarity_map.matrix.shape == (1024, 1024)
    assert panel.fit is None and panel.residuals["model"][0] == [] and panel.residuals["sinusoidal"][0] == []
    assert f"fitted for d ≤ {MAX_FIT_DIMS}" in panel.status.text() and "d = 768" in panel.status.text()
