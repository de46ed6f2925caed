"""Tasks of one's own, declared in YAML files as lm-evaluation-harness declares its tasks, and loaded with
``--include-path DIR`` (``include(DIR)``): every ``*.yaml`` / ``*.yml`` file under DIR declares one task.

    task: ru_reviews                      # the task's name (-t ru_reviews)
    task_alias: Отзывы                    # the name tables print (optional)
    tag: my_suite                         # a benchmark name that selects it with others (-t my_suite; optional)
    dataset_path: data                    # a folder of JSON Lines files, relative to this file
    training_split: train                 # data/train.jsonl: demonstrations, trained baselines (optional)
    validation_split: val                 # data/val.jsonl (optional)
    test_split: test                      # data/test.jsonl; scored when labelled, else the validation split
    output_type: multiple_choice          # or generate_until
    doc_to_text: "Отзыв: {{text}}\\nОтзыв положительный?"
    doc_to_target: label                  # the field holding the gold answer (or "{{label}}")
    doc_to_choice: ["нет", "да"]          # a classification's answers, the labels it predicts
    target_delimiter: " "                 # between the context and an answer (default " ")
    metric_list:
      - metric: acc                       # acc, mcc, macro_f1, avg_f1; for generated answers exact_match, f1
    generation_kwargs: {until: ["\\n"], max_gen_toks: 32}   # generate_until: stop and budget

Templates are Jinja2, rendered over a record's fields as lm-eval renders them. A ``multiple_choice``
task is a classification when ``doc_to_choice`` lists the answers (the gold, in ``doc_to_target``'s
field, is an answer's text or its position in the list), or a choice among a record's fields when it is
``"{{[option1, option2]}}"`` (the gold is the right option's position). A ``generate_until`` task's
gold is an answer text or a list of right ones, compared as TAPE compares MultiQ's and CheGeKa's
(SQuAD's normalisation). ``dataset_path: json`` with ``dataset_kwargs: {data_files: {split: file}}``
names the files one by one (in one folder). ``include: other.yaml`` takes that file's keys as defaults.

The fields ``doc_to_text`` names are the task's texts, in order (what TF-IDF and fine-tuning read and
perturbations rewrite): a classification's texts; a choice task's context; a generated answer's
passages, the last one the question. Nothing in a task file runs as Python (no ``!function``, no
``process_docs``), and what rueval sets per run is refused here with the option that sets it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError, shown
from rueval.core.yaml_files import read_mapping
from rueval.data.records import Record
from rueval.tasks import BENCHMARKS, EVERY_TASK, TASKS, Task, Template, register
from rueval.tasks.prompts.template import compile_template
from rueval.tasks.shapes import Answer, Choice, Shape, Texts

SUFFIXES = (".yaml", ".yml")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
FIELD = re.compile(r"\s*(?:\{\{\s*)?([A-Za-z_]\w*)\s*(?:\}\})?\s*")  # "label" or "{{ label }}"
OPTION_FIELDS = re.compile(r"\s*\{\{\s*\[([\w\s,]+)\]\s*\}\}\s*")  # "{{[choice1, choice2]}}"
SPLITS = {"training_split": "train", "validation_split": "val", "test_split": "test"}
# lm-eval's metric names (and rueval's) -> rueval's, by what the task predicts
METRICS = {
    "labels": {"acc": "accuracy", "accuracy": "accuracy", "mcc": "mcc", "macro_f1": "macro_f1", "avg_f1": "avg_f1"},
    "answers": {"exact_match": "exact_match", "em": "exact_match", "f1": "token_f1", "token_f1": "token_f1"},
}
DEFAULT_METRICS = {"labels": ("accuracy",), "answers": ("exact_match",)}
# Keys rueval takes from the run, not from a task file, and the option that sets each.
PER_RUN = {
    "num_fewshot": "the run's --shots (lm-eval's --num_fewshot)",
    "description": "doc_to_text (rueval puts nothing before the demonstrations)",
    "fewshot_config": "the run's --shots and --episodes",
    "repeats": "the run's --episodes",
    "filter_list": "rueval's answer normalisation (SQuAD's)",
    "process_docs": "a prepared JSON Lines file (rueval runs no Python from a task file)",
    "process_results": "metric_list (rueval runs no Python from a task file)",
}
READ = {
    "task", "task_alias", "tag", "include", "dataset_path", "dataset_kwargs", *SPLITS, "output_type",
    "doc_to_text", "doc_to_target", "doc_to_choice", "target_delimiter", "fewshot_delimiter",
    "metric_list", "generation_kwargs", "metadata", "num_fewshot",
}  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """A key's value with where it was written."""

    value: Any
    file: Path
    line: int

    def error(self, key: str, message: str) -> DataError:
        return DataError(str(self.file), message, self.line, key)


