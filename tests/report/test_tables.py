"""The terminal tables at 80 columns, the width of a pipe or a CI log: every column and every cell whole."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

import rueval
from rueval.report.table import results_table
from rueval.results import RunResult

BORDERS = r"[\s│┃┏┓┗┛┡┩└┘├┤┳┻╇╈┼━─]+"


@pytest.fixture(scope="module")
def few_shot_run(tiny_gpt2_dir, tmp_path_factory) -> RunResult:
    """A run with the table's widest rows: k with its episodes, the spread over prompts, tasks reused."""
    out = tmp_path_factory.mktemp("widest")
    options = dict(tasks=["winograd", "ru_worldtree"], limit=2, shots=[0, 1], episodes=2, prompts="all", out=out)
    rueval.evaluate(f"hf:{tiny_gpt2_dir}", **options)
    return rueval.evaluate(f"hf:{tiny_gpt2_dir}", **options)  # the same run again: its tasks are reused


def rendered(summary: RunResult, width: int) -> tuple[list[str], set[str]]:
    console = Console(width=width, record=True)
    console.print(results_table(summary))
    lines = console.export_text().splitlines()
    return lines, set(re.split(BORDERS, "\n".join(lines)))


def cell_words(summary: RunResult) -> set[str]:
    table = results_table(summary)
    return {word for column in table.columns for cell in column.cells for word in Text.from_markup(cell).plain.split()}


@pytest.mark.parametrize("run", ["few_shot_run", "majority"])
def test_the_results_table_stays_whole_at_80_columns(run, request, sample_runs):
    summary = request.getfixturevalue(run) if run == "few_shot_run" else RunResult.read(sample_runs[run])
    assert run == "majority" or summary.reused  # "(reused)" is the longest task cell
    lines, words = rendered(summary, 80)
    assert max(map(cell_len, lines)) <= 80
    headers = {column.header for column in results_table(summary).columns}
    assert headers == {"task", "bench", "split", "n", "k", "metrics", "score"} and headers <= words
    assert cell_words(summary) <= words  # each cell wraps at its spaces; none is cut or dropped
