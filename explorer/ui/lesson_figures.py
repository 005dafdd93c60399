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


PDF_FIGURE_WIDTH = 520  # px at 96 dpi: an A4 page inside 15 mm margins is 180 mm, about 680 px


def write_pdf(page: Path) -> Path:
    """handout.pdf beside `page` (handout.html), with its figures: Qt's QTextDocument printed by
    a QPrinter to PDF (no dependency beyond Qt)."""
    from PySide6.QtCore import QMarginsF, QUrl
    from PySide6.QtGui import QGuiApplication, QPageLayout, QPageSize, QTextDocument
    from PySide6.QtPrintSupport import QPrinter

    if QGuiApplication.instance() is None:
        raise RuntimeError("write_pdf needs a Qt application (headless_export makes one)")
    page = Path(page)
    document = QTextDocument()
    document.setBaseUrl(QUrl.fromLocalFile(str(page.parent.resolve()) + "/"))  # figures: relative
    # QTextDocument ignores CSS max-width: a figure's width attribute keeps it on the page
    document.setHtml(page.read_text(encoding="utf-8").replace("<img ", f"<img width='{PDF_FIGURE_WIDTH}' "))
    printer = QPrinter(QPrinter.PrinterMode.HighResolution)
    printer.setOutputFormat(QPrinter.OutputFormat.PdfFormat)
    printer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                                      QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter))
    pdf = page.with_suffix(".pdf")
    printer.setOutputFileName(str(pdf))
    document.print_(printer)
    return pdf


def progress_folder(settings=None) -> Path:
    """Where the student's lesson progress is kept: AppDataLocation/lessons (the app's data
    folder; runs/data_dir/lessons when that setting is given, as in the tests)."""
    from PySide6.QtCore import QCoreApplication, QSettings, QStandardPaths

    from explorer.ui.app import APPLICATION, ORGANISATION

    QCoreApplication.setOrganizationName(ORGANISATION)  # the app's folder, also headless
    QCoreApplication.setApplicationName(APPLICATION)
    if settings is None:
        settings = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION,
                             APPLICATION)
    base = settings.value("runs/data_dir") or QStandardPaths.writableLocation(
        QStandardPaths.StandardLocation.AppDataLocation)
    return Path(str(base)) / "lessons"
