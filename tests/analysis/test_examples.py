"""The Examples table's core against independent references: sacreBLEU's sentence and corpus
scores, `explorer score`'s teacher-forced log-probability, and counting by hand."""

import numpy as np
import pytest
import sacrebleu
import torch

from explorer.analysis import examples as ex
from explorer.decoding.scoring import score
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace


@pytest.fixture(scope="module")
def reverse_workspace():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=24), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=64)


@pytest.fixture(scope="module")
def table(reverse_workspace):
    return ex.evaluate_examples(reverse_workspace, ex.examples_of(reverse_workspace), batch_size=5)


def test_every_example_is_one_row_in_order(reverse_workspace, table):
    pairs = ex.examples_of(reverse_workspace)
    assert len(table) == len(pairs)
    assert list(table.columns["source"]) == [s for s, _ in pairs]
    assert list(table.columns["reference"]) == [r for _, r in pairs]


def test_outputs_equal_unbatched_greedy(reverse_workspace, table):
    from explorer.decoding import encode_context, greedy

    for i in (0, 7, 23):
        context = encode_context(reverse_workspace, table.columns["source"][i])
        alone = greedy(reverse_workspace.model, context, max_len=2 * (table.columns["reference_length"][i] + 1) + 10,
                       tokenizer=reverse_workspace.tokenizer)
        assert table.columns["output"][i] == alone.text


def test_loss_equals_explorer_score(reverse_workspace, table):
    for i, (source, reference) in enumerate(ex.examples_of(reverse_workspace)):
        result = score(reverse_workspace, source, reference)
        assert table.columns["loss"][i] == pytest.approx(-result.total, rel=1e-5)
        assert table.columns["loss_per_token"][i] == pytest.approx(-result.total / len(result.logprobs), rel=1e-5)


def test_token_accuracy_is_the_share_of_argmax_hits(reverse_workspace, table):
    from explorer.decoding.scoring import encode_context

    model = reverse_workspace.model
    source, reference = ex.examples_of(reverse_workspace)[3]
    src = torch.tensor([encode_context(reverse_workspace, source)])
    target = reverse_workspace.tokenizer.encode(reference) + [2]
    with torch.no_grad():
        logits = model(src, torch.tensor([[1] + target[:-1]]))
    hits = (logits[0].argmax(-1) == torch.tensor(target)).float().mean().item()
    assert table.columns["token_accuracy"][3] == pytest.approx(hits)


def test_sentence_bleu_and_chrf_equal_sacrebleu(table):
    for hyp, ref, bleu, chrf in zip(table.columns["output"], table.columns["reference"],
                                    table.columns["bleu"], table.columns["chrf"]):
        assert bleu == pytest.approx(sacrebleu.sentence_bleu(hyp, [ref], tokenize="char").score)
        assert chrf == pytest.approx(sacrebleu.sentence_chrf(hyp, [ref]).score)


def test_sentence_bleu_from_stats_on_word_sentences():
    hyps = ["the cat sat on the mat", "a dog", "", "completely different words here"]
    refs = ["the cat is on the mat", "a dog runs", "something", "completely different words here"]
    stats = ex.bleu_statistics(hyps, refs, "13a")
    got = ex.sentence_bleu_from_stats(stats, "13a")
    want = [sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hyps, refs)]
    assert got == pytest.approx(want)


def test_slice_corpus_bleu_equals_sacrebleu_on_the_slice(table):
    rows = ex.SliceFilter({"source": "[a-h]"}, min_length=5).rows(table)
    assert 0 < len(rows) < len(table)
    hyps = [table.columns["output"][i] for i in rows]
    refs = [table.columns["reference"][i] for i in rows]
    summary = ex.summarize(table, rows)
    assert summary.count == len(rows)
    assert summary.bleu == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="char").score)
    assert summary.mean_loss == pytest.approx(np.mean(table.columns["loss_per_token"][rows]))


