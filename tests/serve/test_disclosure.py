"""The board gives away no more than its score: the enumeration attack of issue 35 replayed.

A team uploads a submission on a 20-item PARus gold (two classes, so a submission's right/wrong
pattern is the gold) and reads everything the board publishes about it. The attacker knows rueval's
code, the test texts and the train data (so the reference models' predictions), not the board's secret.
They enumerate every right/wrong pattern with the published score and keep those that agree with
what the board published before the submission (the reference rows' scores on this gold). Then they
weigh each pattern by how likely it makes the rest of what the board published for the submission
(the interval, the differences, the marks, the subset scores): with the secret unknown, the resamples
are random to them, so the weight is a likelihood over secrets, estimated by drawing secrets.

With the secret, at least a quarter of the patterns must remain (their posterior's effective number,
2^entropy): at most 2 bits beyond the score. With the task-name seed of earlier versions, which
anyone can reproduce, the same published numbers cut the patterns far below that.
"""

import math
import re

import numpy as np
import pytest
from board_support import bearer, write_gold, zip_of
from fastapi.testclient import TestClient

from rueval.scoring.decisions import ALPHA
from rueval.scoring.stats import _resampled_metrics, _rng
from rueval.serve.app import create_app
from rueval.serve.auth import add_team
from rueval.serve.db import database_url
from rueval.serve.disclosure import MIN_N, Disclosure, shown
from rueval.serve.gold import Gold
from rueval.serve.grading import bootstrap_seed, honest_columns, task_result
from rueval.serve.secret import load_secret
from rueval.serve.service import ServeConfig, Service
from rueval.serve.worker import Worker

N, RESAMPLES, SECRETS_DRAWN, PATTERNS_SAMPLED = 20, 1000, 80, 200
MODELS = {"majority": "Majority (on this gold)", "heuristic": "Heuristics + majority (on this gold)"}


@pytest.fixture(scope="module", params=[MIN_N, N], ids=["default min-n", "min-n 20: marks published"])
def board(tmp_path_factory, request):
    """A board on a 20-item PARus gold, one public submission right on every other item."""
    root = tmp_path_factory.mktemp("board")
    gold_dir = write_gold(root / "gold", tasks=("parus",))
    store = root / "store"
    config = ServeConfig(gold_dir, store, database_url(None, store), min_n=request.param)
    service = Service.open(config, Gold.load(gold_dir))
    gold = service.gold.tasks["parus"]
    labels = np.array([example.label for example in gold.examples])
    assert len(labels) == N and set(labels) == {0, 1}
    predicted = np.where(np.arange(N) % 2 == 0, labels, 1 - labels)  # 10 of 20 right
    lines = [{"idx": example.idx, "label": int(label)} for example, label in zip(gold.examples, predicted)]
    token = add_team(service.db, "attacker", service.auth.secret)
    with TestClient(create_app(service)) as client:
        answer = client.post(
            "/api/submissions",
            headers=bearer(token),
            files={"file": ("p.zip", zip_of({"PARus.jsonl": lines}))},
            data={"public": "true"},
        )
        assert Worker(service.db, service.gold, service.store, secret=service.auth.secret).score_next()
        id = answer.json()["id"]
        published = {
            "submission": client.get(f"/api/submissions/{id}").json(),
            "leaderboard": client.get("/api/leaderboard").json(),
            "pages": [client.get(path).text for path in ("/", f"/submissions/{id}", "/teams/attacker")],
        }
    yield service, labels, predicted, published
    service.db.close()


def visible_text(page: str) -> str:
    """A page's text, without its style sheet and the level the marks are explained with."""
    return re.sub(r"<[^>]*?>", " ", re.sub(r"<style>.*?</style>", "", page, flags=re.S)).replace("p ≥ 0.05", "")


def resample_counts(seed: int, task) -> np.ndarray:
    """How often each item is drawn in each of the board's resamples for this seed (RESAMPLES x N),
    drawn by rueval's own bootstrap code."""
    columns = {f"item {i}": (lambda sums, i=i: sums[:, i]) for i in range(N)}
    draws = _resampled_metrics(
        np.eye(N),
        lambda sums: {name: column(sums) for name, column in columns.items()},
        np.arange(N),
        RESAMPLES,
        _rng(seed, task),
    )
    return np.stack([draws[name] for name in columns], axis=1)


def published_score(right: np.ndarray) -> np.ndarray:
    """The score the board publishes for each number of items right."""
    return np.array([shown(100 * k / N) for k in range(N + 1)])[right]


def right_where(reference: np.ndarray, predicted: np.ndarray, patterns: np.ndarray) -> np.ndarray:
    """Whether a reference model is right on each item, for each pattern of the submission's (two classes)."""
    return np.where(reference == predicted, patterns, 1 - patterns)


