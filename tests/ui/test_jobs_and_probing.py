"""The one job runner (newest wins, one-line errors, a shutdown that joins its own thread) and the
probe flow: the Prober probes each input once and panels only listen and ask."""

import threading

import numpy as np
import pytest
import torch
from PySide6.QtCore import QObject, QThreadPool

from explorer.analysis import probe as probe_module
from explorer.analysis.embeddings import is_tied
from explorer.errors import UserError
from explorer.events import ProbeSnapshot
from explorer.ui.bus import AppBus
from explorer.ui.jobs import JobRunner, one_line
from explorer.ui.probing import Prober

from test_attention_panel import char_workspace


@pytest.fixture
def runner(qapp):
    owner = QObject()
    runner = JobRunner("test", owner)
    yield runner
    runner.shutdown()
    assert not runner.thread.isRunning()


def test_the_newest_job_wins_and_superseded_ones_never_start(runner, qtbot):
    started, gate, ran, done = threading.Event(), threading.Event(), [], []
    runner.done.connect(lambda job, result: done.append((job, result)))

    def job(name):
        if name == "first":
            started.set()
            gate.wait(300)  # until the test lets it go: generous on a busy machine
        ran.append(name)
        return name

    first = runner.submit(job, "first")
    assert started.wait(300)
    runner.submit(job, "second")  # waits behind "first", then is superseded
    third = runner.submit(job, "third")
    assert runner.busy and first < third
    assert QThreadPool.globalInstance().activeThreadCount() == 0  # its own thread, not the pool
    gate.set()
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    assert ran == ["first", "third"] and done == [(third, "third")]


def test_errors_arrive_as_one_line(runner, qtbot):
    def fail(exc):
        raise exc

    with qtbot.waitSignal(runner.failed) as blocker:
        runner.submit(fail, ValueError("bad value\nsecond line"))
    assert blocker.args[1] == "ValueError: bad value"
    with qtbot.waitSignal(runner.failed) as blocker:
        runner.submit(fail, UserError("say it plainly"))
    assert blocker.args[1] == "say it plainly" == one_line(UserError("say it plainly"))
    assert not runner.busy


def test_cancel_drops_the_answer_and_shutdown_refuses_new_jobs(runner, qtbot):
    gate, done = threading.Event(), []
    runner.done.connect(lambda job, result: done.append(result))
    runner.submit(gate.wait, 10)
    runner.cancel()
    assert not runner.busy
    gate.set()
    runner.wait_idle()  # the cancelled job has returned
    qtbot.wait(50)  # let a (wrongly) queued answer arrive
    assert done == []
    runner.shutdown()
    assert not runner.thread.isRunning() and runner.submit(len, "x") == -1


def test_a_staged_job_delivers_each_stage_and_a_newer_job_stops_it(runner, qtbot):
    started, gate, ran, delivered = threading.Event(), threading.Event(), [], []
    runner.partial.connect(lambda job, value: delivered.append(("partial", value, runner.busy)))
    runner.done.connect(lambda job, result: delivered.append(("done", result, runner.busy)))

    def staged(name):
        ran.append(f"{name} 1")
        if name == "first":
            started.set()
            gate.wait(300)  # until the test lets it go: generous on a busy machine
        yield f"{name} maps"
        ran.append(f"{name} 2")
        return f"{name} all"

    runner.submit(staged, "first")
    assert started.wait(300)
    runner.submit(staged, "second")
    gate.set()
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    assert ran == ["first 1", "second 1", "second 2"]  # the first stopped between its stages
    # the stage as soon as it is ready, busy until the result
    assert delivered == [("partial", "second maps", True), ("done", "second all", False)]


def make_bus(qtbot):
    """A bus with a Prober and the two probing panels, counting the probes that run."""
    from explorer.ui.panels.attention import AttentionPanel
    from explorer.ui.panels.gradients import GradientFlowPanel

    bus = AppBus()
    panels = [AttentionPanel(bus), GradientFlowPanel(bus)]
    for panel in panels:
        qtbot.addWidget(panel)
    prober = Prober(bus, panels[0])
    return bus, prober, panels


