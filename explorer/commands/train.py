"""`explorer train`: train a model headless and write a checkpoint.

    explorer train --task dates --arch seq2seq --attention additive --steps 2000 --out runs/dates
    explorer train --data input.txt --arch gpt --context 64 --steps 2000 --out runs/shakespeare
    explorer train --resume runs/dates --steps 4000
    explorer train --model my_model.py:build --task reverse --steps 500 --out runs/mine

A progress line (step, loss, tokens/s) is redrawn on stderr when it is a terminal, else one line
is logged per evaluation; a summary ends the run. `--config FILE.json` holds any of the options
below under their long names (`{"task": "dates", "arch": "seq2seq", "batch_size": 64}`) and any
TrainConfig or model field; `--recipe NAME` starts from a shipped recipe; flags override both
(explorer/commands/train_options.py).
"""

from __future__ import annotations

import argparse

from explorer.commands.train_options import flag_fields
from explorer.data.tasks import PAIRS, TASKS
from explorer.families import family_names, family_of
from seqmodels.cells import cell_names
from seqmodels.scores import SCORES

ARCHS = family_names()
DATA_FLAGS = ("task", "data", "src", "tgt", "val_src", "val_tgt", "tokenizer", "vocab_size")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Defaults are None so that flags given on the command line can override --config.
    data = parser.add_argument_group("data (one of --task, --data, --src/--tgt)")
    data.add_argument("--task", help="built-in task: copy reverse sort addition dates "
                      "translate-toy brackets")
    data.add_argument("--data", metavar="FILE", help="plain text (language models) or "
                      "source<TAB>target lines (seq2seq, transformer; the default when the first "
                      "line has a tab); .gz is fine")
    data.add_argument("--src", metavar="FILE", help="source side of line-aligned parallel files")
    data.add_argument("--tgt", metavar="FILE", help="target side of line-aligned parallel files")
    data.add_argument("--val-src", metavar="FILE", help="validation sources (else 10%% held out)")
    data.add_argument("--val-tgt", metavar="FILE", help="validation targets")
    data.add_argument("--tokenizer", help="char, word or bpe (default: the task's, char for text, "
                      "word for pairs)")
    data.add_argument("--vocab-size", type=int, help="largest vocabulary (bpe: its target size)")

    model = parser.add_argument_group("model")
    model.add_argument("--model", metavar="FILE.py:build", help="train your own PyTorch model: "
                       "FILE.py:function (or module:function) returning (model, tokenizer[, "
                       "explorer.Adapter]), on the data given; the file is imported")
    model.add_argument("--weights", metavar="FILE", help="with --model: start from this state dict "
                       "(.safetensors, or a torch file read with weights_only=True)")
    model.add_argument("--arch", help=f"{' | '.join(ARCHS)} (default: seq2seq for pairs, gpt "
                       "for text)")
    model.add_argument("--cell", help=f"{' | '.join(cell_names())} (RNN models)")
    model.add_argument("--attention", help=f"{' | '.join(SCORES)} (seq2seq)")
    model.add_argument("--preset", help="tiny or small (default: tiny)")
    model.add_argument("--layers", type=int, help="layers (per stack)")
    model.add_argument("--hidden", type=int, help="RNN hidden size")
    model.add_argument("--d-model", type=int, help="Transformer width (d_ff = 4 x d_model)")
    model.add_argument("--heads", type=int, help="attention heads")
    model.add_argument("--context", type=int, help="LM block length in tokens (default: 64)")
    model.add_argument("--dropout", type=float, help="dropout probability")

    train = parser.add_argument_group("training")
    train.add_argument("--steps", type=int, help="train until this step, with --resume too (default: 1000)")
    train.add_argument("--epochs", type=float, help="passes over the training data instead")
    train.add_argument("--batch-size", type=int, help="examples per step (default: 32)")
    train.add_argument("--lr", type=float, help="peak learning rate (default: 1e-3)")
    train.add_argument("--optimizer", help="sgd | adam | adamw (default: adamw)")
    train.add_argument("--schedule", help="constant | noam | cosine (default: constant)")
    train.add_argument("--warmup", type=int, help="warm-up steps (noam: steps to the peak)")
    train.add_argument("--clip", type=float, help="clip the global gradient norm to this "
                       "(default: 1.0; 0 = off)")
    train.add_argument("--label-smoothing", type=float, help="label smoothing (default: 0)")
    train.add_argument("--eval-every", type=int, help="steps between evaluations (default: 100)")
    train.add_argument("--seed", type=int, help="random seed (default: 0)")
    train.add_argument("--device", help="auto | cpu | cuda | mps (default: auto)")
    train.add_argument("--precision", help="fp32 | bf16 | fp16 (autocast, CUDA only)")
    train.add_argument("--threads", type=int, help="CPU threads (default: torch's, one per core, "
                       "or fewer when the load average says other work holds cores)")

    checkpoint = parser.add_argument_group("checkpoint")
    checkpoint.add_argument("--out", metavar="DIR", help="write the checkpoint here")
    checkpoint.add_argument("--resume", metavar="DIR", help="continue training this checkpoint "
                            "(and save to it unless --out is given)")
    checkpoint.add_argument("--from", dest="from_hf", metavar="HF_DIR",
                            help="fine-tune this Hugging Face model: a causal LM on --data text, "
                            "an encoder-decoder on pairs; --out gets an HF folder (save_pretrained)")
    model.add_argument("--hf-config", dest="hf_config_file", metavar="CONFIG.json",
                       help="a new model with this Hugging Face architecture (model_type gpt2, "
                       "bert, marian or t5; or --arch hf-gpt2 ... with the size flags); the "
                       "vocabulary comes from the data")
    checkpoint.add_argument("--config", metavar="FILE.json", help="options as JSON; flags win")
    checkpoint.add_argument("--save-every", type=int, metavar="N", help="also save every N steps "
                            "(a run killed later resumes from there); SIGINT and SIGTERM save, "
                            "then stop")
    checkpoint.add_argument("--snapshot-every", type=int, metavar="N", help="also keep a full "
                            "checkpoint of every N-th step in DIR/snapshots/step-NNNNNN (0: none)")

    # a wall-clock budget and the published recipes (explorer/commands/train_options.py)
    train.add_argument("--time-limit", type=float, metavar="MINUTES", help="stop cleanly after "
                       "this many minutes of wall clock (evaluations included), evaluate and save")
    checkpoint.add_argument("--recipe", metavar="NAME", help="a published recipe's options (model, "
                            "optimiser, evaluation; flags and --config win): "
                            + ", ".join(_recipe_summaries()))


