import hashlib
import json
import shutil
import time
import tracemalloc
import zipfile

import pytest
from support import read_jsonl, write_jsonl

from rueval.core.errors import DataError, RuevalError
from rueval.data import ReadLimits, hub, open_data
from rueval.data.local import SAMPLES_DIR
from rueval.data.reading import MAX_LINE_BYTES
from rueval.tasks import TASKS, Example, get_task, resolve_tasks


@pytest.mark.parametrize("name", [task.name for task in resolve_tasks("all")])  # MERA's own: MERA's files
def test_every_bundled_split_loads_with_gold_where_the_layout_has_it(name):
    task, source = TASKS[name], open_data(None)
    for split in task.splits:
        if not source.has_split(task, split):
            continue
        loaded = source.load(task, split)
        assert len(loaded.examples) >= 5
        # RSG test sets are unlabelled, like the official ones; everything else is labelled.
        assert loaded.labelled == (task.benchmark != "rsg" or split != "test" or name == "lidirus")
    assert source.has_split(task, "test") and (name == "lidirus" or source.has_split(task, "train"))


def test_task_folders_match_names_case_insensitively_and_aliases(tmp_path):
    write_jsonl(tmp_path / "rcb" / "train.jsonl", [{"idx": 0, "premise": "п", "hypothesis": "г", "label": "neutral"}])
    write_jsonl(tmp_path / "OpenBook" / "test.jsonl", [{"question": "В (A) а (B) б (C) в (D) г", "answer": "B"}])
    source = open_data(str(tmp_path))
    assert source.load(get_task("RCB"), "train").examples[0].label == "neutral"
    assert source.load(get_task("ru_openbook"), "test").examples[0].label == "B"


def test_extra_fields_are_kept(tmp_path):
    record = {"idx": 3, "premise": "п", "hypothesis": "г", "label": "entailment", "genre": "news"}
    write_jsonl(tmp_path / "TERRa" / "val.jsonl", [record])
    example = open_data(str(tmp_path)).load(get_task("terra"), "val").examples[0]
    assert example.fields["genre"] == "news" and example.idx == 3


def test_rsg_zip_is_read_in_place(tmp_path):
    archive = tmp_path / "combined.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for split in ("train", "val"):
            z.write(SAMPLES_DIR / "PARus" / f"{split}.jsonl", f"combined/PARus/{split}.jsonl")
        z.write(SAMPLES_DIR / "LiDiRus" / "LiDiRus.jsonl", "combined/LiDiRus/LiDiRus.jsonl")
    source = open_data(str(archive))
    expected = read_jsonl(SAMPLES_DIR / "PARus" / "val.jsonl")
    assert [e.label for e in source.load(get_task("parus"), "val").examples] == [r["label"] for r in expected]
    assert source.load(get_task("lidirus"), "test").labelled


def test_tape_layout_scores_the_episodes_sets_and_drops_their_perturbed_copies(tmp_path):
    original = {"question": "Что? (A) а (B) б (C) в (D) г", "answer": "A", "perturbation": "ru_worldtree"}
    typo = {**original, "question": "Чт? (A) а (B) б (C) в (D) г", "perturbation": "butter_fingers"}
    write_jsonl(tmp_path / "dummy" / "episodes" / "ru_worldtree" / "test.jsonl", [original, typo])
    examples = open_data(str(tmp_path)).load(get_task("ru_worldtree"), "test").examples
    assert [e.fields["question"] for e in examples] == [original["question"]]
    write_jsonl(tmp_path / "dummy" / "raw" / "ru_worldtree" / "test.jsonl", [{**original, "answer": "D"}] * 2)
    # TAPE's tables score the episodes test sets; raw only when asked for
    assert [e.label for e in open_data(str(tmp_path)).load(get_task("worldtree"), "test").examples] == ["A"]
    raw = open_data(str(tmp_path), tape_set="raw").load(get_task("worldtree"), "test").examples
    assert [e.label for e in raw] == ["D", "D"]


