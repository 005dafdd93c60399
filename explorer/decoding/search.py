"""Greedy decoding, sampling (temperature, top-k, top-p) and beam search with its full tree.

All strategies drive a model through its incremental API (`begin` / `advance_model` in
explorer.decoding.incremental, over `model.start` and `model.step`; docs/architecture.md).
A "context" is what the output is conditioned on: for encoder-decoders the source ids
(`tokens + [<eos>]`), for language models (`is_lm` in explorer.families) the prompt ids, fed
through `step` first (an empty prompt becomes `[<bos>]`). Beam search advances every hypothesis of every source in one
`step` call and reorders the cached state with `seqmodels.state.reorder_state`; the Python loops below
only do bookkeeping over the 2k ranked candidates.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from explorer.decoding.batching import by_length, length_groups
from explorer.decoding.incremental import (
    advance_model,
    attention_row,
    begin,
    effective_max_len,
    inference,
    is_language_model,
    special_ids,
)
from explorer.decoding.types import (
    BeamNode,
    BeamResult,
    Hypothesis,
    SampleResult,
    SampleStep,
    length_penalty,
    node_path,
)
from seqmodels.config import EOS_ID
from seqmodels.state import reorder_state


def labels(tokenizer, ids: list[int]) -> list[str]:
    if tokenizer is None:
        return [str(i) for i in ids]
    return list(tokenizer.tokens(list(ids)))


def make_hypothesis(tokenizer, ids, logprobs, attention, alpha: float, finished: bool,
                    eos_id: int = EOS_ID) -> Hypothesis:
    ids = [int(i) for i in ids]
    words = ids[:-1] if ids and ids[-1] == eos_id else ids
    text = tokenizer.decode(words) if tokenizer is not None else " ".join(map(str, words))
    total = float(sum(logprobs))
    return Hypothesis(
        tokens=labels(tokenizer, ids),
        token_ids=ids,
        text=text,
        score=total,
        normalized_score=total / length_penalty(len(ids), alpha),
        token_logprobs=[float(p) for p in logprobs],
        finished=finished,
        attention=list(attention),
    )


def truncated_distribution(logits: torch.Tensor, temperature: float, top_k: int, top_p: float):
    """Sorted support and renormalised probabilities after temperature, top-k, then top-p.

    logits (V,) -> (token_ids (S,), probs (S,)). top_k <= 0 keeps all; top_p keeps the smallest
    most-probable prefix whose mass reaches top_p (always at least one token).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top-p must be in (0, 1], got {top_p}")
    probs = F.softmax(logits.double() / temperature, dim=-1)
    sorted_probs, sorted_ids = probs.sort(descending=True)
    if top_k > 0:
        sorted_probs, sorted_ids = sorted_probs[:top_k], sorted_ids[:top_k]
        sorted_probs = sorted_probs / sorted_probs.sum()
    if top_p < 1:
        mass_before = sorted_probs.cumsum(0) - sorted_probs  # mass of strictly better tokens
        keep = int((mass_before < top_p).sum().item())
        sorted_probs, sorted_ids = sorted_probs[:keep], sorted_ids[:keep]
        sorted_probs = sorted_probs / sorted_probs.sum()
    return sorted_ids, sorted_probs


