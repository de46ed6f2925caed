"""rueval's language-model engine against lm-evaluation-harness, on the same model and prompts.

    python benchmarks/bench_engine.py [--items 350] [--episodes 5] [--fewshot-items N] [--threads N]
        [--repeats 3] [--device cpu|cuda] [--dtype float32|bfloat16] [--parts loglikelihood,generation]
        [--generation-items 64] [--max-gen-toks 32]
        [--lm-eval-python /tmp/venv-bench/bin/python] [--name bench_engine] [--keep DIR]

On a GPU, both parts in bfloat16 (the generation part's 4-shot prompts share their demonstrations):

    python benchmarks/bench_engine.py --device cuda --dtype bfloat16 --name bench_engine_cuda

A quick check on a CPU: ``--items 16 --fewshot-items 8 --episodes 2 --repeats 1 --generation-items 8``.

Not part of the test suite. ``--device cuda`` runs both tools on the GPU (a CUDA build of torch in both
virtualenvs), ``--dtype bfloat16`` both in bfloat16 (rueval's tree mask then goes through the GPU's
SDPA kernels; log-likelihoods differ from float32 in their third digit, answers rarely).
lm-evaluation-harness 0.4.x lives in its own virtualenv
(it pins other packages than rueval's):

    python3 -m venv /tmp/venv-bench && /tmp/venv-bench/bin/pip install torch==2.13.0 \
        && /tmp/venv-bench/bin/pip install lm-eval transformers accelerate \
        && /tmp/venv-bench/bin/pip install -e .

One run:
1. builds one random GPT-2 (6 layers, 512 wide, 8 heads, seed 0, a byte-level BPE of 8000 tokens
   trained on the bundled samples) with ``rueval.models.backends.tiny.build_tiny_gpt2``;
2. generates PARus items by recombining the bundled PARus samples with a seeded RNG: each item's
   premise and choices are the words of random sample sentences, shuffled (so no two items share
   a context, as on real data), its question and label random; they are written in PARus's
   layout and read back with rueval's loader;
3. builds the prompts with rueval's PARus prompt through ``LMSolver`` (0-shot, and 4-shot x 5
   episodes of demonstrations drawn from the bundled train samples by ``episode_demos``);
4. scores them with rueval (``HFCausalLM`` + ``Engine``, no request cache, batch size auto), each
   setting in a fresh process, timing the engine's ``loglikelihood`` calls (tokenisation
   included, model load excluded and reported apart);
5. scores the same prompts with ``lm_eval --model hf`` (batch size 32) over a generated local task
   YAML, in a fresh process of the lm-eval virtualenv. A thin wrapper around lm-eval's own CLI
   times its model load and its ``loglikelihood`` call (tokenisation included) and counts what
   its ``_model_call`` receives; lm-eval's code runs unchanged;
6. repeats 4-5 ``--repeats`` times per setting, the two tools taking turns, and keeps each
   tool's run with the median scoring time (a run of a few seconds is only as steady as the
   machine);
7. checks that both encode the same tokens and pick the same answers, and compares the
   log-likelihoods;
8. prints a table and writes benchmarks/results/bench_engine.json and .md (``--name``).

The generation part (``--parts generation``) asks for greedy texts after the same prompts (``--generation-items``
of them, 0-shot and 4-shot x ``--episodes``, ``--max-gen-toks`` new tokens, stopping at a new line):
rueval's ``HFCausalLM.generate`` batched (batch size auto: continuous batching, the demonstrations a
4-shot episode shares prefilled once) and one prompt at a time (``--batch-size 1``), and lm-eval's
``generate_until`` (batch size 32, left-padded batches) over a generated local task of the same prompts,
each in a fresh process timed around its generation calls; it reports the texts equal to rueval's one at a
time (a random model's top two logits are often within rounding of each other, so batched texts may
part from them at such a tie).

Both tools run with the same torch threads (``--threads``, default torch's choice). The timings
are only as good as the machine is quiet: the run records the 1-minute load average around each
timed process (about 1-2 is the benchmark alone on 2 cores) and a hash of the engine's sources.

Tokens: "unique" is the number of distinct token prefixes over all encoded sequences of a setting
(start token + context + continuation), i.e. the nodes of their token trie, the start token
included: what a scorer that never recomputes a prefix must forward. Peak RSS is the process's
``ru_maxrss`` right after scoring (interpreter, libraries, model and requests included).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import namedtuple
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rueval.tasks import Example, Task

RESULTS = Path(__file__).parent / "results"
Device = namedtuple("Device", "name dtype")  # where and in what precision both tools run
MODEL = {"n_layer": 6, "n_embd": 512, "n_head": 8, "vocab_size": 8000, "seed": 0}
LM_EVAL_BATCH_SIZE = 32
SHOTS = 4
GENERATION_STOP = ("\n",)
ENGINE_SOURCES = (
    "models/backends/prefix_tree.py",
    "models/backends/hf.py",
    "models/engine.py",
    "models/base.py",
    "solvers/lm.py",
)
LOAD_AVERAGES: list[float] = []  # the machine's 1-minute load average before and after each timed process


# -- the items and prompts (in the parent process) --------------------------------------------
def generate_items(n: int, seed: int) -> list[dict[str, Any]]:
    """n PARus records whose sentences are bundled sample sentences with their words shuffled;
    no two items share a premise."""
    from rueval.data.local import SAMPLES_DIR

    samples = [
        json.loads(line)
        for path in sorted((SAMPLES_DIR / "PARus").glob("*.jsonl"))
        for line in path.open(encoding="utf-8")
    ]
    premises = [s["premise"] for s in samples]
    choices = [s[field] for s in samples for field in ("choice1", "choice2")]
    rng = random.Random(f"bench_engine/{seed}")
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    while len(items) < n:
        premise = shuffled_sentence(rng.choice(premises), rng)
        if premise in seen:
            continue
        seen.add(premise)
        item = {
            "idx": len(items),
            "premise": premise,
            "choice1": shuffled_sentence(rng.choice(choices), rng),
            "choice2": shuffled_sentence(rng.choice(choices), rng),
            "question": rng.choice(("cause", "effect")),
            "label": rng.randrange(2),
        }
        items.append(item)
    return items


def shuffled_sentence(sentence: str, rng: random.Random) -> str:
    words = sentence.rstrip(".!?…").split()
    rng.shuffle(words)
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def write_data(items: list[dict[str, Any]], data_dir: Path) -> None:
    """The items as PARus/val.jsonl beside a copy of the bundled train samples (the demonstrations)."""
    from rueval.data.local import SAMPLES_DIR

    folder = data_dir / "PARus"
    folder.mkdir(parents=True)
    shutil.copy(SAMPLES_DIR / "PARus" / "train.jsonl", folder / "train.jsonl")
    (folder / "val.jsonl").write_text(
        "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8"
    )


def load_split(data_dir: Path, n: int) -> tuple[Task, list[Example], list[Example]]:
    """The PARus task, its train examples and the first n eval items, through rueval's loader."""
    from rueval.data import open_data
    from rueval.tasks import get_task

    task = get_task("parus")
    source = open_data(str(data_dir))
    return task, source.load(task, "train").examples, source.load(task, "val").examples[:n]


