"""The `openai-chat:` backend against a real chat server (tests/openai_server.py) that serves the
tiny GPT-2, given a chat template here, on 127.0.0.1: options by prompt logprobs equal `hf:` with
--apply-chat-template on the same weights; without them, generated answers matched to options."""

from __future__ import annotations

import json
import logging

import pytest
from openai_server import CompletionServer
from support import SYSTEM, read_jsonl
from transformers import AutoTokenizer

from rueval.data import load_task_data, open_data
from rueval.errors import RuevalError
from rueval.models.base import Generation, Loglikelihood, Message
from rueval.models.openai_chat import OpenAIChatModel, payload_messages
from rueval.solvers.lm import match_option
from rueval.tasks import get_task
from rueval.tasks.prompts import get_prompt
from rueval.tasks.prompts.base import Choice


@pytest.fixture(scope="module")
def running_server(chat_model):
    with CompletionServer(chat_model) as server:
        yield server


@pytest.fixture
def server(running_server):
    running_server.chat_logprobs_supported = True
    return running_server


def run(cli, out, model, *flags):
    result = cli("run", "-m", model, "-t", "parus,terra", "--limit", "4", "--shots", "1", "-o", out, *flags)
    assert result.exit_code == 0, result.output
    return json.loads((out / "results.json").read_text(encoding="utf-8")), result.output


def test_options_by_prompt_logprobs_equal_hf_with_the_chat_template(cli, server, chat_model, tmp_path):
    chat_flags = ("--system-instruction", SYSTEM, "--fewshot-as-multiturn", "--log-samples")
    served, _ = run(cli, tmp_path / "chat", "openai-chat:tiny-gpt2", "--base-url", server.url, *chat_flags)
    local, _ = run(cli, tmp_path / "hf", f"hf:{chat_model}", "--apply-chat-template", *chat_flags)
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    for task in ("parus", "terra"):
        assert served["tasks"][task]["protocol"] == "loglik-chat-logprobs"
        assert local["tasks"][task]["protocol"] == "loglik-chat-template"
        assert served["tasks"][task]["score"] == local["tasks"][task]["score"]
        for sent, rendered in zip(
            read_jsonl(tmp_path / "chat" / "samples" / f"{task}.jsonl"),
            read_jsonl(tmp_path / "hf" / "samples" / f"{task}.jsonl"),
            strict=True,
        ):
            assert sent["prediction"] == rendered["prediction"]
            for message_args, text_args in zip(sent["arguments"].values(), rendered["arguments"].values(), strict=True):
                messages = json.loads(message_args["arg_0"])  # the messages sent, as lm-eval logs them
                assert [m["role"] for m in messages][:2] == ["system", "user"]  # the demonstration as a user turn
                assert "assistant" in [m["role"] for m in messages]  # ... and its answer as an assistant turn
                # the server's rendering of the messages is the prompt hf: scores after (BOS aside)
                text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
                assert text == tokenizer.bos_token + text_args["arg_0"]
                assert message_args["arg_1"] == text_args["arg_1"]
            scores = [float(resp[0][0]) for resp in sent["resps"]]
            assert scores == pytest.approx([float(resp[0][0]) for resp in rendered["resps"]], abs=1e-4)


def test_without_prompt_logprobs_answers_are_generated_and_matched(cli, server, tmp_path, caplog):
    server.chat_logprobs_supported = False
    with caplog.at_level(logging.WARNING):
        results, _ = run(cli, tmp_path / "out", "openai-chat:tiny-gpt2", "--base-url", server.url, "--log-samples")
    assert "generate-match" in caplog.text and "no prompt logprobs" in caplog.text
    assert caplog.text.count("generate-match") == 1  # decided once for the run
    for task in ("parus", "terra"):
        assert results["tasks"][task]["protocol"] == "generate-match"
        assert "metrics_norm" not in results["tasks"][task]["shots"]["1"]  # no per-byte reading of a matched answer
        lines = [line for line in read_jsonl(tmp_path / "out" / "samples" / f"{task}.jsonl") if line["k"] == 1]
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


def test_the_scoring_can_be_chosen_and_a_forced_one_that_cannot_work_is_one_error(cli, server, tmp_path):
    results, _ = run(
        cli, tmp_path / "gen", "openai-chat:tiny-gpt2", "--base-url", server.url, "--chat-scoring", "generate"
    )
    assert results["tasks"]["parus"]["protocol"] == "generate-match"
    server.chat_logprobs_supported = False
    args = ("run", "-m", "openai-chat:tiny-gpt2", "--base-url", server.url, "-t", "parus", "--limit", "2")
    result = cli(*args, "--chat-scoring", "logprobs", "-o", tmp_path / "forced")
    assert result.exit_code == 2 and "returned no prompt_logprobs" in result.output
    assert "Traceback" not in result.output
    assert next(line for line in result.output.splitlines() if "prompt_logprobs" in line).startswith("error: ")


def test_a_generation_task_is_answered_through_the_chat_endpoint(cli, server, tmp_path):
    out = tmp_path / "out"
    args = ("run", "-m", "openai-chat:tiny-gpt2", "--base-url", server.url, "-t", "multiq", "--limit", "2")
    result = cli(*args, "--log-samples", "-o", out)
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["tasks"]["multiq"]["protocol"] == "generate-chat"
    for line in read_jsonl(out / "samples" / "multiq.jsonl"):
        assert json.loads(line["arguments"]["gen_args_0"]["arg_0"])[-1]["role"] == "user"
        assert line["prediction"] == line["resps"][0][0].strip()


def test_the_backend_scores_and_generates_for_messages(server):
    backend = OpenAIChatModel("tiny-gpt2", server.url)
    messages = (Message("user", "Кошка сидит на"),)
    assert backend.capabilities.chat_logprobs is None  # --chat-scoring auto: the server is asked when it matters
    assert backend.settle().chat_logprobs is True
    (first, second) = backend.loglikelihood([Loglikelihood(messages, "окне"), Loglikelihood(messages, "окне и спит")])
    assert first.n_tokens >= 1 and second.n_tokens > first.n_tokens and second.logprob < first.logprob
    (text,) = backend.generate([Generation(messages, 5)])
    assert isinstance(text, str)
    assert backend.identity.startswith("openai-chat:tiny-gpt2 ")  # its own cache, apart from openai:


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


def test_a_server_that_serves_another_model_is_one_error(cli, server, tmp_path):
    result = cli(
        "run", "-m", "openai-chat:other", "--base-url", server.url, "-t", "parus", "--limit", "2", "-o", tmp_path
    )
    assert result.exit_code == 2 and "does not serve model 'other'" in result.output


def test_a_text_prompt_is_refused_by_the_chat_backend():
    with pytest.raises(RuevalError, match="must be chat messages"):
        payload_messages("Кошка сидит на")
