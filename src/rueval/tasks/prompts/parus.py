"""PARus: the premise, then "потому что" (cause) or "поэтому" (effect), continued by each
alternative; the likelier continuation wins. (RSG has no official prompt; ours.)"""

from __future__ import annotations

from rueval.core.errors import RuevalError
from rueval.core.text import morph
from rueval.tasks.base import Example
from rueval.tasks.prompts.base import Choice, Question, TaskPrompt
from rueval.tasks.prompts.common import gold_continuation

TEMPLATE = "{premise}, {connective}"
CONNECTIVES = {"cause": "потому что", "effect": "поэтому"}
# pymorphy3 grammemes of proper names, which keep their capital letter mid-sentence
PROPER_NAME = frozenset({"Name", "Surn", "Patr", "Geox", "Orgn", "Trad"})


class ParusPrompt(TaskPrompt):
    def questions(self, example: Example) -> list[Question]:
        question = example.fields["question"]
        if question not in CONNECTIVES:
            raise RuevalError(f"parus example {example.key}: question must be cause or effect, got {question!r}")
        premise = example.fields["premise"].strip().rstrip(".!?…")
        context = TEMPLATE.format(premise=premise, connective=CONNECTIVES[question])
        choices = tuple(
            Choice(" " + _mid_sentence(example.fields[field]), label)
            for field, label in (("choice1", 0), ("choice2", 1))
        )
        return [Question(context, choices, gold_continuation(choices, example.label, example))]


def _mid_sentence(sentence: str) -> str:
    """A sentence as it reads after a comma: first letter lower-cased unless the first word may be
    a proper name or is an abbreviation ("Маша", "МЧС")."""
    sentence = sentence.strip()
    first = sentence.split(maxsplit=1)[0] if sentence else ""
    if not first or first.isupper() or any(PROPER_NAME & p.tag.grammemes for p in morph().parse(first)):
        return sentence
    return sentence[0].lower() + sentence[1:]


PROMPT = ParusPrompt()
