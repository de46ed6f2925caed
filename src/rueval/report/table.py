"""Rich tables for the terminal."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich import box
from rich.console import JustifyMethod
from rich.markup import escape
from rich.table import Table

from rueval.results import NO_RULE, AuditResult, RunResult
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
        if task.inline_options:
            labels = "A / B / C / ... (the item's options)"
        elif task.kind == "classification":
            labels = " / ".join(map(str, task.labels))
        elif task.kind == "multilabel":
            labels = "0/1: " + ", ".join(task.categories)
        else:
            labels = "answer text"
        table.add_row(
            task.name + (f"\n[dim]{', '.join(other_names)}[/]" if other_names else ""),
            task.benchmark.upper(),
            labels,
            " ".join(task.metrics),
            " ".join(task.splits),
        )
    return table


def task_files_table(rows: Iterable[dict[str, str]]) -> Table:
    """lm-eval task files (rueval.tasks.lm_eval_tasks.TaskFiles.listing): what each name is, where it is
    declared, and the Python it runs (only with --trust-task-code)."""
    table = Table(title="lm-eval task files")
    for column in ("name", "kind", "output type", "file", "runs Python"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["name"], row["kind"], row["output_type"], row["file"], row["python"] or "-")
    return table


def results_table(summary: RunResult) -> Table:
    """Every task's metrics with their 95% intervals; a few-shot run shows each k's mean ± std over its
    episodes, and a task scored under several prompts (--prompts all) their mean ± std over prompts. A
    --limit run is marked partial; tasks reused from an earlier run are marked so."""
    limit = summary.settings.get("limit")
    first = f"{limit:.0%} of the records" if isinstance(limit, float) and limit < 1 else f"{limit} records"
    partial = f", partial: first {first} of each split" if summary.partial else ""
    table = Table(title=f"{summary.model} on {summary.data} (scores x100{partial})")
    # at 80 columns (a pipe, a CI log) the long cells wrap at their spaces while the short ones keep their width
    table.add_column("task", overflow="fold")
    table.add_column("bench", no_wrap=True)
    table.add_column("split", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("k", justify="right", overflow="fold")
    table.add_column("metrics", overflow="fold")
    table.add_column("score", justify="right", no_wrap=True)
    for name, result in summary.tasks.items():
        shown = name + (" [dim](reused)[/]" if name in summary.reused else "")
        if result.shots:
            for position, (k, shot) in enumerate(sorted(result.shots.items())):
                metrics = "\n".join(
                    f"{metric} {value:.2f} ± {shot.std[metric]:.2f}" for metric, value in shot.metrics.items()
                )
                episodes = f"{len(shot.episodes)} ep."
                cells: tuple[str, ...] = (shown, result.benchmark.upper(), result.split, str(result.n))
                cells = cells if position == 0 else ("",) * 4
                table.add_row(*cells, f"{k} ({episodes})", metrics, f"{shot.score:.2f} ± {shot.score_std:.2f}")
        else:
            metrics = "\n".join(
                f"{metric} {value:.2f}"
                + (f" [dim]{escape('[{:.1f}, {:.1f}]'.format(*result.ci[metric]))}[/]" if metric in result.ci else "")
                for metric, value in result.metrics.items()
            )
            cells = (shown, result.benchmark.upper(), result.split, str(result.n), "")
            table.add_row(*cells, metrics, f"{result.score:.2f}")
        if (prompts := result.prompts) is not None:  # the headline setting, over the task's prompts
            metrics = "\n".join(f"{m} {v:.2f} ± {prompts.metrics_std[m]:.2f}" for m, v in prompts.metrics_mean.items())
            over = f"{len(prompts.variants)} prompts"
            table.add_row("", "", "", "", over, metrics, f"{prompts.mean:.2f} ± {prompts.std:.2f}")
    for name, result in summary.predicted.items():
        cells = (name, result.benchmark.upper(), result.split, str(result.n), "")
        table.add_row(*cells, "[dim]predicted, not scored[/]", "-")
    if summary.rsg_total is not None:
        table.add_section()
        table.add_row("RSG total", "RSG", "", "", "", "mean of the 9 task scores", f"{summary.rsg_total:.2f}")
    return table


ARTIFACTS_SHOWN = 5  # of the 10 per label in audit.json


def audit_tables(report: AuditResult) -> list[Table]:
    """The sections of an audit report (rueval.audit.dataset_audit), one table each; empty sections are left out."""
    tables = [_label_table(report), _prior_table(report), _artifact_table(report), _duplicate_table(report)]
    tables.append(_health_table(report))
    tables += [
        heuristics_table(name, split, found.n, found.rules)
        for name, task in report.tasks.items()
        for split, found in task.heuristics.items()
    ]
    return [table for table in tables if table.row_count]


def _health_table(report: AuditResult) -> Table:
    table = Table(
        title="Task health (x100)",
        caption="chance: a uniform guess's accuracy; majority, heuristics: task scores fitted on train; all right: "
        "items every baseline gets right; MDE: the smallest difference the official test set shows at 80% power, "
        "two runs disagreeing on half the items",
    )
    for column in ("task", "split", "n", "chance", "majority", "heuristics", "all right", "official records", "MDE"):
        table.add_column(column, justify="left" if column in ("task", "split") else "right")
    for name, task in report.tasks.items():
        if health := task.health:
            official, effect = health["official_test_records"], health["minimum_detectable_effect"]
            table.add_row(
                name,
                health["split"],
                str(health["n"]),
                *(_one_decimal(health[key]) for key in ("chance_accuracy", "majority", "heuristic")),
                _one_decimal(health["every_baseline_right"]),
                "-" if official is None else f"{official:,}",
                _one_decimal(effect),
            )
    return table


def _one_decimal(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _label_table(report: AuditResult) -> Table:
    table = Table(title=f"Label distribution ({report.data})")
    for column in ("task", "split", "n", "labels: share (count)"):
        table.add_column(column, justify="right" if column == "n" else "left")
    for name, task in report.tasks.items():
        for split, labels in task.labels.items():
            n = task.splits[split]["n"]
            if "answer_words" in labels:
                stats = labels["answer_words"]
                text = (
                    f"answer words: mean {stats['mean']:.1f}, median {stats['median']:g}, "
                    f"range {stats['min']}-{stats['max']}"
                )
            elif task.kind == "multilabel":
                text = "  ".join(f"{category} {shares['1']['share']:.0%}" for category, shares in labels.items())
            else:
                text = "  ".join(f"{label} {row['share']:.0%} ({row['count']})" for label, row in labels.items())
            table.add_row(name, split, str(n), text)
    return table


def _prior_table(report: AuditResult) -> Table:
    table = Table(title="Predicting from the train label prior alone (x100)")
    for column in ("task", "split", "majority", "weighted-random expected acc.", "balanced expected acc."):
        table.add_column(column, justify="left" if column in ("task", "split", "majority") else "right")
    for name, task in report.tasks.items():
        for split, prior in task.prior_only.items():
            metrics = "  ".join(f"{metric} {value:.1f}" for metric, value in prior["majority"]["metrics"].items())
            expected = prior.get("weighted_random_expected_accuracy")
            balanced = prior.get("balanced_expected_accuracy")
            table.add_row(
                name,
                split,
                metrics,
                "-" if expected is None else f"{expected:.1f}",
                "-" if balanced is None else f"{balanced:.1f}",
            )
    leakage = report.leakage
    if leakage:
        table.add_section()
        table.add_row(
            f"mean of {len(leakage['tasks'])} accuracy tasks",
            "",
            f"accuracy {leakage['majority_accuracy']:.1f}",
            f"{leakage['weighted_random_expected_accuracy']:.1f}",
            f"{leakage['balanced_expected_accuracy']:.1f}",
        )
    return table


def _artifact_table(report: AuditResult) -> Table:
    table = Table(
        title=f"Artifact tokens: the {ARTIFACTS_SHOWN} train lemmas most associated with each label",
        caption="lemma chi2 (train examples of the label with it / all train examples with it)",
    )
    table.add_column("task", no_wrap=True)
    table.add_column("label")
    table.add_column("lemmas", overflow="fold")
    for name, task in report.tasks.items():
        for label, rows in task.artifacts.items():
            lemmas = ", ".join(
                f"{row['lemma']} {row['chi2']:.1f} ({row['count']}/{row['total']})" for row in rows[:ARTIFACTS_SHOWN]
            )
            table.add_row(name, label, lemmas or "[dim]none[/]")
    return table


def _duplicate_table(report: AuditResult) -> Table:
    threshold = report.near_duplicate_threshold
    table = Table(title=f"Train/eval duplicates (near: char n-gram TF-IDF cosine >= {threshold})")
    table.add_column("task")
    table.add_column("split")
    for column in ("n", "exact pairs", "with exact", "near pairs", "with near"):
        table.add_column(column, justify="right")
    table.add_column("closest pairs (train, eval, sim.)")
    for name, task in report.tasks.items():
        for split, found in task.duplicates.items():
            closest = (found["exact_pairs"] + found["near_pairs"])[:3]
            table.add_row(
                name,
                split,
                str(found["n"]),
                str(found["exact"]),
                str(found["eval_with_exact"]),
                str(found["near"]),
                str(found["eval_with_near"]),
                escape("  ".join(f"({pair['train']}, {pair['eval']}, {pair['similarity']:.2f})" for pair in closest)),
            )
    return table


def heuristics_table(task: str, split: str, n: int, rows: Iterable[Any]) -> Table:
    """Per rule (rueval.results.RuleCoverage rows): the examples it covers, with their share
    of the split, and how many of those it gets right, with their share; the heuristics paper's Tables 1-7."""
    rows = list(rows)
    table = Table(
        title=f"Heuristics on {task} / {split} ({n} labelled examples)",
        caption="covered: examples the rule fires on (% of the split); correct: those it gets right (% of covered)",
    )
    table.add_column("#", justify="right")
    table.add_column("rule", overflow="fold")
    table.add_column("target")
    table.add_column("covered", justify="right", no_wrap=True)
    table.add_column("correct", justify="right", no_wrap=True)
    for number, row in enumerate(rows, 1):
        covered = f"{row.covered} ({100 * row.covered / n:.1f}%)" if n else str(row.covered)
        if row.name == NO_RULE:  # the fallback baseline answers these: no rule is right or wrong
            table.add_section()
            table.add_row("", row.name, "fallback", covered, "-")
            continue
        correct = f"{row.correct} ({100 * row.correct / row.covered:.1f}%)" if row.covered else "0"
        target = "computed" if row.target is None else str(row.target)
        table.add_row(str(number), f"{row.name}\n[dim]{escape(row.description)}[/]", target, covered, correct)
    return table


