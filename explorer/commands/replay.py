"""`explorer replay RUN --out DIR`: train again from a run's recorded seed, configuration and data.

    explorer replay runs/dates --out runs/dates-again

The untrained model is rebuilt from the recorded model configuration and seed, the data from the
recorded data spec (after checking the hash of every data file), and each training segment of
the run (the first one, then every --resume) is trained again with its own recorded settings, up
to the step where the next one took over. The new run is written to DIR like any other; the last
line says how far its losses are from the recorded ones: on the same device, none at all.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="the run folder to replay")
    parser.add_argument("--out", metavar="DIR", required=True, help="write the new run here")
    parser.add_argument("--snapshot-every", type=int, metavar="N",
                        help="keep a full checkpoint every N steps, 0: none (default: as the run "
                             "did)")
    parser.add_argument("--device", help="auto | cpu | cuda | mps (default: as recorded)")


def _recorded(reader):
    """(config.json, its run section, the training segments, the recorded loss of each step)."""
    from explorer.errors import UserError
    from explorer.runs.reader import live_rows

    config = reader.config()
    run = config.get("run")
    if not run:
        raise UserError(f"{reader.folder}: not a run folder (its config.json has no run section)")
    reader.read_new()
    segments = [r for r in reader.rows if r.get("event") in ("started", "resumed")]
    if not segments or segments[0]["event"] != "started" or not run.get("build"):
        raise UserError(f"{reader.folder}: this run does not start at step 0 (it continued a "
                        "checkpoint from elsewhere); replay the run it came from")
    losses = {row["step"]: row["loss"] for row in live_rows(reader.rows)[0]}
    if not losses:
        raise UserError(f"{reader.folder}: the run recorded no steps; nothing to replay")
    step = config.get("step")
    if isinstance(step, int) and max(losses) < step:  # a cut metrics.jsonl: nothing to compare to
        raise UserError(f"{reader.metrics_path}: history cut at step {max(losses)} while the "
                        f"checkpoint is at step {step}; steps {max(losses) + 1}-{step} have no "
                        "recorded losses to replay against, so nothing was replayed")
    return config, run, segments, losses


def _check_data(run: dict, segments: list[dict], spec, splits) -> None:
    """Every data file as every segment of the run found it (a file edited between a run and its
    --resume cannot be replayed either)."""
    from pathlib import Path

    from explorer.errors import UserError
    from explorer.runs.layout import file_sha256, splits_sha256

    recorded = [(path, digest) for source in (run, *segments)
                for path, digest in (source.get("data_files") or {}).items()]
    for path, digest in dict.fromkeys(recorded):
        if not Path(path).is_file():
            raise UserError(f"{path}: the run's data file is gone; replay needs it")
        if file_sha256(path) != digest:
            raise UserError(f"{path}: changed since the run was recorded (its sha256 differs); "
                            "replay needs the data the run trained on")
    if run.get("data_sha256") and splits_sha256(splits) != run["data_sha256"]:
        raise UserError(f"the {spec.task or 'data'} examples differ from the ones the run "
                        "trained on; replay needs the same data")


def _rebuild(config: dict, run: dict, segments: list[dict]):
    """The untrained Workspace the run started from."""
    import torch

    from explorer.errors import UserError
    from explorer.training.setup import DataSpec, fit_tokenizers, read_data
    from explorer.workspace import Workspace
    from seqmodels.config import build_model, config_from_dict

    spec = DataSpec.from_dict(config["data"])
    splits = read_data(spec)
    _check_data(run, segments, spec, splits)
    tokenizer, src_tokenizer = fit_tokenizers(spec, splits)
    model_config = config_from_dict(config["model"])
    if tokenizer.vocab_size != model_config.vocab_size:
        raise UserError("the tokenizer fitted on the data does not match the recorded model; "
                        "replay needs the same data and explorer version")
    torch.manual_seed(run["build"]["seed"])
    model = build_model(model_config)
    return Workspace(model=model, tokenizer=tokenizer, src_tokenizer=src_tokenizer,
                     task=spec.task, data=splits, data_spec=spec)


def loss_differences(recorded: dict[int, float], replayed: dict[int, float]) -> str:
    """One line: how far the replayed losses are from the recorded ones."""
    import math

    steps = sorted(set(recorded) & set(replayed))
    worst_abs = worst_rel = 0.0
    worst_step = None
    for step in steps:
        a, b = recorded[step], replayed[step]
        if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
            if a != b:
                return f"losses differ at step {step}: recorded {a}, replayed {b}"
            continue
        diff = abs(a - b)
        if diff > worst_abs:
            worst_abs, worst_step = diff, step
        worst_rel = max(worst_rel, diff / max(abs(a), 1e-12))
    span = f"steps {steps[0]}-{steps[-1]}" if steps else "no steps"
    if worst_abs == 0:
        return f"replayed {span}: losses identical to the recorded ones (max abs diff 0, " \
               "max rel diff 0)"
    return (f"replayed {span}: max abs diff {worst_abs:.3g} (step {worst_step}), max rel diff "
            f"{worst_rel:.3g} from the recorded losses")


def run(args: argparse.Namespace) -> int:
    import dataclasses
    import sys

    from explorer.commands.train import ProgressPrinter
    from explorer.events import StepMetrics, TrainingFinished
    from explorer.runs import RunReader, RunWriter
    from explorer.training import TrainConfig, Trainer, TrainerControl

    reader = RunReader(args.run)
    config, run_section, segments, recorded = _recorded(reader)
    snapshot_every = (run_section.get("snapshot_every") if args.snapshot_every is None
                      else args.snapshot_every)  # 0: none, as for train and the app
    writer = RunWriter(args.out, snapshot_every)
    writer.claim(resume=False)
    error = None
    try:
        workspace = _rebuild(config, run_section, segments)
        last_step = max(recorded)
        replayed: dict[int, float] = {}
        printer = ProgressPrinter()
        for index, segment in enumerate(segments):
            start = segment.get("step") or 0
            end = segments[index + 1]["step"] if index + 1 < len(segments) else last_step
            if end <= start:
                continue
            train = TrainConfig.from_dict(segment["train"])
            if args.device:
                train = dataclasses.replace(train, device=args.device)
            control = TrainerControl()
            trainer = Trainer(workspace, train, control)
            if index == 0:
                writer.start(workspace, trainer, build=run_section["build"])
            else:
                writer.continue_with(workspace, trainer)
            for event in trainer.run():
                writer.record(event)
                printer.show(event)
                if isinstance(event, StepMetrics):
                    replayed[event.step] = event.loss
                    if event.step >= end:
                        control.stop()  # where the recorded run stopped or was resumed
        workspace.train_config = trainer.config
        writer.finish(workspace, TrainingFinished(workspace.step, "done"))
    except BaseException as exc:
        error = exc
        raise
    finally:
        writer.close(error)
    print(loss_differences(recorded, replayed), file=sys.stderr)
    return 0
