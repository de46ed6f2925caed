"""The whole process as a user times it: `time lm_eval ...` against `time rueval run ...` (issue 28).

    python benchmarks/bench_whole.py [--items 349] [--lm-eval /work/lmeval-venv/bin/lm_eval]
        [--device cpu] [--threads N] [--only limit1,0shot,4shot] [--name bench_whole] [--keep DIR]

Not part of the test suite. lm-evaluation-harness 0.4.13 lives in its own virtualenv (see
bench_engine.py's docstring); ``--lm-eval`` names its ``lm_eval`` command. One run, each command once,
in a fresh process with fresh caches (rueval's RUEVAL_CACHE_DIR and output folder, lm-eval's datasets
cache and output folder; the operating system's page cache keeps the weights file, as for any second
command a user types):

1. builds bench_engine's model (a random GPT-2, 6 layers, 512 wide, 8 heads, an 8000-token BPE, seed 0)
   and its PARus items (``--items``, recombined from the bundled samples), and an lm-eval task of the
   same prompts (rueval's PARus prompt for every item and demonstration, ``write_lm_eval_task``);
2. times ``rueval run -t parus -m hf:DIR`` and ``lm_eval --model hf --batch_size 8`` (``add_bos_token``,
   float32, so that both score the same token sequences) on the same device:
   - ``--limit 1``: the fixed cost of a run;
   - 0-shot: one command each;
   - 4-shot x 5 episodes: rueval one command (``--shots 4 --episodes 5``); lm-eval has no episodes:
     5 commands, ``--seed 0`` to ``4``, timed together (it draws other demonstrations than rueval's);
3. runs rueval's ``--limit 1`` once more through a wrapper that runs its command line unchanged and
   splits the process into parts: the interpreter's start, rueval's command line imported, torch
   imported, transformers and the model's class imported, the weights read (tokenizer and
   ``from_pretrained``), rueval's model set-up (the rest of ``HFCausalLM``: identity, probes, GELU),
   the rest of the run (options, data, prompts, scoring, results) and the process's end;
4. writes benchmarks/results/<name>.json and .md with the machine's 1-minute load average before and
   after each command: figures measured with other work on the machine are marked so.

``--threads N`` gives both tools N torch threads (OMP_NUM_THREADS, MKL_NUM_THREADS; default torch's
choice, one per core). On a machine that other work keeps busy, threads that wait for each other at
every operation slow small ones most (lm-eval's more than rueval's), so ``--threads 1`` compares the
tools more fairly there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_engine import MODEL, generate_items, write_data, write_lm_eval_task
from results_file import write_results

HERE = Path(__file__).parent
SHOTS, EPISODES, LM_EVAL_BATCH_SIZE = 4, 5, 8
QUIET_LOAD = 1.5  # above this 1-minute load average (2 cores) a figure is marked as measured under load
PARTS = (  # (key, title): consecutive marks of the wrapper; "end" is the parent's
    ("python", "interpreter start"),
    ("cli", "rueval's command line imported"),
    ("torch", "torch imported"),
    ("transformers", "transformers and the model's class imported"),
    ("weights", "weights read (tokenizer, from_pretrained)"),
    ("setup", "rueval's model set-up (identity, probes, GELU)"),
    ("run", "the rest of the run (options, data, prompts, scoring, results)"),
    ("end", "the process's end"),
)
OWN = ("cli", "setup", "run", "end")  # rueval's own share: everything but Python, torch, transformers, the weights


# -- the wrapper: rueval's command line with marks, in the measured process ----------------------
def rueval_parts(marks_file: Path, argv: list[str]) -> None:
    """Run ``rueval`` with ``argv`` as its command line does, marking the time (epoch seconds) after each part."""
    marks = {"python": time.time()}
    from rueval import cli

    cli.set_up_process()  # as main() does, before the imports below
    marks["cli"] = time.time()
    import torch  # noqa: F401

    marks["torch"] = time.time()
    from transformers import AutoConfig, AutoModelForCausalLM

    model_dir = argv[argv.index("-m") + 1].removeprefix("hf:")
    AutoModelForCausalLM._model_mapping[type(AutoConfig.from_pretrained(model_dir))]  # the class's module
    marks["transformers"] = time.time()
    from rueval.models import hf

    load, init = hf.load_weights, hf.HFCausalLM.__init__

    def timed_load(*args, **kwargs):
        started = time.time()
        loaded = load(*args, **kwargs)
        marks["weights_s"] = time.time() - started
        return loaded

    def timed_init(self, *args, **kwargs):
        started = time.time()
        init(self, *args, **kwargs)
        marks["model_s"] = time.time() - started

    end = cli.end_process

    def marked_end(code):
        marks["app"] = time.time()
        marks_file.write_text(json.dumps(marks), encoding="utf-8")
        end(code)

    hf.load_weights, hf.HFCausalLM.__init__, cli.end_process = timed_load, timed_init, marked_end
    sys.argv = ["rueval", *argv]
    cli.main()


def parts_of(marks: dict[str, float], started: float, ended: float) -> dict[str, float]:
    """Seconds per part from the wrapper's marks and the parent's start and end of the process."""
    weights = marks["weights_s"]
    before_model = marks["app"] - marks["transformers"] - marks["model_s"]  # options, data, prompts, scoring, results
    return {
        "python": marks["python"] - started,
        "cli": marks["cli"] - marks["python"],
        "torch": marks["torch"] - marks["cli"],
        "transformers": marks["transformers"] - marks["torch"],
        "weights": weights,
        "setup": marks["model_s"] - weights,
        "run": before_model,
        "end": ended - marks["app"],
    }


# -- the commands -------------------------------------------------------------------------------
class Bench:
    def __init__(self, work: Path, items: int, lm_eval: str, device: str, threads: int | None):
        from rueval.models.backends.tiny import build_tiny_gpt2

        self.work, self.items, self.lm_eval, self.device = work, items, lm_eval, device
        self.threads = thread_env(threads)
        self.model_dir = build_tiny_gpt2(work / "model", **MODEL)
        self.data_dir = work / "data"
        write_data(generate_items(items, seed=0), self.data_dir)
        self.task = write_lm_eval_task(self.data_dir, work / "lm-eval-tasks")

    def rueval(self, name: str, shots: int, limit: int | None = None, wrapped: bool = False) -> list[str]:
        run = ["run", "-t", "parus", "-m", f"hf:{self.model_dir}", "--data", str(self.data_dir), "--split", "val"]
        run += ["-o", str(self.work / name), "--shots", str(shots), "--device", self.device, "-q"]
        run += (["--episodes", str(EPISODES)] if shots else []) + (["--limit", str(limit)] if limit else [])
        if wrapped:
            return [sys.executable, __file__, "--rueval-parts", str(self.work / f"{name}.marks.json"), "--", *run]
        return [sys.executable, "-m", "rueval", *run]

    def lm_eval_runs(self, name: str, shots: int, limit: int | None = None) -> list[list[str]]:
        model_args = f"pretrained={self.model_dir},add_bos_token=True,dtype=float32"
        common = [self.lm_eval, "--model", "hf", "--model_args", model_args, "--device", self.device]
        common += ["--batch_size", str(LM_EVAL_BATCH_SIZE), "--include_path", str(self.work / "lm-eval-tasks")]
        common += ["--tasks", self.task, "--num_fewshot", str(shots)] + (["--limit", str(limit)] if limit else [])
        seeds = range(EPISODES) if shots else [0]
        return [[*common, "--seed", str(s), "--output_path", str(self.work / name / f"seed{s}")] for s in seeds]

    def setting(self, key: str) -> dict[str, Any]:
        shots, limit = {"limit1": (0, 1), "0shot": (0, None), "4shot": (SHOTS, None)}[key]
        row: dict[str, Any] = {"setting": key}
        lm_eval_runs = self.lm_eval_runs(f"lm-eval-{key}", shots, limit)
        row["lm_eval"] = timed(self.work, f"lm-eval-{key}", lm_eval_runs, self.threads)
        row["rueval"] = timed(self.work, f"rueval-{key}", [self.rueval(f"rueval-{key}", shots, limit)], self.threads)
        row["lm_eval"]["accuracy"] = lm_eval_accuracy(self.work / f"lm-eval-{key}")
        row["rueval"]["accuracy"] = rueval_accuracy(self.work / f"rueval-{key}")
        if key == "limit1":
            name = "rueval-limit1-parts"
            measured = timed(self.work, name, [self.rueval(name, 0, 1, wrapped=True)], self.threads)
            marks = json.loads((self.work / f"{name}.marks.json").read_text(encoding="utf-8"))
            row["rueval_parts"] = parts_of(marks, *measured["spans"][0]) | {"wall_s": measured["wall_s"]}
            row["rueval_parts_load_average"] = measured["load_average"]
        row["ratio"] = row["lm_eval"]["wall_s"] / row["rueval"]["wall_s"]
        return row


def timed(work: Path, name: str, commands: list[list[str]], env_extra: dict[str, str]) -> dict[str, Any]:
    """The commands one after another, each with fresh caches (under ``work``) and ``env_extra``; their
    summed wall time and the load average before and after each."""
    wall, loads, spans = 0.0, [], []
    for i, command in enumerate(commands):
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        env |= {"RUEVAL_CACHE_DIR": str(work / f"cache-{name}-{i}")}
        env |= {"HF_DATASETS_CACHE": str(work / f"datasets-{name}-{i}")} | env_extra
        log = work / f"{name}-{i}.log"
        loads.append(round(os.getloadavg()[0], 2))
        started = time.time()
        with log.open("w") as out:
            code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, check=False).returncode
        ended = time.time()
        loads.append(round(os.getloadavg()[0], 2))
        if code:
            sys.exit(f"{' '.join(command[:6])} ... failed ({code}); see {log}:\n{log.read_text()[-3000:]}")
        wall += ended - started
        spans.append((started, ended))
    print(f"{name}: {wall:.1f} s (load {min(loads):.1f}-{max(loads):.1f})", flush=True)
    return {"wall_s": wall, "load_average": loads, "spans": spans, "commands": len(commands)}


def thread_env(threads: int | None) -> dict[str, str]:
    """The environment that gives a child process ``threads`` torch threads (none: torch's choice)."""
    return {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)} if threads else {}


