"""Backends declare what they compute (Capabilities), and a new backend is one module plus one
registration line: this module is a made-up messages-API backend (the shape of Anthropic's: the
system text apart from the turns, which alternate from a user turn; text generation only, no
log-likelihoods) over a deterministic pure-Python model, registered in BACKENDS with one line and run
end to end through `rueval run`."""

from __future__ import annotations

import json

import pytest
from support import SYSTEM, read_samples

from rueval.core.errors import RuevalError
from rueval.data import load_task_data, open_data
from rueval.models.backends.openai_chat import OpenAIChatModel
from rueval.models.base import Capabilities, Generation, LanguageModel, Loglikelihood, Message, prompt_text
from rueval.models.cache import request_key
from rueval.models.engine import Engine
from rueval.models.factory import BACKENDS, Backend, ModelOptions, ModelSpec, open_engine
from rueval.solvers import Setting
from rueval.solvers.lm import LMSolver, match_option
from rueval.tasks import get_task
from rueval.tasks.prompts import get_prompt


class ParityChat(LanguageModel):
    """Answers «Да.» when the last user turn has an even number of characters, else «Нет.»."""

    def __init__(self, name: str):
        self.identity = f"parity-chat:{name}"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(generation=True, chat_messages=True)

    def loglikelihood(self, requests, on_done=None):
        raise NotImplementedError("a messages API gives no log-likelihoods")

    def generate(self, requests, on_done=None):
        replies = []
        for request in requests:
            turns = [m for m in request.prompt if m.role != "system"]  # the system text goes apart
            if [m.role for m in turns] != ["user", "assistant"] * (len(turns) // 2) + ["user"]:
                raise RuevalError(f"parity-chat: turns must alternate from a user turn to a user turn: {turns}")
            replies.append(reply(turns[-1].content))
        return replies


def reply(last_user_turn: str) -> str:
    return "Да." if len(last_user_turn) % 2 == 0 else "Нет."


def open_model(spec: ModelSpec, options: ModelOptions) -> ParityChat:
    return ParityChat(spec.target)


@pytest.fixture
def parity_chat(monkeypatch):
    monkeypatch.setitem(BACKENDS, "parity-chat", Backend(__name__))  # the registration line


def test_a_registered_backend_runs_tasks_end_to_end_through_the_normal_run(cli, parity_chat, tmp_path):
    out = tmp_path / "out"
    args = ("run", "-m", "parity-chat:v1", "-t", "terra,multiq", "--limit", "4", "--shots", "0,1", "--log-samples")
    result = cli(*args, "--system-instruction", SYSTEM, "--apply-chat-template", "--fewshot-as-multiturn", "-o", out)
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["tasks"]["terra"]["protocol"] == "generate-match"  # no log-likelihoods: options are named
    assert results["tasks"]["multiq"]["protocol"] == "generate-chat"
    assert results["tasks"]["terra"]["unmatched_answers"] == 0  # «Да.» and «Нет.» name TERRa's options
    for name in ("terra", "multiq"):
        task = get_task(name)
        examples = load_task_data(open_data(None), task, None, 4).eval.examples
        lines = read_samples(out, name)
        assert len(lines) == 2 * len(examples)  # k = 0 and k = 1
        for line in lines:
            (argument,) = line["arguments"].values()
            sent = json.loads(argument["arg_0"])  # the messages sent, in lm-eval's sample shape
            roles = ["system", "user", "assistant", "user"] if line["k"] else ["system", "user"]
            assert [m["role"] for m in sent] == roles and sent[0]["content"] == SYSTEM
            answer = reply(sent[-1]["content"])
            assert line["resps"] == [[answer]]
            if name == "multiq":  # the answer as generated
                assert line["prediction"] == answer
            else:
                (question,) = get_prompt(task).questions(examples[line["doc_id"]])
                assert line["prediction"] == match_option(question.choices, answer).label


def test_a_spec_names_a_registered_backend(parity_chat):
    assert ModelSpec.parse("parity-chat:v1") == ModelSpec("parity-chat", "v1") and ModelSpec.is_lm("parity-chat:v1")
    assert open_engine("parity-chat:v1", ModelOptions(cache="off")).model.identity == "parity-chat:v1"
    with pytest.raises(
        RuevalError, match="unknown backend 'parrot'; expected one of: hf, openai, openai-chat, vllm, parity"
    ):
        ModelSpec.parse("parrot:v1")


def test_the_built_in_backends_declare_what_they_compute(tiny_gpt2_dir):
    from transformers import AutoModelForCausalLM

    hf = open_engine(f"hf:{tiny_gpt2_dir}", ModelOptions(cache="off")).model.capabilities
    parameters = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).parameters())
    assert (hf.loglikelihood, hf.generation, hf.chat_messages, hf.parameters) == (True, True, False, parameters)
    assert hf.tokenizer is not None  # its own tokenizer: a chat template can render prompts
    served = open_engine("openai:m", ModelOptions(base_url="http://127.0.0.1:9/v1", cache="off")).model.capabilities
    assert (served.loglikelihood, served.chat_messages, served.tokenizer, served.parameters) == (
        True,
        False,
        None,
        None,
    )
    for scoring, declared in (("auto", None), ("logprobs", True), ("generate", False)):
        chat = OpenAIChatModel("m", "http://127.0.0.1:9/v1", scoring=scoring).capabilities  # no server is asked
        assert (chat.loglikelihood, chat.chat_messages, chat.chat_logprobs) == (False, True, declared)


