"""MERA end to end: a run on MERA's files (either layout) with MERA's settings, its tests without
answers predicted, and the submission zip with every test id."""

from __future__ import annotations

import json
import random
import zipfile
from dataclasses import replace

import pytest
from mera_files import LAYOUTS, rcb, seven_tasks, write_snapshot
from support import read_samples
from typer.testing import CliRunner

import rueval
from rueval.cli import app
from rueval.core.errors import RuevalError
from rueval.models.base import Capabilities, LanguageModel, LoglikelihoodResult
from rueval.results import RunResult
from rueval.run.spec import RunSpec
from rueval.solvers import Setting
from rueval.solvers.lm import GenerationSettings
from rueval.tasks import get_task

SEVEN = "parus,rcb,rwsd,ru_worldtree,ru_openbook,multiq,chegeka"
WITHOUT_VALIDATION = ("ru_worldtree", "ru_openbook", "multiq", "chegeka")


def read_zip(path):
    with zipfile.ZipFile(path) as archive:
        return {name: json.loads(archive.read(name)) for name in archive.namelist()}


# the task folders run as they are (RCB, PARus and RWSD score validation, export predicts their tests);
# the dataset snapshot with --predict-only, as MERA's own scripts run (every test predicted in the run)
RUNS = {"task folders": (), "dataset snapshot": ("--predict-only",)}


@pytest.fixture(scope="module", params=list(RUNS))
def mera_run(request, tmp_path_factory, tiny_gpt2_dir):
    """The seven tasks from MERA's files as MERA publishes them (tests without answers, validation for
    three), run with a language model and exported: (records, run dir, the run's output, zip, options)."""
    base = tmp_path_factory.mktemp("mera-run")
    tasks = seven_tasks()
    data = LAYOUTS[request.param](base / "mera", tasks)
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RUEVAL_CACHE_DIR", str(base / "cache"))
        run = runner.invoke(app, ["run", "--data", str(data), "-t", SEVEN, "-m", f"hf:{tiny_gpt2_dir}",
                                  "-o", str(base / "out"), "--log-samples", *RUNS[request.param]])  # fmt: skip
        assert run.exit_code == 0, run.output
        export = runner.invoke(app, ["export", "--format", "mera", str(base / "out"), "-o", str(base / "sub.zip")])
        assert export.exit_code == 0, export.output
    return tasks, base / "out", run.output, base / "sub.zip", RUNS[request.param]


def test_meras_seven_tasks_run_and_export_every_test_id(mera_run):
    tasks, out, output, submission, options = mera_run
    files = read_zip(submission)
    assert set(files) == {f"{name}.json" for name in tasks}
    for name, splits in tasks.items():
        written = [entry["meta"]["id"] for entry in files[f"{name}.json"]["data"]["test"]]
        assert written == [record["meta"]["id"] for record in splits["test"]], name
    results = RunResult.read(out)
    if options:  # --predict-only: every test predicted
        assert results.tasks == {} and {r.split for r in results.predicted.values()} == {"test"}
        assert len(results.predicted) == 7 and "predicted, not scored (--predict-only)" in output
        return
    assert set(results.predicted) == set(WITHOUT_VALIDATION)  # test without answers, nothing to score instead
    assert {name: r.split for name, r in results.tasks.items()} == {"parus": "val", "rcb": "val", "rwsd": "val"}
    for name in WITHOUT_VALIDATION:
        assert f"note: {name}: " in output and "predicted, not scored (the test split has no answers)" in output


def test_under_meras_settings_multiq_is_generated_greedily_and_stops_at_a_line_break(mera_run):
    _, out, _, submission, _ = mera_run
    samples = read_samples(out, "multiq")
    for sample in samples:
        (arguments,) = sample["arguments"].values()
        assert {key: arguments["arg_1"][key] for key in ("until", "max_gen_toks", "do_sample", "temperature")} == {
            "until": ["\n"], "max_gen_toks": 256, "do_sample": False, "temperature": 0.0}  # fmt: skip
        assert sample["k"] == 0 and arguments["arg_0"].startswith("Текст 1: ")  # MERA's MultiQ: no demonstrations
        assert "\n" not in sample["prediction"] and sample["correct"] is None
    outputs = [e["outputs"] for e in read_zip(submission)["MultiQ.json"]["data"]["test"]]
    assert [o if isinstance(o, str) else o[0]["segment"] for o in outputs] == [s["prediction"] for s in samples]


