"""The `openai-chat:` backend when its server lacks what it needs: fault injection (tests/models/
fault_server.py serving the tiny GPT-2 with a chat template, its prompt logprobs switched off as
llama.cpp and hosted APIs leave them out): answers generated and matched to options. How it scores
and generates against a real vLLM server is tested in tests/models/test_vllm_served.py."""

from __future__ import annotations

import json
import logging

import pytest
from fault_server import FaultServer
from support import read_samples

from rueval.core.errors import RuevalError
from rueval.data import load_task_data, open_data
from rueval.models.backends.openai_chat import payload_messages
from rueval.solvers.lm import match_option
from rueval.tasks import get_task
from rueval.tasks.prompts import get_prompt
from rueval.tasks.prompts.base import Choice


@pytest.fixture(scope="module")
def running_server(chat_model):
    with FaultServer(chat_model) as server:
        yield server


@pytest.fixture
def server(running_server):
    running_server.chat_logprobs_supported = True
    return running_server


def run(cli, out, model, *flags):
    result = cli("run", "-m", model, "-t", "parus,terra", "--limit", "4", "--shots", "1", "-o", out, *flags)
    assert result.exit_code == 0, result.output
    return json.loads((out / "results.json").read_text(encoding="utf-8")), result.output


def test_without_prompt_logprobs_answers_are_generated_and_matched(cli, server, tmp_path, caplog):
    server.chat_logprobs_supported = False
    with caplog.at_level(logging.WARNING):
        results, _ = run(cli, tmp_path / "out", "openai-chat:tiny-gpt2", "--base-url", server.url, "--log-samples")
    assert "generate-match" in caplog.text and "no prompt logprobs" in caplog.text
    assert caplog.text.count("generate-match") == 1  # decided once for the run
    for task in ("parus", "terra"):
        assert results["tasks"][task]["protocol"] == "generate-match"
        assert "metrics_norm" not in results["tasks"][task]["shots"]["1"]  # no per-byte reading of a matched answer
        lines = [line for line in read_samples(tmp_path / "out", task) if line["k"] == 1]
        assert all(len(line["arguments"]) == 1 for line in lines)  # one generation per question, not one per option
        data = load_task_data(open_data(None), get_task(task), None, 4)
        questions = [get_prompt(get_task(task)).questions(example)[0] for example in data.eval.examples]
        named = [match_option(q.choices, line["resps"][0][0]) for q, line in zip(questions, lines, strict=True)]
        assert results["tasks"][task]["unmatched_answers"] == named.count(None)
        for question, choice, line in zip(questions, named, lines, strict=True):
            if choice is not None:
                assert line["prediction"] == choice.label
            else:  # scored as wrong
                assert line["prediction"] != next(
                    c.label for c in question.choices if c.continuation == question.target
                )


def test_a_forced_scoring_that_cannot_work_is_one_error(cli, server, tmp_path):
    server.chat_logprobs_supported = False
    args = ("run", "-m", "openai-chat:tiny-gpt2", "--base-url", server.url, "-t", "parus", "--limit", "2")
    result = cli(*args, "--chat-scoring", "logprobs", "-o", tmp_path / "forced")
    assert result.exit_code == 2 and "returned no prompt_logprobs" in result.output
    assert "Traceback" not in result.output
    assert next(line for line in result.output.splitlines() if "prompt_logprobs" in line).startswith("error: ")


def test_an_option_is_matched_after_normalisation_and_longest_first():
    choices = (Choice(" Да", 1), Choice(" Нет", 0), Choice(" Да, конечно", 2))
    assert match_option(choices, "да") == choices[0]
    assert match_option(choices, "  «Нет».\n") == choices[1]
    assert match_option(choices, "Да, конечно! Потому что") == choices[2]
    assert match_option(choices, "Да потому что") == choices[0]
    assert match_option(choices, "Дание") is None and match_option(choices, "") is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "needs --base-url"),
        (["--base-url", "http://127.0.0.1:9/v1", "--scoring", "ppl"], "--scoring ppl"),
    ],
)
def test_bad_chat_options_are_one_error(cli, tmp_path, flags, message):
    result = cli("run", "-m", "openai-chat:tiny-gpt2", "-t", "parus", "--limit", "2", "-o", tmp_path / "out", *flags)
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


def test_chat_scoring_for_another_backend_is_one_error(cli, tmp_path):
    args = ("run", "-m", "openai:tiny-gpt2", "--base-url", "http://127.0.0.1:9/v1", "-t", "parus", "-o", tmp_path)
    result = cli(*args, "--chat-scoring", "generate")
    assert result.exit_code == 2 and "--chat-scoring is for openai-chat: models" in result.output


def test_a_text_prompt_is_refused_by_the_chat_backend():
    with pytest.raises(RuevalError, match="must be chat messages"):
        payload_messages("Кошка сидит на")
