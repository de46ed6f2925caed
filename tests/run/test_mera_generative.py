"""MERA's generative tasks end to end, from MERA's files in both layouts: MERA's prompts and shots, the
task's stop sequences and sampling, its metrics on a model whose answers are fixed here (values
worked out by hand), the code tasks' samples run as programs (only with consent), ruDetox predicted
and said to be unscored, MERA's submission entries, and malformed records named by file, line and field."""

from __future__ import annotations

import json
import random
import zipfile
from math import comb

import pytest
from mera_choice_files import nine_tasks
from mera_files import LAYOUTS, seven_tasks, write_snapshot
from mera_generative_files import SIMPLEAR_INSTRUCTION, arithmetic, code, generative_tasks, use
from support import read_samples

import rueval
from rueval.core.errors import DataError, RuevalError
from rueval.models.base import Capabilities, LanguageModel
from rueval.run.mera_export import export_mera

GENERATIVE = "simplear,rumultiar,use,rudetox,ruhumaneval,rucodeeval"
# each item's answer, by a text its prompt ends with; the code tasks' by the sample's seed
ANSWERS = {
    "12 + 30 =": " 42",  # SimpleAr: right
    "7 * 6 =": " 41",  # wrong
    "9 - 9 =": "  0",  # right once its leading spaces go (MERA's remove_whitespace)
    "2 + 2 ->": " 5",  # ruModAr's public_test: right
    "4 + 4 ->": " 8",  # wrong
    "(2 + 2) * 2 =": " 8\n(more)",  # ruMultiAr: right up to the stop
    "(1 - 4) * 2 =": "6",  # wrong
    "Задание 5.\nТекст задания.\nОтвет:": " РЕКА1",  # USE, text: 1 of 1
    "Задание 1.\nТекст: Текст задания.\nВарианты ответа:\n1) а\n2) б\n3) в\nОтвет:": " 3,1",  # choice: 1 of 1
    "Рецензии: \nСписок терминов:\n1) а\n2) б\n3) в\nОтвет:": " 1,2,4,3",  # matching: 2 of 4
    "Задание 16.\nВарианты ответа:\n1) а\n2) б\n3) в\nОтвет:": " 1,2.5",  # question 16: "1,2" (stop "."): 2 of 2
    "Нетоксичный текст:": " это неправда ",
}
ADD_SAMPLES = {0: "    return a + b\n", 2: "```python\n    return a + b\n```"}  # else "return a - b": fails
EVEN_SAMPLES = {0: "    while True:\n        pass\n", 1: "    x = bytearray(2**33)\n    return n % 2 == 0\n"}


class FixedModel(LanguageModel):
    """Answers each generation as ANSWERS say, cut at the request's stop sequences as a backend cuts."""

    identity = "test:fixed-mera-generative"
    capabilities = Capabilities(loglikelihood=False, generation=True)

    def __init__(self):
        self.asked = []

    def loglikelihood(self, requests, on_done=None):
        raise AssertionError("MERA's generative tasks generate")

    def generate(self, requests, on_done=None):
        self.asked += requests
        return [self._cut(self._answer(request), request.stop) for request in requests]

    @staticmethod
    def _answer(request):
        if "def add" in request.prompt:
            return ADD_SAMPLES.get(request.seed, "    return a - b\n")
        if "def even" in request.prompt:
            return EVEN_SAMPLES.get(request.seed, "    return n % 2 == 0\n")
        return next(answer for end, answer in ANSWERS.items() if request.prompt.endswith(end))

    @staticmethod
    def _cut(text, stops):
        return min((text[: text.index(stop)] for stop in stops if stop in text), key=len, default=text)


def pass_at(n, c, k):
    return 1 - comb(n - c, k) / comb(n, k)


@pytest.fixture(scope="module", params=list(LAYOUTS))
def generative_run(request, tmp_path_factory):
    base = tmp_path_factory.mktemp("mera-generative")
    tasks = generative_tasks()
    data = LAYOUTS[request.param](base / "mera", tasks)
    model = FixedModel()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RUEVAL_CACHE_DIR", str(base / "cache"))
        # ruModAr scores its public_test (val), which its submission does not take: asked on its own below
        evaluation = rueval.evaluate(
            model, GENERATIVE, data=data, out=base / "out", log_samples=True, confirm_run_unsafe_code=True
        )
    return tasks, model, evaluation, base


def test_arithmetic_is_scored_by_exact_match_after_leading_spaces(generative_run):
    _, _, evaluation, _ = generative_run
    assert evaluation.tasks["simplear"].metrics == {"exact_match": pytest.approx(100 * 2 / 3)}  # 42 and 0 right
    assert evaluation.tasks["rumultiar"].metrics == {"exact_match": pytest.approx(50.0)}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_rumodars_labelled_split_is_its_public_test(tmp_path, layout):
    data = LAYOUTS[layout](tmp_path / "mera", {"ruModAr": generative_tasks()["ruModAr"]})
    model = FixedModel()
    evaluation = rueval.evaluate(model, "rumodar", data=data)  # test has no answers: val is scored
    assert evaluation.tasks["rumodar"].split == "val"
    assert all(r.prompt.startswith("Вычисли результат") and "\n\n" not in r.prompt for r in model.asked)  # 0-shot
    assert evaluation.tasks["rumodar"].metrics == {"exact_match": pytest.approx(50.0)}  # 5 right, 8 wrong


