"""Synthetic tasks: deterministic, disjoint splits, and targets checked by independent means."""

import datetime
import re

import pytest

from explorer.data.tasks import TASKS, Splits, make_task
from explorer.data.tasks.dates import FIRST_DAY, LAST_DAY, NUM_FORMATS, format_date, ordinal
from explorer.data.tasks.translate_toy import ADJECTIVES, NOUNS, VERBS, NounPhrase, sentence_pair
from explorer.errors import UserError

SIZES = dict(n_train=400, n_val=50, n_test=50)


def all_pairs(splits: Splits):
    return splits.train + splits.val + splits.test


def test_registry_describes_every_task():
    assert set(TASKS) == {
        "copy", "reverse", "sort", "addition", "dates", "translate-toy", "brackets"}
    for name, spec in TASKS.items():
        assert spec.name == name and spec.kind in ("seq2seq", "lm")
        assert spec.tokenizer in ("char", "word") and "\n" not in spec.description
    assert TASKS["brackets"].kind == "lm" and TASKS["translate-toy"].tokenizer == "word"


@pytest.mark.parametrize("name", sorted(TASKS))
def test_same_seed_same_data_other_seed_other_data_disjoint_splits(name):
    first = make_task(name, seed=1, **SIZES)
    assert first == make_task(name, seed=1, **SIZES)
    assert all_pairs(first) != all_pairs(make_task(name, seed=2, **SIZES))
    assert (len(first.train), len(first.val), len(first.test)) == (400, 50, 50)
    assert first.kind == TASKS[name].kind
    train_sources = {s for s, _ in first.train}
    assert not train_sources & {s for s, _ in first.val + first.test}
    assert len({s for s, _ in first.val}) == 50 and not {s for s, _ in first.val} & {
        s for s, _ in first.test}


def test_copy_reverse_sort_targets():
    for source, target in all_pairs(make_task("copy", **SIZES)):
        assert target == source and 3 <= len(source) <= 12 and source.isalpha()
    for source, target in all_pairs(make_task("reverse", **SIZES)):
        assert target == "".join(reversed(source))
    for source, target in all_pairs(make_task("sort", **SIZES)):
        assert list(target) == sorted(source)


def test_addition_targets_are_correct_sums():
    pairs = all_pairs(make_task("addition", **SIZES))
    for source, target in pairs:
        assert re.fullmatch(r"\d{1,3}\+\d{1,3}", source)
        left, right = source.split("+")
        assert int(target) == int(left) + int(right) and str(int(target)) == target
    assert any(len(t) == 4 for _, t in pairs)  # carries into a new digit happen


# strptime patterns written independently of the generator (ordinal suffixes removed first)
STRPTIME = ["%d %B %Y", "%B %d, %Y", "%d/%m/%Y", "%a %d %b %y", "%d of %B %Y", "%A, %B %d, %Y",
            "%d %b %Y", "%b %d %Y", "%d.%m.%Y", "%Y.%m.%d.", "%d-%b-%Y", "%A %d %B %Y", "%d/%m/%y"]


def parse_human_date(text: str) -> set[datetime.date]:
    text = re.sub(r"\b(\d+)(st|nd|rd|th)\b", r"\1", text)
    found = set()
    for pattern in STRPTIME:
        try:
            found.add(datetime.datetime.strptime(text, pattern).date())
        except ValueError:
            pass
    return found


def test_dates_targets_are_the_iso_form_of_the_source():
    pairs = all_pairs(make_task("dates", **SIZES))
    for source, target in pairs:
        day = datetime.date.fromisoformat(target)
        assert FIRST_DAY <= day <= LAST_DAY
        assert parse_human_date(source) == {day}, source  # exactly one reading, the right one
    # weekday names must be right too, and every format shows up
    example = datetime.date(2021, 3, 3)
    assert format_date(example, 3) == "Wed 3 Mar 21"
    assert {format_date(example, s) for s in range(NUM_FORMATS)} >= {
        "3 March 2021", "March 3, 2021", "03/03/2021", "3rd of March 2021"}
    assert [ordinal(d) for d in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "31st"]


PLURAL_TO_STEM = {plural: stem for stem, plural in NOUNS.items()}
VERB_FORMS = {**{v: v for v in VERBS}, **{third: v for v, third in VERBS.items()}}


