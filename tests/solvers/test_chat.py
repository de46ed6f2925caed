"""Chat templates for hf: models, as lm-evaluation-harness defines --apply-chat-template,
--system-instruction and --fewshot-as-multiturn; checked on a tiny model given a template here."""

from __future__ import annotations

import json

import pytest
from support import SYSTEM, read_samples

from rueval.core.errors import RuevalError
from rueval.data import load_task_data, open_data
from rueval.solvers import Setting, make_solver
from rueval.solvers.lm import ChatFormat
from rueval.tasks import get_task
from rueval.tasks.prompts import get_prompt


def parus(limit=2):
    task = get_task("parus")
    return task, load_task_data(open_data(None), task, None, limit)


def plan(model_dir, chat: ChatFormat, k: int):
    task, data = parus()
    options = {
        "apply_chat_template": chat.template,
        "system_instruction": chat.system,
        "fewshot_as_multiturn": chat.multiturn,
    }
    solver = make_solver(f"hf:{model_dir}", 0, **options)
    return solver.plan(task, data.train.examples, data.eval.examples, Setting(k, 0)), data


def demo_question(data, solver_plan):
    """The k=1 demonstration the plan drew: the train example whose context opens the prompt."""
    prompt = get_prompt(solver_plan.task)
    for example in data.train.examples:
        question = prompt.questions(example)[0]
        if question.context in solver_plan.asked[0][0].context:
            return question
    raise AssertionError("no train example is shown")


def test_the_context_is_the_question_in_one_user_turn_after_the_system_turn(chat_model):
    solver_plan, data = plan(chat_model, ChatFormat(template=True, system=SYSTEM), k=0)
    asked = solver_plan.asked[0][0]
    question = get_prompt(solver_plan.task).questions(data.eval.examples[0])[0]
    # BOS is left out: the backend starts every sequence with it
    assert asked.context == f"<|system|>{SYSTEM}\n<|user|>{question.context}\n<|assistant|>"
    # the option opens the assistant's turn, without the target delimiter (lm-eval's " ")
    assert [r.continuation for r in asked.requests] == [c.continuation.lstrip() for c in question.choices]
    assert all(r.context == asked.context for r in asked.requests)


def test_demonstrations_share_the_user_turn_unless_multiturn(chat_model):
    single, data = plan(chat_model, ChatFormat(template=True), k=1)
    demo = demo_question(data, single)
    question = get_prompt(single.task).questions(data.eval.examples[0])[0]
    together = f"{demo.context}{demo.target}\n\n{question.context}"
    assert single.asked[0][0].context == f"<|user|>{together}\n<|assistant|>"

    multi, _ = plan(chat_model, ChatFormat(template=True, multiturn=True), k=1)
    assert multi.asked[0][0].context == (
        f"<|user|>{demo.context}\n<|assistant|>{demo.target.strip()}\n<|user|>{question.context}\n<|assistant|>"
    )


def test_a_system_instruction_without_a_template_is_plain_text_before_the_prompt(tiny_gpt2_dir):
    solver_plan, data = plan(tiny_gpt2_dir, ChatFormat(system=SYSTEM), k=0)
    question = get_prompt(solver_plan.task).questions(data.eval.examples[0])[0]
    asked = solver_plan.asked[0][0]
    assert asked.context == f"{SYSTEM}\n\n{question.context}"
    assert [r.continuation for r in asked.requests] == [c.continuation for c in question.choices]


def test_a_chat_run_scores_options_after_the_rendered_template(cli, chat_model, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "out"
    args = ("run", "-m", f"hf:{chat_model}", "-t", "parus", "--limit", "3", "-o", out)
    result = cli(*args, "--apply-chat-template", "--system-instruction", SYSTEM, "--log-samples")
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["tasks"]["parus"]["protocol"] == "loglik-chat-template"
    assert results["solver_options"]["apply_chat_template"] is True

    # every option's log-likelihood, recomputed here with transformers on BOS + rendered prompt + option
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    model = AutoModelForCausalLM.from_pretrained(chat_model).eval()
    for line in read_samples(out, "parus"):
        scores = []
        for argument in line["arguments"].values():
            context, option = argument["arg_0"], argument["arg_1"]
            assert context.startswith(f"<|system|>{SYSTEM}\n<|user|>") and context.endswith("<|assistant|>")
            prefix = tokenizer(context.rstrip(), add_special_tokens=False)["input_ids"]
            whole = tokenizer(context + option, add_special_tokens=False)["input_ids"]
            ids = torch.tensor([[tokenizer.bos_token_id, *whole]])
            with torch.no_grad():
                logprobs = model(ids).logits.log_softmax(-1)[0]
            scores.append(sum(logprobs[i, ids[0, i + 1]].item() for i in range(len(prefix), len(whole))))
        logged = [float(resp[0][0]) for resp in line["resps"]]
        assert logged == pytest.approx(scores, abs=1e-4)
        assert line["prediction"] == max(range(len(scores)), key=scores.__getitem__)


def test_chat_options_change_the_runs_fingerprint(cli, chat_model, tmp_path):
    out = tmp_path / "out"
    args = ("run", "-m", f"hf:{chat_model}", "-t", "parus", "--limit", "2", "-o", out)
    assert cli(*args).exit_code == 0
    again = cli(*args, "--apply-chat-template")
    assert again.exit_code == 2 and "holds the results of another run" in again.output


@pytest.mark.parametrize(
    ("model", "flags", "message"),
    [
        ("tiny", ["--apply-chat-template"], "has no chat template"),
        ("chat", ["--fewshot-as-multiturn"], "--fewshot-as-multiturn needs --apply-chat-template"),
        ("majority", ["--apply-chat-template"], "majority is no language model"),
    ],
)
def test_chat_options_that_cannot_apply_are_one_error(cli, tiny_gpt2_dir, chat_model, tmp_path, model, flags, message):
    spec = {"tiny": f"hf:{tiny_gpt2_dir}", "chat": f"hf:{chat_model}"}.get(model, model)
    result = cli("run", "-m", spec, "-t", "parus", "--limit", "2", "-o", tmp_path / "out", *flags)
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


def test_a_chat_format_refuses_multiturn_without_a_template():
    with pytest.raises(RuevalError, match="needs --apply-chat-template"):
        ChatFormat(multiturn=True)


def test_only_a_model_that_declares_its_own_tokenizer_renders_a_chat_template():
    from rueval.models.backends.openai import OpenAICompletionsModel
    from rueval.models.engine import Engine
    from rueval.solvers.lm import LMSolver

    served = OpenAICompletionsModel("served", "http://127.0.0.1:9/v1")  # given no tokenizer; never contacted
    assert served.capabilities.tokenizer is None
    with pytest.raises(RuevalError, match="openai:served has no tokenizer"):
        LMSolver(Engine(served), "openai:served", chat=ChatFormat(template=True))


def test_lm_evals_spelling_of_the_options_works_with_its_model_args(cli, chat_model, tmp_path):
    out = tmp_path / "out"
    args = ("run", "--model", "hf", "--model_args", f"pretrained={chat_model}", "-t", "parus", "--limit", "2")
    result = cli(*args, "--apply_chat_template", "--system_instruction", SYSTEM, "--log_samples", "--output_path", out)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "results.json").read_text())["tasks"]["parus"]["protocol"] == "loglik-chat-template"
    (line, *_) = read_samples(out, "parus")
    assert line["arguments"]["gen_args_0"]["arg_0"].startswith(f"<|system|>{SYSTEM}\n<|user|>")
