"""--prompts all: a run scores each task its paper ran with several prompts (TAPE: Winograd, Ethics)
under every one of them, pooled with the rest of the run; the headline stays the default prompt's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support import read_jsonl

import rueval
from rueval.core.errors import RuevalError
from rueval.data import load_task_data, open_data
from rueval.results import Checker, PromptResult, PromptScores, RunResult
from rueval.scoring.task_scores import score_task
from rueval.solvers import make_solver
from rueval.solvers.base import Setting
from rueval.tasks import get_task
from rueval.tasks.prompts import prompt_variants

SEVERAL = ("winograd", "sit_ethics", "per_ethics")  # 4, 2 and 3 prompts
ONE = ("rcb", "ru_worldtree")  # one prompt each
LIMIT = 6


@pytest.fixture(scope="module")
def runs(tiny_gpt2_dir, tmp_path_factory):
    """The same tasks run with the default prompt and with all prompts."""
    out = tmp_path_factory.mktemp("prompts")
    tasks = [*SEVERAL, *ONE]
    model = f"hf:{tiny_gpt2_dir}"
    default = rueval.evaluate(model, tasks=tasks, limit=LIMIT, out=out / "default")
    every = rueval.evaluate(model, tasks=tasks, limit=LIMIT, prompts="all", out=out / "all")
    return {"default": default, "all": every, "dirs": {"default": out / "default", "all": out / "all"}}


def alone(tiny_gpt2_dir, name, setting=None) -> PromptScores:
    """The task's prompts scored outside the run, each on its own plan in its own engine call (zero-shot
    unless ``setting`` is given)."""
    task = get_task(name)
    data = load_task_data(open_data(None), task, None, LIMIT)
    solver = make_solver(f"hf:{tiny_gpt2_dir}")
    scored = []
    for prompt in prompt_variants(task):
        plan = solver.plan(task, data.train.examples, data.eval.examples, setting or Setting(), prompt)
        results = dict(zip(plan.requests, solver.engine.compute(plan.requests), strict=True))
        scored.append(score_task(task, data.eval.examples, solver.answer(plan, results)))
    return PromptScores(tuple(PromptResult(one.score, one.metrics) for one in scored))


@pytest.mark.parametrize("name", SEVERAL)
def test_each_prompt_scores_in_the_run_what_it_scores_alone(runs, tiny_gpt2_dir, name):
    prompts = runs["all"].tasks[name].prompts
    reference = alone(tiny_gpt2_dir, name)
    assert len(prompts.variants) == len(prompt_variants(name)) > 1
    for ran, scored in zip(prompts.variants, reference.variants, strict=True):
        assert ran.score == pytest.approx(scored.score) and ran.metrics == pytest.approx(scored.metrics)
    scores = [variant.score for variant in prompts.variants]
    assert prompts.mean == pytest.approx(np.mean(scores)) and prompts.std == pytest.approx(np.std(scores))
    assert prompts.metrics_mean.keys() == prompts.metrics_std.keys() == set(get_task(name).metrics)
    for metric in get_task(name).metrics:
        values = [variant.metrics[metric] for variant in prompts.variants]
        assert prompts.metrics_mean[metric] == pytest.approx(np.mean(values))
        assert prompts.metrics_std[metric] == pytest.approx(np.std(values))


@pytest.mark.parametrize("name", [*SEVERAL, *ONE])
def test_the_headline_and_predictions_stay_the_default_prompts(runs, name):
    default, every = runs["default"].tasks[name], runs["all"].tasks[name]
    assert every.score == default.score and every.metrics == default.metrics and every.shots == default.shots
    assert runs["all"].predictions[name] == runs["default"].predictions[name]
    assert default.prompts is None
    if name in ONE:  # one prompt: as a default run, nothing more
        assert len(prompt_variants(name)) == 1 and every.prompts is None
    else:
        assert every.prompts.variants[0].score == default.score
        assert every.prompts.variants[0].metrics == default.metrics
    assert runs["all"].rsg_total == runs["default"].rsg_total


def test_requests_the_prompts_share_are_computed_once(tiny_gpt2_dir):
    """Per_ethics' law has one template: all three prompts ask it the same, and the model once."""
    task = get_task("per_ethics")
    data = load_task_data(open_data(None), task, None, LIMIT)
    solver = make_solver(f"hf:{tiny_gpt2_dir}")
    asked = [solver.plan(task, [], data.eval.examples, Setting(), prompt).requests for prompt in prompt_variants(task)]
    distinct = set().union(*asked)
    assert len(distinct) < sum(len(requests) for requests in asked)
    summary = rueval.evaluate(f"hf:{tiny_gpt2_dir}", tasks=["per_ethics"], limit=LIMIT, prompts="all", cache="off")
    assert summary.tasks["per_ethics"].requests_computed == len(distinct)


def test_results_json_holds_every_prompt_and_reads_back(runs):
    run_dir = runs["dirs"]["all"]
    written = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert written["prompts"] == "all"
    winograd = written["tasks"]["winograd"]["prompts"]
    memory = runs["all"].tasks["winograd"].prompts
    assert winograd["mean"] == memory.mean and winograd["std"] == memory.std
    assert [variant["score"] for variant in winograd["variants"]] == [v.score for v in memory.variants]
    assert "prompts" not in written["tasks"]["rcb"]
    again = RunResult.read(run_dir)
    assert {name: task.prompts for name, task in again.tasks.items()} == {
        name: task.prompts for name, task in runs["all"].tasks.items()
    }
    assert again.to_json()["tasks"] == written["tasks"]
    stored = json.loads((run_dir / "tasks" / "per_ethics.json").read_text(encoding="utf-8"))
    assert stored["prompts"] == written["tasks"]["per_ethics"]["prompts"]


