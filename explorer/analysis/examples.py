"""Every example of a data set with its scores: the Examples panel's and `explorer evaluate`'s core.

A seq2seq example is a (source, reference) pair: its greedy (or beam) output, the teacher-forced
loss of the reference (what `explorer score` computes, <eos> included), token accuracy, sacreBLEU's
sentence BLEU and chrF, and the lengths. A language-model example is a line (or a window of
`context` tokens of a long one): its loss and perplexity. Evaluation runs in batches as a generator
of partial tables, so a caller shows progress and stops between batches.

Everything here is plain numpy: an `ExampleTable` is one array per column, which is what a Qt
table model sorts and filters without a widget per cell. Slices are regular-expression and length
filters over those columns; corpus BLEU of a slice sums the rows' sacreBLEU statistics, so it
equals sacreBLEU's corpus BLEU on the slice without tokenizing anything again.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from explorer.analysis.example_filters import JoinedTexts, SliceFilter, ignores_case, matches  # noqa: F401
from explorer.durable import replace_file
from explorer.errors import UserError

BATCH_SIZE = 64
TEXT_COLUMNS = ("source", "reference", "output")
# Columns shown (and written) per kind of model, in order. "source" is an LM example's text.
SEQ2SEQ_COLUMNS = ("source", "reference", "output", "loss", "loss_per_token", "token_accuracy",
                   "bleu", "chrf", "source_length", "reference_length", "output_length")
LM_COLUMNS = ("source", "loss", "loss_per_token", "perplexity", "token_accuracy", "source_length")
LENGTH_COLUMNS = ("source_length", "reference_length", "output_length")


@dataclass
class ExampleTable:
    """One numpy array per column, all of one length. `bleu_stats` (N, 2 + 2n) holds sacreBLEU's
    sufficient statistics per row (lengths, clipped n-gram counts, totals); `tokens` the
    teacher-forced per-token results, flat: row, target id, label, loss and correct."""

    columns: dict[str, np.ndarray]
    seq2seq: bool
    step: int = 0
    bleu_tokenize: str = "13a"
    bleu_stats: np.ndarray | None = None  # (N, 10) int64, seq2seq only
    tokens: dict[str, np.ndarray] = field(default_factory=dict)  # flat per target token
    # per text column, made once per table (by `prepare` in the job that builds it, else on first
    # use): each row's rank for sorting, and the texts joined for searching, per (name, lowercase)
    _ranks: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)
    _joined: dict[tuple[str, bool], JoinedTexts] = field(default_factory=dict, init=False,
                                                         repr=False, compare=False)
    _matches: dict[tuple[str, str], np.ndarray] = field(default_factory=dict, init=False,
                                                        repr=False, compare=False)  # see `matches`

    def __len__(self) -> int:
        return len(self.columns["source"])

    @property
    def names(self) -> tuple[str, ...]:
        return SEQ2SEQ_COLUMNS if self.seq2seq else LM_COLUMNS

    def column(self, name: str) -> np.ndarray:
        if name not in self.columns:
            raise UserError(f"no column {name!r}; the columns are {', '.join(self.names)}")
        return self.columns[name]

    @property
    def text_names(self) -> tuple[str, ...]:
        return tuple(name for name in self.names if name in TEXT_COLUMNS)

    def joined_texts(self, name: str, lower: bool) -> JoinedTexts:
        """Column `name`'s texts (lowercased when `lower`: see `ignores_case`) joined for searching."""
        if (name, lower) not in self._joined:
            column = self.column(name)
            texts = [t.lower() for t in column] if lower else list(column)
            self._joined[name, lower] = JoinedTexts(texts)
        return self._joined[name, lower]

    def text_ranks(self, name: str) -> np.ndarray:
        """(N,) int64: each row's place when text column `name` is sorted case-insensitively
        (stable), so that sorting rows by it is an argsort of ints. Ranks the lowercased texts the
        search reads (str.lower, once; np.char.lower takes 70 ms more on 100,000 rows)."""
        if name not in self._ranks:
            lowered = np.array(self.joined_texts(name, True).texts, dtype=str)
            ranks = np.empty(len(lowered), dtype=np.int64)
            ranks[np.argsort(lowered, kind="stable")] = np.arange(len(lowered))
            self._ranks[name] = ranks
        return self._ranks[name]

    def prepare(self) -> ExampleTable:
        """Make every text column's sort ranks and joined texts now, in the thread that built the
        table (the job runner's), so that the GUI thread's first sort or filter of it does not
        pay for them (200 ms on 100,000 rows). Returns the table."""
        for name in self.text_names:
            self.text_ranks(name)
            self.joined_texts(name, False)
        return self

    @property
    def prepared(self) -> bool:
        return all(name in self._ranks and (name, True) in self._joined and (name, False) in self._joined
                   for name in self.text_names)

    def take(self, rows: np.ndarray) -> "ExampleTable":
        """The rows `rows` (indices), in that order; token rows are renumbered to match."""
        rows = np.asarray(rows, dtype=np.int64)
        columns = {name: values[rows] for name, values in self.columns.items()}
        stats = None if self.bleu_stats is None else self.bleu_stats[rows]
        tokens = {}
        if self.tokens:
            new_index = np.full(len(self), -1, dtype=np.int64)
            new_index[rows] = np.arange(len(rows))
            keep = new_index[self.tokens["row"]] >= 0
            tokens = {name: values[keep] for name, values in self.tokens.items()}
            tokens["row"] = new_index[tokens["row"]]
        return ExampleTable(columns, self.seq2seq, self.step, self.bleu_tokenize, stats, tokens)

    def rows(self) -> Iterator[dict]:
        for i in range(len(self)):
            yield {name: _plain(self.columns[name][i]) for name in self.names}

    def write(self, path: str | Path) -> Path:
        """Every row to `path`: CSV (.csv) or JSON lines (.jsonl / .json)."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".jsonl", ".json"):
            raise UserError(f"{path}: write examples to a .csv, .jsonl or .json file")
        path.parent.mkdir(parents=True, exist_ok=True)

        def write(temporary: Path) -> None:
            with open(temporary, "w", encoding="utf-8", newline="") as out:
                if suffix == ".csv":
                    writer = csv.writer(out)
                    writer.writerow(self.names)
                    for row in self.rows():
                        writer.writerow(row.values())
                elif suffix == ".jsonl":
                    for row in self.rows():
                        out.write(json.dumps(row, ensure_ascii=False) + "\n")
                else:
                    json.dump(list(self.rows()), out, ensure_ascii=False, indent=1)

        return replace_file(path, write)  # a symlink at the name is replaced, not followed


def _plain(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if math.isnan(value) else float(value)
    return value


def concat(tables: Sequence[ExampleTable]) -> ExampleTable:
    """The rows of `tables` one after another (batches of one evaluation)."""
    if not tables:
        raise UserError("nothing was evaluated: no examples")
    first = tables[0]
    columns = {name: np.concatenate([t.columns[name] for t in tables]) for name in first.columns}
    stats = None if first.bleu_stats is None else np.concatenate([t.bleu_stats for t in tables])
    tokens = {}
    if first.tokens:
        offsets = np.cumsum([0] + [len(t) for t in tables[:-1]])
        tokens = {name: np.concatenate([t.tokens[name] for t in tables]) for name in first.tokens}
        tokens["row"] = np.concatenate([t.tokens["row"] + offset for t, offset in zip(tables, offsets)])
    return ExampleTable(columns, first.seq2seq, first.step, first.bleu_tokenize, stats, tokens)


# ---- evaluation ---------------------------------------------------------------------------------


def examples_of(workspace, split: str = "val") -> list[tuple[str, str]]:
    """The workspace's own examples of `split` (pairs; an LM's lines have target "")."""
    data = getattr(workspace, "data", None)
    pairs = list(getattr(data, split, None) or []) if data is not None else []
    if not pairs:
        raise UserError(f"this model has no {split} examples loaded: open a data file to evaluate")
    return pairs


def read_examples(workspace, data: str | None = None, src: str | None = None,
                  tgt: str | None = None) -> list[tuple[str, str]]:
    """Examples from files: a TSV of pairs or a text file (`data`), or line-aligned `src` and `tgt`
    files. A seq2seq model needs pairs; a language model reads every line of `data` as one text."""
    from explorer.data import readers

    if src is not None or tgt is not None:
        if src is None or tgt is None:
            raise UserError("--src and --tgt go together")
        return readers.read_parallel(src, tgt)
    if data is None:
        raise UserError("give a data file, or --src and --tgt files")
    if workspace.is_seq2seq:
        if not readers.looks_like_tsv(data):
            raise UserError(f"{data}: a translation model needs source<TAB>reference lines "
                            "(or --src and --tgt files)")
        return readers.read_tsv(data)
    return [(line, "") for line in readers.read_text(data)]


def evaluate_batches(workspace, pairs: Sequence[tuple[str, str]], *, batch_size: int = BATCH_SIZE,
                     beam: int = 1, max_len: int | None = None,
                     context: int | None = None) -> Iterator[tuple[ExampleTable, np.ndarray]]:
    """(table of one batch, the indices of its pairs) per batch; stop iterating to cancel.
    Batches group pairs of similar reference length, so that a batch's greedy decoding stops
    near its rows' own limits. A language model's long line may give several rows (windows)."""
    from explorer.decoding.batching import handles_padding

    if not pairs:
        raise UserError("there are no examples to evaluate")
    if beam < 1:
        raise UserError(f"--beam must be at least 1, got {beam}")
    order = np.argsort([len(reference) for _, reference in pairs], kind="stable")
    if workspace.is_seq2seq and not handles_padding(workspace.model):  # batches of one length
        encode = (workspace.src_tokenizer or workspace.tokenizer).encode
        order = np.lexsort(([len(r) for _, r in pairs], [len(encode(s)) for s, _ in pairs]))
    for start in range(0, len(pairs), batch_size):
        rows = order[start : start + batch_size]
        chunk = [pairs[i] for i in rows]
        if workspace.is_seq2seq:
            part = _seq2seq_batch(workspace, chunk, beam, max_len)
        else:
            windows = [_lm_windows(workspace, [text], context) for text, _ in chunk]
            part = _lm_batch(workspace, [w for text_windows in windows for w in text_windows])
            rows = np.repeat(rows, [len(w) for w in windows])  # each window is its line's row
        yield part, rows


def evaluate_examples(workspace, pairs: Sequence[tuple[str, str]], *,
                      progress: Callable[[int, int], None] | None = None,
                      should_stop: Callable[[], bool] | None = None, **options) -> ExampleTable | None:
    """The whole table, rows in the order of `pairs` (None when `should_stop` said stop first);
    `progress(done, total)` after every batch, counted in examples."""
    parts, rows, done = [], [], 0
    for part, part_rows in evaluate_batches(workspace, pairs, **options):
        if should_stop is not None and should_stop():
            return None
        parts.append(part)
        rows.append(part_rows)
        done += len(np.unique(part_rows))
        if progress is not None:
            progress(done, len(pairs))
    table = concat(parts)
    table = table.take(np.argsort(np.concatenate(rows), kind="stable"))  # back to the pairs' order
    table.step = int(getattr(workspace, "step", 0) or 0)
    return table


def _target_ids(workspace, text: str) -> list[int]:
    from seqmodels.config import EOS_ID

    encode_target = getattr(workspace.tokenizer, "encode_target", None)  # HF: labels with eos
    if encode_target is not None:
        return list(encode_target(text))
    return list(workspace.tokenizer.encode(text)) + [EOS_ID]


def _padded(rows: list[list[int]], pad_id: int):
    """(B, T) right-padded ids and the (B, T) mask of padding."""
    import itertools

    import torch

    lengths = np.fromiter(map(len, rows), np.int64, len(rows))
    padding = np.arange(lengths.max())[None, :] >= lengths[:, None]  # (B, T)
    ids = np.full(padding.shape, pad_id, dtype=np.int64)
    ids[~padding] = np.fromiter(itertools.chain.from_iterable(rows), np.int64, lengths.sum())
    return torch.from_numpy(ids), torch.from_numpy(padding)


def teacher_forced(model, contexts: list[list[int]], targets: list[list[int]]):
    """Per row, log p of each target id (the teacher-forced logprobs `score_ids` gives, one batch)
    and whether it was the model's argmax: lists of float64 and bool arrays. The softmax runs in
    float32 over the whole batch (a float64 one over (B, T, V) costs more than the forward pass);
    the per-token results then sum in float64, within 1e-6 of `score`'s."""
    import torch
    import torch.nn.functional as F

    from explorer.decoding.incremental import inference, is_language_model, special_ids

    from explorer.decoding.batching import by_length, handles_padding

    if not is_language_model(model) and not handles_padding(model) and len(
            {len(c) for c in contexts}) > 1:  # pads would change an answer: one length at a time
        rows = by_length(model, contexts,
                         lambda part: list(zip(*teacher_forced(model, *map(list, zip(*part))))),
                         items=list(zip(contexts, targets)))
        return [p for p, _ in rows], [h for _, h in rows]
    start_id, _, pad_id = special_ids(model)
    device = next(model.parameters()).device
    with inference(model):
        if is_language_model(model):
            fed = [(list(c) if c else [start_id]) + t[:-1] for c, t in zip(contexts, targets)]
            tokens, _ = _padded(fed, pad_id)
            logits = model(tokens.to(device))  # (B, T, V); right padding never reaches the left
            offsets = [len(c) - 1 if c else 0 for c in contexts]
        else:
            src, src_pad = _padded(contexts, pad_id)
            tgt_in, tgt_pad = _padded([[start_id] + t[:-1] for t in targets], pad_id)
            logits = model(src.to(device), tgt_in.to(device), src_pad.to(device), tgt_pad.to(device))
            offsets = [0] * len(targets)  # (B, T, V)
    # each row's targets where they are predicted: positions offset .. offset + len - 1
    rows = torch.tensor(np.repeat(np.arange(len(targets)), [len(t) for t in targets]))  # (N,)
    positions = torch.tensor(np.concatenate([np.arange(o, o + len(t)) for o, t in zip(offsets, targets)]))
    ids = torch.tensor([i for t in targets for i in t])  # (N,)
    predicted = logits[rows.to(device), positions.to(device)]  # (N, V)
    logprobs = F.log_softmax(predicted.float(), dim=-1)  # (N, V)
    flat = logprobs.gather(1, ids.to(device)[:, None])[:, 0].double().cpu().numpy()  # (N,)
    hits = (logprobs.argmax(dim=-1).cpu() == ids).numpy()  # (N,)
    bounds = np.cumsum([len(t) for t in targets])[:-1]
    return np.split(flat, bounds), np.split(hits, bounds)


