"""The decoding panels' jobs, called without Qt: each is the engine's own call with the shared
settings, and the compare job's BLEU is sacreBLEU's."""

import random

import numpy as np
import pytest
import sacrebleu
import torch

from explorer.analysis.beam_layout import fitted_range, layout_tree, stack_nbest_numbers
from explorer.analysis.beam_tree import BeamTreeIndex, beam_tables
from explorer.data.tasks import Splits
from explorer.data.tokenizers import WordTokenizer
from explorer.decoding import beam_search, encode_context, greedy, sample
from explorer.decoding.examples import find_beam_beats_greedy
from explorer.decoding.jobs import run_beam_search, run_compare, run_find_example
from explorer.decoding.settings import DecodeSettings
from explorer.errors import UserError
from explorer.workspace import Workspace
from seqmodels.config import build_model, make_config

WORDS = "the a cat dog sat ran far down big red small old".split()


@pytest.fixture(scope="module")
def workspace():
    """An untrained GRU seq2seq with sharpened logits: greedy and beam differ on some inputs."""
    rng = random.Random(0)
    sources = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))) for _ in range(16)]
    tok = WordTokenizer.train(WORDS)
    torch.manual_seed(0)
    model = build_model(make_config("seq2seq", "tiny", vocab_size=tok.vocab_size,
                                    src_vocab_size=tok.vocab_size))
    with torch.no_grad():
        model.head.weight.mul_(3.0)
    data = Splits(train=[], val=[(s, s) for s in sources], test=[])
    return Workspace(model=model, tokenizer=tok, src_tokenizer=tok, data=data)


def test_one_set_of_defaults_with_limits():
    settings = DecodeSettings()
    assert (settings.beam_size, settings.alpha, settings.max_len) == (4, 0.6, 40)
    with pytest.raises(ValueError, match="beam_size"):
        DecodeSettings(beam_size=0)
    with pytest.raises(ValueError, match="top_p"):
        DecodeSettings(top_p=1.5)


def test_compare_is_greedy_beam_and_sampling_with_sacrebleu(workspace):
    settings = DecodeSettings(beam_size=3, alpha=0.0, max_len=8, temperature=0.7, seed=5)
    source, reference = "the cat sat", "the cat sat down"
    outputs = run_compare(workspace, source, reference, settings)
    assert [o.strategy for o in outputs] == ["greedy", "beam", "sample"]
    context = encode_context(workspace, source)
    model, tok = workspace.model, workspace.tokenizer
    assert outputs[0].hypothesis.token_ids == greedy(model, context, max_len=8, tokenizer=tok).token_ids
    assert outputs[1].hypothesis.token_ids == beam_search(
        model, context, beam_size=3, alpha=0.0, max_len=8, tokenizer=tok).best.token_ids
    drawn = sample(model, context, temperature=0.7, seed=5, max_len=8, tokenizer=tok).hypothesis
    assert outputs[2].hypothesis.token_ids == drawn.token_ids
    for output in outputs:
        assert len(output.hypothesis.token_ids) <= 8
        expected = sacrebleu.sentence_bleu(output.hypothesis.text, [reference])
        assert output.bleu.score == pytest.approx(expected.score, abs=1e-6)
    assert all(o.bleu is None and not o.matched for o in run_compare(workspace, source, "", settings))


def test_beam_search_job_labels_the_source(workspace):
    result = run_beam_search(workspace, "a dog ran", DecodeSettings(beam_size=2, nbest=2, max_len=6))
    assert result.beam_size == 2 and len(result.nbest) == 2
    assert result.source_tokens == ["a", "dog", "ran", "<eos>"]


def test_find_example_searches_the_validation_pairs(workspace):
    found = run_find_example(workspace, DecodeSettings(beam_size=1, max_len=8))  # width 1: 2
    expected = find_beam_beats_greedy(workspace, workspace.data.val, width=2, max_len=8)
    assert (found is None) == (expected is None)
    if found is not None:
        assert (found.source, found.width, found.margin) == (expected.source, 2, expected.margin)
    empty = Workspace(model=workspace.model, tokenizer=workspace.tokenizer,
                      src_tokenizer=workspace.tokenizer, data=None)
    with pytest.raises(UserError, match="no data"):
        run_find_example(empty)


def test_tree_index_follows_the_paths_and_tables_every_node(workspace):
    result = run_beam_search(workspace, "the big dog", DecodeSettings(beam_size=3, max_len=6))
    tree = BeamTreeIndex(result)
    assert len(tree.nbest_nodes) == len(result.nbest)
    for path, hyp in zip(tree.nbest_nodes, result.nbest):
        assert [result.nodes[i].token_id for i in path] == hyp.token_ids[: len(path)]
    for parent, children in tree.children.items():
        assert all(result.nodes[c].parent == parent for c in children)
    layout = layout_tree(tree.ids, tree.parents, tree.steps, tree.scores)
    x = dict(zip(tree.ids.tolist(), layout.x))
    tables = beam_tables(result, tree, x, {})
    header, rows = tables["nodes"]
    assert len(rows) == len(result.nodes) and header[-2:] == ["x", "y"]
    assert [row[0] for row in rows] == [n.id for n in result.nodes]
    # steps as the tree's axis labels them: the root (<bos>) 0, the first token 1
    steps = [row[header.index("step")] for row in rows]
    assert steps == [n.step + 1 for n in result.nodes] and steps[0] == 0
    assert min(steps[1:]) == 1 and max(steps) == max(n.step for n in result.nodes) + 1
    assert all(row[-1] == "" for row in rows)  # no y given: left blank
    assert sum(row[header.index("nbest")] != "" for row in rows) == len(result.nbest)
    names = [row[0] for row in tables["hypotheses"][1]]
    assert names[-1] == "greedy" and names[0] == "beam #1"


def test_nbest_numbers_in_one_column_do_not_overlap():
    placed, taken = stack_nbest_numbers([(1, 3.0, 0.0), (2, 3.0, 0.1), (3, 5.0, 2.0)],
                                        px_per_step=60.0, px_per_row=20.0, line_px=14.0)
    assert [text for text, _, _ in placed] == ["#1", "#2", "#3"]
    tops = [y * 20.0 for _, _, y in placed]
    assert tops[1] >= tops[0] + 14.0  # pushed below #1 in the same column
    assert taken[2] == (5.0, 2.0 * 20.0 + 14.0)


def test_fitted_range_holds_the_tree_and_the_ghosts():
    layout = layout_tree(np.array([0, 1, 2]), np.array([-1, 0, 0]), np.array([0, 1, 1]),
                         np.array([0.0, -1.0, -2.0]))
    (x0, x1), (y0, y1) = fitted_range(layout, [(4.0, 3.5)], view_height=300.0, line_px=14.0)
    assert x0 < 0 and x1 >= 5.0 and y0 < 0 and y1 > 3.5
