"""The soak benchmark's harness (benchmarks/bench_soak.py) for a few hundred steps: the real window,
every panel visible, decodes, probes, scrubs and a trainer restart while it trains. No Qt warning,
and the QObjects and widgets do not grow once warmed up (counts, not timings)."""

from __future__ import annotations

import gc
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_soak.py"


@pytest.fixture(scope="module")
def bench_soak():
    spec = importlib.util.spec_from_file_location("bench_soak", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_short_soak_has_no_warnings_and_flat_qobject_counts(qapp, isolated_settings, bench_soak):
    # 240 steps of batch 8 on 200 pairs, a sample every 40 steps and an action every 0.3 s: each
    # kind of action (probe, beam, step-through, compare, scrub, settings) happens at least once
    workspace = bench_soak.make_workspace(n_train=200, batch_size=8, eval_every=100)
    report = bench_soak.run_soak(steps=240, every=40, action_every_s=0.3, warmup_steps=80,
                                 workspace=workspace, census=False)
    assert report["qt_warnings"] == [] and report["errors"] == []
    assert workspace.step == 240  # the trainer restarts (batch size) never lose or add a step
    assert report["steps"] == 240  # and the panels got each step's row once
    assert report["hidden_panels"] == [] and report["empty_panels"] == []
    assert set(report["actions"]) >= {"probe", "beam", "step", "compare", "scrub"}, report["actions"]
    warm = [s for s in report["samples"] if s["step"] >= 80]
    assert len(warm) >= 4
    for key in ("window_qobjects", "app_qobjects", "widgets"):
        # an object caught mid-flight (a dock's animation) may show in one sample; whatever
        # accumulates shows in every later one
        counts = [s[key] for s in warm]
        assert min(counts[-3:]) <= counts[0], (key, counts, [s["grew"] for s in warm])
    assert report["pass"]["qobjects and widgets flat"]


def test_finished_and_restarted_runs_leave_no_thread_or_trainer(make_main_window, qtbot,
                                                               tiny_workspace):
    from explorer.training.engine import Trainer
    from explorer.ui.training_worker import WorkerThread

    window = make_main_window()
    controller = window.controller
    controller.set_workspace(tiny_workspace)
    qtbot.waitUntil(lambda: not controller.jobs.busy, timeout=60_000)
    for batch_size in (4, 6):
        with qtbot.waitSignal(controller.training_finished, timeout=60_000):
            controller.train(steps=3)
        controller.train(steps=1000)
        controller.update_train_config(batch_size=batch_size)  # stops and restarts the trainer
        controller.stop_training()
    qtbot.waitUntil(lambda: not controller.prober.runner.busy, timeout=60_000)
    from PySide6.QtCore import QCoreApplication, QEvent

    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
    assert controller.findChildren(WorkerThread) == []
    assert not [o for o in gc.get_objects() if issubclass(type(o), Trainer)]


def test_a_restart_after_the_last_step_trains_no_more(make_main_window, qtbot, tiny_workspace):
    # a batch-size change can land after the trainer's last step but before its thread ends: the
    # restart then has no step left and must not start one (the soak once ended on step 241)
    window = make_main_window()
    controller = window.controller
    controller.set_workspace(tiny_workspace)
    qtbot.waitUntil(lambda: not controller.jobs.busy, timeout=60_000)
    with qtbot.waitSignal(controller.training_finished, timeout=60_000):
        controller.train(steps=3)
    controller._train_on(paused=False)  # what a restart does once the run has stopped
    assert not controller.is_training() and tiny_workspace.step == 3