class Attacker:
    """What the board publishes of a submission for each right/wrong pattern, given the resamples,
    as rueval.scoring.stats computes it and rueval.serve.disclosure publishes it: the interval's
    bounds, then (where published) the marks against the reference models."""

    def __init__(self, predicted: np.ndarray, references: dict[str, np.ndarray], marks: bool):
        self.predicted, self.references, self.marks = predicted, references, marks

    def view(self, counts: np.ndarray, patterns: np.ndarray) -> np.ndarray:
        accuracy = 100 * (counts @ patterns.T) / N
        bounds = np.percentile(accuracy, [2.5, 97.5], axis=0).T
        values, where = np.unique(bounds, return_inverse=True)
        columns = [np.array([shown(value) for value in values])[where].reshape(bounds.shape)]
        if self.marks:
            for reference in self.references.values():
                differences = counts @ (patterns - right_where(reference, self.predicted, patterns)).T
                beyond = np.minimum((differences <= 0).sum(axis=0), (differences >= 0).sum(axis=0))
                p_value = np.minimum(1.0, 2 * (beyond + 1) / (RESAMPLES + 1))
                columns.append((p_value < ALPHA)[:, None])
        return np.hstack(columns)

    def observed(self, entry: dict) -> np.ndarray:
        marks = [entry["versus"][model]["distinguishable"] for model in self.references] if self.marks else []
        return np.array([*entry["ci"]["score"], *marks], dtype=float)


def entropy_bits(weights: np.ndarray) -> float:
    p = weights[weights > 0] / weights.sum()
    return float(-(p * np.log2(p)).sum())


def test_a_submission_gives_away_at_most_two_bits_of_gold_beyond_its_score(board):
    service, labels, predicted, published = board
    gold, min_n = service.gold.tasks["parus"], service.config.min_n
    entry = published["submission"]["tasks"]["parus"]
    # every field published for the submission is one the attacker uses (a new one fails here)
    assert set(entry) == {"n", "score", "metrics", "ci", "breakdown", "versus", "rules"} and entry["breakdown"] == {}
    marks = N >= min_n
    for test in entry["versus"].values():
        assert set(test) == ({"diff", "distinguishable"} if marks else {"diff"})
    assert entry["rules"]["unfired_score"] is None and entry["rules"]["unfired"] < min_n  # a subset of < min_n
    assert entry["metrics"] == {"accuracy": entry["score"]} and entry["ci"]["accuracy"] == entry["ci"]["score"]
    [row] = published["leaderboard"]["rows"]
    assert row["tasks"] == {"parus": entry["score"]} and row["total"] == published["submission"]["total"]
    alike = [model for model, test in entry["versus"].items() if not test.get("distinguishable", True)]
    assert row["not_distinguishable_from"] == ({"parus": alike} if marks and alike else {})
    for page in published["pages"]:  # the pages print the same numbers, at most one decimal
        assert not re.search(r"\d\.\d\d", visible_text(page))

    everything = (np.arange(2**N)[:, None] >> np.arange(N)) & 1
    patterns = everything[published_score(everything.sum(axis=1)) == entry["score"]]
    alone = len(patterns)
    assert alone == math.comb(N, 10)  # 184,756: the score alone
    # what the board published before the submission: the reference models' scores on this gold
    scores = {row["name"]: row["tasks"]["parus"] for row in published["leaderboard"]["references"]}
    references = {model: np.array(service.references[model]["parus"].predictions) for model in MODELS}
    before = np.ones(len(patterns), bool)
    for model, title in MODELS.items():
        right = right_where(references[model], predicted, patterns).sum(axis=1)
        before &= published_score(right) == scores[title]
        # the published difference follows from the two scores: it tells nothing more
        assert entry["versus"][model]["diff"] == shown(entry["score"] - scores[title])
    patterns = patterns[before]
    truth = (labels == predicted).astype(int)
    assert (patterns == truth).all(axis=1).any()

    attacker = Attacker(predicted, references, marks)
    observed = attacker.observed(entry)
    # the attacker's model is right: with the board's secret it reproduces what was published
    secret = load_secret(service.config.secret_path, service.config.store, create=False)
    with_secret = resample_counts(bootstrap_seed(secret, "parus", predicted.tolist()), gold.task)
    assert (attacker.view(with_secret, truth[None]) == observed).all()

    # without it: the likelihood of what was published for each pattern, over drawn secrets
    rng = np.random.default_rng(35)
    sample = patterns[rng.choice(len(patterns), min(PATTERNS_SAMPLED, len(patterns)), replace=False)]
    matches = np.zeros(len(sample))
    for _ in range(SECRETS_DRAWN):
        counts = resample_counts(bootstrap_seed(rng.bytes(32), "parus", predicted.tolist()), gold.task)
        matches += (attacker.view(counts, sample) == observed).all(axis=1)
    assert matches.sum() > 0
    kept = 2 ** entropy_bits(matches) / len(sample)  # the posterior's effective share of the patterns
    assert kept >= 0.25, f"{kept:.2f} of {len(patterns):,} patterns kept: more than 2 bits given away"

    # the task-name seed of earlier versions: anyone redoes the resamples and filters exactly
    computed = {model: service.references[model]["parus"].predictions for model in service.references}
    old_entry = {
        **task_result(gold, predicted.tolist(), seed=0).to_json(),
        **honest_columns(gold.task, gold.examples, predicted.tolist(), computed, seed=0),
    }
    old_observed = attacker.observed(Disclosure(min_n).task(old_entry))
    old_counts = resample_counts(0, gold.task)
    assert (attacker.view(old_counts, truth[None]) == old_observed).all()
    consistent = sum(
        (attacker.view(old_counts, chunk) == old_observed).all(axis=1).sum()
        for chunk in np.array_split(patterns, max(1, len(patterns) // 5000))
    )
    assert consistent < len(patterns) / 4, f"the task-name seed left {consistent:,} of {len(patterns):,}"
    print(
        f"score alone {alone:,}; with the reference rows {len(patterns):,}; secret: {kept:.2f} kept; "
        f"task-name seed: {consistent:,} kept"
    )