def build_prompts(data_dir: Path, shots: int, episodes: int, n: int) -> list[dict[str, Any]]:
    """Every (episode, item) with its context and continuations, as LMSolver plans them."""
    from rueval.models.base import Capabilities, LanguageModel
    from rueval.models.engine import Engine
    from rueval.solvers import Setting
    from rueval.solvers.lm import LMSolver

    class Unloaded(LanguageModel):
        """Planning reads only what a text model declares; nothing is computed."""

        identity = "bench:unloaded"
        capabilities = Capabilities(loglikelihood=True, generation=True)

        def loglikelihood(self, requests, on_done=None):
            raise NotImplementedError

        generate = loglikelihood

    task, train, examples = load_split(data_dir, n)
    solver = LMSolver(Engine(Unloaded()), "bench")
    rows = []
    for episode in range(episodes):
        plan = solver.plan(task, train, examples, Setting(shots, episode))
        for example, (planned,) in zip(examples, plan.asked, strict=True):
            asked, question = planned.requests, planned.question
            assert len({r.context for r in asked}) == 1
            labels = [c.label for c in question.choices]
            rows.append(
                {
                    "episode": episode,
                    "item": example.idx,
                    "context": asked[0].context,
                    "choices": [r.continuation for r in asked],
                    "label": labels.index(example.label),
                }
            )
    return rows


# -- an lm-eval task of rueval's prompts (bench_serving, bench_whole) ---------------------------------
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
            choices = [c.continuation for c in question.choices]
            rows.append({"context": question.context, "choices": choices, "label": labels.index(example.label)})
        files[split] = tasks_dir / f"{split}.jsonl"
        files[split].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    name = "rueval_bench_parus"
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


