"""No code from data: the known template-injection payloads, fed through the command line to every place
a task file or a data file gives rueval a template (an lm-eval task file's doc_to_text, doc_to_target,
doc_to_choice, description and fewshot_config, rendered by lm-eval's own code in rueval's sandbox; MERA's
instructions; a task file that --resume reads again), each end in one line, exit code 2, and no file
written by the payload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mera_files import LAYOUTS, parus, seven_tasks
from task_files import REVIEWS, task_file

# The issue's payload as it was found: it ran `id` as the user under a plain jinja2.Environment.
ISSUE_PAYLOAD = (
    "{{ (text.__class__.__mro__[1].__subclasses__()|selectattr('__name__','equalto','_wrap_close')|first)"
    ".__init__.__globals__.system('id > F') }}"
)
# Refused when the task file is read (a __dunder__ name in the template)
READ_TIME = [
    ISSUE_PAYLOAD,
    "{{ cycler.__init__.__globals__.os.system('id > F') }}",
    "{{ joiner.__init__.__globals__.os.system('id > F') }}",
    "{{ namespace.__init__.__globals__.os.system('id > F') }}",
    "{{ lipsum.__globals__['os'].system('id > F') }}",
    "{{ text | attr('__class__') }}",
    "{{ [text] | map(attribute='__class__') | list }}",
]
# Refused when a record fills a template: names that come from the records (names written in the template,
# even built as '_' ~ '_class__', are constants, refused when the file is read), format strings, sizes,
# and Jinja's own objects reached without a dunder name
RUN_TIME = [
    ("{{ text | attr(attribute) }}", "access to attribute '__class__' of 'str' object is unsafe"),
    ("{{ text[attribute] }}", "access to attribute '__class__' of 'str' object is unsafe"),
    ("{{ [text] | map(attribute=attribute) | list }}", "access to attribute '__class__' of 'str' object is unsafe"),
    ("{{ ('{0.' ~ attribute ~ '.mro}').format(text) }}", "access to attribute '__class__' of 'str' object is unsafe"),
    ("{{ ('{t.' ~ attribute ~ '}').format_map({'t': text}) }}", "access to attribute '__class__'"),
    ("{{ '%s' | format(text | attr(init)) }}", "access to attribute '__init__' of 'str' object is unsafe"),
    ("{{ '{:>1500000000}'.format(text) }}", "width or precision above"),
    ("{{ '%1500000000s' % text }}", "width or precision above"),
    ("{{ text * 1000000000 }}", "the text would pass"),
    ("{{ ((cycler | attr(init)) | attr(globals))['os'].system('id > F') }}", "unsafe"),
    ("{{ (namespace | attr(init)).system('id > F') }}", "unsafe"),
]
NAMES = {"attribute": "__class__", "init": "__init__", "globals": "__globals__"}  # names a record may hold
RECORDS = [{**review, **NAMES} for review in REVIEWS]


def task_folder(root: Path, text: str = "'Отзыв: {{text}} Хороший?'", target: str = "label", choice: str = "") -> Path:
    """hostile.yaml: an lm-eval multiple-choice task whose doc_to_text is line 8, doc_to_target 9, doc_to_choice 10."""
    body = f"output_type: multiple_choice\ndoc_to_text: {text}\ndoc_to_target: {target}\n"
    task_file(root, "hostile", body + f"doc_to_choice: {choice or '[нет, да]'}\n", RECORDS)
    return root


def quoted(payload: str, written: Path) -> str:
    """The payload, writing to ``written``, as a YAML double-quoted text."""
    return json.dumps(payload.replace("id > F", f"id > {written}"), ensure_ascii=False)


def refused(result, *expected: str) -> str:
    """The run's one error line: exit code 2, no traceback (a model's loading may be reported before)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def run(cli, folder: Path, out: Path, model: str = "hf:some/model"):
    return cli("run", "--include-path", folder, "-t", "hostile", "-m", model, "--limit", "2", "-o", out)


