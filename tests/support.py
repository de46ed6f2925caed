"""Helpers the tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
from pathlib import Path

import pytest


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def samples_path(out: Path, task: str) -> Path:
    """A run's one sample log of a task: OUT/samples/samples_<task>_<date id>.jsonl, as lm-eval names it."""
    from rueval.results.lm_eval import sample_files

    (path,) = sample_files(Path(out), task)
    return path


def read_samples(out: Path, task: str) -> list[dict]:
    return read_jsonl(samples_path(out, task))


# a small template in the usual shape: a marker per turn, a newline after each, the assistant's marker to answer
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SYSTEM = "Ты помощник."


def require(available: bool, reason: str) -> None:
    """For a test that needs a real component (a browser, a server, an optional extra): skipped with
    ``reason`` where it is missing, failed under CI=true, where .ci/run installs every component."""
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: nothing may be skipped)")
    pytest.skip(reason, allow_module_level=True)


# lm-evaluation-harness in a virtualenv of its own (.ci/run makes it and sets RUEVAL_LMEVAL_PYTHON)
LM_EVAL_PYTHON = Path(
    os.environ.get("RUEVAL_LMEVAL_PYTHON") or Path(__file__).resolve().parents[1] / ".venv-lmeval" / "bin" / "python"
)


def lm_eval_missing(*modules: str) -> str | None:
    """Why lm-eval's interpreter cannot be used (it is absent, or cannot import ``modules``), or None."""
    if not LM_EVAL_PYTHON.is_file():
        return f"needs lm-eval: no interpreter at {LM_EVAL_PYTHON} (set RUEVAL_LMEVAL_PYTHON, or run .ci/run's step)"
    found = subprocess.run([str(LM_EVAL_PYTHON), "-c", f"import {', '.join(modules)}"], capture_output=True)
    return None if found.returncode == 0 else f"needs lm-eval: {LM_EVAL_PYTHON} cannot import {' and '.join(modules)}"


def require_modules(*names: str, extra: str) -> None:
    """``require`` for Python packages of an optional extra."""
    missing = [name for name in names if importlib.util.find_spec(name) is None]
    require(not missing, f"needs {', '.join(missing)}: pip install -e '.[{extra}]'")


# A made-up task of one's own, as tests declare it: do two sentences say the same? Label 1 pairs a
# sentence with its words in reverse order, 0 with another sentence. Train 32 records, val 6, test 10.
PARAPHRASE_SENTENCES = (
    "Кошка спит на тёплом подоконнике", "Поезд прибыл на вокзал с опозданием", "Мальчик читает книгу в парке",
    "Завтра ожидается сильный дождь", "Бабушка испекла яблочный пирог", "Команда выиграла финальный матч",
    "Магазин закрывается в девять вечера", "Учитель объяснил новую тему", "Река замёрзла в начале декабря",
    "Врач назначил больному лекарство", "Собака громко лает во дворе", "Студенты сдали экзамен досрочно",
    "Самолёт взлетел ровно в полдень", "Курс доллара вырос на биржах", "Шахтёры добыли рекордный объём угля",
    "Музей открыл выставку старинных икон", "Хоккеисты проиграли в овертайме", "Садовник подстриг кусты роз",
    "Космонавты вернулись на Землю", "Рыбаки поймали огромную щуку", "Депутаты приняли новый закон",
    "Туристы поднялись на вершину горы", "Оркестр сыграл симфонию Чайковского", "Дети слепили снеговика",
)  # fmt: skip


def write_paraphrase_data(folder: Path) -> dict[str, list[dict]]:
    """The made-up task's train, val and test files in ``folder``; returns their records."""
    records = []
    for i, sentence in enumerate(PARAPHRASE_SENTENCES):
        reordered = " ".join(reversed(sentence.split())).capitalize()
        other = PARAPHRASE_SENTENCES[(i + 7) % len(PARAPHRASE_SENTENCES)]
        records += [(sentence, reordered, 1), (sentence, other, 0)]
    order = list(range(len(records)))
    random.Random(0).shuffle(order)
    rows = [{"idx": n, "sentence1": records[i][0] + ".", "sentence2": records[i][1] + ".", "label": records[i][2]}
            for n, i in enumerate(order)]  # fmt: skip
    splits = {"train": rows[:32], "val": rows[32:38], "test": rows[38:]}
    for name, split in splits.items():
        write_jsonl(folder / f"{name}.jsonl", split)
    return splits


# In rueval these are src/rueval/tasks/paraphrase.py (added to DECLARATIONS) and
# src/rueval/tasks/prompts/paraphrase.py (found by the task's name); here a package of the test's own.
# The task is the first of a new benchmark, "madeup".
PARAPHRASE_DECLARATION = '''
"""Paraphrase: do two sentences say the same? A made-up RSG-style classification task."""

from rueval.tasks import Benchmark, Task
from rueval.tasks.shapes import Texts

TASKS = (
    Task(
        name="paraphrase",
        benchmark="madeup",
        folder="Paraphrase",
        description="do two sentences say the same?",
        shape=Texts(("sentence1", "sentence2"), labels=(0, 1)),
        metrics=("accuracy",),
        split_files={"train": ("train.jsonl",), "val": ("val.jsonl",), "test": ("test.jsonl",)},
        prompt="paraphrase_prompt:PROMPT",
    ),
)
BENCHMARK = Benchmark(name="madeup", title="Made-up", tasks=TASKS)
'''
# The same task added to an existing benchmark, RussianSuperGLUE, as the recipe's second form says.
PARAPHRASE_IN_RSG = (
    PARAPHRASE_DECLARATION.replace("from rueval.tasks import Benchmark, Task\n", "from rueval.tasks import Task, rsg\n")
    .replace('benchmark="madeup",', "benchmark=rsg.NAME,\n        layout=rsg.LAYOUT,")
    .replace('BENCHMARK = Benchmark(name="madeup", title="Made-up", tasks=TASKS)\n', "")
)
PARAPHRASE_PROMPT = """
from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATE = "Предложение 1: {sentence1} Предложение 2: {sentence2} Вопрос: они значат одно и то же? Ответ:"
PROMPT = ChoicePrompt(TEMPLATE, {NO: 0, YES: 1})
"""


def write_paraphrase_modules(package: Path, declaration: str = PARAPHRASE_DECLARATION) -> Path:
    """The made-up task's declaration module and prompt module in ``package`` (to put on sys.path)."""
    package.mkdir(parents=True, exist_ok=True)
    (package / "paraphrase.py").write_text(declaration, encoding="utf-8")
    (package / "paraphrase_prompt.py").write_text(PARAPHRASE_PROMPT, encoding="utf-8")
    return package
