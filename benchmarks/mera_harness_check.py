"""rueval's MERA tasks beside MERA's own harness: a labelled MERA folder of made-up items is written,
MERA's pinned lm-evaluation-harness fork runs MERA's task files on it as MERA's
scripts/run_benchmark.sh runs them, rueval runs the same tasks on the same folder with the same model,
and every task's metrics, prompts and per-option log-likelihoods are compared. Not part of the test
suite (CI cannot download the fork).

    python benchmarks/mera_harness_check.py OUT --fork FORK --fork-python VENV/bin/python
        --benchmark-tasks MERA/benchmark_tasks [--items 15] [--tasks parus,rcb,...]
        [--rueval-spelling lm-eval|hf] [--fork-model-args KEY=VALUE] [--reuse-fork]

FORK: a checkout of MERA's fork (artemorloff/lm-evaluation-harness at 6c59a42, lm-eval 0.4.4), installed
with ``pip install -e FORK`` in the virtualenv of VENV/bin/python (it needs transformers < 4.50 and
datasets < 3; torch==2.13.0 installed first takes the CPU build):

    python3 -m venv VENV && VENV/bin/pip install torch==2.13.0 &&
        VENV/bin/pip install 'transformers<4.50' 'datasets<3' -e FORK

MERA/benchmark_tasks: MERA-Evaluation/MERA's task files (at 9cf05b2), with
scripts/run_benchmark.sh beside them, whose shots per task, generation settings and common options
(``--seed 1234 --batch_size=1 --log_samples``) the fork's runs take as they are, except
``--device cuda`` (cpu here) and ``--predict_only`` (the made-up test splits are labelled, so the
fork scores them). The task files run from a copy in OUT whose ``dataset_path`` lines name the
labelled folder, the one change. Each task is one ``lm_eval`` process, as in run_benchmark.sh.

The items are made up by mera_scorer_check.py (the seven tasks rueval shares with MERA) and
mera_more_items.py (MERA's own: ruMMLU ... USE, ruTiE, ruHumanEval); each task's per-group metrics of MERA's harness
are compared with rueval's breakdown too. ruCodeEval and ruDetox (scored by models from the Hub) are
not among them.

rueval runs with lm-eval's spelling, ``rueval run --model hf --model_args pretrained=DIR``, on the same
tiny GPT-2 folder (rueval make-tiny-model; its tokenizer_class written as PreTrainedTokenizerFast,
which transformers 4.x reads as 5.x does); ``--rueval-spelling hf`` runs it as ``-m hf:DIR`` instead,
rueval's own tokenization (a start token always, TAPE's protocol). ``--fork-model-args`` adds keys to
the fork's --model_args.
``--reuse-fork`` keeps the fork's runs of an earlier check in OUT made with the same items and model
arguments, so that only rueval runs again (the made-up folder and the model are the same each time).

Writes OUT/comparison.json (each task's metrics both sides, prompts, log-likelihoods and generated
answers compared per item by MERA's meta.id) and prints a table; exit code 1 when a metric differs by
more than 1e-6.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import mera_more_items
from mera_scorer_check import MAKERS, science, write_gold

from rueval.data.mera_choice_tasks import DIALOG_ID

TOLERANCE = 1e-6
SCRIPT = Path("scripts") / "run_benchmark.sh"  # beside benchmark_tasks in MERA-Evaluation/MERA
# MERA's lm-eval task -> rueval's task, and MERA's metric name -> rueval's (results.json, percentages)
TASKS = {
    "parus": ("parus", {"acc": "accuracy"}),
    "rcb": ("rcb", {"acc": "accuracy", "f1": "avg_f1"}),
    "rwsd": ("rwsd", {"acc": "accuracy"}),
    "ruworldtree": ("ru_worldtree", {"acc": "accuracy", "f1": "macro_f1"}),
    "ruopenbookqa": ("ru_openbook", {"acc": "accuracy", "f1": "macro_f1"}),
    "multiq": ("multiq", {"em": "exact_match", "f1": "token_f1"}),
    "chegeka": ("chegeka", {"em": "exact_match", "f1": "token_f1"}),
    **{task: (task, {"acc": "accuracy"}) for task in ("rummlu", "mamuramu", "mathlogicqa", "ruhhh", "ruhatespeech",
                                                      "bps", "lcs")},
    **{task: (task, {"exact_match": "exact_match"}) for task in ("simplear", "rumultiar", "rumodar")},
    "ruethics": ("ruethics", {}),  # MERA's harness gives no single figure, its 15 are the breakdown's
    "use": ("use", {"grade_norm": "grade_norm"}),
    "rutie": ("rutie", {"acc": "accuracy"}),
    "ruhumaneval": ("ruhumaneval", {"pass@1": "pass@1", "pass@5": "pass@5", "pass@10": "pass@10"}),
}  # fmt: skip
# The fork bootstraps each of ruEthics's 15 MCCs' standard error 100,000 times, over an hour on 2 shared
# cores, and its CLI has no --bootstrap_iters: its lm_eval runs with no standard errors (the metrics are the same)
NO_BOOTSTRAP = ("ruethics",)
NO_STDERR = ("import lm_eval.evaluator_utils as u; u.stderr_for_metric = lambda **_: None; "
             "from lm_eval.__main__ import cli_evaluate; cli_evaluate()")  # fmt: skip
HATE_GROUPS = {
    "other": "другое",
    "women": "женщины",
    "men": "мужчины",
    "nationalities": "национальность",
    "lgbt": "лгбт",
    "migrants": "мигранты",
}  # ruhatespeech/utils.py's names, in English
# MERA's task -> the prefix of its per-group metrics, rueval's metric, and MERA's group -> rueval's breakdown key
BREAKDOWNS = {
    "rummlu": ("acc.", "accuracy", str), "mamuramu": ("acc.", "accuracy", str), "ruhhh": ("acc_", "accuracy", str),
    "ruhatespeech": ("acc_", "accuracy", HATE_GROUPS.__getitem__),
    "ruethics": ("mcc_", "mcc", lambda group: group.replace("_", ".", 1)),  # correct_virtue: correct.virtue
    "use": ("grade_norm.", "grade_norm", str),
}  # fmt: skip
FOUR_OPTIONS = functools.partial(science, five_options=False)  # MERA's task files list options A-D only


def run_benchmark_settings(script: Path) -> tuple[dict[str, int], dict[str, str], list[str]]:
    """run_benchmark.sh's shots per task, --gen_kwargs per task and common options (as its defaults)."""
    text = script.read_text(encoding="utf-8")

    def value(pattern: str) -> str:
        found = re.search(pattern, text)
        if not found:
            raise SystemExit(f"{script}: no {pattern!r}; not MERA's run_benchmark.sh?")
        return found.group(1)

    fewshots, groups = shlex.split(value(r"FEWSHOTS=\(([^)]*)\)")), shlex.split(value(r"TASKS=\(([^)]*)\)"))
    shots = {task: int(k) for k, group in zip(fewshots, groups, strict=True) for task in group.split()}
    code_kwargs = value(r'RUHUMANEVAL_GEN_KWARGS="\$\{RUHUMANEVAL_GEN_KWARGS:-([^}]*)\}"')
    kwargs = {task: value(r'GENERATION_KWARGS="\$\{GENERATION_KWARGS:-([^}]*)\}"') for task in shots}
    kwargs |= {task: code_kwargs for task in ("ruhumaneval", "rucodeeval")}
    common = shlex.split(value(r'MERA_COMMON_SETUP_default="([^"]*)"'))
    common = [part for part in common if part != "--predict_only"]  # labelled test splits: scored
    common[common.index("--device") + 1] = "cpu"
    return shots, kwargs, common


