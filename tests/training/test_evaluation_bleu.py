"""BLEU during training scores characters for character-level models, words (13a) otherwise."""

from types import SimpleNamespace

import pytest
import sacrebleu

from explorer.decoding import search
from explorer.decoding.file_bleu import greedy_bleu
from explorer.training.setup import DataSpec, build_workspace


def decode_as(texts):
    """A stand-in for greedy_batch that 'decodes' each source to the next text of `texts`."""
    queue = list(texts)
    return lambda model, contexts, **kwargs: [SimpleNamespace(text=queue.pop(0)) for _ in contexts]


@pytest.mark.parametrize("task,tokenizer,expected_tokenize", [
    ("reverse", "char", "char"),
    ("translate-toy", "word", "13a"),
])
def test_bleu_during_training_matches_sacrebleu_with_the_models_unit(
    task, tokenizer, expected_tokenize, monkeypatch
):
    workspace = build_workspace(DataSpec(task=task, tokenizer=tokenizer, n_train=32, n_val=8, seed=1),
                                "seq2seq", preset="tiny")
    pairs = workspace.data.val[:8]
    references = [ref for _, ref in pairs]
    # one wrong last character per hypothesis: a near miss
    hypotheses = [ref[:-1] + ("x" if ref[-1] != "x" else "y") for ref in references]
    monkeypatch.setattr(search, "greedy_batch", decode_as(hypotheses))
    result, example = greedy_bleu(workspace, pairs, batch_size=3)
    expected = sacrebleu.corpus_bleu(hypotheses, [references], tokenize=expected_tokenize)
    assert result.score == pytest.approx(expected.score, abs=1e-9)
    assert f"tok:{expected_tokenize}" in result.signature
    if tokenizer == "char":  # near misses score high, where 13a would call each one word wrong
        assert result.score > 50
        assert sacrebleu.corpus_bleu(hypotheses, [references]).score < result.score
        assert example.hyp_tokens == list(hypotheses[0].replace(" ", ""))
