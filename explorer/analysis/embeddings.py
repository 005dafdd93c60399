"""Token embeddings: a 2-D PCA projection, nearest neighbours by cosine, analogies, token sets.

Works on every model's input (and source) embedding and its output embedding (the unembedding
rows), as its activation provider hands them out (`explorer.analysis.activations`: our families
where their registry entry says, Hugging Face models through `get_input_embeddings` /
`get_output_embeddings`).
Everything is numpy: no projector dependency.

Analogies follow word2vec / gensim's `most_similar(positive=[a, c], negative=[b])` ("3CosAdd"):
the answer to a − b + c is the token x, other than a, b and c, maximising cos(x, â − b̂ + ĉ), where
â is a's unit vector. king − man + woman ≈ queen.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

import numpy as np

from explorer.data.tasks.dates import MONTHS, WEEKDAYS
from explorer.data.tasks.symbols import BRACKETS
from explorer.data.tasks.translate_toy import ADJECTIVES, NOUNS, PLACES, VERBS
from explorer.analysis.activations import provider_for

EMBEDDING_KINDS = ("input", "output", "source")
EXACT_PCA_LIMIT = 4e8  # V * D * D multiply-adds below which the covariance is formed exactly


def _weights(model, which: str):
    """The (V, D) parameter behind `which`, or None when the model has no such embedding."""
    return provider_for(model).embeddings(model).get(which)


def available_embeddings(model) -> list[str]:
    return [kind for kind in EMBEDDING_KINDS if _weights(model, kind) is not None]


def embedding_matrix(model, which: str = "input") -> np.ndarray:
    """(V, D) float32 copy of the model's `which` embedding ("input", "output" or "source")."""
    weight = _weights(model, which)
    if weight is None:
        raise ValueError(f"this model has no {which} embedding; it has {', '.join(available_embeddings(model))}")
    return weight.detach().float().cpu().numpy().copy()


def embedding_matrices(model) -> dict[str, np.ndarray]:
    """kind -> (V, D) float32 copy of every embedding the model has, taken at once (a training
    probe's: the trainer's thread copies, the embeddings panel projects). A tied output embedding
    is the input's array, copied once."""
    matrices = {}
    for kind in available_embeddings(model):
        if kind == "output" and "input" in matrices and is_tied(model):
            matrices[kind] = matrices["input"]
        else:
            matrices[kind] = embedding_matrix(model, kind)
    return matrices


def is_tied(model) -> bool:
    """True when the output embedding is the input embedding (one tensor)."""
    a, b = _weights(model, "input"), _weights(model, "output")
    return a is not None and b is not None and a.data_ptr() == b.data_ptr()


@dataclass
class Projection:
    coords: np.ndarray  # (V, 2) float32: each token's first two principal components
    explained: np.ndarray  # (2,): the share of the variance each component explains


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Each column's largest-magnitude entry made positive, so a projection does not flip between
    snapshots of the same model."""
    rows = np.abs(vectors).argmax(axis=0)
    return vectors * np.sign(vectors[rows, np.arange(vectors.shape[1])])


def pca_2d(matrix: np.ndarray, seed: int = 0) -> Projection:
    """The 2-D PCA of `matrix` (V, D). Exact (eigenvectors of the covariance) for small matrices;
    for large vocabularies randomized subspace iteration (Halko et al., 2011), seeded."""
    exact = matrix.shape[0] * matrix.shape[1] ** 2 <= EXACT_PCA_LIMIT
    # float32 for large vocabularies: half the memory traffic, and the top two directions of a
    # clear spectrum do not need more
    x = np.asarray(matrix, dtype=np.float64 if exact else np.float32)
    x = x - x.mean(axis=0)
    total = float((x * x).sum(dtype=np.float64))
    if exact:
        values, vectors = np.linalg.eigh(x.T @ x)  # ascending
        top = vectors[:, ::-1][:, :2]
    else:
        rank = min(8, x.shape[1])
        q = np.random.default_rng(seed).standard_normal((x.shape[1], rank)).astype(np.float32)
        for _ in range(3):  # each pass squares the spectrum's gaps: 3 separate the top two
            q, _ = np.linalg.qr(x.T @ (x @ q))  # (D, rank): power iteration on x^T x
        small = q.T @ (x.T @ (x @ q))  # (rank, rank)
        values, vectors = np.linalg.eigh(small.astype(np.float64))
        top = (q @ vectors[:, ::-1][:, :2]).astype(np.float32)
    if top.shape[1] < 2:
        top = np.pad(top, ((0, 0), (0, 2 - top.shape[1])))
    top = _fix_signs(top)
    coords = x @ top  # (V, 2)
    explained = (coords.astype(np.float64) ** 2).sum(axis=0) / total if total > 0 else np.zeros(2)
    return Projection(coords.astype(np.float32), explained)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (zero rows stay zero); float32 stays float32."""
    matrix = np.asarray(matrix, dtype=np.result_type(matrix, np.float32))
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]  # (V, 1), no (V, D) temporary
    return matrix / np.where(norms > 0, norms, 1).astype(matrix.dtype)


