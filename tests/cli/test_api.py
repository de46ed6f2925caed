from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest
from support import SYSTEM, read_jsonl, read_samples

import rueval
from rueval.core.errors import RuevalError
from rueval.models.base import Capabilities, LanguageModel, LoglikelihoodResult
from rueval.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]


API_PAGE = ROOT / "docs" / "guide" / "python-api.md"


def documented_example() -> str:
    """The first Python example of the documentation's Python API page."""
    return API_PAGE.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]


def test_the_documented_example_runs_on_a_loaded_model(tiny_gpt2_dir, capsys):
    code = documented_example()
    assert 'name = "' in code
    code = re.sub(r'name = "[^"]+"', f"name = {str(tiny_gpt2_dir)!r}", code)
    exec(compile(code, str(API_PAGE), "exec"), {})  # noqa: S102 - the documented example, as a reader runs it
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["rcb", "parus"]
    assert "1-shot" in lines[0]
    assert lines[2].startswith("PredictionRow(idx=")


@pytest.mark.slow  # launches a fresh interpreter
def test_importing_rueval_loads_neither_the_pipeline_nor_torch():
    import subprocess

    code = "import sys, rueval; print('rueval.run' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_spec_gives_typed_results_with_every_prediction_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = rueval.evaluate("majority", tasks="rcb,parus")
    assert isinstance(results, rueval.Evaluation)
    assert list(results.tasks) == ["rcb", "parus"]
    rcb = results.tasks["rcb"]
    assert rcb.ci["score"][0] <= rcb.score <= rcb.ci["score"][1]
    assert len(results.predictions["rcb"]) == rcb.n
    assert {row.prediction for row in results.predictions["rcb"]} == {"neutral"}  # the bundled train's majority
    assert list(tmp_path.iterdir()) == []


def test_out_writes_the_run_directory_the_command_line_writes(tmp_path):
    results = rueval.evaluate("majority", tasks=["terra"], out=tmp_path / "run")
    assert (tmp_path / "run" / "results.json").is_file()
    assert rueval.Evaluation.read(tmp_path / "run").tasks["terra"].score == results.tasks["terra"].score


class ConstantModel(LanguageModel):
    """Prefers the option whose text is longest: a model whose answers the test can predict."""

    identity = "test:longest-option"
    capabilities = Capabilities(loglikelihood=True, generation=True)

    def loglikelihood(self, requests, on_done=None):
        return [LoglikelihoodResult(logprob=len(r.continuation) - 1000.0, n_tokens=1, greedy=False) for r in requests]

    def generate(self, requests, on_done=None):
        return ["" for _ in requests]


def test_any_language_model_is_evaluated_through_the_lm_solver():
    results = rueval.evaluate(ConstantModel(), tasks=["parus"], shots=[0, 1])
    assert results.model == "test:longest-option"
    assert set(results.tasks["parus"].shots) == {0, 1}
    assert results.tasks["parus"].requests_computed > 0
    prompt_choices = rueval_parus_choices()
    for row in results.predictions["parus"][:5]:
        assert row.prediction == prompt_choices[row.idx]


def rueval_parus_choices() -> dict:
    """The option with the longer continuation, per PARus example, as the prompt writes them."""
    from rueval.data import load_task_data, open_data
    from rueval.tasks.prompts import get_prompt

    task = get_task("parus")
    prompt = get_prompt(task)
    chosen = {}
    for example in load_task_data(open_data(None), task, None, None).eval.examples:
        (question,) = prompt.questions(example)
        best = max(question.choices, key=lambda c: len(c.continuation))
        chosen[example.idx] = prompt.prediction(example, [best.label])
    return chosen


def test_options_that_do_not_apply_are_a_clear_error():
    with pytest.raises(RuevalError, match="device"):
        rueval.evaluate(ConstantModel(), tasks=["parus"], device="cuda")
    with pytest.raises(RuevalError, match="tokenizer"):
        rueval.evaluate(object(), tasks=["parus"])
    with pytest.raises(RuevalError, match="takes no model options"):
        rueval.evaluate("majority", tasks=["parus"], device="cpu")
    with pytest.raises(RuevalError, match="tokenizer= goes with a loaded model"):
        rueval.evaluate("hf:some/model", tasks=["parus"], tokenizer=object())