# -- rueval, in its own process ------------------------------------------------------------------
def rueval_worker(spec_file: Path, out_file: Path) -> None:
    """Score one setting with LMSolver + Engine + HFCausalLM, timing the engine's calls."""
    import torch

    from rueval.models.backends.hf import HFCausalLM
    from rueval.models.engine import Engine
    from rueval.solvers import Setting
    from rueval.solvers.lm import LMSolver

    spec = json.loads(spec_file.read_text(encoding="utf-8"))

    class TimedEngine(Engine):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.seconds = self.cpu_seconds = 0.0
            self.calls: list = []  # (requests, results) per call

        def compute(self, requests, description="scoring"):
            started, cpu_started = time.perf_counter(), time.process_time()
            results = super().compute(requests, description)
            self.seconds += time.perf_counter() - started
            self.cpu_seconds += time.process_time() - cpu_started
            self.calls.append((list(requests), results))
            return results

    task, train, examples = load_split(Path(spec["data_dir"]), spec["items"])
    started = time.perf_counter()
    model = HFCausalLM(spec["model_dir"], device=spec["device"], dtype=spec["dtype"], batch_size="auto")
    load_s = time.perf_counter() - started
    engine = TimedEngine(model, cache=None)
    solver = LMSolver(engine, "bench")
    predictions = []
    started = time.perf_counter()
    for episode in range(spec["episodes"]):
        plan = solver.plan(task, train, examples, Setting(spec["shots"], episode))
        results = engine.compute(plan.requests)
        predictions.extend(solver.answer(plan, dict(zip(plan.requests, results, strict=True))))
    predict_s = time.perf_counter() - started
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    requests = [r for batch, _ in engine.calls for r in batch]
    results = [r for _, batch in engine.calls for r in batch]
    out = {
        "load_s": load_s,
        "score_s": engine.seconds,
        "score_cpu_s": engine.cpu_seconds,  # all threads
        "predict_s": predict_s,  # plans, scoring and answers
        "peak_rss_mb": peak_rss_mb,
        "torch_threads": torch.get_num_threads(),
        "stats": vars(model.stats),
        "max_rows": model.max_rows,
        "max_batch_tokens": model.max_batch_tokens,
        "requests": [[r.context, r.continuation] for r in requests],
        "logprobs": [r.logprob for r in results],
        "predictions": predictions,
        "tokens": [model.encode(r)[0] for r in requests],
    }
    out_file.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")


def rueval_generation_worker(spec_file: Path, out_file: Path) -> None:
    """Generate after the exported prompts with HFCausalLM (batch size ``spec["batch_size"]``), timing
    ``generate`` (tokenisation included, model load excluded)."""
    from rueval.models.backends.hf import HFCausalLM
    from rueval.models.base import Generation

    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    model = HFCausalLM(spec["model_dir"], device=spec["device"], dtype=spec["dtype"], batch_size=spec["batch_size"])
    requests = [Generation(p, spec["max_gen_toks"], stop=GENERATION_STOP) for p in spec["prompts"]]
    started, cpu_started = time.perf_counter(), time.process_time()
    texts = model.generate(requests)
    out = {
        "generate_s": time.perf_counter() - started,
        "generate_cpu_s": time.process_time() - cpu_started,
        "mode": getattr(model, "generation_mode", "one-at-a-time"),
        "texts": texts,
    }
    out_file.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")


