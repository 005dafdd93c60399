"""Find, by search, an input on which beam search beats greedy decoding.

The lecture notes' point (Sutskever et al., 2014): greedy decoding commits to the most probable
next word, p(Those) > p(Apples), and so can miss the most probable sentence,
p(Apples are good) > p(Those apples are good). On a trained model that happens on some inputs and
not others; this module decodes candidate inputs with both and returns the clearest case, so the
example in the app is the model's own behaviour, not a hand-made one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from explorer.decoding.scoring import encode_context
from explorer.decoding.search import beam_search_batch, is_language_model
from explorer.decoding.types import Hypothesis
from explorer.errors import UserError


@dataclass
class BeamBeatsGreedy:
    source: str
    reference: str | None  # the candidate's target, when candidates were (source, target) pairs
    greedy: Hypothesis
    beam: Hypothesis  # beam search's best hypothesis (alpha = 0: the most probable it found)
    width: int
    divergence: int  # first output position where the two differ
    searched: int  # candidates decoded before choosing

    @property
    def margin(self) -> float:
        """log p(beam output) - log p(greedy output) > 0."""
        return self.beam.score - self.greedy.score

    def explanation(self) -> str:
        """The notes' argument in this example's own words and numbers."""
        i = self.divergence
        greedy_token, beam_token = self.greedy.tokens[i], self.beam.tokens[i]
        return (
            f"At step {i} greedy took “{greedy_token}” (log p {self.greedy.token_logprobs[i]:.3f}) "
            f"over “{beam_token}” (log p {self.beam.token_logprobs[i]:.3f}), but the whole beam "
            f"output has log p {self.beam.score:.3f} > greedy's {self.greedy.score:.3f}: "
            f"the locally best word did not lead to the most probable sentence."
        )


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    for position, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return position
    return min(len(a), len(b))


def find_beam_beats_greedy(
    workspace,
    candidates: Iterable,
    width: int = 4,
    max_len: int = 40,
    batch_size: int = 32,
    min_margin: float = 1e-3,
) -> BeamBeatsGreedy | None:
    """Decode every candidate (a source string, or a (source, target) pair) with greedy and with
    beam search of `width` (no length penalty, so scores are plain log-probabilities). Among the
    candidates where beam's output is more probable by at least `min_margin` nats, return the one
    with the largest margin (ties: the shorter source), or None. Outputs that both end with <eos>
    are preferred; two that both stopped at `max_len` are compared too (equally many factors).
    """
    if width < 2:
        raise UserError("beam search needs a width of at least 2 to beat greedy")
    pairs = [(c, None) if isinstance(c, str) else (c[0], c[1] or None) for c in candidates]
    encoded = []
    for source, reference in pairs:
        try:
            encoded.append((source, reference, encode_context(workspace, source)))
        except UserError:
            continue  # nothing left after tokenization
    # Language-model prompts must share a length within a batch; sources are padded.
    size = 1 if is_language_model(workspace.model) else batch_size
    best: BeamBeatsGreedy | None = None
    for start in range(0, len(encoded), size):
        chunk = encoded[start : start + size]
        results = beam_search_batch(workspace.model, [c for _, _, c in chunk], beam_size=width,
                                    alpha=0.0, max_len=max_len, nbest=1,
                                    tokenizer=workspace.tokenizer)
        for (source, reference, _), result in zip(chunk, results):
            greedy, beam = result.greedy, result.nbest[0] if result.nbest else None
            if greedy is None or beam is None or not _comparable(greedy, beam):
                continue
            if beam.score - greedy.score < min_margin:
                continue
            found = BeamBeatsGreedy(source, reference, greedy, beam, width,
                                    _first_difference(greedy.token_ids, beam.token_ids),
                                    searched=len(encoded))
            if best is None or _preference(found) > _preference(best):
                best = found
    return best


def _comparable(greedy: Hypothesis, beam: Hypothesis) -> bool:
    if greedy.finished and beam.finished:
        return True
    return not greedy.finished and not beam.finished and len(greedy.token_ids) == len(beam.token_ids)


def _preference(example: BeamBeatsGreedy) -> tuple:
    return (example.beam.finished, example.margin, -len(example.source))
