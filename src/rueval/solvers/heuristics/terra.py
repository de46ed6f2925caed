"""TERRa rules (Iazykova et al., 2021, Section 3.5, Table 5), tried in the table's order.

"Vocabularies overlap by X%" is the share of the hypothesis's lemmas found in the premise.
Table 5 reports more coverage for 100% overlap (14%) than for 75% (9%), so its overlap rows
cannot be nested thresholds; we read them as bands: at most a third (row 2), from two thirds
and from three quarters up to, but not including, full overlap (rows 4 and 3), and full
overlap (row 5). "Sub-string" compares whole words, ignoring case and punctuation.
"""

from __future__ import annotations

from rueval.solvers.heuristics.base import Rule, contains_phrase, lemma_set, vocabulary_share, word_count
from rueval.tasks import Example

# The paper's 33% and 66% are a third and two thirds, rounded (a 3-lemma hypothesis sharing 1 is "33%").
LOW_SHARE = 1 / 3  # Table 5, row 2: "overlap by 33%"
HIGH_SHARE = 0.75  # Table 5, row 3: "overlap by 75%"
MID_SHARE = 2 / 3  # Table 5, row 4: "overlap by 66%"
SHORT_PREMISE = 29  # Table 5, row 6: "Less than 29 words in the premise"
LONG_PREMISE = 32  # Table 5, row 7: "More than 32 words in the premise"
MARKER_LEMMAS = frozenset({"только", "мужчина"})  # Table 5, row 8, looked up in the hypothesis (Section 3.5)


def _share(example: Example) -> float:
    return vocabulary_share(example.text("hypothesis"), example.text("premise"))


def hypothesis_in_premise(example: Example) -> bool:
    return contains_phrase(example.text("premise"), example.text("hypothesis"))


def low_overlap(example: Example) -> bool:
    return _share(example) <= LOW_SHARE


def three_quarters_overlap(example: Example) -> bool:
    return HIGH_SHARE <= _share(example) < 1


def two_thirds_overlap(example: Example) -> bool:
    return MID_SHARE <= _share(example) < HIGH_SHARE


def full_overlap(example: Example) -> bool:
    return _share(example) == 1


def short_premise(example: Example) -> bool:
    return word_count(example.text("premise")) < SHORT_PREMISE


def long_premise(example: Example) -> bool:
    return word_count(example.text("premise")) > LONG_PREMISE


def marker_word(example: Example) -> bool:
    return bool(MARKER_LEMMAS & lemma_set(example.text("hypothesis")))


RULES = (
    Rule.predicting("entailment", hypothesis_in_premise, "The hypothesis is a sub-string of the premise"),
    Rule.predicting(
        "not_entailment",
        low_overlap,
        "Vocabularies of the hypothesis and the premise overlap by 33% (lemmatised data)",
    ),
    Rule.predicting(
        "entailment",
        three_quarters_overlap,
        "Vocabularies of the hypothesis and the premise overlap by 75% (lemmatised data)",
    ),
    Rule.predicting(
        "entailment",
        two_thirds_overlap,
        "Vocabularies of the hypothesis and the premise overlap by 66% (lemmatised data)",
    ),
    Rule.predicting(
        "entailment",
        full_overlap,
        "Vocabularies of the hypothesis and the premise overlap by 100% (lemmatised data)",
    ),
    Rule.predicting("not_entailment", short_premise, "Less than 29 words in the premise"),
    Rule.predicting("entailment", long_premise, "More than 32 words in the premise"),
    Rule.predicting(
        "not_entailment", marker_word, "The presence of 'ТОЛЬКО', 'МУЖЧИНА' ('only', 'man') (lemmatised data)"
    ),
)
