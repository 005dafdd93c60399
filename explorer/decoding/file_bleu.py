"""BLEU of an encoder-decoder against a parallel file: greedy translations of every source of a
`source<TAB>reference` file, scored with sacreBLEU-compatible corpus BLEU (explorer.metrics.bleu).
The BLEU panel runs it in a worker for any encoder-decoder, Hugging Face Marian, T5 and BART
included; sources are encoded exactly as `explorer decode` encodes them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from explorer.errors import UserError
from explorer.families import family_of

MAX_PAIRS = 500  # a GUI-sized job: more lines are left for `explorer decode` + `explorer bleu`
BATCH_SIZE = 16


@dataclass
class FileBleu:
    path: str
    pairs: int  # translated and scored
    total: int  # rows of the file with a source and a reference
    result: object  # explorer.metrics.bleu.BleuResult: score and n-gram breakdown
    example: object  # explorer.metrics.bleu.SentenceExample of the first sentence
    hypotheses: list[str]

    def summary(self) -> str:
        shown = f"first {self.pairs} of {self.total}" if self.pairs < self.total else str(self.pairs)
        return f"BLEU {self.result.score:.2f} of greedy translations of {shown} sentences of {Path(self.path).name}"


def parallel_file_bleu(workspace, path: str | Path, limit: int = MAX_PAIRS,
                       batch_size: int = BATCH_SIZE) -> FileBleu:
    from explorer.data.readers import read_tsv
    from explorer.training.evaluation import greedy_bleu

    if workspace is None or not family_of(workspace.model).has_source:
        raise UserError("BLEU of a parallel file needs an encoder-decoder (it translates each "
                        "source); this model is a language model")
    pairs = read_tsv(path)
    chosen = pairs[:limit]
    hypotheses: list[str] = []
    try:
        result, example = greedy_bleu(workspace, chosen, batch_size, hypotheses=hypotheses)
    except UserError as exc:  # e.g. a source longer than the model reads (decoding.limits)
        raise UserError(f"{path}: {exc}") from None
    return FileBleu(str(path), len(chosen), len(pairs), result, example, hypotheses)