class TokenByToken:
    """Greedy or sampled decoding of a batch of contexts, one token per row per `advance()`."""

    def __init__(self, model, contexts, *, max_len=64, tokenizer=None, sample=False,
                 temperature=1.0, top_k=0, top_p=1.0, generator=None):
        self.model, self.tokenizer, self.contexts = model, tokenizer, [list(c) for c in contexts]
        self.max_len = min(effective_max_len(model, c, max_len) for c in self.contexts)
        self.sample, self.temperature, self.top_k, self.top_p = sample, temperature, top_k, top_p
        self.generator = generator
        _, self.eos_id, self.pad_id = special_ids(model)
        rows = len(self.contexts)
        self.ids: list[list[int]] = [[] for _ in range(rows)]
        self.logprobs: list[list[float]] = [[] for _ in range(rows)]
        self.attention: list[list] = [[] for _ in range(rows)]
        self.distributions: list[list[SampleStep]] = [[] for _ in range(rows)]
        with inference(model):
            self.state, self.next_logprobs, self.next_attn = begin(model, self.contexts)

    @property
    def done(self) -> bool:
        return all(self._row_done(row) for row in range(len(self.ids)))

    def _row_done(self, row: int) -> bool:
        ids = self.ids[row]
        return len(ids) >= self.max_len or (bool(ids) and ids[-1] == self.eos_id)

    def _choose(self, row: int) -> int:
        if not self.sample:
            return int(self.next_logprobs[row].argmax())
        support, probs = truncated_distribution(  # on the CPU, where the seeded generator lives
            self.next_logprobs[row].cpu(), self.temperature, self.top_k, self.top_p
        )
        pick = torch.multinomial(probs, 1, generator=self.generator).item()
        token = int(support[pick])
        self.distributions[row].append(SampleStep(support.numpy(), probs.numpy(), token))
        return token

    def advance(self, force: int | None = None) -> bool:
        """Choose one token per unfinished row, or feed `force` to every one of them (a what-if:
        its log-probability is still the model's own); returns False once every row is done."""
        if self.done:
            return False
        rows = range(len(self.ids))
        active = [row for row in rows if not self._row_done(row)]
        if force is not None:
            choices = {row: int(force) for row in active}
        elif self.sample:
            choices = {row: self._choose(row) for row in active}
        else:
            best = self.next_logprobs.argmax(dim=-1).tolist()  # (B,) one op for the whole batch
            choices = {row: best[row] for row in active}
        # finished rows are fed <pad> to keep the batch rectangular; their outputs are ignored
        feed = [choices.get(row, self.pad_id) for row in rows]
        index = torch.tensor(feed, device=self.next_logprobs.device)[:, None]  # (B, 1)
        chosen = self.next_logprobs.gather(1, index)[:, 0].tolist()  # (B,)
        for row in active:
            self.ids[row].append(feed[row])
            self.logprobs[row].append(chosen[row])
            self.attention[row].append(attention_row(self.next_attn, row, len(self.contexts[row])))
        if not self.done:
            with inference(self.model):
                self.state, self.next_logprobs, self.next_attn = advance_model(
                    self.model, self.state, feed
                )
        return not self.done

    def hypothesis(self, row: int = 0, alpha: float = 0.0) -> Hypothesis:
        finished = bool(self.ids[row]) and self.ids[row][-1] == self.eos_id
        return make_hypothesis(self.tokenizer, self.ids[row], self.logprobs[row],
                               self.attention[row], alpha, finished, self.eos_id)


class SourceBeam:
    """One source's search: its tree of nodes, live hypotheses (node ids, best first), finished list."""

    def __init__(self, context: list[int], root_id: int, root_label: str, eos_id: int = EOS_ID):
        self.context, self.eos_id = context, eos_id
        self.nodes = [BeamNode(0, None, -1, root_id, root_label, 0.0, 0.0, "kept")]
        self.live: list[int] = [0]
        self.finished: list[Hypothesis] = []
        self.done = False

    def add(self, **fields) -> BeamNode:
        node = BeamNode(id=len(self.nodes), **fields)
        self.nodes.append(node)
        return node

    def hypothesis(self, node_id: int, tokenizer, alpha: float) -> Hypothesis:
        chain = node_path(self.nodes, node_id)
        return make_hypothesis(
            tokenizer,
            [n.token_id for n in chain],
            [n.logprob for n in chain],
            [n.attention for n in chain],
            alpha,
            finished=bool(chain) and chain[-1].token_id == self.eos_id,
            eos_id=self.eos_id,
        )

    def ranked_finished(self) -> list[Hypothesis]:
        return sorted(self.finished, key=lambda h: h.normalized_score, reverse=True)

    def cannot_improve(self, beam_size: int, alpha: float, length: int, max_len: int) -> bool:
        """True when no continuation of the best live hypothesis can beat the k-th best finished one.

        Log-probs are <= 0, so a continuation's raw score is at most the live score s; divided by
        lp(L) for a final length L in (length, max_len], s / lp(L) is largest at L = max_len when
        alpha > 0 and at L = length + 1 when alpha < 0.
        """
        if len(self.finished) < beam_size or not self.live:
            return False
        worst_kept = self.ranked_finished()[beam_size - 1].normalized_score
        best_live = self.nodes[self.live[0]].score
        final_len = max_len if alpha > 0 else length + 1
        return best_live / length_penalty(final_len, alpha) <= worst_kept


