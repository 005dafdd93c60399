"""The lesson dock opens a lesson (its model, its panels, its steps) and checks a step on the
model; presentation mode scales a panel up and gives the layout back exactly."""

from __future__ import annotations

from explorer.lessons.format import builtin_lessons
from tests.ui.test_default_layout import filled


def test_presentation_round_trips_the_layout_and_scales_the_panel(make_main_window, qtbot):
    from PySide6.QtWidgets import QApplication

    window = make_main_window()
    window.resize(1280, 800)  # the smallest screen the default layout is made for
    window.show()
    qtbot.waitExposed(window)
    for _ in range(20):  # the first show lays the docks out over a few event-loop turns
        QApplication.processEvents()
    before = window.saveState()
    font = QApplication.instance().font().pointSizeF()
    plot = window.panels["gradients"].plot_items()["playground"]
    tick = plot.getAxis("left").style["tickFont"]
    tick_before = tick.pointSizeF() if tick is not None else None

    window.presentation.enter("gradients")
    assert window.presentation.screen.isAncestorOf(window.panels["gradients"])
    panel = window.panels["gradients"]
    assert panel.font().pointSizeF() == 2 * font
    assert plot.getAxis("left").style["tickFont"].pointSizeF() >= 16
    window.presentation.set_zoom(+1)
    assert window.presentation.zoom["gradients"] == 2.5
    window.actions.presentation.trigger()  # F11 again: back

    assert not window.presentation.on
    assert window.saveState() == before
    assert panel.font().pointSizeF() == font
    after = plot.getAxis("left").style["tickFont"]
    assert (after.pointSizeF() if after is not None else None) == tick_before
    window.presentation.enter("gradients")  # the zoom is kept per panel
    assert panel.font().pointSizeF() == 2.5 * font
    window.presentation.leave()
    assert window.saveState() == before


def test_lesson_dock_opens_a_lesson_arranges_its_panels_and_checks_a_step(make_main_window, qtbot,
                                                                          tmp_path):
    window = make_main_window()
    window.show()
    lesson = next(p for p in builtin_lessons() if p.stem.startswith("06"))
    window.open_lesson(lesson)
    dock = window.lesson_dock
    qtbot.waitUntil(lambda: dock.do_button.isEnabled(), timeout=60_000)
    assert window.controller.workspace is dock.session.workspace
    assert dock.session.keep_cores == 1  # its training, in the job runner too, leaves the window a core
    assert window.docks["positional"].isVisible() and not window.docks["beam"].isVisible()
    assert "1/3" in dock.title.text()
    dock.do_button.click()
    qtbot.waitUntil(lambda: 0 in dock.results, timeout=60_000)
    assert all(r.passed for r in dock.results[0])
    assert dock.checks.item(0).text().startswith("✓")
    dock.next_button.click()
    dock.next_button.click()
    assert "3/3" in dock.title.text() and not dock.next_button.isEnabled()
    qtbot.waitUntil(lambda: window.panels["positional"].has_content(), timeout=60_000)
    written = dock.export_handout(tmp_path)
    assert (tmp_path / "handout.html") in written and (tmp_path / "handout.pdf") in written
    assert list((tmp_path / "step-01").glob("*.png"))


def _text_heights(panel) -> dict[tuple[int, str], float]:
    """What a viewer reads in `panel`, as drawn: the height in pixels of each visible axis's tick
    text, of each text item in its plots (axis titles, plot titles, legends, tokens, diagram
    labels) and of each visible label's and table's font."""
    import pyqtgraph as pg
    from PySide6.QtGui import QFontInfo, QPainter, QPicture
    from PySide6.QtWidgets import QAbstractItemView, QGraphicsTextItem, QLabel

    heights = {}
    for view in panel.findChildren(pg.GraphicsView):
        if not view.isVisible():
            continue
        for item in view.scene().items():
            if not item.isVisible():
                continue
            if isinstance(item, pg.AxisItem) and item.style["showValues"]:
                picture = QPicture()
                painter = QPainter(picture)
                specs = item.generateDrawSpecs(painter)
                painter.end()
                if specs and specs[2]:
                    heights[(id(item), type(item).__name__)] = max(rect.height() for rect, _, _ in specs[2])
            elif isinstance(item, QGraphicsTextItem) and item.toPlainText().strip():
                # the first line's height: a title may wrap in the window and not on the screen
                line = item.document().firstBlock().layout().lineAt(0)
                heights[(id(item), type(item.parentItem()).__name__)] = line.height()
    for widget in [*panel.findChildren(QLabel), *panel.findChildren(QAbstractItemView)]:
        if widget.isVisible() and (not isinstance(widget, QLabel) or widget.text()):
            heights[(id(widget), type(widget).__name__)] = QFontInfo(widget.font()).pixelSize()
    return heights