def test_each_input_is_probed_once_and_every_panel_gets_the_snapshot(qtbot, monkeypatch):
    calls = []
    real = probe_module.probe_stages  # what the Prober runs

    def counting_probe(*args, **kwargs):
        calls.append(args[1:3])
        return real(*args, **kwargs)

    monkeypatch.setattr(probe_module, "probe_stages", counting_probe)
    bus, prober, (attention, gradients) = make_bus(qtbot)
    workspace = char_workspace("rnn-lm", cell="gru")
    with qtbot.waitSignal(bus.probe, timeout=10_000) as blocker:
        bus.set_workspace(workspace)
    source = workspace.data.val[0][0]
    assert calls == [(source, workspace.data.val[0][1])]
    assert attention.snapshot is blocker.args[0] and gradients.snapshot is blocker.args[0]
    qtbot.waitUntil(lambda: not gradients.busy(), timeout=10_000)

    # a panel asks on the bus; the Prober answers with the input and one probe of it
    with qtbot.waitSignal(bus.probe, timeout=10_000) as blocker:
        attention.source_edit.setText("abcab")
        attention.source_edit.editingFinished.emit()
    assert calls[-1][0] == "abcab" and len(calls) == 2
    assert prober.input.text[0] == "abcab" and gradients.probe_text[0] == "abcab"
    np.testing.assert_allclose(gradients.snapshot.grad_time["lm.l0"],
                               probe_module.probe(workspace, "abcab").grad_time["lm.l0"], rtol=1e-6)


def test_while_training_the_trainer_probes_the_new_input(qtbot, monkeypatch):
    calls = []
    bus, prober, (attention, _) = make_bus(qtbot)
    workspace = char_workspace("gpt")
    with qtbot.waitSignal(bus.probe, timeout=10_000):
        bus.set_workspace(workspace)
    monkeypatch.setattr(probe_module, "probe",
                        lambda *a, **k: calls.append(a) or ProbeSnapshot(step=a[3], source=a[1], target=a[2]))
    bus.state.set_training("running")
    with qtbot.waitSignal(bus.probe_input_changed):
        bus.probe_requested.emit("abcabc", "")
    assert calls == [] and not bus.probing  # no probe beside the trainer
    probe_fn = probe_module.make_probe_fn(workspace, prober.input)  # what Controller.train uses
    probe_fn(workspace.model, 7)
    assert calls[-1][1:3] == ("abcabc", "")
    # and the live data of the panels in sight: a copy of the embeddings for the embeddings panel
    # (a tied output is the input's copy)
    from explorer.ui.panels.embeddings import EmbeddingsPanel

    qtbot.addWidget(EmbeddingsPanel(bus))
    monkeypatch.undo()  # the real probe
    matrices = probe_fn(workspace.model, 8).live["embeddings"]
    weight = workspace.model.embed.token.weight
    np.testing.assert_array_equal(matrices["input"], weight.detach().numpy())
    np.testing.assert_array_equal(matrices["output"], workspace.model.lm_head.weight.detach().numpy())
    assert (matrices["output"] is matrices["input"]) == is_tied(workspace.model)
    with torch.no_grad():
        weight.add_(1.0)  # the next training step
    assert not np.array_equal(matrices["input"], weight.detach().numpy())  # a copy


def test_an_input_the_model_cannot_read_is_a_one_line_message(qtbot):
    bus, _, (attention, gradients) = make_bus(qtbot)
    bus.set_workspace(char_workspace("gpt"))
    qtbot.waitUntil(lambda: not bus.probing, timeout=10_000)
    with qtbot.waitSignal(bus.probe_failed, timeout=10_000) as blocker:
        bus.probe_requested.emit("a", "")  # one token: nothing for a language model to predict
    message = blocker.args[0]
    assert message.startswith("probe failed: ValueError:") and "\n" not in message
    assert attention.status.text() == message == gradients.status.text()
