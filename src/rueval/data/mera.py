"""MERA's task files (ai-forever/MERA): `<folder>/<Task>/task.json`, each `{"data": {"train": [...],
"test": [...]}}` (and "validation" or "dev" where MERA has one), a record `{"instruction", "inputs",
"outputs", "meta": {"id", ...}}`.

Records are converted into the task's own layout (RSG's and TAPE's fields and labels), so the tasks'
parsers, metrics and solvers read them as they read the official files; MERA's `meta.id` becomes the
example's idx, and the instruction and inputs are kept under the field "mera" for MERA's prompts.
Outputs MERA leaves empty (its test sets' hidden answers) read as unlabelled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rueval.data.local import DataSource, PerturbedSplit, Split, parse_examples
from rueval.data.reading import DEFAULT_LIMITS, ReadLimits, read_whole
from rueval.data.records import Dataset
from rueval.errors import DataError, RuevalError

TASK_FILE = "task.json"
MERA_SPLITS = {"train": ("train",), "val": ("validation", "dev"), "test": ("test",)}
LETTERS = ("A", "B", "C", "D")


class MeraRecord:
    """One MERA record with where it came from, for error messages."""

    def __init__(self, data: Any, file: str, number: int):
        self.file, self.number = file, number
        if not isinstance(data, dict):
            raise DataError(file, f"record {number}: expected a JSON object, got {type(data).__name__}")
        self.data = data

    def error(self, field: str, message: str) -> DataError:
        return DataError(self.file, f"record {self.number}: {message}", field=field)

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

    def label(self, labels: Mapping[str, Any] | None = None) -> Any:
        """The outputs as the task's label (through ``labels``, when given); None when MERA left them empty."""
        outputs = self.data.get("outputs")
        if outputs in (None, "", []):
            return None
        if not labels:
            return outputs
        if outputs not in labels:
            raise self.error("outputs", f"unknown answer {outputs!r}; expected one of: {', '.join(labels)}")
        return labels[outputs]


def _labelled(fields: dict[str, Any], name: str, label: Any) -> dict[str, Any]:
    return fields if label is None else {**fields, name: label}


Answers = Mapping[str, Any]  # MERA's answer text -> the task's label