@pytest.mark.parametrize("payload", READ_TIME)
def test_a_payload_in_doc_to_text_is_refused_when_the_task_file_is_read(cli, tmp_path, payload):
    written = tmp_path / "pwned"
    folder = task_folder(tmp_path / "tasks", text=quoted(payload, written))
    result = run(cli, folder, tmp_path / "out")
    refused(result, f"{folder / 'hostile.yaml'}:8: field 'doc_to_text': the template is refused", "'__")
    assert not written.exists() and not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("payload", "message"), RUN_TIME)
def test_a_payload_in_doc_to_text_is_refused_when_a_record_fills_it(cli, tmp_path, tiny_gpt2_dir, payload, message):
    written = tmp_path / "pwned"
    folder = task_folder(tmp_path / "tasks", text=quoted(payload, written))
    result = run(cli, folder, tmp_path / "out", f"hf:{tiny_gpt2_dir}")
    refused(result, f"{folder / 'hostile.yaml'}: task hostile: a template cannot be filled", message)
    assert not written.exists()


@pytest.mark.parametrize(("key", "line"), [("doc_to_target", 9), ("doc_to_choice", 10)])
def test_a_payload_in_doc_to_target_or_doc_to_choice_is_refused(cli, tmp_path, key, line):
    written = tmp_path / "pwned"
    folder = task_folder(tmp_path / "tasks", **{key.removeprefix("doc_to_"): quoted(ISSUE_PAYLOAD, written)})
    refused(run(cli, folder, tmp_path / "out"), f"hostile.yaml:{line}: field '{key}': the template is refused")
    assert not written.exists()


@pytest.mark.parametrize("key", ["description", "fewshot_config"])
def test_a_payload_in_description_or_fewshot_config_is_refused(cli, tmp_path, key):
    written = tmp_path / "pwned"
    folder = task_folder(tmp_path / "tasks")
    value = quoted(ISSUE_PAYLOAD, written) if key == "description" else "{doc_to_text: " + quoted(ISSUE_PAYLOAD, written) + "}"  # fmt: skip  # noqa: E501
    with open(folder / "hostile.yaml", "a", encoding="utf-8") as file:
        file.write(f"{key}: {value}\n")
    field = "description" if key == "description" else "doc_to_text"
    refused(run(cli, folder, tmp_path / "out"), f"hostile.yaml:11: field '{field}': the template is refused")
    assert not written.exists()


@pytest.mark.slow
def test_resume_reads_the_task_file_again_through_the_sandbox(cli, tmp_path, tiny_gpt2_dir):
    """A shared run folder names its task files' folder in run.json: --resume reads them as they are now."""
    written = tmp_path / "pwned"
    folder = task_folder(tmp_path / "tasks")
    out = tmp_path / "out"
    first = run(cli, folder, out, f"hf:{tiny_gpt2_dir}")
    assert first.exit_code == 0, first.output
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["include_path"] == [str(folder)]
    task_folder(folder, text=quoted(ISSUE_PAYLOAD, written))  # the task file, edited in the shared folder
    refused(cli("run", "--resume", "-o", out), f"{folder / 'hostile.yaml'}:8: field 'doc_to_text'", "'__")
    assert not written.exists()


MERA_PAYLOADS = [
    ("{premise.__class__.__mro__}", "more than a field name"),
    ("{premise.__init__.__globals__}", "more than a field name"),
    ("{premise.nope}", "more than a field name"),
    ("{premise[0]}", "more than a field name"),
    ("{0.__class__}", "more than a field name"),
    ("{premise:>1500000000}", "width or precision above"),
    ("{premise:{choice1}}", "a field inside a spec"),
    ("{hypothesis}", "not among the fields"),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("instruction", "message"), MERA_PAYLOADS)
def test_a_hostile_mera_instruction_is_one_error_naming_file_line_and_field(
    cli, tmp_path, layout, instruction, message
):  # noqa: E501
    tasks = seven_tasks()
    tasks["PARus"]["train"][1] = {**parus(2, "2"), "instruction": instruction}
    data = LAYOUTS[layout](tmp_path / "mera", tasks)
    line = refused(cli("run", "--data", data, "-t", "parus", "-m", "majority", "-o", tmp_path / "out"), message)
    where = "train.jsonl:2: field 'instruction'" if layout == "dataset snapshot" else "field 'instruction': record 2"
    assert where in line
