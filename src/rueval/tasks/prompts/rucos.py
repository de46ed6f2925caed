"""RuCoS: the passage, then the query with its @placeholder filled by each distinct candidate
entity; the likeliest filled query wins. (RSG has no official prompt; ours.)"""

from __future__ import annotations

import re

from rueval.core.errors import RuevalError
from rueval.tasks.base import Example
from rueval.tasks.prompts.base import Choice, Question, TaskPrompt

PLACEHOLDER = "@placeholder"
TEMPLATE = "{passage}\n"  # the filled query follows on a line of its own
# News summaries follow the text as "\n@highlight\n<summary>": each summary becomes a plain line.
HIGHLIGHT = re.compile(r"\s*@highlight\s*")


class RucosPrompt(TaskPrompt):
    def questions(self, example: Example) -> list[Question]:
        candidates = tuple(dict.fromkeys(example.candidates))
        if not candidates:
            raise RuevalError(f"rucos example {example.key}: the passage has no candidate entities")
        passage = HIGHLIGHT.sub("\n", example.fields["passage"]).strip()
        query = example.fields["query"]
        choices = tuple(Choice(query.replace(PLACEHOLDER, entity), entity) for entity in candidates)
        target = None
        if example.label is not None:
            # the first gold answer that is a candidate (they all are in well-formed data)
            gold = next((answer for answer in example.label if answer in candidates), example.label[0])
            target = query.replace(PLACEHOLDER, gold)
        return [Question(TEMPLATE.format(passage=passage), choices, target)]


PROMPT = RucosPrompt()
