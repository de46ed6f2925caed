"""What rueval adds to a task-file run, from lm-eval's own per-sample scores: results.json with lm-eval's
metrics x100 and rueval's bootstrap intervals, the paired compare of two runs, the report."""

from __future__ import annotations

import csv
import json
import zlib

import numpy as np
import pytest
from support import read_jsonl
from task_files import CHOICE, GENERATION, QUESTIONS, task_file
from typer.testing import CliRunner

from rueval.cli import app
from rueval.report.compare import compare_runs
from rueval.report.html import write_report
from rueval.report.leaderboard import write_leaderboard
from rueval.results import RunResult
from rueval.scoring.decisions import MCNEMAR, minimum_detectable_effect, paired_outcomes
from rueval.scoring.stats import item_bootstrap_ci, paired_item_bootstrap

STRICT = """\
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: "(\\\\d+)"
      - function: take_first
"""


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_gpt2_dir):
    """Two runs of the same task files: rueval's spelling (TAPE's start token) and lm-eval's (none)."""
    root = tmp_path_factory.mktemp("task_file_results")
    folder = root / "tasks"
    task_file(folder, "reviews", CHOICE + "  - metric: acc_norm\n")
    task_file(folder, "sums", GENERATION + STRICT, QUESTIONS)
    group = "group: suite\ntask: [reviews, sums]\naggregate_metric_list:\n  - metric: acc\n"
    (folder / "suite.yaml").write_text(group, encoding="utf-8")
    files = ("--include-path", folder, "-t", "suite", "--log-samples")
    models = {"a": ("-m", f"hf:{tiny_gpt2_dir}"), "b": ("--model", "hf", "--model_args", f"pretrained={tiny_gpt2_dir}")}
    outs = {}
    for name, model in models.items():
        outs[name] = root / name
        result = CliRunner().invoke(app, [str(a) for a in ("run", *model, *files, "-o", outs[name])])
        assert result.exit_code == 0, result.output
    return outs


def logged(out, task):
    """lm-eval's own sample log of the task, in doc_id order."""
    (path,) = (out / "samples").glob(f"samples_{task}_*.jsonl")
    return sorted(read_jsonl(path), key=lambda sample: sample["doc_id"])


@pytest.mark.slow
def test_results_json_holds_lm_eval_s_metrics_x100_with_rueval_s_intervals(runs):
    out = runs["a"]
    document, results = read(out / "results_lmeval.json")["results"], RunResult.read(out)
    assert list(results.tasks) == ["reviews", "sums", "suite"]
    assert results.tasks["reviews"].metrics == {
        "acc": document["reviews"]["acc,none"] * 100,
        "acc_norm": document["reviews"]["acc_norm,none"] * 100,
    }
    assert results.tasks["sums"].metrics == {
        "exact_match,strict-match": document["sums"]["exact_match,strict-match"] * 100
    }
    for name, metric, key in (
        ("reviews", "acc", "acc"),
        ("reviews", "acc_norm", "acc_norm"),
        ("sums", "exact_match,strict-match", "exact_match"),
    ):
        result = results.tasks[name]
        assert result.benchmark == "lm-eval" and result.score == next(iter(result.metrics.values()))
        assert result.ci[metric] == item_bootstrap_ci([s[key] for s in logged(out, name)], None, name, seed=0)
        assert result.ci[metric][0] <= result.metrics[metric] <= result.ci[metric][1]
    suite = results.tasks["suite"]
    assert (
        suite.subtasks == ["reviews", "sums"]
        and suite.n == 8 + 6
        and suite.metrics == {"acc": document["suite"]["acc,none"] * 100}
    )
    rows = read_jsonl(out / "predictions" / "sums.jsonl")
    assert [(r["idx"], r["gold"], r["values"]) for r in rows] == [
        (s["doc_id"], s["target"], {"exact_match,strict-match": s["exact_match"]}) for s in logged(out, "sums")
    ]
    assert [r["prediction"] for r in rows] == [{"strict-match": s["filtered_resps"]} for s in logged(out, "sums")]