def test_evaluate_writes_sample_logs_when_asked(tmp_path):
    results = rueval.evaluate("majority", tasks=["rcb"], out=tmp_path / "run", log_samples=True)
    lines = read_samples(tmp_path / "run", "rcb")
    assert len(lines) == results.tasks["rcb"].n


def test_chat_options_render_prompts_through_the_template(request, tmp_path):
    model_dir = request.getfixturevalue("chat_model")
    results = rueval.evaluate(
        f"hf:{model_dir}",
        tasks="parus",
        limit=2,
        out=tmp_path / "run",
        log_samples=True,
        apply_chat_template=True,
        system_instruction=SYSTEM,
        fewshot_as_multiturn=True,
        shots=1,
    )
    assert results.tasks["parus"].protocol == "loglik-chat-template"
    assert results.settings["solver_options"]["fewshot_as_multiturn"] is True
    for line in read_samples(tmp_path / "run", "parus"):
        context = line["arguments"]["gen_args_0"]["arg_0"]
        # the system turn, the demonstration as a user and an assistant turn, then the question's user turn
        assert context.startswith(f"<|system|>{SYSTEM}\n<|user|>") and context.endswith("<|assistant|>")
        assert context.count("<|user|>") == 2 and context.count("<|assistant|>") == 2


def test_a_loaded_model_takes_the_chat_and_generation_options(request):
    model_dir = request.getfixturevalue("chat_model")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    options = {"tasks": "multiq", "limit": 2, "tokenizer": tokenizer, "apply_chat_template": True}
    greedy = rueval.evaluate(model, **options, gen_kwargs="temperature=0,max_gen_toks=4")
    assert greedy.tasks["multiq"].protocol == "generate-chat-template"
    assert greedy.settings["solver_options"]["gen_kwargs"] == {"temperature": 0.0, "max_gen_toks": 4}
    # greedy: another seed gives the same answers
    other_seed = rueval.evaluate(model, **options, seed=3, gen_kwargs={"do_sample": False, "max_gen_toks": 4})
    assert [r.prediction for r in other_seed.predictions["multiq"]] == [
        r.prediction for r in greedy.predictions["multiq"]
    ]
    with pytest.raises(RuevalError, match="--gen_kwargs top_k: unknown key"):
        rueval.evaluate(model, tasks="multiq", tokenizer=tokenizer, gen_kwargs={"top_k": 5})


def test_chat_options_for_a_model_that_is_no_language_model_are_refused():
    with pytest.raises(RuevalError, match="takes no model options; apply_chat_template"):
        rueval.evaluate("majority", tasks="parus", apply_chat_template=True)


def test_limit_below_one_is_a_share_of_each_split_rounded_up():
    from rueval.data.local import SAMPLES_DIR

    results = rueval.evaluate("majority", tasks=["rcb", "muserc"], limit=0.1)
    rcb_records = len(read_jsonl(SAMPLES_DIR / "RCB" / "val.jsonl"))
    assert results.tasks["rcb"].n == math.ceil(0.1 * rcb_records)
    # MuSeRC: a record is a passage with several answers to score; the share counts passages
    records = read_jsonl(SAMPLES_DIR / "MuSeRC" / "val.jsonl")
    passages = records[: math.ceil(0.1 * len(records))]
    assert len(passages) < len(records)
    answers = sum(len(q["answers"]) for p in passages for q in p["passage"]["questions"])
    assert results.tasks["muserc"].n == answers
    assert results.settings["limit"] == 0.1 and results.partial
    with pytest.raises(RuevalError, match="--limit 2.5: expected a whole number"):
        rueval.evaluate("majority", tasks=["rcb"], limit=2.5)