def _recipe_summaries() -> list[str]:
    from explorer.commands.train_options import recipe_summaries

    return recipe_summaries()


def _options(args: argparse.Namespace) -> dict:
    """Options from --recipe, then --config, overridden by the flags given on the command line."""
    from explorer.commands.train_hf import with_hf_architecture
    from explorer.commands.train_options import gather

    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return with_hf_architecture(gather(args, parser))


def _choose(name: str, value, choices) -> None:
    from explorer.errors import UserError

    if value is not None and value not in choices:
        raise UserError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")


def _data_spec(options: dict, kind: str | None = None):
    """The DataSpec of the options; `kind` "lm" or "seq2seq": what --data holds, whatever it
    looks like."""
    from explorer.data.readers import looks_like_tsv
    from explorer.families import get_family
    from explorer.training.setup import DataSpec

    arch, data = options.get("arch"), options.get("data")
    # --data holds source<TAB>target pairs for the pair models; without --arch its first line decides
    if kind is not None:
        pairs = kind == PAIRS
    elif arch in ARCHS:
        pairs = get_family(arch).has_source
    else:
        pairs = arch is None and data is not None and looks_like_tsv(data)
    return DataSpec(
        task=options.get("task"),
        text=None if pairs else data,
        tsv=data if pairs else None,
        src=options.get("src"), tgt=options.get("tgt"),
        val_src=options.get("val_src"), val_tgt=options.get("val_tgt"),
        tokenizer=options.get("tokenizer"), vocab_size=options.get("vocab_size"),
        seed=options.get("seed") or 0,
    )


def _model_overrides(options: dict, name: str) -> dict:
    from dataclasses import fields

    from explorer.errors import UserError
    from explorer.families import get_family

    family = get_family(name)
    settings = {f.name for f in fields(family.model.config_class)}
    overrides = {}
    for flag, field in flag_fields("model").items():
        if options.get(flag) is None:
            continue
        if field not in settings:
            raise UserError(f"--{flag.replace('_', '-')} does not apply to {name} models")
        overrides[field] = options[flag]
    if "d_model" in overrides:
        overrides["d_ff"] = 4 * overrides["d_model"]
    if family.is_lm and family.has_positions:  # a Transformer LM's positions cover one block
        overrides["max_len"] = options.get("context") or 64
    return overrides