def test_arithmetic_is_asked_with_meras_shots_and_instruction(generative_run):
    tasks, model, _, _ = generative_run
    train = tasks["SimpleAr"]["train"]
    draw = random.Random(1234)  # MERA's few-shot seed; each item's two demonstrations drawn in turn
    prompts = [r.prompt for r in model.asked if r.prompt.startswith("Напишите ответ")]
    for record, prompt in zip(tasks["SimpleAr"]["test"], prompts, strict=True):
        first, second = draw.sample(train, 2)
        first_text = SIMPLEAR_INSTRUCTION.format(inputs=first["inputs"]).strip()
        expected = [f"{first_text} {first['outputs']}", f"{second['inputs'].strip()} {second['outputs']}"]
        assert prompt == "\n\n".join([*expected, record["inputs"].strip()])
    assert {r.stop for r in model.asked if r.prompt.startswith("Напишите ответ")} == {("\n",)}


def test_use_is_graded_per_variant_with_demonstrations_of_the_same_question(generative_run):
    tasks, model, evaluation, _ = generative_run
    # variant 7: text 1 of 1, choice 1 of 1; variant 8: matching 2 of 4, question 16 2 of 2
    assert evaluation.tasks["use"].metrics == {"grade_norm": pytest.approx(100 * ((1 + 1) / 2 + (2 + 2) / 6) / 2)}
    # MERA's grade_norm.task<N>: per exam question, the mean of points over points possible
    assert evaluation.tasks["use"].breakdown == {
        "task5": {"grade_norm": pytest.approx(100.0), "n": 1},
        "task1": {"grade_norm": pytest.approx(100.0), "n": 1},
        "task26": {"grade_norm": pytest.approx(100 * 2 / 4), "n": 1},
        "task16": {"grade_norm": pytest.approx(100.0), "n": 1},
    }
    use_prompts = [r for r in model.asked if "Ответ:" in r.prompt and "Задание " in r.prompt]
    assert {r.stop for r in use_prompts} == {("\n", ".")}
    for request in use_prompts:  # its one demonstration answers the same exam question
        demonstration, question = request.prompt.rsplit("\n\nЗадание: ", 1)  # its own text may hold a blank line
        assert demonstration.split("\n")[0] == "Задание: " + question.split("\n")[0]


def test_code_samples_run_as_programs_and_give_pass_at_k(generative_run):
    _, model, evaluation, _ = generative_run
    code_requests = [r for r in model.asked if "def add" in r.prompt or "def even" in r.prompt]
    assert {(r.temperature, r.top_p) for r in code_requests} == {(0.6, 1.0)}  # MERA samples them
    assert {r.stop for r in code_requests} == {("\nclass", "\ndef", "\n#", "\nif", "\nprint")}
    # add: seeds 0 and 2 pass (2 inside a markdown fence); even: all but the loop and the allocation
    passing = {"add": 2, "even": 8}
    expected = {f"pass@{k}": 100 * (pass_at(10, 2, k) + pass_at(10, 8, k)) / 2 for k in (1, 5, 10)}
    assert evaluation.tasks["ruhumaneval"].metrics == pytest.approx(expected)
    assert evaluation.tasks["rucodeeval"].metrics == pytest.approx(
        {f"pass@{k}": 100 * pass_at(10, 2, k) for k in (1, 5, 10)}
    )
    (add, even) = [row.prediction for row in evaluation.predictions["ruhumaneval"]]
    assert [list(results) for results in add[:3]] == [["3", "10"], ["-1", "0"], ["3", "10"]]
    assert list(even[0]) == list(even[1]) == [None, None] and list(even[2]) == ["True", "False"]
    assert sum(list(r) == ["True", "False"] for r in even) == passing["even"]


def test_the_sample_log_holds_each_code_samples_request_and_the_items_pass_at_k(generative_run):
    _, _, _, base = generative_run
    add, even = read_samples(base / "out", "ruhumaneval")
    assert len(add["arguments"]) == 10 and add["pass@1"] == pytest.approx(2 / 10) and add["correct"] is False
    assert even["pass@5"] == pytest.approx(pass_at(10, 8, 5)) and len(even["prediction"]) == 10
    use_lines = read_samples(base / "out", "use")
    assert [line["correct"] for line in use_lines] == [True, True, False, True]  # matching: 2 of 4 points


def test_rudetox_is_predicted_and_says_why_it_is_not_scored(generative_run):
    _, model, evaluation, _ = generative_run
    (prompt,) = [r.prompt for r in model.asked if r.prompt.endswith("Нетоксичный текст:")]
    demonstration = 'Токсичное сообщение: "ты дурак"\nПерепиши его вежливо. Ответ: ты не прав'  # 1 shot
    assert prompt == demonstration + "\n\nТоксичный текст: это бред \nНетоксичный текст:"  # its inputs as they are
    assert "rudetox" not in evaluation.tasks and evaluation.predicted["rudetox"].score is None
    (line,) = [note for note in evaluation.notes if note.startswith("rudetox:")]
    assert "cannot be had offline" in line and "\n" not in line
    assert [row.prediction for row in evaluation.predictions["rudetox"]] == ["это неправда"]


