"""PySide6 6.12.0 on Python 3.11 aborted the process after ~570 Signal.emit() calls
(`Fatal Python error: bool_dealloc`). The app emits far more than that in one training run, so
emit 20,000 signals across threads in a child process: a wheel with that bug fails here, not in a
user's session."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, sys
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

    N = 20_000

    class Emitter(QObject):
        value = Signal(object)
        flag = Signal(bool)
        done = Signal()

        @Slot()
        def work(self):
            for i in range(N):
                self.value.emit({"step": i})
                self.flag.emit(i % 2 == 0)
            self.done.emit()

    class Receiver(QObject):
        def __init__(self):
            super().__init__()
            self.values = 0
            self.flags = 0

        @Slot(object)
        def on_value(self, v):
            self.values += 1

        @Slot(bool)
        def on_flag(self, f):
            self.flags += 1

    app = QCoreApplication(sys.argv)
    thread = QThread()
    emitter = Emitter()
    emitter.moveToThread(thread)
    receiver = Receiver()
    emitter.value.connect(receiver.on_value)
    emitter.flag.connect(receiver.on_flag)
    emitter.done.connect(app.quit)
    thread.started.connect(emitter.work)
    thread.start()
    app.exec()
    app.processEvents()
    thread.quit()
    thread.wait()
    print(receiver.values, receiver.flags)
    """
)


def test_twenty_thousand_signals_across_threads_do_not_abort():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["20000", "20000"]
