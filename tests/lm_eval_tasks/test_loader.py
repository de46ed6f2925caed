"""Reading lm-eval task folders before lm-eval builds anything from them: only asked tasks' Python is
looked for and needs --trust-task-code (lm-eval's own installed tasks do not), files that fail rueval's
bounds are named, templates render in rueval's sandbox, and the folder's tasks are listed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from task_files import CHOICE, task_file

from rueval.core.errors import DataError, RuevalError
from rueval.core.sandbox import Sandbox
from rueval.tasks.lm_eval_tasks import TaskFiles, lm_eval_module, task_file_names

ISSUE_PAYLOAD = (
    "{{ (text.__class__.__mro__[1].__subclasses__()|selectattr('__name__','equalto','_wrap_close')|first)"
    ".__init__.__globals__.system('id > F') }}"
)


def folder_with_code(root):
    """Two tasks: ``mine`` includes a template whose process_docs is Python; ``plain`` runs none; a group of both."""
    (root / "_template.yaml").write_text("process_docs: !function helpers.prepare\n", encoding="utf-8")
    task_file(root, "mine", "include: _template.yaml\n" + CHOICE)
    task_file(root, "plain", CHOICE)
    (root / "both.yaml").write_text("group: both\ntask: [mine, plain]\n", encoding="utf-8")
    return root


def test_python_named_by_an_asked_task_or_what_it_includes_needs_consent(tmp_path):
    files = TaskFiles.finding(["both"], [str(folder_with_code(tmp_path))])
    assert [str(code) for code in files.task_code(["both"])] == [f"{tmp_path / '_template.yaml'}:1: helpers.prepare"]
    with pytest.raises(RuevalError) as refused:
        files.check(["mine"], trusted=False, confirmed=False)
    assert str(refused.value) == (
        f"the task files run Python ({tmp_path / '_template.yaml'}:1: helpers.prepare): "
        "give --trust-task-code to run it"
    )
    files.check(["mine"], trusted=True, confirmed=False)
    files.check(["plain"], trusted=False, confirmed=False)  # only the asked tasks' files count


def test_lm_eval_s_own_tasks_run_lm_eval_s_installed_code_without_consent():
    files = TaskFiles.finding(["hellaswag"])
    assert any(file.name.endswith(".yaml") for file in files.files(["hellaswag"]))
    assert files.task_code(["hellaswag"]) == []
    files.check(["hellaswag"], trusted=False, confirmed=False)


def test_a_file_rueval_does_not_read_is_a_warning_unless_an_asked_task_is_in_it(tmp_path, capsys):
    task_file(tmp_path, "plain", CHOICE)
    (tmp_path / "broken.yaml").write_text("task: [unclosed\n", encoding="utf-8")
    (tmp_path / "twice.yaml").write_text("task: twice\ntask: again\n" + CHOICE, encoding="utf-8")
    files = TaskFiles([str(tmp_path)], defaults=False)
    warned = capsys.readouterr().err
    assert f"{tmp_path / 'broken.yaml'}:2: not valid YAML" in warned
    assert f"{tmp_path / 'twice.yaml'}:2: field 'task': key given twice (first on line 1)" in warned
    files.check(["plain"], trusted=False, confirmed=False)
    with pytest.raises(DataError, match="key given twice"):
        files.check(["again"], trusted=True, confirmed=False)


def test_names_go_to_the_include_path_first_then_rueval_then_lm_eval(tmp_path):
    task_file(tmp_path, "parus", CHOICE)  # a folder's task of rueval's name: the user pointed at it
    assert task_file_names(["parus", "rcb"], [str(tmp_path)]) == ("parus",)
    assert task_file_names(["rcb", "rsg"], []) == ()
    assert task_file_names(["rcb", "xstorycloze_ru"], []) == ("xstorycloze_ru",)
    with pytest.raises(RuevalError) as unknown:
        task_file_names(["no_such_task"], [str(tmp_path)])
    assert str(unknown.value).startswith("unknown task 'no_such_task'; expected one of: lidirus, rcb, parus")
    assert str(unknown.value).endswith(f"; nor is it among lm-eval's tasks, groups and tags (nor under {tmp_path})")


def test_lm_eval_renders_templates_in_rueval_s_sandbox(tmp_path):
    import jinja2

    lm_eval = lm_eval_module()
    assert isinstance(lm_eval.utils.env, Sandbox)
    written = tmp_path / "pwned"
    with pytest.raises(jinja2.TemplateError):
        lm_eval.utils.apply_template(ISSUE_PAYLOAD.replace("F", str(written)), {"text": "x"})
    assert lm_eval.utils.apply_template("{{ text | regex_replace('a+', 'b') }}", {"text": "caat"}) == "cbt"
    assert not written.exists()


def test_without_the_extra_a_task_file_is_one_line_naming_it(tmp_path, monkeypatch):
    """Fault injection: lm-eval absent (a None in sys.modules makes its import fail)."""
    monkeypatch.setitem(__import__("sys").modules, "lm_eval", None)
    with pytest.raises(RuevalError, match=r"^task files need the lm-eval extra: pip install 'rueval\[lm-eval\]'$"):
        task_file_names(["plain"], [str(tmp_path)])
    with pytest.raises(RuevalError, match="unknown task 'no_such_task'"):
        task_file_names(["no_such_task"], [])


def test_rueval_tasks_lists_a_folder_s_task_files(cli, tmp_path):
    folder_with_code(tmp_path)
    listed = cli("tasks", "--include-path", tmp_path)
    assert listed.exit_code == 0, listed.output
    for text in ("mine", "plain", "both", "group", "multiple_choice", "helpers.prepare"):
        assert text in listed.stdout


def test_a_fifo_in_the_include_folder_is_one_line_not_a_wait(tmp_path):
    """lm-eval's index opens every YAML file of the folder: a FIFO would keep it waiting for a writer."""
    task_file(tmp_path, "plain", CHOICE)
    os.mkfifo(tmp_path / "mine.yaml")
    with pytest.raises(DataError, match="not a regular file, which lm-eval would wait on"):
        task_file_names(["plain"], [str(tmp_path)])


def test_importing_rueval_s_lm_eval_model_sandboxes_lm_eval_s_templates(tmp_path):
    """The Python route (lm_eval.simple_evaluate with RuevalLM) renders in the sandbox too, in a process
    that never ran `rueval run`."""
    written = tmp_path / "pwned"
    script = (
        "import jinja2, lm_eval.utils, rueval.models.backends.lm_eval_lm\n"
        "print(type(lm_eval.utils.env).__name__)\n"
        "try:\n"
        f"    lm_eval.utils.apply_template({ISSUE_PAYLOAD.replace('F', str(written))!r}, {{'text': 'x'}})\n"
        "except jinja2.TemplateError:\n"
        "    print('refused')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["Sandbox", "refused"], done.stderr
    assert not written.exists()
