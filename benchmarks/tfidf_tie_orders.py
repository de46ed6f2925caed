"""How far the RSG TF-IDF baseline moves with the order of equally frequent words at its vocabulary
cut, computed by the RSG repository's own scripts. Not part of rueval, nor imported by it.

    python benchmarks/tfidf_tie_orders.py RSG_CHECKOUT DATA [--orders 200]

RSG_CHECKOUT is a checkout of RussianNLP/RussianSuperGLUE (its ``tfidf_baseline/TERRa.py`` and
``RUSSE.py`` are imported from there and run as published); DATA an RSG directory in the official
layout (TERRa train and val; RUSSE val, which stands in for train as in benchmarks/reproduce.py).

The scripts fit nothing themselves: they take a ``TfidfVectorizer(max_features=10000)``, here fitted
on the train texts as the scripts join them. scikit-learn cuts the vocabulary at ``max_features``
with numpy's default (unstable) argsort, so where the cut falls among words of equal frequency,
which of them are kept depends on numpy's build and the CPU. For each task the script prints the
score with scikit-learn's own cut on this machine, with ties taken alphabetically, and over
``--orders`` random orders of the tied words (seed 0).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

MAX_FEATURES = 10_000  # the scripts' vectorizer
TASKS = {  # name -> (script module, train file, val file) under DATA
    "terra": ("TERRa", "TERRa/train.jsonl", "TERRa/val.jsonl"),
    "russe": ("RUSSE", "RUSSE/val.jsonl", "RUSSE/val.jsonl"),
}


def tie_orders(script, train: Path, val: Path, orders: int) -> str:
    """One line: the val accuracy (x100) with each way of cutting the vocabulary."""
    name = script.__name__
    build, evaluate = getattr(script, f"build_feature_{name}"), getattr(script, f"eval_{name}")
    with open(train, encoding="utf-8-sig") as f:
        texts = [build(json.loads(line))[0] for line in f if line.strip()]

    def accuracy(vectorizer: TfidfVectorizer) -> float:
        return 100 * evaluate(str(train), str(val), str(val), vectorizer.fit(texts))[1]["val"]

    counter = CountVectorizer().fit(texts)
    frequencies = np.asarray(counter.transform(texts).sum(axis=0)).ravel()
    words = counter.get_feature_names_out()
    at_cut = frequencies[np.argsort(-frequencies, kind="stable")[MAX_FEATURES - 1]]
    kept_at_cut = MAX_FEATURES - int((frequencies > at_cut).sum())

    def cut(tie_order: np.ndarray) -> TfidfVectorizer:
        return TfidfVectorizer(vocabulary=sorted(words[np.lexsort((tie_order, -frequencies))[:MAX_FEATURES]]))

    rng = np.random.default_rng(0)
    shuffled = np.array([accuracy(cut(rng.permutation(len(words)))) for _ in range(orders)])
    return (
        f"| {name} | {int((frequencies == at_cut).sum()):,} seen {at_cut} times, {kept_at_cut:,} kept "
        f"| {accuracy(TfidfVectorizer(max_features=MAX_FEATURES)):.2f} | {accuracy(cut(np.arange(len(words)))):.2f} "
        f"| {shuffled.min():.2f}-{shuffled.max():.2f} (median {np.median(shuffled):.2f}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rsg_checkout", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--orders", type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, str(args.rsg_checkout / "tfidf_baseline"))
    print(f"| task | tied at the cut | scikit-learn's cut | ties alphabetical | {args.orders} random tie orders |")
    print("|---|---|---:|---:|---|")
    for module, train, val in TASKS.values():
        print(tie_orders(importlib.import_module(module), args.data / train, args.data / val, args.orders))


if __name__ == "__main__":
    main()
