"""MERA's generative text tasks, which exist in rueval only as MERA's: SimpleAr, ruModAr, ruMultiAr
(arithmetic), USE (the Unified State Exam in Russian), ruDetox (detoxification), ruHumanEval and
ruCodeEval (code). How a MERA record becomes a record of the task's layout (``convert_*``, declared
with the other MERA tasks in rueval.data.mera_tasks), MERA's settings for each task that are not in
its data (``GENERATIVE``), and each task's entry of MERA's submission (``submission_entry``).

Sources: MERA-Evaluation/MERA at 9cf05b2 -
- benchmark_tasks/<task>/<task>.yaml: the shots' forms (``fewshot_config``), the generation
  settings (``generation_kwargs``; the others' from custom_generate_task.yaml: greedy, until "\\n"),
  the code tasks' 10 samples (``repeats``) and their pass@1/5/10, USE's metrics;
- scripts/run_benchmark.sh: the shots each task runs with (simplear 2; rumultiar, use, rudetox 1;
  rumodar, ruhumaneval, rucodeeval 0), and the code tasks sampled at temperature 0.6
  (RUHUMANEVAL_GEN_KWARGS) where the others are greedy;
- benchmark_tasks/use/utils.py: USE's demonstration form per question type and its grading;
- benchmark_tasks/ruhumaneval/utils.py (rucodeeval's is the same): what a program is asked;
- scripts/log_to_submission.py: the submission's entries.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rueval.data.mera_record import MeraRecord

CODE_STOP = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")


@dataclass(frozen=True)
class GenerativeSettings:
    """MERA's settings for one generative task beyond its MeraTask: ``query_strip``: the first demonstration
    (the instruction filled) is stripped; ``until`` its stop sequences; ``samples`` answers generated
    per item (lm-eval's ``repeats``), sampled at ``temperature`` (None: greedy); ``executes``: its answers
    are programs to run. (Which demonstrations an item gets is its MeraTask's ``demos_within``.)"""

    query_strip: bool = True
    until: tuple[str, ...] = ("\n",)
    samples: int = 1
    temperature: float | None = None
    executes: bool = False
    demo_strip: bool = True  # a demonstration's inputs text stripped (ruModAr's and ruDetox's are not)


GENERATIVE: dict[str, GenerativeSettings] = {
    "simplear": GenerativeSettings(),
    "rumodar": GenerativeSettings(demo_strip=False),
    "rumultiar": GenerativeSettings(),
    "use": GenerativeSettings(query_strip=False, until=("\n", ".")),
    "rudetox": GenerativeSettings(demo_strip=False),
    "ruhumaneval": GenerativeSettings(until=CODE_STOP, samples=10, temperature=0.6, executes=True),
    "rucodeeval": GenerativeSettings(until=CODE_STOP, samples=10, temperature=0.6, executes=True),
}
# USE's demonstration form (after the first) per question type, over the record's inputs
USE_DEMOS = {
    "text": "Задание: {task}\n{text}\nОтвет:",
    "multiple_choice_options_within_text": "Задание: {task}\n{text}\nОтвет:",
    "matching": "Задание: {task}\nТекст: {text}\nРецензии: {additional_text}\nСписок терминов:\n{choices}\nОтвет:",
    "multiple_choice_based_on_text": "Задание: {task}\nТекст: {text}\nВарианты ответа:\n{choices}\nОтвет:",
    "multiple_choice_independent_options": "Задание: {task}\nВарианты ответа:\n{choices}\nОтвет:",
}
USE_TYPES = tuple(USE_DEMOS)
NOT_MERA = GenerativeSettings()  # what another task is, as far as these settings go
# why a task's predictions are not scored, where that is not for want of answers
UNSCORED = {
    "rudetox": "MERA's J score needs its style, meaning and fluency classifiers (models on the Hugging Face "
    "hub), which cannot be had offline; the texts go into MERA's submission"
}


def _text(r: MeraRecord, value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise r.error(field, f"expected a text, got {value!r:.60}")
    return value


def convert_arithmetic(r: MeraRecord, answers: Mapping[str, Any]) -> dict[str, Any]:
    """SimpleAr, ruModAr, ruMultiAr: the expression (inputs, one text) and the number, as text."""
    fields = {"idx": r.id, "inputs": _text(r, r.data.get("inputs"), "inputs")}
    fields |= {k: v for k, v in r.part("meta").items() if k != "id"}  # ruModAr's task_type
    outputs = r.outputs
    return fields if outputs is None else {**fields, "answer": _text(r, outputs, "outputs")}


def convert_rudetox(r: MeraRecord, answers: Mapping[str, Any]) -> dict[str, Any]:
    """ruDetox: the toxic text; MERA's reference rewrite is kept as ``reference``, not as a gold answer
    (MERA scores a rewrite by classifiers, not against it)."""
    fields = {"idx": r.id, "toxic_comment": _text(r, r.data.get("inputs"), "inputs")}
    return fields if r.outputs is None else {**fields, "reference": _text(r, r.outputs, "outputs")}


def convert_use(r: MeraRecord, answers: Mapping[str, Any]) -> dict[str, Any]:
    """USE: the task's texts, its type, and the gold ``grade``: [answer, type, id_task, variant, max score]."""
    fields: dict[str, Any] = {"idx": r.id}
    fields |= {
        name: _text(r, r.input(name), f"inputs.{name}") for name in ("task", "text", "choices", "additional_text")
    }
    meta = r.part("meta")
    kind = meta.get("type")
    if kind not in USE_TYPES:
        raise r.error("meta.type", f"unknown question type {kind!r:.60}; expected one of: {', '.join(USE_TYPES)}")
    id_task, variant, score = meta.get("id_task"), meta.get("variant"), meta.get("score")
    if not isinstance(id_task, str) or not id_task:
        raise r.error("meta.id_task", f"expected the exam question's number as text, got {id_task!r:.60}")
    for name, value in (("variant", variant), ("score", score)):
        if isinstance(value, bool) or not isinstance(value, int) or (name == "score" and value < 1):
            raise r.error(
                f"meta.{name}", f"expected a whole number{' above 0' if name == 'score' else ''}, got {value!r:.60}"
            )
    fields |= {"type": kind, "id_task": id_task, "variant": variant, "score": score}
    if r.outputs is None:
        return fields
    return {**fields, "grade": [_text(r, r.outputs, "outputs"), kind, id_task, variant, score]}


def convert_code(r: MeraRecord, answers: Mapping[str, Any]) -> dict[str, Any]:
    """ruHumanEval, ruCodeEval: the function's beginning, its tests (a Python literal: a list of
    keyword-argument objects), its entry point, and the gold ``results``: each test's expected text."""
    function, tests = _text(r, r.input("function"), "inputs.function"), _text(r, r.input("tests"), "inputs.tests")
    try:
        parsed = ast.literal_eval(tests)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        parsed = None
    if not isinstance(parsed, list) or not all(isinstance(test, dict) for test in parsed):
        raise r.error("inputs.tests", f"expected a Python list of keyword-argument objects, got {tests!r:.60}")
    entry_point = r.part("meta").get("entry_point")
    if not isinstance(entry_point, str) or not entry_point.isidentifier():
        raise r.error("meta.entry_point", f"expected the name of the function tested, got {entry_point!r:.60}")
    fields = {"idx": r.id, "function": function, "tests": tests, "test_count": len(parsed), "entry_point": entry_point}
    solution = r.part("meta").get("canonical_solution")  # a demonstration's answer
    if isinstance(solution, str):
        fields["canonical_solution"] = solution
    outputs = r.outputs
    if outputs is None:
        return fields
    if not isinstance(outputs, list) or len(outputs) != len(parsed):
        raise r.error("outputs", f"expected one expected result per test ({len(parsed)}), got {outputs!r:.60}")
    return {**fields, "results": [str(result) for result in outputs]}


def submission_entry(task: str, example_fields: Mapping[str, Any], idx: Any, prediction: Any) -> dict[str, Any]:
    """The task's entry of MERA's submission for one test item: the prediction as MERA's
    log_to_submission.py writes it (USE's meta with the question's number and variant; the code tasks'
    outputs each sample's test results)."""
    meta: dict[str, Any] = {"id": idx}
    if task == "use":
        meta |= {"id_task": example_fields["id_task"], "variant": example_fields["variant"]}
    return {"outputs": prediction, "meta": meta}
