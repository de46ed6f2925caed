"""Tasks of one's own declared in YAML files (lm-evaluation-harness's keys) and loaded with --include-path:
a classification, a choice and a generation task run through `rueval run`, and a bad file is named
with its line and key."""

from __future__ import annotations

import json
from importlib import import_module
from pathlib import Path

import pytest
from support import read_jsonl, write_jsonl, write_paraphrase_data, write_paraphrase_modules

from rueval.core.errors import RuevalError
from rueval.tasks import get_task, register
from rueval.tasks.include import include
from rueval.tasks.prompts import get_prompt

CLASSIFICATION = """\
task: paraphrase_yaml
task_alias: Парафразы
dataset_path: Paraphrase
training_split: train
validation_split: val
test_split: test
output_type: multiple_choice
doc_to_text: "Предложение 1: {{sentence1}} Предложение 2: {{sentence2}} Вопрос: они значат одно и то же? Ответ:"
doc_to_target: label
doc_to_choice: ["Нет", "Да"]
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: mcc
"""
CHOICE = """\
task: cause_yaml
dataset_path: json
dataset_kwargs:
  data_files: {train: choice/train.jsonl, test: choice/test.jsonl}
training_split: train
test_split: test
output_type: multiple_choice
doc_to_text: "{{premise}} Почему?"
doc_to_target: "{{ label }}"
doc_to_choice: "{{[first, second]}}"
"""
GENERATION = """\
task: capital_yaml
tag: geography
dataset_path: capitals
training_split: train
test_split: test
output_type: generate_until
doc_to_text: "Вопрос: {{question}}\\nОтвет:"
doc_to_target: answer
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 5
metric_list:
  - metric: exact_match
  - metric: f1
"""


