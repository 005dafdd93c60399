"""seqmodels.RNN's two paths against torch's fused layers, and the four cells on a character LM.

1. Speed: forward + backward of torch.nn.RNN/GRU/LSTM and seqmodels.RNN with the same weights. Untraced,
   seqmodels.RNN hands its parameters to torch's fused kernels ("fused"); traced, it loops over time in
   Python so that every step is visible ("cells"). The UGRNN has no fused kernel and no torch
   counterpart: its untraced and traced runs both loop over cells.
2. Quality: an RNN language model of each cell trained for a few hundred steps on Tiny Shakespeare
   characters (truncated BPTT), reporting validation loss in nats per character.

    python benchmarks/bench_rnn.py [--batch 32] [--length 64] [--hidden 128] [--steps 300]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from seqmodels import RNN, build_model, make_config

DATA = Path("/work/shared/data/tinyshakespeare/input.txt")
TORCH_LAYERS = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}


def time_pass(run, repeats: int) -> float:
    """Median seconds of one forward (`run()` -> output) + backward pass."""
    times = []
    for _ in range(repeats + 1):  # the first pass warms up
        start = time.perf_counter()
        run().square().mean().backward()
        times.append(time.perf_counter() - start)
    return sorted(times[1:])[len(times[1:]) // 2]


def torch_padded(layer, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """torch's way to skip padding: pack, run, unpack (our fused path does the same inside)."""
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    output, _ = nn.utils.rnn.pad_packed_sequence(layer(packed)[0], batch_first=True, total_length=x.shape[1])
    return output  # (B, T, H)


def bench_speed(args) -> None:
    print(f"forward+backward, batch {args.batch}, length {args.length}, hidden {args.hidden}, 2 layers; "
          f"'padded': a pad_mask with lengths spread over 1..{args.length}")
    print(f"{'cell':6} {'input':7} {'torch ms':>9} {'fused ms':>9} {'cells ms':>9} "
          f"{'fused/torch':>12} {'cells/fused':>12}")
    x = torch.randn(args.batch, args.length, args.hidden)
    lengths = torch.linspace(1, args.length, args.batch).round().long()  # (B,)
    pad_mask = torch.arange(args.length)[None, :] >= lengths[:, None]  # (B, T), True = padding
    for cell in ("rnn", "ugrnn", "gru", "lstm"):
        torch.manual_seed(0)
        ours = RNN(cell, args.hidden, args.hidden, num_layers=2, batch_first=True)
        reference = None
        if cell in TORCH_LAYERS:
            reference = TORCH_LAYERS[cell](args.hidden, args.hidden, num_layers=2, batch_first=True)
            reference.load_state_dict(ours.state_dict())
        for padded in (False, True):
            mask = pad_mask if padded else None
            fused_ms = 1000 * time_pass(lambda: ours(x, pad_mask=mask)[0], args.repeats)
            cells_ms = 1000 * time_pass(lambda: ours(x, pad_mask=mask, trace=True)[0], args.repeats)
            label = "padded" if padded else "full"
            if reference is None:  # untraced UGRNN runs the cells too
                print(f"{cell:6} {label:7} {'-':>9} {fused_ms:9.1f} {cells_ms:9.1f} {'-':>12} "
                      f"{cells_ms / fused_ms:11.2f}x")
                continue
            run_torch = (lambda: torch_padded(reference, x, lengths)) if padded else (lambda: reference(x)[0])
            torch_ms = 1000 * time_pass(run_torch, args.repeats)
            print(f"{cell:6} {label:7} {torch_ms:9.1f} {fused_ms:9.1f} {cells_ms:9.1f} "
                  f"{fused_ms / torch_ms:11.2f}x {cells_ms / fused_ms:11.2f}x")


def bench_language_model(args) -> None:
    text = DATA.read_text(encoding="utf-8")
    chars = sorted(set(text))
    ids = torch.tensor([chars.index(c) + 5 for c in text])  # ids 0..4 are reserved
    split = int(0.9 * len(ids))
    train, val = ids[:split], ids[split:split + 20_000]
    vocab = len(chars) + 5
    print(f"\ncharacter LM on Tiny Shakespeare: {args.steps} steps, batch {args.batch}, bptt {args.length}")
    print(f"{'cell':6} {'params':>8} {'val nats/char':>14} {'seconds':>8}")
    for cell in ("rnn", "ugrnn", "gru", "lstm"):
        torch.manual_seed(0)
        config = make_config("rnn-lm", vocab_size=vocab, cell=cell, embed_dim=64, hidden_size=args.hidden)
        model = build_model(config)
        optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
        generator = torch.Generator().manual_seed(0)
        start = time.perf_counter()
        for _ in range(args.steps):
            offsets = torch.randint(0, len(train) - args.length - 1, (args.batch,), generator=generator)
            window = torch.stack([train[o:o + args.length + 1] for o in offsets])  # (B, T + 1)
            logits = model(window[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, vocab), window[:, 1:].reshape(-1))
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
        seconds = time.perf_counter() - start
        model.eval()
        with torch.no_grad():
            rows = val[: len(val) // 200 * 200].view(-1, 200)  # (N, 200)
            logits = model(rows[:, :-1])
            val_loss = F.cross_entropy(logits.reshape(-1, vocab), rows[:, 1:].reshape(-1)).item()
        n_params = sum(p.numel() for p in model.parameters())
        print(f"{cell:6} {n_params:8d} {val_loss:14.3f} {seconds:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300, help="LM training steps per cell (0 skips)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # a fair, quiet comparison on a shared machine
    bench_speed(args)
    if args.steps:
        bench_language_model(args)


if __name__ == "__main__":
    main()
