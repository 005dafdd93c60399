"""Symbol tasks: copy, reverse, sort, addition, and the brackets language-modelling task.

Each generator takes a `random.Random` and returns one `(source, target)` pair of strings.
"""

from __future__ import annotations

import random
import string

LETTERS = string.ascii_lowercase
MIN_LEN, MAX_LEN = 3, 12


def _letters(rng: random.Random) -> str:
    return "".join(rng.choice(LETTERS) for _ in range(rng.randint(MIN_LEN, MAX_LEN)))


def copy_pair(rng: random.Random) -> tuple[str, str]:
    """`qfzb` -> `qfzb`: attention should be the diagonal."""
    text = _letters(rng)
    return text, text


def reverse_pair(rng: random.Random) -> tuple[str, str]:
    """`qfzb` -> `bzfq`: attention is the anti-diagonal; without attention the first output
    depends on the last input, far back for the encoder's gradients."""
    text = _letters(rng)
    return text, text[::-1]


def sort_pair(rng: random.Random) -> tuple[str, str]:
    """`qfzb` -> `bfqz`: each output attends to where its letter is in the input."""
    text = _letters(rng)
    return text, "".join(sorted(text))


def addition_pair(rng: random.Random) -> tuple[str, str]:
    """`12+35` -> `47`: operands of 1 to 3 digits, so carries travel right to left."""
    a = rng.randint(0, 10 ** rng.randint(1, 3) - 1)
    b = rng.randint(0, 10 ** rng.randint(1, 3) - 1)
    return f"{a}+{b}", str(a + b)


BRACKETS = {"(": ")", "[": "]", "{": "}", '"': '"'}
FILLER_WORDS = (
    "the cat sat on a mat and the dog ran far away from home while it was raining "
    "so we stayed in with tea then she said that he knew where they went"
).split()


def brackets_text(rng: random.Random, min_words: int = 8, max_words: int = 24,
                  max_depth: int = 3) -> str:
    """A line of filler words with nested brackets and quotes, every one closed, often far later.

    Like the notes' "inside a quote" cell: to predict the closing symbol a language model must
    remember, over many words, which brackets are open and in which order.
    """
    words: list[str] = []
    open_stack: list[str] = []
    for _ in range(rng.randint(min_words, max_words)):
        roll = rng.random()
        if roll < 0.15 and len(open_stack) < max_depth:
            opener = rng.choice(list(BRACKETS))
            if opener == '"' and '"' in open_stack:
                opener = "("  # quotes do not nest inside quotes: the closer would be ambiguous
            open_stack.append(opener)
            words.append(opener + rng.choice(FILLER_WORDS))
        elif roll < 0.25 and open_stack:
            words.append(rng.choice(FILLER_WORDS) + BRACKETS[open_stack.pop()])
        else:
            words.append(rng.choice(FILLER_WORDS))
    while open_stack:
        words[-1] += BRACKETS[open_stack.pop()]
    return " ".join(words)


def brackets_pair(rng: random.Random) -> tuple[str, str]:
    return brackets_text(rng), ""
