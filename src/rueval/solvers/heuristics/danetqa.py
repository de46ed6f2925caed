"""DaNetQA rules (Iazykova et al., 2021, Section 3.8, Table 7), as the authors' code runs them.

Table 7 speaks of the words a question starts with; the authors' solver
(DaNetQASolver.heruistic_key_words in RSG_DaNetQA.ipynb, tatiana-iazykova/2020_HACK_RUSSIANSUPERGLUE)
searches the lower-cased question with regular expressions, and rueval follows it: 'был' anywhere
in the question (so 'было', 'были', 'забыли' too), 'есть' at its start, 'входит' at its start
(without 'ли'), 'едят' and 'правда ли' anywhere. Words are whitespace tokens (str.split), and the
passage rule fires from 90 words on (the paper: more than 90). The table's order is the code's.
"""

from __future__ import annotations

from rueval.solvers.heuristics.base import Rule
from rueval.tasks import Example

LONG_QUESTION = 5  # Table 7, row 6: "More than 5 words in the question"
LONG_PASSAGE = 90  # Table 7, row 7: "More than 90 words in the passage"; the code's >= 90


def _question(example: Example) -> str:
    return example.text("question").lower()


def mentions_was(example: Example) -> bool:
    return "был" in _question(example)


def starts_with_is(example: Example) -> bool:
    return _question(example).startswith("есть")


def starts_with_belongs(example: Example) -> bool:
    return _question(example).startswith("входит")


def mentions_eat(example: Example) -> bool:
    return "едят" in _question(example)


def mentions_is_it_true(example: Example) -> bool:
    return "правда ли" in _question(example)


def long_question(example: Example) -> bool:
    return len(example.text("question").split()) > LONG_QUESTION


def long_passage(example: Example) -> bool:
    return len(example.text("passage").split()) >= LONG_PASSAGE


RULES = (
    Rule.predicting(True, mentions_was, "The question starts with 'БЫЛ' ('was/were')"),
    Rule.predicting(True, starts_with_is, "The question starts with 'ЕСТЬ' ('is/are')"),
    Rule.predicting(False, starts_with_belongs, "The question starts with 'ВХОДИТ ЛИ' ('does it belong to')"),
    Rule.predicting(False, mentions_eat, "The question starts with 'ЕДЯТ ЛИ' ('do they eat')"),
    Rule.predicting(False, mentions_is_it_true, "The question starts with 'ПРАВДА ЛИ' ('is it true')"),
    Rule.predicting(False, long_question, "More than 5 words in the question"),
    Rule.predicting(False, long_passage, "More than 90 words in the passage"),
)
