from __future__ import annotations

import json
import zipfile

import pytest
from mera_files import QA_INSTRUCTION, parus, rcb, rwsd

import rueval
from rueval.core.errors import DataError
from rueval.data import open_data
from rueval.data.mera import MeraSource
from rueval.models.base import Capabilities, LanguageModel, LoglikelihoodResult
from rueval.tasks import get_task
from rueval.tasks.prompts import get_prompt


def science(id_, outputs):
    inputs = {"question": "Что притягивает магнит?", "option_a": "фольгу", "option_b": "скрепку",
              "option_c": "линейку", "option_d": "карандаш"}  # fmt: skip
    return {
        "instruction": QA_INSTRUCTION,
        "inputs": inputs,
        "outputs": outputs,
        "meta": {"id": id_, "exam_name": "MCAS"},
    }


MAIN_TEXT = "Кыбантывис — река в России. Левый приток Айювы."


def multiq(id_, answer):
    inputs = {"question": "Куда впадает река?", "support_text": "Висвож впадает в Кыбантывис.", "text": MAIN_TEXT}
    outputs = [] if answer is None else [{"label": "answer", "length": len(answer), "offset": MAIN_TEXT.find(answer),
                                          "segment": answer}]  # fmt: skip
    bridge = [{"label": "passage", "length": 10, "offset": 0, "segment": "Кыбантывис"}]
    return {"instruction": "{support_text} {text} {question}", "inputs": inputs, "outputs": outputs,
            "meta": {"id": id_, "bridge_answers": bridge}}  # fmt: skip


def chegeka(id_, outputs):
    return {"instruction": 'Категория "{topic}". {text}', "inputs": {"text": "ЭТОТ МЕТАЛЛ жидкий.", "topic": "Металлы"},
            "outputs": outputs, "meta": {"id": id_, "author": "А. Б."}}  # fmt: skip


def write_task(root, name, splits):
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "task.json").write_text(json.dumps({"data": splits}, ensure_ascii=False), encoding="utf-8")


@pytest.fixture
def mera_dir(tmp_path):
    """The seven MERA tasks rueval shares, with ids that are not positions; labelled tests."""
    root = tmp_path / "mera"
    write_task(root, "RCB", {"train": [rcb(100, "3"), rcb(101, "3"), rcb(102, "1")],
                             "test": [rcb(7, "2"), rcb(3, "3"), rcb(11, "1")]})  # fmt: skip
    write_task(
        root, "PARus", {"train": [parus(1, "2"), parus(2, "2")], "test": [parus(40, "1", "effect"), parus(41, "2")]}
    )
    write_task(root, "RWSD", {"train": [rwsd(5, "Нет"), rwsd(6, "Нет")], "test": [rwsd(9, "Да"), rwsd(8, "Нет")]})
    write_task(root, "ruWorldTree", {"train": [science(1, "B")], "test": [science(21, "B"), science(22, "C")]})
    write_task(root, "ruOpenBookQA", {"train": [science(1, "A")], "test": [science(31, "D")]})
    write_task(root, "MultiQ", {"train": [multiq(1, "Айювы")], "test": [multiq(424, "Айювы"), multiq(425, "России")]})
    write_task(root, "CheGeKa", {"train": [chegeka(1, "Ртуть")], "test": [chegeka(131, "Ртуть;Меркурий")]})
    return root


def test_a_mera_folder_is_read_into_the_tasks_own_fields_with_meta_id_as_idx(mera_dir):
    source = open_data(str(mera_dir))
    assert isinstance(source, MeraSource)

    def test_split(name):
        return source.load(get_task(name), "test").examples

    assert [(e.idx, e.label) for e in test_split("rcb")] == [(7, "contradiction"), (3, "neutral"), (11, "entailment")]
    assert test_split("rcb")[0].fields["verb"] == "знать"
    assert [(e.idx, e.label, e.fields["question"]) for e in test_split("parus")] == [
        (40, 0, "effect"),
        (41, 1, "cause"),
    ]
    assert [(e.idx, e.label) for e in test_split("rwsd")] == [(9, True), (8, False)]
    assert test_split("rwsd")[0].fields["target"]["span2_text"] == "она оказала"
    assert [(e.idx, e.label) for e in test_split("ru_worldtree")] == [(21, "B"), (22, "C")]
    assert test_split("ru_openbook")[0].fields["question"].endswith("(C) линейку (D) карандаш")
    assert [(e.idx, e.label) for e in test_split("multiq")] == [(424, ("Айювы",)), (425, ("России",))]
    assert [(e.idx, e.label) for e in test_split("chegeka")] == [(131, ("Ртуть", "Меркурий"))]
    assert not source.has_split(get_task("rcb"), "val")


