"""translate-toy: a small English-like language -> a verb-final (SOV) language with agreement.

Source grammar (English word order, subject-verb agreement, irregular plurals):

    S    -> NP_subj VP [PP]
    VP   -> V NP_obj | does not V NP_obj          (singular subject; plural: "do not")
    NP   -> Det [Adj] N                           Det: the, a (singular), some (plural)
    PP   -> Prep the Place                        Prep: in, near, behind; Place: singular
    V    -> sees | likes | chases | follows | watches | helps   (bare form for plural subjects)

Target grammar (everything reordered, number marked on nouns, adjectives and the verb):

    S'   -> [PP'] NP'_subj NP'_obj V'
    NP'  -> N-SG | N-PL,  then Adj (Adj-PL after a plural noun),  then a / some ("the" is dropped)
    PP'  -> Place-SG Prep                         (a postposition, and it moves to the front)
    V'   -> stem-3SG | stem-3PL, with NEG before the agreement suffix: see-NEG-3SG

Examples:

    the big dog sees a cat                -> dog-SG big cat-SG a see-3SG
    some old foxes chase the child in the park
                                          -> park-SG in fox-PL old-PL some child-SG chase-3PL
    the teacher does not like the children
                                          -> teacher-SG child-PL like-NEG-3SG

So attention is far from diagonal: the verb comes last but is read second, the place phrase moves
from the end to the front, and "-3SG"/"-3PL" depend on the subject, not on the verb's neighbours.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# noun stem -> its plural in the source
NOUNS = {
    "dog": "dogs", "cat": "cats", "bird": "birds", "fox": "foxes", "horse": "horses",
    "child": "children", "teacher": "teachers", "farmer": "farmers", "mouse": "mice",
    "wolf": "wolves",
}
ADJECTIVES = ("big", "small", "old", "young", "red", "happy", "lazy", "quick")
# verb stem -> third person singular
VERBS = {
    "see": "sees", "like": "likes", "chase": "chases", "follow": "follows", "watch": "watches",
    "help": "helps",
}
PREPOSITIONS = ("in", "near", "behind")
PLACES = ("park", "garden", "house", "river", "forest")


@dataclass(frozen=True)
class NounPhrase:
    stem: str  # a key of NOUNS
    plural: bool = False
    det: str = "the"  # "the", "a" (singular) or "some" (plural)
    adjective: str | None = None

    def source(self) -> list[str]:
        noun = NOUNS[self.stem] if self.plural else self.stem
        return [self.det] + ([self.adjective] if self.adjective else []) + [noun]

    def target(self) -> list[str]:
        words = [f"{self.stem}-{'PL' if self.plural else 'SG'}"]
        if self.adjective:
            words.append(f"{self.adjective}-PL" if self.plural else self.adjective)
        if self.det != "the":
            words.append(self.det)
        return words


def sentence_pair(subject: NounPhrase, verb: str, obj: NounPhrase, negated: bool = False,
                  place: tuple[str, str] | None = None) -> tuple[str, str]:
    """One sentence in both languages; `place` is (preposition, place noun) or None."""
    agreement = "3PL" if subject.plural else "3SG"
    if negated:
        verb_src = ["do" if subject.plural else "does", "not", verb]
        verb_tgt = f"{verb}-NEG-{agreement}"
    else:
        verb_src = [verb if subject.plural else VERBS[verb]]
        verb_tgt = f"{verb}-{agreement}"
    place_src, place_tgt = [], []
    if place is not None:
        preposition, noun = place
        place_src, place_tgt = [preposition, "the", noun], [f"{noun}-SG", preposition]
    source = subject.source() + verb_src + obj.source() + place_src
    target = place_tgt + subject.target() + obj.target() + [verb_tgt]
    return " ".join(source), " ".join(target)


def _random_noun_phrase(rng: random.Random) -> NounPhrase:
    plural = rng.random() < 0.4
    return NounPhrase(
        stem=rng.choice(list(NOUNS)),
        plural=plural,
        det=rng.choice(("the", "some")) if plural else rng.choice(("the", "a")),
        adjective=rng.choice(ADJECTIVES) if rng.random() < 0.5 else None,
    )


def translate_toy_pair(rng: random.Random) -> tuple[str, str]:
    subject, obj = _random_noun_phrase(rng), _random_noun_phrase(rng)
    verb = rng.choice(list(VERBS))
    negated = rng.random() < 0.2
    place = (rng.choice(PREPOSITIONS), rng.choice(PLACES)) if rng.random() < 0.3 else None
    return sentence_pair(subject, verb, obj, negated, place)