def test_a_results_file_without_prompts_reads_and_a_damaged_one_names_the_field(runs):
    written = runs["all"].to_json()
    del written["tasks"]["winograd"]["prompts"]
    assert RunResult.from_json(written, Checker("results.json")).tasks["winograd"].prompts is None
    written["tasks"]["winograd"]["prompts"] = {"variants": []}
    with pytest.raises(RuevalError, match=r"tasks\.winograd\.prompts\.variants.*empty"):
        RunResult.from_json(written, Checker("results.json"))
    written["tasks"]["winograd"]["prompts"] = {"variants": [{"score": 50.0}]}
    with pytest.raises(RuevalError, match=r"tasks\.winograd\.prompts\.variants\[0\]\.metrics"):
        RunResult.from_json(written, Checker("results.json"))


def test_with_few_shot_episodes_each_prompt_is_scored_over_its_episodes(tiny_gpt2_dir, tmp_path):
    summary = rueval.evaluate(
        f"hf:{tiny_gpt2_dir}", tasks=["winograd"], limit=LIMIT, shots=[0, 1], episodes=2, prompts="all",
        out=tmp_path / "out",
    )  # fmt: skip
    prompts = summary.tasks["winograd"].prompts
    zero_shot = alone(tiny_gpt2_dir, "winograd")
    episodes = [alone(tiny_gpt2_dir, "winograd", Setting(1, episode)) for episode in (0, 1)]
    assert len(prompts.variants) == len(zero_shot.variants) == len(prompt_variants("winograd")) > 1
    for i, variant in enumerate(prompts.variants):
        assert variant.score == pytest.approx(zero_shot.variants[i].score)
        assert variant.shots[0].score == pytest.approx(zero_shot.variants[i].score)
        each = [episode.variants[i].score for episode in episodes]
        assert variant.shots[1].score == pytest.approx(np.mean(each))
        assert variant.shots[1].score_std == pytest.approx(np.std(each))
    per_k = [variant.shots[1].score for variant in prompts.variants]
    assert prompts.by_k[1] == pytest.approx((np.mean(per_k), np.std(per_k)))
    written = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert written["tasks"]["winograd"]["prompts"]["shots"]["1"]["score"] == pytest.approx(np.mean(per_k))
    assert summary.tasks["winograd"].shots[1].score == prompts.variants[0].shots[1].score  # the default's


def test_the_table_shows_the_mean_and_spread_over_prompts(runs, cli):
    from rich.console import Console

    from rueval.report.table import results_table

    console = Console(width=200, record=True)
    console.print(results_table(runs["all"]))
    text = console.export_text()
    prompts = runs["all"].tasks["per_ethics"].prompts
    assert "3 prompts" in text and f"{prompts.mean:.2f} ± {prompts.std:.2f}" in text
    assert "4 prompts" in text and "2 prompts" in text and text.count(" prompts") == 3  # ONE have one


def test_changing_prompts_in_a_run_directory_recomputes_or_is_refused(runs, cli, tmp_path, tiny_gpt2_dir):
    out = tmp_path / "out"
    args = ("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "winograd", "--limit", LIMIT, "-o", out)
    assert cli(*args).exit_code == 0
    resumed = cli("run", "--resume", "-o", out, "--prompts", "all")
    assert resumed.exit_code == 2 and "prompts 'default' -> 'all'" in resumed.stderr
    assert resumed.stderr.count("\n") == 1
    other = cli(*args, "--prompts", "all")
    assert other.exit_code == 2 and "holds the results of another run" in other.stderr
    assert "prompts" not in json.loads((out / "results.json").read_text())["tasks"]["winograd"]
    assert cli(*args, "--prompts", "all", "--force").exit_code == 0
    replaced = json.loads((out / "results.json").read_text())
    assert replaced["reused"] == [] and len(replaced["tasks"]["winograd"]["prompts"]["variants"]) == 4
    again = cli("run", "--resume", "-o", out)
    assert again.exit_code == 0
    kept = json.loads((out / "results.json").read_text())
    assert (
        kept["reused"] == ["winograd"]
        and kept["tasks"]["winograd"]["prompts"] == replaced["tasks"]["winograd"]["prompts"]
    )
    assert read_jsonl(out / "predictions" / "winograd.jsonl") == [
        row.to_json() for row in runs["default"].predictions["winograd"]
    ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("-m", "majority", "--prompts", "every"), "Invalid value for '--prompts'"),
        (("-m", "majority", "--prompts", "all"), "--prompts all needs a language model"),
        (("-m", "hf:some/model", "--prompts", "all", "--predict-only"), "--predict-only scores none"),
    ],
)
def test_a_bad_prompts_value_is_one_line(cli, tmp_path, args, said):
    result = cli("run", "-t", "winograd", *args, "-o", tmp_path / "out")
    assert result.exit_code == 2 and said in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "out").exists()


def test_the_api_refuses_what_the_command_line_refuses():
    with pytest.raises(RuevalError, match="--prompts every: expected one of default, all"):
        rueval.evaluate("majority", tasks=["winograd"], prompts="every")
    with pytest.raises(RuevalError, match="--prompts all needs a language model"):
        rueval.evaluate("majority", tasks=["winograd"], prompts="all")
