"""rueval's MERA export checked by MERA's own scoring code: a labelled MERA folder of made-up items is
written, rueval runs on it under MERA's settings and exports the submission zip, and MERA's scorer
(benchmarks/mera_scorer_side.py, in its own virtualenv) scores the zip against the same folder; its
scores must equal rueval's. Not part of the test suite.

    python benchmarks/mera_scorer_check.py OUT [--items 40] [--side-python SIDE_VENV/bin/python
        --scoring MERA_SCORING]

OUT/gold is the labelled folder, in MERA-evaluation/MERA's layout (data/<config>/{train,test}.jsonl and
the card's configs, as `datasets` loads a snapshot): made-up Russian items, answers of every shape
(alternatives with ";", an empty alternative, five-option items). Two runs, each exported to OUT/<run>.zip:
- ``tiny``: a tiny random GPT-2 (rueval make-tiny-model) under MERA's settings, demonstrations and
  greedy generation to a line break included;
- ``scripted``: an in-memory model whose log-likelihoods are a hash of the request and whose generated
  answers are the gold answer in the forms scoring must tell apart: as it is, in other case and
  punctuation, another alternative, after spaces, a part, a wrong one, nothing.
With --side-python and --scoring each zip is scored by MERA's code; OUT/comparison.json holds every
metric of both sides. Exit code 1 when any differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import rueval
from rueval.core.progress import set_level
from rueval.models.base import Capabilities, LanguageModel, LoglikelihoodResult
from rueval.run.mera_export import export_mera

SEVEN = ("parus", "rcb", "rwsd", "ru_worldtree", "ru_openbook", "multiq", "chegeka")
NAMES = ["Анна", "Борис", "Вера", "Глеб", "Дарья", "Егор", "Жанна", "Зоя", "Илья", "Кира", "Лев", "Мария"]
THINGS = ["магнит", "компас", "термометр", "барометр", "маятник", "линза", "призма", "рычаг", "блок", "клин"]
RIVERS = ["Айюва", "Ижма", "Печора", "Вычегда", "Сысола", "Луза", "Вымь", "Мезень", "Цильма", "Уса", "Кожва"]
ANSWERS = ["Ртуть", "Галлий", "Пётр Первый", "«Война и мир»", "Байкал", "Кит", "Эльбрус", "Пингвин", "Нева"]


def _numbered(make, count: int, rng: random.Random) -> list[dict]:
    return [make(i, rng) for i in range(count)]


def rcb(i: int, rng: random.Random) -> dict:
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    inputs = {"premise": f"{name} знала, что {thing} номер {i} сломан.", "hypothesis": f"{thing.capitalize()} сломан."}
    return {"instruction": 'Ситуация: "{premise}"\nГипотеза: "{hypothesis}"\nОтветь 1, 2 или 3.', "inputs": inputs,
            "outputs": rng.choice("123"), "meta": {"id": 1000 + i, "genre": "kp"}}  # fmt: skip


def parus(i: int, rng: random.Random) -> dict:
    name = rng.choice(NAMES)
    inputs = {"premise": f"{name} опоздал(а) в {i} раз.", "choice1": "Сломался будильник.", "choice2": "Пошёл снег."}
    return {"instruction": "{premise} Почему?\n1. {choice1}\n2. {choice2}\nОтветь 1 или 2.", "inputs": inputs,
            "outputs": rng.choice("12"), "meta": {"id": 2000 + i, "task": rng.choice(["cause", "effect"])}}  # fmt: skip


def rwsd(i: int, rng: random.Random) -> dict:
    first, second = rng.sample(NAMES, 2)
    text = f"{first} поблагодарила {second} за помощь номер {i}, которую она оказала."
    inputs = {"text": text, "span1_index": 2, "span1_text": second, "span2_index": 8, "span2_text": "она оказала"}
    return {"instruction": "{text}\n«{span2_text}» — это «{span1_text}»? Ответь Да или Нет.", "inputs": inputs,
            "outputs": rng.choice(["Да", "Нет"]), "meta": {"id": 3000 + i}}  # fmt: skip


def science(i: int, rng: random.Random, five_options: bool = True) -> dict:
    letters = "ABCDE" if five_options and i % 7 == 3 else "ABCD"  # some items with five, as RuWorldTree has
    inputs = {"question": f"Какой прибор нужен в опыте {i}?"}
    inputs |= {f"option_{letter.lower()}": thing for letter, thing in zip(letters, rng.sample(THINGS, len(letters)))}
    lines = "\n".join(f"{letter}. {{option_{letter.lower()}}}" for letter in letters)
    return {"instruction": "{question}\n" + lines + "\nОтвет:", "inputs": inputs, "outputs": rng.choice(letters),
            "meta": {"id": 4000 + i}}  # fmt: skip


def multiq(i: int, rng: random.Random) -> dict:
    first, second, third = rng.sample(RIVERS, 3)
    answer = third if i % 3 else f"{third};реку {third}"
    inputs = {"support_text": f"Приток {i} впадает в реку {second}.", "text": f"{second} — приток реки {third}.",
              "question": f"Куда впадает река, принимающая приток {i}?"}  # fmt: skip
    return {"instruction": "Текст 1: {support_text}\nТекст 2: {text}\nВопрос: {question}\nОтвет:", "inputs": inputs,
            "outputs": answer, "meta": {"id": 5000 + i, "bridge_answers": second}}  # fmt: skip


def chegeka(i: int, rng: random.Random) -> dict:
    answer = rng.choice(ANSWERS)
    answer = {0: answer, 1: f"{answer};{rng.choice(ANSWERS)}", 2: f"{answer};"}[i % 3]  # an empty alternative too
    inputs = {"topic": rng.choice(["Наука", "История", "География"]), "text": f"Вопрос {i}: назовите ЭТО."}
    return {"instruction": 'Категория "{topic}". {text}\nОтвет:', "inputs": inputs, "outputs": answer,
            "meta": {"id": 6000 + i, "author": "Автор"}}  # fmt: skip


MAKERS = {"RCB": rcb, "PARus": parus, "RWSD": rwsd, "ruWorldTree": science, "ruOpenBookQA": science,
          "MultiQ": multiq, "CheGeKa": chegeka}  # fmt: skip


def write_gold(
    root: Path, items: int, seed: int = 2024, makers=MAKERS, train_splits: dict[str, str | None] | None = None
) -> dict[str, list[dict]]:
    """The labelled folder in the dataset repository's layout (``makers``: each task's item maker;
    ``train_splits``: a task's split of demonstrations when not "train", None for a test alone);
    returns each task's test records."""
    rng, card, tests = random.Random(seed), ["---", "configs:"], {}
    for name, make in makers.items():
        train = (train_splits or {}).get(name, "train")
        splits = {train: _numbered(make, 12, rng)} if train else {}
        for record in splits.get(train, []):
            record["meta"]["id"] += 100_000  # train ids apart from test ids
        splits["test"] = _numbered(make, items, rng)
        card += [f"- config_name: {name.lower()}", "  data_files:"]
        for split, records in splits.items():
            path = root / "data" / name.lower() / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
            card += [f"  - split: {split}", f"    path: data/{name.lower()}/{split}.jsonl"]
        tests[name] = splits["test"]
    (root / "README.md").write_text("\n".join([*card, "---", "", "Made-up MERA items", ""]), encoding="utf-8")
    return tests


