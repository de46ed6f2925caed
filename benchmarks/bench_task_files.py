"""An lm-eval task file, the whole process: `lm_eval --model hf` against `rueval run --model hf` (issue 37).

    python benchmarks/bench_task_files.py [--docs 500] [--train 48] [--lm-eval /work/lmeval-venv/bin/lm_eval]
        [--device cpu] [--threads N] [--only first_n,per_document] [--name bench_task_files] [--keep DIR]

Not part of the test suite. lm-evaluation-harness 0.4.13 lives in its own virtualenv (see
bench_engine.py's docstring); ``--lm-eval`` names its ``lm_eval`` command. bench_whole's conventions and
machinery: one run, each command once, in a fresh process with fresh caches, and the machine's 1-minute
load average before and after each command.

1. builds bench_engine's model (a random GPT-2, 6 layers, 512 wide, 8 heads, an 8000-token BPE, seed 0);
2. writes a 5-shot, 4-option multiple-choice task in lm-eval's task language, shaped like TAPE's
   RuOpenBook (``--docs`` test and ``--train`` train documents, its official counts by default): each
   document's question and options are those of the bundled RuOpenBook, RuWorldTree and PARus samples
   with their words shuffled, no question twice; two task files over the same data:
   - ``first_n``: ``fewshot_config: sampler: first_n``, every document after the same 5 demonstrations;
   - ``per_document``: lm-eval's default sampler, 5 demonstrations drawn for each document;
3. times, for each, ``lm_eval --model hf --model_args pretrained=DIR,dtype=float32 --batch_size 8
   --num_fewshot 5 --log_samples`` and ``rueval run`` with the same arguments (lm-eval's spelling: lm-eval's
   ``HFLM`` tokenization, and lm-eval's own code builds the task, draws the demonstrations and scores);
4. checks that both give the same numbers: every metric of the two results documents (``acc``,
   ``acc_norm`` and their standard errors) equal, and each request's log-likelihood in the two sample
   logs within 1e-4 nats with the same greedy flag;
5. writes benchmarks/results/<name>.json and .md.

The issue's targets: rueval at least 5x faster with shared demonstrations, 1.5x with per-document ones.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_engine import MODEL, lm_eval_forwarded, shuffled_sentence, trie_nodes
from bench_whole import LM_EVAL_BATCH_SIZE, load_note, thread_env, timed
from results_file import write_results

HERE = Path(__file__).parent
SHOTS, OPTIONS = 5, 4
TASK = "rueval_bench_openbook_ru"
SAMPLERS = {"first_n": "shared demonstrations (`sampler: first_n`)", "per_document": "per-document demonstrations"}
TARGETS = {"first_n": 5.0, "per_document": 1.5}
MODEL_ARGS = "pretrained={},dtype=float32"
LOGLIK_TOLERANCE = 1e-4
METRICS = ("acc", "acc_norm")


# -- the documents and the task files ------------------------------------------------------------
def material() -> tuple[list[str], list[str]]:
    """Question sentences and option phrases of the bundled RuOpenBook, RuWorldTree and PARus samples."""
    from rueval.data.local import SAMPLES_DIR
    from rueval.tasks import split_options

    def records(folder: str) -> list[dict[str, Any]]:
        paths = sorted((SAMPLES_DIR / folder).glob("*.jsonl"))
        return [json.loads(line) for path in paths for line in path.open(encoding="utf-8")]

    questions, options = [], []
    for record in records("ru_openbook") + records("ru_worldtree"):
        stem, choices = split_options(record["question"])
        questions.append(stem)
        options += choices.values()
    for record in records("PARus"):
        questions.append(record["premise"])
        options += [record["choice1"].rstrip("."), record["choice2"].rstrip(".")]
    return questions, options


def generate_docs(n: int, rng: random.Random, taken: set[str]) -> list[dict[str, Any]]:
    """n documents whose questions are not in ``taken`` (which grows), with OPTIONS distinct options."""
    questions, options = material()
    docs: list[dict[str, Any]] = []
    while len(docs) < n:
        question = shuffled_sentence(rng.choice(questions), rng)
        if question in taken:
            continue
        taken.add(question)
        choices: list[str] = []
        while len(choices) < OPTIONS:
            words = rng.choice(options).split()
            rng.shuffle(words)
            if (choice := " ".join(words)) not in choices:
                choices.append(choice)
        docs.append({"id": len(docs), "question": question, "choices": choices, "label": rng.randrange(OPTIONS)})
    return docs


def write_task_files(tasks_dir: Path, docs: int, train: int) -> dict[str, str]:
    """The data as JSON Lines and one task file per sampler in ``tasks_dir``; {sampler: task name}."""
    import yaml

    rng, taken = random.Random("bench_task_files/0"), set()
    tasks_dir.mkdir(parents=True)
    files = {}
    for split, n in (("train", train), ("test", docs)):
        files[split] = str(tasks_dir / f"{split}.jsonl")
        rows = generate_docs(n, rng, taken)
        Path(files[split]).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    names = {}
    for sampler in SAMPLERS:
        names[sampler] = f"{TASK}_{sampler}"
        config: dict[str, Any] = {
            "task": names[sampler],
            "dataset_path": "json",
            "dataset_kwargs": {"data_files": files},
            "training_split": "train",
            "fewshot_split": "train",
            "test_split": "test",
            "output_type": "multiple_choice",
            "doc_to_text": "Вопрос: {{question}}\nОтвет:",
            "doc_to_choice": "{{choices}}",
            "doc_to_target": "{{label}}",
            "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in METRICS],
        }
        if sampler == "first_n":
            config["fewshot_config"] = {"sampler": "first_n"}
        text = yaml.safe_dump(config, allow_unicode=True, sort_keys=False)
        (tasks_dir / f"{names[sampler]}.yaml").write_text(text, encoding="utf-8")
    return names


# -- the commands --------------------------------------------------------------------------------
class Bench:
    def __init__(self, work: Path, docs: int, train: int, lm_eval: str, device: str, threads: int | None):
        from rueval.models.backends.tiny import build_tiny_gpt2

        self.work, self.lm_eval, self.device, self.threads = work, lm_eval, device, thread_env(threads)
        self.model_dir = build_tiny_gpt2(work / "model", **MODEL)
        self.tasks_dir = work / "tasks"
        self.tasks = write_task_files(self.tasks_dir, docs, train)

    def arguments(self, sampler: str, out: Path) -> list[str]:
        """The command line both tools take (lm-eval's spelling)."""
        common = ["--model", "hf", "--model_args", MODEL_ARGS.format(self.model_dir), "--device", self.device]
        common += ["--include_path", str(self.tasks_dir), "--tasks", self.tasks[sampler]]
        return [*common, "--num_fewshot", str(SHOTS), "--output_path", str(out), "--log_samples"]

    def setting(self, sampler: str) -> dict[str, Any]:
        lm_out, ru_out = self.work / f"lm-eval-{sampler}", self.work / f"rueval-{sampler}"
        lm_eval = [self.lm_eval, *self.arguments(sampler, lm_out), "--batch_size", str(LM_EVAL_BATCH_SIZE)]
        rueval = [sys.executable, "-m", "rueval", "run", *self.arguments(sampler, ru_out), "-q"]
        row: dict[str, Any] = {"setting": sampler, "task": self.tasks[sampler]}
        row["lm_eval"] = timed(self.work, f"lm-eval-{sampler}", [lm_eval], self.threads)
        row["rueval"] = timed(self.work, f"rueval-{sampler}", [rueval], self.threads)
        row["lm_eval"]["metrics"] = metrics(lm_out, self.tasks[sampler])
        row["rueval"]["metrics"] = metrics(ru_out, self.tasks[sampler])
        row["agreement"] = agreement(lm_out, ru_out, row)
        row["tokens"] = tokens_to_forward(self.model_dir, lm_out)
        row["ratio"] = row["lm_eval"]["wall_s"] / row["rueval"]["wall_s"]
        row["target"] = TARGETS[sampler]
        return row


def metrics(out: Path, task: str) -> dict[str, float]:
    """The task's metrics in lm-eval's results document (lm-eval's results_*.json, rueval's results_lmeval.json)."""
    (path,) = out.rglob("results_*.json")
    results = json.loads(path.read_text(encoding="utf-8"))["results"][task]
    return {key: value for key, value in results.items() if "," in key and isinstance(value, float | int)}


def sample_logliks(out: Path) -> dict[tuple[int, int], tuple[float, bool]]:
    """{(document, option): (log-likelihood, greedy)} from the sample log under ``out``."""
    (path,) = out.rglob("samples_*.jsonl")
    found = {}
    for line in path.open(encoding="utf-8"):
        sample = json.loads(line)
        for option, ((loglik, greedy),) in enumerate(sample["resps"]):
            found[sample["doc_id"], option] = (float(loglik), greedy in (True, "True"))
    return found


def agreement(lm_out: Path, ru_out: Path, row: dict[str, Any]) -> dict[str, Any]:
    """Equal metrics and, request by request, log-likelihoods within LOGLIK_TOLERANCE and the same greedy
    flag; exits when they are not the same numbers."""
    lm, ru = sample_logliks(lm_out), sample_logliks(ru_out)
    if lm.keys() != ru.keys():
        sys.exit(f"the sample logs hold other requests: {len(lm)} from lm-eval, {len(ru)} from rueval")
    largest = max(abs(lm[k][0] - ru[k][0]) for k in lm)
    found = {
        "requests": len(lm),
        "max_loglik_difference": largest,
        "greedy_differs": sum(lm[k][1] != ru[k][1] for k in lm),
        "metrics_equal": row["lm_eval"]["metrics"] == row["rueval"]["metrics"],
    }
    if largest > LOGLIK_TOLERANCE or found["greedy_differs"] or not found["metrics_equal"]:
        lm_metrics, ru_metrics = row["lm_eval"]["metrics"], row["rueval"]["metrics"]
        sys.exit(f"not the same numbers: {found}; lm-eval {lm_metrics}, rueval {ru_metrics}")
    return found


def tokens_to_forward(model_dir: Path, out: Path) -> dict[str, int]:
    """The tokens of the sample log's requests (context and option tokenized whole) that lm-eval forwards
    (each sequence but its last token, bench_engine.lm_eval_forwarded) and that a scorer forwarding each
    distinct prefix once must forward (the nodes of their trie that some sequence continues)."""
    from transformers import AutoTokenizer

    (path,) = out.rglob("samples_*.jsonl")
    samples = [json.loads(line) for line in path.open(encoding="utf-8")]
    texts = [a["arg_0"] + a["arg_1"] for sample in samples for a in sample["arguments"].values()]
    sequences = AutoTokenizer.from_pretrained(model_dir)(texts, add_special_tokens=False)["input_ids"]
    nodes, leaves = trie_nodes(sequences)
    whole, _ = lm_eval_forwarded([(None, [], tokens) for tokens in sequences])
    return {"sequences": len(sequences), "whole_sequences": whole, "distinct_prefixes": nodes - leaves}


# -- the report ----------------------------------------------------------------------------------
def markdown(rows: list[dict[str, Any]], docs: int, train: int, threads: int | None) -> str:
    loads = [x for r in rows for tool in ("lm_eval", "rueval") for x in r[tool]["load_average"]]
    lines = [
        f"# bench_task_files: the whole process, an lm-eval task file ({docs} documents, {OPTIONS} options, "
        f"{SHOTS}-shot, {train} train documents), random GPT-2 (6 x 512), lm-eval --model hf --batch_size "
        f"{LM_EVAL_BATCH_SIZE}, torch threads: {threads or 'one per core'}",
        "",
        "| demonstrations | lm-eval | rueval | ratio | target | acc lm-eval / rueval | acc_norm lm-eval / rueval "
        "| largest log-likelihood difference | load average |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lm, ru, agreed = r["lm_eval"], r["rueval"], r["agreement"]
        load = [*lm["load_average"], *ru["load_average"]]
        met = "met" if r["ratio"] >= r["target"] else "missed"
        lines.append(
            f"| {SAMPLERS[r['setting']]} | {lm['wall_s']:.1f} s | {ru['wall_s']:.1f} s | {r['ratio']:.2f}x "
            f"| {r['target']}x: {met} | {lm['metrics']['acc,none']:.4f} / {ru['metrics']['acc,none']:.4f} "
            f"| {lm['metrics']['acc_norm,none']:.4f} / {ru['metrics']['acc_norm,none']:.4f} "
            f"| {agreed['max_loglik_difference']:.1e} ({agreed['requests']} requests) "
            f"| {min(load):.1f}-{max(load):.1f} |"
        )
    lines += ["", "Tokens to forward (the requests' sequences; context and option tokenized whole):", ""]
    lines += [
        "| demonstrations | sequences | every sequence whole (lm-eval) | each distinct prefix once |",
        "|---|---|---|---|",
    ]
    for r in rows:
        t = r["tokens"]
        lines.append(
            f"| {SAMPLERS[r['setting']]} | {t['sequences']:,} | {t['whole_sequences']:,} | {t['distinct_prefixes']:,} |"
        )
    lines += load_note(loads)
    return "\n".join(lines) + "\n"


def main() -> None:
    from rueval.tasks.tape import OFFICIAL_COUNTS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    official = OFFICIAL_COUNTS["ru_openbook"]
    parser.add_argument("--docs", type=int, default=official["test"], help="test documents (RuOpenBook's)")
    parser.add_argument("--train", type=int, default=official["train"], help="train documents (RuOpenBook's)")
    default_lm_eval = Path(os.environ.get("RUEVAL_LMEVAL_PYTHON", "/work/lmeval-venv/bin/python")).with_name("lm_eval")
    parser.add_argument("--lm-eval", default=str(default_lm_eval), help="lm-eval's command")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads for both tools")
    parser.add_argument("--only", default=",".join(SAMPLERS), help="settings, comma-separated")
    parser.add_argument("--name", default="bench_task_files", help="results file name, without extension")
    parser.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_task_files-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        bench = Bench(work, args.docs, args.train, args.lm_eval, args.device, args.threads)
        rows = [bench.setting(key) for key in args.only.split(",")]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    text = markdown(rows, args.docs, args.train, args.threads)
    print(text)
    (HERE / "results" / f"{args.name}.md").write_text(text, encoding="utf-8")
    write_results(
        HERE / "results" / f"{args.name}.json",
        rows,
        docs=args.docs,
        train=args.train,
        shots=SHOTS,
        options=OPTIONS,
        model=MODEL,
        model_args=MODEL_ARGS.format("DIR"),
        device=args.device,
        threads=args.threads,
        lm_eval_batch_size=LM_EVAL_BATCH_SIZE,
        total_s=time.perf_counter() - started,
    )


if __name__ == "__main__":
    main()