class Declaration:
    """A task file's keys (with those of the file it includes), read one by one with their places."""

    def __init__(self, file: Path):
        self.file = file
        self.entries, self.files = _read(file)

    def error(self, key: str, message: str) -> DataError:
        entry = self.entries.get(key)
        return entry.error(key, message) if entry else DataError(str(self.file), message, field=key)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        if key not in self.entries:
            if default is ...:
                raise self.error(key, "missing")
            return default
        value = self.entries[key].value
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            raise self.error(key, f"expected {_kind(kind)}, got {shown(value)}")
        return value

    def base(self, key: str) -> Path:
        """The folder a path under ``key`` is relative to: that of the file that wrote it."""
        return self.entries[key].file.parent


def _kind(kind: type | tuple[type, ...]) -> str:
    names = {str: "text", int: "an integer", list: "a list", dict: "a mapping", bool: "true or false"}
    return " or ".join(names.get(k, k.__name__) for k in (kind if isinstance(kind, tuple) else (kind,)))


def _read(file: Path, seen: tuple[Path, ...] = ()) -> tuple[dict[str, Entry], list[Path]]:
    """A file's keys, those of the file it includes first; and every file read."""
    entries = _mapping(file)
    files = [file]
    if "include" in entries:
        entry = entries.pop("include")
        if not isinstance(entry.value, str):
            raise entry.error("include", f"expected a file name, got {shown(entry.value)}")
        included = (file.parent / entry.value).resolve()
        if included in seen or included == file.resolve():
            raise entry.error("include", f"{entry.value} includes itself")
        if not included.is_file():
            raise entry.error("include", f"no such file: {included}")
        defaults, more = _read(included, (*seen, file.resolve()))
        entries, files = {**defaults, **entries}, [*more, file]
    return entries, files


def _mapping(file: Path) -> dict[str, Entry]:
    """The top-level keys of a YAML file with their lines; a DataError naming the file and line if it is bad."""
    return {key: Entry(value, file, line) for key, (value, line) in read_mapping(file).items()}


def load_task(file: Path) -> Task:
    """The task one YAML file declares (not registered)."""
    declaration = Declaration(file)
    for key, entry in declaration.entries.items():
        if key in PER_RUN and not (key == "num_fewshot" and entry.value == 0):
            raise entry.error(key, f"not read from a task file: rueval sets it with {PER_RUN[key]}")
        if key not in READ:
            raise entry.error(key, f"unknown key; rueval reads: {', '.join(sorted(READ - {'num_fewshot'}))}")
    name = declaration.get("task", str)
    if not NAME.fullmatch(name):
        raise declaration.error("task", f"{shown(name)}: a name of letters, digits, '_', '-' and '.'")
    shape, template = _shape_and_prompt(declaration)
    data_dir, split_files = _data(declaration)
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in declaration.files))
    return Task(
        name=name,
        benchmark=_benchmark(declaration),
        folder=name,
        title=declaration.get("task_alias", str, ""),
        description=f"declared in {file}",
        shape=shape,
        metrics=_metrics(declaration, "answers" if isinstance(shape, Answer) else "labels"),
        split_files=split_files,
        normalization="squad" if isinstance(shape, Answer) else "",
        prompt=template,
        data_dir=str(data_dir),
        source=str(file.resolve()),
        revision=digest.hexdigest()[:16],
    )


def _benchmark(declaration: Declaration) -> str:
    tag = declaration.get("tag", (str, list), "user")
    tags = [tag] if isinstance(tag, str) else tag
    if len(tags) != 1 or not isinstance(tags[0], str) or not NAME.fullmatch(tags[0]):
        raise declaration.error("tag", "expected one benchmark name of letters, digits, '_', '-' and '.'")
    declared = (name for name, benchmark in BENCHMARKS.items() if benchmark.tasks)  # not another file's tag
    taken = {*declared, EVERY_TASK, *(name for task in TASKS.values() for name in task.names)}
    if tags[0].lower() in taken:
        raise declaration.error("tag", f"{shown(tags[0])} already names a task or benchmark; choose another")
    return tags[0].lower()