def slices_table(summary: RunResult) -> Table:
    """Every metric per slice bucket (rueval.scoring.slices), one section per task; "-" marks buckets too
    small to score."""
    table = Table(title=f"{summary.model}: scores per slice (x100)")
    for column in ("task", "slice", "bucket", "n", "metrics"):
        table.add_column(column, justify="right" if column == "n" else "left", overflow="fold")
    for name, result in summary.tasks.items():
        rows = [(s, b, v) for s, buckets in result.slices.items() for b, v in buckets.items()]
        if not rows:
            continue
        table.add_section()
        previous = None
        for position, (slice_name, bucket, values) in enumerate(rows):
            metrics = "  ".join(f"{metric} {value:.1f}" for metric, value in values.items() if metric != "n")
            table.add_row(
                name if position == 0 else "",
                slice_name if slice_name != previous else "",
                escape(bucket),
                str(values["n"]),
                metrics or "[dim]-[/]",
            )
            previous = slice_name
    return table


def industrial_text(figures: dict[str, Any]) -> str:
    """The run's industrial figures on one line (rueval.run.diagnostics.industrial_figures)."""
    parts = [f"{figures['examples']} examples in {figures['seconds']:.3g} s"]
    if figures.get("examples_per_s") is not None:
        parts.append(f"{figures['examples_per_s']:.1f} examples/s")
    if figures.get("latency_ms_per_example") is not None:
        parts.append(f"{figures['latency_ms_per_example']:.2f} ms/example")
    parts.append(f"peak RSS {figures['peak_rss_mb']:.0f} MiB")
    if "parameters" in figures:
        parts.append(f"{figures['parameters']:,} parameters")
    if "model_size_mb" in figures:
        parts.append(f"model {figures['model_size_mb']:.1f} MiB")
    return "industrial: " + ", ".join(parts)


