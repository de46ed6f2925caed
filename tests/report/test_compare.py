import json
import math
import re
import shutil

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.contingency_tables import mcnemar
from support import read_jsonl, read_samples, write_jsonl

TASK_LIST = "rcb,muserc,rucos,sit_ethics,winograd"
SIGNIFICANT_ROW = re.compile(r"\d\.\d{3} \*")  # a p-value followed by the significance mark


@pytest.fixture
def two_runs(cli, tmp_path):
    """Two real runs with different models on the same bundled samples."""
    run_a, run_b = tmp_path / "majority", tmp_path / "random"
    assert cli("run", "-t", TASK_LIST, "-m", "majority", "-o", run_a).exit_code == 0
    assert cli("run", "-t", TASK_LIST, "-m", "random", "--seed", "1", "-o", run_b).exit_code == 0
    return run_a, run_b


def test_compare_reports_each_common_task_and_writes_json(cli, two_runs, tmp_path):
    run_a, run_b = two_runs
    result = cli("compare", run_a, run_b, "-o", tmp_path / "compare.json")
    assert result.exit_code == 0, result.stderr
    for name in TASK_LIST.split(","):
        assert name in result.stdout
    comparison = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))
    assert list(comparison["tasks"]) == TASK_LIST.split(",")
    assert comparison["run_a"]["model"] == "majority" and comparison["run_b"]["model"] == "random"
    summary_a = json.loads((run_a / "results.json").read_text(encoding="utf-8"))
    summary_b = json.loads((run_b / "results.json").read_text(encoding="utf-8"))
    for name, task in comparison["tasks"].items():
        assert task["n"] == summary_a["tasks"][name]["n"]
        assert set(task["metrics"]) == {*summary_a["tasks"][name]["metrics"], "score"}
        for metric, d in task["metrics"].items():
            # recomputed from the predictions files, equal to what each run recorded
            recorded_a = summary_a["tasks"][name]["score" if metric == "score" else "metrics"]
            recorded_b = summary_b["tasks"][name]["score" if metric == "score" else "metrics"]
            assert d["a"] == pytest.approx(recorded_a if metric == "score" else recorded_a[metric])
            assert d["b"] == pytest.approx(recorded_b if metric == "score" else recorded_b[metric])
            assert d["diff"] == pytest.approx(d["a"] - d["b"])
            assert d["ci"][0] <= d["ci"][1] and 0 < d["p_value"] <= 1


def test_compare_marks_significant_differences_only(cli, two_runs, tmp_path):
    run_a, _ = two_runs
    oracle = tmp_path / "oracle"
    shutil.copytree(run_a, oracle)
    for name in ("rcb", "muserc"):  # the oracle predicts the gold everywhere
        path = oracle / "predictions" / f"{name}.jsonl"
        write_jsonl(path, [{**row, "prediction": row["gold"]} for row in read_jsonl(path)])
    result = cli("compare", run_a, oracle, "-o", tmp_path / "c.json")
    assert result.exit_code == 0, result.stderr
    comparison = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    accuracy = comparison["tasks"]["rcb"]["metrics"]["accuracy"]
    assert accuracy["b"] == 100 and accuracy["diff"] < 0 and accuracy["ci"][1] < 0 and accuracy["p_value"] < 0.05
    muserc = comparison["tasks"]["muserc"]["metrics"]
    assert muserc["question_em"]["p_value"] < 0.05  # questions resampled as units
    assert all(d["p_value"] == 1 for d in comparison["tasks"]["winograd"]["metrics"].values())  # unchanged
    assert SIGNIFICANT_ROW.search(result.stdout)

    same = cli("compare", run_a, run_a)
    assert same.exit_code == 0 and not SIGNIFICANT_ROW.search(same.stdout)


def test_a_seed_or_a_number_of_resamples_out_of_range_is_one_line_before_any_work(cli, two_runs, tmp_path):
    for flags, said in (
        (("--seed", "-5"), "error: --seed -5: expected a whole number from 0 to 4294967295"),
        (("--seed", str(2**70)), f"error: --seed {2**70}: expected a whole number from 0 to 4294967295"),
        (("--resamples", "99999999999"), "error: --resamples 99999999999: expected a whole number from 1 to 100,000"),
    ):
        result = cli("compare", *two_runs, *flags, "-o", tmp_path / "c.json")
        assert result.exit_code == 2 and result.stderr == said + "\n", result.output
    assert not (tmp_path / "c.json").exists()


