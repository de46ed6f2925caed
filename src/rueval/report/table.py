"""Rich tables for the terminal."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.table import Table

from rueval.tasks import Task


def tasks_table(tasks: Iterable[Task]) -> Table:
    table = Table(title="rueval tasks")
    table.add_column("task")
    table.add_column("bench", no_wrap=True)
    table.add_column("labels")
    table.add_column("metrics")
    table.add_column("splits")
    for task in tasks:
        other_names = [n for n in dict.fromkeys((task.folder, *task.aliases)) if n != task.name]
        labels = " / ".join(map(str, task.labels)) or "0/1: " + ", ".join(task.categories) if task.kind != "span" else "answer text"
        table.add_row(
            task.name + (f"\n[dim]{', '.join(other_names)}[/]" if other_names else ""),
            task.benchmark.upper(),
            labels,
            " ".join(task.metrics),
            " ".join(task.splits),
        )
    return table


def results_table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"{summary['model']} on {summary['data']} (scores x100)")
    table.add_column("task", no_wrap=True)
    table.add_column("bench")
    table.add_column("split")
    table.add_column("n", justify="right")
    table.add_column("metrics", no_wrap=True, overflow="fold")
    table.add_column("score", justify="right", no_wrap=True)
    for name, result in summary["tasks"].items():
        metrics = "  ".join(f"{metric} {value:.2f}" for metric, value in result["metrics"].items())
        table.add_row(name, result["benchmark"].upper(), result["split"], str(result["n"]), metrics, f"{result['score']:.2f}")
    if summary["rsg_total"] is not None:
        table.add_section()
        table.add_row("RSG total", "RSG", "", "", "mean of the 9 task scores", f"{summary['rsg_total']:.2f}")
    return table
