"""Decoding one step at a time, forwards and backwards, for the app's step-by-step view."""

from __future__ import annotations

import copy

import numpy as np
import torch

from explorer.decoding.scoring import context_labels, encode_context
from explorer.decoding.search import BeamSearch, TokenByToken
from explorer.decoding.types import BeamResult, Hypothesis, NextTokens, SampleStep
from explorer.errors import UserError
from seqmodels.config import UNK_ID
from explorer.workspace import Workspace

STRATEGIES = ("greedy", "beam", "sample")


class StepDecoder:
    """Greedy, beam or sampled decoding of one source, advanced by `step()` and undone by `back()`.

    `target` is a Workspace or a tuple (model, tokenizer[, src_tokenizer]); `source` is a text (the
    source sentence, or an LM's prompt) or a list of context ids. After every step the decoder
    exposes the next-token distribution (`topk`), the attention that produced it (`attention`),
    the live hypotheses (`beam`), the output so far (`output`) and `done`.
    """

    def __init__(self, target, source, strategy: str = "greedy", *, beam_size: int = 4,
                 alpha: float = 0.0, max_len: int = 64, temperature: float = 1.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 0, show_top: int = 10):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if not isinstance(target, Workspace):
            model, tokenizer, *rest = target
            target = Workspace(model=model, tokenizer=tokenizer, src_tokenizer=rest[0] if rest else None)
        self.workspace = target
        self.strategy = strategy
        self.show_top = show_top
        self.context = list(source) if isinstance(source, (list, tuple)) else encode_context(target, source)
        self.source_tokens = context_labels(target, self.context)
        self._options = dict(beam_size=beam_size, alpha=alpha, max_len=max_len,
                             temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        self.generator = torch.Generator()
        self._history: list[tuple[object, torch.Tensor]] = []
        self.forced: set[int] = set()  # output positions whose token the user forced
        self._own: Hypothesis | None = None  # the model's own greedy output, for comparison
        self.reset()

    def reset(self) -> None:
        """Back to the start: nothing generated, the history cleared, the sampler re-seeded."""
        o, model, tokenizer = self._options, self.workspace.model, self.workspace.tokenizer
        self.generator.manual_seed(o["seed"])
        if self.strategy == "beam":
            self._search = BeamSearch(model, [self.context], beam_size=o["beam_size"],
                                      alpha=o["alpha"], max_len=o["max_len"], tokenizer=tokenizer)
        else:
            self._search = TokenByToken(
                model, [self.context], max_len=o["max_len"], tokenizer=tokenizer,
                sample=self.strategy == "sample", temperature=o["temperature"], top_k=o["top_k"],
                top_p=o["top_p"], generator=self.generator,
            )
        self._history.clear()
        self.forced.clear()

    def step(self) -> bool:
        """Generate one more position; False (and nothing changes) once done."""
        if self.done:
            return False
        self._remember()
        self._search.advance()
        return True

    def _remember(self) -> None:
        # the model and tokenizer are shared, not copied; tensors in the cache are cloned
        memo = {id(self.workspace.model): self.workspace.model,
                id(self.workspace.tokenizer): self.workspace.tokenizer,
                id(self.generator): self.generator}
        self._history.append((copy.deepcopy(self._search, memo), self.generator.get_state()))

    def force(self, token: int | str) -> None:
        """What if: put `token` (an id, or a text that is one token) at this position instead of
        the model's choice; decoding then goes on from it. Greedy and sampling only: a beam holds
        several hypotheses, none of them "the" output to change."""
        if self.strategy == "beam":
            raise UserError("forcing a token works in greedy decoding and sampling, not beam search")
        if self.done:
            raise UserError("decoding is done: go back a step to force a token there")
        token_id = self.token_id(token) if isinstance(token, str) else int(token)
        vocab = self._search.next_logprobs.shape[-1]
        if not 0 <= token_id < vocab:
            raise UserError(f"token id {token_id} is outside the vocabulary (0 to {vocab - 1})")
        self._remember()
        self.forced.add(self.steps_taken - 1)
        self._search.advance(force=token_id)

    def token_id(self, text: str) -> int:
        """The id of `text` as one output token (a label of the top-k list, or typed)."""
        tokenizer = self.workspace.tokenizer
        lookup = getattr(tokenizer, "token_to_id", None)  # a label as shown: "␣dog", "<eos>"
        found = lookup(text) if callable(lookup) else None
        if found is not None and (found != UNK_ID or text == "<unk>"):
            return int(found)
        ids = list(tokenizer.encode(text)) if text else []
        if len(ids) != 1:
            raise UserError(f"{text!r} is {len(ids)} tokens for this model's tokenizer; force one "
                            "token at a time")
        return int(ids[0])

    def back(self) -> bool:
        """Undo the last step; False when already at the start."""
        if not self._history:
            return False
        self._search, generator_state = self._history.pop()
        self.generator.set_state(generator_state)
        self.forced.discard(self.steps_taken)
        return True

    @property
    def own_output(self) -> Hypothesis:
        """The model's own complete greedy output of this source (computed once), to show a
        forced hypothesis's score beside."""
        if self._own is None:
            from explorer.decoding.search import greedy

            self._own = greedy(self.workspace.model, self.context, max_len=self._options["max_len"],
                               tokenizer=self.workspace.tokenizer)
        return self._own

    @property
    def steps_taken(self) -> int:
        return len(self._history)

    @property
    def done(self) -> bool:
        return self._search.done

    def _next_row(self) -> int | None:
        if self.done:
            return None
        return self._search.next_row(0) if self.strategy == "beam" else 0

    @property
    def topk(self) -> NextTokens | None:
        """The best live hypothesis's most probable next tokens; None once done."""
        row = self._next_row()
        if row is None:
            return None
        logprobs = self._search.next_logprobs[row]
        values, ids = logprobs.topk(min(self.show_top, logprobs.numel()))
        ids = ids.tolist()
        tokenizer = self.workspace.tokenizer
        tokens = tokenizer.tokens(ids) if tokenizer is not None else [str(i) for i in ids]
        return NextTokens(token_ids=ids, tokens=list(tokens), probs=values.exp().cpu().numpy())

    @property
    def attention(self) -> np.ndarray | None:
        """(L, H, Tk) attention of the position being predicted, None for models without one."""
        row = self._next_row()
        attn = None if row is None else self._search.next_attn
        return None if attn is None else attn[row, :, :, : len(self.context)]

    @property
    def beam(self) -> list[Hypothesis]:
        """Live partial hypotheses with their scores, best first (one for greedy and sampling)."""
        if self.strategy == "beam":
            return self._search.live_hypotheses(0)
        return [self._search.hypothesis(0)]

    @property
    def output(self) -> Hypothesis:
        """The output so far: the best finished hypothesis once done, else the best live one."""
        if self.strategy == "beam":
            finished = self._search.beams[0].ranked_finished()
            if self.done and finished:
                return finished[0]
            live = self.beam
            return live[0] if live else finished[0]
        return self._search.hypothesis(0, self._options["alpha"])

    @property
    def last_distribution(self) -> SampleStep | None:
        """Sampling only: the truncated distribution the last token was drawn from."""
        if self.strategy != "sample" or not self._search.distributions[0]:
            return None
        return self._search.distributions[0][-1]

    def result(self) -> BeamResult:
        """Beam only: the tree and n-best so far."""
        if self.strategy != "beam":
            raise ValueError("only beam search has a tree")
        result = self._search.result(0)
        result.source_tokens = list(self.source_tokens)
        return result