def _rcb(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    meta = r.part("meta")
    fields = {"idx": r.id, "premise": r.input("premise"), "hypothesis": r.input("hypothesis")}
    fields |= {name: meta[name] for name in ("verb", "negation", "genre") if name in meta}
    return _labelled(fields, "label", r.label(answers))


def _parus(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    fields = {"idx": r.id, "premise": r.input("premise"), "choice1": r.input("choice1"), "choice2": r.input("choice2")}
    fields["question"] = r.part("meta").get("task")
    if fields["question"] not in ("cause", "effect"):
        raise r.error("meta.task", f"expected cause or effect, got {fields['question']!r}")
    return _labelled(fields, "label", r.label(answers))


def _rwsd(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    target = {name: r.input(name) for name in ("span1_index", "span1_text", "span2_index", "span2_text")}
    return _labelled({"idx": r.id, "text": r.input("text"), "target": target}, "label", r.label(answers))


def _science_qa(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    """TAPE's layout: the options inline in the question, "(A) ... (D) ..."."""
    options = " ".join(f"({letter}) {r.input('option_' + letter.lower())}" for letter in LETTERS)
    fields = {"idx": r.id, "question": f"{r.input('question')} {options}"}
    fields |= {k: v for k, v in r.part("meta").items() if k != "id"}
    return _labelled(fields, "answer", r.label(answers))


def _multiq(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    meta = r.part("meta")
    fields = {
        "idx": r.id,
        "support_text": r.input("support_text"),
        "main_text": r.input("text"),
        "question": r.input("question"),
        "bridge_answers": meta.get("bridge_answers", []),
    }
    spans = r.label()
    if spans is not None and not (isinstance(spans, list) and all(isinstance(a, dict) for a in spans)):
        raise r.error("outputs", "expected a list of answer spans {label, length, offset, segment}")
    return _labelled(fields, "main_answers", spans)


def _chegeka(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    fields = {"question_id": r.id, "question": r.input("text"), "topic": r.input("topic")}
    fields |= {k: v for k, v in r.part("meta").items() if k != "id"}
    return _labelled(fields, "answer", r.label())


@dataclass(frozen=True)
class MeraTask:
    """How one of MERA's tasks maps onto rueval's task of the same data."""

    name: str  # MERA's: its folder and its submission file <name>.json
    convert: Callable[[MeraRecord, Answers], dict[str, Any]]  # a MERA record -> a record in the task's own layout
    # MERA's answer texts and the labels they stand for; a language model answers " " + the text.
    # Empty: the answer is generated.
    answers: Answers = field(default_factory=dict)
    cued: bool = False  # MERA's lm-eval task appends "\nОтвет:" to the instruction (its RSG tasks)


LETTER_ANSWERS = {letter: letter for letter in LETTERS}
# rueval's task name -> MERA's task; answers as MERA's dataset cards give them
MERA: dict[str, MeraTask] = {
    "parus": MeraTask("PARus", _parus, {"1": 0, "2": 1}, cued=True),
    "rcb": MeraTask("RCB", _rcb, {"1": "entailment", "2": "contradiction", "3": "neutral"}, cued=True),
    "rwsd": MeraTask("RWSD", _rwsd, {"Да": True, "Нет": False}, cued=True),
    "ru_worldtree": MeraTask("ruWorldTree", _science_qa, LETTER_ANSWERS),
    "ru_openbook": MeraTask("ruOpenBookQA", _science_qa, LETTER_ANSWERS),
    "multiq": MeraTask("MultiQ", _multiq),
    "chegeka": MeraTask("CheGeKa", _chegeka),
}
MERA_TASKS = {name: task.name for name, task in MERA.items()}  # rueval's task name -> MERA's
# rueval's task name -> {label: MERA's answer text}, for MERA's submission files
ANSWERS = {name: {label: text for text, label in task.answers.items()} for name, task in MERA.items() if task.answers}


def is_mera_folder(path: Path) -> bool:
    """A folder with a MERA task folder holding a task.json."""
    return path.is_dir() and any(_task_file(path, name) for name in MERA_TASKS.values())


def _task_file(root: Path, mera_name: str) -> Path | None:
    """The task's task.json under ``root``; two folders for the task (`PARus/`, `parus/`) are an error.
    exists(), not is_file(): a task.json that is a folder or a pipe is refused when it is read."""
    found = [
        child / TASK_FILE
        for child in sorted(root.iterdir())
        if child.is_dir() and child.name.lower() == mera_name.lower() and (child / TASK_FILE).exists()
    ]
    if len(found) > 1:
        raise DataError(str(root), f"two folders for MERA's {mera_name}: {found[0].parent} and {found[1].parent}")
    return found[0] if found else None


class _Records:
    """Converted records as the split-file parser reads lines: (record number, UTF-8 JSON)."""

    def __init__(self, records: list[dict[str, Any]]):
        self._records = records

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        return ((n, json.dumps(record, ensure_ascii=False).encode()) for n, record in enumerate(self._records, 1))


class MeraSource(DataSource):
    """The tasks rueval shares with MERA, read from MERA's task files."""

    def __init__(self, root: Path, limits: ReadLimits = DEFAULT_LIMITS):
        super().__init__([root], f"MERA tasks in {root}", limits)
        self.root = root
        self._documents: dict[str, tuple[dict[str, Any], str]] = {}

    def _document(self, task: Dataset) -> tuple[dict[str, Any], str] | None:
        """The task's {"split": [records]} and the file's hash; None when the folder has no such task."""
        if task.name not in MERA_TASKS:
            return None
        if task.name not in self._documents:
            path = _task_file(self.root, MERA_TASKS[task.name])
            if path is None:
                return None
            raw = read_whole(path, self.limits)
            try:
                document = json.loads(raw.decode("utf-8-sig"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise DataError(str(path), f"not a JSON document ({e})") from None
            splits = document.get("data") if isinstance(document, dict) else None
            if not isinstance(splits, dict) or not all(isinstance(v, list) for v in splits.values()):
                raise DataError(str(path), 'expected {"data": {"train": [...], "test": [...]}}', field="data")
            self._documents[task.name] = (splits, hashlib.sha256(raw).hexdigest())
        return self._documents[task.name]

    def _mera_split(self, task: Dataset, split: str) -> str | None:
        document = self._document(task)
        if document is None:
            return None
        return next((name for name in MERA_SPLITS.get(split, ()) if name in document[0]), None)

    def has_split(self, task: Dataset, split: str) -> bool:
        return self._mera_split(task, split) is not None

    def split_file(self, task: Dataset, split: str, folder: Any = None) -> Path | None:
        return _task_file(self.root, MERA_TASKS[task.name]) if self.has_split(task, split) else None

    def load(self, task: Dataset, split: str, limit: int | None = None) -> Split:
        mera_split = self._mera_split(task, split)
        if mera_split is None:
            raise self.missing(task, split)
        splits, sha256 = self._document(task)
        file = f"{self.split_file(task, split)}#data.{mera_split}"  # "line N" below: the split's record N
        mera = MERA[task.name]
        records = [mera.convert(MeraRecord(r, file, n), mera.answers) for n, r in enumerate(splits[mera_split], 1)]
        for record, original in zip(records, splits[mera_split], strict=True):
            record["mera"] = {"instruction": original.get("instruction"), "inputs": original.get("inputs")}
        examples = parse_examples(task, _Records(records), file, limit, f"reading {task.name}/{split}")[None]
        return Split(task, split, examples, file, hashlib.sha256(f"{sha256}/{mera_split}".encode()).hexdigest())

    def load_perturbed(self, task: Dataset, split: str, limit: int | None = None) -> PerturbedSplit | None:
        return None  # MERA ships no perturbed copies

    def missing(self, task: Dataset, split: str) -> RuevalError:
        if task.name not in MERA_TASKS:
            shared = ", ".join(MERA_TASKS)
            return RuevalError(f"{self.description}: {task.name} is not a MERA task; the tasks rueval shares: {shared}")
        if self._document(task) is None:
            return DataError(str(self.root), f"no {MERA_TASKS[task.name]}/{TASK_FILE} for task {task.name}")
        expected = " or ".join(f'"{name}"' for name in MERA_SPLITS.get(split, (split,)))
        return DataError(
            str(self.split_file(task, "train") or self.root), f"no {split} split: expected {expected} in data"
        )