def _token_columns(workspace, targets, picked, correct, first_row: int) -> dict[str, np.ndarray]:
    from explorer.decoding.search import labels

    flat_ids = [i for t in targets for i in t]
    return {
        "row": np.repeat(np.arange(len(targets)) + first_row, [len(t) for t in targets]),
        "id": np.asarray(flat_ids, dtype=np.int64),
        "label": np.asarray(labels(workspace.tokenizer, flat_ids), dtype=object),
        "loss": -np.concatenate(picked),
        "correct": np.concatenate(correct),
    }


def _loss_columns(picked, correct) -> dict[str, np.ndarray]:
    totals = np.array([-p.sum() for p in picked])
    counts = np.array([len(p) for p in picked])
    return {"loss": totals, "loss_per_token": totals / counts,
            "token_accuracy": np.array([c.mean() for c in correct])}


def _seq2seq_batch(workspace, chunk, beam: int, max_len: int | None) -> ExampleTable:
    from explorer.decoding.scoring import encode_context
    from explorer.decoding.search import beam_search_batch, greedy_ids
    from explorer.decoding.file_bleu import bleu_tokenization

    model, tokenizer = workspace.model, workspace.tokenizer
    sources = [s for s, _ in chunk]
    references = [r for _, r in chunk]
    contexts = [encode_context(workspace, s) for s in sources]
    targets = [_target_ids(workspace, r) for r in references]
    # each row's own limit (twice its reference, + 10), as if decoded alone
    limits = [max_len or 2 * len(t) + 10 for t in targets]
    if beam > 1:
        results = beam_search_batch(model, contexts, beam_size=beam, max_len=max(limits),
                                    nbest=1, tokenizer=tokenizer, with_greedy=False)
        outputs = [(r.best.token_ids, r.best.finished) for r in results]
    else:
        outputs = greedy_ids(model, contexts, limits)
    picked, correct = teacher_forced(model, contexts, targets)
    texts = [tokenizer.decode(ids[:-1] if finished else ids) for ids, finished in outputs]
    tokenize = bleu_tokenization(workspace)
    stats = bleu_statistics(texts, references, tokenize)
    columns = {
        "source": np.asarray(sources, dtype=object),
        "reference": np.asarray(references, dtype=object),
        "output": np.asarray(texts, dtype=object),
        **_loss_columns(picked, correct),
        "bleu": sentence_bleu_from_stats(stats, tokenize),
        "chrf": np.array([sentence_chrf(h, r) for h, r in zip(texts, references)]),
        # lengths in the model's own tokens, without <eos>
        "source_length": np.array([len(c) - 1 for c in contexts]),
        "reference_length": np.array([len(t) - 1 for t in targets]),
        "output_length": np.array([len(ids) - int(finished) for ids, finished in outputs]),
    }
    return ExampleTable(columns, True, bleu_tokenize=tokenize, bleu_stats=stats,
                        tokens=_token_columns(workspace, targets, picked, correct, 0))


