"""The extension points hold: a family with a field of a new kind (tests/extensions/indrnn_lm.py)
and a cell (tests/extensions/mingru.py), each one file that only calls the public registries,
train, probe, decode, save and load, and show in the new-model dialog, "Compare cells" and
`--cell`, with no line of explorer/ or seqmodels/ naming them."""

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from explorer.errors import UserError
from seqmodels.cells import cell_names

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def extended(monkeypatch):
    """The registries with the throwaway family and cell added, as they were afterwards."""
    import explorer.families as app_side
    import seqmodels.cells as cell_table
    import seqmodels.families as model_side
    from explorer.ui.dialogs import new_model  # noqa: F401 - loaded before: reads the registry live
    from extensions import indrnn_lm, mingru

    model_side.model_families()  # discover seqmodels/ first, so the copy holds every family
    monkeypatch.setattr(app_side, "_FAMILIES", dict(app_side._FAMILIES))
    monkeypatch.setattr(model_side, "_REGISTERED", dict(model_side._REGISTERED))
    monkeypatch.setattr(cell_table, "_CELLS", dict(cell_table._CELLS))
    indrnn_lm.register()
    mingru.register()
    return indrnn_lm, mingru


def lm_workspace(family, **overrides):
    from explorer.training.setup import DataSpec, build_workspace

    torch.manual_seed(0)
    spec = DataSpec(task="brackets", n_train=64, n_val=8, seed=0)
    return build_workspace(spec, family, preset="tiny", **overrides)


def train(workspace, steps=30):
    from explorer.events import StepMetrics
    from explorer.training import Trainer
    from explorer.training.config import TrainConfig

    config = TrainConfig(steps=steps, batch_size=8, context=16, bptt=16, lr=1e-2, optimizer="adam",
                         eval_every=0, eval_examples=4, device="cpu", num_threads=1)
    return [e.loss for e in Trainer(workspace, config).run() if isinstance(e, StepMetrics)]


def test_no_file_of_the_packages_names_the_extensions():
    """How "≤ 2 files" is checked: each extension is the one file under tests/extensions/, and
    nothing in explorer/ or seqmodels/ mentions it, so it needs no other file changed."""
    for path in [*ROOT.glob("explorer/**/*.py"), *ROOT.glob("seqmodels/**/*.py")]:
        text = path.read_text(encoding="utf-8").lower()
        assert not re.search(r"indrnn|mingru", text), path


def test_a_new_field_kind_is_checked_by_its_own_range(extended):
    from explorer.commands.train_options import model_fields
    from explorer.training.weights_file import check_field_types
    from seqmodels.config import make_config

    config = make_config("indrnn-lm", "tiny", vocab_size=20, recurrent_max=5.0)
    check_field_types(config)  # a float above 1 that is no probability
    for bad in (dict(recurrent_max=20.0), dict(recurrent_max=0.1), dict(activation="gelu"),
                dict(num_layers=0), dict(dropout=1.0), dict(recurrent_max="2")):
        with pytest.raises(UserError, match=f"model field {next(iter(bad))!r}"):
            check_field_types(replace(config, **bad))
    fields = model_fields()  # what --config and recipes accept
    assert fields["recurrent_max"] is float and fields["activation"] is str


def test_the_family_trains_saves_and_loads(extended, tmp_path):
    from explorer.training.checkpoint import load_checkpoint, save_checkpoint

    workspace = lm_workspace("indrnn-lm", recurrent_max=3.0, activation="tanh")
    losses = train(workspace)
    assert len(losses) == 30 and np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses
    save_checkpoint(workspace, tmp_path / "ckpt")
    loaded = load_checkpoint(tmp_path / "ckpt")
    assert loaded.model.config == workspace.model.config
    tokens = torch.tensor([[5, 6, 7, 5]])
    loaded.model.eval(), workspace.model.eval()
    torch.testing.assert_close(loaded.model(tokens), workspace.model(tokens))


def test_the_family_probes_its_gradients_through_time(extended):
    from explorer.analysis.probe import probe

    from explorer.families import get_family

    workspace = lm_workspace("indrnn-lm")
    text = workspace.data.val[0][0]
    snapshot = probe(workspace, text, "")
    # reference: autograd on the model itself, on the inputs and targets the family encodes
    encoded = get_family("indrnn-lm").encode_probe(workspace, text, "")
    model = workspace.model.eval()
    logits, trace = model(*encoded.inputs, trace=True)
    loss = F.cross_entropy(logits[0], encoded.targets[0])  # ignores -100, as training does
    norms = [float(g.norm()) for g in torch.autograd.grad(loss, trace.hidden["lm.l0"])]
    # the view keeps the positions a loss reads (the last token typed has no next token)
    expected = [n for n, target in zip(norms, encoded.targets[0].tolist()) if target >= 0]
    np.testing.assert_allclose(snapshot.grad_time["lm.l0"], expected, rtol=1e-4, atol=1e-9)


