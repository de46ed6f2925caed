"""Peak memory of a majority run on a large val file: `rueval run -m majority -t parus --data DIR`.

    python benchmarks/bench_data_memory.py [--records 200000] [--keep DIR] [--baseline REV]

Not part of the test suite. Writes a PARus-layout folder: the bundled train split and a val split of
``--records`` generated records (UTF-8 JSON Lines as the official files are, about 670 bytes a
record, so 200k records make about 134 MB), each record's premise and choices the words of random
sample sentences, shuffled, with a seeded RNG. Runs the command in a fresh process and reads its
peak resident set (getrusage of the child: interpreter and libraries included), then prints it
beside the file's size and their ratio. ``--baseline REV`` measures the same run with the rueval
of that git revision too (its src/ exported to a temporary folder), for a before/after. Writes
benchmarks/results/bench_data_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_results  # beside this script

from rueval.data.local import SAMPLES_DIR

TEXT_CHARS = (110, 100, 100)  # premise, choice1, choice2: about 690 bytes a record with the keys


def sample_words() -> list[str]:
    words = []
    for split in ("train", "val", "test"):
        for line in (SAMPLES_DIR / "PARus" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for field in ("premise", "choice1", "choice2"):
                words.extend(record[field].split())
    return words


def text(rng: random.Random, words: list[str], chars: int) -> str:
    picked: list[str] = []
    while sum(len(word) + 1 for word in picked) < chars:
        picked.append(rng.choice(words))
    return " ".join(picked)


def write_data(root: Path, records: int, seed: int = 0) -> Path:
    """DIR/PARus/{train,val}.jsonl; returns the val file."""
    folder = root / "PARus"
    folder.mkdir(parents=True)
    shutil.copy(SAMPLES_DIR / "PARus" / "train.jsonl", folder / "train.jsonl")
    rng, words = random.Random(seed), sample_words()
    val = folder / "val.jsonl"
    with val.open("w", encoding="utf-8") as f:
        for idx in range(records):
            premise, choice1, choice2 = (text(rng, words, chars) for chars in TEXT_CHARS)
            record = {"premise": premise, "choice1": choice1, "choice2": choice2}
            record |= {"question": rng.choice(("cause", "effect")), "label": rng.randint(0, 1), "idx": idx}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return val


def measure(data: Path, out: Path, src: Path | None = None) -> tuple[float, float]:
    """Peak RSS (MiB) and wall time (s) of one run, in a fresh process (with the rueval in ``src``)."""
    command = [sys.executable, "-m", "rueval", "run", "-m", "majority", "-t", "parus", "--data", str(data)]
    command += ["-o", str(out), "--quiet"]
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if src is not None:
        environment["PYTHONPATH"] = str(src)
    started = time.perf_counter()
    process = subprocess.Popen(command, env=environment)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the run failed: {' '.join(command)}")
    return usage.ru_maxrss / 1024, seconds  # KiB on Linux


def exported_src(revision: str, folder: Path) -> Path:
    """The src/ folder of a git revision of this repository, exported into ``folder``."""
    repository = Path(__file__).resolve().parents[1]
    command = ["git", "-C", str(repository), "archive", revision, "src"]
    archive = subprocess.run(command, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--keep", type=Path, help="write the data here and keep it (default: a temporary folder)")
    parser.add_argument("--baseline", help="a git revision to measure too (e.g. the commit before a change)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "data"
        val = root / "PARus" / "val.jsonl"
        if not val.is_file():
            val = write_data(root, args.records)
        input_mb = val.stat().st_size / 2**20
        versions = {"this checkout": None}
        if args.baseline:
            versions[args.baseline] = exported_src(args.baseline, Path(tmp))
        for version, src in versions.items():
            peak_mb, seconds = measure(root, Path(tmp) / f"run{len(rows)}", src)
            rows.append({"rueval": version, "records": args.records, "val_mb": round(input_mb, 1),
                         "peak_rss_mb": round(peak_mb, 1), "ratio": round(peak_mb / input_mb, 2),
                         "seconds": round(seconds, 1)})  # fmt: skip
            print(f"{version}: val {input_mb:.1f} MiB, peak RSS {peak_mb:.1f} MiB ({peak_mb / input_mb:.2f}x)")
    write_results(Path(__file__).parent / "results" / "bench_data_memory.json", rows, records=args.records)


if __name__ == "__main__":
    main()
