"""A submission is scored by rueval's own metrics, exactly as `rueval run` scores the same
predictions, and gets the honest-board columns: the paired tests against the majority class and the
heuristics, and its agreement with the heuristics' rules."""

import secrets

import pytest
from board_support import members_of, zip_of

from rueval.results import RunResult
from rueval.serve import baselines
from rueval.serve.grading import bootstrap_seed, rule_agreement, score_submission
from rueval.serve.upload import check_submission

SECRET = secrets.token_bytes(32)


@pytest.fixture(scope="module")
def references(gold):
    computed: dict = {}
    for name, gold_task in gold.tasks.items():
        for model, baseline in baselines.compute(gold_task).items():
            computed.setdefault(model, {})[name] = baseline
    return computed


@pytest.mark.parametrize("model", ["heuristic", "majority"])
def test_a_submission_scores_what_rueval_run_scores_on_the_same_gold(
    gold, gold_dir, references, submission_zip, cli, tmp_path, model
):
    scored = score_submission(gold, check_submission(submission_zip(model), gold), references, "s", SECRET)
    result = cli("run", "-m", model, "-t", "rsg", "--data", gold_dir, "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    run = RunResult.read(tmp_path / "run")
    for name, entry in scored.tasks.items():
        assert entry["metrics"] == run.tasks[name].metrics, name
        low, high = entry["ci"]["score"]
        assert low <= entry["score"] <= high, name
    assert scored.run.tasks["lidirus"].breakdown == run.tasks["lidirus"].breakdown  # per-feature MCC
    assert scored.total == pytest.approx(run.rsg_total)
    # the resamples are the board's own (seeded by its secret), not those of `rueval run` (seed 0)
    assert any(entry["ci"] != run.tasks[name].ci for name, entry in scored.tasks.items())


def test_the_resamples_are_seeded_by_the_secret_and_the_predictions(gold, references, submission_zip):
    checked = check_submission(submission_zip("heuristic"), gold)
    first, again = (score_submission(gold, checked, references, "h", SECRET) for _ in range(2))
    other = score_submission(gold, checked, references, "h", secrets.token_bytes(32))
    assert [entry["ci"] for entry in first.tasks.values()] == [entry["ci"] for entry in again.tasks.values()]
    assert any(first.tasks[name]["ci"] != other.tasks[name]["ci"] for name in first.tasks)
    seeds = {bootstrap_seed(SECRET, "parus", predictions) for predictions in ([0, 1], [1, 0])}
    assert len(seeds) == 2 and bootstrap_seed(SECRET, "rcb", [0, 1]) not in seeds
    assert all(seed.bit_length() > 200 for seed in seeds)  # 256 bits: no 32-bit seed to search


def test_the_majority_class_cannot_be_told_from_itself_and_the_gold_can(gold, references, submission_zip):
    majority = score_submission(gold, check_submission(submission_zip("majority"), gold), references, "m", SECRET)
    for entry in majority.tasks.values():
        assert entry["versus"]["majority"] == {"diff": 0.0, "ci": [0.0, 0.0], "p_value": 1.0, "distinguishable": False}
    members = members_of(submission_zip("majority"))
    for line, example in zip(members["TERRa.jsonl"], gold.tasks["terra"].examples):
        line["label"] = example.label  # every answer right
    perfect = score_submission(
        gold, check_submission(zip_of({"TERRa.jsonl": members["TERRa.jsonl"]}), gold), references, "p", SECRET
    )
    versus = perfect.tasks["terra"]["versus"]["majority"]
    assert perfect.tasks["terra"]["score"] == 100 and versus["diff"] == 50 and versus["distinguishable"]
    assert perfect.total is None  # partial: no total


def test_the_heuristics_agree_with_themselves_wherever_a_rule_fires(gold, references, submission_zip):
    scored = score_submission(gold, check_submission(submission_zip("heuristic"), gold), references, "h", SECRET)
    fired = {name: entry["rules"] for name, entry in scored.tasks.items() if entry["rules"]["fired"]}
    assert fired, "no rule fired on the samples"
    for name, rules in fired.items():
        assert rules["agreement"] == 100.0, name
        assert rules["fired"] + rules["unfired"] == len(gold.tasks[name].examples)


def test_rule_agreement_counts_the_submissions_answers_where_a_rule_fires(gold):
    task = gold.tasks["rcb"].task
    examples = gold.tasks["rcb"].examples[:4]
    rules = ["neutral", None, "entailment", None]
    agreement = rule_agreement(task, examples, ["neutral", "neutral", "contradiction", examples[3].label], rules)
    assert (agreement["fired"], agreement["agreement"], agreement["unfired"]) == (2, 50.0, 2)
    assert agreement["unfired_score"] is not None


def test_the_reference_models_are_computed_once_per_gold_and_stored(service, gold):
    before = baselines.load(service.db, gold)
    assert set(before) == {"majority", "heuristic", "rules"} and set(before["majority"]) == set(gold.tasks)
    again = baselines.ensure(service.db, gold)
    assert again["heuristic"]["rcb"] == before["heuristic"]["rcb"]