def test_compare_needs_run_directories(cli, two_runs, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("compare", two_runs[0], empty)
    assert result.exit_code == 2
    assert "no results.json" in result.stderr and "Traceback" not in result.stderr


def test_compare_needs_a_common_task(cli, tmp_path):
    assert cli("run", "-t", "rcb", "-o", tmp_path / "a").exit_code == 0
    assert cli("run", "-t", "parus", "-o", tmp_path / "b").exit_code == 0
    result = cli("compare", tmp_path / "a", tmp_path / "b")
    assert result.exit_code == 2
    assert "share no task" in result.stderr


def test_compare_refuses_runs_on_different_examples(cli, two_runs, tmp_path):
    run_a, _ = two_runs
    assert cli("run", "-t", "rcb", "--limit", "5", "-o", tmp_path / "short").exit_code == 0
    result = cli("compare", run_a, tmp_path / "short")
    assert result.exit_code == 2
    assert "rcb.jsonl" in result.stderr and "different data" in result.stderr

    edited = tmp_path / "edited"
    shutil.copytree(run_a, edited)
    path = edited / "predictions" / "rcb.jsonl"
    rows = read_jsonl(path)
    rows[2]["gold"] = next(label for label in ("entailment", "neutral") if label != rows[2]["gold"])
    write_jsonl(path, rows)
    result = cli("compare", run_a, edited)
    assert result.exit_code == 2
    assert "rcb.jsonl:3: field 'gold'" in result.stderr and "different examples" in result.stderr


def test_compare_reports_malformed_predictions(cli, two_runs, tmp_path):
    run_a, _ = two_runs
    broken = tmp_path / "broken"
    shutil.copytree(run_a, broken)
    path = broken / "predictions" / "winograd.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = '{"idx": 1, "prediction": 0'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("compare", run_a, broken)
    assert result.exit_code == 2
    assert "winograd.jsonl:2: malformed JSON" in result.stderr

    lines[1] = json.dumps({"idx": 1, "prediction": 0, "gold": 7})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("compare", run_a, broken)
    assert result.exit_code == 2
    assert "winograd.jsonl:2: field 'gold': unknown label 7" in result.stderr


def connor_n(d: float, p_d: float) -> float:
    """Connor (1987)'s paired-proportions sample size at 5% two-sided and 80% power, as the docs write it."""
    z_a, z_b = norm.ppf(0.975), norm.ppf(0.8)
    return (z_a * math.sqrt(p_d) + z_b * math.sqrt(p_d - d**2)) ** 2 / d**2


def test_right_or_wrong_metrics_are_decided_by_mcnemar_the_rest_by_the_bootstrap(cli, two_runs, tmp_path):
    run_a, run_b = two_runs
    assert cli("compare", run_a, run_b, "-o", tmp_path / "c.json").exit_code == 0
    comparison = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    rows_a, rows_b = (read_jsonl(run / "predictions" / "rcb.jsonl") for run in two_runs)
    right_a = [row["prediction"] == row["gold"] for row in rows_a]
    right_b = [row["prediction"] == row["gold"] for row in rows_b]
    a_only = sum(a and not b for a, b in zip(right_a, right_b))
    b_only = sum(b and not a for a, b in zip(right_a, right_b))
    rcb = comparison["tasks"]["rcb"]
    accuracy = rcb["metrics"]["accuracy"]
    assert accuracy["test"] == "McNemar exact" and accuracy["discordant"] == [a_only, b_only]
    table = [
        [sum(a and b for a, b in zip(right_a, right_b)), a_only],
        [b_only, sum(not (a or b) for a, b in zip(right_a, right_b))],
    ]
    assert accuracy["p_value"] == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-10)
    assert rcb["metrics"]["avg_f1"]["test"] == rcb["metrics"]["score"]["test"] == "paired bootstrap"
    assert "discordant" not in rcb["metrics"]["avg_f1"]
    # MuSeRC's answers are scored by question, Ethics' by category: no item-by-item pairs
    assert {d["test"] for task in ("muserc", "sit_ethics") for d in comparison["tasks"][task]["metrics"].values()} == {
        "paired bootstrap"
    }
    assert rcb["discordance"] == pytest.approx((a_only + b_only) / len(rows_a))
    effect = rcb["minimum_detectable_effect"]
    if effect is not None:
        assert connor_n(effect / 100, rcb["discordance"]) == pytest.approx(len(rows_a), abs=1e-6)
    assert rcb["repeated"] == {}  # neither run logged samples


def test_compare_clusters_standard_errors_by_item_over_episodes(cli, tmp_path, tiny_gpt2_dir):
    """An LM run of three 1-shot episodes scores each item three times; its sample log's right/wrong values give
    the same clustered error as statsmodels' cluster-robust OLS on a constant."""
    few_shot, majority = tmp_path / "few_shot", tmp_path / "majority"
    flags = ("-t", "parus", "--limit", "16", "--log-samples")
    result = cli("run", "-m", f"hf:{tiny_gpt2_dir}", *flags, "--shots", "1", "--episodes", "3", "-o", few_shot)
    assert result.exit_code == 0, result.stderr
    assert cli("run", "-m", "majority", *flags, "-o", majority).exit_code == 0
    result = cli("compare", few_shot, majority, "-o", tmp_path / "c.json")
    assert result.exit_code == 0, result.stderr
    (repeats,) = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["tasks"]["parus"]["repeated"]["a"]
    lines = read_samples(few_shot, "parus")
    values = np.array([float(line["correct"]) for line in lines])
    items = np.array([line["idx"] for line in lines])
    fitted = OLS(values, np.ones(len(values))).fit(cov_type="cluster", cov_kwds={"groups": items})
    assert (repeats["k"], repeats["items"], repeats["scores"]) == (1, 16, 48)
    assert repeats["mean"] == pytest.approx(100 * values.mean())
    assert repeats["se"] == pytest.approx(100 * fitted.bse[0], abs=1e-8)
    assert repeats["naive_se"] == pytest.approx(100 * values.std(ddof=1) / math.sqrt(48))
    assert "A scored 16 items 48 times (k=1)" in result.stdout
