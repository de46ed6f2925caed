"""What the contamination audit reads of an item: a record's text as a dataset dump holds it, and the
documents of lm-evaluation-harness task files.

A record's text is its string fields joined in order by newlines, nested ones included. Task files' tasks
are built by lm-eval's TaskManager after rueval's checks (rueval.tasks.lm_eval_tasks: templates
render in rueval's sandbox; a task folder's Python runs only when trusted); a group or a tag stands for its
tasks. A task's documents are lm-eval's ``eval_docs`` (its test split, else its validation split), each
named by its position there (lm-eval's doc_id). Of a document the audit reads:

- its text: its string fields joined in order (``fields``, what a dataset dump holds), or its prompt
  (``prompt``: the task's ``doc_to_text``, the zero-shot prompt lm-eval builds);
- its decontamination query, which the corpus overlap looks up: the task's ``doc_to_decontamination_query``
  when it declares one, else its ``doc_to_text`` (the query lm-eval's Task falls back to).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rueval.core.errors import RuevalError


def fields_text(record: Mapping[str, Any]) -> str:
    """A record's string fields joined in order by newlines (empty ones left out), nested ones included."""
    return "\n".join(text for text in _strings(record) if text)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _strings(item)]
    return []


def task_file_tasks(names: Sequence[str], include_path: Sequence[str] = (), trusted: bool = False) -> dict[str, Any]:
    """lm-eval's tasks (ConfigurableTask) of these names by task name, a group's or tag's each."""
    from rueval.tasks.lm_eval_tasks import TaskFiles

    files = TaskFiles.checked(names, include_path, trusted, confirmed=True)  # unsafe_code runs answers; none made here
    try:
        tasks: dict[str, Any] = files.manager.load(list(names))["tasks"]
    except RuevalError:
        raise
    except Exception as e:  # noqa: BLE001 - lm-eval's errors about a task file are many kinds, each the user's to fix
        raise RuevalError(f"lm-eval could not build the task files: {type(e).__name__}: {str(e)[:300]}") from None
    return tasks


def split_of(task: Any) -> str:
    """The split ``eval_docs`` reads."""
    return str(task.config.test_split if task.has_test_docs() else task.config.validation_split)


def document_text(task: Any, doc: Mapping[str, Any], text: str, name: str, index: int) -> str:
    """A document's text as ``text`` asks: its string fields joined by newlines, or its prompt."""
    if text == "fields":
        return fields_text(doc)
    return _text(task.doc_to_text(doc), name, index, "prompt")


def decontamination_query(task: Any, doc: Mapping[str, Any], name: str, index: int) -> str:
    """A document's decontamination query. A field name, a ``!function`` or a template, as lm-eval's
    ConfigurableTask.doc_to_decontamination_query reads them; a template's text is taken as it renders
    (lm-eval 0.4.13 hands it to ast.literal_eval, which refuses plain text)."""
    from lm_eval.utils import apply_template

    query = task.config.doc_to_decontamination_query
    if query is None:
        value = task.doc_to_text(doc)
    elif callable(query):
        value = query(doc)
    elif query in task.features:
        value = doc[query]
    else:
        value = apply_template(query, doc)
    return _text(value, name, index, "decontamination query")


def _text(value: Any, name: str, index: int, what: str) -> str:
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        value = "\n".join(value)
    if not isinstance(value, str):
        raise RuevalError(f"task {name}, document {index}: its {what} is {value!r:.60}, not text")
    return value