def test_the_submission_writes_each_tasks_entries_as_mera_wants_them(generative_run):
    tasks, _, _, base = generative_run
    export_mera(base / "out", base / "submission.zip")
    with zipfile.ZipFile(base / "submission.zip") as archive:
        files = {name: json.loads(archive.read(name))["data"]["test"] for name in archive.namelist()}
    assert set(files) == {f"{name}.json" for name in tasks if name != "ruModAr"}
    assert [e["outputs"] for e in files["SimpleAr.json"]] == ["42", "41", "0"]
    assert [e["meta"] for e in files["USE.json"]][:2] == [{"id": 10, "id_task": "5", "variant": 7},
                                                         {"id": 11, "id_task": "1", "variant": 7}]  # fmt: skip
    assert files["ruDetox.json"] == [{"outputs": "это неправда", "meta": {"id": 30}}]
    (add, even) = files["ruHumanEval.json"]
    assert add["meta"] == {"id": 0} and len(add["outputs"]) == 10 and add["outputs"][0] == ["3", "10"]
    assert even["outputs"][0] == [None, None]


def test_code_tasks_refuse_to_run_without_consent(tmp_path, cli):
    data = write_snapshot(tmp_path / "mera", {"ruHumanEval": generative_tasks()["ruHumanEval"]})
    with pytest.raises(RuevalError, match="--confirm-run-unsafe-code"):
        rueval.evaluate(FixedModel(), "ruhumaneval", data=data)
    result = cli("run", "-t", "ruhumaneval", "-m", "hf:gpt2", "--data", data, "-o", tmp_path / "out")
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "--confirm-run-unsafe-code" in result.output
    assert not (tmp_path / "out" / "results.json").exists()


def test_mera_runs_the_generative_tasks_with_the_seven_and_exports_them_all(tmp_path, tiny_gpt2_dir, cli):
    data = write_snapshot(tmp_path / "mera", {**seven_tasks(), **nine_tasks(), **generative_tasks(test_answers=False)})
    run = cli("run", "-t", "mera", "-m", f"hf:{tiny_gpt2_dir}", "--data", data, "-o", tmp_path / "out",
              "--confirm-run-unsafe-code", "--predict-only")  # fmt: skip
    assert run.exit_code == 0, run.output
    assert "NOT in a sandbox" in run.output
    export = cli("export", "--format", "mera", tmp_path / "out", "-o", tmp_path / "sub.zip")
    assert export.exit_code == 0, export.output
    with zipfile.ZipFile(tmp_path / "sub.zip") as archive:
        assert len(archive.namelist()) == 23  # MERA's text tasks
        humaneval = json.loads(archive.read("ruHumanEval.json"))["data"]["test"]
    assert all(len(entry["outputs"]) == 10 for entry in humaneval)
    run_json = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run_json["confirm_run_unsafe_code"] is True  # recorded, and given anew by each command:
    resumed = cli("run", "--resume", "-o", tmp_path / "out")
    assert resumed.exit_code == 2 and "add --confirm-run-unsafe-code to run that code" in resumed.output
    assert cli("run", "--resume", "-o", tmp_path / "out", "--confirm-run-unsafe-code").exit_code == 0


@pytest.mark.parametrize(
    ("task", "record", "field"),
    [
        ("SimpleAr", arithmetic(SIMPLEAR_INSTRUCTION, 1, {"expr": "1 + 1"}, "2"), "inputs"),
        (
            "USE",
            {
                **use(1, "а", "text", "5", 1, 1),
                "meta": {"id": 1, "id_task": "5", "variant": 1, "score": 1, "type": "essay"},
            },
            "meta.type",
        ),  # fmt: skip
        (
            "USE",
            {
                **use(1, "а", "text", "5", 1, 1),
                "meta": {"id": 1, "id_task": 5, "variant": 1, "score": 1, "type": "text"},
            },
            "meta.id_task",
        ),  # fmt: skip
        ("ruHumanEval", code(1, ["3"], tests="[{'a': 1}"), "inputs.tests"),
        ("ruHumanEval", code(1, ["3"]), "outputs"),  # one result for two tests
        ("ruHumanEval", {**code(1, ["3", "10"]), "meta": {"id": 1}}, "meta.entry_point"),
    ],
)
def test_a_malformed_record_is_named_by_file_line_and_field(tmp_path, task, record, field):
    name = task.lower()
    good = generative_tasks()[task]
    split = "test" if task.startswith("ru") else "train"
    data = write_snapshot(tmp_path / "mera", {task: {**good, split: [*good[split], record]}})
    with pytest.raises(DataError) as caught:
        rueval.evaluate(FixedModel(), name, data=data, confirm_run_unsafe_code=True)
    message = str(caught.value)
    assert f"{split}.jsonl:{len(good[split]) + 1}:" in message and field in message and "\n" not in message