class BeamSearch:
    """Beam search over a batch of contexts, advanced one output position per `advance()`.

    Every step ranks, per source, all (live hypothesis, token) pairs by cumulative log-probability
    and records the top 2k as nodes: an <eos> ranked within the top k finishes its hypothesis (it
    leaves the beam, fairseq/HF style), other tokens fill the k live slots in rank order and the rest
    are pruned. At the last allowed position the chosen live ones finish without <eos>. A source
    stops when it has no live hypothesis, reaches max_len, or `SourceBeam.cannot_improve`.
    """

    def __init__(self, model, contexts, *, beam_size=5, alpha=0.0, max_len=64, tokenizer=None):
        if beam_size < 1:
            raise ValueError(f"beam size must be at least 1, got {beam_size}")
        self.model, self.tokenizer = model, tokenizer
        self.k, self.alpha = beam_size, alpha
        contexts = [list(c) for c in contexts]
        self.max_len = min(effective_max_len(model, c, max_len) for c in contexts)
        lm = is_language_model(model)
        start_id, self.eos_id, _ = special_ids(model)
        roots = [(c[-1] if lm and c else start_id) for c in contexts]
        self.beams = [SourceBeam(c, r, labels(tokenizer, [r])[0], self.eos_id)
                      for c, r in zip(contexts, roots)]
        self.active = list(range(len(contexts)))  # sources still searching, in row-block order
        self.width = 1  # rows per active source: 1 before the first step, k after
        self.step_index = 0  # the output position the next advance() fills
        with inference(model):
            self.state, self.next_logprobs, self.next_attn = begin(model, contexts)
        self.beam_scores = torch.zeros(len(contexts), dtype=torch.float64,
                                       device=self.next_logprobs.device)  # (rows,)

    @property
    def done(self) -> bool:
        return not self.active

    def advance(self) -> bool:
        """Expand every live hypothesis by one token; returns False once every source is done."""
        if not self.active:
            return False
        vocab = self.next_logprobs.size(1)
        width = self.width
        candidates = self.beam_scores[:, None] + self.next_logprobs  # (rows, V)
        candidates = candidates.view(len(self.active), width * vocab)  # (A, width*V)
        top_scores, top_index = candidates.topk(min(2 * self.k, width * vocab), dim=1)  # (A, 2k)
        blocks = torch.arange(len(self.active), device=candidates.device)[:, None]  # (A, 1)
        top_rows = blocks * width + top_index // vocab  # (A, 2k) row of each candidate's parent
        top_logprobs = self.next_logprobs[top_rows, top_index % vocab]  # (A, 2k)
        top_scores, top_index, top_logprobs = (
            top_scores.tolist(), top_index.tolist(), top_logprobs.tolist()
        )
        last_step = self.step_index == self.max_len - 1
        parent_rows, feed, scores, still_active = [], [], [], []
        for block, source in enumerate(self.active):
            live = self._rank(self.beams[source], block, top_scores[block], top_index[block],
                              top_logprobs[block], vocab, last_step)
            beam = self.beams[source]
            beam.live = [node.id for node, _ in live]
            if not live or beam.cannot_improve(self.k, self.alpha, self.step_index + 1, self.max_len):
                beam.done = True
                continue
            still_active.append(source)
            # a source with fewer than k live hypotheses repeats its best row with score -inf
            padding = [(live[0][0], live[0][1], -math.inf)] * (self.k - len(live))
            for node, row, score in [(n, r, n.score) for n, r in live] + padding:
                parent_rows.append(row)
                feed.append(node.token_id)
                scores.append(score)
        self.active = still_active
        self.step_index += 1
        if not self.active:
            self.state = self.next_logprobs = self.next_attn = None  # free the cache
            return False
        reorder = getattr(self.model, "reorder_state", reorder_state)  # HF: the model's own cache
        self.state = reorder(self.state, torch.tensor(parent_rows, dtype=torch.long))
        self.beam_scores = torch.tensor(scores, dtype=torch.float64, device=self.next_logprobs.device)
        self.width = self.k
        with inference(self.model):
            self.state, self.next_logprobs, self.next_attn = advance_model(
                self.model, self.state, feed
            )
        return True

    def _rank(self, beam: SourceBeam, block, top_scores, top_index, top_logprobs, vocab, last_step):
        """Record one source's ranked candidates as nodes; returns the new live [(node, row)]."""
        live, selected = [], 0
        for rank, (score, flat, logprob) in enumerate(zip(top_scores, top_index, top_logprobs)):
            if score == -math.inf:
                break  # padding rows and impossible tokens
            parent_slot, token = divmod(flat, vocab)
            row = block * self.width + parent_slot
            parent = beam.nodes[beam.live[parent_slot]]
            if token == self.eos_id:
                status = "finished" if rank < self.k else "pruned"
            elif selected < self.k:
                status = "finished" if last_step else "kept"
                selected += 1
            else:
                status = "pruned"
            node = beam.add(
                parent=parent.id, step=self.step_index, token_id=token,
                token=labels(self.tokenizer, [token])[0], logprob=logprob,
                score=parent.score + logprob, status=status, rank=rank,
                attention=attention_row(self.next_attn, row, len(beam.context)),
            )
            if status == "kept":
                live.append((node, row))
            elif status == "finished":
                beam.finished.append(beam.hypothesis(node.id, self.tokenizer, self.alpha))
        return live

    def live_hypotheses(self, source: int = 0) -> list[Hypothesis]:
        beam = self.beams[source]
        return [beam.hypothesis(i, self.tokenizer, self.alpha) for i in beam.live]

    def next_row(self, source: int = 0) -> int | None:
        """The row holding the best live hypothesis of `source`, or None once it is done."""
        if source not in self.active:
            return None
        return self.active.index(source) * self.width

    def result(self, source: int = 0, nbest: int | None = None, greedy=None) -> BeamResult:
        beam = self.beams[source]
        return BeamResult(
            nodes=beam.nodes,
            nbest=beam.ranked_finished()[: nbest or self.k],
            greedy=greedy,
            beam_size=self.k,
            alpha=self.alpha,
            max_len=self.max_len,
        )


