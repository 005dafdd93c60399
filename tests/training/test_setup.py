import gzip

import pytest

from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace, read_data
from seqmodels.config import UNK_ID


def test_task_workspace_sizes_the_model_from_its_tokenizers():
    workspace = build_workspace(DataSpec(task="copy", n_train=50, n_val=10), "seq2seq",
                                preset="tiny", attention="dot", cell="lstm")
    config = workspace.model.config
    assert config.attention == "dot" and config.cell == "lstm" and config.hidden_size == 64
    assert config.vocab_size == workspace.tokenizer.vocab_size
    assert config.src_vocab_size == workspace.src_tokenizer.vocab_size
    assert workspace.task == "copy" and len(workspace.data.train) == 50


def test_tokenizers_are_fitted_on_the_training_split_only(tmp_path):
    path = tmp_path / "pairs.tsv"
    rows = [f"a b c {i % 3}\tx y z" for i in range(9)] + ["zebra\tquokka"]
    path.write_text("\n".join(rows) + "\n")
    spec = DataSpec(tsv=str(path), val_src=None, tokenizer="word", val_fraction=0.1, seed=1)
    splits = read_data(spec)
    assert len(splits.train) == 9 and len(splits.val) == 1
    workspace = build_workspace(spec, "transformer", preset="tiny")
    held_out_src, held_out_tgt = splits.val[0]
    train_words = {w for s, _ in splits.train for w in s.split()}
    for word in held_out_src.split():
        if word not in train_words:
            assert workspace.src_tokenizer.encode(word) == [UNK_ID]


def test_text_file_holds_out_its_last_lines_for_validation(tmp_path):
    path = tmp_path / "corpus.txt.gz"
    lines = [f"line number {i}" for i in range(20)]
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    splits = read_data(DataSpec(text=str(path)))
    assert [s for s, _ in splits.val] == lines[-2:] and splits.kind == "lm"
    workspace = build_workspace(DataSpec(text=str(path)), "rnn-lm", preset="tiny")
    assert workspace.tokenizer.kind == "char"


def test_parallel_files_with_their_own_validation(tmp_path):
    for name, text in {"train.de": "ein hund\nzwei katzen\n", "train.en": "a dog\ntwo cats\n",
                       "val.de": "ein hund\n", "val.en": "a dog\n"}.items():
        (tmp_path / name).write_text(text)
    spec = DataSpec(src=str(tmp_path / "train.de"), tgt=str(tmp_path / "train.en"),
                    val_src=str(tmp_path / "val.de"), val_tgt=str(tmp_path / "val.en"))
    splits = read_data(spec)
    assert splits.train == [("ein hund", "a dog"), ("zwei katzen", "two cats")]
    assert splits.val == [("ein hund", "a dog")]
    assert [(r.kept, r.skipped) for r in splits.reports] == [(2, {}), (1, {})]


def test_skipped_lines_are_reported_with_their_reasons(tmp_path):
    """Nothing is dropped silently: every file read comes back with what was kept and skipped."""
    text = tmp_path / "corpus.txt"
    text.write_text("one\n\ntwo\n   \nthree\n")
    assert [(r.kept, r.skipped) for r in read_data(DataSpec(text=str(text))).reports] == [(3, {"blank": 2})]
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a\tb\n\tno source\nno target\t\n\nc\td\ne\tf\n")
    (report,) = read_data(DataSpec(tsv=str(pairs))).reports
    assert report.kept == 3
    assert report.skipped == {"blank": 1, "blank source": 1, "blank target": 1}
    assert report.summary() == f"{pairs}: kept 3 lines, skipped 3 (1 blank, 1 blank source, 1 blank target)"
    assert read_data(DataSpec(task="copy", n_train=5, n_val=2)).reports == []


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: DataSpec(), "exactly one data source"),
        (lambda: DataSpec(task="copy", text="x.txt"), "exactly one data source"),
        (lambda: DataSpec(src="a.txt"), "go together"),
        (lambda: build_workspace(DataSpec(task="copy"), "gpt"), "gpt model needs"),
        (lambda: build_workspace(DataSpec(task="brackets", n_train=5, n_val=2), "seq2seq"),
         "seq2seq model needs"),
        (lambda: build_workspace(DataSpec(task="nope"), "seq2seq"), "unknown task"),
        (lambda: build_workspace(DataSpec(task="copy", n_train=5, n_val=2), "lstm"),
         "unknown model family"),
        (lambda: build_workspace(DataSpec(task="copy", n_train=5, n_val=2), "seq2seq",
                                 attention="psychic"), "unknown attention"),
        (lambda: build_workspace(DataSpec(text="/no/such/file.txt"), "gpt"), "file.txt"),
    ],
)
def test_bad_specs_are_user_errors(make, message):
    with pytest.raises(UserError, match=message):
        make()


# -- the app's "new model" / "new data" policy (explorer.training.setup.next_workspace) --------------

LM_DATA = DataSpec(task="brackets", n_train=40, n_val=8)
PAIR_DATA = DataSpec(task="copy", n_train=40, n_val=8)


def test_new_data_keeps_an_architecture_that_can_read_it_with_new_vocabularies():
    from explorer.training.setup import next_workspace

    current = build_workspace(PAIR_DATA, "seq2seq", preset="tiny", attention="dot", hidden_size=48)
    fresh = next_workspace(None, DataSpec(task="reverse", n_train=40, n_val=8), current)
    config = fresh.model.config
    assert (config.family, config.attention, config.hidden_size) == ("seq2seq", "dot", 48)
    assert fresh.task == "reverse" and config.vocab_size == fresh.tokenizer.vocab_size


@pytest.mark.parametrize("current_family, data, expected", [
    (None, LM_DATA, "rnn-lm"), (None, PAIR_DATA, "seq2seq"),
    ("transformer", LM_DATA, "rnn-lm"), ("gpt", PAIR_DATA, "seq2seq"),
])
def test_new_data_falls_back_to_the_default_family_for_its_kind(current_family, data, expected):
    from explorer.training.setup import next_workspace

    current = None
    if current_family is not None:
        other = PAIR_DATA if data is LM_DATA else LM_DATA
        current = build_workspace(other, current_family, preset="tiny")
    fresh = next_workspace(None, data, current)
    assert fresh.family == expected and fresh.model.config.hidden_size == 64  # the tiny preset


def test_a_new_model_keeps_fitting_data_and_otherwise_gets_a_default_task():
    from explorer.training.setup import next_workspace
    from seqmodels.config import make_config

    current = build_workspace(PAIR_DATA, "seq2seq", preset="tiny")
    kept = next_workspace(make_config("transformer", "tiny", d_model=32), None, current)
    assert kept.data_spec is current.data_spec and kept.model.config.d_model == 32
    default = next_workspace(make_config("gpt", "tiny", max_len=48), None, current)
    assert default.task == "brackets" and default.model.config.max_len == 48
    assert next_workspace(make_config("seq2seq", "tiny"), None, None).task == "reverse"
    given = next_workspace(make_config("rnn-lm", "tiny", cell="gru"), LM_DATA, current)
    assert given.data_spec is LM_DATA and given.model.config.cell == "gru"


def test_model_overrides_leave_out_the_family_and_the_vocabularies():
    from explorer.training.setup import model_overrides
    from seqmodels.config import make_config

    overrides = model_overrides(make_config("transformer", "tiny", vocab_size=9, src_vocab_size=7))
    assert not {"family", "vocab_size", "src_vocab_size"} & set(overrides)
    assert overrides["d_model"] == 64
