"""Whole decoding jobs on a workspace: what the decoding panels run in their worker thread, and
what a script or a test can call directly. Plain arguments in, plain data out (hypotheses, beam
trees, BLEU breakdowns); tensors never leave the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from explorer.decoding.examples import BeamBeatsGreedy, find_beam_beats_greedy
from explorer.decoding.scoring import context_labels, encode_context
from explorer.decoding.search import beam_search, greedy, sample
from explorer.decoding.settings import DecodeSettings
from explorer.decoding.types import BeamResult, Hypothesis
from explorer.errors import UserError
from explorer.metrics.bleu import matched_ngrams, sentence_bleu, tokenize_sentence

SEARCH_LIMIT = 300  # validation inputs tried when looking for beam beating greedy


def run_beam_search(workspace, text: str, settings: DecodeSettings = DecodeSettings()) -> BeamResult:
    """Beam search (with the greedy path for comparison) on one source, its tokens labelled."""
    context = encode_context(workspace, text)
    result = beam_search(
        workspace.model, context, beam_size=settings.beam_size, alpha=settings.alpha,
        max_len=settings.max_len, nbest=settings.nbest, tokenizer=workspace.tokenizer,
    )
    result.source_tokens = context_labels(workspace, context)
    return result


@dataclass
class StrategyOutput:
    """One strategy's output on the same input, with its BLEU against the reference."""

    strategy: str  # "greedy", "beam" or "sample"
    hypothesis: Hypothesis
    bleu: object | None = None  # explorer.metrics.bleu.BleuBreakdown, when a reference is given
    bleu_tokens: list[str] = field(default_factory=list)  # the hypothesis as BLEU tokenizes it
    matched: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)


def run_compare(workspace, text: str, reference: str = "",
                settings: DecodeSettings = DecodeSettings()) -> list[StrategyOutput]:
    """Greedy, beam and sampling on the same source; sentence BLEU when `reference` is given."""
    context = encode_context(workspace, text)
    model, tokenizer, s = workspace.model, workspace.tokenizer, settings
    outputs = [
        StrategyOutput("greedy", greedy(model, context, max_len=s.max_len, tokenizer=tokenizer)),
        StrategyOutput("beam", beam_search(model, context, beam_size=s.beam_size, alpha=s.alpha,
                                           max_len=s.max_len, nbest=1, tokenizer=tokenizer,
                                           with_greedy=False).best),
        StrategyOutput("sample", sample(model, context, temperature=s.temperature, top_k=s.top_k,
                                        top_p=s.top_p, seed=s.seed, max_len=s.max_len,
                                        tokenizer=tokenizer).hypothesis),
    ]
    for output in outputs:
        output.bleu_tokens = tokenize_sentence(output.hypothesis.text)
        if reference.strip():
            output.bleu = sentence_bleu(output.hypothesis.text, reference)
            output.matched = matched_ngrams(output.hypothesis.text, reference)
    return outputs


def run_find_example(workspace, settings: DecodeSettings = DecodeSettings(),
                     limit: int = SEARCH_LIMIT) -> BeamBeatsGreedy | None:
    """Search the workspace's validation (else training) pairs for an input where beam search
    (width at least 2) finds a more probable output than greedy."""
    data = workspace.data
    candidates = (data.val or data.train)[:limit] if data is not None else []
    if not candidates:
        raise UserError("this workspace has no data to search; type a source instead")
    return find_beam_beats_greedy(workspace, candidates, width=max(settings.beam_size, 2),
                                  max_len=settings.max_len)
