"""explorer.runtime: the allocator setting every `explorer` command applies at start-up."""

import platform
import subprocess
import sys
import time

import pytest

from explorer import cli, runtime
from explorer.runtime import tune_allocator


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="mallopt is glibc's")
def test_glibc_takes_the_setting():
    assert tune_allocator() is True


def test_off_linux_nothing_is_touched(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert tune_allocator() is False


def test_every_command_applies_it_before_it_runs(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(cli, "tune_allocator", lambda: calls.append("tuned"))
    hypotheses, references = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hypotheses.write_text("the cat sat on the mat\n")
    references.write_text("the cat sat on the mat\n")
    assert cli.main(["bleu", str(hypotheses), str(references)]) == 0
    assert calls == ["tuned"]
    assert "BLEU = 100.00" in capsys.readouterr().out


@pytest.fixture
def machine(monkeypatch):
    """An 8-core machine whose load average the test sets; this process adds nothing to it."""
    state = {"load": 0.0}
    monkeypatch.setattr(runtime, "torch_default_threads", lambda: 8)
    monkeypatch.setattr(runtime, "usable_cores", lambda: 8)
    monkeypatch.setattr(runtime, "_own_load", lambda: state.get("own", 0.0))
    monkeypatch.setattr(runtime.os, "getloadavg", lambda: (state["load"], 0.0, 0.0))
    monkeypatch.setattr(runtime, "_busy_cores_now", lambda: state.get("now", state["load"]))
    return state


def test_free_cores_get_torchs_default(machine):
    machine["load"] = 0.3
    assert runtime.choose_threads() == runtime.ThreadChoice(8)


def test_taken_cores_get_fewer_threads_and_one_line(machine):
    machine["load"] = 5.8  # about six cores busy: two are left
    choice = runtime.choose_threads()
    assert choice.threads == 2
    assert choice.note.startswith("load average 5.8 on 8 cores: using 2 CPU threads instead of 8")
    machine["load"] = 30.0  # never fewer than one
    assert runtime.choose_threads().threads == 1


def test_threads_asked_for_win_over_the_load(machine):
    machine["load"] = 30.0
    assert runtime.choose_threads(6) == runtime.ThreadChoice(6)


def test_the_app_keeps_a_core_for_its_window(machine, monkeypatch):
    """The app's default leaves one core to the GUI thread: on 2 cores, 1 torch thread (2 ran at
    0.36-0.63 of headless, 1 at 0.80-0.85: the window's paints stalled torch's two threads)."""
    machine["load"] = 0.3
    assert runtime.choose_threads(keep_cores=1) == runtime.ThreadChoice(7)
    machine["load"] = 5.8  # six cores taken by others, one kept: one left
    assert runtime.choose_threads(keep_cores=1).threads == 1
    assert runtime.choose_threads(3, keep_cores=1) == runtime.ThreadChoice(3)  # --threads wins
    monkeypatch.setattr(runtime, "usable_cores", lambda: 1)
    machine["load"] = 0.0
    assert runtime.choose_threads(keep_cores=1) == runtime.ThreadChoice(1)  # never fewer than one


def test_this_process_own_load_is_not_other_work(machine):
    machine["load"], machine["own"] = 7.9, 7.5  # our last training's threads, still in the average
    assert runtime.choose_threads() == runtime.ThreadChoice(8)


def test_work_that_just_ended_is_not_taken_for_busy_cores(machine):
    machine["load"], machine["now"] = 5.8, 0.1  # the minute's average remembers a run just ended
    assert runtime.choose_threads() == runtime.ThreadChoice(8)
    machine["now"] = 7.0  # busy now too: the lower of the two says what is taken
    assert runtime.choose_threads().threads == 2


def test_busy_cores_now_is_the_busy_share_of_the_cpus_less_this_process(monkeypatch):
    samples = iter([(100, 1000, 4), (250, 1200, 4)])  # (busy, total jiffies, CPUs): 150 of 200
    monkeypatch.setattr(runtime, "_cpu_jiffies", lambda: next(samples))
    clock = iter([10.0, 10.05, 10.05])  # this process used 0.05 CPU s in the 0.25 s window
    monkeypatch.setattr(runtime.time, "process_time", lambda: next(clock))
    monkeypatch.setattr(runtime.time, "sleep", lambda _s: None)
    assert runtime._busy_cores_now(0.25) == pytest.approx(150 / 200 * 4 - 0.05 / 0.25)
    monkeypatch.setattr(runtime, "_cpu_jiffies", lambda: None)  # no /proc/stat (macOS, Windows)
    assert runtime._busy_cores_now() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/stat is Linux's")
def test_busy_cores_now_sees_a_real_busy_loop():
    hog = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        time.sleep(0.3)  # let it start
        busy_with_hog = runtime._busy_cores_now(0.5)
    finally:
        hog.kill()
        hog.wait()
    assert busy_with_hog >= 0.6  # one core's loop, give or take the machine's other work


def test_own_load_is_cpu_seconds_over_at_least_a_minute(monkeypatch):
    clock = {"wall": 100.0, "cpu": 10.0}
    monkeypatch.setattr(runtime.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(runtime.time, "process_time", lambda: clock["cpu"])
    runtime._own_load()  # the sample to measure from
    clock["wall"], clock["cpu"] = 110.0, 16.0  # 6 CPU s in 10 s: small against a minute's average
    assert runtime._own_load() == pytest.approx(6.0 / 60)
    clock["wall"], clock["cpu"] = 230.0, 256.0  # two threads busy for two minutes
    assert runtime._own_load() == pytest.approx(2.0)


def test_train_says_once_why_it_took_fewer_threads(machine, tmp_path, capsys):
    machine["load"] = 7.5
    assert cli.main(["train", "--task", "copy", "--steps", "3", "--device", "cpu",
                     "--batch-size", "8", "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert err.count("using 1 CPU thread instead of 8 (--threads N to choose)") == 1
    machine["load"] = 0.0
    assert cli.main(["train", "--task", "copy", "--steps", "3", "--device", "cpu", "--threads",
                     "1", "--batch-size", "8", "--out", str(tmp_path / "run2")]) == 0
    assert "CPU thread" not in capsys.readouterr().err
