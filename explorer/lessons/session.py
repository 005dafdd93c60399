"""A lesson running on a model: what its front matter sets up, trains and checks (no Qt).

The app and the headless runner drive the same `LessonSession`: `open()` builds or opens the
model(s), `train(n)` is a generator of training events (the app runs it in its job runner, which
checks for stop between steps), `check(directive)` measures one named condition.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from explorer.errors import UserError
from explorer.lessons.checks import CheckResult, evaluate_check, failed_check
from explorer.lessons.format import Lesson

# Front-matter `train.*` defaults for lessons: evaluations are the checks' business, not the loop's.
LESSON_TRAIN_DEFAULTS = {"eval_every": 0, "bleu_examples": 0, "probe_every_s": 1e9}


def _demo_or_path(lesson: Lesson, name: str) -> Path:
    from explorer.training import demo_checkpoints

    if name.startswith("demo:"):
        demos = demo_checkpoints()
        if name[5:] not in demos:
            raise lesson.error(lesson.lines["checkpoint"], f"no demo {name[5:]!r}; the demos are "
                                                            f"{', '.join(demos)}")
        return demos[name[5:]]
    path = Path(name).expanduser()
    return path if path.is_absolute() else lesson.path.parent / path


class LessonSession:
    def __init__(self, lesson: Lesson, overrides: dict | None = None, keep_cores: int = 0) -> None:
        self.lesson = lesson
        self.keep_cores = keep_cores  # left to the app's window by its training (Trainer)
        self.settings = {**lesson.settings, **(overrides or {})}
        self.workspace = None
        self.compare = None  # the `compare.` variant's workspace, when the lesson has one
        self.history = []  # StepMetrics of the lesson's training (the main model)
        self.decoded: list[str] = []  # tokens `@decode` produced
        self._probe: tuple[str, str] | None = None
        self.start_probe: tuple[str, str] = ("", "")
        self.live_snapshot = None  # the trainer's snapshot that live checks read while training
        self.controls: dict[str, object] = {}  # PANEL.CONTROL -> value, as `@set` or the student set it
        self._cache: dict = {}

    # -- set-up --------------------------------------------------------------------------------

    def section(self, prefix: str) -> dict:
        return {k[len(prefix):]: v for k, v in self.settings.items()
                if k.startswith(prefix) and "." not in k[len(prefix):]}

    def train_config(self, extra: dict | None = None):
        from explorer.training import TrainConfig

        options = {**LESSON_TRAIN_DEFAULTS, **self.section("train."), **(extra or {})}
        try:
            return TrainConfig(**options)
        except TypeError as exc:
            raise UserError(f"{self.lesson.path}: train.*: {exc}") from None

    def _build(self, model_overrides: dict, family: str | None = None):
        from explorer.training import DataSpec, build_workspace

        data = {key: self.settings[key] for key in ("task", "text", "tsv") if key in self.settings}
        for key in ("text", "tsv"):
            if key in data and not Path(str(data[key])).is_absolute():
                data[key] = str(self.lesson.path.parent / str(data[key]))
        spec = DataSpec(**data, **self.section("data."))
        return build_workspace(spec, family or str(self.settings["family"]), self.settings.get("preset"),
                               int(self.settings.get("seed", 0)), **model_overrides)

    def open(self) -> Iterator[object]:
        """Build (or open) the lesson's model(s) and train the front matter's `steps`."""
        from explorer.training import load_checkpoint

        if "checkpoint" in self.settings:
            self.workspace = load_checkpoint(_demo_or_path(self.lesson, str(self.settings["checkpoint"])))
        else:
            model = self.section("model.")
            self.workspace = self._build(model)
            if self.lesson.has_compare:
                family = self.settings.get("compare.family")
                base = {} if family else model  # another family: its own fields only
                self.compare = self._build({**base, **self.section("compare.model.")}, family)
        self.workspace.train_config = self.train_config()
        probe = self.lesson.probe
        if probe[0] or probe[1]:
            self.set_probe(str(self.settings.get("probe", "")), str(self.settings.get("probe_target", "")))
        self.start_probe = self.probe  # what the lesson shows first: not the student's own
        steps = int(self.settings.get("steps", 0))
        if steps:
            yield from self.train(steps)

    # -- training ------------------------------------------------------------------------------

    def train(self, steps: int) -> Iterator[object]:
        """Train the model (and its compare variant) `steps` more steps; yields the events."""
        from explorer.events import StepMetrics
        from explorer.training import Trainer

        for workspace, extra in ((self.workspace, {}), (self.compare, self.section("compare.train."))):
            if workspace is None:
                continue
            config = self.train_config({**extra, "steps": workspace.step + int(steps)})
            for event in Trainer(workspace, config, keep_cores=self.keep_cores).run():
                if workspace is self.workspace and isinstance(event, StepMetrics):
                    self.history.append(event)
                yield event
        self._cache.clear()

    def train_variant(self, steps: int) -> Iterator[object]:
        """Train only the `compare.` variant `steps` more steps (the app trains the main model
        in its own training thread)."""
        from explorer.training import Trainer

        config = self.train_config({**self.section("compare.train."), "steps": self.compare.step + int(steps)})
        yield from Trainer(self.compare, config, keep_cores=self.keep_cores).run()
        self._cache.clear()

    def set_control(self, name: str, value) -> bool:
        """Apply a session control (`probe`, `probe_target`, `train.clip`, `train.lr`); False
        for a panel's control, which only a window has (its value is kept for the checks that
        read it, `@PANEL.CONTROL`)."""
        from explorer.lessons.format import parse_value

        if name in ("probe", "probe_target"):
            source, target = self.probe
            self.set_probe(str(value), target) if name == "probe" else self.set_probe(source, str(value))
            return True
        if name.startswith("train."):
            self.settings[name] = value
            self.workspace.train_config = self.train_config()
            return True
        self.controls[name] = parse_value(str(value))
        return False

    def adopt(self, workspace, probe: tuple[str, str], controls: dict) -> None:
        """The student's state from the window: the model open now (which may be one they built),
        the probe they typed, the values of the controls the checks read."""
        if workspace is not None and workspace is not self.workspace:
            self.workspace = workspace
            self._cache.clear()
        if tuple(probe) != self.probe:
            self.set_probe(*probe)
        self.controls.update(controls)

    def describe(self) -> str:
        """What the checks measure: the model (family, step) and the probe input."""
        if self.workspace is None:
            return ""
        source, target = self.probe
        shown = source if len(source) <= 40 else source[:39] + "…"
        return (f"your {self.workspace.family} model at step {self.workspace.step}, probe "
                f"{shown!r}" + (f" → {target[:20]!r}" if target else ""))

    # -- what the checks read ------------------------------------------------------------------

    @property
    def probe(self) -> tuple[str, str]:
        if self._probe is None:
            from explorer.analysis.probe_input import default_probe_input

            return default_probe_input(self.workspace)
        return self._probe

    def weights_changed(self) -> None:
        """The model trained elsewhere (the app's training thread): measure it anew."""
        self._cache.clear()

    def set_probe(self, source: str, target: str = "") -> None:
        self._probe = (source, target)
        self._cache.clear()

    def workspace_named(self, name: str):
        if name == "main":
            return self.workspace
        if name == "compare" and self.compare is not None:
            return self.compare
        raise UserError(f"no model {name!r} in this lesson (main, or compare with compare.*)")

    def _cached(self, key, compute):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def probe_snapshot(self, workspace=None):
        from explorer.analysis.probe import probe

        workspace = workspace or self.workspace
        if self.live_snapshot is not None and workspace is self.workspace:
            return self.live_snapshot  # while the app trains: the trainer's, not a new pass
        source, target = self.probe
        return self._cached(("probe", id(workspace), workspace.step),
                            lambda: probe(workspace, source, target, workspace.step))

    def evaluation(self, name: str = "main"):
        from explorer.training import evaluate

        workspace = self.workspace_named(name)
        # the lesson's train.bleu_examples, else 100 (its training itself decodes none)
        examples = int(self.settings.get("train.bleu_examples") or 100)
        return self._cached(("eval", name, workspace.step),
                            lambda: evaluate(workspace, bleu_examples=examples))

    def cell_curves(self):
        from explorer.analysis.gradients import CELL_HIDDEN, cell_comparison_ids
        from explorer.analysis.probe import compare_cells

        source, target = self.probe
        ids = cell_comparison_ids(self.workspace.tokenizer, source or target)
        hidden = getattr(self.workspace.model.config, "hidden_size", CELL_HIDDEN)
        return self._cached(("cells",), lambda: compare_cells(ids, self.workspace.tokenizer.vocab_size,
                                                              hidden))

    def embeddings(self):
        from explorer.analysis.embeddings import embedding_data

        return self._cached(("embeddings", self.workspace.step),
                            lambda: embedding_data(self.workspace, "input"))

    def decode(self, steps: int) -> list[str]:
        """The next `steps` tokens of the greedy output on the probe input (`@decode N`)."""
        from explorer.decoding import greedy
        from explorer.decoding.scoring import encode_context

        context = encode_context(self.workspace, self.probe[0])
        tokens = greedy(self.workspace.model, context, max_len=len(self.decoded) + steps,
                        tokenizer=self.workspace.tokenizer).tokens
        self.decoded = list(tokens)
        return self.decoded

    def check(self, directive, student: bool = False) -> CheckResult:
        """Measure one `@check`; on the `student`'s own state (a task) a measurement that cannot
        be made is a check not passed that says why, not an error of the lesson."""
        try:
            return evaluate_check(self, directive.args, directive.options)
        except UserError as exc:
            if student:
                return failed_check(self, directive.args, str(exc))
            raise UserError(f"{directive.where(self.lesson)}: {exc}") from None
