"""Multi30k German -> English: test_2016_flickr BLEU of greedy decodes after a fixed time budget,
for a Transformer and a seq2seq GRU with additive attention, both trained by explorer's engine.

    python benchmarks/bench_multi30k.py [--minutes 10] [--threads 1] [--only transformer]

Data: train / val / test_2016_flickr .de/.en(.gz) from --data. BPE vocabularies (5000 per side)
are fitted on the training split only. BLEU is sacreBLEU's corpus BLEU (13a) on detokenised output.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.data.readers import read_parallel  # noqa: E402
from explorer.events import EvalMetrics, StepMetrics  # noqa: E402
from explorer.training import DataSpec, TrainConfig, Trainer, build_workspace  # noqa: E402
from explorer.training.evaluation import greedy_bleu  # noqa: E402
from models.config import count_parameters  # noqa: E402

DEFAULT_DATA = "/work/shared/data/multi30k"
# Sized for a CPU budget of minutes: small models see several epochs instead of a fraction of one.
SYSTEMS = {
    "transformer": dict(
        family="transformer",
        model=dict(d_model=128, num_heads=4, num_layers=3, d_ff=512, dropout=0.1, max_len=128),
        train=dict(batch_size=64, lr=2e-3, schedule="noam", warmup=400, label_smoothing=0.1),
    ),
    "gru-additive": dict(
        family="seq2seq",
        model=dict(cell="gru", attention="additive", embed_dim=128, hidden_size=256,
                   dropout=0.2, max_src_len=128),
        train=dict(batch_size=64, lr=2e-3, schedule="constant", warmup=100),
    ),
}


def run(name: str, spec: DataSpec, test_pairs, minutes: float, threads: int, device: str):
    system = SYSTEMS[name]
    torch.manual_seed(0)
    workspace = build_workspace(spec, system["family"], **system["model"])
    # a time budget, not a step count: schedules that need the last step (cosine) do not fit
    config = TrainConfig(steps=10**6, eval_every=500, eval_examples=1014, bleu_examples=0,
                         device=device, num_threads=threads, **system["train"])
    trainer = Trainer(workspace, config)
    print(f"{name}: {count_parameters(workspace.model):,} parameters", flush=True)
    started = time.perf_counter()
    tokens = 0
    for event in trainer.run():
        if isinstance(event, StepMetrics):
            tokens += event.tokens
            if time.perf_counter() - started > 60 * minutes:
                trainer.control.stop()
        elif isinstance(event, EvalMetrics):
            print(f"  step {event.step}: val loss {event.val_loss:.3f} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    train_s = time.perf_counter() - started
    started = time.perf_counter()
    bleu, _ = greedy_bleu(workspace, test_pairs, batch_size=128, max_len=80)
    decode_s = time.perf_counter() - started
    return dict(name=name, steps=workspace.step, train_s=train_s, tokens_per_s=tokens / train_s,
                bleu=bleu, decode_s=decode_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--minutes", type=float, default=10.0, help="training budget per system")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--only", choices=sorted(SYSTEMS))
    args = parser.parse_args()
    data = Path(args.data)
    spec = DataSpec(src=str(data / "train.de.gz"), tgt=str(data / "train.en.gz"),
                    val_src=str(data / "val.de.gz"), val_tgt=str(data / "val.en.gz"),
                    tokenizer="bpe", vocab_size=5000)
    test_pairs = read_parallel(data / "test_2016_flickr.de.gz", data / "test_2016_flickr.en.gz")
    results = [run(name, spec, test_pairs, args.minutes, args.threads, args.device)
               for name in ([args.only] if args.only else SYSTEMS)]
    print()
    print(f"| system | steps in {args.minutes:g} min | tokens/s | test_2016_flickr BLEU | "
          "greedy decode time |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['name']} | {r['steps']} | {r['tokens_per_s']:,.0f} | {r['bleu'].score:.2f} | "
              f"{r['decode_s']:.0f} s |")
    for r in results:
        print(f"{r['name']}: {r['bleu'].format()}  {r['bleu'].signature}")


if __name__ == "__main__":
    main()