def _lm_windows(workspace, texts: list[str], context: int | None) -> list[list[int]]:
    """Each text's target ids (+ <eos>), cut into windows of at most `context` ids (default: the
    model's positions), so that no window is longer than the model reads."""
    from explorer.families import family_of

    family = family_of(workspace.model)
    positions = family.max_len(workspace.model.config) if family.has_positions else None
    size = context or positions or 10**9
    if positions is not None:
        size = min(size, positions)
    windows = []
    for text in texts:
        ids = _target_ids(workspace, text)
        windows.extend(ids[start : start + size] for start in range(0, len(ids), size))
    return windows


def _lm_batch(workspace, windows: list[list[int]]) -> ExampleTable:
    from seqmodels.config import EOS_ID

    picked, correct = teacher_forced(workspace.model, [[] for _ in windows], windows)
    decode = workspace.tokenizer.decode
    columns = {
        "source": np.asarray([decode([i for i in w if i != EOS_ID]) for w in windows], dtype=object),
        **_loss_columns(picked, correct),
        "source_length": np.array([len(w) for w in windows]),
    }
    columns["perplexity"] = np.exp(np.minimum(columns["loss_per_token"], 700.0))
    return ExampleTable(columns, False,
                        tokens=_token_columns(workspace, windows, picked, correct, 0))


