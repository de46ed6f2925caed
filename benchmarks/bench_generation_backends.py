"""Greedy generation on the same requests across backends: `hf:` one prompt at a time (the reference), `hf:`
batched, `-m vllm:` in process and `-m openai:` against a real vLLM server, all in float32 on the same
weights.

    python benchmarks/bench_generation_backends.py [--prompts 100] [--vllm-python .venv-vllm/bin/python]

Not part of the test suite (tests/models/test_vllm_*.py run the same checks on fewer prompts). One run:
1. builds the tests' tiny GPT-2 (2 layers, 64 wide, a byte-level BPE of 2,000 tokens) and trains it briefly on
   the bundled samples (random tiny models tie often; a trained one rarely, and its texts end at its
   end-of-text token);
2. takes ``--prompts`` prompts (the first half of bundled sample texts) and builds each one's cut cases
   (tests/models/generation_cases.py: the whole budget of 24 tokens, budgets of 1 and 3, a stop that never
   occurs, the end-of-text token's text, a stop from the text's middle, one spanning two tokens, one that
   begins in the prompt);
3. generates every request with each backend (vLLM's in process through tests/models/vllm_runs.py in
   vLLM's virtualenv, its server as tests/models/vllm_server.py starts it);
4. counts, against `hf:` one at a time, the texts that are equal, that differ at a tie (the top two logits
   at the first divergent step within 1e-4: rueval.models.backends.greedy_ties) and that differ really,
   and the requests whose text is not their stop-free text cut at their first stop;
5. writes benchmarks/results/bench_generation_backends.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / "tests" / "models"), str(REPO / "tests")]
from generation_cases import Cases, cut_problems, prompts, save_requests  # noqa: E402  (the tests' cases)
from lm_eval_tasks.differential_model import train_briefly  # noqa: E402
from results_file import write_results  # noqa: E402
from vllm_server import VLLMServer, vllm_python  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--vllm-python", default=str(vllm_python()))
    parser.add_argument("--name", default="bench_generation_backends")
    args = parser.parse_args()
    os.environ["RUEVAL_VLLM_PYTHON"] = args.vllm_python
    from rueval.models.backends.hf import HFCausalLM
    from rueval.models.backends.openai import OpenAICompletionsModel
    from rueval.models.backends.tiny import build_tiny_gpt2, sample_texts

    work = Path(tempfile.mkdtemp(prefix="bench-generation-"))
    model_dir = train_briefly(build_tiny_gpt2(work / "random"), sample_texts(), work / "trained")
    started = time.perf_counter()
    cases = Cases.of(HFCausalLM(str(model_dir), batch_size=1), prompts(args.prompts))
    timings = {"hf one at a time": time.perf_counter() - started}
    print(f"{len(cases.requests)} requests on {args.prompts} prompts", flush=True)
    texts: dict[str, list[str]] = {}

    started = time.perf_counter()
    batched = HFCausalLM(str(model_dir))
    texts["hf batched"] = batched.generate(cases.requests)
    timings["hf batched"] = time.perf_counter() - started

    requests = save_requests(cases.requests, work / "requests.json")
    commands = work / "commands.json"
    entry = {"model": f"vllm:{model_dir}", "requests": str(requests), "texts": str(work / "vllm.json")}
    commands.write_text(json.dumps([entry]), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "VLLM_CPU_KVCACHE_SPACE": "1"}
    started = time.perf_counter()
    runner = [args.vllm_python, str(REPO / "tests" / "models" / "vllm_runs.py"), str(commands)]
    subprocess.run(runner, env=env, check=True)
    timings["vllm in process (engine start included)"] = time.perf_counter() - started
    texts["vllm in process"] = json.loads((work / "vllm.json").read_text(encoding="utf-8"))

    with VLLMServer(model_dir, work / "server.log", name="trained") as server:
        started = time.perf_counter()
        texts["openai: on a vLLM server"] = OpenAICompletionsModel(server.name, server.url).generate(cases.requests)
        timings["openai: on a vLLM server"] = time.perf_counter() - started

    rows = [
        {
            "backend": "hf one at a time",
            "equal": len(cases.requests),
            "ties": 0,
            "real": 0,
            "cut_problems": len(cut_problems(cases.requests, cases.texts)),
        }
    ]
    for backend, found in texts.items():
        agreement = cases.agreement(found)
        problems = cut_problems(cases.requests, found)
        rows.append(
            {
                "backend": backend,
                "equal": agreement.equal,
                "ties": agreement.ties,
                "real": len(agreement.real),
                "real_differences": [
                    {"request": repr(r), "gap": gap, "hf": a, "other": b} for r, gap, a, b in agreement.real
                ],
                "cut_problems": len(problems),
                "cut_problem_examples": problems[:5],
            }
        )
    for row in rows:
        row["seconds"] = round(next((s for name, s in timings.items() if name.startswith(row["backend"])), 0.0), 1)
        print(f"{row['backend']}: {row['equal']} equal, {row['ties']} ties, {row['real']} real, "
              f"{row['cut_problems']} cut problems, {row['seconds']} s")  # fmt: skip
    settings = {"prompts": args.prompts, "requests": len(cases.requests), "ended_early": cases.ended_early()}
    write_results(HERE / "results" / f"{args.name}.json", rows, **settings)
    header = "| backend | equal | tie differences | real differences | not cut at their first stop | seconds |"
    lines = [header, "|---|---:|---:|---:|---:|---:|"]
    lines += [
        f"| {r['backend']} | {r['equal']} | {r['ties']} | {r['real']} | {r['cut_problems']} | {r['seconds']} |"
        for r in rows
    ]
    (HERE / "results" / f"{args.name}.md").write_text("\n".join([f"# {args.name}", "", *lines, ""]), encoding="utf-8")


if __name__ == "__main__":
    main()
