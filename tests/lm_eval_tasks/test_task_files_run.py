"""`rueval run` on lm-eval task files: lm-eval's own code builds and scores the tasks, rueval's engine
answers; the run folder holds lm-eval's results and sample files, --resume answers from the request cache,
only the asked tasks are built, and consents to run code are given by each command, never by run.json."""

from __future__ import annotations

import json

import pytest
from support import read_jsonl
from task_files import CHOICE, GENERATION, QUESTIONS, task_file


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "tasks"
    task_file(folder, "reviews", CHOICE)
    task_file(folder, "sums", GENERATION, QUESTIONS)
    (folder / "suite.yaml").write_text("group: suite\ntask: [reviews, sums]\n", encoding="utf-8")
    return folder


def refused(result, line: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines()[-1] == f"error: {line}" and "Traceback" not in result.output


@pytest.mark.slow
def test_a_run_of_task_files_writes_lm_eval_s_results_and_samples_and_resumes_from_the_cache(
    cli, tmp_path, folder, tiny_gpt2_dir
):
    out = tmp_path / "out"
    args = ("run", "-m", f"hf:{tiny_gpt2_dir}", "--include-path", folder, "-t", "suite", "--log-samples", "-o", out)
    first = cli(*args)
    assert first.exit_code == 0, first.output
    document = read(out / "results_lmeval.json")
    assert set(document["results"]) == {"suite", "reviews", "sums"}
    assert 0 <= document["results"]["reviews"]["acc,none"] <= 1
    assert "exact_match,none" in document["results"]["sums"]
    assert document["n-samples"]["reviews"]["effective"] == 8
    samples = {path.name.split("_")[1]: read_jsonl(path) for path in (out / "samples").glob("samples_*.jsonl")}
    assert len(samples["reviews"]) == 8 and len(samples["sums"]) == 6
    assert all(len(sample["resps"]) == 2 for sample in samples["reviews"])  # one log-likelihood per choice
    assert read(out / "run.json")["task_files"] == ["suite"]
    import lm_eval.evaluator
    from lm_eval.loggers.utils import add_env_info

    environment: dict = {}
    add_env_info(environment)  # the machine and versions, computed while the model loaded
    assert environment["pretty_env_info"] and {key: document[key] for key in environment} == environment
    assert lm_eval.evaluator.add_env_info is add_env_info
    again = cli("run", "--resume", "-o", out, "-v")
    assert again.exit_code == 0, again.output
    assert "0 to compute" in again.stderr and "to compute" in again.stderr
    assert read(out / "results_lmeval.json")["results"] == document["results"]


@pytest.mark.slow
def test_only_the_asked_tasks_python_runs_and_only_with_consent(cli, tmp_path, folder, tiny_gpt2_dir):
    marker = tmp_path / "imported"
    (folder / "helpers.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n\n"
        "def prepare(dataset):\n    return dataset\n",
        encoding="utf-8",
    )
    task_file(folder, "prepared", "process_docs: !function helpers.prepare\n" + CHOICE)
    model = ("-m", f"hf:{tiny_gpt2_dir}", "--include-path", folder, "--limit", "2")
    plain = cli("run", *model, "-t", "reviews", "-o", tmp_path / "plain")
    assert plain.exit_code == 0, plain.output
    assert not marker.exists()  # another task's module in the folder is never imported
    refused(
        cli("run", *model, "-t", "prepared", "-o", tmp_path / "refused"),
        f"the task files run Python ({folder / 'prepared.yaml'}:7: helpers.prepare): give --trust-task-code to run it",
    )
    assert not marker.exists() and not (tmp_path / "refused").exists()
    out = tmp_path / "trusted"
    trusted = cli("run", *model, "-t", "prepared", "--trust-task-code", "-o", out)
    assert trusted.exit_code == 0, trusted.output
    assert marker.exists()
    refused(
        cli("run", "--resume", "-o", out),
        f"{out / 'run.json'}: trust_task_code: the run was started with --trust-task-code; --resume does not give "
        "that consent again for you: add --trust-task-code to run that code",
    )
    assert cli("run", "--resume", "-o", out, "--trust-task-code").exit_code == 0


@pytest.mark.slow
def test_a_task_that_runs_the_model_s_code_needs_its_own_consent(cli, tmp_path, folder, tiny_gpt2_dir):
    file = task_file(folder, "executes", "unsafe_code: true\n" + GENERATION, QUESTIONS)
    model = ("-m", f"hf:{tiny_gpt2_dir}", "--include-path", folder, "-t", "executes", "--limit", "1")
    refused(
        cli("run", *model, "-o", tmp_path / "refused"),
        f"{file}: unsafe_code: the task runs the code the model writes, on this machine (not in a sandbox): "
        "give --confirm-run-unsafe-code to run it",
    )
    confirmed = cli("run", *model, "--confirm_run_unsafe_code", "-o", tmp_path / "confirmed")
    assert confirmed.exit_code == 0, confirmed.output


def test_task_files_and_rueval_s_tasks_run_as_two_runs(cli, tmp_path, folder):
    refused(
        cli("run", "-m", "hf:some/model", "--include-path", folder, "-t", "reviews,rcb", "-o", tmp_path / "out"),
        "rueval's tasks (rcb) and lm-eval's task files (reviews) run as two runs: name one kind in each",
    )
    refused(
        cli("run", "--include-path", folder, "-t", "reviews", "-o", tmp_path / "out"),
        "task files are asked of a language model (-m hf:..., vllm:..., openai:...), not majority",
    )
    refused(
        cli("run", "-m", "hf:some/model", "--include-path", folder, "-t", "reviews", "--episodes", "5"),
        "--episodes: rueval's options for its own tasks; a task file says its data, prompts and splits",
    )