def test_filters_match_python_re_and_lengths(table):
    import re

    keep = ex.SliceFilter({"reference": "^[a-m]", "output": ""}, "source_length", 6, 10).rows(table)
    want = [i for i in range(len(table))
            if re.search("^[a-m]", table.columns["reference"][i].lower())
            and 6 <= table.columns["source_length"][i] <= 10]
    assert list(keep) == want


FILTER_TEXTS = ["A man in a blue shirt", "", "two Dogs play", "Ein Hund läuft über die Straße",
                "a child jumps.", "x", "İstanbul at night", "ends with s", "ss ß ẞ", "line\nbreak?"]
FILTER_PATTERNS = ["dog|child", "^a", "s$", "x*", r"\s\w", r"a\s+m", "[^z]+", "(?=a)", "", "^$",
                   r"\bin\b", "Hund", "HUND", "hund", r"\S+$", "T.", r"\n", "(?<=a) ", "ß", "i", r"\Z",
                   ".$", r"s\s*$", "[A-Z]"]


@pytest.mark.parametrize("with_newline", [False, True])
def test_filter_equals_re_search_per_row_with_smart_case(with_newline):
    """One pass of the regex engine over the joined column finds the rows `re.search` finds on
    each row alone: case-insensitively (the row lowercased) unless the pattern has a capital."""
    import re

    texts = FILTER_TEXTS * 3 if with_newline else [t for t in FILTER_TEXTS * 3 if "\n" not in t]
    table = ex.ExampleTable({"source": np.asarray(texts, dtype=object)}, False)
    for pattern in FILTER_PATTERNS:
        compiled = re.compile(pattern)
        lower = ex.ignores_case(pattern)
        want = [compiled.search(t.lower() if lower else t) is not None for t in texts]
        assert list(ex.matches(table, "source", compiled)) == want, pattern
    assert ex.ignores_case(r"\S\W\d") and not ex.ignores_case("Hund")
    joined = ex.JoinedTexts(texts)
    assert joined.joinable != with_newline  # the one pass where no row holds a newline
    assert with_newline or joined._joined_search(re.compile("dog|child")) is not None


def test_prepared_texts_equal_the_ones_made_on_first_use(table):
    """`prepare` (the job runner's) makes what a first sort or filter would: ranks that order the
    rows as Python's stable sort by str.lower does, and the same search results."""
    import re

    texts = FILTER_TEXTS * 3
    columns = {"source": np.asarray(texts, dtype=object)}
    prepared, lazy = ex.ExampleTable(dict(columns), False), ex.ExampleTable(dict(columns), False)
    assert not prepared.prepared and prepared.prepare() is prepared and prepared.prepared
    order = sorted(range(len(texts)), key=lambda i: texts[i].lower())
    assert list(np.argsort(prepared.text_ranks("source"), kind="stable")) == order
    assert np.array_equal(prepared.text_ranks("source"), lazy.text_ranks("source"))
    for pattern in FILTER_PATTERNS:
        compiled = re.compile(pattern)
        assert np.array_equal(ex.matches(prepared, "source", compiled), ex.matches(lazy, "source", compiled))
    seq2seq = table.take(np.arange(len(table))).prepare()  # every text column of a translation
    assert seq2seq.text_names == ex.TEXT_COLUMNS and seq2seq.prepared
    for name in ex.TEXT_COLUMNS:
        assert seq2seq.joined_texts(name, True).texts == [t.lower() for t in table.columns[name]]
        assert seq2seq.joined_texts(name, False).texts == list(table.columns[name])


def test_length_buckets_partition_the_set(table):
    buckets = ex.length_buckets(table, width=3)
    rows = np.concatenate([b.rows for b in buckets])
    assert sorted(rows) == list(range(len(table)))  # every example exactly once
    assert sum(len(b.rows) for b in buckets) == len(table)
    for b in buckets:
        lengths = table.columns["source_length"][b.rows]
        assert lengths.min() >= b.low and lengths.max() <= b.high
        hyps = list(table.columns["output"][b.rows])
        refs = list(table.columns["reference"][b.rows])
        assert b.bleu == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="char").score)


