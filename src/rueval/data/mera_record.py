"""One record of MERA's files, `{"instruction", "inputs", "outputs", "meta": {"id", ...}}`, as the
tasks' converters read it (rueval.data.mera_tasks, rueval.data.mera_generative_tasks): its parts, with
errors naming the file, the line (or the task.json's record) and the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rueval.core.errors import DataError

OPTION_LETTERS = "ABCDEFGHIJ"  # inputs option_a, option_b, ... in MERA's multiple-choice records


class MeraRecord:
    """One MERA record with where it came from, for error messages: a task.json's record ``number``
    (``line`` None), or a JSON Lines file's ``line``."""

    def __init__(self, data: Any, file: str, number: int, line: int | None = None):
        self.file, self.number, self.line = file, number, line
        if not isinstance(data, dict):
            raise self.error(None, f"expected a JSON object, got {type(data).__name__}")
        self.data = data

    def error(self, field: str | None, message: str) -> DataError:
        return DataError(self.file, message if self.line else f"record {self.number}: {message}", self.line, field)

    def part(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        if not isinstance(value, dict):
            raise self.error(name, "missing, or not an object")
        return value

    def input(self, name: str) -> Any:
        inputs = self.part("inputs")
        if name not in inputs:
            raise self.error(f"inputs.{name}", "missing")
        return inputs[name]

    @property
    def id(self) -> int:
        """MERA's id of the record: an integer, as in every MERA task file."""
        meta = self.part("meta")
        if "id" not in meta:
            raise self.error("meta.id", "missing")
        if isinstance(meta["id"], bool) or not isinstance(meta["id"], int):
            raise self.error("meta.id", f"expected an integer, got {meta['id']!r:.60}")
        return meta["id"]

    @property
    def outputs(self) -> Any:
        """The outputs, None where MERA left them empty: "", [], or answer spans with no text."""
        outputs = self.data.get("outputs")
        if isinstance(outputs, list) and all(isinstance(a, dict) and not a.get("segment") for a in outputs):
            return None
        return None if outputs in (None, "") else outputs

    def label(self, answers: Mapping[str, Any]) -> Any:
        """The outputs as the task's label, through MERA's ``answers``; None when they are empty."""
        outputs = self.outputs
        if outputs is None:
            return None
        if not isinstance(outputs, str) or outputs not in answers:
            raise self.error("outputs", f"unknown answer {outputs!r:.60}; expected one of: {', '.join(answers)}")
        return answers[outputs]

    def options(self) -> dict[str, str]:
        """A multiple-choice record's options in letter order, as many as it has: {"A": option_a, ...}.
        An option that is null or empty is none (`datasets` writes null for options other records have)."""
        inputs = self.part("inputs")
        letters = [letter for letter in OPTION_LETTERS if inputs.get(f"option_{letter.lower()}") not in (None, "")]
        if len(letters) < 2 or "".join(letters) != OPTION_LETTERS[: len(letters)]:
            raise self.error("inputs", f"expected options option_a, option_b, ... in order, got {', '.join(inputs)}")
        return {letter: str(inputs[f"option_{letter.lower()}"]) for letter in letters}
