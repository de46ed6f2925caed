"""Times `rueval run -t rucos -m heuristic` on RuCoS-shaped data of the official size.

    python benchmarks/bench_heuristics_fullsize.py [--train 72193] [--val 7577] [--src DIR ...] [--rules fitted]

Not part of the test suite. RuCoS v1.1 has 72,193 train and 7,577 val records; each generated
record is a distinct passage (about 170 words in 12 sentences and a @highlight line, with 10
entity mentions of 6 names) and one query naming some of them, its answer one of the others.
Words come from the bundled samples, shuffled with a seeded RNG, so the texts are new but the
vocabulary is the samples' (about 9,000 words), far smaller than real data's: pymorphy's per-word
cache hits more often than it would there. The data is written once to a temporary directory in
the official layout; each source tree given with --src (default: this checkout's src) then runs
the CLI in a fresh process, and its wall time, with the run's own timing and peak RSS from its
results.json, is reported. Writes benchmarks/results/bench_heuristics_fullsize.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import write_results  # beside this script

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "src" / "rueval" / "data" / "samples"
OUT = Path(__file__).parent / "results" / "bench_heuristics_fullsize.json"
SENTENCES, SENTENCE_WORDS, NAMES, MENTIONS = 12, 14, 6, 10


def vocabulary() -> tuple[list[str], list[str]]:
    """The lower-case and the capitalised Cyrillic words of every bundled sample file."""
    words: set[str] = set()
    for path in sorted(SAMPLES.rglob("*.jsonl")):
        words.update(re.findall("[А-Яа-яЁё]{2,}", path.read_text(encoding="utf-8")))
    ordered = sorted(words)
    return [w for w in ordered if w.islower()], [w for w in ordered if w[0].isupper()]


def record(idx: int, rng: random.Random, lower: list[str], names: list[str]) -> dict[str, Any]:
    """One RuCoS record: a new passage with entity spans, and one query whose answer is one of them."""
    cast = rng.sample(names, NAMES)
    slots = set(rng.sample(range(SENTENCES), min(MENTIONS, SENTENCES)))
    text, entities = "", []
    for i in range(SENTENCES):
        words = rng.sample(lower, SENTENCE_WORDS)
        words[0] = words[0].capitalize()
        if i in slots:
            name = rng.choice(cast)
            position = rng.randrange(1, SENTENCE_WORDS)
            start = len(text) + sum(len(w) + 1 for w in words[:position])
            words[position] = name
            entities.append({"start": start, "end": start + len(name)})
        text += " ".join(words) + ". "
    text += "\n@highlight\n" + " ".join(rng.sample(lower, 8))
    mentioned = [text[e["start"] : e["end"]] for e in entities]
    answer = rng.choice(mentioned)
    named = rng.choice([name for name in mentioned if name != answer] or mentioned)
    query = f"{named} {' '.join(rng.sample(lower, 6))} @placeholder {' '.join(rng.sample(lower, 5))}."
    first = next(e for e in entities if text[e["start"] : e["end"]] == answer)
    return {
        "idx": idx,
        "source": "generated",
        "passage": {"text": text, "entities": entities},
        "qas": [{"idx": idx, "query": query, "answers": [{**first, "text": answer}]}],
    }


def write_data(directory: Path, sizes: dict[str, int], seed: int) -> None:
    lower, names = vocabulary()
    rng = random.Random(seed)
    folder = directory / "RuCoS"
    folder.mkdir(parents=True)
    idx = 0
    for split, n in sizes.items():
        with (folder / f"{split}.jsonl").open("w", encoding="utf-8") as out:
            for _ in range(n):
                out.write(json.dumps(record(idx, rng, lower, names), ensure_ascii=False) + "\n")
                idx += 1


def run(src: Path, data: Path, out: Path, rules: str) -> dict[str, Any]:
    """One `rueval run` in a fresh process on the given source tree."""
    command = [sys.executable, "-m", "rueval", "run", "-t", "rucos", "-m", "heuristic", "--rules", rules]
    command += ["--data", str(data), "--split", "val", "-o", str(out)]
    environment = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    subprocess.run(command, env=environment, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    task = results["tasks"]["rucos"]
    return {
        "src": str(src),
        "rules": rules,
        "wall_s": round(wall, 1),
        "metrics": task.get("metrics"),
        "industrial": results.get("industrial"),  # the run's own timing and peak RSS, as results.json has them
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=72_193)
    parser.add_argument("--val", type=int, default=7_577)
    parser.add_argument("--src", type=Path, action="append", help="a source tree to time (repeatable)")
    parser.add_argument("--rules", default="fitted", choices=("fitted", "all"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rueval-rucos-") as tmp:
        data = Path(tmp) / "data"
        started = time.perf_counter()
        write_data(data, {"train": args.train, "val": args.val}, seed=0)
        print(f"generated {args.train} + {args.val} records in {time.perf_counter() - started:.1f} s", flush=True)
        for i, src in enumerate(args.src or [ROOT / "src"]):
            rows.append(run(src.resolve(), data, Path(tmp) / f"run{i}", args.rules))
            print(json.dumps(rows[-1]), flush=True)
    write_results(args.out, rows, train=args.train, val=args.val)


if __name__ == "__main__":
    main()