def _row_heights(panel) -> dict[int, int]:
    """The first row's height of each visible table (or tree) with rows in `panel`."""
    from PySide6.QtWidgets import QTableView, QTreeView

    heights = {}
    for view in panel.findChildren(QTableView) + panel.findChildren(QTreeView):
        rows = view.model().rowCount() if view.model() is not None else 0
        if view.isVisible() and rows:
            heights[id(view)] = (view.rowHeight(0) if isinstance(view, QTableView)
                                 else view.rowHeight(view.model().index(0, 0)))
    return heights


def test_presentation_scales_the_text_of_every_panel_and_gives_the_layout_back(
        make_main_window, qtbot):
    """Every registered panel, presented at ×2, gives the layout back exactly. Every panel with
    content: every tick label, axis title, plot title, legend, text item, label and table reads
    at least 1.5 times as tall as in the window (a token axis may pick a size between, to fit),
    none smaller, and every table's rows are 1.5 times as tall."""
    from PySide6.QtCore import QSize
    from PySide6.QtWidgets import QApplication

    from explorer.panel_registry import PANELS
    from explorer.training.checkpoint import demo_checkpoints

    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    demo = next(path for name, path in demo_checkpoints().items() if "transformer" in name)
    window.controller.open_checkpoint(demo)
    qtbot.waitUntil(lambda: filled([p for p in window.panels.values() if p.applies_to(
        window.controller.workspace)]) and not window.controller.jobs.busy, timeout=120_000)
    for _ in range(20):
        QApplication.processEvents()
    assert set(window.panels) == {entry.panel_id for entry in PANELS}
    not_grown, moved, tables = {}, [], 0
    for panel_id, panel in window.panels.items():
        window.show_panel(panel_id)
        panel.grab()  # pyqtgraph lays out axes and labels as it paints
        QApplication.processEvents()  # and the layout requests that painting posted
        before, rows_before = _text_heights(panel), _row_heights(panel)
        state = window.saveState()  # with this panel's tab raised
        window.presentation.enter(panel_id)
        screen = window.presentation.screen
        screen.showNormal()  # the lecture hall's 1920 x 1080 (the offscreen screen is smaller)
        screen.resize(1920, 1080)
        qtbot.waitExposed(screen)
        panel.grab()
        # panels that fit their text to their size do so again on the screen: the next passes
        # scale what they set
        qtbot.waitUntil(lambda shown=panel: window.presentation.scaling.apply() == 0
                        and not shown.grab().isNull())
        after, rows_after = _text_heights(panel), _row_heights(panel)
        window.presentation.leave()
        if window.saveState() != state or window.size() != QSize(1280, 800):
            moved.append(panel_id)
        assert _row_heights(panel) == rows_before, panel_id
        if not panel.has_content():
            continue
        common = before.keys() & after.keys()
        assert len(common) >= 2, panel_id  # each panel has labels or axes to measure
        small = [f"{key[1]} {before[key]:.0f} -> {after[key]:.0f}" for key in common
                 if after[key] < 1.5 * before[key]]
        small += [f"table rows {rows_before[key]} -> {rows_after.get(key)}" for key in rows_before
                  if rows_after.get(key, 0) < 1.5 * rows_before[key]]
        tables += len(rows_before)
        if small:
            not_grown[panel_id] = small
    assert not moved, f"the layout did not come back after presenting {moved}"
    assert not not_grown, "\n".join(f"{p}: {', '.join(found)}" for p, found in not_grown.items())
    assert tables >= 2  # the examples and the BLEU tables at least


