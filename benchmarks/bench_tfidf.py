"""Times `-m tfidf` and `-m tfidf-fields` on RuCoS-shaped data of the official size (72,193 train and
7,577 val passages, one query each), RuCoS being the largest RSG task.

    python benchmarks/bench_tfidf.py [--train 72193] [--val 7577] [--solvers tfidf,tfidf-fields]

Not part of the test suite. The passages are generated offline with a seeded RNG: about 180 words
each, drawn from a Zipf-distributed vocabulary of 200,000 made-up words, with 20 mentions of 8
entities (capitalised made-up names) spread among them and a "@highlight" summary at the end, as
RuCoS passages have; the query is a sentence of the passage with one entity put in @placeholder.
Every passage is new, so no solver gets to reuse work on repeated texts.

Every solver runs in a fresh process with an empty tfidf cache, so its fit is a real fit (the cache
write included) and its peak RSS (resource.getrusage) is its own: interpreter, libraries and the
examples included. Writes benchmarks/results/bench_tfidf.json.
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
from pathlib import Path
from typing import Any

import numpy as np
from results_file import write_results  # beside this script

OUT = Path(__file__).parent / "results" / "bench_tfidf.json"
VOCABULARY = 200_000
SYLLABLES = [c + v for c in "бвгдзклмнпрстфхцчшщ" for v in "аеиоуыэюя"]


def made_up_words(count: int, rng: random.Random) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < count:
        words["".join(rng.choices(SYLLABLES, k=rng.randint(2, 4)))] = None
    return list(words)


def generate(n: int, seed: int) -> list[Any]:
    """n RuCoS examples (one query per passage), labelled with the entity put in the placeholder."""
    from rueval.tasks import Example

    rng = random.Random(seed)
    numbers = np.random.default_rng(seed)
    words = made_up_words(VOCABULARY, random.Random("vocabulary"))  # the same words for train and val
    names = [word.capitalize() for word in made_up_words(5_000, random.Random("names"))]
    examples = []
    for i in range(n):
        entities = rng.sample(names, 8)
        tokens = [words[rank % VOCABULARY] for rank in numbers.zipf(1.3, 180)]
        for position in rng.sample(range(len(tokens)), 20):
            tokens[position] = rng.choice(entities)
        sentences = [" ".join(tokens[start : start + 15]) + "." for start in range(0, len(tokens), 15)]
        answer = rng.choice(entities)
        query = rng.choice(sentences).rstrip(".") + f" {answer}"
        passage = " ".join(sentences) + f"\n@highlight\n{rng.choice(sentences)}"
        mentions = tuple(word for word in (token.strip(".") for token in passage.split()) if word in entities)
        fields = {"passage": passage, "query": query.replace(answer, "@placeholder", 1)}
        examples.append(Example(idx=(i, 0), fields=fields, label=(answer,), candidates=mentions))
    return examples


def measure(solver_name: str, n_train: int, n_val: int) -> dict[str, Any]:
    """Fit on the generated train passages and predict the val ones; runs in its own process."""
    from rueval.scoring.metrics import normalize_answer
    from rueval.solvers import make_solver
    from rueval.tasks import get_task

    task = get_task("rucos")
    train, examples = generate(n_train, seed=0), generate(n_val, seed=1)
    solver = make_solver(solver_name, seed=0)
    with tempfile.TemporaryDirectory(prefix="rueval-bench-") as cache:
        os.environ["RUEVAL_CACHE_DIR"] = cache  # an empty cache: the fit is a real fit
        started = time.perf_counter()
        solver.fit(task, train)
        fitted = time.perf_counter()
        predictions = solver.predict(task, examples)
        predicted = time.perf_counter()
    right = sum(normalize_answer(p) == normalize_answer(e.label[0]) for p, e in zip(predictions, examples, strict=True))
    return {
        "solver": solver_name,
        "train": n_train,
        "val": n_val,
        "fit_s": round(fitted - started, 2),
        "predict_s": round(predicted - fitted, 2),
        "em": round(100 * right / n_val, 2),  # a sanity check: the query's own sentence is in the passage
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),  # Linux: KiB
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=72_193)
    parser.add_argument("--val", type=int, default=7_577)
    parser.add_argument("--solvers", default="tfidf,tfidf-fields")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    rows = []
    for solver_name in args.solvers.split(","):
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            rows.append(pool.submit(measure, solver_name, args.train, args.val).result())
        print(json.dumps(rows[-1]), flush=True)
    import sklearn

    from rueval import __version__

    write_results(args.out, rows, rueval=__version__, **{"scikit-learn": sklearn.__version__})


if __name__ == "__main__":
    main()
