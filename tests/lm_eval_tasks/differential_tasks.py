"""The real lm-eval task files the differential suite runs, and the small local data they are pointed at.

The files are copied at test time from the installed lm-eval's own ``lm_eval/tasks/`` (never into this
repository). Each copy keeps every line but its dataset declaration (``dataset_path`` / ``dataset_name`` /
``dataset_kwargs``), which becomes ``dataset_path: json`` with a ``data_files`` entry per split, pointing at
JSON Lines written here in that task's own field layout.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from support import write_jsonl

Docs = dict[str, list[dict]]  # split name -> documents


@dataclass(frozen=True)
class TaskFiles:
    """A folder of lm-eval's tasks/, the files copied from it, the documents of each task they define, and
    the task or group names the suite asks for."""

    folder: str
    files: tuple[str, ...]
    data: dict[str, Callable[[], Docs]]
    asked: tuple[str, ...]
    covers: str


RU = (
    "Кошка спит на тёплом подоконнике",
    "Поезд прибыл на вокзал с опозданием",
    "Мальчик читает книгу в парке",
    "Завтра ожидается сильный дождь",
    "Бабушка испекла яблочный пирог",
    "Команда выиграла финальный матч",
    "Магазин закрывается в девять вечера",
    "Учитель объяснил новую тему",
    "Река замёрзла в начале декабря",
    "Врач назначил больному лекарство",
    "Собака громко лает во дворе",
    "Студенты сдали экзамен досрочно",
)
EN = (
    "The cat sleeps on the warm windowsill",
    "The train arrived at the station late",
    "A boy reads a book in the park",
    "Heavy rain is expected tomorrow",
    "Grandmother baked an apple pie",
    "The team won the final match",
    "The shop closes at nine in the evening",
    "The teacher explained a new topic",
    "The river froze in early December",
    "The doctor prescribed a medicine",
    "A dog barks loudly in the yard",
    "The students passed the exam early",
)


def pick(pool: tuple[str, ...], i: int) -> str:
    return pool[i % len(pool)]


def story_docs(pool: tuple[str, ...], n: int, start: int) -> list[dict]:
    docs = []
    for i in range(start, start + n):
        right, wrong = pick(pool, i + 4), pick(pool, i + 7)
        answer = 1 + i % 2
        docs.append(
            {
                "story_id": f"s{i}",
                **{f"input_sentence_{k}": pick(pool, i + k - 1) + "." for k in range(1, 5)},
                "sentence_quiz1": (right if answer == 1 else wrong) + ".",
                "sentence_quiz2": (wrong if answer == 1 else right) + ".",
                "answer_right_ending": answer,
            }
        )
    return docs


def xstorycloze(lang: str, variant: int) -> Docs:
    pool = RU if lang == "ru" else EN
    return {"train": story_docs(pool, 2, variant), "eval": story_docs(pool, 3, variant + 5)}


def mmlu_docs(subject: str, n: int, start: int) -> list[dict]:
    docs = []
    for i in range(start, start + n):
        options = [pick(RU, i + k) for k in range(4)]
        docs.append(
            {
                "sample_id": f"{subject}/{i}",
                "subject": subject,
                "question": f"Что верно? {pick(RU, i + 2)}?",
                **{f"option_{letter}": text for letter, text in zip("abcd", options, strict=True)},
                "answer": "ABCD"[(i + 2) % 4],
            }
        )
    return docs


def global_mmlu(subject: str, variant: int) -> Docs:
    # one document of another subject in each file: the task's process_docs filters it out
    stray = mmlu_docs("virology", 1, 9)
    return {"test": mmlu_docs(subject, 3, variant) + stray, "dev": mmlu_docs(subject, 2, variant + 5) + stray}


def belebele() -> Docs:
    docs = []
    for i in range(3):
        answers = [pick(RU, i + k) for k in range(4)]
        docs.append(
            {
                "link": f"https://example.org/{i}",
                "question_number": i,
                "flores_passage": ". ".join(pick(RU, i + k) for k in range(3)) + ".",
                "question": f"О чём говорится во втором предложении? {i}",
                **{f"mc_answer{k + 1}": text for k, text in enumerate(answers)},
                "correct_answer_num": str(1 + (i + 1) % 4),
                "dialect": "rus_Cyrl",
                "ds": "2023-05-03",
            }
        )
    return {"test": docs}


def multiblimp() -> Docs:
    docs = []
    for i in range(4):
        words = pick(RU, i).split()
        docs.append({"sen": " ".join(words) + ".", "wrong_sen": " ".join(reversed(words)) + ".", "lang": "rus"})
    return {"train": docs}


def xwinograd() -> Docs:
    docs = []
    for i in range(3):
        first, second = pick(RU, i).split()[0], pick(RU, i + 5).split()[0]
        docs.append(
            {
                "sentence": f"{first} и {second} спорили, потому что _ {pick(RU, i + 3).lower()}.",
                "option1": first,
                "option2": second,
                "answer": str(1 + i % 2),
            }
        )
    return {"test": docs}


def arithmetic(i: int) -> tuple[str, int]:
    a, b = 3 + 2 * i, 4 + i
    return f"{a} + {b}", a + b


def mgsm() -> Docs:
    def doc(i: int, solved: bool) -> dict:
        sum_text, total = arithmetic(i)
        question = f"У Маши {sum_text.replace(' + ', ' яблок, ей дали ещё ')}. Сколько яблок у Маши?"
        answer = f"Пошаговое решение: {sum_text} = {total}. Ответ: {total}." if solved else None
        return {"question": question, "answer": answer, "answer_number": total, "equation_solution": None}

    return {"train": [doc(i, True) for i in range(2)], "test": [doc(i, False) for i in range(2, 5)]}


def gsm8k() -> Docs:
    def doc(i: int) -> dict:
        sum_text, total = arithmetic(i)
        a, b = sum_text.split(" + ")
        question = f"Tom has {a} apples and buys {b} more. How many apples does Tom have?"
        return {
            "question": question,
            "answer": f"Tom has {sum_text} = <<{sum_text}={total}>>{total} apples.\n#### {total}",
        }

    return {"train": [doc(i) for i in range(6)], "test": [doc(i) for i in range(6, 9)]}


def triviaqa() -> Docs:
    def doc(i: int) -> dict:
        name = pick(EN, i).split()[1]
        aliases = [name, name.lower(), f"the {name.lower()}"]
        return {
            "question": f"What is in the sentence '{pick(EN, i)}'",
            "question_id": f"q{i}",
            "question_source": "local",
            "entity_pages": {},
            "search_results": {},
            "answer": {"aliases": aliases, "normalized_aliases": aliases, "value": name, "normalized_value": name},
        }

    return {"train": [doc(i) for i in range(2)], "validation": [doc(i) for i in range(2, 5)]}


def wikitext() -> Docs:
    # short pages: a page's log-likelihood is one float32 sum over its tokens, whose rounding grows with it
    def doc(i: int) -> dict:
        lines = " . ".join(f"{pick(RU, i + k)} @,@ {1900 + i + k}" for k in range(2))
        return {"page": f" = Статья {i} = \n {lines} . \n {pick(RU, i + 6)} ( снова ) . \n"}

    return {"train": [doc(0)], "validation": [doc(1)], "test": [doc(2), doc(3)]}


def lambada() -> Docs:
    return {"test": [{"text": f"{pick(RU, i)}, а {pick(RU, i + 3).lower()} сегодня"} for i in range(4)]}


def truthfulqa() -> Docs:
    docs = []
    for i in range(3):
        choices = [pick(EN, i + k) + "." for k in range(4)]
        docs.append(
            {
                "question": f"What happens in story {i}?",
                "mc1_targets": {"choices": choices, "labels": [1, 0, 0, 0]},
                "mc2_targets": {"choices": choices[:3], "labels": [1, 1, 0]},
            }
        )
    return {"validation": docs}


def hellaswag() -> Docs:
    def doc(i: int) -> dict:
        words = pick(EN, i).split()
        return {
            "ind": i,
            "activity_label": "Everyday life",
            "ctx_a": " ".join(words[:3]) + ".",
            "ctx_b": " ".join(words[3:]),
            "ctx": pick(EN, i),
            "endings": [pick(EN, i + k).lower() + " [title] now." for k in range(4)],
            "source_id": f"local~{i}",
            "split": "val",
            "split_type": "indomain",
            "label": str(i % 4),
        }

    return {"train": [doc(i) for i in range(2)], "validation": [doc(i) for i in range(2, 5)]}


def arc() -> Docs:
    def doc(i: int) -> dict:
        labels = ["A", "B", "C", "D"]
        return {
            "id": f"arc/{i}",
            "question": f"Which sentence follows '{pick(EN, i)}'?",
            "choices": {"text": [pick(EN, i + k + 1) for k in range(4)], "label": labels},
            "answerKey": labels[i % 4],
        }

    return {
        "train": [doc(i) for i in range(2)],
        "validation": [doc(i) for i in range(2, 4)],
        "test": [doc(i) for i in range(4, 7)],
    }


DATASET_KEY = re.compile(r"^(dataset_path|dataset_name|dataset_kwargs)\s*:")
TASK_NAME = re.compile(r"^task:[ \t]*(\S+)[ \t]*$", re.MULTILINE)


def point_at_local_data(text: str, data_files: dict[str, Path] | None) -> str:
    """``text`` of a task file without its dataset lines (a key and its indented continuation), plus, for a
    file that defines a task, ``dataset_path: json`` reading ``data_files``."""
    kept: list[str] = []
    dropping = False
    for line in text.splitlines():
        if DATASET_KEY.match(line):
            dropping = True
            continue
        if dropping and (line.startswith((" ", "\t", "-")) or not line.strip()):
            continue
        dropping = False
        kept.append(line)
    if data_files:
        kept += ["dataset_path: json", "dataset_kwargs:", "  data_files:"]
        kept += [f"    {split}: {path.as_posix()}" for split, path in data_files.items()]
    return "\n".join(kept) + "\n"


def write_task_folder(table: tuple[TaskFiles, ...], lm_eval_tasks: Path, target: Path) -> dict[str, Docs]:
    """Copy every file of ``table`` from ``lm_eval_tasks`` into ``target`` (a subfolder per lm-eval folder),
    write each task's documents next to it and point the task at them; returns the documents by task."""
    written: dict[str, Docs] = {}
    for entry in table:
        folder = target / entry.folder.replace("/", "_")
        folder.mkdir(parents=True)
        for name in entry.files:
            if name.endswith(".py"):
                shutil.copyfile(lm_eval_tasks / entry.folder / name, folder / name)
                continue
            text = (lm_eval_tasks / entry.folder / name).read_text(encoding="utf-8")
            task = TASK_NAME.search(text)
            data_files = None
            if task and task.group(1) in entry.data:
                docs = written[task.group(1)] = entry.data[task.group(1)]()
                data_files = {
                    s: write_jsonl(folder / "data" / task.group(1) / f"{s}.jsonl", d) for s, d in docs.items()
                }
            (folder / name).write_text(point_at_local_data(text, data_files), encoding="utf-8")
    missing = {name for entry in table for name in entry.data} - set(written)
    assert not missing, f"no copied file defines {sorted(missing)}"
    return written


def strings(value: object) -> Iterator[str]:
    """Every string inside a document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def training_texts(documents: dict[str, Docs]) -> list[str]:
    """Text to train the tiny model on: each document's strings, in the document's order."""
    return [" ".join(strings(doc)) for docs in documents.values() for split in docs.values() for doc in split]
