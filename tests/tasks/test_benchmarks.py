"""Benchmarks are values: RSG, TAPE and MERA declared once, read by attribute everywhere else."""

from __future__ import annotations

import ast
from pathlib import Path
from statistics import fmean

import pytest

import rueval
from rueval.core.named import named
from rueval.data.mera_choice_tasks import CHOICE_TASKS
from rueval.data.mera_generative_tasks import GENERATIVE
from rueval.data.mera_tasks import MERA_TASKS
from rueval.report.reference import TAPE as TAPE_TABLE_3
from rueval.report.reference import ScoreRow, references
from rueval.scoring.task_scores import rsg_total
from rueval.tasks import BENCHMARKS, MERA, RSG, TAPE, TASKS, Benchmark, Total, resolve_tasks

SRC = Path(rueval.__file__).parent
# The benchmarks' declarations: the only modules that name a benchmark. Elsewhere the same text may
# only be a module's name (rueval.tasks' DECLARATIONS) or the key of a run spec's MERA settings.
DECLARATIONS = {"tasks/rsg.py", "tasks/tape.py", "tasks/mera.py", "data/mera_tasks.py"}
OTHER_MEANINGS = {("run/spec.py", "mera"), ("run/checks.py", "mera")}


def _named_literals(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """(line, text) of each string constant that is a benchmark's name, docstrings and the module names
    of DECLARATIONS left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    exempt = {
        id(constant)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "DECLARATIONS" for t in node.targets)
        for constant in ast.walk(node.value)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings | exempt
    ]


def test_no_module_but_the_declarations_names_a_benchmark():
    names = {RSG.name, TAPE.name, MERA.name}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where in DECLARATIONS:
            continue
        found += [
            f"{where}:{line}: {text!r}"
            for line, text in _named_literals(path, names)
            if (where, text) not in OTHER_MEANINGS
        ]
    assert found == []


def test_the_scan_finds_a_benchmark_named_by_its_literal(tmp_path):
    module = tmp_path / "module.py"
    module.write_text('"""Docstrings may say "rsg"."""\n\nif task.benchmark == "rsg":\n    pass\n', encoding="utf-8")
    assert _named_literals(module, {RSG.name}) == [(3, RSG.name)]


def test_the_command_line_selects_a_benchmarks_tasks_by_its_name():
    assert resolve_tasks(RSG.name) == list(RSG.tasks)
    assert resolve_tasks(TAPE.name) == list(TAPE.tasks)
    assert [task.name for task in resolve_tasks(MERA.name)] == list(MERA_TASKS)
    assert resolve_tasks("all") == [task for task in TASKS.values() if task.benchmark != MERA.name]
    own = {task.name for task in TASKS.values() if task.benchmark == MERA.name}  # -t mera alone names them
    assert own == set(GENERATIVE) | set(CHOICE_TASKS)
    assert list(BENCHMARKS) == [RSG.name, TAPE.name, MERA.name]


def test_rsgs_total_is_the_mean_of_its_nine_task_scores():
    assert RSG.total is not None and RSG.total.tasks == tuple(task.name for task in RSG.tasks)
    scores = {task.name: 10.0 * i for i, task in enumerate(RSG.tasks)}
    assert rsg_total(scores) == pytest.approx(fmean(scores.values()))
    assert rsg_total({**scores, "extra": 99.0}) == rsg_total(scores)  # a task outside the nine counts for nothing
    del scores["rucos"]
    assert rsg_total(scores) is None


def test_tapes_total_is_its_mean_f1_and_its_mean_accuracy():
    assert TAPE.total is not None and TAPE.total.columns == ("avg_f1", "avg_acc")
    values = {task.name: (10.0 * i, 20.0 * i) for i, task in enumerate(TAPE.tasks)}
    assert TAPE.total.of(values) == pytest.approx((30.0, 60.0))  # i = 0..6: mean 3


def test_the_papers_rows_and_the_submission_writers_are_found_by_their_benchmark():
    assert all(isinstance(row, ScoreRow) and row.benchmark == TAPE.name for row in references(TAPE))
    assert {row.source for row in references(TAPE)} == {TAPE_TABLE_3}
    assert references(MERA) == []  # no papers' rows: MERA's runs are ranked against none
    assert callable(named(RSG.submission, "RSG's writer")) and callable(named(MERA.submission, "MERA's writer"))
    assert TAPE.submission == ""


def test_the_official_counts_are_of_the_benchmarks_own_tasks_and_splits():
    for benchmark in (RSG, TAPE):
        for task, splits in benchmark.official_counts.items():
            assert set(splits) <= set(TASKS[task].splits), task
            assert all(isinstance(n, int) and n > 0 for n in splits.values())
    assert RSG.official_count("terra", "val") == 307 and RSG.official_count("rucos", "val") is None


def test_a_benchmark_whose_total_names_a_task_not_its_own_is_refused():
    with pytest.raises(ValueError, match="nope not among its tasks"):
        Benchmark("mine", tasks=RSG.tasks, total=Total(("terra", "nope")))