def _train_config(options: dict, base):
    import dataclasses

    from explorer.commands.train_options import extra_fields
    from explorer.training.config import TrainConfig

    flags = flag_fields("train")
    changes = {field: options[flag] for flag, field in flags.items() if flag in options}
    changes.update(extra_fields(options, "train", handled=flags))  # --config, --recipe
    if changes.get("clip") == 0:
        changes["clip"] = None
    if "epochs" in changes and "steps" not in changes:
        changes["steps"] = None  # --epochs replaces a step count saved in a resumed checkpoint
    # no --threads: explorer.runtime.choose_threads decides when training starts (a resumed
    # checkpoint's count was the machine's load then, not now)
    changes.setdefault("num_threads", None)
    if base is None:
        return TrainConfig(**changes)
    return dataclasses.replace(base, **changes)


def _all_overrides(options: dict, family: str) -> dict:
    """The model fields the flags set, and those no flag sets (--config, --recipe), which win
    over what the flags imply (d_ff = 4 x d_model)."""
    from explorer.commands.train_options import extra_fields

    return {**_model_overrides(options, family),
            **extra_fields(options, "model", handled=flag_fields("model"))}


def _new_workspace(options: dict):
    from explorer.training.setup import TRAIN_DEFAULT_FAMILIES, build_workspace

    spec = _data_spec(options)
    family = options.get("arch") or TRAIN_DEFAULT_FAMILIES[spec.kind]
    preset = options.get("preset", "tiny")
    return build_workspace(spec, family, preset, seed=options.get("seed") or 0,
                           **_all_overrides(options, family))


# what a user's model decides itself: its architecture, sizes and tokenizer
NOT_WITH_MODEL = ("arch", "preset", "tokenizer", "vocab_size", "hf_config_file", "from_hf",
                  *flag_fields("model"))


def _user_workspace(options: dict):
    """`--model FILE.py:build [--weights FILE]` with the data of --task / --data / --src --tgt
    attached; a model whose vocabulary does not fit the data is one line."""
    from explorer.commands.train_options import extra_fields
    from explorer.errors import UserError
    from explorer.usermodel.check import open_checked
    from explorer.usermodel.families import LM_FAMILIES

    given = [k for k in NOT_WITH_MODEL if options.get(k) is not None]
    given += list(extra_fields(options, "model", handled=flag_fields("model")))
    if given:
        flag = given[0].replace("_", "-")
        raise UserError(f"--model trains your model as its build() makes it; drop --{flag}")
    if not any(options.get(k) for k in ("task", "data", "src", "tgt")):
        raise UserError("no data: give --task NAME, --data FILE, or --src FILE --tgt FILE")
    _choose("task", options.get("task"), TASKS)
    workspace = open_checked(options["model"], weights=options.get("weights"))
    kind = "lm" if workspace.family in LM_FAMILIES else PAIRS
    return family_of(workspace.model).attach_data(workspace, _data_spec(options, kind))


