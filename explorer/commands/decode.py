"""`explorer decode`: greedy, beam or sampled outputs of a checkpoint, as text or JSON.

Outputs are written as they are decoded (a chunk of sources at a time, flushed), so a long --input
file can be followed and a run that is stopped keeps what it finished; on a terminal, stderr shows
how far it has got. Text output: one best hypothesis per line; with --nbest N, a table of
tab-separated columns under a header (source, rank, score, logprob, hypothesis).
"""

from __future__ import annotations

import argparse
import json
import sys

from explorer.commands.arguments import utf8_text
from explorer.commands.model_args import add_model_source, workspace_from_args
from explorer.errors import UserError
from explorer.runtime import choose_threads

SEQ2SEQ_CHUNK = 16  # sources decoded together in one batched search
NBEST_HEADER = "source\trank\tscore\tlogprob\thypothesis"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_source(parser)
    strategy = parser.add_mutually_exclusive_group()
    strategy.add_argument("--greedy", action="store_true", help="greedy decoding (the default)")
    strategy.add_argument("--beam", type=int, metavar="K", help="beam search with width K")
    strategy.add_argument("--sample", action="store_true", help="sample from the model")
    parser.add_argument("--length-penalty", type=float, default=0.0, metavar="A",
                        help="GNMT length penalty alpha: scores are divided by ((5+len)/6)^A")
    parser.add_argument("--max-len", type=int, default=100, metavar="N",
                        help="most output tokens, <eos> included (default 100)")
    parser.add_argument("--temperature", type=float, default=1.0, metavar="T")
    parser.add_argument("--top-k", type=int, default=0, metavar="K", help="sample from the K best (0: all)")
    parser.add_argument("--top-p", type=float, default=1.0, metavar="P",
                        help="sample from the smallest set of tokens with mass P (nucleus)")
    parser.add_argument("--nbest", type=int, default=1, metavar="N", help="beam: print the N best")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="sampling seed")
    parser.add_argument("--json", action="store_true", help="print JSON with scores, tree, attention")
    parser.add_argument("--input", metavar="FILE", help="read sources (or prompts), one per line")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="CPU threads (default: torch's, one per core, or fewer when the load "
                        "average says other work holds cores)")
    parser.add_argument("text", nargs="*", metavar="TEXT", type=utf8_text,
                        help="source sentences (language models: prompts), one per argument")


def _validate(args) -> None:
    if args.text and args.input:
        raise UserError("give either TEXT or --input FILE, not both")
    if not args.text and not args.input:
        raise UserError("nothing to decode: give TEXT or --input FILE")
    if args.beam is not None and args.beam < 1:
        raise UserError(f"--beam must be at least 1, got {args.beam}")
    if args.nbest < 1:
        raise UserError(f"--nbest must be at least 1, got {args.nbest}")
    if args.nbest > 1 and args.beam is None:
        raise UserError("--nbest needs --beam K")
    if args.beam is not None and args.nbest > args.beam:
        raise UserError(f"--nbest {args.nbest} is larger than the beam width {args.beam}")
    if args.max_len < 1:
        raise UserError(f"--max-len must be at least 1, got {args.max_len}")
    if args.temperature <= 0:
        raise UserError(f"--temperature must be positive, got {args.temperature}")
    if not 0 < args.top_p <= 1:
        raise UserError(f"--top-p must be in (0, 1], got {args.top_p}")
    if args.top_k < 0:
        raise UserError(f"--top-k must be 0 or more, got {args.top_k}")
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads must be at least 1, got {args.threads}")


def _read_inputs(args) -> list[str]:
    if args.text:
        return list(args.text)
    from explorer.data.readers import read_text

    texts = read_text(args.input)
    if not texts:
        raise UserError(f"{args.input}: no lines to decode")
    return texts


def _chain_tree(hypothesis, root_label: str) -> dict:
    """A greedy or sampled output as a one-path tree, in the beam tree's node format."""
    nodes = [{"id": 0, "parent": None, "step": -1, "token_id": None, "token": root_label,
              "logprob": 0.0, "score": 0.0, "status": "kept", "rank": 0, "attention": None}]
    score = 0.0
    last = len(hypothesis.token_ids) - 1
    for step, (token_id, token, logprob, attention) in enumerate(zip(
        hypothesis.token_ids, hypothesis.tokens, hypothesis.token_logprobs, hypothesis.attention
    )):
        score += logprob
        nodes.append({"id": step + 1, "parent": step, "step": step, "token_id": token_id,
                      "token": token, "logprob": logprob, "score": score,
                      "status": "finished" if step == last else "kept", "rank": 0,
                      "attention": None if attention is None else attention.tolist()})
    return {"nodes": nodes}


def _attention_entries(workspace, context, hypothesis) -> list[dict]:
    from explorer.decoding.scoring import forward_attention

    entries = []
    for snapshot in forward_attention(workspace, context, hypothesis.token_ids):
        for head, weights in enumerate(snapshot.weights):  # (Tq, Tk) per head
            entries.append({"layer": snapshot.layer, "head": head, "kind": snapshot.kind,
                            "rows": snapshot.rows, "cols": snapshot.cols,
                            "weights": weights.tolist()})
    return entries


def _encode_all(workspace, texts, args) -> list[list[int]]:
    """Every input's ids, before the first is decoded: one too long for the model is refused at
    once, naming its line (explorer.decoding.limits), not midway through the output."""
    from explorer.decoding.scoring import encode_context

    def where(i: int) -> str:
        if args.input:
            return f"{args.input}:{i + 1}"
        return f"TEXT {i + 1}" if len(texts) > 1 else "TEXT"

    return [encode_context(workspace, text, where(i)) for i, text in enumerate(texts)]


