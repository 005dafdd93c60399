"""Decoding a Hugging Face model through explorer.decoding vs transformers' own generate.

A GPT-2-small-sized random model (12 layers, 768 wide, 50,257 tokens; no download, no trained
weights) is saved to a temporary folder with a word-level tokenizer of the same size. Measured
in the same process, in alternating order, over several rounds (medians):

* greedy tokens/s: explorer's greedy vs generate(do_sample=False)      target >= 0.9x
* beam 5 tokens/s: explorer's beam search (its whole tree recorded) vs
  generate(num_beams=5, length_penalty=0)                                target >= 0.9x
* opening the folder and computing the first attention map (open_hf_model + forward_attention)
  vs AutoModelForCausalLM.from_pretrained alone                          target <= 1.5x
  (from_pretrained memory-maps the weights and reads them at the first forward pass, so the
  ratio against from_pretrained + one forward pass is printed as well)
* the app's way to its first attention map: open_hf_model + the probe's first stage
  (probe_stages: one forward pass without autograd), and the whole probe (what the app computed
  before its first map until issue 22), each vs from_pretrained + one forward pass, wall and
  process CPU (time.process_time), in rotating order              target <= 1.2x
* the tokenizer alone: the app's load_tokenizer vs AutoTokenizer.from_pretrained (process CPU)

    python benchmarks/bench_hf_decode.py [--rounds 5] [--new 48] [--prompt 16] [--threads 2]
    python benchmarks/bench_hf_decode.py --device cuda --no-open    # decoding on a GPU only
    python benchmarks/bench_hf_decode.py --open-only --rounds 9     # the opening rounds only
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402


def build_model(folder: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {"<|endoftext|>": 0, **{f"w{i}": i for i in range(1, 50257)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>",
                                        bos_token="<|endoftext|>", unk_token="<|endoftext|>")
    torch.manual_seed(0)
    # eos 0 is the bos as in GPT-2; a random model picks it rarely, and both decoders stop alike
    config = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                        bos_token_id=0, eos_token_id=0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def timed(fn):
    start = time.perf_counter()
    value = fn()
    if torch.cuda.is_available():  # a GPU's queued work counts where it was asked for
        torch.cuda.synchronize()
    return time.perf_counter() - start, value


def timed_cpu(fn):
    """(wall s, process CPU s of every thread, value) of fn()."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def app_first_map(folder: Path, load_and_forward, text: str, rounds: int) -> None:
    """open_hf_model + the app probe's first stage (its first attention map), and + the whole
    probe, against from_pretrained + one forward pass, in rotating order; medians of the ratios."""
    from explorer.analysis.probe import probe, probe_stages
    from explorer.hf import open_hf_model

    def first_stage():
        stages = probe_stages(open_hf_model(folder), text)
        try:
            return next(stages).attention
        finally:
            stages.close()  # the rest is the window's second stage, not its first map

    def whole_probe():
        return probe(open_hf_model(folder), text).attention

    runs = {"theirs": load_and_forward, "first stage": first_stage, "whole probe": whole_probe}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    loads = []
    for round_index in range(rounds):
        order = list(runs)[round_index % 3:] + list(runs)[: round_index % 3]
        loads.append(os.getloadavg()[0])
        for name in order:
            wall, cpu, value = timed_cpu(runs[name])
            assert name == "theirs" or value[0].weights.shape[0] == 12
            times[name].append((wall, cpu))
    theirs = times["theirs"]
    print(f"the app's first attention map vs from_pretrained + one forward pass, {rounds} rounds, "
          f"load average {min(loads):.1f}-{max(loads):.1f} (medians of the per-round ratios)")
    print(f"   from_pretrained + forward   wall {statistics.median(w for w, _ in theirs):.3f} s   "
          f"CPU {statistics.median(c for _, c in theirs):.3f} s")
    for name in ("first stage", "whole probe"):
        ours = times[name]
        wall_ratio = statistics.median(o[0] / t[0] for o, t in zip(ours, theirs))
        cpu_ratio = statistics.median(o[1] / t[1] for o, t in zip(ours, theirs))
        print(f"   open + {name:11s}   wall {statistics.median(w for w, _ in ours):.3f} s   "
              f"CPU {statistics.median(c for _, c in ours):.3f} s   ratio wall {wall_ratio:.2f}   "
              f"CPU {cpu_ratio:.2f}   (target <= 1.2)")


