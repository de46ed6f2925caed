"""MERA's prompts, for examples read from MERA's files, built as MERA's lm-eval tasks build them
(MERA-Evaluation/MERA: benchmark_tasks/custom_loglikelihood_task.yaml, each task's file, and
custom_samplers.py; the settings not in the data are declared in rueval.data.mera_tasks):

- without demonstrations: the record's own instruction filled with its inputs, stripped;
- the first demonstration: the instruction filled (for the RSG tasks followed by "\\nОтвет:", for the
  TAPE tasks stripped); each further demonstration, and the question after demonstrations: the
  task's form without the instruction (``MeraTask.demo``); a demonstration's answer follows " ";
- answers " " + MERA's answer text: RCB " 1"/" 2"/" 3", PARus " 1"/" 2", RWSD " Да"/" Нет",
  ruWorldTree and ruOpenBookQA the letter of one of the item's own options (MERA's files list A-D;
  an item with more options is asked with all of them, in the same form); MultiQ and CheGeKa are
  generated, the answer's leading spaces stripped (the generation tasks' remove_whitespace filter);
- MERA's choice and classification tasks of its own (rueval.data.mera_choice_tasks) the same way,
  with each task file's differences (``MeraTask``): inputs that are one text, instructions whose
  other braces are text, stripping; ruEthics answers once for its five criteria; a ruTiE question
  follows its dialogue so far with the model's own answers (``DIALOGUE``, rueval.run.dialogue).

Examples from other data keep the task's own prompt (MERA's own tasks have none: ``MERA_ONLY``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.formatting import FormatError
from rueval.data.mera_choice_tasks import DIALOG_CONTEXT, DIALOGUE
from rueval.data.mera_tasks import ANSWER_CUE, OPTION_LINE, RECORD_FIELD, MeraTask
from rueval.tasks.base import Example
from rueval.tasks.inline_options import split_options
from rueval.tasks.prompts.base import DEMO_SEPARATOR, Choice, Question, TaskPrompt
from rueval.tasks.prompts.common import gold_continuation


class MeraInstructionPrompt(TaskPrompt):
    """The task's prompt, except for examples that carry MERA's record (field RECORD_FIELD)."""

    def __init__(self, mera: MeraTask, own: TaskPrompt):
        self.mera, self.own = mera, own
        self.answers = tuple(Choice(f" {text}", label) for text, label in mera.answers.items())
        self.max_new_tokens, self.stop = own.max_new_tokens, own.stop

    def questions(self, example: Example) -> list[Question]:
        record = example.fields.get(RECORD_FIELD)
        if not record:
            return self.own.questions(example)
        if self.mera.dialog:
            return [self._question(example, self._dialogue(example, record))]
        instruction = self._filled(example, record["instruction"], record)
        return [self._question(example, instruction.strip() if self.mera.stripped else instruction)]

    def demonstration(self, example: Example, position: int) -> list[Question]:
        record = example.fields.get(RECORD_FIELD)
        if not record:
            return self.own.demonstration(example, position)
        if position > 0:
            return self.after_demonstrations(example)
        instruction = self._filled(example, self._instruction(record), record)
        if self.mera.cued:
            return [self._question(example, instruction + ANSWER_CUE)]
        return [self._question(example, instruction.strip() if self.mera.strip_query else instruction)]

    def after_demonstrations(self, example: Example) -> list[Question]:
        record = example.fields.get(RECORD_FIELD)
        if not record:
            return self.own.after_demonstrations(example)
        if self.mera.dialog:  # a ruTiE question keeps its dialogue after demonstrations (--shots)
            return self.questions(example)
        text = self._filled(example, self.mera.demo, record, self._option_lines(example))
        return [self._question(example, text.lstrip() if self.mera.lstrip_demo else text)]

    def prediction(self, example: Example, answers: list[Any]) -> Any:
        if example.fields.get(RECORD_FIELD) and self.mera.generated:
            return str(answers[0]).lstrip()
        if example.fields.get(RECORD_FIELD) and self.mera.criteria:
            return (answers[0],) * len(self.mera.criteria)  # one answer, judged against each criterion
        return self.own.prediction(example, answers)

    def _instruction(self, record: Mapping[str, Any]) -> Any:
        """The record's instruction; a ruTiE question's without the dialogue before it (its "{context}")."""
        instruction = record.get("instruction")
        return (
            instruction.replace(DIALOG_CONTEXT, "")
            if self.mera.dialog and isinstance(instruction, str)
            else instruction
        )

    def _dialogue(self, example: Example, record: Mapping[str, Any]) -> str:
        """A ruTiE question after its dialogue so far, as MERA's context former writes it: the earlier
        questions in the task's form, each followed by " " and the model's answer, the first after the
        instruction's text before "{context}", a blank line after each; then the instruction's rest
        filled, stripped. A dialogue's first question: a blank line, then the instruction filled
        without "{context}" (the context former's delimiter after no questions)."""
        turns = example.fields.get(DIALOGUE) or []
        if not turns:
            return DEMO_SEPARATOR + self._filled(example, self._instruction(record), record).strip()
        before, _, after = str(record["instruction"]).rpartition(DIALOG_CONTEXT)
        shown = [
            self._filled(example, self.mera.demo, {"inputs": turn}).lstrip() + f" {turn['answer']}" for turn in turns
        ]
        rest = self._filled(example, after, record).strip()
        return before + DEMO_SEPARATOR.join(shown) + DEMO_SEPARATOR + rest

    def _question(self, example: Example, context: str) -> Question:
        if self.mera.generated:
            target = None if example.label is None else " " + _answer_text(example.fields[RECORD_FIELD].get("outputs"))
            return Question(context, (), target)
        choices = self._choices(example)
        if self.mera.criteria:  # MERA's demonstration answer: the criteria's majority (ruethics/utils.py)
            majority = None if example.label is None else int(2 * sum(example.label) > len(example.label))
            return Question(context, choices, gold_continuation(choices, majority, example))
        return Question(context, choices, gold_continuation(choices, example.label, example))

    def _choices(self, example: Example) -> tuple[Choice, ...]:
        if not self.mera.letters:
            return self.answers
        return tuple(Choice(f" {letter}", letter) for letter in self._options(example))

    def _options(self, example: Example) -> dict[str, str]:
        return split_options(example.fields["question"], f"{self.mera.name} example {example.key}: question")[1]

    def _option_lines(self, example: Example) -> str:
        """A multiple-choice record's options, one a line, as MERA's demonstrations list them."""
        if not self.mera.letters:
            return ""
        inputs = example.fields[RECORD_FIELD]["inputs"]
        return "\n".join(
            OPTION_LINE.format(letter=letter, text=inputs.get(f"option_{letter.lower()}", text))
            for letter, text in self._options(example).items()
        )

    def _filled(self, example: Example, template: Any, record: Mapping[str, Any], options: str = "") -> str:
        """``template`` (a record's instruction, or a task's form) filled with the record's inputs."""
        inputs = record.get("inputs")
        if not isinstance(template, str) or not isinstance(inputs, dict | str):
            raise RuevalError(f"example {example.key}: MERA's record needs an instruction text and its inputs")
        try:
            return self.mera.fill(template, inputs, {"options": options} if options else None)
        except FormatError as e:
            raise RuevalError(f"example {example.key}: the MERA instruction cannot be filled: {e}") from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.own, name)  # the task's own prompt's settings (templates, options)


def _answer_text(outputs: Any) -> str:
    """A record's answer as MERA's demonstrations show it: its outputs' text (the first span's, for spans)."""
    if isinstance(outputs, list):
        return str(outputs[0].get("segment", "")) if outputs and isinstance(outputs[0], Mapping) else ""
    return str(outputs)


class MeraOnly(TaskPrompt):
    """The own prompt of MERA's tasks of its own: their examples are asked with MERA's record, so an
    example without one (read from other files) cannot be asked."""

    def questions(self, example: Example) -> list[Question]:
        raise RuevalError(
            f"example {example.key}: the task is asked with MERA's instruction; read it from MERA's files"
        )


MERA_ONLY = MeraOnly()
