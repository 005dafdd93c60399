"""Each view with nothing to show says why, in one line, in its own place, and draws no empty axes
(nor exports a figure of them); the view comes back with its first data."""

from __future__ import annotations

from explorer.ui.panels.hidden import TRACES_HINT


def empty_views(window) -> dict:
    panels = window.panels
    return {"curves": panels["curves"].view_state, "bleu": panels["bleu"].plot_state,
            "hidden": panels["hidden"].views, "traces": panels["hidden"].traces_view,
            "positions": panels["positional"].model_view}


def test_without_a_model_each_view_says_why_then_draws_its_data(make_main_window, qtbot,
                                                                 tiny_workspace):
    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    for name, view in empty_views(window).items():
        assert view.empty and view.view.isHidden(), name
        assert view.message.startswith("Open ") or view.message == TRACES_HINT, name
        assert "\n" not in view.message, name
    panels = window.panels
    assert panels["curves"].plot_items() == {} and panels["bleu"].plot_items() == {}
    assert panels["hidden"].plot_items() == {} and "model" not in panels["positional"].plot_items()

    # a seq2seq GRU: its first evaluation (a loss and a BLEU point) and probe fill the views
    window.controller.set_workspace(tiny_workspace)
    views = empty_views(window)
    qtbot.waitUntil(lambda: not any(views[name].empty for name in ("curves", "bleu", "hidden"))
                    and not window.controller.jobs.busy, timeout=60_000)
    assert {"all", "loss"} <= set(panels["curves"].plot_items())
    assert set(panels["bleu"].plot_items()) == {"bleu"} and not panels["bleu"].details.isHidden()
    assert "heatmap" in panels["hidden"].plot_items()
    # still nothing to draw, each for its reason: no units selected, no table in a GRU
    assert views["traces"].message == TRACES_HINT
    assert views["positions"].message.startswith("No positional table: this model is no "
                                                 "Transformer")