# ---- sacreBLEU ----------------------------------------------------------------------------------


def _bleu(tokenize: str, effective_order: bool):
    from explorer.metrics.bleu import _metric

    return _metric(tokenize, effective_order=effective_order)


def bleu_statistics(hypotheses: Sequence[str], references: Sequence[str], tokenize: str) -> np.ndarray:
    """(N, 10) sacreBLEU sufficient statistics of each (hypothesis, reference) pair."""
    rows = _bleu(tokenize, False)._extract_corpus_statistics(list(hypotheses), [list(references)])
    return np.asarray(rows, dtype=np.int64).reshape(len(hypotheses), -1)


def sentence_bleu_from_stats(stats: np.ndarray, tokenize: str) -> np.ndarray:
    """sacreBLEU's sentence_bleu (effective order, exp smoothing) from each row's statistics."""
    metric = _bleu(tokenize, True)
    return np.array([metric._compute_score_from_stats(list(map(int, row))).score for row in stats])


def sentence_chrf(hypothesis: str, reference: str) -> float:
    import sacrebleu

    return float(sacrebleu.sentence_chrf(hypothesis, [reference]).score)


def corpus_bleu(table: ExampleTable, rows: np.ndarray | None = None) -> float:
    """sacreBLEU corpus BLEU of `rows` (default: all), from the summed statistics."""
    if table.bleu_stats is None:
        raise UserError("BLEU needs a translation model's outputs; this table is a language model's")
    stats = table.bleu_stats if rows is None else table.bleu_stats[rows]
    metric = _bleu(table.bleu_tokenize, False)
    return float(metric._compute_score_from_stats([int(v) for v in stats.sum(axis=0)]).score)


