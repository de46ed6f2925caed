"""TERRa rules (Iazykova et al., 2021, Section 3.5, Table 5), as the authors' code runs them.

rueval follows the authors' solver (TERRaSolver.heruistics_all in RSG_TERRa.ipynb,
tatiana-iazykova/2020_HACK_RUSSIANSUPERGLUE) where it and the paper differ:

- Order: the not_entailment rules (rows 2, 6, 8) come before the overlap rules (rows 3, 5, 4,
  in that order), and row 7 comes last; Table 5 lists rows 1-8.
- "Overlap by X%" is an exact ratio, not a band or threshold: the share of the hypothesis's
  distinct lemmas found among the premise's is == 3/4, == 1 or == 2/3 (and <= 1/3 for row 2).
  Lemmas are pymorphy's first analysis of each run of letters [А-Яа-яA-z] in the lower-cased
  text (ё, outside that range, breaks a word); a hypothesis with no such run has no share.
- "Sub-string" is plain: the lower-cased hypothesis occurs in the lower-cased premise.
- Words in the premise are whitespace tokens (str.split).
- Row 8's coverage: the code gives 6.8% on the official val set, not the paper's 21%.
"""

from __future__ import annotations

from fractions import Fraction

from rueval.solvers.heuristics.base import Rule, letter_lemma_set
from rueval.tasks import Example

LOW_SHARE = Fraction(1, 3)  # Table 5, row 2: "overlap by 33%", the code's <= 1/3
THREE_QUARTERS = Fraction(3, 4)  # row 3: "overlap by 75%"
TWO_THIRDS = Fraction(2, 3)  # row 4: "overlap by 66%"
SHORT_PREMISE = 29  # row 6: "Less than 29 words in the premise"
LONG_PREMISE = 32  # row 7: "More than 32 words in the premise"
MARKER_LEMMAS = frozenset({"только", "мужчина"})  # row 8, looked up in the hypothesis (Section 3.5)


def lemma_share(example: Example) -> Fraction | None:
    """The share of the hypothesis's distinct lemmas that occur in the premise; None if it has none."""
    hypothesis = letter_lemma_set(example.text("hypothesis"))
    if not hypothesis:
        return None
    return Fraction(len(hypothesis & letter_lemma_set(example.text("premise"))), len(hypothesis))


def _share_is(example: Example, share: Fraction) -> bool:
    return lemma_share(example) == share


def _premise_words(example: Example) -> int:
    return len(example.text("premise").split())


def hypothesis_in_premise(example: Example) -> bool:
    return example.text("hypothesis").lower() in example.text("premise").lower()


def low_overlap(example: Example) -> bool:
    share = lemma_share(example)
    return share is not None and share <= LOW_SHARE


def short_premise(example: Example) -> bool:
    return _premise_words(example) < SHORT_PREMISE


def marker_word(example: Example) -> bool:
    return bool(MARKER_LEMMAS & letter_lemma_set(example.text("hypothesis")))


def three_quarters_overlap(example: Example) -> bool:
    return _share_is(example, THREE_QUARTERS)


def full_overlap(example: Example) -> bool:
    return _share_is(example, Fraction(1))


def two_thirds_overlap(example: Example) -> bool:
    return _share_is(example, TWO_THIRDS)


def long_premise(example: Example) -> bool:
    return _premise_words(example) > LONG_PREMISE


RULES = (
    Rule.predicting("entailment", hypothesis_in_premise, "The hypothesis is a sub-string of the premise"),  # row 1
    Rule.predicting(
        "not_entailment",
        low_overlap,
        "Vocabularies of the hypothesis and the premise overlap by 33% (lemmatised data)",
    ),  # row 2
    Rule.predicting("not_entailment", short_premise, "Less than 29 words in the premise"),  # row 6
    Rule.predicting(
        "not_entailment", marker_word, "The presence of 'ТОЛЬКО', 'МУЖЧИНА' ('only', 'man') (lemmatised data)"
    ),  # row 8
    Rule.predicting(
        "entailment",
        three_quarters_overlap,
        "Vocabularies of the hypothesis and the premise overlap by 75% (lemmatised data)",
    ),  # row 3
    Rule.predicting(
        "entailment",
        full_overlap,
        "Vocabularies of the hypothesis and the premise overlap by 100% (lemmatised data)",
    ),  # row 5
    Rule.predicting(
        "entailment",
        two_thirds_overlap,
        "Vocabularies of the hypothesis and the premise overlap by 66% (lemmatised data)",
    ),  # row 4
    Rule.predicting("entailment", long_premise, "More than 32 words in the premise"),  # row 7
)
