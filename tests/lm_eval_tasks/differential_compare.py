"""Read two runs' lm-eval outputs (the results document and the per-task sample logs, in lm-eval's layout
or rueval's) and list every place where they disagree, each naming task, document and both values."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from support import read_jsonl


@dataclass(frozen=True)
class Tolerance:
    """Two numbers agree within ``absolute`` or within ``relative`` of the larger."""

    absolute: float
    relative: float


EXACT = Tolerance(0.0, 0.0)
LOGLIKELIHOOD = Tolerance(absolute=1e-4, relative=0.0)  # nats, per request
METRIC = Tolerance(absolute=1e-6, relative=1e-6)  # per sample and aggregated (relative: perplexities are large)
# A metric lm-eval computes smoothly from log-likelihoods (a perplexity, truthfulqa_mc2's share of the
# probability mass) moves with them: rueval's and HFLM's sums of a request's token log-probabilities
# differ in their last float32 digits (some 1e-5 nats: HFLM's is a float32, rueval's carries more digits),
# and a ratio of sums of exp(log-likelihood) moves by up to twice that, relatively.
SMOOTH_METRIC = Tolerance(absolute=0.0, relative=2 * LOGLIKELIHOOD.absolute)
SAMPLE_FILE = re.compile(r"samples_(?P<task>.+)_\d{4}-\d{2}-\d{2}T[0-9.\-]+\.jsonl")


@dataclass(frozen=True)
class Output:
    results: dict
    samples: dict[str, list[dict]]  # task -> its sample lines


def read_output(folder: Path) -> Output:
    """The one results document under ``folder`` and every sample log, by task."""
    (results_file,) = sorted(folder.rglob("results_*.json"))  # lm-eval's results_<date>, rueval's results_lmeval
    samples: dict[str, list[dict]] = {}
    for path in sorted(folder.rglob("samples_*.jsonl")):
        found = SAMPLE_FILE.fullmatch(path.name)
        assert found, f"{path}: not named samples_<task>_<date>.jsonl"
        assert found["task"] not in samples, f"{path}: a second sample log of {found['task']}"
        samples[found["task"]] = read_jsonl(path)
    return Output(json.loads(results_file.read_text(encoding="utf-8")), samples)


def number(value: object) -> float | None:
    """``value`` as a float where it is one (lm-eval writes log-likelihoods as strings), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def same(a: object, b: object, tolerance: Tolerance) -> bool:
    """Equal, numbers within ``tolerance``, walking lists and dicts."""
    x, y = number(a), number(b)
    if x is not None and y is not None:
        close = math.isclose(x, y, rel_tol=tolerance.relative, abs_tol=tolerance.absolute)
        return close or (math.isnan(x) and math.isnan(y))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(p, q, tolerance) for p, q in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tolerance) for k in a)
    return a == b


def smooth_metrics(output: Output) -> set[tuple[str, str]]:
    """(task, metric) where the task is scored from log-likelihoods and a document's value of the metric is
    not a decision (0 or 1)."""
    found = set()
    for task, samples in output.samples.items():
        if output.results["configs"][task]["output_type"] != "generate_until":
            found |= {(task, m) for s in samples for m in s["metrics"] if number(s[m]) not in (0.0, 1.0)}
    return found


def tasks_under(name: str, group_subtasks: dict[str, list[str]]) -> set[str]:
    """A group's tasks, through its subgroups; a task is its own."""
    if name not in group_subtasks:
        return {name}
    return {task for sub in group_subtasks[name] for task in tasks_under(sub, group_subtasks)}


def result_tolerance(name: str, key: str, smooth: set[tuple[str, str]], group_subtasks: dict) -> Tolerance:
    """The tolerance of results[name][key] ("acc,none", "acc_stderr,none")."""
    metric = key.split(",")[0].removesuffix("_stderr")
    return SMOOTH_METRIC if any((task, metric) in smooth for task in tasks_under(name, group_subtasks)) else METRIC


def result_differences(reference: dict, candidate: dict, smooth: set[tuple[str, str]]) -> list[str]:
    found = []
    group_subtasks = reference.get("group_subtasks", {})
    for section in ("results", "groups", "n-samples"):
        ours, theirs = reference.get(section, {}), candidate.get(section, {})
        if ours.keys() != theirs.keys():
            found.append(f"{section}: lm-eval has {sorted(ours)}, rueval has {sorted(theirs)}")
        for name in sorted(ours.keys() & theirs.keys()):
            for key in sorted(ours[name].keys() | theirs[name].keys()):
                a, b = ours[name].get(key), theirs[name].get(key)
                if not same(a, b, result_tolerance(name, key, smooth, group_subtasks)):
                    found.append(f"{section} {name} {key}: lm-eval {a!r}, rueval {b!r}")
    for section in ("n-shot", "group_subtasks"):
        if reference.get(section) != candidate.get(section):
            found.append(f"{section}: lm-eval {reference.get(section)!r}, rueval {candidate.get(section)!r}")
    return found


def sample_differences(
    task: str, output_type: str, reference: list[dict], candidate: list[dict], smooth: set[tuple[str, str]]
) -> list[str]:
    """Per document and filter: the same document, prompt and target; the same responses (log-likelihoods
    within LOGLIKELIHOOD, generations equal after filtering); the same per-sample metrics."""
    ours = {(s["doc_id"], s["filter"]): s for s in reference}
    theirs = {(s["doc_id"], s["filter"]): s for s in candidate}
    found = []
    if ours.keys() != theirs.keys():
        found.append(f"{task}: lm-eval has samples {sorted(ours)}, rueval {sorted(theirs)}")
    generated = output_type == "generate_until"
    for key in sorted(ours.keys() & theirs.keys()):
        a, b = ours[key], theirs[key]
        where = f"{task} doc {key[0]} filter {key[1]}"
        checks = [("doc", EXACT), ("arguments", EXACT), ("target", EXACT)]
        if generated:
            checks.append(("filtered_resps", EXACT))
        else:
            checks += [("resps", LOGLIKELIHOOD), ("filtered_resps", LOGLIKELIHOOD)]
        checks += [(m, SMOOTH_METRIC if (task, m) in smooth else METRIC) for m in a["metrics"]]
        for field, tolerance in checks:
            if not same(a.get(field), b.get(field), tolerance):
                found.append(f"{where} {field}: lm-eval {a.get(field)!r}, rueval {b.get(field)!r}")
    return found


def differences(reference: Output, candidate: Output) -> list[str]:
    """Every disagreement of ``candidate`` (rueval) with ``reference`` (lm-eval), one line each."""
    smooth = smooth_metrics(reference)
    found = result_differences(reference.results, candidate.results, smooth)
    if reference.samples.keys() != candidate.samples.keys():
        found.append(f"sample logs: lm-eval has {sorted(reference.samples)}, rueval {sorted(candidate.samples)}")
    configs = reference.results["configs"]
    for task in sorted(reference.samples.keys() & candidate.samples.keys()):
        output_type = configs[task]["output_type"]
        found += sample_differences(task, output_type, reference.samples[task], candidate.samples[task], smooth)
    return found
