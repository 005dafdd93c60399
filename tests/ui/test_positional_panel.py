"""The positional-encoding panel: the matrix against the notes' formula, similarity by distance,
the fitted shift map's residual (tiny for sinusoidal, large for learned), and the loaded model."""

import csv
import math

import numpy as np
import pytest
import torch

from explorer.data.tokenizers import CharTokenizer
from explorer.ui.bus import AppBus
from explorer.ui.panels.positional import PositionalPanel
from explorer.workspace import Workspace
from seqmodels import build_model, make_config



def make_panel(qtbot):
    bus = AppBus()
    panel = PositionalPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    return bus, panel


def gpt_workspace(positional):
    torch.manual_seed(0)
    tokenizer = CharTokenizer.train(["abcdefgh"])
    config = make_config(
        "gpt", vocab_size=tokenizer.vocab_size, d_model=16, num_heads=2, num_layers=1, d_ff=32,
        dropout=0.0, positional=positional, max_len=96,
    )
    return Workspace(build_model(config), tokenizer)


def test_matrix_is_the_sinusoidal_formula_and_exports_as_csv(qtbot, tmp_path):
    bus, panel = make_panel(qtbot)
    panel.positions_box.setValue(40)
    panel.dims_box.setValue(16)
    assert panel.has_content()
    shown = panel.matrix_map.image.image
    assert shown.shape == (40, 16)
    panel.export(tmp_path, formats=("csv",))
    with open(tmp_path / "positional_matrix.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][1:] == [f"dim{i}" for i in range(16)]
    for n, row in enumerate(rows[1:]):
        for i, value in enumerate(row[1:]):
            expected = math.sin(n / 10000 ** (i / 16)) if i % 2 == 0 else math.cos(n / 10000 ** ((i - 1) / 16))
            assert float(value) == pytest.approx(expected, abs=1e-6)
            assert shown[n, i] == pytest.approx(expected, abs=1e-6)


def test_curves_follow_the_chosen_dimensions(qtbot):
    bus, panel = make_panel(qtbot)
    panel.curve_dims.setText("1, 6")
    panel.curve_dims.editingFinished.emit()
    x, y = panel.curve_items[1].getData()
    np.testing.assert_allclose(y, np.sin(x / 10000 ** (6 / 64)), atol=1e-9)
    assert panel.curve_items[2].getData()[0] is None or len(panel.curve_items[2].getData()[0]) == 0


def test_similarity_depends_on_distance_only(qtbot):
    bus, panel = make_panel(qtbot)
    panel.similarity_kind.setCurrentText("dot")
    sim = panel.similarity_map.image.image
    # every diagonal n - m = const is constant for the sinusoidal table
    for offset in (0, 1, 5, 30):
        diagonal = np.diagonal(sim, offset=offset)
        assert diagonal.max() - diagonal.min() < 1e-4
    assert sim[0, 0] == pytest.approx(32.0, abs=1e-4)


def test_relative_position_residual_tiny_for_sinusoidal_and_large_for_learned(qtbot):
    bus, panel = make_panel(qtbot)
    shifts, residuals = panel.residuals["sinusoidal"]
    assert shifts and max(residuals) < 1e-6
    assert panel.fit.relative_residual < 1e-6
    assert "relative residual" in panel.status.text()

    bus.set_workspace(gpt_workspace("learned"))
    assert panel.dims_box.value() == 16 and panel.positions_box.value() == 96
    assert panel.table_choice.currentData() == "model"
    weight = next(p for n, p in bus.workspace.model.named_parameters() if "pos" in n)
    np.testing.assert_allclose(panel.model_map.image.image, weight.detach().numpy(), rtol=1e-6)
    model_shifts, model_residuals = panel.residuals["model"]
    assert model_shifts and min(model_residuals) > 0.1  # random init: no linear shift structure
    assert panel.fit.relative_residual > 0.1


def test_rope_model_shows_its_rotation_angles(qtbot):
    bus, panel = make_panel(qtbot)
    bus.set_workspace(gpt_workspace("rope"))
    head_dim = 8
    angles = panel.model_map.image.image
    positions = np.arange(96)[:, None]
    np.testing.assert_allclose(angles[:, 0::2], np.sin(positions / 10000 ** (np.arange(0, head_dim, 2) / head_dim)), atol=1e-5)
    assert "RoPE" in panel.model_map.plot.titleLabel.text and "RoPE" in panel.model_positions.description


def demo_like_workspace():
    """The demo's shape: a sinusoidal Transformer with d_model = max_len = 64."""
    torch.manual_seed(0)
    tokenizer = CharTokenizer.train(["abcdefgh"])
    config = make_config(
        "gpt", vocab_size=tokenizer.vocab_size, d_model=64, num_heads=2, num_layers=1, d_ff=32,
        dropout=0.0, positional="sinusoidal", max_len=64,
    )
    return Workspace(build_model(config), tokenizer)


@pytest.mark.parametrize("workspace", [None, demo_like_workspace], ids=["default", "demo_shape"])
def test_default_config_fits_the_shift_map_with_a_tiny_residual(qtbot, workspace):
    bus, panel = make_panel(qtbot)
    if workspace is not None:
        bus.set_workspace(workspace())
        # the reference has twice d positions; the model's own table keeps its 64
        assert panel.positions_box.value() == 128 and panel.model_positions.table.shape == (64, 64)
        assert panel.table_choice.currentData() == "sinusoidal"  # 64 rows cannot test a 64-d map
    assert panel.fit is not None and panel.fit.relative_residual < 1e-10
    assert "too few" not in panel.status.text()
    shifts, residuals = panel.residuals["sinusoidal"]
    assert shifts[0] == 1 and shifts[-1] > 32 and max(residuals) < 1e-10
    # the x axis spans the fitted shifts (and k), not a sliver around the k line
    low, high = panel.residual_plot.getPlotItem().viewRange()[0]
    assert low <= 1 and shifts[-1] <= high <= 1.2 * shifts[-1] + 2


def test_a_too_short_table_says_why_there_is_no_fit(qtbot):
    bus, panel = make_panel(qtbot)
    panel.positions_box.setValue(64)
    assert panel.fit is None and "too few" in panel.status.text() and "d + k" in panel.status.text()


def test_views_are_on_pages_and_every_page_exports(qtbot, tmp_path):
    """At the dock's size each heatmap gets a page half, not a sixth; views behind the shown page
    still export at their on-screen size."""
    bus, panel = make_panel(qtbot)
    panel.resize(830, 400)
    qtbot.waitExposed(panel)
    assert panel.pages.tabs.count() == 4  # matrix, sinusoids, M_k, relative-position bias (T5)
    qtbot.waitUntil(lambda: panel.matrix_map.width() > 350 and panel.matrix_map.height() > 250)
    panel.pages.show_page(2)
    written = panel.export(tmp_path, formats=("png",))
    names = {path.name for path in written}
    assert {"positional_matrix.png", "positional_curves.png", "positional_relative.png"} <= names
    from PySide6.QtGui import QImage

    behind = QImage(str(tmp_path / "positional_matrix.png"))
    assert behind.width() > 350 and behind.height() > 250
