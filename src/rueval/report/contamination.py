"""The contamination audit's results (contamination.json) as a terminal table and as a section of the HTML report."""

from __future__ import annotations

import html
from pathlib import Path

from rich.table import Table

from rueval.results.contamination import SUMMARY, ContaminationResult

SCORE_NAMES = {
    "min_k": "Min-K%",
    "min_k_pp": "Min-K%++",
    "zlib": "zlib ratio",
    "ppl": "perplexity",
    "perturbation": "perturbation",
    "ngram_overlap": "13-gram overlap",
}


def _rows(result: ContaminationResult) -> list[list[str]]:
    """task, score, items, references, item median, reference median, p, verdict, AUROC, TPR@5%FPR."""
    rows = []
    for name, task in result.tasks.items():
        aucs = {found.score: found for found in task.membership}
        for test in task.tests:
            found = aucs.get(test.score)
            rows.append(
                [
                    name,
                    SCORE_NAMES[test.score] + (" (verdict)" if test.score == task.primary else ""),
                    str(test.items),
                    str(test.references),
                    f"{test.item_median:.4g}",
                    f"{test.reference_median:.4g}",
                    f"{test.p_value:.3g}",
                    test.verdict,
                    f"{found.auroc:.3f}" if found else "",
                    f"{found.tpr_at_5_fpr:.3f}" if found else "",
                ]
            )
    return rows


COLUMNS = ("task", "score", "items", "refs", "item median", "ref median", "p", "verdict", "AUROC", "TPR@5%FPR")


def run_lines(result: ContaminationResult) -> list[str]:
    """--run: each task's metrics on the run's every row and on its unflagged rows."""
    lines = []
    for name, task in result.tasks.items():
        found = task.run_scores
        if not found:
            continue
        metrics = ", ".join(
            f"{metric} {_shown(values['full'])} -> {_shown(values['unflagged'])}"
            for metric, values in found["metrics"].items()
        )
        line = f"{name}: {found['run']}: {metrics} ({found['flagged_rows']} of {found['rows']} rows flagged)"
        lines.append(line + (f"; {found['note']}" if "note" in found else ""))
    return lines


def _shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def contamination_table(result: ContaminationResult) -> Table:
    table = Table(title=f"Contamination audit of {result.model.split(' ')[0]} ({result.text}; k={result.k:g})")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("task", "score", "verdict") else "right")
    for row in _rows(result):
        table.add_row(*row)
    verdicts = [f"{name}: {task.verdict}" for name, task in result.tasks.items()]
    notes = [f"{name}: {note}" for name, task in result.tasks.items() for note in task.notes]
    table.caption = "; ".join(verdicts + notes + run_lines(result))
    return table


def is_contamination_folder(folder: Path) -> bool:
    """A folder `rueval contamination` wrote (not a run: it has no results.json); a name the system refuses
    (too long) is none, and the run reader says why."""
    try:
        return (folder / SUMMARY).is_file() and not (folder / "results.json").exists()
    except OSError:
        return False


def contamination_section(result: ContaminationResult) -> str:
    """The HTML report's section: each task's verdict in words, then every score's test."""
    escape = html.escape
    verdicts = "".join(
        f"<li><b>{escape(name)}</b>: {escape(task.verdict)} ({escape(SCORE_NAMES.get(task.primary, 'no score'))}, "
        f"{task.items} items against {task.references} references: {escape(task.reference)})"
        + "".join(f"<br><small>{escape(note)}</small>" for note in task.notes)
        + "</li>"
        for name, task in result.tasks.items()
    )
    head = "".join(f"<th>{escape(column)}</th>" for column in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in _rows(result))
    return (
        f"<h3>{escape(result.model.split(' ')[0])}</h3><p>Items read as "
        f"{escape(result.text)}; one-sided Mann-Whitney U test against the reference items. "
        "&ldquo;No evidence&rdquo; is not a proof that the model has not seen the items.</p>"
        f"<ul>{verdicts}</ul>"
        + "".join(f"<p>Rescored run: {escape(line)}</p>" for line in run_lines(result))
        + f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