def rueval_accuracy(out: Path) -> float:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))["tasks"]["parus"]["metrics"]["accuracy"] / 100


def lm_eval_accuracy(out: Path) -> float:
    """The mean of lm-eval's seeds (0-1)."""
    values = [json.loads(p.read_text(encoding="utf-8"))["results"] for p in out.rglob("results_*.json")]
    return sum(next(iter(v.values()))["acc,none"] for v in values) / len(values)


# -- the report ---------------------------------------------------------------------------------
TITLES = {
    "0shot": "0-shot",
    "4shot": f"{SHOTS}-shot x {EPISODES} episodes (lm-eval: {EPISODES} runs)",
    "limit1": "`--limit 1` (fixed cost)",
}


def markdown(rows: list[dict[str, Any]], items: int, threads: int | None) -> str:
    loads = [x for r in rows for tool in ("lm_eval", "rueval") for x in r[tool]["load_average"]]
    lines = [
        f"# bench_whole: the whole process, {items} PARus items, random GPT-2 (6 x 512), "
        f"lm-eval --model hf --batch_size {LM_EVAL_BATCH_SIZE}, torch threads: {threads or 'one per core'}",
        "",
        "| setting | lm-eval | rueval | ratio | accuracy lm-eval / rueval | load average |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lm, ru = r["lm_eval"], r["rueval"]
        load = [*lm["load_average"], *ru["load_average"]]
        lines.append(
            f"| {TITLES[r['setting']]} | {lm['wall_s']:.1f} s | {ru['wall_s']:.1f} s | {r['ratio']:.2f}x "
            f"| {lm['accuracy']:.3f} / {ru['accuracy']:.3f} | {min(load):.1f}-{max(load):.1f} |"
        )
    parts = next((r["rueval_parts"] for r in rows if "rueval_parts" in r), None)
    if parts:
        own = sum(parts[k] for k in OWN)
        total = f"{parts['wall_s']:.2f} s in all; rueval's own share {own:.2f} s"
        lines += ["", f"rueval's `--limit 1`, part by part ({total}):", ""]
        lines += ["| part | seconds |", "|---|---|"]
        lines += [f"| {title}{' (rueval)' if key in OWN else ''} | {parts[key]:.2f} |" for key, title in PARTS]
    lines += load_note(loads)
    return "\n".join(lines) + "\n"


def load_note(loads: list[float]) -> list[str]:
    """The report's closing lines saying the figures were measured under load, when they were."""
    if not loads or max(loads) <= QUIET_LOAD:
        return []
    return ["", f"Measured under load: the machine's 1-minute load average was {min(loads):.1f}-{max(loads):.1f} "
            "(2 cores; the benchmark alone keeps it near 1-2)."]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=349)
    parser.add_argument("--lm-eval", default="/work/lmeval-venv/bin/lm_eval", help="lm-eval's command")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads for both tools")
    parser.add_argument("--only", default="limit1,0shot,4shot", help="settings, comma-separated")
    parser.add_argument("--name", default="bench_whole", help="results file name, without extension")
    parser.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    parser.add_argument("--rueval-parts", type=Path, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.rueval_parts:
        return rueval_parts(args.rueval_parts, rest[1:] if rest[:1] == ["--"] else rest)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_whole-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        bench = Bench(work, args.items, args.lm_eval, args.device, args.threads)
        rows = [bench.setting(key) for key in args.only.split(",")]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    text = markdown(rows, args.items, args.threads)
    print(text)
    (HERE / "results" / f"{args.name}.md").write_text(text, encoding="utf-8")
    write_results(
        HERE / "results" / f"{args.name}.json",
        rows,
        items=args.items,
        model=MODEL,
        device=args.device,
        threads=args.threads,
        lm_eval_batch_size=LM_EVAL_BATCH_SIZE,
        total_s=time.perf_counter() - started,
    )


if __name__ == "__main__":
    main()