def test_meras_other_tasks_are_asked_after_one_demonstration(mera_run):
    _, out, _, _, _ = mera_run
    (sample, *_) = read_samples(out, "chegeka")
    prompt = sample["arguments"]["gen_args_0"]["arg_0"]
    demonstration, question = prompt.split("\n\n")
    assert demonstration.startswith('Категория "Металлы". Вопрос: ЭТОТ МЕТАЛЛ') and sample["k"] == 1
    assert question == 'Категория "Металлы"\nВопрос: ЭТОТ МЕТАЛЛ жидкий.\nОтвет:'


class RecordingModel(LanguageModel):
    """An in-memory model that remembers each context it is asked (and prefers the first option)."""

    identity = "test:recording-mera"
    capabilities = Capabilities(loglikelihood=True, generation=True)

    def __init__(self):
        self.contexts: list[str] = []

    def loglikelihood(self, requests, on_done=None):
        self.contexts += [r.context for r in requests]
        return [LoglikelihoodResult(-1.0, n_tokens=1, greedy=False) for r in requests]

    def generate(self, requests, on_done=None):
        return ["" for _ in requests]


def test_each_items_demonstration_is_drawn_in_turn_as_lm_evals_sampler_draws_it(tmp_path):
    premises = [f"Пётр сказал, что придёт в {hour} часов." for hour in range(1, 9)]
    train = [rcb(100 + i, "123"[i % 3], premise) for i, premise in enumerate(premises)]
    test = [rcb(i, "", f"Анна решила, что опоздает на {i} минут.") for i in range(6)]
    model = RecordingModel()
    rueval.evaluate(model, tasks="rcb", data=write_snapshot(tmp_path, {"RCB": {"train": train, "test": test}}))
    # each item's context: its demonstration (the instruction filled) and, after it, the item in MERA's form
    shown = {context.split("\n\n")[1]: context.split('"')[1] for context in model.contexts}
    draw = random.Random(1234)  # MERA runs lm-eval with --seed 1234, its few-shot sampler's seed
    expected = [draw.sample(premises, 1)[0] for _ in test]
    assert [shown[f"Ситуация: {r['inputs']['premise']}\nГипотеза: Идёт дождь.\nОтвет:"] for r in test] == expected
    assert len(set(expected)) > 1  # not one demonstration for every item


def test_meras_settings_are_the_specs_and_enter_its_fingerprint(tmp_path):
    data = write_snapshot(tmp_path, seven_tasks())
    spec = RunSpec.create(SEVEN, "hf:some/model", data=data)
    assert spec.mera is not None and spec.mera.shots_of("rcb") == (1,) and spec.mera.shots_of("multiq") == (0,)
    assert spec.options.generation == GenerationSettings(do_sample=False, max_gen_toks=256, until=("\n",))
    assert spec.settings(get_task("rcb")) == [Setting(1, 0, per_item_seed=1234)]
    assert spec.fingerprint() != replace(spec, mera=None).fingerprint()
    assert RunSpec.from_json(json.loads(json.dumps(spec.to_json())), "run.json") == spec
    given = RunSpec.create("rcb", "hf:some/model", {"gen_kwargs": "max_gen_toks=16"}, data=data, shots=[0, 2])
    assert given.options.generation == GenerationSettings(do_sample=False, max_gen_toks=16, until=("\n",))
    assert given.settings(get_task("rcb")) == [Setting(0, 0, 1234), Setting(2, 0, 1234)]
    assert RunSpec.create("rcb", "majority", data=data).mera is None  # a baseline has no demonstrations to draw
    with pytest.raises(RuevalError, match="--episodes 1"):
        RunSpec.create("rcb", "hf:some/model", data=data, shots=[1], episodes=2)


def test_predict_only_predicts_a_labelled_split_without_scoring_it(cli, tmp_path):
    result = cli("run", "-m", "majority", "-t", "rcb,parus", "--split", "val", "--predict-only", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "note: rcb: " in result.output and "val examples predicted, not scored (--predict-only)" in result.output
    summary = json.loads((tmp_path / "out" / "results.json").read_text())
    assert summary["tasks"] == {} and set(summary["predicted"]) == {"rcb", "parus"}
    assert summary["predicted"]["rcb"]["score"] is None and summary["predicted"]["rcb"]["metrics"] == {}
    rows = [json.loads(line) for line in (tmp_path / "out" / "predictions" / "rcb.jsonl").read_text().splitlines()]
    assert rows and all(row["prediction"] == rows[0]["prediction"] for row in rows)
    assert cli("run", "-m", "majority", "-t", "rcb", "--split", "val", "-o", tmp_path / "scored").exit_code == 0
    assert json.loads((tmp_path / "scored" / "results.json").read_text())["tasks"]["rcb"]["score"] is not None