def _template_fields(declaration: Declaration, key: str) -> tuple[str, ...]:
    """The record fields a template names, in order of appearance; a DataError if it is not a template."""
    import jinja2.nodes  # only where YAML tasks are read: the command line starts without it

    source = declaration.get(key, str)
    try:
        compiled = compile_template(source)
        tree = compiled.environment.parse(source)
    except jinja2.TemplateSyntaxError as e:
        raise declaration.error(key, f"not a Jinja2 template: {e.message} (its line {e.lineno})") from None
    names = [node.name for node in tree.find_all(jinja2.nodes.Name) if node.ctx == "load"]
    if not names:
        raise declaration.error(key, "names no field of the records")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class RenderedTarget(Texts):
    """Answers listed, the gold a template (``doc_to_target: "{{label}}"``): what it renders is the
    gold, and lm-eval 0.4.13 reads a rendering of digits as an answer's position."""

    def gold(self, record: Record) -> Any:
        value = record.data.get(self.label_field)
        if isinstance(value, str) and value.isdecimal() and value.isascii():
            record = replace(record, data={**record.data, self.label_field: int(value)})
        return super().gold(record)


def _field(declaration: Declaration, key: str) -> str:
    match = FIELD.fullmatch(declaration.get(key, str))
    if match is None:
        raise declaration.error(key, "expected the field holding the gold answer: its name, or {{name}}")
    return match.group(1)


def _shape_and_prompt(declaration: Declaration) -> tuple[Shape, Template]:
    output = declaration.get("output_type", str)
    texts = _template_fields(declaration, "doc_to_text")
    gold = _field(declaration, "doc_to_target")
    delimiter = declaration.get("target_delimiter", str, " ")
    if declaration.get("fewshot_delimiter", str, "\n\n") != "\n\n":
        raise declaration.error("fewshot_delimiter", 'rueval separates demonstrations by "\\n\\n" only')
    text = declaration.get("doc_to_text", str)
    written = declaration.entries["doc_to_text"]
    prompt = partial(Template, file=str(written.file), line=written.line)
    if output == "generate_until":
        stop, budget = _generation(declaration)
        shape: Shape = Answer(texts[-1], texts[:-1], answer=gold)
        return shape, prompt(text, delimiter=delimiter, stop=stop, max_new_tokens=budget)
    if output != "multiple_choice":
        raise declaration.error("output_type", f"{shown(output)}: expected multiple_choice or generate_until")
    if "generation_kwargs" in declaration.entries:
        raise declaration.error("generation_kwargs", "a multiple_choice task's answers are scored, not generated")
    choices = declaration.get("doc_to_choice", (list, str))
    if isinstance(choices, list):
        if len(choices) < 2 or not all(isinstance(c, str) for c in choices):
            raise declaration.error("doc_to_choice", "expected two or more distinct answer texts")
        if len({unicodedata.normalize("NFC", choice) for choice in choices}) < len(choices):
            raise declaration.error("doc_to_choice", "two answers are the same text (in Unicode NFC)")
        rendered = declaration.get("doc_to_target", str).strip().startswith("{{")
        shape = (RenderedTarget if rendered else Texts)(texts, tuple(choices), label_index=True, label_field=gold)
        return shape, prompt(text, tuple(choices), delimiter)
    match = OPTION_FIELDS.fullmatch(choices)
    if match is None:
        raise declaration.error("doc_to_choice", "expected a list of answers, or a record's option fields: {{[a, b]}}")
    options = tuple(option.strip() for option in match.group(1).split(",") if option.strip())
    context = tuple(field for field in texts if field not in options)
    if len(options) < 2 or not context:
        raise declaration.error("doc_to_choice", "expected two or more option fields besides doc_to_text's context")
    return Choice(context, options, label_field=gold), prompt(text, delimiter=delimiter)


