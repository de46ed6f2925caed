import json
import math
import re
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import pytest
import typer
from support import read_jsonl, write_jsonl

from rueval.cli import app
from rueval.core import progress
from rueval.data.local import SAMPLES_DIR
from rueval.solvers.trivial import TrivialSolver
from rueval.tasks import TASKS, resolve_tasks


def test_tasks_lists_all_sixteen(cli):
    result = cli("tasks")
    assert result.exit_code == 0
    for name in ("lidirus", "rucos", "per_ethics", "macro_f1"):
        assert name in result.stdout


def test_run_without_arguments_scores_every_task_offline(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("run")
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "runs" / "majority"
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert list(summary["tasks"]) == [task.name for task in resolve_tasks("all")]  # all but MERA's own
    assert summary["model"] == "majority" and summary["data"] == "bundled samples"
    assert summary["rsg_total"] == pytest.approx(
        sum(summary["tasks"][t.name]["score"] for t in TASKS.values() if t.benchmark == "rsg") / 9
    )
    for name, task_result in summary["tasks"].items():
        assert name in result.stdout
        assert task_result["n"] == len(read_jsonl(out / "predictions" / f"{name}.jsonl"))
        assert len(task_result["data"]["sha256"]) == 64 and task_result["wall_time_s"] >= 0
        assert all(-100 <= v <= 100 for v in task_result["metrics"].values())
    assert summary["tasks"]["rcb"]["split"] == "val" and summary["tasks"]["winograd"]["split"] == "test"
    assert summary["tasks"]["lidirus"]["data"]["train_file"].endswith("TERRa/train.jsonl")
    assert summary["tasks"]["lidirus"]["breakdown"]  # MCC per feature tag
    assert "RSG total" in result.stdout
    assert not list(out.rglob("*.tmp"))


def test_predictions_file_pairs_each_prediction_with_its_gold(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("run", "-t", "rcb", "-o", out).exit_code == 0
    rows = read_jsonl(out / "predictions" / "rcb.jsonl")
    gold = [r["label"] for r in read_jsonl(SAMPLES_DIR / "RCB" / "val.jsonl")]
    majority = Counter(r["label"] for r in read_jsonl(SAMPLES_DIR / "RCB" / "train.jsonl")).most_common(1)[0][0]
    assert [r["gold"] for r in rows] == gold
    assert {r["prediction"] for r in rows} == {majority}
    accuracy = json.loads((out / "results.json").read_text())["tasks"]["rcb"]["metrics"]["accuracy"]
    assert accuracy == pytest.approx(100 * gold.count(majority) / len(gold))


def test_limit_and_seed_are_recorded(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("run", "-t", "terra,winograd", "-m", "random", "--seed", "5", "--limit", "7", "-o", out).exit_code == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["seed"] == 5 and summary["limit"] == 7
    assert [r["n"] for r in summary["tasks"].values()] == [7, 7]


def test_rerun_reuses_finished_tasks_and_recomputes_changed_data(cli, tmp_path, data_dir, monkeypatch):
    out = tmp_path / "out"
    assert cli("run", "-t", "terra,parus", "--data", data_dir, "-o", out).exit_code == 0
    first = json.loads((out / "results.json").read_text())
    predicted = []
    original = TrivialSolver.predict

    def counting_predict(self, task, examples):
        predicted.append(task.name)
        return original(self, task, examples)

    monkeypatch.setattr(TrivialSolver, "predict", counting_predict)
    assert cli("run", "-t", "terra,parus", "--data", data_dir, "-o", out).exit_code == 0
    assert predicted == []  # nothing recomputed
    second = json.loads((out / "results.json").read_text())
    assert second["tasks"] == first["tasks"]

    val = data_dir / "PARus" / "val.jsonl"
    val.write_text("".join(val.read_text(encoding="utf-8").splitlines(keepends=True)[:-1]), encoding="utf-8")
    assert cli("run", "-t", "terra,parus", "--data", data_dir, "-o", out).exit_code == 0
    assert predicted == ["parus"]
    # other settings: the earlier results are not overwritten without --force
    refused = cli("run", "-t", "terra,parus", "--data", data_dir, "-o", out, "--seed", "3")
    assert refused.exit_code == 2 and "--force" in refused.stderr and str(out) in refused.stderr
    assert predicted == ["parus"] and json.loads((out / "results.json").read_text())["seed"] == 0
    assert cli("run", "-t", "terra,parus", "--data", data_dir, "-o", out, "--seed", "3", "--force").exit_code == 0
    assert predicted == ["parus", "terra", "parus"]


def test_official_layout_with_only_train_and_test(cli, tmp_path):
    """A directory holding just train.jsonl and a labelled test.jsonl per task (LiDiRus included)."""
    data = tmp_path / "data"
    for folder in ("PARus", "RCB", "RUSSE", "RWSD"):
        (data / folder).mkdir(parents=True)
        shutil.copy(SAMPLES_DIR / folder / "train.jsonl", data / folder / "train.jsonl")
        shutil.copy(SAMPLES_DIR / folder / "val.jsonl", data / folder / "test.jsonl")
    terra = read_jsonl(SAMPLES_DIR / "TERRa" / "train.jsonl")
    write_jsonl(
        data / "LiDiRus" / "train.jsonl",
        [
            {"idx": r["idx"], "sentence1": r["premise"], "sentence2": r["hypothesis"], "label": r["label"]}
            for r in terra
        ],
    )
    shutil.copy(SAMPLES_DIR / "LiDiRus" / "LiDiRus.jsonl", data / "LiDiRus" / "test.jsonl")
    shutil.copytree(SAMPLES_DIR / "ru_worldtree", data / "RuWorldTree")
    out = tmp_path / "out"
    result = cli(
        "run",
        "-t",
        "parus,rcb,lidirus,russe,rwsd,ru_worldtree",
        "-m",
        "majority",
        "--data",
        data,
        "--split",
        "test",
        "-o",
        out,
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "results.json").read_text())
    assert {r["split"] for r in summary["tasks"].values()} == {"test"}
    assert summary["tasks"]["lidirus"]["metrics"]["mcc"] == 0.0  # a constant prediction
    russe_test = [r["label"] for r in read_jsonl(data / "RUSSE" / "test.jsonl")]
    russe_major = Counter(r["label"] for r in read_jsonl(data / "RUSSE" / "train.jsonl")).most_common(1)[0][0]
    assert summary["tasks"]["russe"]["metrics"]["accuracy"] == pytest.approx(
        100 * russe_test.count(russe_major) / len(russe_test)
    )
    assert summary["rsg_total"] is None  # not all nine RSG tasks


def test_submit_writes_the_leaderboard_zip(cli, tmp_path):
    target = tmp_path / "sub" / "rsg.zip"
    result = cli("submit", "-m", "weighted-random", "-o", target)
    assert result.exit_code == 0, result.stderr
    with zipfile.ZipFile(target) as archive:
        names = sorted(archive.namelist())
        files = {n: [json.loads(line) for line in archive.read(n).decode().splitlines()] for n in names}
    assert names == sorted(f"{t.folder}.jsonl" for t in TASKS.values() if t.benchmark == "rsg")
    for folder in ("RCB", "PARus", "TERRa", "RUSSE", "RWSD", "DaNetQA"):
        test = read_jsonl(SAMPLES_DIR / folder / "test.jsonl")
        assert [line["idx"] for line in files[f"{folder}.jsonl"]] == [r["idx"] for r in test]
    assert {line["label"] for line in files["RWSD.jsonl"]} <= {"True", "False"}
    assert {line["label"] for line in files["DaNetQA.jsonl"]} <= {"true", "false"}
    assert {line["label"] for line in files["PARus.jsonl"]} <= {0, 1}
    assert len(files["LiDiRus.jsonl"]) == len(read_jsonl(SAMPLES_DIR / "LiDiRus" / "LiDiRus.jsonl"))

    def shape(record):  # MuSeRC: the nesting of idx values, input and submission alike
        return [record["idx"], [[q["idx"], [a["idx"] for a in q["answers"]]] for q in record["passage"]["questions"]]]

    assert [shape(line) for line in files["MuSeRC.jsonl"]] == [
        shape(r) for r in read_jsonl(SAMPLES_DIR / "MuSeRC" / "test.jsonl")
    ]
    assert all(
        a["label"] in (0, 1)
        for line in files["MuSeRC.jsonl"]
        for q in line["passage"]["questions"]
        for a in q["answers"]
    )
    queries = [(r, q) for r in read_jsonl(SAMPLES_DIR / "RuCoS" / "test.jsonl") for q in r["qas"]]
    for line, (record, query) in zip(files["RuCoS.jsonl"], queries, strict=True):  # flat: one line per query
        text = record["passage"]["text"]
        assert line["idx"] == query["idx"]
        assert line["label"] in {text[e["start"] : e["end"]] for e in record["passage"]["entities"]}


def test_make_tiny_model_gives_a_model_to_try_offline(cli, tmp_path):
    result = cli("make-tiny-model", tmp_path / "tiny")
    assert result.exit_code == 0 and (tmp_path / "tiny" / "config.json").exists()
    scored = cli("run", "-m", f"hf:{tmp_path / 'tiny'}", "-t", "parus", "--limit", "3", "-o", tmp_path / "out")
    assert scored.exit_code == 0, scored.stderr
    assert json.loads((tmp_path / "out" / "results.json").read_text())["tasks"]["parus"]["n"] == 3


def test_make_tiny_model_train_steps_gives_a_model_that_learned_the_samples(cli, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rueval.models.backends.tiny import sample_texts

    def mean_loss(folder: Path) -> float:
        tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder)
        with torch.no_grad():
            losses = [model(**(ids := tokenizer(t, return_tensors="pt")), labels=ids["input_ids"]).loss for t in texts]
        return float(sum(losses)) / len(losses)

    texts = sample_texts()[:40]
    assert cli("make-tiny-model", tmp_path / "random").exit_code == 0
    result = cli("make-tiny-model", tmp_path / "trained", "--train-steps", "30")
    assert result.exit_code == 0 and "(trained 30 steps)" in result.stdout
    assert mean_loss(tmp_path / "trained") < mean_loss(tmp_path / "random") - 0.5  # nats per token
    assert cli("make-tiny-model", tmp_path / "never", "--train-steps", "-1").exit_code == 2


def test_make_tiny_model_on_a_file_is_an_error_and_leaves_the_file(cli, tmp_path):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    result = cli("make-tiny-model", tmp_path / "notes.txt")
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path / 'notes.txt'}: a file is in the way; a model is saved as a folder\n"
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"
    too_long = tmp_path / ("a" * 300)
    result = cli("make-tiny-model", too_long)
    assert result.exit_code == 2 and result.stderr == f"error: {too_long}: cannot be written (File name too long)\n"


def test_quiet_hides_the_weight_loading_bar_of_transformers(cli, tmp_path, tiny_gpt2_dir, monkeypatch):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)  # restored after the test
    flags = ("-m", f"hf:{tiny_gpt2_dir}", "-t", "parus", "--limit", "2", "--cache", "off")
    shown = cli("run", *flags, "-o", tmp_path / "shown")
    assert shown.exit_code == 0 and "Loading weights" in shown.stderr  # the bar this test looks for
    quiet = cli("run", *flags, "--quiet", "-o", tmp_path / "quiet")
    assert quiet.exit_code == 0 and "Loading weights" not in quiet.stderr and "%|" not in quiet.stderr
    again = cli("run", *flags, "-o", tmp_path / "again")
    assert "Loading weights" in again.stderr  # --quiet held for its own run only


