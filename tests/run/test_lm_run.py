"""Language models end to end: every task, few-shot episodes, and a killed run resumed."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from support import read_jsonl

from rueval.core.errors import RuevalError
from rueval.data.local import SAMPLES_DIR
from rueval.tasks import TASKS, Example, resolve_tasks
from rueval.tasks.fewshot import episode_demos
from rueval.tasks.prompts import PROMPTS


@pytest.fixture
def short_generations(monkeypatch):
    """A random model never stops by itself: cap MultiQ and CheGeKa at a few tokens to keep tests quick."""
    for name in ("multiq", "chegeka"):
        monkeypatch.setattr(PROMPTS[name], "max_new_tokens", (4, 4))


def valid(task, prediction):
    if task.kind == "classification":
        return prediction in task.labels
    if task.kind == "multilabel":
        return len(prediction) == len(task.categories) and set(prediction) <= {0, 1}
    return isinstance(prediction, str)


@pytest.mark.parametrize("scoring", ["loglik", "ppl"])
def test_every_task_runs_with_few_shot_episodes(cli, tmp_path, tiny_gpt2_dir, short_generations, scoring):
    out = tmp_path / "out"
    result = cli(
        "run",
        "-m",
        f"hf:{tiny_gpt2_dir}",
        "-t",
        "all",
        "--limit",
        "2",
        "--shots",
        "0,1",
        "--episodes",
        "2",
        "--scoring",
        scoring,
        "-o",
        out,
    )
    assert result.exit_code == 0, result.stderr
    assert "2 ep." in result.stdout and " ± " in result.stdout  # each k's mean ± std over its episodes
    summary = json.loads((out / "results.json").read_text())
    assert list(summary["tasks"]) == [task.name for task in resolve_tasks("all")] and summary["rsg_total"] is not None
    assert summary["model_identity"].startswith(f"hf:{tiny_gpt2_dir}@")
    for name, task_result in summary["tasks"].items():
        task = TASKS[name]
        shots = task_result["shots"]
        assert set(shots) == {"0", "1"} and len(shots["0"]["episodes"]) == 1 and len(shots["1"]["episodes"]) == 2
        episode_scores = [e["score"] for e in shots["1"]["episodes"]]
        assert shots["1"]["score"] == pytest.approx(sum(episode_scores) / 2)
        assert shots["1"]["score_std"] == pytest.approx(abs(episode_scores[0] - episode_scores[1]) / 2)
        assert shots["1"]["metrics"].keys() == shots["1"]["std"].keys() == set(task.metrics)
        assert task_result["metrics"] == shots["0"]["episodes"][0]["metrics"]
        assert ("metrics_norm" in shots["0"]) == (scoring == "loglik" and name not in ("multiq", "chegeka"))
        rows = read_jsonl(out / "predictions" / f"{name}.jsonl")
        assert all(valid(task, tuple(r["prediction"]) if task.kind == "multilabel" else r["prediction"]) for r in rows)


def test_shots_need_a_language_model(cli, tmp_path):
    result = cli("run", "-t", "rcb", "--shots", "0,4", "-o", tmp_path / "out")
    assert result.exit_code == 2 and "need a language model" in result.stderr


def test_episodes_come_from_the_episode_field_when_present():
    train = [Example(idx=i, fields={"episode": [10, 11] if i < 2 else [11]}, label=0) for i in range(5)]
    assert [e.idx for e in episode_demos(train, 2, 0, 0, "winograd")] == [0, 1]  # episode 10 has two members
    plain = [Example(idx=i, fields={}, label=i % 2) for i in range(20)]
    first = episode_demos(plain, 4, 0, 0, "winograd")
    assert first == episode_demos(plain, 4, 0, 0, "winograd") and first != episode_demos(plain, 4, 1, 0, "winograd")
    assert len({e.idx for e in first}) == 4


def rows(cache_dir):
    with sqlite3.connect(cache_dir / "requests" / "requests.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


@pytest.mark.slow  # launches and kills processes
def test_killed_run_resumes_without_recomputing_or_losing_anything(tmp_path, tiny_gpt2_dir):
    tasks = "parus,rcb,terra,danetqa,russe,rwsd,lidirus"
    args = ["run", "-m", f"hf:{tiny_gpt2_dir}", "-t", tasks, "--shots", "0,1", "--episodes", "3"]

    def rueval(out, cache, *extra):
        env = {**os.environ, "RUEVAL_CACHE_DIR": str(cache)}
        return subprocess.Popen(
            [sys.executable, "-m", "rueval", *extra, "-o", str(out)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def committed():  # a task is finished once run.json (replaced whole, never half-written) records its files
        return json.loads((out / "run.json").read_text())["files"] if (out / "run.json").exists() else {}

    # the tasks after parus finish within milliseconds of it: a kill that comes after the last of them (a
    # loaded machine) is tried again in fresh folders
    for attempt in range(3):
        out, cache = tmp_path / f"killed{attempt}", tmp_path / f"cache{attempt}"
        process = rueval(out, cache, *args)
        deadline = time.time() + 240
        while "parus" not in committed() and process.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        assert process.wait() == -signal.SIGKILL, "the run ended before it could be killed"
        if not (out / "results.json").exists():
            break
    assert not (out / "results.json").exists(), "every kill came after the run's last task"
    # the next tasks follow within milliseconds: the kill may fall between a task's file and its record
    finished = {f"{name}.json": (out / "tasks" / f"{name}.json").read_bytes() for name in committed()}
    unrecorded = {p.name for p in (out / "tasks").glob("*.json")} - set(finished)
    computed_before = rows(cache)

    resumed = rueval(out, cache, "run", "--resume")
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    summary = json.loads((out / "results.json").read_text())
    assert {name: (out / "tasks" / name).read_bytes() for name in finished} == finished  # reused as they were
    for name in unrecorded:  # computed again, and said so
        assert any(f"{name}: not recorded in run.json" in note for note in summary["notes"]), summary["notes"]
    recomputed = sum(
        summary["tasks"][p[:-5]]["requests_computed"] for p in {f"{t}.json" for t in summary["tasks"]} - set(finished)
    )
    assert rows(cache) == computed_before + recomputed  # every request computed once over both runs

    reference = rueval(tmp_path / "whole", tmp_path / "cache2", *args)
    assert reference.wait() == 0
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    for name in summary["tasks"]:
        assert summary["tasks"][name]["shots"] == whole["tasks"][name]["shots"]
        assert read_jsonl(out / "predictions" / f"{name}.jsonl") == read_jsonl(
            tmp_path / "whole" / "predictions" / f"{name}.jsonl"
        )


def test_requests_pooled_across_tasks_k_and_episodes_are_computed_and_forwarded_once(tiny_gpt2_dir, monkeypatch):
    from rueval.data import Split, TaskData
    from rueval.run.predict import predict_tasks, settings_of
    from rueval.solvers import make_solver

    solver = make_solver(f"hf:{tiny_gpt2_dir}")
    model = solver.engine.model
    # LiDiRus is asked with TERRa's prompt: the same pair gives the same requests in both tasks, and a
    # one-example train split gives both 1-shot episodes the same demonstration.
    pair, demo = ("Кот спит на диване.", "Кот спит."), ("Идёт дождь.", "На улице сухо.")

    def data(task, names):
        def split(name, sentences, label):
            example = Example(idx=0, fields=dict(zip(names, sentences)), label=label)
            return Split(task, name, [example], f"{task.name}/{name}.jsonl", "0" * 64)

        return TaskData(split("test", pair, "entailment"), split("train", demo, "not_entailment"))

    pending = [
        (TASKS["terra"], data(TASKS["terra"], ("premise", "hypothesis"))),
        (TASKS["lidirus"], data(TASKS["lidirus"], ("sentence1", "sentence2"))),
    ]
    settings = settings_of([0, 1], episodes=2)
    asked = [
        r
        for task, d in pending
        for s in settings
        for r in solver.plan(task, d.train.examples, d.eval.examples, s).requests
    ]
    sent = []
    compute = model.loglikelihood
    monkeypatch.setattr(
        model, "loglikelihood", lambda requests, on_done=None: sent.append(list(requests)) or compute(requests, on_done)
    )
    before = model.stats.forwarded_tokens
    predicted = {p.task.name: p for p in predict_tasks(solver, pending, lambda task: settings)}

    assert len(asked) == 12 and len(set(asked)) == 4  # 2 tasks x (k=0, two k=1 episodes) x 2 options
    assert len(sent) == 1 and sorted(map(repr, sent[0])) == sorted(map(repr, set(asked)))  # one pooled call
    encoded = [ids for ids, _ in map(model.encode, sent[0])]
    prefixes = {tuple(ids[: i + 1]) for ids in encoded for i in range(len(ids))}
    extended = {p for p in prefixes if any(len(ids) > len(p) and tuple(ids[: len(p)]) == p for ids in encoded)}
    assert model.stats.forwarded_tokens - before == len(extended)  # every shared prefix forwarded once
    assert predicted["terra"].by_setting == predicted["lidirus"].by_setting
    assert predicted["terra"].requests_computed == 4 and predicted["lidirus"].requests_computed == 0


@pytest.mark.slow  # launches and kills processes
def test_a_generation_run_killed_mid_way_keeps_every_finished_answer(tmp_path, tiny_gpt2_dir):
    """MultiQ generates with nucleus sampling; hf: generates one prompt at a time and each answer is
    committed as it finishes, whatever --batch-size says."""
    capped = (
        "import sys; from rueval.tasks.prompts import PROMPTS; from rueval.cli import app; "
        "PROMPTS['multiq'].max_new_tokens = (8, 8); app(sys.argv[1:])"
    )

    def rueval(out, cache, batch_size):
        args = ["run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "multiq", "--batch-size", str(batch_size), "-o", str(out)]
        env = {**os.environ, "RUEVAL_CACHE_DIR": str(cache)}
        return subprocess.Popen([sys.executable, "-c", capped, *args], env=env, stdout=subprocess.DEVNULL)

    def cached_rows(cache):
        try:
            return rows(cache)
        except sqlite3.OperationalError:  # not created yet
            return 0

    total = len(read_jsonl(SAMPLES_DIR / "multiq" / "test.jsonl"))
    cache = tmp_path / "cache"
    process = rueval(tmp_path / "killed", cache, 2)
    deadline = time.time() + 240
    while cached_rows(cache) == 0 and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "the run ended before it could be killed"
    kept = rows(cache)
    assert 0 < kept < total  # only the answer in flight was lost

    assert rueval(tmp_path / "rerun", cache, 2).wait() == 0
    rerun = json.loads((tmp_path / "rerun" / "results.json").read_text())
    assert rerun["tasks"]["multiq"]["requests_computed"] == total - kept and rows(cache) == total
    # texts do not depend on batching or on what the cache held: an uninterrupted run agrees
    assert rueval(tmp_path / "whole", tmp_path / "cache2", 8).wait() == 0
    predictions = [read_jsonl(tmp_path / run / "predictions" / "multiq.jsonl") for run in ("rerun", "whole")]
    assert predictions[0] == predictions[1]


def test_more_episodes_than_the_episode_lists_hold_is_an_error_never_a_repeat():
    train = [Example(idx=i, fields={"episode": [10 + i // 2]}, label=i % 2) for i in range(4)]  # 10, 11: 2-shot
    assert [e.idx for e in episode_demos(train, 2, 1, 0, "winograd")] == [2, 3]
    asked_too_many = r"winograd: 3 2-shot episodes asked for, but the data's episode lists hold 2"
    with pytest.raises(RuevalError, match=asked_too_many):
        episode_demos(train, 2, 2, 0, "winograd")


@pytest.mark.parametrize(
    "train",
    [
        [Example(idx=0, fields={"text": "а", "episode": [7, 7]}, label=1)],  # an id repeated in its list
        [Example(idx=i, fields={"text": "а", "episode": [7]}, label=1) for i in (3, 3)],  # one record on two lines
    ],
)
def test_a_record_listed_twice_in_one_episode_is_an_error_naming_the_episode(train):
    other = Example(idx=9, fields={"text": "б", "episode": [7]}, label=0)
    with pytest.raises(RuevalError, match=r"winograd: train episode 7 lists the record with idx \d twice"):
        episode_demos([*train, other], 2, 0, 0, "winograd")


def test_drawn_episodes_are_independent_with_distinct_demonstrations():
    plain = [Example(idx=i, fields={}, label=i % 2) for i in range(8)]
    episodes = [episode_demos(plain, 6, episode, 0, "winograd") for episode in range(20)]
    assert all(len({e.idx for e in demos}) == 6 for demos in episodes)  # distinct within an episode
    shared = set.intersection(*({e.idx for e in demos} for demos in episodes[:2]))
    assert shared  # a record may appear in several episodes
