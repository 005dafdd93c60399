"""A lesson step's figure, rendered headless by the app's own panels (explorer lesson --export and
the lesson dock's handout): the lessons core asks for it through run_lesson's export_figure."""

from __future__ import annotations

from pathlib import Path

from explorer.lessons.runner import panel_controls, step_figure
from explorer.lessons.session import LessonSession


def export_figure(session: LessonSession, index: int, folder: Path, formats=("png", "svg")) -> list[Path]:
    from explorer.ui.headless_export import render_panels  # Qt and torch: imported when asked
    from explorer.ui.panels import find_panel

    panel = step_figure(session.lesson, index)
    source, target = session.probe
    bleu = session.evaluation() if panel == "bleu" and session.workspace.is_seq2seq else None
    return render_panels(session.workspace, [find_panel(panel)], folder, tuple(formats),
                         source=source, target=target, bleu_metrics=bleu,
                         controls=panel_controls(session.lesson, index, panel))
