"""Decoding: greedy, sampling and beam search with its tree, step by step, and teacher-forced scoring.

    from explorer.decoding import beam_search, greedy, sample, score, StepDecoder
"""

from explorer.decoding.scoring import encode_context, score, score_ids
from explorer.decoding.search import (
    BeamSearch,
    beam_search,
    beam_search_batch,
    greedy,
    greedy_batch,
    sample,
    truncated_distribution,
)
from explorer.decoding.stepper import StepDecoder
from explorer.decoding.types import (
    BeamNode,
    BeamResult,
    Hypothesis,
    NextTokens,
    SampleResult,
    SampleStep,
    ScoreResult,
    length_penalty,
)

__all__ = [
    "BeamNode", "BeamResult", "BeamSearch", "Hypothesis", "NextTokens", "SampleResult",
    "SampleStep", "ScoreResult", "StepDecoder", "beam_search", "beam_search_batch",
    "encode_context", "greedy", "greedy_batch", "length_penalty", "sample", "score", "score_ids",
    "truncated_distribution",
]
