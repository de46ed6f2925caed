"""Generation at speed (issue 38): rueval's generation against lm-eval, against its own one-at-a-time mode,
the main command's wall time, and how often batched greedy texts differ from one-at-a-time ones.

    python benchmarks/bench_generation.py [--parts lm_eval,today,main_command,ties] [--train-steps 200]
        [--worked 1000] [--docs 128] [--train 64] [--examples 64] [--today 84529f5] [--prompts 500]
        [--lm-eval /work/venvs/lmeval/bin/lm_eval] [--device cpu] [--threads N] [--name bench_generation] [--keep DIR]

Not part of the test suite. lm-evaluation-harness 0.4.13 lives in its own virtualenv (see
bench_engine.py's docstring); ``--lm-eval`` names its ``lm_eval`` command. The rueval measured is the one
this interpreter imports (``PYTHONPATH``); its folder and commit are recorded. bench_whole's conventions
and machinery (``timed``): each command once, one after another, in a fresh process with fresh caches,
the machine's 1-minute load average before and after each.

The model: ``rueval make-tiny-model``'s tiny GPT-2 (2 layers, 64 wide, the bundled samples' tokenizer)
trained by its ``train_tiny_model`` for ``--train-steps`` batches of the bundled samples and ``--worked``
gsm8k-shaped worked problems (0 steps: the random model), built once.

Parts (``--parts``, each a row of benchmarks/results/<name>.json; a part run again replaces its row):

- ``lm_eval``: lm-eval 0.4.13's own gsm8k task file, copied from lm-eval's installed ``lm_eval/tasks/gsm8k``
  at run time and pointed at local gsm8k-shaped items (``--docs`` test, ``--train`` train: Russian word
  problems, each answer ending in ``#### N``): ``lm_eval --model hf --batch_size 8`` against
  ``rueval run --include-path DIR -t ... -m hf:DIR --bos tokenizer`` (lm-eval's start-token rule, so both
  tokenize the same prompts), at 0-shot, 5-shot with lm-eval's default sampler (demonstrations drawn per
  document) and 5-shot with ``fewshot_config: sampler: first_n`` (the same demonstrations for every
  document). Reports each time, the ratio, and the share of documents whose filtered answers (both of
  gsm8k's filters, strict-match and flexible-extract) are equal in the two sample logs.
- ``today``: TAPE's MultiQ and CheGeKa at 8-shot over ``--examples`` test items each (a ``--data``
  folder in TAPE's layout: the bundled samples' records with their question's and support text's words
  shuffled, the bundled train samples as demonstrations), whole process, per example: the default
  (batched) against the issue's "today", rueval before issue 38 (``--today``, 84529f5: its ``src``
  unpacked from this repository's git), and against ``rueval run --batch-size 1`` (the one-at-a-time
  mode this rueval keeps).
- ``main_command``: README's main command on the bundled samples,
  ``rueval run -m hf:DIR -t all --shots 0,1,4,8 --episodes 5 --cache off``.
- ``ties``: ``--prompts`` distinct prompts (TAPE MultiQ and CheGeKa at 0, 1, 4 and 8 shots, gsm8k-style
  prompts at 0 to 5 shots, plain sentence starts), generated greedily by ``HFCausalLM`` batched and
  one at a time (``batch_size=1``) in this process: how many texts are equal, and for each that differs
  the gap between the top two logits at the first step where they part
  (``rueval.models.backends.greedy_ties.first_divergence``); the rule: every gap below 1e-4. The same
  prompts sampled (temperature 1, top-p 0.8, a seed each): how many texts are equal.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_engine import shuffled_sentence
from bench_whole import LM_EVAL_BATCH_SIZE, load_note, thread_env, timed
from results_file import write_results

HERE = Path(__file__).parent
GSM8K_SHOTS = 5
SETTINGS = {  # lm_eval part: (task file, --num_fewshot), and its target ratio
    "0shot": ("gsm8k_local", 0),
    "5shot_per_document": ("gsm8k_local", GSM8K_SHOTS),
    "5shot_first_n": ("gsm8k_local_first_n", GSM8K_SHOTS),
}
TARGETS = {"0shot": 2.0, "5shot_per_document": 2.0, "5shot_first_n": 4.0, "today": 8.0, "main_command_s": 600}
ANSWERS_EQUAL_TARGET = 0.98
TIE_GAP = 1e-4
TAPE_TASKS = ("multiq", "chegeka")
TAPE_SHOTS = 8
BEFORE_ISSUE_38 = "84529f5"  # main when issue 38 was filed: its "today"


# -- the model -------------------------------------------------------------------------------------
def tiny_model(folder: Path, train_steps: int, worked: list[dict[str, str]], layers: int, width: int) -> Path:
    """``rueval make-tiny-model folder --train-steps train_steps``, in this process, its texts the bundled
    samples and the ``worked`` gsm8k-shaped problems (lm-eval's ``Question: ...\nAnswer: ...``): it then
    answers a word problem with a few words and ``#### N``, and stops. ``layers`` x ``width``, heads of 32."""
    from rueval.models.backends.tiny import build_tiny_gpt2, sample_texts, train_tiny_model

    built = build_tiny_gpt2(folder, n_layer=layers, n_embd=width, n_head=width // 32)
    texts = sample_texts() + [f"Question: {item['question']}\nAnswer: {item['answer']}" for item in worked]
    return train_tiny_model(built, texts, train_steps) if train_steps else built


def rueval_source() -> dict[str, str]:
    """The rueval that the children import (this interpreter's): its folder and that folder's commit."""
    import rueval

    folder = Path(rueval.__file__).parent
    commit = subprocess.run(["git", "-C", str(folder), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return {"folder": str(folder), "commit": commit.stdout.strip()[:60]}


# -- gsm8k-shaped items and lm-eval's own task file --------------------------------------------------
NAMES = ("Маша", "Петя", "Оля", "Саша", "Дима", "Катя", "Иван", "Лена", "Миша", "Аня", "Коля", "Вера")
THINGS = ("яблок", "книг", "марок", "конфет", "карандашей", "орехов", "открыток", "монет", "тетрадей")
PROBLEMS = (  # (question, worked answer, result) with {n} a name, {t} things, {a} and {b} numbers
    ("У {n} было {a} {t}. Потом {n} получил(а) ещё {b}. Сколько {t} стало у {n}?",
     "Сначала было {a}, добавилось {b}: {a} + {b} = {r}.", lambda a, b: a + b),
    ("У {n} было {a} {t}, и {b} из них {n} отдал(а) другу. Сколько {t} осталось у {n}?",
     "Осталось {a} - {b} = {r}.", lambda a, b: a - b),
    ("В каждой из {b} коробок лежит по {a} {t}. Сколько {t} всего у {n}?",
     "Всего {a} * {b} = {r}.", lambda a, b: a * b),
    ("{n} покупает {a} {t} по {b} рублей за штуку. Сколько рублей заплатит {n}?",
     "Цена всех: {a} * {b} = {r} рублей.", lambda a, b: a * b),
)  # fmt: skip


def gsm8k_items(n: int, rng: random.Random, taken: set[str]) -> list[dict[str, str]]:
    """n gsm8k-shaped documents (question; answer with its working and ``#### N``), no question in
    ``taken`` (which grows)."""
    items: list[dict[str, str]] = []
    while len(items) < n:
        question, worked, compute = rng.choice(PROBLEMS)
        a, b = rng.randint(12, 99), rng.randint(2, 11)
        fields = {"n": rng.choice(NAMES), "t": rng.choice(THINGS), "a": a, "b": b, "r": compute(a, b)}
        text = question.format(**fields)
        if text not in taken:
            taken.add(text)
            items.append({"question": text, "answer": f"{worked.format(**fields)}\n#### {fields['r']}"})
    return items


def lm_eval_tasks_folder(lm_eval: str) -> Path:
    """lm-eval's installed ``lm_eval/tasks`` folder, asked of lm-eval's own interpreter."""
    python = Path(lm_eval).with_name("python")
    code = "import lm_eval.tasks, os; print(os.path.dirname(lm_eval.tasks.__file__))"
    return Path(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip())


def gsm8k_splits(docs: int, train: int, worked: int) -> dict[str, list[dict[str, str]]]:
    """The test and train documents and the model's worked problems, no question twice."""
    rng, taken = random.Random("bench_generation/gsm8k"), set()
    return {split: gsm8k_items(n, rng, taken) for split, n in (("test", docs), ("train", train), ("worked", worked))}


def write_gsm8k_tasks(tasks_dir: Path, lm_eval: str, splits: dict[str, list[dict[str, str]]]) -> dict[str, Any]:
    """lm-eval's gsm8k.yaml as two task files over local items (its own sampler, and ``first_n``); the
    items and the file's generation settings."""
    import yaml

    tasks_dir.mkdir(parents=True)
    files = {}
    for split in ("train", "test"):
        files[split] = str(tasks_dir / f"{split}.jsonl")
        rows = splits[split]
        Path(files[split]).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    source = lm_eval_tasks_folder(lm_eval) / "gsm8k" / "gsm8k.yaml"
    original = yaml.safe_load(source.read_text(encoding="utf-8"))
    for name in ("gsm8k_local", "gsm8k_local_first_n"):
        config = {key: value for key, value in original.items() if key not in ("tag", "dataset_name")}
        config |= {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": files}}
        if name.endswith("first_n"):
            config["fewshot_config"] = {"sampler": "first_n"}
        text = yaml.safe_dump(config, allow_unicode=True, sort_keys=False)
        (tasks_dir / f"{name}.yaml").write_text(text, encoding="utf-8")
    counts = {"docs": len(splits["test"]), "train": len(splits["train"]), "worked": len(splits["worked"])}
    return {"source": str(source), "generation_kwargs": original["generation_kwargs"]} | counts


def filtered_answers(out: Path) -> dict[tuple[int, str], tuple[str, str]]:
    """{(document, filter): (filtered answer, raw text)} from the sample log under ``out``."""
    (path,) = out.rglob("samples_*.jsonl")
    found = {}
    for line in path.open(encoding="utf-8"):
        sample = json.loads(line)
        found[sample["doc_id"], sample["filter"]] = (sample["filtered_resps"][0], sample["resps"][0][0])
    return found


def answers_agreement(lm_out: Path, ru_out: Path) -> dict[str, Any]:
    """How many documents have equal filtered answers under every filter, and equal raw texts."""
    lm, ru = filtered_answers(lm_out), filtered_answers(ru_out)
    if lm.keys() != ru.keys():
        sys.exit(f"the sample logs hold other documents or filters: {len(lm)} from lm-eval, {len(ru)} from rueval")
    documents = sorted({doc for doc, _ in lm})
    filters = sorted({f for _, f in lm})
    equal = [d for d in documents if all(lm[d, f][0] == ru[d, f][0] for f in filters)]
    texts_equal = sum(lm[d, filters[0]][1] == ru[d, filters[0]][1] for d in documents)
    return {
        "documents": len(documents),
        "filters": filters,
        "answers_equal": len(equal),
        "answers_equal_share": len(equal) / len(documents),
        "texts_equal": texts_equal,
        "differing": [d for d in documents if d not in equal][:20],
    }


# -- TAPE items --------------------------------------------------------------------------------------
def write_tape_data(data_dir: Path, examples: int) -> None:
    """MultiQ and CheGeKa in TAPE's layout: ``examples`` distinct test records (a bundled sample record with
    its question's and support text's words shuffled; answers and main text kept, so spans still hold)
    and the bundled train samples."""
    from rueval.data.local import SAMPLES_DIR

    rng = random.Random("bench_generation/tape")
    for task in TAPE_TASKS:
        samples = [json.loads(line) for line in (SAMPLES_DIR / task / "test.jsonl").open(encoding="utf-8")]
        (data_dir / task).mkdir(parents=True)
        shutil.copy(SAMPLES_DIR / task / "train.jsonl", data_dir / task / "train.jsonl")
        rows, taken = [], set()
        while len(rows) < examples:
            record = dict(rng.choice(samples))
            record["question"] = shuffled_sentence(record["question"], rng)
            if record["question"] in taken:
                continue
            taken.add(record["question"])
            if task == "multiq":
                record["support_text"] = shuffled_sentence(record["support_text"], rng)
            else:
                record["question_id"] = 900000 + len(rows)
            rows.append(record)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (data_dir / task / "test.jsonl").write_text(text, encoding="utf-8")


# -- the timed parts ---------------------------------------------------------------------------------
class Bench:
    def __init__(self, args: argparse.Namespace, work: Path):
        self.args, self.work, self.threads = args, work, thread_env(args.threads)
        self.gsm8k = gsm8k_splits(args.docs, args.train, args.worked)
        self.model_dir = tiny_model(work / "model", args.train_steps, self.gsm8k["worked"], args.layers, args.width)

    def rueval(self, *arguments: str) -> list[str]:
        return [sys.executable, "-m", "rueval", "run", "-m", f"hf:{self.model_dir}", "--device", self.args.device,
                *arguments, "-q"]  # fmt: skip

    def lm_eval(self) -> list[dict[str, Any]]:
        tasks_dir = self.work / "gsm8k"
        written = write_gsm8k_tasks(tasks_dir, self.args.lm_eval, self.gsm8k)
        rows = []
        for setting, (task, shots) in SETTINGS.items():
            lm_out, ru_out = self.work / f"lm-eval-{setting}", self.work / f"rueval-{setting}"
            lm_eval = [self.args.lm_eval, "--model", "hf", "--model_args", f"pretrained={self.model_dir}"]
            lm_eval += ["--batch_size", str(LM_EVAL_BATCH_SIZE), "--device", self.args.device]
            lm_eval += ["--include_path", str(tasks_dir), "--tasks", task, "--num_fewshot", str(shots)]
            lm_eval += ["--output_path", str(lm_out), "--log_samples"]
            rueval = self.rueval("--bos", "tokenizer", "--include-path", str(tasks_dir), "-t", task)
            rueval += ["--num_fewshot", str(shots), "-o", str(ru_out), "--log_samples"]
            row: dict[str, Any] = {"part": "lm_eval", "setting": setting, "task": task, "shots": shots} | written
            row["lm_eval"] = timed(self.work, f"lm-eval-{setting}", [lm_eval], self.threads)
            row["rueval"] = timed(self.work, f"rueval-{setting}", [rueval], self.threads)
            row["ratio"] = row["lm_eval"]["wall_s"] / row["rueval"]["wall_s"]
            row["target"] = TARGETS[setting]
            row["agreement"] = answers_agreement(lm_out, ru_out)
            rows.append(row)
        return rows

    def today(self) -> list[dict[str, Any]]:
        """The issue's "today" is rueval before it (``--today``, its ``src`` unpacked from git and put first on
        ``PYTHONPATH``); the one-at-a-time mode that this rueval keeps is measured beside it."""
        data_dir, today_src = self.work / "tape", self.work / "today-src"
        write_tape_data(data_dir, self.args.examples)
        unpack_source(self.args.today, today_src)
        common = ["-t", ",".join(TAPE_TASKS), "--shots", str(TAPE_SHOTS), "--data", str(data_dir), "--split", "test"]
        common += ["--cache", "off"]
        row: dict[str, Any] = {"part": "today", "tasks": TAPE_TASKS, "shots": TAPE_SHOTS}
        row["today_commit"] = self.args.today
        row["examples"] = examples = self.args.examples * len(TAPE_TASKS)
        runs = {"today": ([], {"PYTHONPATH": str(today_src)}), "one_at_a_time": (["--batch-size", "1"], {}),
                "batched": ([], {})}  # fmt: skip
        found = {}
        for mode, (extra, env) in runs.items():
            out = self.work / f"today-{mode}"
            command = self.rueval(*common, *extra, "-o", str(out))
            row[mode] = timed(self.work, f"today-{mode}", [command], self.threads | env)
            row[mode]["per_example_s"] = row[mode]["wall_s"] / examples
            found[mode] = predictions(out)
        for mode in ("today", "one_at_a_time"):
            row[f"{mode}_ratio"] = row[mode]["wall_s"] / row["batched"]["wall_s"]
            row[f"{mode}_equal_batched"] = sum(v == found["batched"].get(k) for k, v in found[mode].items())
        row["today_equal_one_at_a_time"] = sum(v == found["one_at_a_time"].get(k) for k, v in found["today"].items())
        row["target"] = TARGETS["today"]
        return [row]

    def main_command(self) -> list[dict[str, Any]]:
        command = self.rueval("-t", "all", "--shots", "0,1,4,8", "--episodes", "5", "--cache", "off")
        measured = timed(self.work, "main-command", [command + ["-o", str(self.work / "main")]], self.threads)
        return [{"part": "main_command", "rueval": measured, "target_s": TARGETS["main_command_s"]}]

    def ties(self) -> list[dict[str, Any]]:
        return [{"part": "ties"} | tie_figures(self.model_dir, self.work, self.args.prompts)]


def unpack_source(commit: str, folder: Path) -> None:
    """``commit``'s ``src`` of the repository this benchmark lives in, unpacked into ``folder``."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", commit, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder), "--strip-components", "1"], input=archive.stdout, check=True)


def predictions(out: Path) -> dict[tuple[str, str], Any]:
    """{(task, example id): prediction} of a rueval run's predictions/<task>.jsonl."""
    found = {}
    for path in sorted((out / "predictions").glob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            record = json.loads(line)
            found[path.stem, json.dumps(record.get("id", record.get("idx")))] = record.get("prediction")
    return found


# -- ties: batched greedy texts against one-at-a-time ones ------------------------------------------
def tape_requests(model: Any, data_dir: Path) -> list[Any]:
    """The generation requests of MultiQ and CheGeKa over ``data_dir`` at 0, 1, 4 and 8 shots (episode 0),
    as rueval's LM solver plans them."""
    from rueval.data import open_data
    from rueval.models.engine import Engine
    from rueval.solvers import Setting
    from rueval.solvers.lm import LMSolver
    from rueval.tasks import get_task

    solver, source, requests = LMSolver(Engine(model), "bench"), open_data(str(data_dir)), []
    for name in TAPE_TASKS:
        task = get_task(name)
        train, examples = source.load(task, "train").examples, source.load(task, "test").examples
        for shots in (0, 1, 4, TAPE_SHOTS):
            plan = solver.plan(task, train, examples, Setting(shots, 0))
            requests += [r for asked in plan.asked for question in asked for r in question.requests]
    return requests


def gsm8k_requests(n: int, stop: tuple[str, ...]) -> list[Any]:
    """n gsm8k-style prompts (lm-eval's gsm8k.yaml's ``Question: ...\nAnswer:``) at 0 to 5 shots, 256 tokens."""
    from rueval.models.base import Generation

    rng = random.Random("bench_generation/ties")
    items = gsm8k_items(n + GSM8K_SHOTS * 4, rng, set())
    demos, questions = items[: GSM8K_SHOTS * 4], items[GSM8K_SHOTS * 4 :]
    requests = []
    for i, item in enumerate(questions):
        shown = rng.sample(demos, i % (GSM8K_SHOTS + 1))
        prompt = "".join(f"Question: {d['question']}\nAnswer: {d['answer']}\n\n" for d in shown)
        requests.append(Generation(prompt + f"Question: {item['question']}\nAnswer:", 256, stop))
    return requests


def plain_requests(n: int) -> list[Any]:
    """n plain prompts: the first words of the bundled samples' texts, 48 tokens, no stop sequence."""
    from rueval.models.backends.tiny import sample_texts
    from rueval.models.base import Generation

    starts = dict.fromkeys(" ".join(text.split()[:8]) for text in sample_texts() if len(text.split()) > 8)
    return [Generation(start, 48) for start in list(starts)[:n]]


def tie_figures(model_dir: Path, work: Path, prompts: int) -> dict[str, Any]:
    """Greedy and sampled texts batched and one at a time over at least ``prompts`` distinct prompts: half
    TAPE's (MultiQ and CheGeKa items at 0, 1, 4 and 8 shots), a quarter gsm8k-style, a quarter plain."""
    from dataclasses import replace

    from rueval.models.backends.hf import HFCausalLM
    from rueval.models.base import prompt_text

    one, batched = HFCausalLM(str(model_dir), batch_size=1), HFCausalLM(str(model_dir))
    write_tape_data(work / "ties-tape", -(-prompts // (4 * 2 * len(TAPE_TASKS))))
    requests = tape_requests(one, work / "ties-tape")
    rest = prompts - len(requests)
    requests += gsm8k_requests(rest // 2, ("Question:", "</s>", "<|im_end|>"))
    requests += plain_requests(rest - rest // 2)
    distinct = {prompt_text(r.prompt): r for r in requests}  # no prompt twice
    requests = list(distinct.values())
    figures: dict[str, Any] = {"prompts": len(requests), "modes": [mode_of(one), mode_of(batched)]}
    # TAPE's requests sample (top-p 0.8): the greedy pass asks every prompt greedily, the sampled pass samples all
    greedy = [replace(r, temperature=0.0, top_p=1.0, seed=0) for r in requests]
    figures["greedy"] = compare_modes(one, batched, greedy, gaps=True)
    sampled = [replace(r, temperature=1.0, top_p=0.8, seed=i) for i, r in enumerate(requests)]
    figures["sampled"] = compare_modes(one, batched, sampled, gaps=False)
    return figures


def mode_of(model: Any) -> str:
    return getattr(model, "generation_mode", "one-at-a-time")  # before issue 38's core: always one at a time


def compare_modes(one: Any, batched: Any, requests: list[Any], gaps: bool) -> dict[str, Any]:
    """Texts one at a time and batched, timed; how many are equal; with ``gaps`` each difference's gap."""
    from rueval.models.base import prompt_text

    started = time.perf_counter()
    texts_one = one.generate(requests)
    one_s = time.perf_counter() - started
    started = time.perf_counter()
    texts_batched = batched.generate(requests)
    batched_s = time.perf_counter() - started
    differing = [i for i, (a, b) in enumerate(zip(texts_one, texts_batched, strict=True)) if a != b]
    found: dict[str, Any] = {"equal": len(requests) - len(differing), "differ": len(differing)}
    found |= {"one_at_a_time_s": one_s, "batched_s": batched_s, "load_average": round(os.getloadavg()[0], 2)}
    if gaps and differing:
        from rueval.models.backends.greedy_ties import first_divergence

        found["gaps"] = [first_divergence(one, requests[i], texts_one[i], texts_batched[i]) for i in differing]
        found["largest_gap"] = max(found["gaps"])
        found["differences"] = [
            {"prompt_end": prompt_text(requests[i].prompt)[-300:], "max_new_tokens": requests[i].max_new_tokens,
             "stop": requests[i].stop, "one_at_a_time": texts_one[i], "batched": texts_batched[i], "gap": gap}
            for i, gap in zip(differing, found["gaps"], strict=True)
        ]  # fmt: skip
        found["rule_holds"] = found["largest_gap"] < TIE_GAP
    elif gaps:
        found |= {"gaps": [], "largest_gap": None, "rule_holds": True}
    return found


# -- the report --------------------------------------------------------------------------------------
TITLES = {
    "0shot": "0-shot",
    "5shot_per_document": "5-shot, lm-eval's default sampler (demonstrations per document)",
    "5shot_first_n": "5-shot, `sampler: first_n` (shared demonstrations)",
}


def load_range(*measured: dict[str, Any]) -> str:
    loads = [x for m in measured for x in m["load_average"]]
    return f"{min(loads):.1f}-{max(loads):.1f}"


def markdown(rows: list[dict[str, Any]], environment: dict[str, Any]) -> str:
    parts = {row["part"]: [] for row in rows}
    for row in rows:
        parts[row["part"]].append(row)
    steps = environment["train_steps"]
    lines = [
        f"# bench_generation: a GPT-2 of {environment['layers']} x {environment['width']} trained {steps} steps "
        "on the bundled samples and "
        f"{environment['worked']} gsm8k-shaped worked problems, torch threads: "
        f"{environment['threads'] or 'one per core'}",
    ]
    if "lm_eval" in parts:
        first = parts["lm_eval"][0]
        lines += ["", f"## Against lm-eval: lm-eval's gsm8k.yaml on {first['docs']} local documents "
                  f"({first['train']} train), `lm_eval --model hf --batch_size {LM_EVAL_BATCH_SIZE}`", "",
                  "| setting | lm-eval | rueval | ratio | target | filtered answers equal | texts equal | load |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in parts["lm_eval"]:
            agreed, met = r["agreement"], "met" if r["ratio"] >= r["target"] else "missed"
            lines.append(
                f"| {TITLES[r['setting']]} | {r['lm_eval']['wall_s']:.1f} s | {r['rueval']['wall_s']:.1f} s "
                f"| {r['ratio']:.2f}x | {r['target']}x: {met} | {agreed['answers_equal']}/{agreed['documents']} "
                f"({agreed['answers_equal_share']:.1%}) | {agreed['texts_equal']}/{agreed['documents']} "
                f"| {load_range(r['lm_eval'], r['rueval'])} |"
            )
    if "today" in parts:
        (r,) = parts["today"]
        today, one, batched = r["today"], r["one_at_a_time"], r["batched"]
        met = "met" if r["today_ratio"] >= r["target"] else "missed"
        lines += ["", f"## Against today: MultiQ and CheGeKa at {r['shots']}-shot, {r['examples']} examples "
                  "(whole process, `--cache off`)", "",
                  f"Today: rueval {r['today_commit']}, before issue 38 (generation one prompt at a time through "
                  "transformers' `generate` with its `stop_strings`).", "",
                  "| rueval | wall | per example | batched faster by | target | predictions equal to batched | load |",
                  "|---|---|---|---|---|---|---|",
                  f"| today ({r['today_commit']}) | {today['wall_s']:.1f} s | {today['per_example_s'] * 1000:.0f} ms "
                  f"| {r['today_ratio']:.2f}x | {r['target']}x: {met} | {r['today_equal_batched']}/{r['examples']} "
                  f"| {load_range(today)} |",
                  f"| `--batch-size 1` (one at a time) | {one['wall_s']:.1f} s | {one['per_example_s'] * 1000:.0f} ms "
                  f"| {r['one_at_a_time_ratio']:.2f}x | - | {r['one_at_a_time_equal_batched']}/{r['examples']} "
                  f"| {load_range(one)} |",
                  f"| default (batched) | {batched['wall_s']:.1f} s | {batched['per_example_s'] * 1000:.0f} ms | - | - "
                  f"| - | {load_range(batched)} |", "",
                  f"Today's predictions equal to `--batch-size 1`'s: {r['today_equal_one_at_a_time']}/{r['examples']} "
                  "(issue 38 strips a character cut by the budget, U+FFFD, from the end of a text in both "
                  "modes)."]  # fmt: skip
    if "main_command" in parts:
        (r,) = parts["main_command"]
        wall, met = r["rueval"]["wall_s"], "met" if r["rueval"]["wall_s"] <= r["target_s"] else "missed"
        lines += ["", "## The main command: `rueval run -m hf:TINY -t all --shots 0,1,4,8 --episodes 5 --cache off`",
                  "", f"{wall:.0f} s ({wall / 60:.1f} min; target {r['target_s'] // 60} min: {met}), "
                  f"load {load_range(r['rueval'])}"]  # fmt: skip
    if "ties" in parts:
        (r,) = parts["ties"]
        greedy, sampled = r["greedy"], r["sampled"]
        largest = "none differ" if greedy["largest_gap"] is None else f"largest gap {greedy['largest_gap']:.2e}"
        lines += ["", f"## Ties: {r['prompts']} distinct prompts, {r['modes'][1]} against {r['modes'][0]}", "",
                  "| texts | equal | differ | at a tie (gap < 1e-4) | time one at a time / batched |",
                  "|---|---|---|---|---|",
                  f"| greedy | {greedy['equal']} | {greedy['differ']} | {largest}: rule "
                  f"{'holds' if greedy['rule_holds'] else 'broken'} | {greedy['one_at_a_time_s']:.1f} s / "
                  f"{greedy['batched_s']:.1f} s |",
                  f"| sampled (temperature 1, top-p 0.8) | {sampled['equal']} | {sampled['differ']} | - "
                  f"| {sampled['one_at_a_time_s']:.1f} s / {sampled['batched_s']:.1f} s |"]  # fmt: skip
    lines += ["", "Measured (each part's run, and the rueval it ran):", ""]
    measured_at = {row["part"]: f"{row['created']}, rueval {row['rueval_source']['commit']}" for row in rows}
    lines += [f"- {part}: {when}" for part, when in measured_at.items()]
    tools = ("lm_eval", "rueval", "today", "one_at_a_time", "batched")
    measured = [row[tool] for row in rows for tool in tools if isinstance(row.get(tool), dict)]
    lines += load_note([x for m in measured for x in m["load_average"]])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="lm_eval,today,main_command,ties", help="comma-separated")
    parser.add_argument("--train-steps", type=int, default=200, help="the tiny model's training batches")
    parser.add_argument("--layers", type=int, default=2, help="the model's layers")
    parser.add_argument("--width", type=int, default=64, help="the model's width (heads of 32)")
    parser.add_argument("--docs", type=int, default=128, help="gsm8k test documents")
    parser.add_argument("--train", type=int, default=64, help="gsm8k train documents (the demonstrations)")
    parser.add_argument("--worked", type=int, default=1000, help="gsm8k-shaped problems the model is trained on")
    parser.add_argument("--examples", type=int, default=64, help="test examples per TAPE task")
    parser.add_argument("--today", default=BEFORE_ISSUE_38, help="the commit whose rueval the today part measures")
    parser.add_argument("--prompts", type=int, default=500, help="distinct prompts of the ties part, at least")
    default_lm_eval = Path(os.environ.get("RUEVAL_LMEVAL_PYTHON", "/work/venvs/lmeval/bin/python")).with_name("lm_eval")
    parser.add_argument("--lm-eval", default=str(default_lm_eval), help="lm-eval's command")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads for both tools")
    parser.add_argument("--name", default="bench_generation", help="results file name, without extension")
    parser.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_generation-"))
    work.mkdir(parents=True, exist_ok=True)
    results = HERE / "results" / f"{args.name}.json"
    asked = args.parts.split(",")
    kept = [
        r for r in (json.loads(results.read_text())["results"] if results.exists() else []) if r["part"] not in asked
    ]
    started = time.perf_counter()
    try:
        bench = Bench(args, work)
        rows = []
        for part in asked:
            stamp = {"rueval_source": rueval_source(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            rows += [row | stamp for row in getattr(bench, part)()]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    rows = sorted(kept + rows, key=lambda r: ["lm_eval", "today", "main_command", "ties"].index(r["part"]))
    settings = {"layers": args.layers, "width": args.width, "train_steps": args.train_steps, "worked": args.worked,
                "device": args.device, "threads": args.threads,
                "lm_eval_batch_size": LM_EVAL_BATCH_SIZE, "rueval": rueval_source(),
                "last_parts": asked, "last_run_s": time.perf_counter() - started}  # fmt: skip
    text = markdown(rows, settings)
    print(text)
    (HERE / "results" / f"{args.name}.md").write_text(text, encoding="utf-8")
    write_results(results, rows, **settings)


if __name__ == "__main__":
    main()