def greedy_batch(model, contexts, *, max_len=64, tokenizer=None, alpha=0.0) -> list[Hypothesis]:
    """Greedy decoding of a batch (of equal lengths when pads would change an answer:
    explorer.decoding.batching); `alpha` only sets the hypotheses' normalized_score."""
    def run(batch):
        decoder = TokenByToken(model, batch, max_len=max_len, tokenizer=tokenizer)
        while decoder.advance():
            pass
        return [decoder.hypothesis(row, alpha) for row in range(len(batch))]

    return by_length(model, contexts, run)


def greedy_ids(model, contexts, limits: list[int]) -> list[tuple[list[int], bool]]:
    """Greedy decoding of a batch when only the outputs count (evaluating a data set): per row its
    ids (with <eos> when it finished) and whether it finished. Row i stops at <eos> or after
    `limits[i]` tokens and then leaves the batch, so a batch costs the sum of its outputs' lengths,
    not its longest output times its rows. The ids are those `greedy_batch` gives at each row's limit
    (the argmax of the logits is the argmax of their log-softmax)."""
    contexts = [list(c) for c in contexts]
    limits = [effective_max_len(model, c, limit) for c, limit in zip(contexts, limits)]
    if len(length_groups(model, contexts)) > 1:  # pads would change an answer
        return by_length(model, contexts, lambda part: greedy_ids(model, *map(list, zip(*part))),
                         items=list(zip(contexts, limits)))
    _, eos_id, _ = special_ids(model)
    reorder = getattr(model, "reorder_state", reorder_state)  # HF: the model's own cache
    ids: list[list[int]] = [[] for _ in contexts]
    finished = [False] * len(contexts)
    with inference(model):
        state, logprobs, _ = begin(model, contexts)
        logits = logprobs
        live = torch.arange(len(contexts))  # the batch rows' example indices
        while True:
            chosen = logits.argmax(dim=-1)  # (B,)
            keep = []
            for position, (row, token) in enumerate(zip(live.tolist(), chosen.tolist())):
                ids[row].append(token)
                finished[row] = token == eos_id
                if not finished[row] and len(ids[row]) < limits[row]:
                    keep.append(position)
            if not keep:
                return list(zip(ids, finished))
            if len(keep) < len(live):  # finished rows leave the batch
                index = torch.tensor(keep, dtype=torch.long)
                state, live, chosen = reorder(state, index), live[index], chosen[index]
            logits, state, _ = model.step(chosen.to(logits.device), state)  # (B, V)