def _generation(declaration: Declaration) -> tuple[tuple[str, ...], int]:
    """generation_kwargs' stop sequences (lm-eval's default: the demonstrations' separator) and budget."""
    settings = declaration.get("generation_kwargs", dict, {})
    until = settings.get("until", ["\n\n"])
    budget = settings.get("max_gen_toks", 256)
    greedy = {"do_sample": False, "temperature": 0}  # rueval's own default
    for key, value in settings.items():
        if key not in ("until", "max_gen_toks") and greedy.get(key, ...) != value:
            raise declaration.error("generation_kwargs", f"{key}: set at run time with --gen-kwargs")
    until = [until] if isinstance(until, str) else until
    if not isinstance(until, list) or not all(isinstance(stop, str) and stop for stop in until):
        raise declaration.error("generation_kwargs", "until: expected a list of stop texts")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise declaration.error("generation_kwargs", f"max_gen_toks: expected a positive integer, got {shown(budget)}")
    return tuple(until), budget


def _metrics(declaration: Declaration, predicts: str) -> tuple[str, ...]:
    known = METRICS[predicts]
    listed = declaration.get("metric_list", list, None)
    if listed is None:
        return DEFAULT_METRICS[predicts]
    metrics = []
    for item in listed:
        name = item.get("metric") if isinstance(item, dict) else None
        if name not in known:
            raise declaration.error("metric_list", f"{shown(name)}: expected one of: {', '.join(known)}")
        if item.get("aggregation", "mean") != "mean" or item.get("higher_is_better", True) is not True:
            raise declaration.error("metric_list", f"{name}: rueval averages over examples, higher is better")
        metrics.append(known[name])
    if not metrics:
        raise declaration.error("metric_list", "is empty")
    return tuple(dict.fromkeys(metrics))


def _data(declaration: Declaration) -> tuple[Path, dict[str, tuple[str, ...]]]:
    """The folder of the task's files and its splits' file names."""
    path = declaration.get("dataset_path", str)
    files = _data_files(declaration) if path == "json" else None
    folder = (declaration.base("dataset_path") / path).resolve()
    if not files and not folder.is_dir():
        raise declaration.error("dataset_path", f"no such folder: {folder}")
    chosen: dict[str, Path] = {}
    for key, split in SPLITS.items():
        if key not in declaration.entries:
            continue
        name = declaration.get(key, str)
        if files is not None and name not in files:
            raise declaration.error(key, f"{shown(name)}: not among dataset_kwargs' data_files ({', '.join(files)})")
        file_name = name if name.endswith(".jsonl") else f"{name}.jsonl"  # a split in a folder: NAME.jsonl
        chosen[split] = files[name] if files is not None else folder / file_name
        if not chosen[split].is_file():
            raise declaration.error(key, f"no such file: {chosen[split]}")
    if "test" not in chosen and "val" not in chosen:
        raise declaration.error("test_split", "missing: a task is scored on its test_split or validation_split")
    folders = {file.parent for file in chosen.values()}
    if len(folders) != 1:
        raise declaration.error("dataset_kwargs", "the data files must be in one folder")
    return folders.pop(), {split: (file.name,) for split, file in chosen.items()}


def _data_files(declaration: Declaration) -> dict[str, Path]:
    """dataset_path: json with dataset_kwargs: {data_files: {split: file}} (one file: the train split, as
    the datasets library reads it)."""
    files = declaration.get("dataset_kwargs", dict).get("data_files")
    files = {"train": files} if isinstance(files, str) else files
    if not isinstance(files, dict) or not all(isinstance(f, str) for f in files.values()):
        raise declaration.error("dataset_kwargs", "expected data_files: {split name: file}")
    paths = {str(name): (declaration.base("dataset_kwargs") / file).resolve() for name, file in files.items()}
    missing = [str(path) for path in paths.values() if not path.is_file()]
    if missing:
        raise declaration.error("dataset_kwargs", f"no such file: {missing[0]}")
    return paths


def task_files(path: str | Path) -> list[Path]:
    """The task files under a folder (searched to any depth, in name order), or the one file given."""
    root = Path(path).expanduser()
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise RuevalError(f"--include-path {path}: no such folder or file")
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file())
    if not files:
        raise RuevalError(f"--include-path {path}: no task files ({', '.join(SUFFIXES)}) in it")
    return files


def include(*paths: str | Path) -> list[Task]:
    """Load every task declared in the YAML files under ``paths`` (folders or files) and register them, so
    every command finds them by name; returns them. A comma in a path separates several."""
    folders = [part for path in paths for part in str(path).split(",") if part.strip()]
    tasks = [load_task(file) for folder in folders for file in task_files(folder.strip())]
    register(*tasks)
    return tasks