def _note_unknown(workspace, texts, contexts) -> None:
    """One line on stderr naming the words the vocabulary read as <unk>: "a z q" decoded as
    "a <unk> <unk>" without a word would look like the model's doing."""
    from explorer.analysis.vocabulary import unk_id, unknown_note

    tokenizer = workspace.src_tokenizer or workspace.tokenizer
    unk = unk_id(tokenizer)
    with_unk = [text for text, ids in zip(texts, contexts) if unk is not None and unk in ids]
    note = unknown_note(tokenizer, with_unk)
    if note:
        print(f"explorer decode: {note}", file=sys.stderr)


def _decode_all(workspace, texts, contexts, args):
    """One record per text, yielded a chunk at a time: hypotheses (best first), the tree, and
    what the best attended to."""
    import torch

    from explorer.decoding import beam_search_batch, greedy_batch, sample
    from explorer.decoding.batching import WINDOW, in_order
    from explorer.decoding.scoring import context_labels
    from explorer.decoding.search import is_language_model

    model, tokenizer = workspace.model, workspace.tokenizer
    # prompts of different lengths cannot share a batch, so language models go one by one;
    # sources of a model that pads unsafely share batches of one length (decoding.batching)
    chunk = 1 if is_language_model(model) else SEQ2SEQ_CHUNK
    generator = torch.Generator().manual_seed(args.seed)

    def decode(batch):
        records = []
        if args.beam is not None:
            results = beam_search_batch(model, batch, beam_size=args.beam, alpha=args.length_penalty,
                                        max_len=args.max_len, nbest=args.nbest, tokenizer=tokenizer)
            for context, result in zip(batch, results):
                result.source_tokens = context_labels(workspace, context)
                records.append({"strategy": "beam", **result.to_dict(), "_best": result.best})
        elif args.sample:
            for context in batch:
                drawn = sample(model, context, temperature=args.temperature, top_k=args.top_k,
                               top_p=args.top_p, generator=generator, max_len=args.max_len,
                               tokenizer=tokenizer)
                records.append({"strategy": "sample", "hypotheses": [drawn.hypothesis.to_dict()],
                                "samples": [_sample_step(s, tokenizer) for s in drawn.steps],
                                "_best": drawn.hypothesis})
        else:
            for hypothesis in greedy_batch(model, batch, max_len=args.max_len, tokenizer=tokenizer,
                                           alpha=args.length_penalty):
                records.append({"strategy": "greedy", "hypotheses": [hypothesis.to_dict()],
                                "_best": hypothesis})
        return records

    # samples are drawn in the sources' order, so that a seed gives the same draws
    size = 1 if args.sample else chunk
    for row, record in in_order(model, contexts, size, decode, window=1 if args.sample else WINDOW):
        text, context = texts[row], contexts[row]
        best = record.pop("_best")
        record["source"] = text
        if "tree" not in record:
            root = "<bos>" if not is_language_model(model) or not context else text
            record["tree"] = _chain_tree(best, root)
        if args.json:
            record["attention"] = _attention_entries(workspace, context, best)
        yield record


def _sample_step(step, tokenizer) -> dict:
    ids = [int(i) for i in step.token_ids]
    return {"token_ids": ids, "tokens": tokenizer.tokens(ids), "probs": step.probs.tolist(),
            "chosen": step.chosen}


class Progress:
    """`decoded 40/1000 (12.3/s, 1:18 left)` redrawn on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, stream=None) -> None:
        import time

        self.stream = stream or sys.stderr
        self.total = total
        self.live = total > 1 and bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.perf_counter()

    def update(self, done: int) -> None:
        import time

        if not self.live:
            return
        rate = done / max(time.perf_counter() - self.started, 1e-9)
        left = (self.total - done) / rate if rate else 0.0
        self.stream.write(f"\rdecoded {done}/{self.total} ({rate:.1f}/s, "
                          f"{int(left // 60)}:{int(left % 60):02d} left)")
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()


def _write_text(record: dict, nbest: int, out) -> None:
    hypotheses = record["hypotheses"]
    if nbest == 1:
        out.write(hypotheses[0]["text"] + "\n")
        return
    source = record["source"].replace("\t", " ")
    for rank, hyp in enumerate(hypotheses[:nbest], 1):
        out.write(f"{source}\t{rank}\t{hyp['normalized_score']:.4f}\t{hyp['score']:.4f}\t"
                  f"{hyp['text']}\n")


def run(args) -> int:
    import torch

    _validate(args)
    threads = choose_threads(args.threads)
    if threads.note:
        print(threads.note, file=sys.stderr)
    torch.set_num_threads(threads.threads)
    workspace = workspace_from_args(args)
    texts = _read_inputs(args)
    out = sys.stdout
    contexts = _encode_all(workspace, texts, args)
    _note_unknown(workspace, texts, contexts)
    records = _decode_all(workspace, texts, contexts, args)
    progress = Progress(len(texts))
    # several JSON records make a list, written an element at a time
    as_list = args.json and len(texts) > 1
    if as_list:
        out.write("[")
    elif not args.json and args.nbest > 1:
        out.write(NBEST_HEADER + "\n")
    try:
        for done, record in enumerate(records, 1):
            if args.json:
                out.write(("" if done == 1 else ",\n") + json.dumps(record))
            else:
                _write_text(record, args.nbest, out)
            out.flush()  # a reader (tail -f, a pipe) sees it now; a killed run keeps it
            progress.update(done)
    except ValueError as exc:  # e.g. a source longer than the model's positions
        raise UserError(str(exc)) from exc
    finally:
        progress.close()
    out.write("]\n" if as_list else "\n" if args.json else "")
    out.flush()
    return 0
