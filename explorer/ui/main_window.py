"""The main window: one dock per panel, menus, toolbar, settings and drag-and-drop (the status
bar's permanent widgets live in explorer/ui/status_bar.py).

torch is imported only after the first paint: the window shows at once, then a queued call opens
the checkpoint (or the built-in demo) through the controller's worker thread.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QByteArray, QCoreApplication, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QFileDialog, QMainWindow, QMessageBox

from explorer.ui.actions import build_actions
from explorer.ui.app import APPLICATION, ORGANISATION
from explorer.ui.bus import AppBus
from explorer.ui.controller import Controller
from explorer.ui import dock_layout
from explorer.ui.jobs import one_line, shutdown_runners
from explorer.ui.menus import build_menus, fill_recent
from explorer.ui.model_dialogs import ModelDialogs
from explorer.ui.panel_guard import guarded_panel
from explorer.ui.panels import PANELS, panel_class
from explorer.ui.run_session import RunSession
from explorer.ui.recovery import attach_runs
from explorer.ui.status_bar import TrainingStatus
from explorer.ui.training_controls import TrainingControls

# saved layouts of an older version give way to the default (3: the tabs of 1280 x 800 read whole)
LAYOUT_VERSION = 3
MIN_WINDOW = (800, 600)
MAX_RECENT = 10


class MainWindow(ModelDialogs, QMainWindow):
    first_painted = Signal(float)  # time.perf_counter() of the first paint
    panels_created = Signal()
    error_shown = Signal(str)

    def __init__(self, settings: QSettings | None = None, checkpoint: str | None = None,
                 load_demo: bool = True, lesson: str | None = None) -> None:
        super().__init__()
        self.setObjectName("main_window")
        self.setWindowTitle(APPLICATION)
        self.settings = settings or QSettings(
            QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION, APPLICATION
        )
        self.bus = AppBus(self)
        self.controller = Controller(self.bus, self)
        self.first_paint_time: float | None = None
        self.error_boxes: list[QMessageBox] = []
        self._closing = False
        self._sized = False
        self._layout_restored = False  # a saved layout of this LAYOUT_VERSION was restored
        self._screen_fit = QSize()  # the size _fit_to_screen gave the window

        self.setDockNestingEnabled(True)
        self.setDockOptions(
            QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks
            | QMainWindow.DockOption.AllowNestedDocks
        )
        self.panels: dict[str, object] = {}
        self.missing_panels: dict[str, str] = {}
        self.actions = build_actions(self)
        self.docks: dict[str, QDockWidget] = dock_layout.create_docks(self)
        self.controls_dock = QDockWidget("Training", self)
        self.controls_dock.setObjectName(dock_layout.CONTROLS_ID)
        self.controls = TrainingControls(self)
        self.controls_dock.setWidget(self.controls)
        self._arrange_default_layout()
        self.runs = RunSession(self)  # a run folder on show: timeline dock, following
        build_menus(self)
        self.status = TrainingStatus(self, self.controller, self.bus)
        self._connect()
        attach_runs(self)  # run folders, autosave and the recovery offer (explorer/ui/recovery.py)
        self.default_state = self.saveState()
        self.setAcceptDrops(True)
        self._fit_to_screen()
        self._restore_settings()

        self._startup_checkpoint = checkpoint
        # a model of the user's: `explorer gui --model` (build, weights, tokenizer), or the
        # Workspace `explorer.show` made
        self.startup_model = None
        self.startup_probe: tuple[str, str] | None = None  # `explorer gui --probe TEXT`
        self._startup_lesson = lesson
        self._load_demo = load_demo and lesson is None
        self.lesson_dock = None  # explorer/ui/lesson_dock.py, made when a lesson opens
        from explorer.ui.presentation import Presentation

        self.presentation = Presentation(self)

    # -- construction ----------------------------------------------------------------------------

    def _fit_to_screen(self) -> None:
        """The screen's available area (a saved geometry replaces it): any less left black
        borders around the window at 1920 x 1080 without a window manager, and any more hides
        the window's own status bar. The frame a window manager adds comes off at the first show
        (_fit_frame)."""
        screen = self.screen()
        if screen is None:
            self.resize(*MIN_WINDOW)
            return
        available = screen.availableGeometry()
        self.resize(max(available.width(), MIN_WINDOW[0]), max(available.height(), MIN_WINDOW[1]))
        self.move(available.topLeft())
        self._screen_fit = self.size()

    def _fit_frame(self) -> None:
        """A window manager's title bar and borders, taken off the size: the whole frame on the
        screen. A size set since (a saved geometry, the caller's resize) is kept."""
        screen = self.screen()
        frame = self.frameGeometry().size() - self.geometry().size()
        if screen is None or self.size() != self._screen_fit or frame == QSize(0, 0):
            return
        available = screen.availableGeometry().size() - frame
        self.resize(max(available.width(), MIN_WINDOW[0]), max(available.height(), MIN_WINDOW[1]))

    def create_panels(self) -> None:
        """Import and build every panel into its dock (once). Panel modules import torch, so the
        app calls this after the window's first paint."""
        if self.panels or self.missing_panels:
            return
        for entry in PANELS:
            panel_id, dock = entry.panel_id, self.docks[entry.panel_id]
            try:
                panel = guarded_panel(panel_class(entry), self.bus)  # explorer/ui/panel_guard.py
            except (ImportError, AttributeError) as exc:  # a panel still being written
                self.missing_panels[panel_id] = f"{type(exc).__name__}: {exc}"
                dock.widget().setText(f"{panel_id} is not available: {exc}")
                continue
            old = dock.widget()
            dock.setWidget(panel)
            # a tab raised or covered: the panel catches up, or stops drawing (panels/base.py)
            dock.visibilityChanged.connect(panel.sight_changed, Qt.ConnectionType.QueuedConnection)
            old.deleteLater()
            # the short name on the tab, the panel's full title and what it shows on hover
            dock.setToolTip(f"{panel.TITLE}: {panel.TOOLTIP}" if panel.TITLE else panel.TOOLTIP)
            self.panels[panel_id] = panel
        dock_layout.tidy_tab_bars(self)  # the tabs' tooltips: the panels' full titles
        if self._sized and not self._layout_restored:
            self.apply_default_sizes()  # the panels' own minimum sizes moved the splitters
        if self.missing_panels:
            self.statusBar().showMessage("Panels not available: " + ", ".join(self.missing_panels))
        self.panels_created.emit()

    def _arrange_default_layout(self) -> None:
        """The default layout for this screen (explorer/ui/dock_layout.py)."""
        screen = self.screen()
        tall = screen is None or screen.availableGeometry().height() >= dock_layout.TALL_SCREEN_PX
        self.default_layout = dock_layout.arrange_default_layout(self, self._all_docks(), tall)
        dock_layout.keep_tab_bars_tidy(self, self._all_docks())

    def _all_docks(self) -> dict[str, QDockWidget]:
        return {**self.docks, self.controls_dock.objectName(): self.controls_dock}

    def apply_default_sizes(self) -> None:
        """The default layout's proportions at the window's current size."""
        dock_layout.apply_default_sizes(self, self._all_docks(), self.default_layout)

    def _connect(self) -> None:
        a, c = self.actions, self.controller
        a.open.triggered.connect(self.open_dialog)
        a.open_checkpoint.triggered.connect(self.open_checkpoint_dialog)
        a.open_model_code.triggered.connect(self.open_model_code_dialog)
        c.model_checked.connect(self.show_model_report)
        a.save_checkpoint.triggered.connect(self.save_checkpoint_dialog)
        a.export_all.triggered.connect(lambda: self.export_panels(list(self.panels)))
        a.quit.triggered.connect(self.close)
        a.new_model.triggered.connect(lambda: self.new_model())
        a.data.triggered.connect(self.data_dialog)
        a.summary.triggered.connect(self.show_summary)
        a.train.triggered.connect(self.train)
        a.pause.toggled.connect(lambda on: c.pause() if on else c.resume())
        a.step.triggered.connect(c.step_once)
        a.stop.triggered.connect(c.stop_training)
        a.resume.triggered.connect(self.resume_dialog)
        a.reset_layout.triggered.connect(self.reset_layout)
        a.open_lesson.triggered.connect(self.open_lesson_dialog)
        a.open_course.triggered.connect(self.open_course_dialog)
        a.presentation.triggered.connect(lambda: self.presentation.toggle())
        self.bus.show_panel.connect(self.show_panel)
        for keys, step in (("Ctrl+=", 1), ("Ctrl+-", -1)):  # presentation zoom of the panel on show
            zoom = QAction(self)
            zoom.setShortcut(keys)
            zoom.triggered.connect(lambda _=False, s=step: self.presentation.set_zoom(s))
            self.addAction(zoom)
        a.about.triggered.connect(self.show_about)
        a.shortcuts.triggered.connect(self.show_shortcuts)
        a.previous_snapshot.triggered.connect(lambda: self.runs.move_by(-1))
        a.next_snapshot.triggered.connect(lambda: self.runs.move_by(1))
        c.error.connect(self.show_error)
        c.busy.connect(self._show_busy)
        self.bus.training_state.connect(self._on_training_state)
        self.bus.workspace_changed.connect(self._on_workspace)

    # -- start-up --------------------------------------------------------------------------------

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        self._painted()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._sized:  # first show: the default proportions, unless a saved layout exists
            self._sized = True
            self._fit_frame()
            if not self._layout_restored:
                self.apply_default_sizes()
        # a window whose docks cover it may never get a paintEvent of its own: do not wait forever
        QTimer.singleShot(500, self._painted)

    def _painted(self) -> None:
        if self.first_paint_time is None:
            self.first_paint_time = time.perf_counter()
            self.first_painted.emit(self.first_paint_time)
            QTimer.singleShot(0, self._open_startup)  # after the paint: now torch may load

    def _open_startup(self) -> None:
        if self._closing:
            return
        self.create_panels()
        if self.startup_probe is not None:  # what the first model opened is probed on
            self.bus.workspace_changed.connect(self._probe_startup)
        if self._startup_lesson:
            self.open_lesson(self._startup_lesson)
        elif self._startup_checkpoint:
            self.open_path(self._startup_checkpoint)
        elif isinstance(self.startup_model, tuple):
            self.controller.open_model_code(*self.startup_model)
        elif self.startup_model is not None:
            self.controller.set_workspace(self.startup_model)
        elif self._load_demo:
            from explorer.demo import first_demo

            self.controller.run_job(first_demo, on_done=self._open_demo, label="opening the demo")

    def _probe_startup(self, workspace) -> None:
        if workspace is None:
            return
        self.bus.workspace_changed.disconnect(self._probe_startup)
        self.bus.state.set_probe_input(*self.startup_probe)

    def _open_demo(self, demo) -> None:
        """A demo checkpoint folder, or (none installed) a fresh tiny model on a built-in task."""
        if self._closing:
            return
        if isinstance(demo, Path):
            self.controller.open_checkpoint(demo)
        else:
            self.controller.set_workspace(demo)
            self.statusBar().showMessage(
                "No demo checkpoint installed: built a fresh tiny model", 10_000
            )

    # -- files -----------------------------------------------------------------------------------

    def open_path(self, path: str | Path) -> None:
        """A checkpoint or Hugging Face folder (or cached model id) opens the model, a run folder
        its timeline too; a text or corpus file opens the data dialog (explorer/ui/open_paths.py)."""
        from explorer.ui.open_paths import classify

        kind, path = classify(path)
        if kind == "error":
            self.show_error(path)
            return
        if kind == "run":
            self.add_recent(path)
            self.runs.open_run(path)
            return
        if kind == "model":
            self.add_recent(path)
            self.controller.open_checkpoint(path)
            return
        from explorer.ui.dialogs.data import DataDialog

        try:
            dialog = DataDialog(self, files=[str(path)], **self._text_target())
        except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, the app goes on
            self.show_error(one_line(exc))
            return
        self.add_recent(path)
        self._show_data_dialog(dialog)

    def show_panel(self, panel_id: str) -> None:
        """Show and raise a panel's dock (a lesson step, a click in the architecture diagram)."""
        dock = self.docks.get(panel_id)
        if dock is not None:
            dock.show()
            dock.raise_()

    def open_lesson(self, path: str | Path) -> None:
        """A lesson file (explorer/lessons): its model, its panels arranged, its steps in a dock;
        a folder of lessons (a course): every lesson listed in the dock, the first one opened."""
        if self.lesson_dock is None:
            from explorer.ui.lesson_dock import LessonDock

            self.lesson_dock = LessonDock(self)
        if Path(path).is_dir():
            self.lesson_dock.open_course(path)
        else:
            self.lesson_dock.open_lesson(path)

    def open_course_dialog(self) -> None:
        folder = self._ask_folder("Open a course (a folder of lessons)")
        if folder:
            self.open_lesson(folder)

    def open_lesson_dialog(self) -> None:
        from explorer.lessons.format import builtin_lessons

        start = str(builtin_lessons()[0].parent)
        path, _ = QFileDialog.getOpenFileName(self, "Open lesson", start, "Lessons (*.md)")
        if path:
            self.open_lesson(path)

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a text or corpus", self._last_folder(),
            "Text and corpora (*.txt *.tsv *.gz *.src *.tgt);;All files (*)",
        )
        if path:
            self.open_path(path)

    def open_checkpoint_dialog(self) -> None:
        folder = self._ask_folder("Open a checkpoint folder")
        if folder:
            self.open_path(folder)

    def open_model_code_dialog(self) -> None:
        """File ▸ Open model code…: a Python file the user names, imported in a worker."""
        from explorer.ui.dialogs.model_code import ModelCodeDialog

        dialog = ModelCodeDialog(self, self._last_folder())
        dialog.accepted.connect(lambda: self.controller.check_model_code(*dialog.spec()))
        dialog.open()

    def show_model_report(self, workspace, report) -> None:
        """What `explorer check` says about the model just opened; Open switches to it."""
        from explorer.ui.dialogs.model_code import ModelReportDialog

        dialog = ModelReportDialog(report.lines(), report.exit_code, self)
        dialog.accepted.connect(lambda: self.controller.set_workspace(workspace))
        self.last_dialog = dialog
        dialog.open()

    def train(self) -> None:
        """Train (Ctrl+T): until the Training dock's "train until step", or go on when paused."""
        workspace, controller = self.controller.workspace, self.controller
        if workspace is None or controller.is_training():
            controller.train()
        else:
            controller.train(steps=self.controls.steps_to_train(workspace.step))

    def resume_dialog(self) -> None:
        folder = self._ask_folder("Resume training from a checkpoint")
        if folder:
            self.add_recent(folder)
            self.controller.resume_from(folder, steps=self.controls.steps_to_train)

    def save_checkpoint_dialog(self) -> None:
        folder = self._ask_folder("Save checkpoint into folder")
        if folder:
            self.save_checkpoint(folder)

    def save_checkpoint(self, folder: str | Path) -> Path | None:
        try:
            saved = self.controller.save_checkpoint(folder)
        except Exception as exc:  # noqa: BLE001
            self.show_error(one_line(exc))
            return None
        self.add_recent(saved)
        self.statusBar().showMessage(f"Saved {saved}", 5000)
        return saved

    def export_panels(self, panel_ids: list[str], folder: str | None = None) -> list[Path]:
        if folder is None:
            folder = self._ask_folder("Export into folder")
            if not folder:
                return []
        from explorer.durable import replaced_note

        before = {p.name for p in Path(folder).iterdir()} if Path(folder).is_dir() else set()
        written: list[Path] = []
        for panel_id in panel_ids:
            try:
                written += self.panels[panel_id].export(folder)
            except Exception as exc:  # noqa: BLE001 - one panel failing must not stop the others
                self.show_error(f"export of {panel_id} failed: {one_line(exc)}")
        replaced = replaced_note(written, before)  # an earlier export's files: not silently
        self.statusBar().showMessage(f"Exported {len(written)} files to {folder}"
                                     + (f"; {replaced}" if replaced else ""), 5000)
        return written

    def recent_files(self) -> list[str]:
        value = self.settings.value("recent_files", [])
        if isinstance(value, str):  # QSettings gives a single string for a one-element list
            value = [value]
        return list(value or [])

    def add_recent(self, path: str | Path) -> None:
        from explorer.ui.open_paths import recent_entry

        path = recent_entry(path)
        recent = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("recent_files", recent[:MAX_RECENT])
        if Path(path).exists():
            self.settings.setValue("last_folder", str(Path(path).parent))

    def fill_recent_menu(self) -> None:
        fill_recent(self.recent_menu, self.recent_files(), self.open_path)

    def _ask_folder(self, title: str) -> str:
        return QFileDialog.getExistingDirectory(self, title, self._last_folder())

    def _last_folder(self) -> str:
        return str(self.settings.value("last_folder", str(Path.home())))

    # -- dialogs ---------------------------------------------------------------------------------

    def show_summary(self) -> None:
        from explorer.ui.dialogs.about import model_summary

        QMessageBox.information(self, "Model summary", model_summary(self.controller.workspace))

    def show_about(self) -> None:
        from explorer.ui.dialogs.about import show_about

        show_about(self)

    def show_shortcuts(self) -> None:
        from explorer.ui.dialogs.about import ShortcutsDialog

        self.last_dialog = ShortcutsDialog(self)
        self.last_dialog.open()

    def _forget_error_box(self, box: QMessageBox) -> None:
        if box in self.error_boxes:
            self.error_boxes.remove(box)

    def _show_busy(self, label: str) -> None:
        self.statusBar().showMessage(f"{label}…" if label else "Ready", 3000)

    def show_error(self, message: str) -> None:
        """A window-modal message box that does not block the caller (nor a test)."""
        box = QMessageBox(
            QMessageBox.Icon.Critical, APPLICATION, message, QMessageBox.StandardButton.Ok, self
        )
        box.setObjectName("error_box")
        box.finished.connect(lambda *_: self._forget_error_box(box))
        self.error_boxes.append(box)
        box.open()
        self.statusBar().showMessage(message, 10_000)
        self.error_shown.emit(message)

    # -- status ----------------------------------------------------------------------------------

    def _on_training_state(self, state: str) -> None:
        running = state in ("running", "paused")
        self.actions.stop.setEnabled(running)
        self.actions.pause.blockSignals(True)
        self.actions.pause.setChecked(state == "paused")
        self.actions.pause.blockSignals(False)
        self.statusBar().showMessage(f"Training {state}", 3000)

    def _on_workspace(self, workspace) -> None:
        if workspace is None:
            return
        name = workspace.task or workspace.family
        self.setWindowTitle(f"{APPLICATION} — {workspace.family} on {name}")

    # -- layout, settings, drag-and-drop, closing ------------------------------------------------

    def reset_layout(self) -> None:
        for dock in (*self.docks.values(), self.controls_dock):
            dock.setFloating(False)
            dock.show()
        self.restoreState(self.default_state)
        dock_layout.tidy_tab_bars(self)
        self.apply_default_sizes()

    def layout_key(self) -> str:
        """Settings group of this screen's layout: a layout arranged on a 1280 x 800 laptop is
        no use on a 1920 x 1080 monitor (nor the other way round), so each screen size keeps its own."""
        screen = self.screen()
        if screen is None:
            return "layout/no-screen"
        size = screen.availableGeometry().size()
        return f"layout/{size.width()}x{size.height()}"

    def _restore_settings(self) -> None:
        key = self.layout_key()
        geometry = self.settings.value(f"{key}/geometry")
        state = self.settings.value(f"{key}/window_state")
        # a window that filled its screen fills it again: restoreGeometry without a window manager
        # took a guessed frame off it (1278 x 774 at (1, 25) on a 1280 x 800 Xvfb screen)
        filled = str(self.settings.value(f"{key}/fills_screen", "false")).lower() == "true"
        if isinstance(geometry, QByteArray) and not filled:
            self.restoreGeometry(geometry)
        if isinstance(state, QByteArray):
            # a layout saved for an older arrangement of the docks is not restored: the
            # default one replaces it
            self._layout_restored = self.restoreState(state, LAYOUT_VERSION)
            dock_layout.tidy_tab_bars(self)

    def save_settings(self) -> None:
        key = self.layout_key()
        self.settings.setValue(f"{key}/geometry", self.saveGeometry())
        self.settings.setValue(f"{key}/fills_screen", self._fills_screen())
        self.settings.setValue(f"{key}/window_state", self.saveState(LAYOUT_VERSION))
        self.settings.sync()

    def _fills_screen(self) -> bool:
        screen = self.screen()
        if screen is None:
            return False
        frame, available = self.frameGeometry(), screen.availableGeometry()
        return frame.width() >= available.width() and frame.height() >= available.height()

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls() and all(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        for url in event.mimeData().urls()[:1]:  # one workspace at a time
            self.open_path(url.toLocalFile())
        event.acceptProposedAction()

    def closeEvent(self, event) -> None:
        self._closing = True
        self.save_settings()
        self.runs.shutdown()
        self.controller.shutdown()
        for panel in self.panels.values():
            panel.shutdown()  # panels stop and join their own job runners
        shutdown_runners(self)  # any runner left, e.g. one a dialog started
        QCoreApplication.processEvents()
        super().closeEvent(event)

