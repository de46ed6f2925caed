from __future__ import annotations

import json

import pytest

import rueval
from rueval.models.base import Capabilities, LanguageModel, LoglikelihoodResult
from rueval.results.lm_eval import FILE_NAME

# The top-level keys lm-evaluation-harness 0.4.x writes (lm_eval/evaluator.py: evaluate() and
# simple_evaluate()), and the keys of its "config" and each "n-samples" entry.
LM_EVAL_KEYS = {"results", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better", "n-samples", "config"}
LM_EVAL_CONFIG_KEYS = {
    "model",
    "model_args",
    "batch_size",
    "device",
    "limit",
    "gen_kwargs",
    "random_seed",
    "fewshot_seed",
}
LM_EVAL_TASK_CONFIG_KEYS = {"task", "tag", "dataset_path", "test_split", "num_fewshot", "metric_list", "metadata"}


@pytest.fixture(scope="module")
def majority_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    result = rueval.evaluate("majority", tasks="rcb,multiq", out=out)
    return result, json.loads((out / FILE_NAME).read_text(encoding="utf-8"))


def test_the_file_has_lm_evals_keys_for_every_task(majority_run):
    _, document = majority_run
    assert LM_EVAL_KEYS <= set(document)
    assert LM_EVAL_CONFIG_KEYS <= set(document["config"])
    assert list(document["results"]) == ["rcb", "multiq"]
    for section in ("configs", "versions", "n-shot", "higher_is_better", "n-samples", "group_subtasks"):
        assert set(document[section]) == {"rcb", "multiq"}, section
    for config in document["configs"].values():
        assert LM_EVAL_TASK_CONFIG_KEYS <= set(config)
        assert all({"metric", "aggregation", "higher_is_better"} <= set(m) for m in config["metric_list"])
    assert document["n-shot"] == {"rcb": 0, "multiq": 0}
    assert document["n-samples"]["rcb"]["original"] == document["n-samples"]["rcb"]["effective"]


def test_metrics_are_named_and_scaled_as_lm_eval_does(majority_run):
    result, document = majority_run
    rcb = document["results"]["rcb"]
    assert rcb["alias"] == "rcb"
    assert rcb["acc,none"] == pytest.approx(result.tasks["rcb"].metrics["accuracy"] / 100)  # a fraction, not percent
    assert rcb["f1,none"] == pytest.approx(result.tasks["rcb"].metrics["avg_f1"] / 100)
    assert document["results"]["multiq"]["exact_match,none"] == pytest.approx(
        result.tasks["multiq"].metrics["exact_match"] / 100
    )
    for entry in document["results"].values():
        metrics = [key for key in entry if key != "alias" and "_stderr," not in key]
        for key in metrics:
            name, _, kind = key.partition(",")
            assert kind == "none"
            assert f"{name}_stderr,none" in entry  # lm-eval's make_table pairs each metric with its stderr
    low, high = result.tasks["rcb"].ci["accuracy"]
    assert rcb["acc_stderr,none"] == pytest.approx((high - low) / 100 / (2 * 1.959964))
    assert document["higher_is_better"]["rcb"] == {"f1": True, "acc": True, "score": True}


class LongestOption(LanguageModel):
    identity = "test:longest-option"
    capabilities = Capabilities(loglikelihood=True, generation=True)

    def loglikelihood(self, requests, on_done=None):
        return [LoglikelihoodResult(logprob=len(r.continuation) - 1000.0, n_tokens=1, greedy=False) for r in requests]

    def generate(self, requests, on_done=None):
        return ["" for _ in requests]


def test_each_further_k_is_an_entry_of_its_own(tmp_path):
    result = rueval.evaluate(LongestOption(), tasks=["parus"], shots=[0, 2], episodes=2, out=tmp_path)
    document = json.loads((tmp_path / FILE_NAME).read_text(encoding="utf-8"))
    assert list(document["results"]) == ["parus", "parus_2shot"]
    assert document["n-shot"] == {"parus": 0, "parus_2shot": 2}
    two_shot = document["results"]["parus_2shot"]
    assert two_shot["acc,none"] == pytest.approx(result.tasks["parus"].shots[2].metrics["accuracy"] / 100)
    assert two_shot["acc_stderr,none"] == "N/A"  # a mean over episodes has no bootstrap interval
    assert "acc_norm,none" in document["results"]["parus"]


def test_lm_evals_command_line_runs_a_model_as_rueval_names_it(cli, tiny_gpt2_dir, tmp_path):
    out = tmp_path / "run"
    model_args = f"pretrained={tiny_gpt2_dir},dtype=float32,trust_remote_code=False"
    result = cli("run", "--model", "hf", "--model_args", model_args, "--tasks", "parus", "--num_fewshot", "1",
                 "--batch_size", "4", "--limit", "3", "--output_path", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "not the benchmark's scores" in result.output
    settings = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert settings["model"] == f"hf:{tiny_gpt2_dir}"
    assert settings["shots"] == [1]
    assert {key: settings["solver_options"][key] for key in ("dtype", "batch_size", "device", "bos")} == {
        "dtype": "float32",
        "batch_size": 4,
        "device": "cpu",  # the test machine has no GPU
        "bos": "tokenizer",  # lm-eval's HFLM tokenization, as --model hf means
    }
    assert json.loads((out / FILE_NAME).read_text(encoding="utf-8"))["n-shot"] == {"parus": 1}
    resumed = cli("run", "--resume", "-o", out)  # the saved lm-eval options give the same run
    assert resumed.exit_code == 0, resumed.output
    assert "reused" in resumed.output


def test_the_device_defaults_to_the_gpu_when_there_is_one(monkeypatch):
    import torch

    from rueval.solvers import solver_options

    options = {"scoring": "loglik", "device": None, "dtype": "auto", "batch_size": "auto"}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert solver_options("hf:x", options).engine.device == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert solver_options("hf:x", options).engine.device == "cpu"
    assert solver_options("hf:x", {**options, "device": "cuda:1"}).engine.device == "cuda:1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "hf"], "--model_args pretrained="),
        (["--model", "hf", "--model_args", "pretrained=x,parallelize=True"], "parallelize=True"),
        (["--model", "hf", "--model_args", "dtype=float16"], "pretrained="),
        (["--model", "hf", "--model_args", "pretrained=x,dtype=int3"], "dtype=int3"),
        (["--model", "majority", "--model_args", "pretrained=x"], "--model majority"),
    ],
)
def test_lm_eval_model_args_that_cannot_work_are_one_line_errors(cli, tmp_path, args, message):
    result = cli("run", *args, "--tasks", "parus", "-o", tmp_path / "run")
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "run").exists()
