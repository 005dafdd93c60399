"""The beam tree's hover and detail text, checked against the search's own numbers."""

import math

import pytest

from explorer.analysis.beam_text import describe_greedy_token, describe_node
from explorer.decoding import beam_search
from explorer.decoding.types import length_penalty


@pytest.fixture
def result(table_model, id_tokenizer):
    return beam_search(table_model, [3, 4, 5], beam_size=3, alpha=0.6, max_len=5, tokenizer=id_tokenizer)


def test_a_node_reads_its_scores_rank_and_prefix(result):
    node = next(n for n in result.nodes if n.parent is not None and n.step == 2)
    lines = describe_node(result, node.id).splitlines()
    assert lines[0] == f"{node.token!r} at step 2 ({node.status})"
    assert lines[1] == f"rank at this step = {node.rank + 1}"
    assert lines[2] == f"token log p = {node.logprob:.3f}  (p = {math.exp(node.logprob):.3f})"
    assert lines[3] == f"cumulative log p = {node.score:.3f}"
    assert lines[4].startswith(f"length-normalised = {node.score / length_penalty(3, 0.6):.3f}")
    assert lines[5] == "prefix: " + " ".join(n.token for n in result.path(node.id))
    assert len(result.path(node.id)) == 3  # steps 0, 1 and 2
    compact = describe_node(result, node.id, compact=True).splitlines()
    assert compact[:2] == [f"{lines[0]}, {lines[1]}", f"{lines[2]}; {lines[3]}"] and compact[2:] == lines[4:]
    assert describe_node(result, 0).startswith("start of the output")


def test_a_greedy_token_reads_its_cumulative_log_prob(result):
    greedy = result.greedy
    text = describe_greedy_token(result, 1).splitlines()
    assert text[0] == f"greedy token {greedy.tokens[1]!r} at step 1"
    assert text[2] == f"cumulative log p = {greedy.token_logprobs[0] + greedy.token_logprobs[1]:.3f}"