def _files(folder: Path) -> dict[str, list[dict]]:
    """The three tasks' YAML and data files in ``folder``; returns the paraphrase task's splits."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "paraphrase.yaml").write_text(CLASSIFICATION, encoding="utf-8")
    (folder / "more").mkdir()
    (folder / "more" / "cause.yml").write_text(CHOICE, encoding="utf-8")
    (folder / "more" / "capital.yaml").write_text(GENERATION, encoding="utf-8")
    causes = [{"premise": f"Ветер сорвал крышу {i}.", "first": "Был ураган.", "second": "Был штиль.", "label": 0}
              for i in range(4)]  # fmt: skip
    write_jsonl(folder / "more" / "choice" / "train.jsonl", causes)
    write_jsonl(folder / "more" / "choice" / "test.jsonl", [{**causes[0], "label": 1}, causes[1]])
    capitals = [{"question": f"Столица страны номер {i}?", "answer": ["Москва", "москва"]} for i in range(3)]
    write_jsonl(folder / "more" / "capitals" / "train.jsonl", capitals)
    write_jsonl(folder / "more" / "capitals" / "test.jsonl", [{"question": "Столица России?", "answer": "Москва"}])
    return write_paraphrase_data(folder / "Paraphrase")


@pytest.fixture
def yaml_dir(tmp_path: Path, task_registry) -> tuple[Path, dict[str, list[dict]]]:
    return tmp_path / "tasks", _files(tmp_path / "tasks")


def test_every_yaml_file_under_the_folder_declares_a_task(yaml_dir):
    folder, _ = yaml_dir
    assert sorted(task.name for task in include(folder)) == ["capital_yaml", "cause_yaml", "paraphrase_yaml"]
    paraphrase, cause, capital = get_task("paraphrase_yaml"), get_task("cause_yaml"), get_task("capital_yaml")
    assert (paraphrase.kind, paraphrase.labels, paraphrase.text_fields, paraphrase.metrics, paraphrase.title) == (
        "classification",
        ("Нет", "Да"),
        ("sentence1", "sentence2"),
        ("accuracy", "mcc"),
        "Парафразы",
    )
    assert (cause.kind, cause.labels, cause.inputs, cause.splits) == (
        "classification",
        (0, 1),
        ("premise", "first", "second"),
        ("train", "test"),
    )
    assert (capital.kind, capital.benchmark, capital.metrics, capital.normalization) == (
        "span",
        "geography",
        ("exact_match", "token_f1"),
        "squad",
    )
    assert include(folder / "paraphrase.yaml") == [paraphrase]  # read again: the same task, no clash


def test_yaml_prompts_are_jinja2_templates_with_lm_evals_delimiter(yaml_dir):
    folder, splits = yaml_dir
    include(folder)
    from rueval.data import open_data

    example = open_data(None).load(get_task("paraphrase_yaml"), "test").examples[0]
    (question,) = get_prompt("paraphrase_yaml").questions(example)
    row = splits["test"][0]
    assert question.context == (
        f"Предложение 1: {row['sentence1']} Предложение 2: {row['sentence2']} Вопрос: они значат одно и то же? Ответ:"
    )
    assert [(c.continuation, c.label) for c in question.choices] == [(" Нет", "Нет"), (" Да", "Да")]
    assert question.target == (" Да" if row["label"] == 1 else " Нет")  # the gold given as its position
    (cause,) = get_prompt("cause_yaml").questions(open_data(None).load(get_task("cause_yaml"), "test").examples[0])
    assert (cause.context, [c.continuation for c in cause.choices], cause.target) == (
        "Ветер сорвал крышу 0. Почему?",
        [" Был ураган.", " Был штиль."],
        " Был штиль.",
    )
    capital = get_prompt("capital_yaml")
    (question,) = capital.questions(open_data(None).load(get_task("capital_yaml"), "train").examples[0])
    assert (question.context, question.target, capital.stop, capital.max_new_tokens) == (
        "Вопрос: Столица страны номер 0?\nОтвет:",
        " Москва",
        ("\n",),
        (5, 5),
    )


def _run(cli, out: Path, folder: Path, model: str, tasks: str, *more: str) -> dict:
    result = cli("run", "--include-path", folder, "-t", tasks, "-m", model, "-o", out, *more)
    assert result.exit_code == 0, result.output
    return json.loads((out / "results.json").read_text(encoding="utf-8"))["tasks"]


def test_a_yaml_task_runs_with_majority_tfidf_and_a_language_model(yaml_dir, cli, tmp_path, tiny_gpt2_dir):
    folder, splits = yaml_dir
    gold = ["Да" if row["label"] else "Нет" for row in splits["test"]]
    majority = _run(cli, tmp_path / "majority", folder, "majority", "paraphrase_yaml,geography")
    answer = "Нет" if [row["label"] for row in splits["train"]].count(0) > 16 else "Да"
    assert majority["paraphrase_yaml"]["metrics"]["accuracy"] == 100 * gold.count(answer) / len(gold)
    # the most frequent train answer is right on every question
    assert majority["capital_yaml"]["metrics"] == {"exact_match": 100.0, "token_f1": 100.0}
    tfidf = _run(cli, tmp_path / "tfidf", folder, "tfidf", "paraphrase_yaml,cause_yaml")
    assert tfidf["paraphrase_yaml"]["metrics"]["accuracy"] == 100.0
    assert tfidf["cause_yaml"]["metrics"] == {"accuracy": 50.0}  # the train options' first, always
    lm = _run(cli, tmp_path / "lm", folder, f"hf:{tiny_gpt2_dir}", "paraphrase_yaml,cause_yaml,capital_yaml")
    predictions = read_jsonl(tmp_path / "lm" / "predictions" / "paraphrase_yaml.jsonl")
    assert [row["gold"] for row in predictions] == gold and {row["prediction"] for row in predictions} <= {"Да", "Нет"}
    right = sum(row["prediction"] == row["gold"] for row in predictions)
    assert lm["paraphrase_yaml"]["metrics"]["accuracy"] == pytest.approx(100 * right / len(gold))
    (generated,) = read_jsonl(tmp_path / "lm" / "predictions" / "capital_yaml.jsonl")
    assert isinstance(generated["prediction"], str) and generated["gold"] == ["Москва"]


def test_yaml_and_python_declarations_of_one_task_score_alike(yaml_dir, cli, tmp_path, monkeypatch, tiny_gpt2_dir):
    """The YAML task beside the same task declared in Python (as tests/tasks/test_new_task.py declares
    it), on the same files: the same prompt, so the same scores for every model."""
    folder, _ = yaml_dir
    monkeypatch.syspath_prepend(str(write_paraphrase_modules(tmp_path / "package")))
    register(*import_module("paraphrase").TASKS)
    for model in ("majority", "tfidf", f"hf:{tiny_gpt2_dir}"):
        out = tmp_path / model.replace("/", "_")
        shots = ("--shots", "0,1") if model.startswith("hf:") else ()
        both = _run(cli, out, folder, model, "paraphrase,paraphrase_yaml", "--data", folder, *shots)
        assert both["paraphrase"]["metrics"]["accuracy"] == both["paraphrase_yaml"]["metrics"]["accuracy"], model
        python, declared = (
            read_jsonl(out / "predictions" / f"{name}.jsonl") for name in ("paraphrase", "paraphrase_yaml")
        )
        assert [("Нет", "Да")[row["prediction"]] for row in python] == [row["prediction"] for row in declared], model


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (CLASSIFICATION.replace("multiple_choice", "loglikelihood"), "output_type", "expected"),
        (CLASSIFICATION.replace("target: label", "target: '{{label}} {{x}}'"), "doc_to_target", "field"),
        (CLASSIFICATION + "num_fewshot: 5\n", "num_fewshot", "--shots"),
        (CLASSIFICATION + "description: 'Ответь.'\n", "description", "doc_to_text"),
        (CLASSIFICATION + "tokenizer: x\n", "tokenizer", "unknown key"),
        (CLASSIFICATION.replace("test_split: test", "test_split: dev"), "test_split", "no such file"),
        (CLASSIFICATION.replace("{{sentence2}}", "{{sentence2"), "doc_to_text", "not a Jinja2 template"),
        (CLASSIFICATION.replace("- metric: mcc", "- metric: bleu"), "metric_list", "expected one of"),
        (CLASSIFICATION.replace('["Нет", "Да"]', '["Да"]'), "doc_to_choice", "two or more"),
        (CLASSIFICATION.replace('["Нет", "Да"]', '["\u0439", "\u0438\u0306"]'), "doc_to_choice", "same text"),
        (CLASSIFICATION + "process_docs: !function utils.process\n", "process_docs", "runs no code"),
        ("task: x\noutput_type: multiple_choice: yes\n", "output_type", "not valid YAML"),
    ],
)
def test_a_bad_task_file_is_named_with_its_line_and_key(yaml_dir, text, key, message):
    folder, _ = yaml_dir
    file = folder / "paraphrase.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(RuevalError, match=message) as error:
        include(file)
    line = next(n for n, written in enumerate(text.splitlines(), 1) if written.startswith(f"{key}:"))
    named = f"{file}:{line}: field '{key}'" if "YAML" not in str(error.value) else f"{file}:{line}:"
    assert str(error.value).startswith(named), str(error.value)


def test_a_task_name_of_rueval_or_of_another_file_is_refused(yaml_dir):
    folder, _ = yaml_dir
    (folder / "paraphrase.yaml").write_text(CLASSIFICATION.replace("task: paraphrase_yaml", "task: rcb"))
    with pytest.raises(RuevalError, match="task name 'rcb' is taken \\(by rueval's own tasks\\)"):
        include(folder / "paraphrase.yaml")
    (folder / "paraphrase.yaml").write_text(CLASSIFICATION, encoding="utf-8")
    (folder / "copy.yaml").write_text(CLASSIFICATION, encoding="utf-8")
    with pytest.raises(RuevalError, match="task name 'paraphrase_yaml' is taken"):
        include(folder / "copy.yaml", folder / "more", folder / "paraphrase.yaml")


def test_the_cli_lists_included_tasks_and_names_a_missing_folder(yaml_dir, cli):
    folder, _ = yaml_dir
    listed = cli("tasks", "--include-path", f"{folder / 'paraphrase.yaml'},{folder / 'more'}")
    assert listed.exit_code == 0 and "USER" in listed.output and "GEOGRAPHY" in listed.output, listed.output
    assert get_task("paraphrase_yaml").source == str((folder / "paraphrase.yaml").resolve())
    missing = cli("tasks", "--include_path", folder / "nowhere")
    assert missing.exit_code == 2 and "no such folder" in missing.output


def test_a_yaml_tasks_run_is_ranked_against_no_papers_rows(yaml_dir, cli, tmp_path):
    folder, _ = yaml_dir
    results = _run(cli, tmp_path / "run", folder, "majority", "paraphrase_yaml")
    assert results["paraphrase_yaml"]["benchmark"] == "user"  # its tag's default: a benchmark without rows
    result = cli("leaderboard", tmp_path / "run", "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    assert "leaderboard" not in result.output and not (tmp_path / "board").exists()


@pytest.mark.parametrize(
    "target, choices, labels, golds",
    [
        ("label", ["1", "2", "3"], [0, 1, 2, 2], ["1", "2", "3", "3"]),  # an integer is a position, never a text
        ("label", ["1", "2", "3"], ["1", "3"], ["1", "3"]),  # a field's text is an answer's exact text
        ('"{{label}}"', ["1", "2", "3"], ["0", "2", 1], ["1", "3", "2"]),  # a rendering of digits is a position
        ('"{{label}}"', ["Нет", "Да"], ["Да", 0], ["Да", "Нет"]),
        ("label", ["Да", "да"], ["Да", "да", "да"], ["Да", "да", "да"]),  # exact: case counts
        ("label", ["й", "ё"], ["\u0438\u0306", "ё"], ["й", "ё"]),  # compared in NFC; the answers stay as written
    ],
)
def test_a_task_files_labels_read_as_lm_eval_reads_them(yaml_dir, target, choices, labels, golds):
    """lm-eval 0.4.13 (api/task.py): a field target keeps its type, an integer an index into the
    choices and a text one choice's exact text; a template's rendering of digits is an index. rueval
    compares texts in Unicode NFC."""
    folder, _ = yaml_dir
    declared = CLASSIFICATION.replace('["Нет", "Да"]', json.dumps(choices, ensure_ascii=False))
    declared = declared.replace("doc_to_target: label", f"doc_to_target: {target}")
    (folder / "paraphrase.yaml").write_text(declared, encoding="utf-8")
    rows = [{"idx": i, "sentence1": f"Текст {i}.", "sentence2": "Другой текст.", "label": label}
            for i, label in enumerate(labels)]  # fmt: skip
    write_jsonl(folder / "Paraphrase" / "val.jsonl", rows)
    (task,) = include(folder / "paraphrase.yaml")
    assert task.labels == tuple(choices)
    from rueval.data import open_data

    examples = open_data(str(folder)).load(task, "val").examples
    assert [example.label for example in examples] == golds