def greedy(model, context, *, max_len=64, tokenizer=None) -> Hypothesis:
    """The most probable token at every step, until <eos> or max_len tokens."""
    return greedy_batch(model, [context], max_len=max_len, tokenizer=tokenizer)[0]


def sample(model, context, *, temperature=1.0, top_k=0, top_p=1.0, seed=None, generator=None,
           max_len=64, tokenizer=None) -> SampleResult:
    """Ancestral sampling from the truncated, renormalised distribution at every step.

    The hypothesis's token_logprobs are the model's untruncated log-probabilities at temperature 1,
    so its score is the teacher-forced log-likelihood like every other strategy's.
    """
    if generator is None:
        generator = torch.Generator()
        generator.manual_seed(0 if seed is None else seed)
    decoder = TokenByToken(model, [context], max_len=max_len, tokenizer=tokenizer, sample=True,
                           temperature=temperature, top_k=top_k, top_p=top_p, generator=generator)
    while decoder.advance():
        pass
    return SampleResult(decoder.hypothesis(0), decoder.distributions[0])


def beam_search_batch(model, contexts, *, beam_size=5, alpha=0.0, max_len=64, nbest=None,
                      tokenizer=None, with_greedy=True) -> list[BeamResult]:
    """Beam search on a batch of contexts, all hypotheses of all sources in one step per token
    (of equal lengths when pads would change an answer: explorer.decoding.batching)."""
    def run(batch):
        search = BeamSearch(model, batch, beam_size=beam_size, alpha=alpha, max_len=max_len,
                            tokenizer=tokenizer)
        while search.advance():
            pass
        greedy_paths = (
            greedy_batch(model, batch, max_len=max_len, tokenizer=tokenizer, alpha=alpha)
            if with_greedy else [None] * len(batch)
        )
        return [search.result(i, nbest=nbest, greedy=greedy_paths[i]) for i in range(len(batch))]

    return by_length(model, contexts, run)


def beam_search(model, context, *, beam_size=5, alpha=0.0, max_len=64, nbest=None,
                tokenizer=None, with_greedy=True) -> BeamResult:
    """Beam search with width `beam_size` and GNMT length penalty `alpha` on one context."""
    return beam_search_batch(model, [context], beam_size=beam_size, alpha=alpha, max_len=max_len,
                             nbest=nbest, tokenizer=tokenizer, with_greedy=with_greedy)[0]