def test_worst_tokens_count_by_hand(table):
    worst = ex.worst_tokens(table, by="mean_loss", top=3, min_count=1)
    label = worst.labels[0]
    mask = table.tokens["label"] == label
    assert worst.counts[0] == mask.sum()
    assert worst.mean_loss[0] == pytest.approx(table.tokens["loss"][mask].mean())
    assert worst.error_rate[0] == pytest.approx(1 - table.tokens["correct"][mask].mean())
    assert list(worst.rows[0]) == sorted(set(table.tokens["row"][mask]))
    assert worst.mean_loss[0] >= worst.mean_loss[1] >= worst.mean_loss[2]


def test_compare_orders_by_change(reverse_workspace, table):
    later = table.take(np.arange(len(table)))
    later.columns["bleu"] = table.columns["bleu"] + np.arange(len(table))
    result = ex.compare(table, later)
    assert list(result.order[:3]) == [len(table) - 1, len(table) - 2, len(table) - 3]
    assert result.change == pytest.approx(np.arange(len(table)))


def test_take_keeps_token_rows_with_their_examples(table):
    part = table.take(np.array([5, 2]))
    assert list(part.columns["source"]) == [table.columns["source"][5], table.columns["source"][2]]
    assert len(part.tokens["row"]) == (table.tokens["row"] == 5).sum() + (table.tokens["row"] == 2).sum()
    assert ex.summarize(part).bleu == pytest.approx(ex.corpus_bleu(table, np.array([5, 2])))


def test_language_model_loss_and_perplexity_per_line():
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="brackets", n_train=16, n_val=4), "gpt", seed=0)
    pairs = ex.examples_of(workspace)
    table = ex.evaluate_examples(workspace, pairs)
    assert len(table) == len(pairs)
    for i, (text, _) in enumerate(pairs):
        result = score(workspace, None, text)
        assert table.columns["loss"][i] == pytest.approx(-result.total, rel=1e-5)
        assert table.columns["perplexity"][i] == pytest.approx(np.exp(-result.total / len(result.logprobs)), rel=1e-5)


def test_export_writes_every_row(table, tmp_path):
    import csv
    import json

    rows = list(csv.reader(open(table.write(tmp_path / "e.csv"), encoding="utf-8")))
    assert rows[0] == list(ex.SEQ2SEQ_COLUMNS) and len(rows) == len(table) + 1
    lines = (tmp_path / "e.jsonl")
    table.write(lines)
    first = json.loads(lines.read_text(encoding="utf-8").splitlines()[0])
    assert first["loss"] == pytest.approx(table.columns["loss"][0])


def test_bad_input_is_one_line(table, reverse_workspace, tmp_path):
    with pytest.raises(UserError) as bad_regex:
        ex.SliceFilter({"source": "(unclosed"}).rows(table)
    with pytest.raises(UserError) as empty:
        ex.summarize(table, ex.SliceFilter({"source": "no such text 123"}).rows(table))
    (tmp_path / "a.txt").write_text("a\nb\nc\n")
    (tmp_path / "b.txt").write_text("a\nb\n")
    with pytest.raises(UserError) as mismatched:
        ex.read_examples(reverse_workspace, src=str(tmp_path / "a.txt"), tgt=str(tmp_path / "b.txt"))
    for error in (bad_regex, empty, mismatched):
        assert "\n" not in str(error.value)
    assert "regular expression" in str(bad_regex.value)
    assert "empty" in str(empty.value)
    assert "differ in length" in str(mismatched.value)


def test_stopping_returns_nothing(reverse_workspace):
    calls = []
    result = ex.evaluate_examples(reverse_workspace, ex.examples_of(reverse_workspace), batch_size=4,
                                  progress=lambda done, total: calls.append((done, total)),
                                  should_stop=lambda: len(calls) >= 2)
    assert result is None and calls == [(4, 24), (8, 24)]
