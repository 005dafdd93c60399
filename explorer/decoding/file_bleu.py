"""Corpus BLEU of greedy decodes (`greedy_bleu`: training's evaluation reads it too), and BLEU of an
encoder-decoder against a parallel file: greedy translations of every source of a
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


def bleu_tokenization(workspace) -> str:
    """sacreBLEU's tokenizer for this workspace's targets: characters for a character-level model,
    whose targets ("rgeebgr", "12+35") are single words to 13a, so that one wrong letter would
    score the whole sentence 0; sacreBLEU's default 13a for anything else."""
    return "char" if getattr(workspace.tokenizer, "kind", "") == "char" else "13a"


def greedy_bleu(workspace, pairs, batch_size: int, max_len: int | None = None,
                hypotheses: list | None = None):
    """Corpus BLEU of greedy decodes of `pairs` (source, reference), and one example sentence.
    The decoded texts are appended to `hypotheses` when it is given."""
    from explorer.decoding.batching import length_batches
    from explorer.decoding.search import greedy_batch
    from explorer.decoding.scoring import encode_context
    from explorer.metrics.bleu import IncrementalBleu, sentence_example

    tokenize = bleu_tokenization(workspace)
    bleu = IncrementalBleu(tokenize=tokenize)
    contexts = [encode_context(workspace, src) for src, _ in pairs]  # HF: the tokenizer's own
    texts: list[str] = [""] * len(pairs)
    # in order, or of one source length each for a model that pads unsafely (decoding.batching)
    for batch in length_batches(workspace.model, contexts, batch_size):
        longest = max(len(workspace.tokenizer.encode(pairs[i][1])) for i in batch)
        hyps = greedy_batch(
            workspace.model, [contexts[i] for i in batch], max_len=max_len or 2 * longest + 10,
            tokenizer=workspace.tokenizer,
        )
        for row, hypothesis in zip(batch, hyps):
            texts[row] = hypothesis.text
    if hypotheses is not None:
        hypotheses.extend(texts)
    refs = [ref for _, ref in pairs]
    if not pairs:
        return bleu.result(), None
    bleu.add(texts, refs)
    return bleu.result(), sentence_example(texts[0], refs[0], tokenize=tokenize)


def parallel_file_bleu(workspace, path: str | Path, limit: int = MAX_PAIRS,
                       batch_size: int = BATCH_SIZE) -> FileBleu:
    from explorer.data.readers import read_tsv

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