def local_task_files(benchmark_tasks: Path, copy: Path, gold: Path) -> Path:
    """A copy of MERA's task files whose dataset_path lines name ``gold``; returns the copy's root."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(benchmark_tasks, copy / "benchmark_tasks")
    for path in (copy / "benchmark_tasks").rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        local = re.sub(r"(?m)^dataset_path: .*$", f"dataset_path: {gold}", text)
        if local != text:
            path.write_text(local, encoding="utf-8")
    return copy


def tiny_model(folder: Path) -> Path:
    """rueval's tiny GPT-2, its tokenizer readable by the fork's transformers (< 4.50) too."""
    if not (folder / "config.json").is_file():
        from rueval.models.backends.tiny import build_tiny_gpt2

        build_tiny_gpt2(folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"  # transformers 5 writes TokenizersBackend, unknown to 4.x
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return folder


def fork_version(fork: Path, python: str) -> str:
    """The lm-eval version of ``python``'s virtualenv, which must be the one installed from ``fork``."""
    code = "import importlib.metadata, lm_eval; print(lm_eval.__file__); print(importlib.metadata.version('lm_eval'))"
    answer = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    where, version = answer.stdout.splitlines()
    if not Path(where).resolve().is_relative_to(fork.resolve()):
        raise SystemExit(f"{python}: its lm_eval is {where}, not the fork at {fork} (pip install -e {fork})")
    return version