def _top(scores: np.ndarray, k: int, exclude) -> list[tuple[int, float]]:
    scores = scores.astype(np.float64).copy()
    scores[list(exclude)] = -np.inf
    k = min(k, int(np.isfinite(scores).sum()))
    best = np.argpartition(-scores, k - 1)[:k] if k > 0 else np.zeros(0, dtype=np.int64)
    best = best[np.lexsort((best, -scores[best]))]  # by score, ties by id
    return [(int(i), float(scores[i])) for i in best]


def nearest_neighbours(matrix: np.ndarray, index: int, k: int = 10, normalized: bool = False) -> list[tuple[int, float]]:
    """The k tokens most cosine-similar to token `index` (itself excluded): [(id, cosine)].
    `normalized`: the rows are unit vectors already (`unit_rows`), as `EmbeddingData` caches them."""
    unit = matrix if normalized else unit_rows(matrix)
    return _top(unit @ unit[index], k, [index])


def analogy(matrix: np.ndarray, a: int, b: int, c: int, k: int = 10, normalized: bool = False) -> list[tuple[int, float]]:
    """a − b + c: the k tokens (not a, b or c) closest by cosine to â − b̂ + ĉ: [(id, cosine)]."""
    unit = matrix if normalized else unit_rows(matrix)
    target = unit[a] - unit[b] + unit[c]
    norm = np.linalg.norm(target)
    return _top(unit @ (target / norm if norm > 0 else target), k, {a, b, c})


def _core(token: str) -> str:
    """A token without subword markers and spacing: "Ġ12" and "␣12" -> "12", "▁march" -> "march"."""
    return token.lstrip(string.whitespace + "Ġ▁␣#@").rstrip(string.whitespace + "@#")


WORD_CLASSES = {
    "months": {m.lower() for m in MONTHS} | {m[:3].lower() for m in MONTHS},
    "weekdays": {w.lower() for w in WEEKDAYS} | {w[:3].lower() for w in WEEKDAYS},
    "nouns": set(NOUNS) | set(NOUNS.values()),
    "verbs": set(VERBS) | set(VERBS.values()),
    "adjectives": set(ADJECTIVES),
    "places": set(PLACES),
}
BRACKET_CHARS = "".join(BRACKETS) + "".join(BRACKETS.values())


def token_sets(tokens: list[str]) -> dict[str, np.ndarray]:
    """Named sets of token ids worth highlighting, from the vocabulary's token strings (id = index):
    digits, months and weekdays (the `dates` task), brackets and quotes (`brackets`), the
    `translate-toy` word classes, punctuation, and the reserved ids. Empty sets are left out.
    One pass over the vocabulary (50k tokens in tens of milliseconds)."""
    found: dict[str, list[int]] = {name: [] for name in ("digits", *WORD_CLASSES, "brackets", "punctuation")}
    for i in range(5, len(tokens)):
        core = _core(str(tokens[i]))
        if not core:
            continue
        if core.isdigit():
            found["digits"].append(i)
        elif not core.strip(BRACKET_CHARS):
            found["brackets"].append(i)
        elif not core.strip(string.punctuation):
            found["punctuation"].append(i)
        else:
            for name, words in WORD_CLASSES.items():
                if (core.lower() if name in ("months", "weekdays") else core) in words:
                    found[name].append(i)
    sets = {"reserved": np.arange(min(5, len(tokens)))}
    sets.update({name: np.array(ids, dtype=np.int64) for name, ids in found.items() if ids})
    return sets


