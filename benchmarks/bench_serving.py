"""rueval's ``openai:`` client against lm-evaluation-harness's ``local-completions``, on the
same local OpenAI-compatible server (issue #17, item 4).

    python benchmarks/bench_serving.py [--quick] [--items 349] [--lm-eval-python /tmp/lmeval-serving/bin/python]
        [--keep DIR] [--name bench_serving]

Not part of the test suite; CPU only. lm-evaluation-harness 0.4.13 lives in its own virtualenv,
which borrows torch and transformers from rueval's through a .pth file (it never writes there):

    python -m venv /tmp/lmeval-serving && python -c "import site; print(site.getsitepackages()[0])" \
        > /tmp/lmeval-serving/lib/python3.11/site-packages/shared_venv.pth \
        && /tmp/lmeval-serving/bin/pip install "lm-eval[api]==0.4.13"

One run:
1. builds a random GPT-2 (4 layers, 256 wide, 4 heads, 4000-token BPE, seed 0) with
   ``rueval.models.tiny.build_tiny_gpt2``;
2. writes 349 PARus items (``--quick``: 60) in PARus's layout, recombined from the bundled
   samples by bench_engine's ``generate_items`` (distinct premises), beside the bundled train
   samples, which give the 4-shot demonstrations;
3. for every configuration starts fresh server processes (benchmarks/serving_server.py: one
   padded forward per HTTP request, one torch thread each, as one GPU each; they count HTTP
   requests and prompt tokens) and a fresh ``RUEVAL_CACHE_DIR``, then times the whole command:
   - rueval ``rueval run -t parus -m openai:tiny --base-url URL`` at 0-shot and at
     ``--shots 4 --episodes 5``, with one and with two servers;
   - ``lm_eval --model local-completions`` over a task YAML of the same prompts (rueval's PARus
     prompt text for every item and demonstration, so both tools send the same prompts, apart
     from which demonstrations are drawn), ``--num_fewshot 0``, and ``4`` with 5 ``--seed`` s
     (lm-eval has no episodes: 5 runs, timed together), with its defaults (``num_concurrent=1``,
     ``batch_size=1``, ``tokenized_requests=True``, ``tokenizer_backend=huggingface``) and with the
     best settings found here (``num_concurrent=8``, ``batch_size=16``);
4. prints a Markdown table (items/s = items x settings / wall time) and writes
   benchmarks/results/bench_serving.json (``--name``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench_engine import generate_items, load_split, write_data
from results_file import write_results

HERE = Path(__file__).parent
MODEL = {"n_layer": 4, "n_embd": 256, "n_head": 4, "vocab_size": 4000, "seed": 0}
SHOTS, EPISODES = 4, 5
SERVER_FLAGS: list[str] = []  # --no-prefix-cache
LM_EVAL_SETTINGS = {  # what differs from lm-eval's defaults; the tokenizer is always the served model's
    "default": {},
    "best": {"num_concurrent": 8, "batch_size": 16},
}


# -- data --------------------------------------------------------------------------------------
def write_lm_eval_task(data_dir: Path, tasks_dir: Path) -> str:
    """A local lm-eval task whose docs are rueval's PARus prompts (context, continuations) for the
    train and val splits, joined as rueval joins demonstrations."""
    from rueval.tasks.prompts.base import DEMO_SEPARATOR
    from rueval.tasks.prompts.parus import PROMPT

    _, train, examples = load_split(data_dir, 10**9)
    tasks_dir.mkdir(parents=True)
    files = {}
    for split, split_examples in (("train", train), ("val", examples)):
        rows = []
        for example in split_examples:
            (question,) = PROMPT.questions(example)
            labels = [c.label for c in question.choices]
            rows.append(
                {
                    "context": question.context,
                    "choices": [c.continuation for c in question.choices],
                    "label": labels.index(example.label),
                }
            )
        files[split] = tasks_dir / f"{split}.jsonl"
        files[split].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    name = "bench_serving_parus"
    config = {  # JSON is YAML
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {split: str(path) for split, path in files.items()}},
        "training_split": "train",
        "fewshot_split": "train",
        "test_split": "val",
        "output_type": "multiple_choice",
        "doc_to_text": "{{context}}",
        "doc_to_choice": "{{choices}}",
        "doc_to_target": "{{label}}",
        "target_delimiter": "",  # the continuations start with their space
        "fewshot_delimiter": DEMO_SEPARATOR,
        "metric_list": [{"metric": "acc"}],
    }
    (tasks_dir / f"{name}.yaml").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")
    return name


# -- servers -----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_servers(n: int, model_dir: Path, log_dir: Path) -> list[tuple[subprocess.Popen, str]]:
    """n server processes on free ports, once each answers /v1/models."""
    servers = []
    for _ in range(n):
        port = free_port()
        log = (log_dir / f"server-{port}.log").open("w")
        command = [sys.executable, str(HERE / "serving_server.py"), str(model_dir), "--port", str(port), *SERVER_FLAGS]
        servers.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), f"http://127.0.0.1:{port}/v1"))
    for process, url in servers:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(url + "/models", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"the server at {url} did not start; see {log_dir}")
                time.sleep(0.3)
    return servers


def stop_servers(servers: list[tuple[subprocess.Popen, str]]) -> dict[str, Any]:
    """Each server's counters, summed; then the servers are stopped."""
    totals: dict[str, Any] = {"requests_per_server": []}
    for process, url in servers:
        stats = json.loads(urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=10).read())
        totals["requests_per_server"].append(stats["requests"])
        for key, value in stats.items():
            totals[key] = totals.get(key, 0) + value
        process.terminate()
        process.wait(timeout=30)
    return totals