class ProgressPrinter:
    """On a terminal, a progress bar redrawn in place with `\r` on stderr and evaluations on lines
    of their own; into a file or pipe, one plain line per evaluation (a log, not a bar)."""

    def __init__(self, stream=None, width: int = 24, min_interval_s: float = 0.1,
                 time_limit: float | None = None) -> None:
        import sys
        import time

        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width, self.min_interval_s = width, min_interval_s
        self.time_limit_s = None if time_limit is None else 60 * time_limit
        self.started = time.perf_counter()
        self.last_draw = 0.0
        self.last_step = None  # the newest StepMetrics
        self.last_eval = None
        self.tokens = 0
        self.since_eval = (0, 0.0)  # tokens and active seconds at the last evaluation

    def _bar(self, metrics) -> str:
        import time

        total = metrics.total_steps or metrics.step
        done = metrics.step / max(total, 1)
        clock = ""
        if self.time_limit_s:  # a budget of minutes: the bar fills with whichever ends first
            wall = time.perf_counter() - self.started
            done = max(done, wall / self.time_limit_s)
            clock = f" {_minutes(wall)}/{_minutes(self.time_limit_s)}"
        filled = min(self.width, round(self.width * done))
        bar = "#" * filled + "." * (self.width - filled)
        return (f"\rstep {metrics.step}/{total} [{bar}]{clock} loss {metrics.loss:.4f} "
                f"lr {metrics.lr:.2e} {metrics.tokens_per_s:,.0f} tok/s")

    def _log_line(self, evaluation) -> str:
        """Training since the last evaluation, then the evaluation, in one line."""
        steps = self.last_step
        tokens, active_s = self.since_eval
        rate = (self.tokens - tokens) / max(steps.elapsed_s - active_s, 1e-9)
        self.since_eval = (self.tokens, steps.elapsed_s)
        return (f"step {steps.step}/{steps.total_steps}: loss {steps.loss:.4f}, lr {steps.lr:.2e}, "
                f"{rate:,.0f} tok/s; {format_eval(evaluation).split(': ', 1)[1]}")

    def show(self, event):
        """Print one event; returns it when it is the TrainingFinished that ends the run."""
        import time

        from explorer.events import EvalMetrics, StepMetrics, TrainingFinished

        if isinstance(event, StepMetrics):
            self.last_step = event
            self.tokens += event.tokens
            now = time.perf_counter()
            if self.live and (now - self.last_draw >= self.min_interval_s
                              or event.step == event.total_steps):
                self.last_draw = now
                self.stream.write(self._bar(event))
                self.stream.flush()
        elif isinstance(event, EvalMetrics):
            self.last_eval = event
            if self.live:
                self.stream.write("\n" + format_eval(event) + "\n")
            else:
                self.stream.write(self._log_line(event) + "\n")
            self.stream.flush()
        elif isinstance(event, TrainingFinished):
            if self.live:
                self.stream.write("\n")
            if event.message:
                self.stream.write(event.message + "\n")
            self.stream.flush()
            return event
        return None

    def summary(self, workspace, out) -> None:
        steps = self.last_step
        if steps is None:
            self.stream.write(f"nothing to train: the model is already at step {workspace.step}; "
                              f"checkpoint written to {out}\n")
            return
        rate = self.tokens / steps.elapsed_s if steps.elapsed_s else 0.0
        line = (f"trained to step {steps.step} in {steps.elapsed_s:.1f} s ({rate:,.0f} tok/s), "
                f"last loss {steps.loss:.4f}")
        if self.last_eval is not None:
            line += f"; {format_eval(self.last_eval)}"
        self.stream.write(f"{line}\ncheckpoint written to {out}\n")
        self.stream.flush()


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def report_data(splits, stream=None) -> None:
    """One line per file read: how many lines were kept, and how many were skipped and why."""
    import sys

    stream = stream or sys.stderr
    for report in splits.reports:
        stream.write(f"data: {report.summary()}\n")
    stream.flush()


def format_eval(metrics) -> str:
    text = (f"step {metrics.step}: val loss {metrics.val_loss:.4f}, perplexity "
            f"{metrics.perplexity:.2f}, token accuracy {100 * metrics.token_accuracy:.1f}%")
    if metrics.bleu is not None:
        text += f", BLEU {metrics.bleu:.2f}"
    return text


def run(args: argparse.Namespace) -> int:
    from explorer.runs import RunWriter
    from explorer.training.distributed import init_from_env, shutdown

    options = _options(args)
    out = options.get("out") or options.get("resume")
    # torchrun's ranks (issue 14): rank 0 alone writes the run folder; --from writes a Hugging
    # Face folder (save_pretrained), not a run
    parallel = init_from_env(options.get("device") or "auto")
    main_rank = parallel is None or parallel.is_main
    writer = None
    if out and main_rank and not options.get("from_hf"):
        writer = RunWriter(out, options.get("snapshot_every"))
        writer.claim(resume=_same_folder(options.get("resume"), out))  # locked until close
    error = None
    try:
        return _train(options, out, parallel, writer)
    except BaseException as exc:
        error = exc
        raise
    finally:
        if writer is not None:
            writer.close(error)
        shutdown(parallel)


def _same_folder(a, b) -> bool:
    from pathlib import Path

    return a is not None and b is not None and Path(a).resolve() == Path(b).resolve()


