"""--gen_kwargs, lm-evaluation-harness's spelling, overriding TAPE's sampling for generation tasks."""

from __future__ import annotations

import json
import re

import pytest
from support import require_modules

require_modules("torch", "transformers", extra="lm")

from transformers import AutoModelForCausalLM

from rueval.core.errors import RuevalError
from rueval.data import load_task_data, open_data
from rueval.models.base import Generation
from rueval.solvers import Setting, make_solver
from rueval.solvers.lm import TAPE_TOP_P, GenerationSettings
from rueval.tasks import get_task
from rueval.tasks.prompts import get_prompt


def multiq_requests(model_dir, seed: int, gen_kwargs=None) -> tuple[list[Generation], list[str]]:
    """The generation requests of MultiQ's first examples and the texts the tiny model gives them
    (computed, not read from a cache)."""
    task = get_task("multiq")
    data = load_task_data(open_data(None), task, None, 3)
    solver = make_solver(f"hf:{model_dir}", seed, gen_kwargs=gen_kwargs, cache="off")
    requests = solver.plan(task, data.train.examples, data.eval.examples, Setting()).requests
    return requests, solver.engine.compute(requests)


def test_by_default_open_answers_are_sampled_as_tape_does(tiny_gpt2_dir):
    first, _ = multiq_requests(tiny_gpt2_dir, seed=0)
    second, _ = multiq_requests(tiny_gpt2_dir, seed=1)
    assert {(r.top_p, r.temperature) for r in first} == {(TAPE_TOP_P, 1.0)}  # TAPE, Section 5.2
    assert {r.seed for r in first} == {0} and {r.seed for r in second} == {1}


def test_a_greedy_override_gives_the_same_texts_for_any_seed(tiny_gpt2_dir):
    requests, texts = multiq_requests(tiny_gpt2_dir, seed=0, gen_kwargs={"temperature": "0"})
    _, other_seed = multiq_requests(tiny_gpt2_dir, seed=7, gen_kwargs={"do_sample": False})
    assert {(r.top_p, r.temperature) for r in requests} == {(1.0, 0.0)}
    assert texts == other_seed


def test_max_gen_toks_and_until_replace_the_prompts_budget_and_stops(tiny_gpt2_dir):
    requests, _ = multiq_requests(tiny_gpt2_dir, 0, GenerationSettings.parse(r"max_gen_toks=5,until=\n").describe())
    assert {(r.max_new_tokens, r.stop) for r in requests} == {(5, ("\n",))}
    default, _ = multiq_requests(tiny_gpt2_dir, 0)
    prompt = get_prompt(get_task("multiq"))
    assert {(r.max_new_tokens, r.stop) for r in default} == {(prompt.max_new_tokens[0], prompt.stop)}


def test_sampling_settings_given_keep_tapes_for_the_rest():
    sampled = GenerationSettings.parse("temperature=0.7").request("Вопрос:", 10, ("\n",), seed=3)
    assert (sampled.temperature, sampled.top_p, sampled.seed) == (0.7, TAPE_TOP_P, 3)
    nucleus = GenerationSettings.parse("top_p=0.95,do_sample=true").request("Вопрос:", 10, (), seed=3)
    assert (nucleus.temperature, nucleus.top_p) == (1.0, 0.95)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("temprature=0", "--gen_kwargs temprature: unknown key"),
        ("temperature=cold", "--gen_kwargs temperature=cold: not a valid temperature"),
        ("top_p=1.5", "--gen_kwargs top_p=1.5: expected a number in (0, 1]"),
        ("max_gen_toks=0", "--gen_kwargs max_gen_toks=0"),
        ("do_sample=maybe", "--gen_kwargs do_sample=maybe"),
        ("do_sample=true,temperature=0", "sampling needs a temperature above 0"),
        ("temperature", "--gen_kwargs temperature: expected KEY=VALUE"),
    ],
)
def test_bad_gen_kwargs_are_named(text, message):
    with pytest.raises(RuevalError) as error:
        GenerationSettings.parse(text)
    assert message in str(error.value)


def test_a_runs_gen_kwargs_are_recorded_and_keep_it_apart_from_other_settings(cli, tiny_gpt2_dir, tmp_path):
    out = tmp_path / "out"
    args = ("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "multiq", "--limit", "2", "-o", out)
    result = cli(*args, "--gen_kwargs", "temperature=0,max_gen_toks=8")
    assert result.exit_code == 0, result.output
    # loading the model is a step that says so, with the model's size
    parameters = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).parameters())
    loading = f"loading hf:{tiny_gpt2_dir} on cpu (auto)"
    assert re.search(rf"{re.escape(loading)}: done in \d+\.\d s, {parameters / 1e6:.1f}M parameters", result.stderr)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["solver_options"]["gen_kwargs"] == {"temperature": 0.0, "max_gen_toks": 8}
    lm_eval = json.loads((out / "results_lmeval.json").read_text(encoding="utf-8"))
    assert lm_eval["config"]["gen_kwargs"] == {"temperature": 0.0, "max_gen_toks": 8}
    again = cli(*args, "--gen_kwargs", "temperature=0,max_gen_toks=16")
    assert again.exit_code == 2 and "holds the results of another run" in again.output
    assert cli(*args, "--gen_kwargs", "max_gen_toks=8,temperature=0").exit_code == 0  # the same settings: reused


def test_gen_kwargs_errors_are_one_line_before_any_work(cli, tiny_gpt2_dir, tmp_path):
    bad = cli("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "multiq", "-o", tmp_path / "a", "--gen_kwargs", "seed=1")
    assert bad.exit_code == 2 and "--gen_kwargs seed: unknown key" in bad.output
    assert not (tmp_path / "a").exists()
    classical = cli("run", "-m", "majority", "-t", "multiq", "-o", tmp_path / "b", "--gen_kwargs", "temperature=0")
    assert classical.exit_code == 2 and "--gen-kwargs: majority is no language model" in classical.output


def test_a_budget_beyond_the_models_window_is_one_line(cli, tiny_gpt2_dir, tmp_path):
    run = ("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "multiq", "--limit", "1", "-o", tmp_path / "out")
    result = cli(*run, "--gen_kwargs", "max_gen_toks=99999999999")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "error: 99999999999 new tokens do not fit the model's window of 2048 tokens beside a prompt: "
        "give --gen_kwargs max_gen_toks a smaller number"
    )
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()  # refused before the run began