def tokenizer_rounds(folder: Path, rounds: int) -> None:
    """The folder's tokenizer as the app loads it (explorer.hf.loader.load_tokenizer: the added
    tokens read ahead) against AutoTokenizer on its own, alternating; process CPU medians."""
    from transformers import AutoConfig, AutoTokenizer

    from explorer.hf.loader import import_transformers, load_tokenizer

    transformers = import_transformers(str(folder))
    config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    runs = {"AutoTokenizer": lambda: AutoTokenizer.from_pretrained(
                str(folder), config=config, local_files_only=True),
            "load_tokenizer": lambda: load_tokenizer(folder, config, str(folder), transformers)}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_index in range(rounds):
        for name in list(runs)[round_index % 2:] + list(runs)[: round_index % 2]:
            _, cpu, _ = timed_cpu(runs[name])
            times[name].append(cpu)
    print(f"the tokenizer alone, {rounds} rounds (process CPU medians): " + ", ".join(
        f"{name} {statistics.median(cpu):.3f} s" for name, cpu in times.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--new", type=int, default=48, help="new tokens per greedy run")
    parser.add_argument("--beam-new", type=int, default=16, help="new tokens per beam run")
    parser.add_argument("--prompt", type=int, default=16, help="prompt tokens")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="where both decoders run (cpu, cuda)")
    parser.add_argument("--no-open", action="store_true", help="skip the folder-opening rounds")
    parser.add_argument("--open-only", action="store_true", help="only the folder-opening rounds")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from transformers import AutoModelForCausalLM

    from explorer.decoding import beam_search, greedy
    from explorer.decoding.scoring import forward_attention
    from explorer.hf import open_hf_model

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2-small-random"
        seconds, _ = timed(lambda: build_model(folder))
        print(f"built and saved the model in {seconds:.1f} s")
        prompt_text = " ".join(f"w{100 + 7 * i}" for i in range(args.prompt))

        open_ratio, load_times, open_times, forward_ratio, forward_times = [], [], [], [], []
        probe_ids = torch.tensor([[100 + 7 * i for i in range(args.prompt)]])

        def load_and_forward():  # the weights are memory-mapped: the first forward reads them
            model = AutoModelForCausalLM.from_pretrained(folder).eval()
            with torch.no_grad():
                return model(probe_ids).logits

        for _ in range(0 if args.no_open else args.rounds):  # from_pretrained alone vs open + first attention map
            load, _ = timed(lambda: AutoModelForCausalLM.from_pretrained(folder).eval())
            load_forward, _ = timed(load_and_forward)

            def open_and_draw():
                workspace = open_hf_model(folder)
                context = workspace.tokenizer.encode(prompt_text)
                return forward_attention(workspace, context[:-1], context[-1:])

            opened, maps = timed(open_and_draw)
            assert maps and maps[0].weights.shape[0] == 12
            load_times.append(load)
            open_times.append(opened)
            open_ratio.append(opened / load)
            forward_times.append(load_forward)
            forward_ratio.append(opened / load_forward)

        if not args.no_open:
            print(f"open folder + first attention map {statistics.median(open_times):.2f} s   "
                  f"from_pretrained alone {statistics.median(load_times):.2f} s   "
                  f"ratio {statistics.median(open_ratio):.2f}   (target <= 1.5)")
            print(f"   vs from_pretrained + its first forward pass (no attention weights) "
                  f"{statistics.median(forward_times):.2f} s   ratio {statistics.median(forward_ratio):.2f}")
            app_first_map(folder, load_and_forward, prompt_text, args.rounds)
            tokenizer_rounds(folder, 2 * args.rounds)
        if args.open_only:
            return
        workspace = open_hf_model(folder)
        model, hf = workspace.model.to(args.device), workspace.model.hf
        context = workspace.tokenizer.encode(prompt_text)
        ids = torch.tensor([context], device=args.device)

        def ours_greedy():
            return len(greedy(model, context, max_len=args.new, tokenizer=workspace.tokenizer).token_ids)

        def theirs_greedy():
            with torch.no_grad():
                out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                  max_new_tokens=args.new, pad_token_id=0)
            return out.shape[1] - len(context)

        def ours_beam():
            result = beam_search(model, context, beam_size=5, alpha=0.0, max_len=args.beam_new,
                                 tokenizer=workspace.tokenizer, with_greedy=False)
            return max(node.step for node in result.nodes) + 1

        def theirs_beam():
            with torch.no_grad():
                out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                  num_beams=5, length_penalty=0.0, max_new_tokens=args.beam_new,
                                  pad_token_id=0)
            return out.shape[1] - len(context)

        ours_greedy(), theirs_greedy()  # warm-up
        results = {}
        for name, ours, theirs in (("greedy", ours_greedy, theirs_greedy),
                                   ("beam 5", ours_beam, theirs_beam)):
            ratios, our_rates, their_rates = [], [], []
            for round_index in range(args.rounds):
                pair = [("ours", ours), ("theirs", theirs)]
                if round_index % 2:
                    pair.reverse()  # the machine's speed drifts: alternate who goes first
                rates = {}
                for who, fn in pair:
                    seconds, tokens = timed(fn)
                    rates[who] = tokens / seconds
                our_rates.append(rates["ours"])
                their_rates.append(rates["theirs"])
                ratios.append(rates["ours"] / rates["theirs"])
            results[name] = (statistics.median(our_rates), statistics.median(their_rates),
                             statistics.median(ratios))

    where = (torch.cuda.get_device_name(args.device) if args.device.startswith("cuda")
             else f"{args.threads} threads")
    print(f"torch {torch.__version__}, {where}, prompt {len(context)} tokens, "
          f"{args.rounds} rounds (medians)")
    for name, (ours, theirs, ratio) in results.items():
        print(f"{name:7s} explorer {ours:7.1f} positions/s   generate {theirs:7.1f} positions/s   "
              f"ratio {ratio:.3f}   (target >= 0.9)")


if __name__ == "__main__":
    main()