# ---- slices -------------------------------------------------------------------------------------


@dataclass
class SliceSummary:
    count: int
    mean_loss: float  # per token, averaged over examples
    mean_accuracy: float
    bleu: float | None  # corpus BLEU (seq2seq)
    perplexity: float | None  # exp of the token-weighted mean loss (LMs)

    def format(self) -> str:
        parts = [f"{self.count} examples", f"mean loss/token {self.mean_loss:.4f}",
                 f"token accuracy {self.mean_accuracy:.3f}"]
        if self.bleu is not None:
            parts.insert(1, f"BLEU {self.bleu:.2f}")
        if self.perplexity is not None:
            parts.append(f"perplexity {self.perplexity:.2f}")
        return ", ".join(parts)


def summarize(table: ExampleTable, rows: np.ndarray | None = None) -> SliceSummary:
    """Corpus BLEU, mean loss and count of `rows` (default: all); an empty slice is a UserError."""
    rows = np.arange(len(table)) if rows is None else np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        raise UserError("the slice is empty: no example matches its filters")
    per_token = table.columns["loss_per_token"][rows]
    perplexity = None
    if not table.seq2seq:
        tokens = table.columns["loss"][rows].sum() / (table.columns["loss"][rows] / per_token).sum()
        perplexity = float(np.exp(min(tokens, 700.0)))
    return SliceSummary(
        count=len(rows),
        mean_loss=float(per_token.mean()),
        mean_accuracy=float(table.columns["token_accuracy"][rows].mean()),
        bleu=corpus_bleu(table, rows) if table.seq2seq else None,
        perplexity=perplexity,
    )