def timed(command: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """The command's wall time and CPU time (user + system, all its threads)."""
    started, cpu = time.perf_counter(), _children_cpu()
    with log.open("w") as out:
        code = subprocess.run(command, check=False, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    if code:
        sys.exit(f"{' '.join(command[:4])} ... failed ({code}); see {log}:\n{log.read_text()[-3000:]}")
    return time.perf_counter() - started, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- the tools ---------------------------------------------------------------------------------
def run_rueval(n_servers: int, shots: int, model_dir: Path, data_dir: Path, work: Path) -> dict[str, Any]:
    name = f"rueval-{n_servers}srv-{shots}shot"
    servers = start_servers(n_servers, model_dir, work)
    out = work / name
    env = {**os.environ, "RUEVAL_CACHE_DIR": str(work / f"cache-{name}"), "PYTHONPATH": str(HERE.parent / "src")}
    # fmt: off
    command = [
        sys.executable, "-m", "rueval", "run", "-t", "parus", "-m", "openai:tiny",
        "--base-url", ",".join(url for _, url in servers), "--data", str(data_dir), "--split", "val", "-o", str(out),
        "--shots", str(shots), *(["--episodes", str(EPISODES)] if shots else []),
    ]
    # fmt: on
    try:
        wall, client_cpu_s = timed(command, env, work / f"{name}.log")
    finally:
        stats = stop_servers(servers)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    scoring_s = results["tasks"]["parus"]["industrial"]["seconds"]  # the run less its start (imports, checks)
    return {
        "tool": "rueval",
        "servers": n_servers,
        "wall_s": wall,
        "scoring_s": scoring_s,
        "client_cpu_s": client_cpu_s,
        **stats,
        "accuracy": rueval_accuracy(results),
    }


def rueval_accuracy(results: dict[str, Any]) -> float:
    """PARus accuracy (0-1) from results.json, the mean over the episodes."""
    return results["tasks"]["parus"]["metrics"]["accuracy"] / 100


def run_lm_eval(setting: str, shots: int, model_dir: Path, task: str, tasks_dir: Path, work: Path, python: str):
    name = f"lm-eval-{setting}-{shots}shot"
    servers = start_servers(1, model_dir, work)
    ((_, url),) = servers
    extra = LM_EVAL_SETTINGS[setting]
    model_args = ",".join(
        [f"model=tiny,base_url={url}/completions,tokenizer={model_dir}"]
        + [f"{k}={v}" for k, v in extra.items() if k != "batch_size"]
    )
    env = {
        **os.environ,
        "HF_DATASETS_CACHE": str(work / f"hf-{name}"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONPATH": "",
    }
    seeds = range(EPISODES) if shots else [0]
    accuracies, wall, client_cpu_s = [], 0.0, 0.0
    try:
        for seed in seeds:
            output = work / f"{name}-seed{seed}"
            # fmt: off
            command = [
                python, "-m", "lm_eval", "--model", "local-completions", "--model_args", model_args,
                "--batch_size", str(extra.get("batch_size", 1)), "--include_path", str(tasks_dir), "--tasks", task,
                "--num_fewshot", str(shots), "--seed", str(seed), "--output_path", str(output),
            ]
            # fmt: on
            run_wall, run_cpu = timed(command, env, work / f"{name}-seed{seed}.log")
            wall, client_cpu_s = wall + run_wall, client_cpu_s + run_cpu
            (results_file,) = output.rglob("results_*.json")
            accuracies.append(json.loads(results_file.read_text(encoding="utf-8"))["results"][task]["acc,none"])
    finally:
        stats = stop_servers(servers)
    return {
        "tool": f"lm-eval ({setting})",
        "servers": 1,
        "wall_s": wall,
        "client_cpu_s": client_cpu_s,
        **stats,
        "accuracy": sum(accuracies) / len(accuracies),
    }


# -- the run -----------------------------------------------------------------------------------
def table(rows: list[dict[str, Any]], items: int) -> str:
    lines = [
        "| tool | servers | setting | items/s | wall s | HTTP requests | prompt tokens | computed tokens | accuracy |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['tool']} | {r['servers']} | {r['setting']} | {r['items_per_s']:.1f} | {r['wall_s']:.1f} "
            f"| {r['requests']} | {r['prompt_tokens']} | {r['computed_tokens']} | {r['accuracy']:.3f} |"
        )
    return "\n".join(lines)


def ratios(rows: list[dict[str, Any]]) -> dict[str, float]:
    speed = {(r["tool"], r["servers"], r["setting"]): r["items_per_s"] for r in rows}
    out = {}
    for setting in {r["setting"] for r in rows}:
        rueval = speed.get(("rueval", 1, setting))
        for lm in ("default", "best"):
            if rueval and (lm_speed := speed.get((f"lm-eval ({lm})", 1, setting))):
                out[f"rueval / lm-eval {lm}, {setting}"] = rueval / lm_speed
        if rueval and (two := speed.get(("rueval", 2, setting))):
            out[f"rueval 2 servers / 1, {setting}"] = two / rueval
    return dict(sorted(out.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=349)
    parser.add_argument("--quick", action="store_true", help="60 items")
    parser.add_argument("--lm-eval-python", default="/tmp/lmeval-serving/bin/python")
    parser.add_argument("--no-prefix-cache", action="store_true", help="servers compute every prompt's every token")
    parser.add_argument("--skip-lm-eval", action="store_true", help="rueval only")
    parser.add_argument("--name", default="bench_serving", help="results file name, without extension")
    parser.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    args = parser.parse_args()
    items = 60 if args.quick else args.items
    SERVER_FLAGS.extend(["--no-prefix-cache"] if args.no_prefix_cache else [])

    from rueval.models.tiny import build_tiny_gpt2

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_serving-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        model_dir = build_tiny_gpt2(work / "model", **MODEL)
        data_dir = work / "data"
        write_data(generate_items(items, seed=0), data_dir)
        task = write_lm_eval_task(data_dir, work / "lm-eval-tasks")
        rows = []
        for shots in (0, SHOTS):
            setting = f"{shots}-shot" + (f" x {EPISODES}" if shots else "")
            runs = [lambda n=n, shots=shots: run_rueval(n, shots, model_dir, data_dir, work) for n in (1, 2)]
            if not args.skip_lm_eval:
                runs += [
                    lambda s=s, shots=shots: run_lm_eval(
                        s, shots, model_dir, task, work / "lm-eval-tasks", work, args.lm_eval_python
                    )
                    for s in LM_EVAL_SETTINGS
                ]
            for run in runs:
                row = run() | {"setting": setting}
                row["items_per_s"] = items * (EPISODES if shots else 1) / row["wall_s"]
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows, items))
    speedups = ratios(rows)
    for key, value in speedups.items():
        print(f"{key}: {value:.2f}x")
    write_results(
        HERE / "results" / f"{args.name}.json",
        rows,
        items=items,
        model=MODEL,
        lm_eval_settings=LM_EVAL_SETTINGS,
        prefix_cache=not args.no_prefix_cache,
        ratios=speedups,
        total_s=time.perf_counter() - started,
        load_average=os.getloadavg()[0],
    )


if __name__ == "__main__":
    main()
