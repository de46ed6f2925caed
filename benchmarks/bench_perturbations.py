"""Throughput of the perturbations that need no model, on 10k TAPE examples.

    python benchmarks/bench_perturbations.py [--n 10000] [--seed 0] [--filter]

Not part of the test suite. The examples are recombined offline from the bundled test samples of
the seven TAPE tasks, with a seeded RNG: each copies a random sample (which keeps its gold answer,
options and MultiQ offsets consistent), gets a new idx, and takes a sentence from another random
sample of any TAPE task, appended to the text AddSent would extend (prepended to the question of
the multiple-choice tasks), so nearly every text is new and no analysis is reused.

The constraints' protected spans (natasha NER and syntax, regular expressions) are computed once,
batched, and timed on their own, as a run does; each perturbation is then timed on the same
examples, without and (--filter) also with the semantic filter (character 3-gram similarity,
3 candidates per example, rate halved on failure; an example that never passes keeps its original
text).
Writes benchmarks/results/bench_perturbations.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rueval.core.text import sentences
from rueval.data import open_data
from rueval.robustness.perturbations import PERTURBATIONS
from rueval.robustness.semantic_filter import SemanticFilter
from rueval.robustness.targets import TARGETS, protected_spans_batch
from rueval.tasks import TAPE, Example, get_task

OUT = Path(__file__).parent / "results" / "bench_perturbations.json"
NO_MODEL = [name for name, cls in PERTURBATIONS.items() if cls.needs_model is None]


def generate(n: int, seed: int) -> dict[str, list[Example]]:
    """n examples per the module docstring, grouped by task."""
    rng = random.Random(seed)
    samples = {task.name: open_data(None).load(task, "test").examples for task in TAPE.tasks}
    texts = [e.fields[f] for name, examples in samples.items() for e in examples for f in TARGETS[name].fields]
    extra = [sentence for text in texts for sentence in sentences(text)]
    generated: dict[str, list[Example]] = {name: [] for name in samples}
    for i in range(n):
        name = rng.choice(list(samples))
        base, sentence = rng.choice(samples[name]), rng.choice(extra)
        target = TARGETS[name]
        fields = dict(base.fields)
        if target.distractor:
            fields[target.distractor] = f"{fields[target.distractor]} {sentence}"
        else:
            fields["question"] = f"{sentence} {fields['question']}"
        generated[name].append(replace(base, idx=i, fields=fields))
    return generated


def timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--filter", action="store_true", help="also time each perturbation with the semantic filter")
    args = parser.parse_args()

    data = generate(args.n, args.seed)
    protected_spans_batch(get_task("winograd"), data["winograd"][:2])  # load natasha outside the timings
    protected_spans_batch(get_task("multiq"), data["multiq"][:2])
    protected, constraint_seconds = {}, 0.0
    for name, examples in data.items():
        protected[name], seconds = timed(protected_spans_batch, get_task(name), examples)
        constraint_seconds += seconds
    figures = {"constraints": {"seconds": constraint_seconds, "examples_per_s": args.n / constraint_seconds}}
    for perturbation_name in NO_MODEL:
        perturbation = PERTURBATIONS[perturbation_name](seed=args.seed)
        seconds = changed = 0.0
        for name, examples in data.items():
            outputs, took = timed(perturbation.perturb_batch, get_task(name), examples, None, protected[name])
            seconds += took
            changed += sum(o is not None for o in outputs)
        figures[perturbation_name] = {
            "rate": perturbation.rate,
            "seconds": seconds,
            "examples_per_s": args.n / seconds,
            "changed_share": changed / args.n,
        }
        if args.filter:
            semantic_filter = SemanticFilter()
            filtered_seconds = passed = 0.0
            for name, examples in data.items():
                result, took = timed(semantic_filter.apply, get_task(name), examples, perturbation, protected[name])
                filtered_seconds += took
                passed += result.changed  # the others keep their original text
            figures[perturbation_name] |= {
                "with_filter_seconds": filtered_seconds,
                "with_filter_examples_per_s": args.n / filtered_seconds,
                "passed_share": passed / args.n,
            }
        print(perturbation_name, json.dumps(figures[perturbation_name]), flush=True)

    table = Table(title=f"perturbation throughput, {args.n} TAPE examples")
    filter_columns = ("with filter ex/s", "passed") if args.filter else ()
    for column in ("step", "p", "seconds", "ex/s", "changed", *filter_columns):
        table.add_column(column, justify="left" if column == "step" else "right", no_wrap=column == "step")
    for step, f in figures.items():
        row = [step, f"{f['rate']:g}" if "rate" in f else "", f"{f['seconds']:.1f}", f"{f['examples_per_s']:.0f}"]
        row.append(f"{f['changed_share']:.1%}" if "changed_share" in f else "")
        if args.filter:
            filtered = "passed_share" in f
            row += [f"{f['with_filter_examples_per_s']:.0f}", f"{f['passed_share']:.1%}"] if filtered else ["", ""]
        table.add_row(*row)
    Console().print(table)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "created": datetime.now(UTC).isoformat(timespec="seconds"),
                "n": args.n,
                "seed": args.seed,
                "examples_per_task": {name: len(examples) for name, examples in data.items()},
                "machine": {"python": platform.python_version(), "arch": platform.machine(), "cpus": os.cpu_count()},
                "figures": figures,
            },
            ensure_ascii=False,
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"written: {OUT}")


if __name__ == "__main__":
    main()
