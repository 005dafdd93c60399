"""Batches that cannot change an answer.

A batch of sources is padded to its longest (explorer.decoding.incremental.begin); a model that
takes a padding mask ignores the pads, but one that does not (most tutorial seq2seq code: no mask
anywhere) reads them as tokens, and a source decoded beside longer ones comes out differently from
the same source alone. Such a model's batches hold sources of one length only; so do a language
model's (its prompts are fed token by token, all rows at once).

    handles_padding(model)                 # pads in a batch leave every row's output unchanged
    length_batches(model, contexts, size)  # row indices of the batches to run
    by_length(model, contexts, run)        # run(contexts of one batch) -> one result per row,
                                           # the rows' results in their order
    in_order(model, contexts, size, run)   # (row, result) in the rows' order, a window at a time

`greedy_batch`, `greedy_ids`, `beam_search_batch` (explorer.decoding.search) split their contexts
with `by_length`, so no caller can feed a padding-unaware model pads; callers that cut a long input
into batches use `length_batches` / `in_order`, so that equal lengths fill whole batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from explorer.families import family_of

WINDOW = 1024  # rows sorted by length together before their results are given back in order


def handles_padding(model) -> bool:
    """Whether pads in a batch leave every row's output as it is alone. The explorer's own models
    and Hugging Face ones take a padding mask; a user's model says (UserModel.handles_padding:
    `Adapter(pad_mask=True)`, or a mask argument in its forward that the explorer fills)."""
    return bool(getattr(model, "handles_padding", True))


def equal_lengths(model) -> bool:
    """Whether a batch's contexts must share one length: a padding-unaware encoder-decoder's
    sources, and every language model's prompts."""
    return family_of(model).is_lm or not handles_padding(model)


def length_groups(model, contexts: Sequence[Sequence[int]]) -> list[list[int]]:
    """Row indices of the sub-batches to run: all rows together when pads are safe, else one group
    per length (in the order each length first appears)."""
    if not equal_lengths(model):
        return [list(range(len(contexts)))]
    groups: dict[int, list[int]] = {}
    for row, context in enumerate(contexts):
        groups.setdefault(len(context), []).append(row)
    return list(groups.values())


def length_batches(model, contexts: Sequence[Sequence[int]], size: int) -> list[list[int]]:
    """Row indices of batches: `size` rows in order when pads are safe; else the rows sorted by
    length (stably), cut wherever the length changes, each batch holding as many ids as `size`
    rows padded to the longest would (fairseq's max-tokens: short sources go more to a batch)."""
    if not equal_lengths(model):
        return [list(range(start, min(start + size, len(contexts))))
                for start in range(0, len(contexts), size)]
    budget = size * max((len(c) for c in contexts), default=1)  # ids in a padded batch
    batches = []
    for group in sorted(length_groups(model, contexts), key=lambda g: len(contexts[g[0]])):
        rows = max(size, budget // max(len(contexts[group[0]]), 1))
        batches.extend(group[start : start + rows] for start in range(0, len(group), rows))
    return batches


def by_length(model, contexts: Sequence, run: Callable[[list], list],
              items: Sequence | None = None) -> list:
    """`run` on each length group of the contexts (one call when pads are safe), given the group's
    contexts (or its `items`, one per context); its results in the rows' order."""
    items = contexts if items is None else items
    groups = length_groups(model, contexts)
    if len(groups) == 1:
        return run(list(items))
    results: list = [None] * len(contexts)
    for group in groups:
        for row, result in zip(group, run([items[i] for i in group])):
            results[row] = result
    return results


def in_order(model, contexts: Sequence, size: int, run: Callable[[list], list],
             window: int = WINDOW) -> Iterator[tuple[int, object]]:
    """(row, result) in the rows' order, `run` called on batches of `length_batches`: a window of
    rows at a time, each row given as soon as every row before it is done (in-order batches for a
    model that pads safely, so output streams batch by batch)."""
    for start in range(0, len(contexts), window):
        part = contexts[start : start + window]
        done: dict[int, object] = {}
        following = 0
        for batch in length_batches(model, part, size):
            for row, result in zip(batch, run([part[i] for i in batch])):
                done[row] = result
            while following in done:
                yield start + following, done.pop(following)
                following += 1