def test_help_names_the_extras_that_peft_and_quantization_need(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # a narrow help column cuts long words short
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", cli("run", "--help").output).split())
    assert "pip install 'rueval[peft]'" in text and "pip install 'rueval[quantize]'" in text


def every_command(command, path=()):
    """Each command and group under the application, with the words that call it."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from every_command(sub, (*path, name))


def test_help_stays_whole_at_80_columns(cli, monkeypatch):
    """In a pipe or a CI log (80 columns) every option name and every command's summary is printed whole."""
    monkeypatch.setenv("COLUMNS", "80")
    for path, command in every_command(typer.main.get_command(app)):
        text = cli(*path, "--help").output
        assert max(map(len, text.splitlines())) <= 80, path
        words = set(re.split(r"[\s,]+", text))
        shown = [param for param in command.params if not getattr(param, "hidden", False)]
        names = {name for param in shown for name in (*param.opts, *param.secondary_opts)}
        assert {name for name in names if name.startswith("-")} <= words, path
        for name, sub in getattr(command, "commands", {}).items():
            summary = " ".join(sub.help.split("\n\n")[0].split())
            assert f"{name} {summary}" in " ".join(text.split()), (path, name)


def train_size(folder: str) -> int:
    return len(read_jsonl(SAMPLES_DIR / folder / "train.jsonl"))


def test_long_steps_say_what_they_do_and_quiet_hides_them(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)  # restored after the test
    shown = cli("run", "-t", "terra", "-m", "tfidf", "-o", tmp_path / "a")
    assert shown.exit_code == 0, shown.stderr
    fitting = f"fitting TF-IDF on {train_size('TERRa')} terra train examples"
    assert re.search(rf"{fitting}: done in \d+\.\d s", shown.stderr)
    quiet = cli("run", "-t", "terra", "-m", "tfidf", "-o", tmp_path / "b", "--quiet", "--limit", "0.5")
    assert quiet.exit_code == 0
    # the warning stays, the steps and notes go; the results table is printed as ever
    assert quiet.stderr.splitlines() == [
        "warning: --limit 0.5 scores part of each split: these are not the benchmark's scores"
    ]
    assert "terra" in quiet.stdout and "results:" in quiet.stdout
    both = cli("run", "-t", "terra", "-o", tmp_path / "c", "--quiet", "--verbose")
    assert both.exit_code == 2 and "--quiet and --verbose" in both.stderr


def test_verbose_gives_each_tasks_size_and_timing(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    result = cli("run", "-t", "terra,parus", "-m", "tfidf", "-o", tmp_path / "out", "--verbose")
    assert result.exit_code == 0, result.stderr
    for task, folder in (("terra", "TERRa"), ("parus", "PARus")):
        val = len(read_jsonl(SAMPLES_DIR / folder / "val.jsonl"))
        assert f"{task}: {val} val examples, {train_size(folder)} train\n" in result.stderr
        assert re.search(rf"{task}: predicted in \d+\.\d s, scored in \d+\.\d s", result.stderr)


def test_audit_says_which_stage_it_is_in(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    result = cli("audit", "-t", "terra", "-o", tmp_path / "audit")
    assert result.exit_code == 0, result.stderr
    assert f"terra: duplicates of {train_size('TERRa')} train examples in 2 split(s): done in" in result.stderr
    assert "terra: artifact tokens, lemmatising" in result.stderr
    quiet = cli("audit", "-t", "terra", "-o", tmp_path / "quiet", "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_limit_below_one_is_a_share_of_each_split_and_other_values_are_refused(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    out = tmp_path / "out"
    result = cli("run", "-t", "rcb", "--limit", "0.25", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "warning: --limit 0.25 scores part of each split" in result.stderr
    summary = json.loads((out / "results.json").read_text())
    assert summary["tasks"]["rcb"]["n"] == math.ceil(0.25 * len(read_jsonl(SAMPLES_DIR / "RCB" / "val.jsonl")))
    assert summary["limit"] == 0.25 and "partial: first 25% of the" in result.stdout
    for bad in ("1.5", "0", "-2"):
        refused = cli("run", "-t", "rcb", "--limit", bad, "-o", tmp_path / bad)
        assert refused.exit_code == 2 and f"--limit {float(bad)}: expected a whole number" in refused.stderr


def test_verbose_counts_a_language_models_requests_and_the_cached_ones(cli, tiny_gpt2_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    args = ("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "parus", "--limit", "2", "--verbose")
    first = cli(*args, "-o", tmp_path / "a")
    assert first.exit_code == 0, first.stderr
    # PARus asks for each of an example's two options: 2 examples, 4 requests, all different
    assert "4 requests planned for 1 task(s), 4 distinct" in first.stderr
    assert "0 of 4 distinct requests cached, 4 to compute" in first.stderr
    again = cli(*args, "-o", tmp_path / "b")  # another run directory: the request cache serves them
    assert "4 of 4 distinct requests cached, 0 to compute" in again.stderr
