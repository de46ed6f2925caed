"""MERA's prompts for its generative tasks (rueval.tasks.mera_generative), built as MERA's harness
builds them (its sources: rueval.data.mera_generative_tasks):

- without demonstrations: the record's instruction filled with its inputs (an inputs text under the
  task's name for it: ``{inputs}``, ruDetox's ``{toxic_comment}``), stripped;
- the first demonstration: the instruction filled (stripped, but for USE); each further
  demonstration, and the question after demonstrations: the task's form (``MeraTask.demo``; USE's
  by the question's type); a demonstration's answer follows " " (the code tasks': the record's
  canonical solution);
- the answer generated with the task's stop sequences, its leading spaces stripped (ruDetox's: its
  spaces either side); the code tasks' 10 samples, each completing the function and run on its tests
  (rueval.core.unsafe_code) with MERA's handling of a markdown fence: the prediction is each
  sample's test results, as MERA's submission writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.formatting import FormatError
from rueval.core.unsafe_code import Program, run_programs
from rueval.data.mera_generative_tasks import GENERATIVE, USE_DEMOS
from rueval.data.mera_tasks import MAX_GEN_TOKS, MERA, RECORD_FIELD
from rueval.tasks.base import Example
from rueval.tasks.prompts.base import Question, TaskPrompt


class MeraGenerativePrompt(TaskPrompt):
    """One MERA generative task's prompt, for examples read from MERA's files."""

    def __init__(self, name: str):
        self.name, self.mera, self.settings = name, MERA[name], GENERATIVE[name]
        self.max_new_tokens, self.stop = (MAX_GEN_TOKS, MAX_GEN_TOKS), self.settings.until
        self.generation: dict[str, Any] = {"until": list(self.settings.until)}
        if self.settings.temperature is not None:  # sampled as MERA's script samples it (HF's top_p 1)
            self.generation |= {"do_sample": True, "temperature": self.settings.temperature, "top_p": 1.0}

    def questions(self, example: Example) -> list[Question]:
        record = _record(example, self.mera.name)
        return [self._question(example, self._filled(example, record["instruction"], self._inputs(record)).strip())]

    def demonstration(self, example: Example, position: int) -> list[Question]:
        if position > 0:
            return self.after_demonstrations(example)
        record = _record(example, self.mera.name)
        query = self._filled(example, record["instruction"], self._inputs(record))
        return [self._question(example, query.strip() if self.settings.query_strip else query)]

    def after_demonstrations(self, example: Example) -> list[Question]:
        record = _record(example, self.mera.name)
        inputs = self._inputs(record)
        if self.name == "use":
            return [self._question(example, self._filled(example, USE_DEMOS[example.fields["type"]], inputs))]
        if "function" in inputs:
            inputs = {**inputs, "function": str(inputs["function"]).rstrip()}
        elif self.settings.demo_strip:
            inputs = {self.mera.text_input: str(inputs[self.mera.text_input]).strip()}
        return [self._question(example, self._filled(example, self.mera.demo, inputs))]

    def prediction(self, example: Example, answers: list[Any]) -> Any:
        answer = answers[0]
        if self.settings.executes:
            samples = answer if isinstance(answer, list) else [answer]
            return run_programs([self._program(example, str(text)) for text in samples], self.mera.name)
        return str(answer).strip() if self.name == "rudetox" else str(answer).lstrip()

    # -- parts ---------------------------------------------------------------------------------------
    def _question(self, example: Example, context: str) -> Question:
        return Question(context, (), self._target(example), self.settings.samples, self.generation)

    def _target(self, example: Example) -> str | None:
        if self.settings.executes:
            solution = example.fields.get("canonical_solution")
            return None if solution is None else f" {solution}"
        outputs = _record(example, self.mera.name).get("outputs")
        return f" {outputs}" if isinstance(outputs, str) and outputs else None

    def _inputs(self, record: Mapping[str, Any]) -> dict[str, Any]:
        inputs = record["inputs"]
        return dict(inputs) if isinstance(inputs, Mapping) else {self.mera.text_input: inputs}

    def _program(self, example: Example, completion: str) -> Program:
        fields = example.fields
        return Program(str(fields["function"]) + unfenced(completion), fields["entry_point"], fields["tests"],
                       fields["test_count"])  # fmt: skip

    def _filled(self, example: Example, template: Any, inputs: Mapping[str, Any]) -> str:
        if not isinstance(template, str):
            raise RuevalError(f"{self.mera.name} example {example.key}: MERA's record needs an instruction text")
        try:
            return self.mera.fill(template, dict(inputs))
        except FormatError as e:
            raise RuevalError(
                f"{self.mera.name} example {example.key}: the MERA instruction cannot be filled: {e}"
            ) from None


def unfenced(completion: str) -> str:
    """A completion without a markdown fence around it (```python ... ```, with the fence character it
    opens with), as MERA's harness reads a completion; one opening with a space, tab or newline as it is."""
    if not completion or completion[0] in " \n\t":
        return completion
    opening, closing = completion[0] * 3 + "python", completion[0] * 3
    if completion.startswith(opening) and completion.endswith(closing):
        return completion[len(opening) : -len(closing)]
    return completion


def _record(example: Example, task: str) -> Mapping[str, Any]:
    record = example.fields.get(RECORD_FIELD)
    if not isinstance(record, Mapping):
        raise RuevalError(f"{task} example {example.key}: the task is MERA's; read it from MERA's files (--data)")
    return record


SIMPLEAR = MeraGenerativePrompt("simplear")
RUMODAR = MeraGenerativePrompt("rumodar")
RUMULTIAR = MeraGenerativePrompt("rumultiar")
USE = MeraGenerativePrompt("use")
RUDETOX = MeraGenerativePrompt("rudetox")
RUHUMANEVAL = MeraGenerativePrompt("ruhumaneval")
RUCODEEVAL = MeraGenerativePrompt("rucodeeval")