def test_nested_tasks_flatten_with_idx_paths():
    source = open_data(None)
    muserc = source.load(get_task("muserc"), "val").examples
    first = read_jsonl(SAMPLES_DIR / "MuSeRC" / "val.jsonl")[0]
    question = first["passage"]["questions"][0]
    example = muserc[0]
    assert example.idx == (first["idx"], question["idx"], question["answers"][0]["idx"])
    assert example.group == (first["idx"], question["idx"])
    assert example.fields["question"] == question["question"] and example.label == question["answers"][0]["label"]
    assert len(muserc) == sum(
        len(q["answers"]) for r in read_jsonl(SAMPLES_DIR / "MuSeRC" / "val.jsonl") for q in r["passage"]["questions"]
    )

    rucos = source.load(get_task("rucos"), "val").examples[0]
    record = read_jsonl(SAMPLES_DIR / "RuCoS" / "val.jsonl")[0]
    text = record["passage"]["text"]
    assert rucos.candidates == tuple(text[e["start"] : e["end"]] for e in record["passage"]["entities"])
    assert set(rucos.label) <= set(rucos.candidates)


def test_multiq_gold_is_every_main_answer_segment():
    example = open_data(None).load(get_task("multiq"), "test").examples[0]
    record = read_jsonl(SAMPLES_DIR / "multiq" / "test.jsonl")[0]
    assert example.label == tuple(dict.fromkeys(a["segment"] for a in record["main_answers"]))


def test_content_hash_follows_the_bytes(data_dir):
    task = get_task("terra")
    before = open_data(str(data_dir)).load(task, "val").sha256
    path = data_dir / "TERRa" / "val.jsonl"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert open_data(str(data_dir)).load(task, "val").sha256 != before


def test_hub_source_reads_the_downloaded_repos(tmp_path, monkeypatch):
    """The hub layouts: RSG as data/<Task>.zip, TAPE as dummy/raw/<task>/*.jsonl."""
    rsg, tape = tmp_path / "rsg", tmp_path / "tape"
    (rsg / "data").mkdir(parents=True)
    with zipfile.ZipFile(rsg / "data" / "RCB.zip", "w") as z:
        z.write(SAMPLES_DIR / "RCB" / "val.jsonl", "RCB/val.jsonl")
    shutil.copytree(SAMPLES_DIR / "chegeka", tape / "dummy" / "raw" / "chegeka")
    calls = []

    def fake_download(repo_id, patterns):
        calls.append(repo_id)
        return {"RussianNLP/russian_super_glue": rsg, "RussianNLP/tape": tape}[repo_id]

    monkeypatch.setattr(hub, "download", fake_download)
    source = open_data("hf")
    assert len(source.load(get_task("rcb"), "val").examples) == len(read_jsonl(SAMPLES_DIR / "RCB" / "val.jsonl"))
    assert source.load(get_task("chegeka"), "test").labelled
    source.load(get_task("rcb"), "val")
    assert calls == ["RussianNLP/russian_super_glue", "RussianNLP/tape"]  # each repo fetched once


def test_hub_download_failure_is_a_clear_error(monkeypatch):
    def offline(repo_id, patterns):
        raise OSError("network is unreachable")

    monkeypatch.setattr(hub, "download", offline)
    with pytest.raises(Exception) as info:
        open_data("hf").load(get_task("rcb"), "val")
    assert "RussianNLP/russian_super_glue" in str(info.value) and "--data DIR" in str(info.value)


def test_hub_download_asks_huggingface_hub_for_the_dataset_files(monkeypatch, tmp_path):
    seen = {}

    def snapshot_download(**kwargs):
        seen.update(kwargs)
        return str(tmp_path)

    monkeypatch.setattr(hub, "snapshot_download", snapshot_download)
    assert hub.download("RussianNLP/tape", ["dummy/raw/*"]) == tmp_path
    assert seen == {"repo_id": "RussianNLP/tape", "repo_type": "dataset", "allow_patterns": ["dummy/raw/*"]}