def run_fork(args, tasks: list[str], model: Path, gold: Path, out: Path) -> dict[str, Path]:
    """Each task through MERA's fork as run_benchmark.sh runs it; returns each task's output folder."""
    shots, kwargs, common = run_benchmark_settings(args.benchmark_tasks.parent / SCRIPT)
    root = local_task_files(args.benchmark_tasks, out / "mera_task_files", gold)
    env = {**os.environ, "PYTHONPATH": str(root), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(out / "ds_cache")}  # fmt: skip
    model_args = ",".join([f"pretrained={model}", *filter(None, [args.fork_model_args])])
    folders = {}
    for task in tasks:
        folder, settings = out / "mera" / task, {"items": args.items, "model_args": model_args}
        folders[task] = folder
        stamp = folder / "check_settings.json"
        if args.reuse_fork and stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")) == settings:
            print(f"== MERA's harness: {task}: its run in {folder} taken as it is", flush=True)
            continue
        shutil.rmtree(folder, ignore_errors=True)
        launch = ["-c", NO_STDERR] if task in NO_BOOTSTRAP else ["-m", "lm_eval"]
        command = [args.fork_python, *launch, "--model", "hf", "--model_args", model_args, "--tasks", task,
                   f"--num_fewshot={shots[task]}", f"--gen_kwargs={kwargs[task]}", f"--output_path={folder}",
                   *common, "--include_path=./benchmark_tasks"]  # fmt: skip
        print(f"== MERA's harness: {task} ({shots[task]}-shot)", flush=True)
        subprocess.run(command, cwd=root, env=env, check=True)
        stamp.write_text(json.dumps(settings) + "\n", encoding="utf-8")
    return folders


def run_rueval(tasks: list[str], model: Path, gold: Path, out: Path, spelling: str) -> Path:
    run_dir = out / "rueval"
    shutil.rmtree(run_dir, ignore_errors=True)
    names = ",".join(TASKS[task][0] for task in tasks)
    as_model = (
        ["--model", "hf", "--model_args", f"pretrained={model}"] if spelling == "lm-eval" else ["-m", f"hf:{model}"]
    )
    unsafe = ["--confirm-run-unsafe-code"] if "ruhumaneval" in tasks else []  # the fork runs its code too
    command = [sys.executable, "-m", "rueval", "run", *as_model, "-t", names, "--data", str(gold), "-o", str(run_dir),
               "--log-samples", "--batch-size", "1", "--seed", "1234", "--device", "cpu", "--cache", "off",
               *unsafe]  # fmt: skip
    print(f"== rueval: {shlex.join(command[1:])}", flush=True)
    subprocess.run(command, check=True)
    return run_dir


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.rglob(pattern))
    if len(found) != 1:
        raise SystemExit(f"{folder}: expected one {pattern}, found {len(found)}")
    return found[0]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def mera_id(doc: dict) -> object:
    """The item's MERA id (meta.id; a ruTiE question's its dialogue and question ids, as rueval's idx)."""
    return doc["meta"]["id"] if "id" in doc["meta"] else DIALOG_ID.format(**doc["meta"])


