"""`rueval run` commands and generations in one process of vLLM's own virtualenv, run by
tests/models/test_vllm_in_process.py as a subprocess: `-m vllm:` starts its engine once per process for a
spec, so the runs a test compares share one engine (each `rueval` command would start its own). Usage:
python vllm_runs.py COMMANDS.json, a list of argument lists for `rueval`, or of
``{"model": "vllm:FOLDER", "requests": IN.json, "texts": OUT.json}``: generation requests
(generation_cases.save_requests) and the texts `vllm:` gives them, or of
``{"model": "vllm:FOLDER", "scored": IN.json, "out": OUT.json}``: IN's ``texts`` and ``pairs`` (context,
continuation), and OUT's each text's token log-probabilities and each pair's [log-likelihood, tokens]. Stops
at the first run that fails, with its output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from generation_cases import load_requests
from typer.testing import CliRunner

from rueval.cli import app, end_process
from rueval.models.backends.vllm import open_model
from rueval.models.base import Loglikelihood, TokenLogprobs
from rueval.models.factory import ModelOptions, ModelSpec


def main() -> None:
    for args in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):
        if isinstance(args, dict) and "scored" in args:
            score(args["model"], Path(args["scored"]), Path(args["out"]))
            continue
        if isinstance(args, dict):
            model = open_model(ModelSpec.parse(args["model"]), ModelOptions())
            texts = model.generate(load_requests(Path(args["requests"])))
            Path(args["texts"]).write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
            continue
        result = CliRunner().invoke(app, args)
        if result.exit_code != 0:
            sys.exit(f"rueval {' '.join(args)} failed ({result.exit_code}):\n{result.output}\n{result.exception!r}")


def score(spec: str, asked: Path, out: Path) -> None:
    model = open_model(ModelSpec.parse(spec), ModelOptions())
    given = json.loads(asked.read_text(encoding="utf-8"))
    texts = model.token_logprobs([TokenLogprobs(text) for text in given["texts"]])
    pairs = model.loglikelihood([Loglikelihood(*pair) for pair in given["pairs"]])
    found = {"texts": [list(r.logprobs) for r in texts], "pairs": [[r.logprob, r.n_tokens] for r in pairs]}
    out.write_text(json.dumps(found), encoding="utf-8")


if __name__ == "__main__":  # vLLM starts its engine in spawned processes, which import this module again
    # ended as the command line ends (rueval.cli.main): past the interpreter's teardown, in which vLLM's engine
    # threads now and then abort the process ("terminate called without an active exception") after its work
    try:
        main()
    except SystemExit as stop:
        end_process(stop.code)
    end_process(0)