def test_mera_examples_are_asked_with_meras_instruction_and_answers(mera_dir):
    source = open_data(str(mera_dir))
    example = source.load(get_task("rcb"), "test").examples[0]
    (question,) = get_prompt("rcb").questions(example)
    # MERA-Evaluation/MERA asks without demonstrations with the instruction alone, and writes "\nОтвет:"
    # after it in the first demonstration of its RSG tasks
    instruction = 'Ситуация: "Маша знала, что идёт дождь."\nГипотеза: "Идёт дождь."\nОтветь 1, 2 или 3.'
    assert question.context == instruction
    assert get_prompt("rcb").demonstration(example, 0)[0].context == instruction + "\nОтвет:"
    assert [(c.continuation, c.label) for c in question.choices] == [
        (" 1", "entailment"),
        (" 2", "contradiction"),
        (" 3", "neutral"),
    ]
    assert question.target == " 2"  # the gold "contradiction", as a demonstration shows it
    (science_question,) = get_prompt("ru_worldtree").questions(
        source.load(get_task("ru_worldtree"), "test").examples[0]
    )
    assert science_question.context.endswith("D. карандаш\nОтвет:")  # MERA's own cue, not a second one
    assert [c.continuation for c in science_question.choices] == [" A", " B", " C", " D"]


def test_examples_of_other_data_keep_the_tasks_own_prompt():
    from rueval.data import load_task_data

    example = load_task_data(open_data(None), get_task("rcb"), None, 1).eval.examples[0]
    (question,) = get_prompt("rcb").questions(example)
    (own,) = get_prompt("rcb").own.questions(example)
    assert question == own
    assert [c.continuation for c in question.choices] != [" 1", " 2", " 3"]  # not MERA's answers


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (rcb(1, "4"), "outputs"),
        ({**rcb(1, "1"), "meta": {"genre": "kp"}}, "meta.id"),
        (parus(1, "1", "why"), "meta.task"),
    ],
)
def test_a_bad_mera_record_is_an_error_naming_file_record_and_field(tmp_path, record, field):
    name = "RCB" if "hypothesis" in record["inputs"] else "PARus"
    write_task(tmp_path, name, {"train": [record], "test": [record]})
    task = get_task(name.lower())
    with pytest.raises(DataError) as caught:
        open_data(str(tmp_path)).load(task, "test")
    assert caught.value.file.endswith(f"{name}/task.json#data.test")
    assert caught.value.field == field
    assert "record 1" in str(caught.value)


# The shapes of MERA's official sample submission (ai-forever/MERA, MIT), written out here:
# per task the type of "outputs", its allowed values where they are fixed, and the keys of "meta".
SAMPLE_SHAPES = {
    "RCB.json": (str, {"1", "2", "3"}, {"id"}),
    "PARus.json": (str, {"1", "2"}, {"id"}),
    "RWSD.json": (str, {"Да", "Нет"}, {"id"}),
    "ruWorldTree.json": (str, {"A", "B", "C", "D"}, {"id"}),
    "ruOpenBookQA.json": (str, {"A", "B", "C", "D"}, {"id"}),
    "CheGeKa.json": (str, None, {"id"}),
    "MultiQ.json": (list, None, {"id", "bridge_answers"}),
}
MULTIQ_SPAN_KEYS = {"label", "length", "offset", "segment"}


def read_zip(path):
    with zipfile.ZipFile(path) as archive:
        return {name: json.loads(archive.read(name)) for name in archive.namelist()}


