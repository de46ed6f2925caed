"""MuSeRC rules (Iazykova et al., 2021, Section 3.4, Table 4), one answer option at a time.

rueval follows the authors' solver (MuSeRCSolver.py in tatiana-iazykova/2020_HACK_RUSSIANSUPERGLUE):
"the text" is the passage; the answer's length is its whitespace tokens (str.split); lemmas are
pymorphy's first analysis of the razdel tokens stripped of punctuation (their RSG_MorphAnalyzer),
and "overlapping lemmas" are the distinct lemmas the answer and the passage share. Row 1 ("all
lemmas from the answer occur in the text") is, in the code, the answer's lemma count (repeats
included) equal to that number of shared distinct lemmas, so an answer that repeats a lemma
never fires it; the paper's wording would read it as a subset test. As Section 3.4 says, the
rules for the rarer label 1 (a correct answer) are tried first, then those for 0: Table 4's order.
"""

from __future__ import annotations

from rueval.solvers.heuristics.base import Rule, stripped_lemma_set, stripped_lemmas
from rueval.tasks import Example

LONG_ANSWER = 11  # Table 4, row 2: "longer than 11 tokens"
MANY_SHARED = 6  # Table 4, row 3: "More than 6 overlapping lemmas"
SHORT_ANSWER = 4  # Table 4, row 5: "shorter than 4 tokens"


def _shared_lemmas(example: Example) -> int:
    return len(stripped_lemma_set(example.text("answer")) & stripped_lemma_set(example.text("passage")))


def _answer_tokens(example: Example) -> int:
    return len(example.text("answer").split())


def all_answer_lemmas_in_text(example: Example) -> bool:
    return len(stripped_lemmas(example.text("answer"))) == _shared_lemmas(example)


def long_answer(example: Example) -> bool:
    return _answer_tokens(example) > LONG_ANSWER


def many_shared_lemmas(example: Example) -> bool:
    return _shared_lemmas(example) > MANY_SHARED


def no_shared_lemmas(example: Example) -> bool:
    return _shared_lemmas(example) == 0


def short_answer(example: Example) -> bool:
    return _answer_tokens(example) < SHORT_ANSWER


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
