"""RCB rules (Iazykova et al., 2021, Section 3.2, Table 2), tried in the table's order.

"Sub-string" compares whole words, ignoring case and punctuation, so a hypothesis ending in a
full stop still matches a clause inside the premise. "Intersection of vocabularies" is the
share of the hypothesis's lemmas found in the premise. The verb lists (rows 3 and 4) are the
clause-embedding verbs of the premise, looked up among its lemmas.
"""

from __future__ import annotations

from rueval.solvers.heuristics.base import Rule, contains_phrase, lemma_set, vocabulary_share, word_count
from rueval.tasks import Example

VOCABULARY_SHARE = 0.75  # Table 2, row 2: "75% intersection"
ADMIT_VERBS = frozenset({"признать"})  # Table 2, row 3
OPINION_VERBS = frozenset({"подозревать", "считать", "говорить", "думать", "надеяться", "понять", "уверять"})  # row 4
# Table 2, row 5 prints "Hypothesis > 5 words", but Section 3.2 explains the rule: hypotheses of
# fewer than 5 words are likely 'contradiction' (median 4); we follow the text. Row 6: 4 < n < 8.
SHORT_HYPOTHESIS = 5
MID_HYPOTHESIS = (5, 7)  # Table 2, row 6: "4 < hypothesis < 8 words", bounds included
LONG_PREMISE = 30  # Table 2, row 7: "More than 30 words in the premise"


def hypothesis_in_premise(example: Example) -> bool:
    return contains_phrase(example.text("premise"), example.text("hypothesis"))


def shared_vocabulary(example: Example) -> bool:
    return vocabulary_share(example.text("hypothesis"), example.text("premise")) >= VOCABULARY_SHARE


def admit_verb(example: Example) -> bool:
    return bool(ADMIT_VERBS & lemma_set(example.text("premise")))


def opinion_verb(example: Example) -> bool:
    return bool(OPINION_VERBS & lemma_set(example.text("premise")))


def short_hypothesis(example: Example) -> bool:
    return word_count(example.text("hypothesis")) < SHORT_HYPOTHESIS


def mid_length_hypothesis(example: Example) -> bool:
    low, high = MID_HYPOTHESIS
    return low <= word_count(example.text("hypothesis")) <= high


def long_premise(example: Example) -> bool:
    return word_count(example.text("premise")) > LONG_PREMISE


RULES = (
    Rule.predicting("entailment", hypothesis_in_premise, "The hypothesis is a sub-string of the premise"),
    Rule.predicting(
        "entailment",
        shared_vocabulary,
        "75% intersection of the hypothesis and premise's vocabularies (lemmatised data)",
    ),
    Rule.predicting("entailment", admit_verb, "The presence of 'признать' ('admit') (lemmatised data)"),
    Rule.predicting(
        "neutral",
        opinion_verb,
        "The presence of 'подозревать, считать, говорить, думать, надеяться, понять, уверять' "
        "('suspect, consider, say, think, hope, assure, realise') (lemmatised data)",
    ),
    Rule.predicting("contradiction", short_hypothesis, "Hypothesis < 5 words"),
    Rule.predicting("neutral", mid_length_hypothesis, "4 < hypothesis < 8 words"),
    Rule.predicting("entailment", long_premise, "More than 30 words in the premise"),
)
