"""The new-model dialog reads the registries: its families, tips and attention scores come from
explorer.families and seqmodels.scores, and the rows it shows are the family config's fields."""

import dataclasses

import pytest
from PySide6.QtCore import Qt

from explorer.families import families
from seqmodels.cells import cells
from seqmodels.config import make_config
from seqmodels.scores import SCORES


@pytest.fixture
def dialog(qtbot):
    from explorer.ui.dialogs.new_model import NewModelDialog

    widget = NewModelDialog(vocab_size=40, src_vocab_size=30)
    qtbot.addWidget(widget)
    return widget


def combo_items(combo) -> dict[str, str]:
    return {combo.itemText(i): combo.itemData(i, Qt.ItemDataRole.ToolTipRole)
            for i in range(combo.count())}


def test_families_and_scores_with_their_tips_come_from_the_tables(dialog):
    assert combo_items(dialog.family) == {n: f.summary for n, f in families().items()}
    dialog.set_family("seq2seq")
    assert combo_items(dialog.setting_widgets["attention"]) == {n: s.tip for n, s in SCORES.items()}
    assert combo_items(dialog.setting_widgets["cell"]) == {n: c.tip for n, c in cells().items()}


@pytest.mark.parametrize("name", list(families()))
def test_each_family_shows_its_config_fields_and_builds_its_tiny_preset(dialog, name):
    dialog.set_family(name)
    config = dialog.model_config()
    settings = {f.name for f in dataclasses.fields(config)}
    declared = {f.name: f.metadata["setting"] for f in dataclasses.fields(config)
                if "setting" in f.metadata}
    shown = {name for name, spec in declared.items() if not spec.sized_by_data}
    assert set(dialog.setting_widgets) == shown  # one row per field the family's config declares
    for field, widget in dialog.setting_widgets.items():
        form = dialog.advanced_form if declared[field].advanced else dialog.form
        assert form.indexOf(widget) >= 0 and widget.toolTip() == declared[field].tip, field
    expected = make_config(name, "tiny", vocab_size=40)
    for field in settings - {"src_vocab_size", "tie_weights"}:
        assert getattr(config, field) == getattr(expected, field), field
    if families()[name].has_source:  # the source vocabulary stands in until the data sets it
        assert config.src_vocab_size == 30
    assert dialog.ok_button.isEnabled()
