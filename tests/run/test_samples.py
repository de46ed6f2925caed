"""--log-samples: OUT/samples/samples_<task>_<date id>.jsonl, named and shaped as lm-evaluation-harness
0.4 writes its sample logs, one line per scored example per few-shot setting."""

from __future__ import annotations

import json
from statistics import fmean

import pytest
from support import read_jsonl, read_samples, samples_path

from rueval.data import load_task_data, open_data
from rueval.tasks import get_task
from rueval.tasks.prompts import PROMPTS, get_prompt

# the fields lm-eval's EvaluationTracker writes for every sample (lm_eval/loggers/evaluation_tracker.py, 0.4.x)
LM_EVAL_FIELDS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics"}
LM_EVAL_HASHES = {"doc_hash", "prompt_hash", "target_hash"}
LIMIT = 3


@pytest.fixture(scope="module")
def lm_run(tiny_gpt2_dir, tmp_path_factory):
    """A tiny model on a choice task, a generation task and Ethics (several questions per example)."""
    from typer.testing import CliRunner

    from rueval.cli import app

    out = tmp_path_factory.mktemp("samples") / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RUEVAL_CACHE_DIR", str(out.parent / "cache"))
        patch.setattr(PROMPTS["multiq"], "max_new_tokens", (4, 4))  # a random model never stops by itself
        args = ["run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "parus,multiq,per_ethics", "--limit", str(LIMIT)]
        args += ["--shots", "0,1", "--episodes", "2", "--log-samples", "-o", str(out)]
        result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


def lines_of(out, task, k=0, episode=0):
    return [line for line in read_samples(out, task) if (line["k"], line["episode"]) == (k, episode)]


def eval_examples(name):
    task = get_task(name)
    return task, load_task_data(open_data(None), task, None, LIMIT).eval.examples


def test_one_line_per_example_per_setting_with_lm_evals_fields(lm_run):
    for name in ("parus", "multiq", "per_ethics"):
        lines = read_samples(lm_run, name)
        _, examples = eval_examples(name)
        settings = [(line["k"], line["episode"]) for line in lines]
        assert sorted(set(settings)) == [(0, 0), (1, 0), (1, 1)] and len(lines) == 3 * len(examples)
        for line in lines:
            assert LM_EVAL_FIELDS | LM_EVAL_HASHES <= set(line)
            assert line["filter"] == "none" and all(metric in line for metric in line["metrics"])
            assert isinstance(line["target"], str)  # lm-eval writes the target as text
            assert list(line["arguments"]) == [f"gen_args_{i}" for i in range(len(line["resps"]))]
            assert all(set(argument) == {"arg_0", "arg_1"} for argument in line["arguments"].values())
        assert [line["doc_id"] for line in lines_of(lm_run, name)] == list(range(len(examples)))
        assert [line["doc"] for line in lines_of(lm_run, name)] == [dict(e.fields) for e in examples]


def test_choice_lines_hold_every_options_prompt_and_log_likelihood(lm_run):
    task, examples = eval_examples("parus")
    predictions = [row["prediction"] for row in read_jsonl(lm_run / "predictions" / "parus.jsonl")]
    for line, example, prediction in zip(lines_of(lm_run, "parus"), examples, predictions, strict=True):
        question = get_prompt(task).questions(example)[0]
        sent = [(a["arg_0"], a["arg_1"]) for a in line["arguments"].values()]
        assert sent == [(question.context, choice.continuation) for choice in question.choices]  # zero-shot: no demos
        # lm-eval writes each response as text: [[log-likelihood, greedy]] per request
        assert all(len(resp) == 1 and resp[0][1] in ("True", "False") for resp in line["resps"])
        assert line["filtered_resps"] == [resp[0] for resp in line["resps"]]
        scores = [float(resp[0][0]) for resp in line["resps"]]
        chosen = question.choices[scores.index(max(scores))].label
        assert line["prediction"] == chosen == prediction
        assert line["acc"] == float(chosen == example.label) and line["correct"] == (chosen == example.label)
    accuracy = json.loads((lm_run / "results.json").read_text())["tasks"]["parus"]["metrics"]["accuracy"]
    assert 100 * fmean(line["acc"] for line in lines_of(lm_run, "parus")) == pytest.approx(accuracy)


def test_few_shot_lines_show_the_demonstrations_sent(lm_run):
    for zero, one in zip(lines_of(lm_run, "parus"), lines_of(lm_run, "parus", k=1, episode=1), strict=True):
        zero_context, one_context = zero["arguments"]["gen_args_0"]["arg_0"], one["arguments"]["gen_args_0"]["arg_0"]
        assert one_context.endswith("\n\n" + zero_context) and len(one_context) > len(zero_context) + 2


def test_generation_lines_hold_the_prompt_its_settings_and_the_raw_text(lm_run):
    task, examples = eval_examples("multiq")
    for line, example in zip(lines_of(lm_run, "multiq"), examples, strict=True):
        (argument,) = line["arguments"].values()
        assert argument["arg_0"] == get_prompt(task).questions(example)[0].context
        assert argument["arg_1"]["until"] == list(PROMPTS["multiq"].stop) and argument["arg_1"]["top_p"] == 0.8
        assert argument["arg_1"]["max_gen_toks"] == 4 and argument["arg_1"]["do_sample"] is True
        (resp,) = line["resps"]
        assert isinstance(resp[0], str) and line["filtered_resps"] == [resp[0].strip()] == [line["prediction"]]
        assert line["metrics"] == ["f1", "exact_match"] and 0 <= line["f1"] <= 1  # under lm-eval's names
    f1 = json.loads((lm_run / "results.json").read_text())["tasks"]["multiq"]["metrics"]["token_f1"]
    assert 100 * fmean(line["f1"] for line in lines_of(lm_run, "multiq")) == pytest.approx(f1)


def test_an_example_with_several_questions_logs_every_request(lm_run):
    task, examples = eval_examples("per_ethics")
    for line, example in zip(lines_of(lm_run, "per_ethics"), examples, strict=True):
        questions = get_prompt(task).questions(example)
        assert len(questions) > 1
        assert len(line["arguments"]) == sum(len(q.choices) for q in questions)
        assert line["acc"] == float(tuple(line["prediction"]) == tuple(example.label))


def test_a_classical_solver_logs_the_document_target_prediction_and_metrics(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("run", "-m", "majority", "-t", "rcb", "-o", out).exit_code == 0
    assert not (out / "samples").exists()
    # the same run again with --log-samples: the stored task is computed again to log its samples
    assert cli("run", "-m", "majority", "-t", "rcb", "-o", out, "--log-samples").exit_code == 0
    lines = read_samples(out, "rcb")
    rows = read_jsonl(out / "predictions" / "rcb.jsonl")
    assert len(lines) == len(rows) > 0
    for line, row in zip(lines, rows, strict=True):
        assert "arguments" not in line and "resps" not in line
        assert line["filtered_resps"] == [row["prediction"]] and line["target"] == str(row["gold"])
        assert line["acc"] == float(row["prediction"] == row["gold"]) and line["metrics"] == ["acc"]
        assert (line["k"], line["episode"], line["idx"]) == (0, 0, row["idx"])


def test_a_task_computed_again_without_log_samples_drops_its_stale_log(cli, tmp_path, data_dir):
    out = tmp_path / "out"
    assert cli("run", "-m", "majority", "-t", "rcb", "--data", data_dir, "-o", out, "--log-samples").exit_code == 0
    assert samples_path(out, "rcb").is_file()
    val = data_dir / "RCB" / "val.jsonl"
    val.write_text("\n".join(val.read_text(encoding="utf-8").splitlines()[:-1]) + "\n", encoding="utf-8")
    # other data, same settings: rcb is computed again, and its old log no longer matches
    assert cli("run", "-m", "majority", "-t", "rcb", "--data", data_dir, "-o", out).exit_code == 0
    assert not list((out / "samples").glob("samples_rcb_*"))
