"""`-m vllm:` in vLLM's own virtualenv, run by tests/models/test_real_vllm.py as a subprocess: one engine for
the runs a test compares (the command line would start one per run). Writes OUT/<run>/ and OUT/identity.txt."""

from __future__ import annotations

import sys
from pathlib import Path

from rueval.api import evaluate
from rueval.models.vllm import VLLMModel


def main() -> None:
    model_dir, out = sys.argv[1], Path(sys.argv[2])
    choice_tasks = sys.argv[3].split(",")
    model = VLLMModel(model_dir)
    (out / "identity.txt").write_text(model.identity, encoding="utf-8")
    for scoring in ("loglik", "ppl"):
        evaluate(model, choice_tasks, shots=[0, 2], limit=8, scoring=scoring, log_samples=True, out=out / scoring)
    greedy = "temperature=0,max_gen_toks=120"
    evaluate(model, ["chegeka", "multiq"], shots=[1], limit=3, gen_kwargs=greedy, log_samples=True, out=out / "greedy")
    evaluate(model, ["chegeka"], limit=3, log_samples=True, out=out / "sampled")


if __name__ == "__main__":  # vLLM starts its engine in spawned processes, which import this module again
    main()