def test_table_rows_are_three_times_as_tall_at_x3_and_come_back(make_main_window, qtbot):
    """At ×3 a table's rows (a set default height, and rows fitted to two-line contents, as the
    logit lens fits them) are at least 2.5 times as tall, rows added meanwhile too; leaving gives
    every row its height back."""
    from PySide6.QtWidgets import QTableWidgetItem

    from explorer.metrics.bleu import corpus_bleu

    window = make_main_window()
    window.show()
    window.panels["bleu"].show_breakdown(corpus_bleu(["the cat sat on a mat"], [["the cat sat on the mat"]]))
    table = window.panels["bleu"].table
    for row in (1, 3):
        table.setItem(row, 0, QTableWidgetItem("two\nlines"))
    table.resizeRowsToContents()
    heights = [table.rowHeight(row) for row in range(4)]
    default = table.verticalHeader().defaultSectionSize()
    assert heights[1] > heights[0]

    window.presentation.enter("bleu")
    window.presentation.set_zoom(+1)
    window.presentation.set_zoom(+1)
    assert window.presentation.zoom["bleu"] == 3.0
    assert all(table.rowHeight(row) >= 2.5 * h for row, h in enumerate(heights))
    table.setRowCount(5)  # a row the panel adds while presenting takes the scaled default
    window.presentation.rescale()
    assert table.rowHeight(4) >= 2.5 * default
    assert all(table.rowHeight(row) < 3.5 * h for row, h in enumerate(heights))  # scaled once
    window.presentation.leave()

    assert [table.rowHeight(row) for row in range(4)] == heights
    assert table.rowHeight(4) == default


COURSE_LESSON = """---
title: {title}
checkpoint: demo:translate-toy-transformer
panels: positional
---
## Shifts
@show positional
@check shift_residual k={k} below=1e-6
"""


def test_a_course_lists_every_lesson_with_its_progress_and_moves_between_them(make_main_window,
                                                                             qtbot, tmp_path):
    folder = tmp_path / "course"
    folder.mkdir()
    for name, title, k in (("01-first.md", "First shifts", 1), ("02-second.md", "Second shifts", 3)):
        (folder / name).write_text(COURSE_LESSON.format(title=title, k=k), encoding="utf-8")
    window = make_main_window()
    window.show()
    window.open_lesson(folder)  # File ▸ Open course…, `explorer lesson FOLDER`
    dock = window.lesson_dock
    qtbot.waitUntil(lambda: dock.do_button.isEnabled(), timeout=60_000)
    rows = [dock.course_list.item(i).text() for i in range(dock.course_list.count())]
    assert dock.course_list.isVisible()
    assert rows == ["○ 0/1  1. First shifts", "○ 0/1  2. Second shifts"]
    assert dock.session.lesson.title == "First shifts" and dock.course_list.currentRow() == 0
    dock.do_button.click()
    qtbot.waitUntil(lambda: dock.course_list.item(0).text().startswith("✓"), timeout=60_000)
    assert dock.course_list.item(0).text() == "✓ 1/1  1. First shifts"
    assert dock.next_button.text() == "Next lesson ▶" and dock.next_button.isEnabled()
    dock.next_button.click()  # the last step of the first lesson: on to the second
    qtbot.waitUntil(lambda: dock.session.lesson.title == "Second shifts" and dock.do_button.isEnabled(),
                    timeout=60_000)
    assert dock.course_list.currentRow() == 1 and not dock.next_button.isEnabled()
    assert dock.course_list.item(0).text().startswith("✓")  # the first lesson's progress stays
    dock.course_list.itemClicked.emit(dock.course_list.item(0))  # back to the first by the list
    qtbot.waitUntil(lambda: dock.session.lesson.title == "First shifts", timeout=60_000)
    qtbot.waitUntil(lambda: dock.do_button.isEnabled(), timeout=60_000)
    window.open_lesson(folder / "02-second.md")  # one file of the course keeps the course listed
    qtbot.waitUntil(lambda: dock.session.lesson.title == "Second shifts", timeout=60_000)
    assert dock.course_list.count() == 2
    other = tmp_path / "alone.md"
    other.write_text(COURSE_LESSON.format(title="Alone", k=2), encoding="utf-8")
    window.open_lesson(other)  # a lesson outside the course: no list
    qtbot.waitUntil(lambda: dock.session.lesson.title == "Alone", timeout=60_000)
    assert not dock.course_list.isVisible()
    qtbot.waitUntil(lambda: dock.do_button.isEnabled(), timeout=60_000)


