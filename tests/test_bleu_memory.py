"""BLEU computed again and again (every evaluation, every compare) holds no memory of its own:
sacreBLEU's tokenizers memoise per instance in a class-wide cache, so a tokenizer per call would
stay alive for ever (found by benchmarks/bench_soak.py, issue 16)."""

from __future__ import annotations

import gc

from explorer.metrics.bleu import IncrementalBleu, corpus_bleu, sentence_bleu, sentence_example


def _tokenizers() -> int:
    from sacrebleu.tokenizers.tokenizer_base import BaseTokenizer

    gc.collect()
    return sum(issubclass(type(o), BaseTokenizer) for o in gc.get_objects())


def test_repeated_bleu_keeps_no_tokenizer_per_call():
    corpus_bleu(["a b c d"], ["a b c e"], tokenize="char")  # every kind used once first
    corpus_bleu(["a b c d"], ["a b c e"])
    before = _tokenizers()
    for i in range(50):
        corpus_bleu([f"the cat sat {i}"], [f"the cat sat on {i}"])
        sentence_bleu("the cat", "the cat sat")
        sentence_example("a b c", "a b d")
        corpus_bleu(["x y"], ["x z"], tokenize="char")
        bleu = IncrementalBleu()
        bleu.add(["a b"], ["a c"])
        bleu.result()
    assert _tokenizers() == before


def test_shared_tokenizer_gives_sacrebleus_scores():
    import sacrebleu

    hyps, refs = ["the cat sat on the mat", "a dog"], ["the cat is on the mat", "a big dog"]
    for _ in range(2):  # the second time through the shared tokenizer's cache
        ours = corpus_bleu(hyps, refs)
        theirs = sacrebleu.corpus_bleu(hyps, [refs])
        assert abs(ours.score - theirs.score) < 1e-9
        assert ours.counts == theirs.counts
