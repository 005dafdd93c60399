"""A text field filled with more than it can show shows its start, not the middle of a word at
its end ("est-SG behind…"), in every panel that fills one from the probe input."""

from __future__ import annotations

from PySide6.QtWidgets import QLineEdit

LONG_SOURCE = "the-DEF cat-NOM sit-PST-3SG on the-DEF mat-LOC and the-DEF dog-NOM rest-PST-3SG " \
              "behind the-DEF door-LOC while the-DEF bird-PL sing-PRS-3PL"
LONG_TARGET = "le chat s'est assis sur le tapis et le chien s'est reposé derrière la porte"


def _shows_start(box: QLineEdit, text: str) -> bool:
    """The field holds `text` and its first character is in view: the cursor at 0 puts it there,
    whatever the width (QLineEdit scrolls only as far as its cursor)."""
    return box.text() == text and box.cursorPosition() == 0 and box.toolTip() == text


def test_probe_input_fields_show_the_start_of_a_long_text(make_main_window, qtbot):
    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    window.bus.state.set_probe_input(LONG_SOURCE, LONG_TARGET)
    for panel_id in ("attention", "hidden"):
        panel = window.panels[panel_id]
        assert _shows_start(panel.source_edit, LONG_SOURCE), panel_id
        assert _shows_start(panel.target_edit, LONG_TARGET), panel_id
        # what the field paints: its first word, not the middle of its last ones
        panel.source_edit.resize(200, panel.source_edit.height())
        assert panel.source_edit.cursorRect().left() < 20, panel_id


def test_log_p_never_reads_minus_zero():
    from explorer.analysis.beam_text import log_p

    for value in (-4.2e-6, -3.0e-4, -0.00049, -1e-12, -0.0005, -0.0123, -1.2345, -37.5):
        text = log_p(value)
        assert text not in ("-0.000", "0.000", "-0", "0"), value
        assert abs(float(text) - value) <= 0.05 * abs(value), (value, text)  # 2 significant digits
    assert log_p(0.0) == "0" and log_p(-0.0) == "0"
    assert log_p(-1.2345) == "-1.234" or log_p(-1.2345) == "-1.235"