def test_example_text_reads_dotted_paths_null_as_empty_and_refuses_what_is_not_text():
    example = Example(idx=(3, 1), fields={"text": "Он пришёл.", "note": None, "target": {"span1_text": "он"}, "n": 2})
    assert example.text("target.span1_text") == "он" and example.value("target.span1_text") == "он"
    assert example.text("note") == "" and example.value("missing.path") is None
    with pytest.raises(RuevalError, match="example 3/1: field 'target.span2_text' is missing"):
        example.text("target.span2_text")
    with pytest.raises(RuevalError, match="example 3/1: field 'n' should be text, got 2"):
        example.text("n")


def test_split_hash_is_the_whole_file_s_also_from_a_zip_and_with_a_limit(tmp_path):
    raw = (SAMPLES_DIR / "PARus" / "val.jsonl").read_bytes()
    archive = tmp_path / "rsg.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("PARus/val.jsonl", raw)
    for spec in (str(SAMPLES_DIR), str(archive)):
        for limit in (None, 2):
            loaded = open_data(spec).load(get_task("parus"), "val", limit)
            assert loaded.sha256 == hashlib.sha256(raw).hexdigest()
            assert len(loaded.examples) == (limit or len(read_jsonl(SAMPLES_DIR / "PARus" / "val.jsonl")))


def test_a_line_beyond_the_size_limit_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    record = {"idx": 0, "premise": "Стекло разбилось.", "choice1": "Мяч.", "choice2": "Снег.", "question": "cause"}
    path = write_jsonl(tmp_path / "PARus" / "val.jsonl", [record, {**record, "idx": 1, "premise": "п" * 200}])
    parsed, loads = [], json.loads
    monkeypatch.setattr(json, "loads", lambda text, **kw: parsed.append(text) or loads(text, **kw))
    with pytest.raises(DataError) as error:
        open_data(str(tmp_path), ReadLimits(line_bytes=300)).load(get_task("parus"), "val")
    assert str(error.value) == f"{path}:2: line longer than 300 bytes: not read"
    assert [loads(text)["idx"] for text in parsed] == [0]  # the long line never reached the parser
    assert len(open_data(str(tmp_path), ReadLimits(line_bytes=500)).load(get_task("parus"), "val").examples) == 2


def test_a_zip_bomb_is_refused_quickly_in_bounded_memory(tmp_path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z, z.open("PARus/val.jsonl", "w") as f:
        block = b" " * (1 << 20)
        for _ in range(600):  # 600 MiB of spaces and no line break
            f.write(block)
    assert archive.stat().st_size < 1 << 20
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(DataError, match=r"bomb.zip/PARus/val.jsonl:1: line longer than"):
            open_data(str(archive)).load(get_task("parus"), "val")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_LINE_BYTES  # the line limit bounds it: inflating the member whole would take 600 MiB
    assert time.monotonic() - started < 30


def test_a_run_says_which_tape_set_it_scored_and_draws_demonstrations_from_it(cli, tmp_path):
    records = read_jsonl(SAMPLES_DIR / "winograd" / "test.jsonl")
    train = read_jsonl(SAMPLES_DIR / "winograd" / "train.jsonl")
    for name, test, train_part in (("episodes", records[:5], train[:4]), ("raw", records, train)):
        write_jsonl(tmp_path / "tape" / "dummy" / name / "winograd" / "test.jsonl", test)
        write_jsonl(tmp_path / "tape" / "dummy" / name / "winograd" / "train.jsonl", train_part)
    out = tmp_path / "out"
    assert cli("run", "-t", "winograd", "--data", tmp_path / "tape", "-o", out).exit_code == 0
    scored = json.loads((out / "results.json").read_text())["tasks"]["winograd"]
    assert scored["n"] == 5 and scored["data"]["tape_set"] == "episodes"
    assert "episodes" in scored["data"]["train_file"]
    assert (
        cli("run", "-t", "winograd", "--data", tmp_path / "tape", "--tape-set", "raw", "-o", out, "--force").exit_code
        == 0
    )
    scored = json.loads((out / "results.json").read_text())["tasks"]["winograd"]
    assert scored["n"] == len(records) and scored["data"]["tape_set"] == "raw"
