"""Decoding off the GUI thread: a QObject living in its own QThread runs one job at a time.

A job is a plain function returning plain data (`explorer.decoding.types` dataclasses of numpy
arrays, floats and strings); tensors stay inside the worker thread. When the user drags a spin box,
jobs pile up faster than they run, so a job that has been superseded by a newer one is skipped
before it starts, and only the newest job's result is delivered.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot


class _Runner(QObject):
    """Lives in the worker thread; `run` is invoked through queued signals."""

    done = Signal(int, object)
    failed = Signal(int, str)

    def __init__(self, latest: Callable[[], int]) -> None:
        super().__init__()
        self._latest = latest

    @Slot(int, object)
    def run(self, job_id: int, job: object) -> None:
        if job_id < self._latest():
            return  # superseded while waiting in the queue
        fn, args, kwargs = job
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:  # reported to the panel, which shows it: a bad source, a tiny vocab
            message = str(exc) or type(exc).__name__
            self.failed.emit(job_id, f"{message}\n{traceback.format_exc(limit=3)}")
            return
        self.done.emit(job_id, result)


class DecodeWorker(QObject):
    """`submit(fn, *args)` runs `fn` in the worker thread; `finished(job_id, result)` or
    `failed(job_id, message)` arrive on the GUI thread for the newest job only."""

    finished = Signal(int, object)
    failed = Signal(int, str)
    busy_changed = Signal(bool)
    _request = Signal(int, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._latest_id = 0
        self._running = False
        self._thread = QThread()
        self._thread.setObjectName("DecodeWorker")
        self._runner = _Runner(self._latest)
        self._runner.moveToThread(self._thread)
        self._request.connect(self._runner.run)
        self._runner.done.connect(self._on_done)
        self._runner.failed.connect(self._on_failed)
        self._thread.start()
        # Whoever owns the panel, the thread is stopped and waited before anything is destroyed.
        thread = self._thread
        if parent is not None:
            parent.destroyed.connect(lambda *_: _stop(thread))
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.stop)

    def _latest(self) -> int:
        with self._lock:
            return self._latest_id

    @property
    def busy(self) -> bool:
        return self._running

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
        if not self._thread.isRunning():
            return -1
        with self._lock:
            self._latest_id += 1
            job_id = self._latest_id
        if not self._running:
            self._running = True
            self.busy_changed.emit(True)
        self._request.emit(job_id, (fn, args, kwargs))
        return job_id

    @Slot(int, object)
    def _on_done(self, job_id: int, result: object) -> None:
        if job_id == self._latest():
            self._set_idle()
            self.finished.emit(job_id, result)

    @Slot(int, str)
    def _on_failed(self, job_id: int, message: str) -> None:
        if job_id == self._latest():
            self._set_idle()
            self.failed.emit(job_id, message)

    def _set_idle(self) -> None:
        if self._running:
            self._running = False
            self.busy_changed.emit(False)

    def stop(self) -> None:
        """Finish the running job, drop queued ones, and end the thread (idempotent)."""
        with self._lock:
            self._latest_id += 1  # anything still queued is now superseded
        _stop(self._thread)


def _stop(thread: QThread) -> None:
    try:
        if thread.isRunning():
            thread.quit()
            thread.wait()
    except RuntimeError:  # the C++ object is already gone
        pass


# Jobs: plain functions of a workspace and plain arguments, returning plain data. Heavy imports
# stay inside, so importing a panel does not import torch.


def run_beam_search(workspace, text: str, beam_size: int, alpha: float, max_len: int, nbest: int):
    """Beam search (with the greedy path for comparison) on one source: a BeamResult."""
    from explorer.decoding import beam_search, encode_context
    from explorer.decoding.scoring import context_labels

    context = encode_context(workspace, text)
    result = beam_search(
        workspace.model, context, beam_size=beam_size, alpha=alpha, max_len=max_len,
        nbest=nbest, tokenizer=workspace.tokenizer,
    )
    result.source_tokens = context_labels(workspace, context)
    return result


@dataclass
class StrategyOutput:
    """One strategy's output on the compare panel, with its BLEU against the reference."""

    strategy: str  # "greedy", "beam" or "sample"
    hypothesis: object  # explorer.decoding.types.Hypothesis
    bleu: object | None = None  # explorer.metrics.bleu.BleuBreakdown, when a reference is given
    bleu_tokens: list[str] = field(default_factory=list)  # the hypothesis as BLEU tokenizes it
    matched: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)


def run_compare(workspace, text: str, reference: str, *, beam_size: int, alpha: float,
                max_len: int, temperature: float, top_k: int, top_p: float,
                seed: int) -> list[StrategyOutput]:
    """Greedy, beam and sampling on the same source; sentence BLEU when `reference` is given."""
    from explorer.decoding import beam_search, encode_context, greedy, sample
    from explorer.metrics.bleu import matched_ngrams, sentence_bleu, tokenize_sentence

    context = encode_context(workspace, text)
    model, tokenizer = workspace.model, workspace.tokenizer
    outputs = [
        StrategyOutput("greedy", greedy(model, context, max_len=max_len, tokenizer=tokenizer)),
        StrategyOutput("beam", beam_search(model, context, beam_size=beam_size, alpha=alpha,
                                           max_len=max_len, nbest=1, tokenizer=tokenizer,
                                           with_greedy=False).best),
        StrategyOutput("sample", sample(model, context, temperature=temperature, top_k=top_k,
                                        top_p=top_p, seed=seed, max_len=max_len,
                                        tokenizer=tokenizer).hypothesis),
    ]
    for output in outputs:
        output.bleu_tokens = tokenize_sentence(output.hypothesis.text)
        if reference.strip():
            output.bleu = sentence_bleu(output.hypothesis.text, reference)
            output.matched = matched_ngrams(output.hypothesis.text, reference)
    return outputs


def run_find_example(workspace, width: int, max_len: int, limit: int):
    """Search the workspace's validation (else training) pairs for a beam-beats-greedy input."""
    from explorer.decoding.examples import find_beam_beats_greedy
    from explorer.errors import UserError

    data = workspace.data
    candidates = (data.val or data.train)[:limit] if data is not None else []
    if not candidates:
        raise UserError("this workspace has no data to search; type a source instead")
    return find_beam_beats_greedy(workspace, candidates, width=width, max_len=max_len)