@dataclass
class EmbeddingData:
    """What the embeddings panel draws: one embedding matrix with its tokens and projection."""

    which: str  # "input", "output" or "source"
    tokens: list[str]  # the token of each row (id = row)
    matrix: np.ndarray  # (V, D)
    projection: Projection
    sets: dict[str, np.ndarray] = field(default_factory=dict)
    tied: bool = False  # the output embedding is the input embedding
    available: list[str] = field(default_factory=list)
    unit: np.ndarray | None = field(default=None, repr=False)  # rows scaled to length 1, for cosines

    def __post_init__(self) -> None:
        if self.unit is None:
            self.unit = unit_rows(self.matrix)

    def neighbours(self, index: int, k: int = 10) -> list[tuple[int, float]]:
        return nearest_neighbours(self.unit, index, k, normalized=True)

    def analogy(self, a: int, b: int, c: int, k: int = 10) -> list[tuple[int, float]]:
        return analogy(self.unit, a, b, c, k, normalized=True)

    def token_id(self, text: str) -> int | None:
        """The id of a token typed by the user: exact match first, then without subword markers."""
        if text in self.tokens:
            return self.tokens.index(text)
        cores = [_core(t) for t in self.tokens]
        return cores.index(text) if text in cores else None

    def table(self) -> tuple[list[str], list[list]]:
        """CSV: one row per token, its id, PC1 and PC2."""
        rows = [[i, t, float(x), float(y)] for i, (t, (x, y)) in enumerate(zip(self.tokens, self.projection.coords))]
        return ["id", "token", "pc1", "pc2"], rows


def embedding_tables(data: EmbeddingData, neighbours=(), answers=()) -> dict[str, tuple[list[str], list[list]]]:
    """The embeddings panel's tables: the projection, and the neighbours of a picked token and
    an analogy's answers ((id, cosine) pairs, best first) where there are any."""
    tables = {"projection": data.table()}
    for name, rows in (("neighbours", neighbours), ("analogy", answers)):
        if rows:
            tables[name] = (["rank", "id", "token", "cosine"],
                            [[r + 1, i, data.tokens[i], s] for r, (i, s) in enumerate(rows)])
    return tables

def embedding_data(workspace, which: str = "input", matrix: np.ndarray | None = None,
                   like: EmbeddingData | None = None) -> EmbeddingData:
    """The workspace model's `which` embedding, its PCA and highlightable token sets.

    `matrix`: that embedding as already copied (a training probe's `embeddings`), so the model,
    which the trainer's thread owns while training, is not read; `like`: the data of an earlier
    copy of the same embedding, whose tokens and sets are kept (the vocabulary does not change)."""
    model = workspace.model
    matrix = embedding_matrix(model, which) if matrix is None else matrix
    if like is not None and like.which == which and len(like.tokens) == matrix.shape[0]:
        return EmbeddingData(which=which, tokens=like.tokens, matrix=matrix, projection=pca_2d(matrix),
                             sets=like.sets, tied=like.tied, available=like.available)
    tokenizer = workspace.src_tokenizer if which == "source" and workspace.src_tokenizer else workspace.tokenizer
    tokens = [str(t) for t in tokenizer.tokens(range(matrix.shape[0]))]
    return EmbeddingData(
        which=which, tokens=tokens, matrix=matrix, projection=pca_2d(matrix), sets=token_sets(tokens),
        tied=is_tied(model), available=available_embeddings(model),
    )
