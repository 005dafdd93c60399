"""Multi30k German -> English: test_2016_flickr BLEU of greedy decodes after a fixed time budget,
for a Transformer and a seq2seq GRU with additive attention, both trained by explorer's engine.

    python benchmarks/bench_multi30k.py [--data DIR] [--minutes 10] [--threads 1] [--only transformer]

The systems are the recipes `explorer train --recipe multi30k-transformer` and
`--recipe multi30k-gru-additive` train (explorer/training/recipes/), so the CLI and this benchmark
train the same models. Data: train / val / test_2016_flickr .de/.en(.gz) from --data (default
../shared/data/multi30k beside the repository). BPE vocabularies (5000 per side) are fitted on the
training split only. BLEU is sacreBLEU's corpus BLEU (13a) on detokenised output.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.commands.train_options import extra_fields, load_recipe  # noqa: E402
from explorer.data.readers import read_parallel  # noqa: E402
from explorer.events import EvalMetrics, StepMetrics  # noqa: E402
from explorer.training import DataSpec, TrainConfig, Trainer, build_workspace  # noqa: E402
from explorer.decoding.file_bleu import greedy_bleu  # noqa: E402
from seqmodels.config import count_parameters  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "multi30k"
SYSTEMS = ("transformer", "gru-additive")  # recipe multi30k-NAME
# the recipes' model options under the flags' names -> model config fields
FLAG_FIELDS = {"layers": "num_layers", "hidden": "hidden_size", "heads": "num_heads"}
MODEL_FLAGS = ("cell", "attention", "d_model", "dropout", *FLAG_FIELDS)


def recipe_configs(name: str, minutes: float | None, threads: int | None, device: str):
    """The recipe's model family and fields, and its TrainConfig with this run's budget."""
    options = load_recipe(f"multi30k-{name}")["options"]
    model = {FLAG_FIELDS.get(k, k): v for k, v in options.items() if k in MODEL_FLAGS}
    model.update(extra_fields(options, "model", handled=MODEL_FLAGS))
    train = extra_fields(options, "train", handled=())
    train["num_threads"] = options["threads"] if threads is None else threads
    if minutes is not None:
        train["time_limit"] = minutes
    return options["arch"], model, TrainConfig(device=device, **train)


def run(name: str, spec: DataSpec, test_pairs, minutes: float | None, threads: int | None,
        device: str):
    family, model, config = recipe_configs(name, minutes, threads, device)
    torch.manual_seed(0)
    workspace = build_workspace(spec, family, **model)
    trainer = Trainer(workspace, config)  # the recipe's time limit stops it, after an evaluation
    print(f"{name}: {count_parameters(workspace.model):,} parameters, "
          f"{config.time_limit:g} minutes", flush=True)
    started = time.perf_counter()
    tokens = 0
    for event in trainer.run():
        if isinstance(event, StepMetrics):
            tokens += event.tokens
        elif isinstance(event, EvalMetrics):
            print(f"  step {event.step}: val loss {event.val_loss:.3f} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    train_s = time.perf_counter() - started
    started = time.perf_counter()
    bleu, _ = greedy_bleu(workspace, test_pairs, batch_size=128, max_len=80)
    decode_s = time.perf_counter() - started
    return dict(name=name, minutes=config.time_limit, steps=workspace.step, train_s=train_s, tokens_per_s=tokens / train_s,
                bleu=bleu, decode_s=decode_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA),
                        help="folder of the Multi30k files (default: %(default)s)")
    parser.add_argument("--minutes", type=float,
                        help="training budget per system (default: the recipe's, 40 and 25)")
    parser.add_argument("--threads", type=int, help="torch threads (default: the recipe's, 1)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--only", choices=sorted(SYSTEMS))
    args = parser.parse_args()
    data = Path(args.data)
    if not (data / "train.de.gz").is_file():
        parser.error(f"{data} holds no Multi30k train.de.gz: give --data DIR")
    spec = DataSpec(src=str(data / "train.de.gz"), tgt=str(data / "train.en.gz"),
                    val_src=str(data / "val.de.gz"), val_tgt=str(data / "val.en.gz"),
                    tokenizer="bpe", vocab_size=5000)  # as the recipes say
    test_pairs = read_parallel(data / "test_2016_flickr.de.gz", data / "test_2016_flickr.en.gz")
    results = [run(name, spec, test_pairs, args.minutes, args.threads, args.device)
               for name in ([args.only] if args.only else SYSTEMS)]
    print()
    print("| system | budget | steps | tokens/s | test_2016_flickr BLEU | greedy decode time |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['name']} | {r['minutes']:g} min | {r['steps']} | {r['tokens_per_s']:,.0f} | "
              f"{r['bleu'].score:.2f} | {r['decode_s']:.0f} s |")
    for r in results:
        print(f"{r['name']}: {r['bleu'].format()}  {r['bleu'].signature}")


if __name__ == "__main__":
    main()
