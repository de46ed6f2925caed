"""LiDiRus rules (Iazykova et al., 2021, Section 3.1, Table 1).

As the paper says, these rules split sentences on white space only (str.split, so punctuation
stays attached to its word: "зонт," and "зонт" differ, and so do "Зонт" and "зонт", as in the
authors' solver). Only ``same_lemmas`` lemmatises, as that solver does: pymorphy's first analysis
of the razdel tokens stripped of punctuation.

"Sentences differ by N tokens" counts the tokens found in one sentence but not in the other
(the symmetric difference of the two token sets), the reading under which rows 1 and 3 are
the same measure; this is also how the authors' published solver (LiDiRusSolver.py in
tatiana-iazykova/2020_HACK_RUSSIANSUPERGLUE) counts them.

Order: the paper chose the order of its if-statements empirically (Section 3) without printing
it; the authors' solver tries the two entailment rules first, and so do we.
"""

from __future__ import annotations

from rueval.solvers.heuristics.base import Rule, stripped_lemma_set
from rueval.tasks import Example

MANY_UNSHARED_TOKENS = 10  # Table 1, row 1: "differs ... by more than 10"
UNSHARED_COMMAS = 2  # Table 1, row 2: "differ by two commas"
UNSHARED_WORDS = 2  # Table 1, row 3: "differ by two words"
ONE_SIDED_WORDS = frozenset({"и", "не", "что", "никогда", "вовсе", "это"})  # Table 1, row 4
SHARED_WORDS = frozenset({"чтобы", "будет", "от", "он"})  # Table 1, row 6


def _tokens(example: Example, name: str) -> set[str]:
    return set(example.text(name).split())


def _unshared(example: Example) -> set[str]:
    """Whitespace tokens that occur in only one of the two sentences."""
    return _tokens(example, "sentence1") ^ _tokens(example, "sentence2")


def same_lemmas(example: Example) -> bool:
    """Both sentences use the same set of lemmas."""
    return stripped_lemma_set(example.text("sentence1")) == stripped_lemma_set(example.text("sentence2"))


def entailment_word_in_both(example: Example) -> bool:
    return bool(SHARED_WORDS & _tokens(example, "sentence1") & _tokens(example, "sentence2"))


def many_unshared_tokens(example: Example) -> bool:
    return len(_unshared(example)) > MANY_UNSHARED_TOKENS


def unshared_commas(example: Example) -> bool:
    """At least two commas sit on tokens found in only one sentence: an extra clause."""
    return sum(token.count(",") for token in _unshared(example)) >= UNSHARED_COMMAS


def two_unshared_words(example: Example) -> bool:
    return len(_unshared(example)) == UNSHARED_WORDS


def word_in_one_sentence(example: Example) -> bool:
    return bool(ONE_SIDED_WORDS & _unshared(example))


RULES = (
    Rule.predicting(
        "entailment", same_lemmas, "Vocabularies of two sentences overlap by 100% (lemmatised data)"
    ),  # Table 1, row 5
    Rule.predicting(
        "entailment",
        entailment_word_in_both,
        "'Чтобы', 'будет', 'от', 'он' ('in order to', 'will', 'from', 'he') occur in both sentences",
    ),  # Table 1, row 6
    Rule.predicting(
        "not_entailment",
        many_unshared_tokens,
        "Number of tokens in sentence 1 differs from sentence 2 by more than 10",
    ),  # Table 1, row 1
    Rule.predicting("not_entailment", unshared_commas, "Sentences 1 and 2 differ by two commas"),  # Table 1, row 2
    Rule.predicting("not_entailment", two_unshared_words, "Sentences 1 and 2 differ by two words"),  # Table 1, row 3
    Rule.predicting(
        "not_entailment",
        word_in_one_sentence,
        "The presence of 'и', 'не', 'что', 'никогда', 'вовсе', 'это' ('and', 'not', 'that', 'never', 'at all', "
        "'this') in only one of the two sentences",
    ),  # Table 1, row 4
)
