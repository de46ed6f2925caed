"""MuSeRC rules (Iazykova et al., 2021, Section 3.4, Table 4), one answer option at a time.

"The text" is the passage; overlaps count distinct lemmas shared by the answer and the
passage. Tokens are razdel word tokens (punctuation excluded). As Section 3.4 says, the rules
for the rarer label 1 (a correct answer) are tried first, then those for 0: Table 4's order.
"""

from __future__ import annotations

from rueval.solvers.heuristics.base import Rule, lemma_set, word_count
from rueval.tasks import Example

LONG_ANSWER = 11  # Table 4, row 2: "longer than 11 tokens"
MANY_SHARED = 6  # Table 4, row 3: "More than 6 overlapping lemmas"
SHORT_ANSWER = 4  # Table 4, row 5: "shorter than 4 tokens"


def _shared_lemmas(example: Example) -> int:
    return len(lemma_set(example.text("answer")) & lemma_set(example.text("passage")))


def all_answer_lemmas_in_text(example: Example) -> bool:
    answer = lemma_set(example.text("answer"))
    return bool(answer) and answer <= lemma_set(example.text("passage"))


def long_answer(example: Example) -> bool:
    return word_count(example.text("answer")) > LONG_ANSWER


def many_shared_lemmas(example: Example) -> bool:
    return _shared_lemmas(example) > MANY_SHARED


def no_shared_lemmas(example: Example) -> bool:
    return _shared_lemmas(example) == 0


def short_answer(example: Example) -> bool:
    return word_count(example.text("answer")) < SHORT_ANSWER


def one_shared_lemma(example: Example) -> bool:
    return _shared_lemmas(example) == 1


RULES = (
    Rule.predicting(1, all_answer_lemmas_in_text, "All lemmas from the answer occur in the text (lemmatized data)"),
    Rule.predicting(1, long_answer, "The answer is longer than 11 tokens"),
    Rule.predicting(
        1, many_shared_lemmas, "More than 6 overlapping lemmas between the answer and the text (lemmatized data)"
    ),
    Rule.predicting(0, no_shared_lemmas, "No overlapping lemmas between the answer and the text (lemmatized data)"),
    Rule.predicting(0, short_answer, "The answer is shorter than 4 tokens"),
    Rule.predicting(0, one_shared_lemma, "One overlapping lemma between the answer and the text (lemmatized data)"),
)