def _train(options: dict, out, parallel, writer) -> int:
    import contextlib
    import dataclasses
    import os
    import sys
    from pathlib import Path

    from explorer.commands.train_options import extra_fields
    from explorer.errors import UserError
    from explorer.training import TrainConfig, Trainer, load_checkpoint
    from explorer.training.autosave import Autosave
    from explorer.training.checkpoint import check_resumable

    if options.get("weights") and not options.get("model"):
        raise UserError("--weights goes with --model FILE.py:build")
    if options.get("resume"):
        from explorer.commands.model_args import allow_recorded_build

        if options.get("model"):
            raise UserError("--resume keeps the checkpoint's model; drop --model")
        allow_recorded_build(options["resume"])  # a run of your own model: you named it here
        model_flags = flag_fields("model")
        given = [k for k in (*DATA_FLAGS, *model_flags, "arch", "preset") if k in options]
        given += list(extra_fields(options, "model", handled=model_flags))
        if given:
            flag = given[0].replace("_", "-")
            raise UserError(f"--resume keeps the checkpoint's data and model; drop --{flag}")
        workspace = load_checkpoint(options["resume"])
        check_resumable(options["resume"], workspace)  # its data files: missing? changed?
        config = _train_config(options, workspace.train_config)
    elif options.get("model"):  # the user's own model, on the data given
        config = _train_config(options, None)
        if not out:
            raise UserError("say where to write the checkpoint: --out DIR")
        workspace = _user_workspace(options)
    elif options.get("from_hf"):  # a Hugging Face model, fine-tuned by the same Trainer
        from explorer.commands.train_hf import finetune_workspace

        config = _train_config(options, None)
        workspace = finetune_workspace(options, _data_spec)
    else:
        if not any(options.get(k) for k in ("task", "data", "src", "tgt")):
            raise UserError("no data: give --task NAME, --data FILE, or --src FILE --tgt FILE")
        _choose("arch", options.get("arch"), ARCHS)
        _choose("task", options.get("task"), TASKS)
        config = _train_config(options, None)  # bad options fail before any data is read
        if not out:
            raise UserError("say where to write the checkpoint: --out DIR")
        workspace = _new_workspace(options)
    trainer = Trainer(workspace, config)
    trainer.parallel = parallel
    quiet = parallel is not None and not parallel.is_main  # other ranks print and save nothing
    printer = ProgressPrinter(open(os.devnull, "w") if quiet else None,
                              time_limit=config.time_limit)
    if not quiet:
        report_data(workspace.data)
    build = None if any(options.get(k) for k in ("resume", "from_hf", "model")) else {
        "family": workspace.family, "preset": options.get("preset", "tiny"),
        "seed": options.get("seed") or 0, "overrides": _all_overrides(options, workspace.family)}
    finished = None
    # the checkpoint keeps the automatic choice unless --threads was given
    threads = options.get("threads", TrainConfig.num_threads)
    # --save-every, SIGINT/SIGTERM and the folder's lock: explorer/training/autosave.py; its saves
    # go through the run's writer, which keeps metrics.jsonl and snapshots/
    autosave = None if quiet else Autosave(
        trainer, out, options.get("save_every"), threads,
        save=None if writer is None else writer.save_latest)
    with autosave or contextlib.nullcontext():
        if writer is not None:
            writer.start(workspace, trainer, build=build, resumed_from=options.get("resume"))
        for event in trainer.run():
            if trainer.threads_note and not quiet:
                print(trainer.threads_note, file=sys.stderr)
                trainer.threads_note = None  # one line
            if writer is not None:
                writer.record(event)
            finished = printer.show(event) or finished
        if finished.reason in ("nan", "oom"):
            if writer is not None:
                writer.end(finished.reason, finished.message, finished.step)
            raise UserError(finished.message + (autosave.kept_note() if autosave else ""))
        workspace.train_config = dataclasses.replace(workspace.train_config, num_threads=threads)
        if options.get("from_hf"):
            from explorer.hf.finetune import save_hf_model

            save_hf_model(workspace, Path(out))
        elif writer is not None:
            writer.finish(workspace, finished)
    if quiet:
        return 0
    printer.summary(workspace, out)
    if autosave.signal is not None:
        print(f"{autosave.describe_stop()}: --resume {out} continues from step {workspace.step}",
              file=sys.stderr)
    return autosave.exit_code
