"""The QApplication: names for QSettings, high-DPI policy, the light/dark theme, and `run_app`."""

from __future__ import annotations

import os
import sys

ORGANISATION = "SequenceModelExplorer"
APPLICATION = "Sequence Model Explorer"


NO_DISPLAY = ("no display: set DISPLAY (or WAYLAND_DISPLAY) to open the window; "
              "`explorer gui --smoke` tests the app offscreen")


def _answers(path: str) -> bool:
    """Whether a Unix socket at `path` ("\0..." for the abstract namespace) accepts a connection."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def _x11_reachable(display: str) -> bool:
    """A local DISPLAY (":0", ":1.0") names a server's socket, which is tried: a stale DISPLAY (an
    ssh session's, an Xvfb that has exited) made Qt abort with a page of plugin advice. A remote
    one ("host:10.0", ssh forwarding) is trusted."""
    host, _, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if host not in ("", "unix") or not number.isdigit():
        return True
    path = f"/tmp/.X11-unix/X{number}"
    return _answers(path) or _answers("\0" + path)


def _wayland_reachable(name: str) -> bool:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    path = name if name.startswith("/") else os.path.join(runtime, name)
    return _answers(path)


def has_display() -> bool:
    """Whether Qt can show a window: a platform chosen explicitly (QT_QPA_PLATFORM, e.g. offscreen
    as the tests set it), an X11 or Wayland display on Linux that answers, or another desktop OS."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if not sys.platform.startswith("linux"):
        return True
    x11, wayland = os.environ.get("DISPLAY"), os.environ.get("WAYLAND_DISPLAY")
    return bool(x11 and _x11_reachable(x11) or wayland and _wayland_reachable(wayland))


def ensure_display(smoke: bool = False) -> None:
    """The self-test renders offscreen when there is no display; the app itself never does so
    unasked (a window nobody can see would wait for ever), it refuses in one line instead."""
    if has_display():
        return
    if not smoke:
        from explorer.errors import UserError

        named = [f"{key}={os.environ[key]}" for key in ("DISPLAY", "WAYLAND_DISPLAY")
                 if os.environ.get(key)]
        if named:  # set, but nothing answers there
            raise UserError(f"no display: {' and '.join(named)} does not answer (no display "
                            "server there); `explorer gui --smoke` tests the app offscreen")
        raise UserError(NO_DISPLAY)
    os.environ["QT_QPA_PLATFORM"] = "offscreen"


def create_application(argv: list[str] | None = None):
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from explorer.ui.gui_thread_gc import collect_on_gui_thread

    app = QApplication.instance()
    if app is None:
        # fractional scale factors (125%, 150%) as they are: crisp text instead of rounding to 1x/2x
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
            Qt.HighDpiScaleFactorRoundingPolicy.PassThrough
        )
        app = QApplication(list(argv or [sys.argv[0]]))
    QCoreApplication.setOrganizationName(ORGANISATION)
    QCoreApplication.setApplicationName(APPLICATION)
    apply_theme(app)
    collect_on_gui_thread(app)
    app.styleHints().colorSchemeChanged.connect(lambda *_: apply_theme(app))
    return app


def apply_theme(app) -> None:
    """pyqtgraph follows the system palette: plots new and old get its background and text."""
    import pyqtgraph as pg
    from PySide6.QtGui import QPalette

    palette = app.palette()
    background = palette.color(QPalette.ColorRole.Base)
    foreground = palette.color(QPalette.ColorRole.Text)
    pg.setConfigOptions(background=background, foreground=foreground, antialias=True)
    for widget in app.allWidgets():
        if isinstance(widget, pg.GraphicsView):
            widget.setBackground(background)


# The offscreen platform (no display) cannot apply size hints and warns on every dialog resize;
# it says nothing about the app, so it is not counted.
PLATFORM_NOISE = ("This plugin does not support propagateSizeHints()",)


class QtMessageLog:
    """Records Qt's warnings (smoke runs fail on any) and passes every message on to stderr."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self._previous = None

    def install(self) -> None:
        from PySide6.QtCore import qInstallMessageHandler

        self._previous = qInstallMessageHandler(self._handle)

    def uninstall(self) -> None:
        from PySide6.QtCore import qInstallMessageHandler

        qInstallMessageHandler(self._previous)

    def _handle(self, mode, context, message: str) -> None:
        from PySide6.QtCore import QtMsgType

        if message in PLATFORM_NOISE:
            return
        if mode in (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg):
            self.warnings.append(message)
        if mode != QtMsgType.QtDebugMsg:
            print(message, file=sys.stderr)


def run_app(
    argv: list[str] | None = None, smoke: bool = False, checkpoint: str | None = None,
    model: tuple | None = None,
    lesson: str | None = None,
    probe: tuple[str, str] | None = None,
) -> int:
    """Show the main window (opening `checkpoint`, the user's `model` (build, weights,
    tokenizer), or the built-in demo, probed on `probe` (source, target) when given) and run the
    event loop."""
    ensure_display(smoke)
    if smoke:
        from explorer.ui.smoke import run_smoke

        return run_smoke(checkpoint=checkpoint)
    app = create_application(argv)
    log = QtMessageLog()
    log.install()
    from explorer.ui.main_window import MainWindow

    window = MainWindow(checkpoint=checkpoint, load_demo=checkpoint is None and model is None,
                        lesson=lesson)
    if model is not None:
        window.startup_model = model
    window.startup_probe = probe
    window.show()
    try:
        return app.exec()
    finally:
        log.uninstall()