class ScriptedModel(LanguageModel):
    """Log-likelihoods from a hash of each request; generated answers the gold one in varied forms."""

    identity = "mera-check:scripted"
    capabilities = Capabilities(loglikelihood=True, generation=True)

    def __init__(self, tests: dict[str, list[dict]]):
        self.golds = {r["inputs"]["question" if "question" in r["inputs"] else "text"]: r["outputs"]
                      for name in ("MultiQ", "CheGeKa") for r in tests[name]}  # fmt: skip

    def loglikelihood(self, requests, on_done=None):
        return [LoglikelihoodResult(-(_hash(r.context + r.continuation) % 997) / 100, 1, False) for r in requests]

    def generate(self, requests, on_done=None):
        return [self._answer(request.prompt) for request in requests]

    def _answer(self, prompt: str) -> str:
        question = next(q for q in self.golds if q in prompt.rsplit("\n\n", 1)[-1])
        alternatives = self.golds[question].split(";")
        gold, form = alternatives[0], _hash(question) % 7
        return [gold, f"{gold.lower()}!", alternatives[-1], f"  {gold}", f"река {gold}", "не знаю", ""][form]


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def run_and_export(out: Path, gold: Path, name: str, model) -> tuple[Path, Path]:
    run_dir = out / f"run-{name}"
    shutil.rmtree(run_dir, ignore_errors=True)  # a fresh run: no task reused from an earlier one
    rueval.evaluate(model, tasks=list(SEVEN), data=gold, out=run_dir)
    export_mera(run_dir, out / f"{name}.zip")
    return run_dir, out / f"{name}.zip"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--items", type=int, default=40, help="test items per task")
    parser.add_argument("--side-python", help="the Python of the scorer's virtualenv")
    parser.add_argument("--scoring", type=Path, help="MERA-Evaluation/MERA's modules/scoring")
    args = parser.parse_args()
    out = args.out.resolve()
    set_level(quiet=True, verbose=False)
    tests = write_gold(out / "gold", args.items)
    from rueval.models.backends.tiny import build_tiny_gpt2

    tiny = out / "tiny" if (out / "tiny" / "config.json").is_file() else build_tiny_gpt2(out / "tiny")
    runs = {"tiny": run_and_export(out, out / "gold", "tiny", f"hf:{tiny}")}
    runs["scripted"] = run_and_export(out, out / "gold", "scripted", ScriptedModel(tests))
    if not args.side_python:
        print(f"zips in {out}; score them with benchmarks/mera_scorer_side.py in the scorer's virtualenv")
        return
    side, comparison, same = Path(__file__).with_name("mera_scorer_side.py"), {}, True
    for name, (run_dir, zip_path) in runs.items():
        print(f"== {name}")
        result = out / f"{name}-mera.json"
        command = [args.side_python, str(side), str(args.scoring), str(out / "gold"), str(zip_path), str(run_dir)]
        same &= subprocess.run([*command, str(result)], check=False).returncode == 0
        comparison[name] = json.loads(result.read_text(encoding="utf-8"))
    (out / "comparison.json").write_text(json.dumps(comparison, ensure_ascii=False, indent=2) + "\n")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