def test_chat_messages_key_the_request_cache_stably_and_apart_from_the_same_text():
    def request():
        return Loglikelihood((Message("system", SYSTEM), Message("user", "Кошка сидит на")), " окне")

    key = request_key("m", request())
    assert key == request_key("m", request())  # built anew: the same key
    assert key != request_key("m", Loglikelihood(prompt_text(request().context), " окне"))  # its JSON as text
    swapped = Loglikelihood((Message("user", SYSTEM), Message("system", "Кошка сидит на")), " окне")
    assert key != request_key("m", swapped)


class Babbler(LanguageModel):
    """A text model that only generates, always « Да»."""

    identity = "test:babbler"
    capabilities = Capabilities(generation=True)

    def loglikelihood(self, requests, on_done=None):
        raise NotImplementedError("it only generates")

    def generate(self, requests, on_done=None):
        return [" Да"] * len(requests)


def test_a_text_model_that_only_generates_names_options_by_generating():
    task = get_task("terra")
    data = load_task_data(open_data(None), task, None, 3)
    solver = LMSolver(Engine(Babbler()), "babbler")
    planned = solver.plan_task(task, data.train.examples, data.eval.examples, [Setting()])
    assert all(isinstance(request, Generation) for request in planned.requests)  # one per question, not per option
    answers = solver.answer_task(planned, dict(zip(planned.requests, solver.engine.compute(planned.requests))))
    assert (answers.protocol, answers.unmatched, answers.normalized) == ("generate-match", 0, {})
    assert answers.by_setting == {Setting(): ["entailment"] * len(data.eval.examples)}
    with pytest.raises(RuevalError, match="--scoring ppl"):
        LMSolver(Engine(Babbler()), "babbler", scoring="ppl")


def test_a_specs_keys_are_checked_before_its_backend_loads(cli, tmp_path):
    result = cli("run", "-m", "vllm:some/model,tensor_parallel_size=two", "-t", "parus", "-o", tmp_path)
    assert result.exit_code == 2 and "tensor_parallel_size=two: expected a positive whole number" in result.output
    result = cli("run", "-m", "vllm:some/model,swap=4", "-t", "parus", "-o", tmp_path)
    assert result.exit_code == 2 and "the keys vllm: takes: tokenizer, tensor_parallel_size" in result.output
    result = cli("run", "-m", "hf:some/model,tokenizer=x", "-t", "parus", "-o", tmp_path)
    assert result.exit_code == 2 and "the keys hf: takes: none" in result.output