def compare_table(comparison: dict[str, Any]) -> Table:
    """Differences of two runs (rueval.report.compare) with their paired test's p-value; significant ones in
    bold with *."""
    a, b = comparison["run_a"], comparison["run_b"]
    level = comparison["significance_level"]
    table = Table(
        title=escape(f"A = {a['model']} ({a['dir']})  vs  B = {b['model']} ({b['dir']}), x100"),
        caption=f"* p < {level}: McNemar's exact test (m) where every item is right or wrong, else the paired "
        f"bootstrap, {comparison['resamples']} resamples; {comparison['confidence']:.0%} interval of A - B. "
        "MDE: the smallest difference in right answers the task's n shows at 80% power, at the share of items "
        "the runs disagree on",
        box=box.SIMPLE_HEAD,
        pad_edge=False,  # eight columns in 80 characters
    )
    for column in ("task", "n", "metric", "A", "B", "A - B", "interval", "p"):
        table.add_column(column, justify="left" if column in ("task", "metric") else "right", no_wrap=column != "task")
    for name, result in comparison["tasks"].items():
        table.add_section()
        for position, (metric, d) in enumerate(result["metrics"].items()):
            significant = d["p_value"] < level
            table.add_row(
                name if position == 0 else "",
                str(result["n"]) if position == 0 else "",
                metric,
                f"{d['a']:.1f}",
                f"{d['b']:.1f}",
                f"{d['diff']:+.1f}",
                escape(f"[{d['ci'][0]:+.1f}, {d['ci'][1]:+.1f}]"),
                f"{d['p_value']:.3f}" + (" *" if significant else "  ") + ("m" if d.get("discordant") else " "),
                style="bold" if significant else None,
            )
    return table


