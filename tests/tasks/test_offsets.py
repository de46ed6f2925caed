"""RUSSE's word offsets in each convention the official files use (rueval.tasks.offsets)."""

from __future__ import annotations

import pytest

from rueval.tasks.offsets import word_span

SENTENCE = "Как здоровье? Жаба-квакша сидит на диск"


@pytest.mark.parametrize(
    ("start", "end", "word"),
    [
        (4, 12, "здоровье"),  # end at the word
        (4, 13, "здоровье"),  # end one past it, over the punctuation
        (4, 11, "здоровье"),  # end one short of it
        (11, 14, "здоровье"),  # starting on its last letter
        (14, 18, "Жаба-квакша"),  # a hyphenated word is one word
        (35, 40, "диск"),  # one past the end of the sentence
        (35, 39, "диск"),
    ],
)
def test_offsets_find_the_word_whichever_convention(start, end, word):
    span = word_span(SENTENCE, start, end)
    assert span is not None and SENTENCE[span[0] : span[1]] == word


@pytest.mark.parametrize(
    ("start", "end"),
    [(12, 13), (4, 4), (9, 5), (-1, 3), (35, 41), (39, 40), ("4", 12), (4, 12.0), (True, 12), (None, None)],
)
def test_offsets_that_point_at_no_word_are_none(start, end):
    assert word_span(SENTENCE, start, end) is None