def test_the_family_decodes_like_its_full_forward(extended):
    from explorer.decoding.scoring import encode_context
    from explorer.decoding.search import greedy

    workspace = lm_workspace("indrnn-lm")
    train(workspace, steps=10)
    model = workspace.model.eval()
    context = encode_context(workspace, "((")
    result = greedy(model, context, max_len=8, tokenizer=workspace.tokenizer)
    ids = list(context)  # reference: argmax of the whole sequence's forward, token after token
    with torch.no_grad():
        for _ in range(len(result.token_ids)):
            ids.append(int(model(torch.tensor([ids]))[0, -1].argmax()))
    assert result.token_ids == ids[len(context):]


def test_the_cell_is_its_formula_and_trains_in_an_rnn_lm(extended):
    import seqmodels
    from seqmodels.config import make_config

    rnn = seqmodels.RNN("mingru", 3, 4, batch_first=True)
    x = torch.randn(2, 5, 3)
    output, h_n = rnn(x)
    h = torch.zeros(2, 4)  # reference: the paper's recurrence, step by step
    w, b = rnn.weight_ih_l0, rnn.bias_ih_l0  # the cell never reads the hidden-side terms
    for t in range(5):
        z_in, candidate = F.linear(x[:, t], w, b).chunk(2, dim=-1)
        z = torch.sigmoid(z_in)
        h = (1 - z) * h + z * candidate
        torch.testing.assert_close(output[:, t], h)
    torch.testing.assert_close(h_n[0], h)
    with pytest.raises(ValueError, match="mingru"):  # the error lists the registered cells
        make_config("rnn-lm", cell="nocell")
    workspace = lm_workspace("rnn-lm", cell="mingru")
    losses = train(workspace)
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses


def test_compare_cells_and_train_help_list_the_cell(extended, capsys):
    from explorer.analysis.probe import compare_cells
    from explorer.cli import main

    curves = compare_cells([5, 6, 7, 5, 6, 7, 5], vocab_size=10, hidden_size=8)
    assert list(curves) == list(cell_names()) and cell_names()[-1] == "mingru"  # added last
    assert curves["mingru"].shape == (6,) and np.all(np.isfinite(curves["mingru"]))
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "|".join(cell_names()) in re.sub(r"\s", "", capsys.readouterr().out)  # however wrapped


def test_the_dialog_shows_the_family_its_new_field_and_the_cell(extended, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDoubleSpinBox

    import seqmodels
    from explorer.ui.dialogs.new_model import NewModelDialog

    dialog = NewModelDialog(vocab_size=20)
    qtbot.addWidget(dialog)
    dialog.set_family("indrnn-lm")
    bound = dialog.setting_widgets["recurrent_max"]
    assert isinstance(bound, QDoubleSpinBox)
    assert (bound.minimum(), bound.maximum(), bound.value()) == (0.5, 10.0, 2.0)
    activation = dialog.setting_widgets["activation"]
    tips = {activation.itemText(i): activation.itemData(i, Qt.ItemDataRole.ToolTipRole)
            for i in range(activation.count())}
    assert tips == extended[0].ACTIVATIONS
    bound.setValue(4.5)
    activation.setCurrentText("tanh")
    config = dialog.model_config()
    assert (config.family, config.recurrent_max, config.activation) == ("indrnn-lm", 4.5, "tanh")
    assert dialog.parameter_count == seqmodels.count_parameters(seqmodels.build_model(config))
    dialog.set_family("rnn-lm")
    cell = dialog.setting_widgets["cell"]
    assert "mingru" in [cell.itemText(i) for i in range(cell.count())]
    cell.setCurrentText("mingru")
    assert dialog.model_config().cell == "mingru" and dialog.ok_button.isEnabled()


def test_the_gradients_panel_compares_every_cell_for_a_model_without_one(extended, qtbot):
    from explorer.ui.bus import AppBus
    from explorer.ui.panels.gradients import GradientFlowPanel
    from explorer.ui.probing import Prober
    from seqmodels.cells import cells

    bus = AppBus()
    panel = GradientFlowPanel(bus)
    Prober(bus, panel)
    qtbot.addWidget(panel)
    bus.set_workspace(lm_workspace("indrnn-lm"))  # no `cell`: this raised AttributeError
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=30_000)
    panel.compare_cells()
    qtbot.waitUntil(lambda: bool(panel.cell_curves) and not panel.busy(), timeout=30_000)
    assert set(panel.cell_curves) == set(cells())
    pen = panel.cell_items["mingru"].opts["pen"]
    assert pen.color().name() == cells()["mingru"].colour
    assert "(trained)" not in json.dumps(
        [panel.cells_plot.legend.getLabel(item).text for item in panel.cell_items.values()])