# ---- where it fails -----------------------------------------------------------------------------


@dataclass
class LengthBucket:
    low: int  # source lengths low <= n <= high
    high: int
    rows: np.ndarray  # indices into the table
    bleu: float | None
    mean_loss: float

    @property
    def label(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


def length_buckets(table: ExampleTable, width: int | None = None, count: int = 6,
                   column: str = "source_length") -> list[LengthBucket]:
    """Rows grouped by `column` into buckets of `width` tokens (default: about `count` buckets
    over the lengths seen); every row falls in exactly one bucket; empty buckets are left out."""
    if len(table) == 0:
        raise UserError("there are no examples to bucket")
    lengths = table.column(column).astype(np.int64)
    low, high = int(lengths.min()), int(lengths.max())
    width = width or max(1, math.ceil((high - low + 1) / count))
    index = (lengths - low) // width
    buckets = []
    for k in np.unique(index):
        rows = np.flatnonzero(index == k)
        start = low + int(k) * width
        bleu = corpus_bleu(table, rows) if table.seq2seq else None
        buckets.append(LengthBucket(start, start + width - 1, rows, bleu,
                                    float(table.columns["loss_per_token"][rows].mean())))
    return buckets


@dataclass
class TokenErrors:
    labels: np.ndarray  # the target token
    counts: np.ndarray  # occurrences in the references
    error_rate: np.ndarray  # share of occurrences the model did not predict (teacher forcing)
    mean_loss: np.ndarray  # mean -log p over its occurrences
    rows: list[np.ndarray]  # the table rows it occurs in


def worst_tokens(table: ExampleTable, by: str = "error_rate", top: int = 20,
                 min_count: int = 3) -> TokenErrors:
    """The target tokens with the highest error rate (or mean loss), seen at least `min_count`
    times, worst first."""
    if by not in ("error_rate", "mean_loss"):
        raise UserError(f"rank tokens by error_rate or mean_loss, not {by!r}")
    tokens = table.tokens
    if not tokens or len(tokens["id"]) == 0:
        raise UserError("no target tokens were scored")
    ids, inverse, counts = np.unique(tokens["id"], return_inverse=True, return_counts=True)
    errors = np.bincount(inverse, weights=~tokens["correct"], minlength=len(ids))
    losses = np.bincount(inverse, weights=tokens["loss"], minlength=len(ids))
    error_rate, mean_loss = errors / counts, losses / counts
    key = error_rate if by == "error_rate" else mean_loss
    eligible = np.flatnonzero(counts >= min_count)
    order = eligible[np.lexsort((-counts[eligible], -key[eligible]))][:top]
    first_label = {}
    for token_id, label in zip(tokens["id"], tokens["label"]):
        first_label.setdefault(int(token_id), label)
    return TokenErrors(
        labels=np.asarray([first_label[int(ids[k])] for k in order], dtype=object),
        counts=counts[order], error_rate=error_rate[order], mean_loss=mean_loss[order],
        rows=[np.unique(tokens["row"][inverse == k]) for k in order],
    )


@dataclass
class Comparison:
    """Two evaluations of the same examples: per example `after - before` of a metric."""

    metric: str
    before: np.ndarray
    after: np.ndarray
    order: np.ndarray  # rows by change, most improved first (for loss: the largest drop first)

    @property
    def change(self) -> np.ndarray:
        return self.after - self.before


def compare(before: ExampleTable, after: ExampleTable, metric: str | None = None) -> Comparison:
    """Per-example change of BLEU (seq2seq) or loss per token (LMs) between two evaluations."""
    if len(before) != len(after) or not np.array_equal(before.columns["source"], after.columns["source"]):
        raise UserError("the two evaluations are of different examples: compare the same data set")
    metric = metric or ("bleu" if before.seq2seq else "loss_per_token")
    a, b = before.column(metric).astype(float), after.column(metric).astype(float)
    improvement = (b - a) if metric in ("bleu", "chrf", "token_accuracy") else (a - b)
    return Comparison(metric, a, b, np.argsort(-improvement, kind="stable"))