def compare_items(mera: list[dict], ours: list[dict]) -> dict:
    """Per item (MERA's meta.id): whether the requests (contexts and continuations) are the same, each
    option's log-likelihood both sides, or whether the generated answers are the same."""
    by_id = {line["idx"]: line for line in ours}
    if sorted(by_id) != sorted(mera_id(line["doc"]) for line in mera):
        raise SystemExit("the two sample logs hold different items")
    rows = []
    for line in mera:
        other = by_id[mera_id(line["doc"])]
        theirs, mine = list(line["arguments"].values()), list(other["arguments"].values())
        same = len(theirs) == len(mine) and all(
            a["arg_0"] == b["arg_0"] and (isinstance(a["arg_1"], dict) or a["arg_1"] == b["arg_1"])
            for a, b in zip(theirs, mine, strict=False)
        )
        row = {"id": other["idx"], "prompts_equal": same}
        if isinstance(theirs[0]["arg_1"], dict):  # generate_until
            rows.append(row | {"generation_equal": line["resps"][0][0] == other["resps"][0][0]})
        else:
            lls = {side: [float(r[0][0]) for r in data["resps"]] for side, data in (("mera", line), ("rueval", other))}
            rows.append(row | {"loglikelihoods": lls})
    summary = {"items": len(rows), "prompts_equal": sum(row["prompts_equal"] for row in rows)}
    if "generation_equal" in rows[0]:
        return summary | {"generations_equal": sum(row["generation_equal"] for row in rows), "per_item": rows}
    pairs = [(row["loglikelihoods"]["mera"], row["loglikelihoods"]["rueval"]) for row in rows]
    return summary | {
        "max_loglikelihood_diff": max(abs(a - b) for x, y in pairs for a, b in zip(x, y, strict=True)),
        "same_choice": sum(x.index(max(x)) == y.index(max(y)) for x, y in pairs),
        "per_item": rows,
    }


def breakdown_rows(task: str, theirs: dict, breakdown: dict) -> list[dict]:
    """The per-group metrics of MERA's harness (``acc.anatomy,scoring``) beside rueval's breakdown."""
    if task not in BREAKDOWNS:
        return []
    prefix, mine, key = BREAKDOWNS[task]
    rows = []
    for name, value in theirs.items():
        metric = name.removesuffix(",scoring")
        if not metric.startswith(prefix) or "_stderr" in metric or metric == name:
            continue
        group = breakdown.get(key(metric.removeprefix(prefix)), {})
        b = group[mine] / 100 if mine in group else float("nan")  # nan: no such group in rueval's breakdown
        rows.append({"mera_metric": metric, "rueval_metric": f"breakdown.{key(metric.removeprefix(prefix))}.{mine}",
                     "mera": float(value), "rueval": b, "diff": b - float(value)})  # fmt: skip
    return rows


def compare(tasks: list[str], fork_runs: dict[str, Path], run_dir: Path) -> dict:
    ours = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["tasks"]
    report = {}
    for task in tasks:
        name, metrics = TASKS[task]
        theirs = json.loads(_one(fork_runs[task], "results_*.json").read_text(encoding="utf-8"))["results"][task]
        rows = []
        for metric, mine in metrics.items():
            a, b = float(theirs[f"{metric},scoring"]), ours[name]["metrics"][mine] / 100
            rows.append({"mera_metric": metric, "rueval_metric": mine, "mera": a, "rueval": b, "diff": b - a})
        rows += breakdown_rows(task, theirs, ours[name].get("breakdown", {}))
        items = compare_items(_lines(_one(fork_runs[task], f"samples_{task}_*.jsonl")),
                              _lines(_one(run_dir / "samples", f"samples_{name}_*.jsonl")))  # fmt: skip
        report[task] = {"rueval_task": name, "metrics": rows, **items}
    return report


