"""RCB rules (Iazykova et al., 2021, Section 3.2, Table 2), as the authors' code runs them.

rueval follows the authors' solver (RCBSolver.heruistics_all in RSG_RCB.ipynb,
tatiana-iazykova/2020_HACK_RUSSIANSUPERGLUE) where it and the paper differ:

- Order: 'признать' (row 3) is tried together with the sub-string (row 1), before the
  vocabulary overlap (row 2); the rest follow the table.
- "Sub-string" is plain: the lower-cased hypothesis occurs in the lower-cased premise.
- "75% intersection" is an exact ratio: the share of the hypothesis's distinct lemmas found
  among the premise's is == 3/4. Lemmas are taken as in TERRa: pymorphy's first analysis of each
  run of letters [А-Яа-яA-z] in the lower-cased text; the verb lists are looked up among the
  premise's lemmas.
- Words are whitespace tokens (str.split). Row 5 prints "Hypothesis > 5 words"; the code (and
  Section 3.2: hypotheses of fewer than 5 words are likely 'contradiction') has < 5. Row 6's
  "4 < hypothesis < 8" is the code's 5 to 7 words.

One slip of the code is not followed: its row 4 list spells 'cчитать' with a Latin c, so that
verb can never match; rueval looks up the paper's 'считать'.
"""

from __future__ import annotations

from fractions import Fraction

from rueval.solvers.heuristics.base import Rule, letter_lemma_set
from rueval.tasks import Example

VOCABULARY_SHARE = Fraction(3, 4)  # Table 2, row 2: "75% intersection"
ADMIT_VERBS = frozenset({"признать"})  # row 3
OPINION_VERBS = frozenset({"подозревать", "считать", "говорить", "думать", "надеяться", "понять", "уверять"})  # row 4
SHORT_HYPOTHESIS = 5  # row 5: fewer than 5 words
MID_HYPOTHESIS = (5, 7)  # row 6: "4 < hypothesis < 8 words", bounds included
LONG_PREMISE = 30  # row 7: "More than 30 words in the premise"


def _hypothesis_words(example: Example) -> int:
    return len(example.text("hypothesis").split())


def hypothesis_in_premise(example: Example) -> bool:
    return example.text("hypothesis").lower() in example.text("premise").lower()


def admit_verb(example: Example) -> bool:
    return bool(ADMIT_VERBS & letter_lemma_set(example.text("premise")))


def shared_vocabulary(example: Example) -> bool:
    hypothesis = letter_lemma_set(example.text("hypothesis"))
    shared = hypothesis & letter_lemma_set(example.text("premise"))
    return bool(hypothesis) and Fraction(len(shared), len(hypothesis)) == VOCABULARY_SHARE


def opinion_verb(example: Example) -> bool:
    return bool(OPINION_VERBS & letter_lemma_set(example.text("premise")))


def short_hypothesis(example: Example) -> bool:
    return _hypothesis_words(example) < SHORT_HYPOTHESIS


def mid_length_hypothesis(example: Example) -> bool:
    low, high = MID_HYPOTHESIS
    return low <= _hypothesis_words(example) <= high


def long_premise(example: Example) -> bool:
    return len(example.text("premise").split()) > LONG_PREMISE


RULES = (
    Rule.predicting("entailment", hypothesis_in_premise, "The hypothesis is a sub-string of the premise"),  # row 1
    Rule.predicting("entailment", admit_verb, "The presence of 'признать' ('admit') (lemmatised data)"),  # row 3
    Rule.predicting(
        "entailment",
        shared_vocabulary,
        "75% intersection of the hypothesis and premise's vocabularies (lemmatised data)",
    ),  # row 2
    Rule.predicting(
        "neutral",
        opinion_verb,
        "The presence of 'подозревать, считать, говорить, думать, надеяться, понять, уверять' "
        "('suspect, consider, say, think, hope, assure, realise') (lemmatised data)",
    ),  # row 4
    Rule.predicting("contradiction", short_hypothesis, "Hypothesis < 5 words"),  # row 5
    Rule.predicting("neutral", mid_length_hypothesis, "4 < hypothesis < 8 words"),  # row 6
    Rule.predicting("entailment", long_premise, "More than 30 words in the premise"),  # row 7
)