def test_an_aggregation_other_than_the_mean_is_lm_eval_s_function_on_each_resample():
    from lm_eval.api.registry import get_aggregation

    f1 = get_aggregation("f1")
    pairs = [(i % 2, (i // 3) % 2) for i in range(12)]
    rng = np.random.default_rng([7, zlib.crc32(b"pairs")])
    drawn = rng.integers(0, len(pairs), size=(300, len(pairs)))
    by_hand = np.percentile([100 * f1([pairs[i] for i in row]) for row in drawn], [2.5, 97.5])
    assert item_bootstrap_ci(pairs, f1, "pairs", resamples=300, seed=7) == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.slow
def test_compare_pairs_two_task_file_runs_by_doc_id(runs):
    comparison = compare_runs(runs["a"], runs["b"], resamples=500, seed=3)
    assert set(comparison["tasks"]) == {"reviews", "sums"}  # a group is paired through its tasks
    results = {name: RunResult.read(out).tasks["reviews"] for name, out in runs.items()}
    values = {name: [s["acc"] for s in logged(out, "reviews")] for name, out in runs.items()}
    paired = paired_item_bootstrap(
        results["a"].metrics["acc"], results["b"].metrics["acc"], values["a"], values["b"], None, "reviews", 500, seed=3
    )
    right = paired_outcomes(values["a"], values["b"])  # acc is right or wrong per document: McNemar decides
    found = comparison["tasks"]["reviews"]
    assert found["n"] == 8 and found["repeated"] == {} and found["discordance"] == right.discordance
    assert found["minimum_detectable_effect"] == pytest.approx(100 * minimum_detectable_effect(8, right.discordance))
    assert found["metrics"]["acc"] == paired.as_dict() | {
        "p_value": right.p_value,
        "test": MCNEMAR,
        "discordant": [right.a_only, right.b_only],
    }
    assert paired.diff == results["a"].metrics["acc"] - results["b"].metrics["acc"]


@pytest.mark.slow
def test_the_report_shows_task_file_tasks_with_their_intervals(runs, tmp_path):
    written = write_report([runs["a"], runs["b"]], tmp_path / "report.html")
    page = written.html.read_text(encoding="utf-8")
    low, high = RunResult.read(runs["a"]).tasks["reviews"].ci["acc"]
    assert "<td class=text>reviews</td>" in page and "exact_match,strict-match" in page
    assert f"[{low:.1f}, {high:.1f}]" in page
    assert '<section id="lm-eval"><h2>lm-eval task files</h2>' in page and "Mean score (2 tasks)" in page


@pytest.mark.slow
def test_the_leaderboard_ranks_task_file_runs_among_themselves_by_their_mean_score(runs, tmp_path):
    ((board, _, table),) = write_leaderboard([runs["a"], runs["b"]], tmp_path)
    assert board.benchmark.name == "lm-eval" and board.tasks == ("reviews", "sums", "suite")
    tasks = {name: RunResult.read(out).tasks for name, out in runs.items()}
    means = {name: (scored["reviews"].score + scored["sums"].score) / 2 for name, scored in tasks.items()}
    ranked = sorted(means, key=lambda name: -means[name])
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [(row["rank"], row["source"]) for row in rows] == [("1", str(runs[ranked[0]])), ("2", str(runs[ranked[1]]))]
    assert [float(row["mean score"]) for row in rows] == pytest.approx([means[name] for name in ranked], abs=1e-4)


@pytest.mark.slow
def test_a_damaged_task_file_run_is_one_line_naming_file_and_field(runs, tmp_path, cli):
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(runs["a"], damaged)
    document = read(damaged / "results.json")
    document["tasks"]["reviews"]["aggregation"]["acc"] = 1
    (damaged / "results.json").write_text(json.dumps(document), encoding="utf-8")
    result = cli("report", damaged, "-o", tmp_path / "report.html")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {damaged / 'results.json'}: field 'tasks.reviews.aggregation.acc': expected a string, got 1"
    ]
    shutil.copyfile(runs["a"] / "results.json", damaged / "results.json")
    rows = read_jsonl(damaged / "predictions" / "reviews.jsonl")
    del rows[2]["values"]["acc_norm"]
    (damaged / "predictions" / "reviews.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    result = cli("compare", runs["a"], damaged)
    assert result.exit_code == 2
    file = damaged / "predictions" / "reviews.jsonl"
    assert result.stderr.strip().splitlines() == [
        f"error: {file}:3: field 'values.acc_norm': missing: the task's result has this metric"
    ]