def print_table(report: dict) -> None:
    print(f"{'task':13} {'metric':28} {'MERA':>9} {'rueval':>9} {'diff':>9}  prompts  max|dLL|  same answer")
    for task, row in report.items():
        for m in row["metrics"]:
            same = row.get("same_choice", row.get("generations_equal"))
            ll = f"{row['max_loglikelihood_diff']:.4f}" if "max_loglikelihood_diff" in row else "-"
            print(f"{task:13} {m['mera_metric']:28} {m['mera']:9.4f} {m['rueval']:9.4f} {m['diff']:+9.4f}  "
                  f"{row['prompts_equal']:>3}/{row['items']:<3}  {ll:>7}  {same:>3}/{row['items']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--fork", type=Path, required=True, help="a checkout of MERA's lm-evaluation-harness fork")
    parser.add_argument("--fork-python", required=True, help="the Python of the virtualenv holding the fork")
    parser.add_argument("--benchmark-tasks", type=Path, required=True, help="MERA-Evaluation/MERA's benchmark_tasks")
    parser.add_argument("--items", type=int, default=15, help="test items per task")
    parser.add_argument("--tasks", default=",".join(TASKS), help="MERA's task names, comma-separated")
    parser.add_argument(
        "--reuse-fork",
        action="store_true",
        help="keep the fork's runs of an earlier check in OUT "
        "with the same --items and model arguments (rueval only runs again)",
    )
    parser.add_argument(
        "--rueval-spelling",
        choices=("lm-eval", "hf"),
        default="lm-eval",
        help="rueval's model as --model hf --model_args pretrained=DIR (lm-eval's tokenization), "
        "or as -m hf:DIR (rueval's own: a start token always, as TAPE)",
    )
    parser.add_argument("--fork-model-args", default="", help="more --model_args for the fork, e.g. add_bos_token=True")
    args = parser.parse_args()
    out, tasks = args.out.resolve(), args.tasks.split(",")
    args.benchmark_tasks = args.benchmark_tasks.resolve()
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        raise SystemExit(f"--tasks {','.join(unknown)}: expected some of {','.join(TASKS)}")
    version = fork_version(args.fork, args.fork_python)
    gold = out / "gold"
    makers = {**MAKERS, "ruWorldTree": FOUR_OPTIONS, "ruOpenBookQA": FOUR_OPTIONS, **mera_more_items.MAKERS}
    write_gold(gold, args.items, makers=makers, train_splits=mera_more_items.TRAIN_SPLITS)
    model = tiny_model(out / "tiny")
    fork_runs = run_fork(args, tasks, model, gold, out)
    run_dir = run_rueval(tasks, model, gold, out, args.rueval_spelling)
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    where = "import rueval; print(rueval.__file__)"
    package = subprocess.run([sys.executable, "-c", where], capture_output=True, text=True, check=True).stdout.strip()
    report = {
        "settings": {"items": args.items, "tasks": tasks, "fork": str(args.fork), "fork_lm_eval": version,
                     "fork_model_args": args.fork_model_args, "rueval_package": package,
                     "rueval_spelling": args.rueval_spelling,
                     "rueval_model": run["model"], "rueval_model_identity": run["model_identity"],
                     "rueval_solver_options": run["solver_options"], "rueval_mera": run["mera"]},
        "tasks": compare(tasks, fork_runs, run_dir),
    }  # fmt: skip
    (out / "comparison.json").write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print_table(report["tasks"])
    rows = [m for row in report["tasks"].values() for m in row["metrics"]]
    sys.exit(0 if all(abs(m["diff"]) <= TOLERANCE for m in rows) else 1)  # a nan (no such group) fails too


if __name__ == "__main__":
    main()
