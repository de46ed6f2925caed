"""The sweep's cases of numbers from outside: impossible log-probabilities and answers for another
model from the fault-injection server, cache rows, a model's NaN weights, API models."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

from hostile_cases.common import (
    cache_file,
    case,
    nothing_kept,
    said_in_output,
    scores,
    served_run,
)
from hostile_cases.harness import ERROR, OK, CaseDir, python, rueval

IMPOSSIBLE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "0.5": 0.5, "'abc'": "abc", "[]": []}
for label, value in IMPOSSIBLE.items():

    @case("numbers", f"openai: token_logprobs {label}", ERROR, "the server at", "for a token of the request")
    def _(c: CaseDir, value=value) -> list[str]:
        argv = served_run(c, c / "out")
        c.shared.server(fault_logprob=value)
        nothing_kept(c, c / "out")
        return argv


@case("numbers", "openai-chat: prompt_logprobs nan", ERROR, "the server at", "log-probability of nan")
def _(c: CaseDir) -> list[str]:
    argv = served_run(c, c / "out", "--chat-scoring", "logprobs", model="openai-chat:tiny-gpt2")
    c.shared.server(fault_logprob=math.nan)
    nothing_kept(c, c / "out")
    return argv


@case("numbers", "openai: an answer for another model", ERROR, "answered for the model 'other'")
def _(c: CaseDir) -> list[str]:
    argv = served_run(c, c / "out")
    c.shared.server(fault_model="other")
    nothing_kept(c, c / "out")
    return argv


@case("numbers", "openai: generation (multiq) answered for another model", ERROR, "answered for the model 'other'")
def _(c: CaseDir) -> list[str]:
    argv = served_run(c, c / "out", "--gen_kwargs", "max_gen_toks=4", task="multiq")
    c.shared.server(fault_model="other")
    nothing_kept(c, c / "out")
    return argv


@case("numbers", "openai: a server without logprobs", ERROR, "logprobs")
def _(c: CaseDir) -> list[str]:
    argv = served_run(c, c / "out")
    c.shared.server(logprobs_supported=False)
    nothing_kept(c, c / "out")
    return argv


@case("numbers", "openai: NaNs once, then an honest server: the honest scores", OK)
def _(c: CaseDir) -> list[str]:
    argv = served_run(c, c / "out")
    c.shared.server(fault_logprob=math.nan)
    from hostile_cases.harness import run_command

    first = run_command(argv, c.path, {}, 300)
    assert first.returncode == 2, first.output
    c.shared.server()
    fresh = c / "fresh"
    run_command(served_run(c, fresh), c.path, {"RUEVAL_CACHE_DIR": str(c / "cache2")}, 300)
    c.check(lambda o: None if scores(c / "out") == scores(fresh) else f"{scores(c / 'out')} != {scores(fresh)}")
    return argv


def fill_cache_then_damage(c: CaseDir, damage: Callable[[Any], Any]) -> list[str]:
    """An honest served run whose cached rows are then changed by ``damage``; the command runs it again."""
    argv = served_run(c, c / "out")
    c.shared.server()
    c.rueval(*argv[3:])
    honest = scores(c / "out")
    shutil.rmtree(c / "out")
    with sqlite3.connect(cache_file(c)) as db:
        rows = db.execute("SELECT key, value FROM results").fetchall()
        db.executemany("UPDATE results SET value = ? WHERE key = ?", [(damage(json.loads(v)), k) for k, v in rows])
    c.check(lambda o: None if scores(c / "out") == honest else f"{scores(c / 'out')} != the honest {honest}")
    said_in_output(c, "computing them again")
    return argv


for label, damage in {
    "a string logprob": lambda v: json.dumps({**v, "logprob": "abc"}),
    "a NaN logprob": lambda v: json.dumps({**v, "logprob": math.nan}),
    "a positive logprob": lambda v: json.dumps({**v, "logprob": 3.0}),
    "no JSON": lambda v: "{not json",
    "n_tokens 0": lambda v: json.dumps({**v, "n_tokens": 0}),
    "a list": lambda v: json.dumps([1, 2]),
}.items():

    @case("numbers", f"a cache row with {label} is computed again and said so", OK)
    def _(c: CaseDir, damage=damage) -> list[str]:
        argv = fill_cache_then_damage(c, damage)
        if "not json" in damage({"logprob": 0}):
            c.checks.pop()  # a row that is no JSON counts as missing: computed again, nothing to say
        return argv


@case("numbers", "openai: a server answering 503 for ever, --timeout 6", ERROR, "the server at", timeout=60)
def _(c: CaseDir) -> list[str]:
    argv = served_run(c, c / "out", "--timeout", "6")
    c.shared.server(fail_next=10**6)
    return argv


@case("numbers", "openai: a server dropping every connection, --timeout 6", ERROR, "server at", timeout=60)
def _(c: CaseDir) -> list[str]:
    argv = served_run(c, c / "out", "--timeout", "6")
    c.shared.server(drop_next=10**6)
    return argv


@case("numbers", "openai: nothing listens at --base-url", ERROR, "127.0.0.1:9", timeout=60)
def _(c: CaseDir) -> list[str]:
    c.shared.server()
    return rueval("run", "-m", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "-t", "parus", "--timeout", "5",
                  "-o", c / "out")  # fmt: skip


@case("numbers", "hf: weights holding NaN", ERROR, "nan")
def _(c: CaseDir) -> list[str]:
    target = c / "nan-model"
    shutil.copytree(c.shared.tiny(), target)
    from hostile_cases.harness import run_command

    code = f"""
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({str(target)!r})
with torch.no_grad():
    for p in model.parameters():
        p.fill_(float('nan'))
model.save_pretrained({str(target)!r})
"""
    assert run_command([sys.executable, "-c", code], c.path, {}, 300).returncode == 0
    c.nothing_written(c / "out" / "results.json")
    return rueval("run", "-m", f"hf:{target}", "-t", "parus", "--limit", "4", "-o", c / "out")


IMPOSSIBLE_MODEL = """
from rueval.models.base import Capabilities, LanguageModel, LoglikelihoodResult

class Impossible(LanguageModel):
    identity = "test:impossible"
    capabilities = Capabilities(loglikelihood=True, generation=True)

    def loglikelihood(self, requests, on_done=None):
        return {answer}

    def generate(self, requests, on_done=None):
        return ["" for _ in requests]
"""
for label, answer in {
    "nan": "[LoglikelihoodResult(math.nan, 1, False) for _ in requests]",
    "n_tokens 0": "[LoglikelihoodResult(-1.0, 0, False) for _ in requests]",
    "fewer results than requests": "[LoglikelihoodResult(-1.0, 1, False) for _ in requests][:-1]",
    "floats, not results": "[-1.0 for _ in requests]",
}.items():

    @case("numbers", f"API: a LanguageModel answering {label}", ERROR, "test:impossible")
    def _(c: CaseDir, answer=answer) -> list[str]:
        return python(IMPOSSIBLE_MODEL.format(answer=answer) + "\nrueval.evaluate(Impossible(), tasks='parus')")