def test_export_writes_meras_submission_files_with_the_samples_shapes(cli, mera_dir, tmp_path):
    run_dir = tmp_path / "run"
    rueval.evaluate("majority", tasks=["rcb", "parus", "rwsd", "ru_worldtree", "ru_openbook", "multiq", "chegeka"],
                    data=mera_dir, out=run_dir)  # fmt: skip
    result = cli("export", "--format", "mera", run_dir, "-o", tmp_path / "submission.zip")
    assert result.exit_code == 0, result.output
    files = read_zip(tmp_path / "submission.zip")
    assert set(files) == set(SAMPLE_SHAPES)
    for name, (kind, allowed, meta_keys) in SAMPLE_SHAPES.items():
        assert list(files[name]) == ["data"] and list(files[name]["data"]) == ["test"], name
        for entry in files[name]["data"]["test"]:
            assert set(entry) == {"outputs", "meta"}, name
            assert isinstance(entry["outputs"], kind), name
            assert allowed is None or entry["outputs"] in allowed, name
            assert set(entry["meta"]) == meta_keys, name
    assert [e["meta"]["id"] for e in files["RCB.json"]["data"]["test"]] == [7, 3, 11]  # MERA's ids, in file order
    assert {e["outputs"] for e in files["RCB.json"]["data"]["test"]} == {"3"}  # train's majority: neutral
    assert {e["outputs"] for e in files["PARus.json"]["data"]["test"]} == {"2"}
    assert {e["outputs"] for e in files["RWSD.json"]["data"]["test"]} == {"Нет"}
    multiq_entry = files["MultiQ.json"]["data"]["test"][0]
    assert all(set(span) == MULTIQ_SPAN_KEYS for span in multiq_entry["outputs"])
    assert multiq_entry["meta"]["bridge_answers"][0]["segment"] == "Кыбантывис"


def test_hidden_test_answers_are_predicted_by_the_runs_model(cli, tmp_path):
    root = tmp_path / "mera"
    write_task(root, "RCB", {"train": [rcb(1, "2"), rcb(2, "2"), rcb(3, "1")], "validation": [rcb(4, "2")],
                             "test": [rcb(50, ""), rcb(51, "")]})  # fmt: skip
    run_dir = tmp_path / "run"
    scored = rueval.evaluate("majority", tasks=["rcb"], data=root, out=run_dir)
    assert scored.tasks["rcb"].split == "val"  # MERA's test answers are hidden: the run scores validation
    result = cli("export", run_dir, "-o", tmp_path / "submission.zip")
    assert result.exit_code == 0, result.output
    entries = read_zip(tmp_path / "submission.zip")["RCB.json"]["data"]["test"]
    assert entries == [{"outputs": "2", "meta": {"id": 50}}, {"outputs": "2", "meta": {"id": 51}}]


def test_export_of_a_run_not_on_mera_data_is_a_one_line_error(cli, tmp_path):
    rueval.evaluate("majority", tasks=["rcb"], out=tmp_path / "run")
    result = cli("export", "--format", "mera", tmp_path / "run", "-o", tmp_path / "submission.zip")
    assert result.exit_code == 2
    assert "MERA's task files" in result.output
    assert not (tmp_path / "submission.zip").exists()
    other = cli("export", "--format", "csv", tmp_path / "run")
    assert other.exit_code == 2 and "--format csv: expected one of rsg, mera" in other.output


class RecordingModel(LanguageModel):
    """Remembers what it was asked; prefers the continuation " 3" (log-probability 0, the others -1)."""

    identity = "test:recording"
    capabilities = Capabilities(loglikelihood=True, generation=True)

    def __init__(self):
        self.asked: list[tuple[str, str]] = []

    def loglikelihood(self, requests, on_done=None):
        self.asked += [(r.context, r.continuation) for r in requests]
        return [LoglikelihoodResult(float(r.continuation == " 3") - 1, n_tokens=1, greedy=False) for r in requests]

    def generate(self, requests, on_done=None):
        return ["" for _ in requests]


def test_a_language_model_is_asked_meras_instruction_and_scored_on_meras_labels(mera_dir):
    model = RecordingModel()
    result = rueval.evaluate(model, tasks=["rcb"], data=mera_dir, shots=0)  # MERA's own: 1 (tests/run/test_mera_run.py)
    contexts = {context for context, _ in model.asked}
    assert contexts == {'Ситуация: "Маша знала, что идёт дождь."\nГипотеза: "Идёт дождь."\nОтветь 1, 2 или 3.'}
    assert sorted({continuation for _, continuation in model.asked}) == [" 1", " 2", " 3"]
    assert [row.prediction for row in result.predictions["rcb"]] == ["neutral"] * 3  # MERA's " 3"
    assert [row.idx for row in result.predictions["rcb"]] == [7, 3, 11]