def compare_notes(comparison: dict[str, Any]) -> list[str]:
    """Per task of a comparison: the share of items the runs disagree on with the minimum detectable effect
    there, and a run's standard error clustered by item where it scored items several times (episodes)."""
    lines = []
    for name, result in comparison["tasks"].items():
        if result["discordance"] is not None:
            effect = result["minimum_detectable_effect"]
            shown = "none (too few items)" if effect is None else f"{effect:.1f} points"
            lines.append(
                f"{name}: the runs disagree on {100 * result['discordance']:.1f}% of {result['n']} items; "
                f"MDE at 80% power: {shown}"
            )
        for run, repeats in ((run, each) for run, every in result["repeated"].items() for each in every):
            lines.append(
                f"{name}: {run.upper()} scored {repeats['items']} items {repeats['scores']} times (k={repeats['k']}): "
                f"mean {repeats['mean']:.1f}, SE {repeats['se']:.2f} clustered by item, {repeats['naive_se']:.2f} naive"
            )
    return lines


def perturbations_table(summary: RunResult) -> Table:
    """Per task and perturbation: n, the score on the perturbed examples and its change from the
    same examples' originals, and the attack success rate (TAPE Table 4); "-" where nothing could
    be attacked."""
    table = Table(
        title=f"{summary.model} under perturbations (x100)",
        caption="change: from the same examples unperturbed. ASR: share of originally correct predictions "
        "made wrong; - when none was correct",
        box=box.SIMPLE_HEAD,
    )
    for column in ("task", "perturbation", "source", "n", "score", "change", "ASR"):
        justify: JustifyMethod = "left" if column in ("task", "perturbation", "source") else "right"
        table.add_column(column, justify=justify, no_wrap=True)
    for name, result in summary.tasks.items():
        if not result.perturbations:
            continue
        table.add_section()
        table.add_row(name, "original", "", str(result.n), f"{result.score:.2f}", "", "")
        for perturbation, scored in result.perturbations.items():
            score = scored["score"]
            table.add_row(
                "",
                perturbation,
                scored["source"],
                str(scored["n"]),
                "-" if score is None else f"{score:.2f}",
                "-" if score is None else f"{score - scored['original_score']:+.2f}",
                "-" if scored["asr"] is None else f"{scored['asr']:.1f}",
            )
    return table