def test_token_names_in_a_lesson_step_are_shown_not_taken_for_html(qapp):
    from PySide6.QtGui import QTextDocument

    from explorer.ui.lesson_dock import lesson_markdown

    document = QTextDocument()
    document.setMarkdown(lesson_markdown("80% become <mask>, 10% stay; `<eos>` ends it. **Then**"))
    assert document.toPlainText() == "80% become <mask>, 10% stay; <eos> ends it. Then"


def test_a_broken_lesson_opened_in_the_app_says_one_line_naming_its_line(make_main_window, qtbot,
                                                                         tmp_path):
    """File ▸ Open lesson on a file with an unknown check: one line naming the file and the
    line, in the error box and the status bar; the window's model stays open."""
    path = tmp_path / "broken.md"
    path.write_text(COURSE_LESSON.format(title="Broken", k=1).replace("shift_residual", "shift_lemma"),
                    encoding="utf-8")
    window = make_main_window()
    window.show()
    workspace = window.controller.workspace
    with qtbot.waitSignal(window.error_shown, timeout=10_000) as shown:
        window.open_lesson(path)
    message = shown.args[0]
    assert "\n" not in message and message.startswith(f"{path}:8: unknown check 'shift_lemma'")
    assert window.statusBar().currentMessage() == message
    assert window.controller.workspace is workspace
    for box in list(window.error_boxes):
        box.close()


def _indicator_size(box) -> tuple[int, int]:
    """A check box's indicator as its style lays it out (a style sheet's rule included)."""
    from PySide6.QtWidgets import QStyle, QStyleOptionButton

    option = QStyleOptionButton()
    box.initStyleOption(option)
    rect = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
    return rect.width(), rect.height()


def test_check_box_indicators_and_beam_markers_grow_at_x2_and_come_back(make_main_window, qtbot,
                                                                        tiny_workspace):
    """Check boxes' indicators and the beam tree's node markers are drawn at fixed pixel sizes:
    at ×2 both are at least 1.5 times as large, nodes drawn meanwhile too; leaving gives back
    exactly the sizes and style sheets from before."""
    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    window.controller.set_workspace(tiny_workspace)
    panel = window.panels["beam"]
    window.show_panel("beam")
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=60_000)
    box, nodes = panel.pruned_box, panel.node_items["kept"]
    font = box.font().pointSizeF()
    indicator, sheet = _indicator_size(box), box.styleSheet()
    marker = nodes.opts["size"]
    drawn = [p.size() for p in nodes.points()]
    assert drawn and set(drawn) == {marker}

    window.presentation.enter("beam")
    assert window.presentation.zoom["beam"] == 2.0
    width, height = _indicator_size(box)
    assert width >= 1.5 * indicator[0] and height >= 1.5 * indicator[1]
    assert box.font().pointSizeF() == 2 * font  # its text still follows the presentation font
    assert nodes.opts["size"] >= 1.5 * marker and {p.size() for p in nodes.points()} == {nodes.opts["size"]}
    panel.pruned_box.toggle()  # drawn anew without the pruned nodes (the greedy path may end in one)
    qtbot.waitUntil(lambda: window.presentation.scaling.apply() == 0)
    assert all(p.size() >= 1.5 * marker for p in nodes.points())

    window.presentation.leave()
    assert _indicator_size(box) == indicator and box.styleSheet() == sheet
    assert box.font().pointSizeF() == font
    assert nodes.opts["size"] == marker and {p.size() for p in nodes.points()} == {marker}
