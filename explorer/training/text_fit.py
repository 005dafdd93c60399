"""What a language model's training text is enough for, before a model is built on it: the app's
data dialog says so at open, and offers the batch size and context that fit a text too short for
the Training dock's (a 2-line file cannot fill 32 rows of 64 tokens).

    fit = text_fit(DataSpec(text="notes.txt"), "rnn-lm", TrainConfig())
    fit.tokens, fit.fits, fit.batch_size, fit.context   # 57, False, 1, 56

The text is read, split and tokenized as build_workspace does (explorer.training.setup), and the
family's own feed says what fits (explorer.training.feeds: `fits`, `fitted`).
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.families import get_family
from explorer.training.setup import DataSpec, fit_tokenizers, read_data

MIN_CONTEXT = 2  # TrainConfig.validate's least context


@dataclass(frozen=True)
class TextFit:
    tokens: int  # of the training split, each text's <eos> included
    fits: bool  # the given batch size and context fit
    batch_size: int  # the given ones where they fit, else the nearest that do
    context: int

    @property
    def trainable(self) -> bool:
        """Whether any settings fit: a text of 2 tokens has no context of 2 to train on."""
        return self.context >= MIN_CONTEXT and self.batch_size >= 1


def text_fit(spec: DataSpec, family: str, config) -> TextFit | None:
    """None for data that is no LM text (pairs and tasks fit any batch size)."""
    if spec.text is None or not get_family(family).is_lm:
        return None
    feed = get_family(family).feed.resolve()
    if not hasattr(feed, "fits"):  # a feed of its own (a Hugging Face model's)
        return None
    splits = read_data(spec)
    tokenizer, _ = fit_tokenizers(spec, splits)
    tokens = sum(len(tokenizer.encode(source)) + 1 for source, _ in splits.train)  # + <eos>
    if feed.fits(tokens, config.batch_size, config.context):
        return TextFit(tokens, True, config.batch_size, config.context)
    return TextFit(tokens, False, *feed.fitted(tokens, config.batch_size, config.context))