def test_translate_toy_reorders_and_agrees():
    pairs = all_pairs(make_task("translate-toy", **SIZES))
    saw_place = saw_negation = saw_plural = False
    for source, target in pairs:
        words, out = source.split(), target.split()
        nouns = [(w, w in PLURAL_TO_STEM) for w in words if w in NOUNS or w in PLURAL_TO_STEM]
        (subject, subject_plural), (obj, obj_plural) = nouns[:2]
        verb = next(VERB_FORMS[w] for w in words if w in VERB_FORMS)
        negated = "not" in words
        # the verb comes last and agrees with the subject, not with the object
        agreement = "3PL" if subject_plural else "3SG"
        assert out[-1] == f"{verb}-{'NEG-' if negated else ''}{agreement}"
        # subject before object, each marked for number; "the" is never translated
        marked = [w for w in out if w.split("-")[0] in NOUNS]
        stem = lambda w: PLURAL_TO_STEM.get(w, w)  # noqa: E731
        assert marked == [f"{stem(subject)}-{'PL' if subject_plural else 'SG'}",
                          f"{stem(obj)}-{'PL' if obj_plural else 'SG'}"]
        # an adjective follows its noun and agrees with it in number
        for i, word in enumerate(out):
            if word.split("-")[0] in ADJECTIVES:
                assert out[i - 1].split("-")[0] in NOUNS
                assert word.endswith("-PL") == out[i - 1].endswith("-PL")
        assert "the" not in out
        assert out.count("a") == words.count("a") and out.count("some") == words.count("some")
        # a place phrase moves from the end of the source to the front of the target
        if words[-3] in ("in", "near", "behind"):
            saw_place = True
            assert out[:2] == [f"{words[-1]}-SG", words[-3]]
        saw_negation |= negated
        saw_plural |= subject_plural
    assert saw_place and saw_negation and saw_plural


def test_translate_toy_docstring_examples():
    assert sentence_pair(NounPhrase("dog", adjective="big"), "see", NounPhrase("cat", det="a")) == (
        "the big dog sees a cat", "dog-SG big cat-SG a see-3SG")
    assert sentence_pair(
        NounPhrase("fox", plural=True, det="some", adjective="old"), "chase", NounPhrase("child"),
        place=("in", "park"),
    ) == ("some old foxes chase the child in the park",
          "park-SG in fox-PL old-PL some child-SG chase-3PL")
    assert sentence_pair(NounPhrase("teacher"), "like", NounPhrase("child", plural=True),
                         negated=True) == (
        "the teacher does not like the children", "teacher-SG child-PL like-NEG-3SG")


def test_brackets_is_language_modelling_with_balanced_far_closings():
    splits = make_task("brackets", **SIZES)
    closing = {"(": ")", "[": "]", "{": "}"}
    distances = []
    for text, target in all_pairs(splits):
        assert target == ""
        stack = []
        for position, char in enumerate(text):
            if char == '"':
                if stack and stack[-1][0] == '"':
                    distances.append(position - stack.pop()[1])
                else:
                    stack.append((char, position))
            elif char in closing:
                stack.append((char, position))
            elif char in closing.values():
                opener, start = stack.pop()
                assert closing[opener] == char, text
                distances.append(position - start)
        assert not stack, text
    assert len(distances) > 100
    assert sum(distances) / len(distances) > 20  # closings come many characters later


def test_bad_requests():
    with pytest.raises(UserError, match="unknown task 'nope'"):
        make_task("nope")
    with pytest.raises(UserError, match="negative"):
        make_task("copy", n_train=-1)


def test_tiny_task_spaces_repeat_instead_of_looping_forever(monkeypatch):
    from explorer.data import tasks

    three = tasks.TaskSpec("three", "seq2seq", "only three sources", "char",
                           lambda rng: (rng.choice("xyz"), "t"))
    monkeypatch.setitem(tasks.TASKS, "three", three)
    splits = make_task("three", n_train=8, n_val=1, n_test=1)
    sources = [s for s, _ in all_pairs(splits)]
    assert len(sources) == 10 and set(sources) == {"x", "y", "z"}
    assert len(set(sources[:3])) == 3  # fresh sources first, repeats only once they run out
