"""One of MERA's records with where it came from (`{"instruction", "inputs", "outputs", "meta"}`, in
either layout MERA has published, rueval.data.mera), and ``MeraTask``: how one of MERA's tasks maps
onto rueval's task of the same data, with MERA's settings for it. The tasks themselves are declared in
rueval.data.mera_tasks (the seven shared with RSG and TAPE) and rueval.data.mera_choice_tasks (MERA's
own choice and classification tasks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rueval.core.errors import DataError
from rueval.core.formatting import fill

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

    def text_input(self) -> str:
        """The inputs of a task whose inputs are one text (BPS's sequence, LCS's strings)."""
        inputs = self.data.get("inputs")
        if not isinstance(inputs, str):
            raise self.error("inputs", f"expected the task's text, got {inputs!r:.60}")
        return inputs

    def meta_int(self, name: str) -> int:
        """An integer of the record's meta (its id, a dialogue's number ...)."""
        meta = self.part("meta")
        if name not in meta:
            raise self.error(f"meta.{name}", "missing")
        if isinstance(meta[name], bool) or not isinstance(meta[name], int):
            raise self.error(f"meta.{name}", f"expected an integer, got {meta[name]!r:.60}")
        return meta[name]

    @property
    def id(self) -> int:
        """MERA's id of the record: an integer, as in every MERA task file."""
        return self.meta_int("id")

    @property
    def outputs(self) -> Any:
        """The outputs, None where MERA left them empty: "", [], answer spans with no text, or an
        object of empty answers (ruEthics' criteria)."""
        outputs = self.data.get("outputs")
        if isinstance(outputs, list) and all(isinstance(a, dict) and not a.get("segment") for a in outputs):
            return None
        if isinstance(outputs, dict) and all(value in (None, "") for value in outputs.values()):
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


def labelled(fields: dict[str, Any], name: str, label: Any) -> dict[str, Any]:
    return fields if label is None else {**fields, name: label}


Answers = Mapping[str, Any]  # MERA's answer text -> the task's label


@dataclass(frozen=True)
class MeraTask:
    """How one of MERA's tasks maps onto rueval's task of the same data, and MERA's settings for it."""

    name: str  # MERA's: its task.json folder, its submission file <name>.json; lower-cased, its dataset config
    convert: Callable[[MeraRecord, Answers], dict[str, Any]]  # a MERA record -> a record in the task's own layout
    shots: int  # MERA's number of demonstrations per test item
    demo: str  # a demonstration after the first, and the question after them, over the record's inputs
    # MERA's answer texts and the labels they stand for; a language model answers " " + the text.
    # Empty: the answer is generated, or (letters) is the letter of one of the record's own options.
    answers: Answers = field(default_factory=dict)
    letters: bool = False
    cued: bool = False  # the first demonstration: the instruction followed by ANSWER_CUE (else stripped)
    # MERA's splits whose records are demonstrations (its task file's training_split; where it has
    # none, lm-eval draws them from the test split, each item's own record left out)
    train: tuple[str, ...] = ("train",)
    # the only fields an instruction names; its other braces are text (BPS's "фигурные {}", ruTiE's
    # "{context}"). Empty: every {name} is a field of the inputs, as MERA's instruction.format(**inputs)
    placeholders: tuple[str, ...] = ()
    stripped: bool = True  # the filled instruction stripped, asked alone (BPS's doc_to_text keeps it as is)
    strip_query: bool = True  # the first demonstration's instruction stripped (fewshot_config.query)
    lstrip_demo: bool = False  # the task file's demonstration form ends in .lstrip() (ruMMLU, MaMuRAMu)
    demos_within: str = ""  # a field whose value a test item's demonstrations share (MERA's sampler: domain)
    # ruEthics: one answer per record, judged against each of these criteria of its outputs
    criteria: tuple[str, ...] = ()
    dialog: bool = False  # ruTiE: the instruction's "{context}" holds the dialogue's earlier questions
    text_input: str = "inputs"  # the name an instruction gives the inputs where they are one text (ruDetox's)

    @property
    def config(self) -> str:
        """MERA's dataset configuration (MERA-evaluation/MERA's data/<config>/)."""
        return self.name.lower()

    @property
    def generated(self) -> bool:
        return not self.answers and not self.letters

    def fill(self, template: str, inputs: Any, extra: Mapping[str, str] | None = None) -> str:
        """``template`` filled as MERA fills the task's instruction: ``template.format(**inputs)``, or
        ``format(<text_input>=inputs)`` where the inputs are one text; with ``placeholders`` those fields
        alone, every other brace kept as written. A FormatError (rueval.core.formatting) if it
        cannot be filled within bounds."""
        fields = {**(inputs if isinstance(inputs, dict) else {self.text_input: inputs}), **(extra or {})}
        if self.placeholders:
            named = [*self.placeholders, *(extra or {})]
            escaped = template.replace("{", "{{").replace("}", "}}")
            for name in named:
                escaped = escaped.replace("{{" + name + "}}", "{" + name + "}")
            template = escaped
        return fill(template, fields)
