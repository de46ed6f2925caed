"""DaNetQA rules (Iazykova et al., 2021, Section 3.8, Table 7), tried in the table's order.

Question openings compare the first word tokens, lower-cased with ё read as е. 'БЫЛ' is
translated 'was/were' in the paper, so every past form of быть counts.
"""

from __future__ import annotations

from rueval.solvers.heuristics.base import Rule, normalized_words, word_count
from rueval.tasks import Example

LONG_QUESTION = 5  # Table 7, row 6: "More than 5 words in the question"
LONG_PASSAGE = 90  # Table 7, row 7: "More than 90 words in the passage"


def _opens_with(example: Example, *openings: str) -> bool:
    """Whether the question starts with one of the openings (each one or more words)."""
    question = normalized_words(example.text("question"))
    return any(question[: len(opening.split())] == opening.split() for opening in openings)


def starts_with_was(example: Example) -> bool:
    return _opens_with(example, "был", "была", "было", "были")


def starts_with_is(example: Example) -> bool:
    return _opens_with(example, "есть")


def starts_with_belongs(example: Example) -> bool:
    return _opens_with(example, "входит ли")


def starts_with_eat(example: Example) -> bool:
    return _opens_with(example, "едят ли")


def starts_with_is_it_true(example: Example) -> bool:
    return _opens_with(example, "правда ли")


def long_question(example: Example) -> bool:
    return word_count(example.text("question")) > LONG_QUESTION


def long_passage(example: Example) -> bool:
    return word_count(example.text("passage")) > LONG_PASSAGE


RULES = (
    Rule.predicting(True, starts_with_was, "The question starts with 'БЫЛ' ('was/were')"),
    Rule.predicting(True, starts_with_is, "The question starts with 'ЕСТЬ' ('is/are')"),
    Rule.predicting(False, starts_with_belongs, "The question starts with 'ВХОДИТ ЛИ' ('does it belong to')"),
    Rule.predicting(False, starts_with_eat, "The question starts with 'ЕДЯТ ЛИ' ('do they eat')"),
    Rule.predicting(False, starts_with_is_it_true, "The question starts with 'ПРАВДА ЛИ' ('is it true')"),
    Rule.predicting(False, long_question, "More than 5 words in the question"),
    Rule.predicting(False, long_passage, "More than 90 words in the passage"),
)
