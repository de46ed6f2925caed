"""Times the classical solvers, `heuristic` and `tfidf`, fitting and predicting 10k examples per task.

    python benchmarks/bench_classical.py [--n 10000] [--tasks terra,rcb] [--solvers heuristic,heuristic-all,tfidf]

Not part of the test suite. The examples are generated offline from the bundled samples: each one
copies a random sample example (which keeps labels, candidates and nested fields consistent) and
takes some of its text fields from other random samples, their words shuffled, with a seeded RNG.
The shuffling makes nearly every text new, so no solver gets to reuse work on repeated texts and
TAPE's word n-grams grow as on real data; the word vocabulary stays the samples', far smaller than
real data's. Passages (MuSeRC, RuCoS, MultiQ) are kept whole, so they repeat.

Every (task, solver) runs in a fresh process with an empty tfidf cache, so its fit is a real fit
(the cache write included) and its peak RSS (resource.getrusage) is its own: interpreter, libraries
and the 2 x n examples included. Writes benchmarks/results/bench_classical.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from results_file import write_results  # beside this script
from rich.console import Console
from rich.table import Table

TASKS = ("terra", "rcb", "parus", "danetqa", "muserc", "rucos", "winograd", "ru_worldtree", "multiq")
# name -> (model, options): the heuristic model with the rules fitted on train (the default) and
# with every rule (prediction then tries them all: its slowest)
SOLVERS = {"heuristic": ("heuristic", {}), "heuristic-all": ("heuristic", {"rules": "all"}), "tfidf": ("tfidf", {})}
# The text fields taken from other samples and shuffled; the rest stays as the base sample has it.
RECOMBINED = {
    "terra": ("premise", "hypothesis"),
    "rcb": ("premise", "hypothesis"),
    "parus": ("premise", "choice1", "choice2"),
    "danetqa": ("question", "passage"),
    "muserc": ("question", "answer"),  # the passage stays: answers of one question share it
    "rucos": ("query",),  # the passage stays: its entities are the candidates
    "winograd": ("text",),
    "multiq": ("question",),  # the main text stays: the answer spans come from it
}
OUT = Path(__file__).parent / "results" / "bench_classical.json"


def generate(task_name: str, n: int, seed: int) -> list[Any]:
    """n examples recombined from the task's bundled train samples."""
    from rueval.data import open_data
    from rueval.tasks import get_task, split_options

    task = get_task(task_name)
    samples = open_data(None).load(task, "train").examples
    rng = random.Random(f"{seed}/{task_name}")
    if task_name in ("ru_openbook", "ru_worldtree"):  # new questions: a random stem with four random options
        parsed = [split_options(example.fields["question"]) for example in samples]
        stems, texts = [stem for stem, _ in parsed], [text for _, options in parsed for text in options.values()]
        examples = []
        for i in range(n):
            options = " ".join(f"({letter}) {text}" for letter, text in zip("ABCD", rng.sample(texts, 4)))
            label = rng.choice(task.labels)
            question = f"{shuffled(rng.choice(stems), rng)} {options}"
            examples.append(replace(samples[0], idx=i, fields={"question": question, "answer": label}, label=label))
        return examples
    examples = []
    for i in range(n):
        base = rng.choice(samples)
        fields = dict(base.fields)
        for name in RECOMBINED[task_name]:
            fields[name] = shuffled(rng.choice(samples).fields[name], rng)
        examples.append(replace(base, idx=i, fields=fields))
    return examples


def shuffled(text: str, rng: random.Random) -> str:
    words = text.split()
    rng.shuffle(words)
    return " ".join(words)


def measure(task_name: str, solver_name: str, n: int) -> dict[str, Any]:
    """Fit on n generated train examples and predict n others; runs in its own process."""
    from rueval.solvers import make_solver
    from rueval.tasks import get_task

    task = get_task(task_name)
    train, examples = generate(task_name, n, seed=0), generate(task_name, n, seed=1)
    model, options = SOLVERS[solver_name]
    solver = make_solver(model, seed=0, **options)
    with tempfile.TemporaryDirectory(prefix="rueval-bench-") as cache:
        os.environ["RUEVAL_CACHE_DIR"] = cache  # an empty cache: the fit is a real fit
        started = time.perf_counter()
        solver.fit(task, train)
        fitted = time.perf_counter()
        predictions = solver.predict(task, examples)
        predicted = time.perf_counter()
    assert len(predictions) == n
    return {
        "task": task_name,
        "solver": solver_name,
        "n": n,
        "fit_s": round(fitted - started, 3),
        "predict_s": round(predicted - fitted, 3),
        "examples_per_s": round(n / (predicted - fitted), 1),  # prediction throughput
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),  # Linux: KiB
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="examples to fit on, and as many to predict")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    rows = []
    for task_name in args.tasks.split(","):
        for solver_name in args.solvers.split(","):
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
                rows.append(pool.submit(measure, task_name, solver_name, args.n).result())
            print(json.dumps(rows[-1]), flush=True)
    show(rows)
    import sklearn

    from rueval import __version__

    write_results(args.out, rows, rueval=__version__, **{"scikit-learn": sklearn.__version__})


def show(rows: list[dict[str, Any]]) -> None:
    table = Table(title=f"classical solvers, {rows[0]['n']} train + {rows[0]['n']} predicted examples per task")
    for column in ("task", "solver", "fit s", "predict s", "examples/s", "peak RSS MB"):
        table.add_column(column, justify="left" if column in ("task", "solver") else "right")
    for row in rows:
        table.add_row(
            row["task"],
            row["solver"],
            f"{row['fit_s']:.2f}",
            f"{row['predict_s']:.2f}",
            f"{row['examples_per_s']:,.0f}",
            f"{row['peak_rss_mb']:.0f}",
        )
    Console().print(table)


if __name__ == "__main__":
    main()