# -- lm-evaluation-harness, in its own process (its virtualenv) ----------------------------------
def lm_eval_wrapper(probe_file: Path, argv: list[str]) -> None:
    """lm-eval's CLI, unchanged, with timers and counters around HFLM's load, loglikelihood and
    model calls."""
    import lm_eval.models.huggingface as hf
    import torch
    from lm_eval.__main__ import cli_evaluate

    probe: dict[str, Any] = {
        "load_s": 0.0,
        "score_s": 0.0,
        "score_cpu_s": 0.0,
        "model_calls": 0,
        "fed_tokens": 0,
        "requests": [],
    }
    init, loglikelihood, tokens, model_call, generate_until = (
        hf.HFLM.__init__,
        hf.HFLM.loglikelihood,
        hf.HFLM._loglikelihood_tokens,
        hf.HFLM._model_call,
        hf.HFLM.generate_until,
    )

    def timed_init(self, *args, **kwargs):
        started = time.perf_counter()
        init(self, *args, **kwargs)
        probe["load_s"] += time.perf_counter() - started

    def timed_loglikelihood(self, requests, *args, **kwargs):
        started, cpu_started = time.perf_counter(), time.process_time()
        results = loglikelihood(self, requests, *args, **kwargs)
        probe["score_s"] += time.perf_counter() - started
        probe["score_cpu_s"] += time.process_time() - cpu_started
        probe["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        probe["torch_threads"] = torch.get_num_threads()
        return results

    def timed_generate_until(self, requests, *args, **kwargs):
        started, cpu_started = time.perf_counter(), time.process_time()
        results = generate_until(self, requests, *args, **kwargs)
        probe["score_s"] += time.perf_counter() - started
        probe["score_cpu_s"] += time.process_time() - cpu_started
        return results

    def recorded_tokens(self, requests, *args, **kwargs):
        probe["requests"].extend(
            [list(args_), list(context), list(continuation)] for args_, context, continuation in requests
        )
        return tokens(self, requests, *args, **kwargs)

    def counted_call(self, inputs, *args, **kwargs):
        probe["model_calls"] += 1
        probe["fed_tokens"] += inputs.numel()  # rows x padded length
        return model_call(self, inputs, *args, **kwargs)

    hf.HFLM.__init__, hf.HFLM.loglikelihood = timed_init, timed_loglikelihood
    hf.HFLM._loglikelihood_tokens, hf.HFLM._model_call = recorded_tokens, counted_call
    hf.HFLM.generate_until = timed_generate_until
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    finally:
        probe_file.write_text(json.dumps(probe, ensure_ascii=False), encoding="utf-8")


def run_lm_eval(
    python: str,
    rows: list[dict[str, Any]],
    name: str,
    model_dir: Path,
    work: Path,
    env: dict[str, str],
    device: Device,
    max_gen_toks: int = 0,
) -> dict[str, Any]:
    """lm_eval --model hf over a local multiple-choice task of the exported prompts, or (``max_gen_toks``)
    a generate_until task of their contexts."""
    tasks = work / f"tasks-{name}"
    tasks.mkdir()
    docs = tasks / "docs.jsonl"
    docs.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    task_name = f"rueval_bench_parus_{name}"
    config = {  # JSON is YAML
        "task": task_name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(docs)}},
        "test_split": "test",
        "output_type": "multiple_choice",
        "doc_to_text": "{{context}}",
        "doc_to_choice": "{{choices}}",
        "doc_to_target": "{{label}}",
        "target_delimiter": "",
        "num_fewshot": 0,
        "metric_list": [{"metric": "acc"}],
    }
    if max_gen_toks:
        until = {"until": list(GENERATION_STOP), "max_gen_toks": max_gen_toks, "do_sample": False, "temperature": 0}
        config |= {"output_type": "generate_until", "doc_to_target": "{{choices[label]}}", "generation_kwargs": until}
        config |= {"metric_list": [{"metric": "exact_match"}]}
        del config["doc_to_choice"]
    (tasks / f"{task_name}.yaml").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")
    output = work / f"lm-eval-{name}"
    probe_file = work / f"lm-eval-{name}-probe.json"
    argv = [
        "--model", "hf",
        "--model_args", f"pretrained={model_dir},add_bos_token=True,dtype={device.dtype}",
        "--device", device.name,
        "--batch_size", str(LM_EVAL_BATCH_SIZE),
        "--include_path", str(tasks),
        "--tasks", task_name,
        "--log_samples",
        "--output_path", str(output),
    ]  # fmt: skip
    env = {**env, "HF_DATASETS_CACHE": str(work / "hf-datasets"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    command = [python, __file__, "--lm-eval-wrapper", str(probe_file), "--", *argv]
    wall_s, child_rss_mb = run_child(command, env, work / f"lm-eval-{name}.log")
    probe = json.loads(probe_file.read_text(encoding="utf-8"))
    (samples_file,) = output.rglob(f"samples_{task_name}_*.jsonl")
    samples = sorted((json.loads(line) for line in samples_file.open(encoding="utf-8")), key=lambda s: s["doc_id"])
    return {"wall_s": wall_s, "process_peak_rss_mb": child_rss_mb, "probe": probe, "samples": samples}


def run_child(command: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """Run a process to completion: its wall time and peak RSS (MB)."""
    LOAD_AVERAGES.append(os.getloadavg()[0])
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    LOAD_AVERAGES.append(os.getloadavg()[0])
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        sys.exit(f"{' '.join(command[:3])} ... failed ({process.returncode}); see {log}:\n{log.read_text()[-3000:]}")
    return wall, usage.ru_maxrss / 1024


# -- measures ----------------------------------------------------------------------------------
def trie_nodes(sequences: list[list[int]]) -> tuple[int, int]:
    """Distinct token prefixes of the sequences (trie nodes) and, of those, the leaves (last tokens
    that no sequence continues, which no scorer needs to forward)."""
    root: dict = {}
    nodes = 0
    for tokens in sequences:
        node = root
        for token in tokens:
            if token not in node:
                node[token] = {}
                nodes += 1
            node = node[token]
    leaves, stack = 0, [root]
    while stack:
        node = stack.pop()
        for child in node.values():
            leaves += not child
            stack.append(child)
    return nodes, leaves


def lm_eval_forwarded(requests: list[list]) -> tuple[int, int]:
    """Tokens lm-eval forwards, without padding, and its forward rows. Its Collator (group_by
    "contexts") runs one row per distinct context + continuation minus the last token, so only
    requests whose tokens differ in the last one alone share a row; a row is that whole sequence."""
    groups = {tuple(context + continuation[:-1]) for _, context, continuation in requests}
    return sum(len(g) for g in groups), len(groups)


def compare(setting: dict[str, Any], rueval: dict[str, Any], lm_eval: dict[str, Any]) -> dict[str, Any]:
    """Prompt and token identity, answer agreement and log-likelihood differences of the two tools."""
    rows, samples = setting["rows"], lm_eval["samples"]
    asked = [[r["context"], c] for r in rows for c in r["choices"]]
    assert rueval["requests"] == asked, "rueval's worker asked other requests than the exported prompts"
    assert [(s["doc"]["episode"], s["doc"]["item"]) for s in samples] == [(r["episode"], r["item"]) for r in rows]
    lm_asked = [[a["arg_0"], a["arg_1"]] for s in samples for a in s["arguments"].values()]
    lm_logprobs = [float(logprob) for s in samples for logprob, _ in s["filtered_resps"]]
    lm_tokens = {
        (args[0], args[1]): context + continuation for args, context, continuation in lm_eval["probe"]["requests"]
    }
    picks: dict[str, list[int]] = {"rueval": [], "lm_eval": []}
    start = 0
    for row in rows:
        end = start + len(row["choices"])
        for tool, logprobs in (("rueval", rueval["logprobs"]), ("lm_eval", lm_logprobs)):
            scores = logprobs[start:end]
            picks[tool].append(max(range(len(scores)), key=scores.__getitem__))
        start = end
    labels = [r["label"] for r in rows]
    return {
        "same_prompts": lm_asked == asked,
        "same_tokens": all(lm_tokens[(c, x)] == t for (c, x), t in zip(asked, rueval["tokens"], strict=True)),
        "solver_picks_argmax": rueval["predictions"] == picks["rueval"],  # LMSolver's labels are the choice indices
        "agreement": sum(a == b for a, b in zip(picks["rueval"], picks["lm_eval"], strict=True)) / len(rows),
        "max_abs_logprob_diff": max(abs(a - b) for a, b in zip(rueval["logprobs"], lm_logprobs, strict=True)),
        "accuracy": {
            tool: sum(p == g for p, g in zip(ps, labels, strict=True)) / len(rows) for tool, ps in picks.items()
        },
    }


# -- the run -----------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=350)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--fewshot-items", type=int, default=None, help="items for the 4-shot setting (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each tool per setting; the median is reported")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads for both tools (default: torch's choice)"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda, for both tools")
    parser.add_argument("--dtype", default="float32", help="float32 or bfloat16, for both tools")
    parser.add_argument("--parts", default="loglikelihood,generation", help="loglikelihood, generation or both")
    parser.add_argument("--generation-items", type=int, default=64, help="items of the generation part")
    parser.add_argument("--max-gen-toks", type=int, default=32, help="new tokens per generation at most")
    parser.add_argument("--lm-eval-python", default="/tmp/venv-bench/bin/python")
    parser.add_argument("--name", default="bench_engine", help="results file name, without extension")
    parser.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    parser.add_argument("--worker-rueval", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--worker-generate", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--lm-eval-wrapper", type=Path, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.worker_rueval:
        return rueval_worker(*args.worker_rueval)
    if args.worker_generate:
        return rueval_generation_worker(*args.worker_generate)
    if args.lm_eval_wrapper:
        return lm_eval_wrapper(args.lm_eval_wrapper, rest[1:] if rest[:1] == ["--"] else rest)

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-engine-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        report = run(args, work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    write_report(report, args.name)


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from transformers import AutoConfig

    from rueval.models.backends.tiny import build_tiny_gpt2

    measured = environment(args.lm_eval_python)
    model_dir = build_tiny_gpt2(work / "model", **MODEL)
    config = AutoConfig.from_pretrained(model_dir)
    print(f"model: GPT-2, {config.n_layer} layers, {config.n_embd} wide, vocab {config.vocab_size}")
    items = generate_items(args.items, args.seed)
    write_data(items, work / "data")
    fewshot_items = args.fewshot_items or args.items
    settings = [
        {"name": "0shot", "title": "0-shot", "shots": 0, "episodes": 1, "items": args.items},
        {
            "name": f"{SHOTS}shot",
            "title": f"{SHOTS}-shot x {args.episodes}",
            "shots": SHOTS,
            "episodes": args.episodes,
            "items": fewshot_items,
        },
    ]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    if args.threads:  # read by torch at start-up, in both tools' processes
        env |= {"OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    if "loglikelihood" not in args.parts:
        settings = []
    for setting in settings:
        setting["rows"] = build_prompts(work / "data", setting["shots"], setting["episodes"], setting["items"])
        spec = work / f"rueval-{setting['name']}.json"
        spec.write_text(
            json.dumps(
                {
                    "data_dir": str(work / "data"),
                    "model_dir": str(model_dir),
                    "device": args.device,
                    "dtype": args.dtype,
                    **{k: setting[k] for k in ("shots", "episodes", "items")},
                }
            )
        )
        ruevals, lm_evals = [], []
        for repeat in range(args.repeats):  # interleaved, so that a change in the machine's load hits both tools
            run_name = f"{setting['name']}-{repeat}"
            out = work / f"rueval-{run_name}-out.json"
            print(f"{setting['title']}, run {repeat + 1}/{args.repeats}: rueval ...", flush=True)
            wall, rss = run_child(
                [sys.executable, __file__, "--worker-rueval", str(spec), str(out)], env, work / f"rueval-{run_name}.log"
            )
            rueval = json.loads(out.read_text(encoding="utf-8"))
            rueval.update(wall_s=wall, process_peak_rss_mb=rss)
            ruevals.append(rueval)
            print(f"  rueval {rueval['score_s']:.1f} s scoring, {wall:.1f} s in all; lm-eval ...", flush=True)
            device = Device(args.device, args.dtype)
            lm_eval = run_lm_eval(args.lm_eval_python, setting["rows"], run_name, model_dir, work, env, device)
            lm_evals.append(lm_eval)
            print(
                f"  lm-eval {lm_eval['probe']['score_s']:.1f} s scoring, {lm_eval['wall_s']:.1f} s in all", flush=True
            )
        setting["result"] = summarize(
            setting,
            median_run(ruevals, lambda r: r["score_s"]),
            median_run(lm_evals, lambda r: r["probe"]["score_s"]),
        )
        setting["result"]["scoring_s_per_run"] = {
            "rueval": [r["score_s"] for r in ruevals],
            "lm_eval": [r["probe"]["score_s"] for r in lm_evals],
        }
    generation = run_generation(args, work, model_dir, env) if "generation" in args.parts else []
    if environment(args.lm_eval_python)["rueval_sources"] != measured["rueval_sources"]:
        print("warning: rueval's engine sources changed during the run", file=sys.stderr)
        measured["rueval_sources_changed_during_run"] = True
    return {
        "environment": measured,
        "model": {**MODEL, "vocab_size": config.vocab_size, "n_positions": config.n_positions},
        "load_averages": LOAD_AVERAGES,
        "items": args.items,
        "seed": args.seed,
        "threads": args.threads,
        "device": args.device,
        "dtype": args.dtype,
        "repeats": args.repeats,
        "settings": [{k: s[k] for k in ("title", "shots", "episodes", "items")} | s["result"] for s in settings],
        "generation": generation,
    }


def run_generation(args: argparse.Namespace, work: Path, model_dir: Path, env: dict[str, str]) -> list[dict]:
    """The generation part: greedy texts after the PARus prompts of ``--generation-items`` items (0-shot, and
    4-shot x episodes, whose demonstrations an episode's prompts share), by rueval batched and one prompt at
    a time and by lm-eval's generate_until, each in a fresh process."""
    device = Device(args.device, args.dtype)
    results = []
    for shots, episodes in ((0, 1), (SHOTS, args.episodes)):
        rows = build_prompts(work / "data", shots, episodes, args.generation_items)
        name = f"generate-{shots}shot"
        timed = {}
        for batch_size in ("auto", 1):
            spec, out = work / f"{name}-{batch_size}.json", work / f"{name}-{batch_size}-out.json"
            settings = {"max_gen_toks": args.max_gen_toks, "batch_size": batch_size, "device": args.device}
            settings |= {"model_dir": str(model_dir), "dtype": args.dtype, "prompts": [r["context"] for r in rows]}
            spec.write_text(json.dumps(settings, ensure_ascii=False), encoding="utf-8")
            print(f"generation, {shots}-shot x {episodes}: rueval batch size {batch_size} ...", flush=True)
            command = [sys.executable, __file__, "--worker-generate", str(spec), str(out)]
            wall, _ = run_child(command, env, work / f"{name}-{batch_size}.log")
            timed[batch_size] = json.loads(out.read_text(encoding="utf-8")) | {"wall_s": wall}
        print(f"generation, {shots}-shot x {episodes}: lm-eval ...", flush=True)
        lm_eval = run_lm_eval(args.lm_eval_python, rows, name, model_dir, work, env, device, args.max_gen_toks)
        batched, one, lm_texts = timed["auto"], timed[1], [s["resps"][0][0] for s in lm_eval["samples"]]
        reference = one["texts"]
        results.append(
            {
                "title": f"{shots}-shot x {episodes}",
                "prompts": len(rows),
                "max_gen_toks": args.max_gen_toks,
                "batched_mode": batched["mode"],
                "seconds": {
                    "rueval_batched": batched["generate_s"],
                    "rueval_one_at_a_time": one["generate_s"],
                    "lm_eval": lm_eval["probe"]["score_s"],
                },
                "speedup_over_one_at_a_time": one["generate_s"] / batched["generate_s"],
                "speedup_over_lm_eval": lm_eval["probe"]["score_s"] / batched["generate_s"],
                "equal_to_one_at_a_time": {
                    "rueval_batched": sum(a == b for a, b in zip(batched["texts"], reference, strict=True)),
                    "lm_eval": sum(a == b for a, b in zip(lm_texts, reference, strict=True)),
                },
            }
        )
    return results


def median_run(runs: list[dict[str, Any]], seconds: Any) -> dict[str, Any]:
    """The run with the median scoring time (the lower middle one for an even count)."""
    return sorted(runs, key=seconds)[(len(runs) - 1) // 2]


def summarize(setting: dict[str, Any], rueval: dict[str, Any], lm_eval: dict[str, Any]) -> dict[str, Any]:
    n = len(setting["rows"])
    unique, leaves = trie_nodes(rueval["tokens"])
    probe = lm_eval["probe"]
    lm_forwarded, lm_rows = lm_eval_forwarded(probe["requests"])
    stats = rueval["stats"]
    return {
        "scored_items": n,
        "requests": sum(len(r["choices"]) for r in setting["rows"]),
        "unique_tokens": unique,
        "leaf_tokens": leaves,
        "rueval": {
            "load_s": rueval["load_s"],
            "score_s": rueval["score_s"],
            "score_cpu_s": rueval["score_cpu_s"],
            "items_per_s": n / rueval["score_s"],
            "predict_s": rueval["predict_s"],
            "process_wall_s": rueval["wall_s"],
            "forwarded_tokens": stats["forwarded_tokens"],
            "padded_tokens": stats["padded_tokens"],
            "forward_calls": stats["forward_calls"],
            "forwarded_per_unique": stats["forwarded_tokens"] / unique,
            "fed_per_unique": (stats["forwarded_tokens"] + stats["padded_tokens"]) / unique,
            "peak_rss_mb": rueval["peak_rss_mb"],
            "torch_threads": rueval["torch_threads"],
            "process_peak_rss_mb": rueval["process_peak_rss_mb"],
            "batch": {"max_rows": rueval["max_rows"], "max_batch_tokens": rueval["max_batch_tokens"]},
        },
        "lm_eval": {
            "load_s": probe["load_s"],
            "score_s": probe["score_s"],
            "score_cpu_s": probe["score_cpu_s"],
            "items_per_s": n / probe["score_s"],
            "process_wall_s": lm_eval["wall_s"],
            "forwarded_tokens": lm_forwarded,
            "forward_rows": lm_rows,
            "padded_tokens": probe["fed_tokens"] - lm_forwarded,
            "forward_calls": probe["model_calls"],
            "forwarded_per_unique": lm_forwarded / unique,
            "fed_per_unique": probe["fed_tokens"] / unique,
            "peak_rss_mb": probe["peak_rss_mb"],
            "torch_threads": probe["torch_threads"],
            "process_peak_rss_mb": lm_eval["process_peak_rss_mb"],
            "batch": {"batch_size": LM_EVAL_BATCH_SIZE},
        },
        "speedup": probe["score_s"] / rueval["score_s"],
        "speedup_cpu": probe["score_cpu_s"] / rueval["score_cpu_s"],
        "speedup_end_to_end": lm_eval["wall_s"] / rueval["wall_s"],
        **compare(setting, rueval, lm_eval),
    }


def environment(lm_eval_python: str) -> dict[str, Any]:
    import torch
    import transformers

    import rueval

    source = Path(rueval.__file__).parent

    lm_eval_version = subprocess.run(
        [lm_eval_python, "-c", "import importlib.metadata as m; print(m.version('lm_eval'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "transformers": transformers.__version__,
        "lm_eval": lm_eval_version,
        # the engine changes under active work: which version of it was measured
        "rueval_sources": {
            name: hashlib.sha256((source / name).read_bytes()).hexdigest()[:12] for name in ENGINE_SOURCES
        },
    }


def write_report(report: dict[str, Any], name: str) -> None:
    """Print the table; write RESULTS/<name>.json (everything) and RESULTS/<name>.md (the table)."""
    from rich.console import Console
    from rich.table import Table

    device = f"{report['device']} {report['dtype']}"
    table = Table(title=f"rueval vs lm-evaluation-harness: PARus, random GPT-2 (6 x 512), {device}")
    header = ("setting", "items", "rueval items/s", "lm-eval items/s", "speedup (CPU time)", "rueval fwd/unique",
              "lm-eval fwd/unique", "rueval RSS MB", "lm-eval RSS MB", "agreement", "max |Δ logprob|")  # fmt: skip
    for column in header:
        table.add_column(column, justify="left" if column == "setting" else "right")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in report["settings"]:
        ru, lm = s["rueval"], s["lm_eval"]
        cells = (
            s["title"], str(s["scored_items"]), f"{ru['items_per_s']:.1f}", f"{lm['items_per_s']:.1f}",
            f"{s['speedup']:.2f}x ({s['speedup_cpu']:.2f}x)",
            f"{ru['forwarded_per_unique']:.3f} ({ru['fed_per_unique']:.2f})",
            f"{lm['forwarded_per_unique']:.2f} ({lm['fed_per_unique']:.2f})",
            f"{ru['peak_rss_mb']:.0f}", f"{lm['peak_rss_mb']:.0f}", f"{s['agreement']:.1%}",
            f"{s['max_abs_logprob_diff']:.1e}",
        )  # fmt: skip
        table.add_row(*cells)
        lines.append("| " + " | ".join(cells) + " |")
    if report["settings"]:
        Console(width=200).print(table)
    else:  # the generation part alone
        lines = []
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    model, env = report["model"], report["environment"]
    threads = {s[tool]["torch_threads"] for s in report["settings"] for tool in ("rueval", "lm_eval")}
    loads = report["load_averages"]
    notes = [
        (
            f"Model: random GPT-2, {model['n_layer']} layers, {model['n_embd']} wide, {model['n_head']} heads, "
            f"vocab {model['vocab_size']}, seed {model['seed']}, {report['dtype']}, {report['device']} "
            f"({env['cpus']} cores, "
            f"torch {env['torch']}, transformers {env['transformers']}, lm-eval {env['lm_eval']}); torch threads: "
            f"{', '.join(map(str, sorted(threads)))}; the machine's 1-minute load average around the timed processes: "
            f"{min(loads):.1f}-{max(loads):.1f}."
        ),
        (
            f"items/s: scored items per second of scoring wall time (tokenisation included, model load excluded), "
            f"each tool's median of {report['repeats']} runs, the tools taking turns; rueval batch size auto, "
            "lm-eval 32. Speedup: lm-eval's scoring time over rueval's; in brackets, the same for process CPU time. "
            "rueval runs GPT-2's tanh GELU as torch's fused kernel; lm-eval runs the model as transformers builds it."
        ),
        (
            "fwd/unique: forwarded tokens per unique token (distinct token prefixes, start token included); "
            "in brackets with padding. Below 1: a sequence's last token, after which nothing is scored, need not be "
            "forwarded, and rueval does not forward it."
        ),
        (
            "RSS: the process's peak resident memory right after scoring. Agreement: the same answer picked, from each "
            "tool's log-likelihoods; both encoded the same tokens for every request: "
            + ("yes" if all(s["same_tokens"] and s["same_prompts"] for s in report["settings"]) else "NO")
            + "."
        ),
    ]
    lines += generation_lines(report)
    markdown = "\n".join([f"# {name}", "", *lines, "", *(f"- {n}" for n in notes), ""])
    (RESULTS / f"{name}.md").write_text(markdown, encoding="utf-8")
    print(f"wrote {RESULTS / name}.json and .md")


def generation_lines(report: dict[str, Any]) -> list[str]:
    """The generation part's table (Markdown), printed too."""
    if not report["generation"]:
        return []
    header = ("generation", "prompts", "new tokens", "rueval batched s", "one at a time s", "lm-eval s",
              "speedup (one at a time)", "speedup (lm-eval)", "batched = one at a time",
              "lm-eval = one at a time")  # fmt: skip
    lines = ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for g in report["generation"]:
        seconds, equal = g["seconds"], g["equal_to_one_at_a_time"]
        cells = (
            f"{g['title']} ({g['batched_mode']})", str(g["prompts"]), str(g["max_gen_toks"]),
            f"{seconds['rueval_batched']:.1f}", f"{seconds['rueval_one_at_a_time']:.1f}", f"{seconds['lm_eval']:.1f}",
            f"{g['speedup_over_one_at_a_time']:.2f}x", f"{g['speedup_over_lm_eval']:.2f}x",
            f"{equal['rueval_batched']}/{g['prompts']}", f"{equal['lm_eval']}/{g['prompts']}",
        )  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))
    return lines


if __name__ == "__main__":
    main()
