"""Throughput and peak memory of the 13-gram corpus overlap (rueval.audit.ngram_overlap) on a synthetic corpus.

    python benchmarks/bench_ngram_overlap.py [--gigabytes 10] [--items 3198] [--words 40] [--keep DIR]

Not part of the test suite. Writes a corpus of ``--gigabytes`` GB in a temporary folder (deleted at the end
unless --keep): JSON Lines files (60%), plain text files (20%) and Parquet files (20%), of documents of
about 400 words drawn from a Zipf law over 100k word forms (the bundled samples' Russian words and their
variants), with seeded RNGs. The task is ``--items`` items (TERRa's official test count by default) of
``--words`` words each from the same law; 100 of them are planted in corpus documents (half with their ASCII
punctuation changed, which lm-eval's normalisation ignores). Streams the corpus past the task in one fresh
process (the corpus is written by another, so that the peak memory is the search's alone), checks that exactly
the planted items are flagged, and reports MB/s of text per format and that process's peak memory after
building the task's 13-grams and after each format. Writes benchmarks/results/bench_ngram_overlap.json.
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from results_file import write_results  # beside this script

from rueval.audit import ngram_overlap
from rueval.audit.corpus_files import pieces
from rueval.core.memory import peak_rss_mb
from rueval.models.backends.tiny import sample_texts

FILE_BYTES = 2**30
SHARES = {"jsonl": 0.6, "txt": 0.2, "parquet": 0.2}
PLANTED = 100
ENDINGS = ("", "а", "ы", "у", "ом", "ой", "ам", "ами", "ах", "е", "и", "ов", "ей", "ях", "ого", "ему", "ым", "ых")


def vocabulary(size: int = 100_000) -> list[str]:
    """Word forms: the samples' Russian words (no quote or backslash, so a JSON line needs no escapes), with
    endings, then numbered variants, up to ``size``."""
    base = sorted({w for text in sample_texts() for w in text.split() if re.fullmatch(r"[А-Яа-яЁё-]+", w)})
    forms = list(dict.fromkeys(word + ending for ending in ENDINGS for word in base))
    n = 0
    while len(forms) < size:
        forms.append(f"{base[n % len(base)]}{n}")
        n += 1
    return forms[:size]


class Words:
    """Seeded draws from a Zipf law (exponent 1.05) over the vocabulary."""

    def __init__(self, forms: list[str], seed: int):
        self.forms = np.array([form.encode() for form in forms], dtype=object)
        weights = 1 / np.arange(1, len(forms) + 1) ** 1.05
        self.cdf = np.cumsum(weights / weights.sum())
        self.rng = np.random.default_rng(seed)

    def draw(self, n: int) -> list[bytes]:
        ranks = np.minimum(np.searchsorted(self.cdf, self.rng.random(n)), len(self.cdf) - 1)
        return self.forms[ranks].tolist()


def documents(words: Words, count: int, planted: dict[int, bytes]) -> list[bytes]:
    drawn = words.draw(count * 400)
    docs = [b" ".join(drawn[i * 400 : (i + 1) * 400]) for i in range(count)]
    for doc, text in planted.items():
        docs[doc] = docs[doc] + b" " + text + b". " + docs[doc]
    return docs


def write_corpus(folder: Path, gigabytes: float, words: Words, plants: list[bytes]) -> dict[str, list[Path]]:
    """Files of about FILE_BYTES each, by format; ``plants`` spread over them (one per file's first pieces)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files: dict[str, list[Path]] = {kind: [] for kind in SHARES}
    plan = [kind for kind, share in SHARES.items() for _ in range(max(1, round(gigabytes * share)))]
    rng = np.random.default_rng(1)
    per_file = np.array_split(np.array(plants, dtype=object), len(plan))
    for n, kind in enumerate(plan):
        path = folder / f"part{n:02d}.{kind}"
        planted = list(per_file[n])
        written = 0
        parquet = pq.ParquetWriter(path, pa.schema([("text", pa.string())])) if kind == "parquet" else None
        while written < FILE_BYTES * min(1.0, gigabytes):
            spots = dict(zip(rng.choice(2500, len(planted), replace=False).tolist(), planted, strict=True))
            docs = documents(words, 2500, spots)
            planted = []
            written += sum(map(len, docs))
            if parquet is not None:
                parquet.write_table(pa.table({"text": [doc.decode() for doc in docs]}))
            else:
                with path.open("ab") as out:
                    if kind == "jsonl":
                        out.write(b"".join(b'{"text": "' + doc + b'", "source": "bench"}\n' for doc in docs))
                    else:
                        out.write(b"\n\n".join(docs) + b"\n\n")
        if parquet is not None:
            parquet.close()
        files[kind].append(path)
        print(f"written {path.name}: {path.stat().st_size / 2**20:,.0f} MB", flush=True)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gigabytes", type=float, default=10.0)
    parser.add_argument("--items", type=int, default=3198, help="task items (TERRa's official test count)")
    parser.add_argument("--words", type=int, default=40, help="words per item")
    parser.add_argument("--keep", type=Path, default=None, help="write the corpus here and keep it")
    args = parser.parse_args()
    forms = vocabulary()
    items = [b" ".join(Words(forms, seed=100 + i).draw(args.words)).decode() for i in range(args.items)]
    planted = list(range(0, args.items, max(1, args.items // PLANTED)))[:PLANTED]
    plants = [items[i].replace(" ", ", ") + "!" if k % 2 else items[i] for k, i in enumerate(planted)]
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_ngram_overlap-"))
    work.mkdir(parents=True, exist_ok=True)
    # the search's process starts first: a process's peak memory counts what its parent held when it forked
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as child:
        child.submit(peak_rss_mb).result()
        try:
            started = time.perf_counter()
            files = write_corpus(work, args.gigabytes, Words(forms, seed=0), [p.encode() for p in plants])
            print(f"corpus written in {time.perf_counter() - started:.0f} s", flush=True)
            rows = child.submit(measure, items, files, set(planted)).result()
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
    write_results(
        Path(__file__).parent / "results" / "bench_ngram_overlap.json",
        rows,
        gigabytes=args.gigabytes,
        items=args.items,
        words_per_item=args.words,
        processes=1,
    )


def measure(items: list[str], files: dict[str, list[Path]], planted: set[int]) -> list[dict]:
    before = peak_rss_mb()
    started = time.perf_counter()
    task = ngram_overlap.TaskNgrams(items)
    built = time.perf_counter() - started
    rows = [{"step": "task 13-grams", "items": len(items), "ngrams": int(task.first.sum()),
             "seconds": round(built, 2), "peak_rss_mb": round(peak_rss_mb(), 1),
             "peak_rss_mb_before": round(before, 1)}]  # fmt: skip
    total_bytes = total_seconds = 0.0
    for kind, paths in files.items():
        text_bytes, seconds = 0, 0.0
        for path in paths:
            started = time.perf_counter()
            for piece in pieces(path):
                task.scan(piece.text, piece.goes_on)
                text_bytes += len(piece.text)
            seconds += time.perf_counter() - started
            print(f"{path.name}: {peak_rss_mb():,.0f} MB peak so far", flush=True)
        file_bytes = sum(path.stat().st_size for path in paths)
        rows.append({"step": f"stream {kind}", "files": len(paths), "file_mb": round(file_bytes / 2**20),
                     "text_mb": round(text_bytes / 2**20), "seconds": round(seconds, 1),
                     "text_mb_per_s": round(text_bytes / 2**20 / seconds, 1),
                     "peak_rss_mb": round(peak_rss_mb(), 1)})  # fmt: skip
        total_bytes, total_seconds = total_bytes + text_bytes, total_seconds + seconds
    flagged = {i for i, item in enumerate(task.overlaps()) if item.flagged}
    assert flagged == planted, f"flagged {len(flagged)} items, {len(flagged ^ planted)} unlike the planted"
    rows.append({"step": "whole corpus", "text_mb": round(total_bytes / 2**20), "seconds": round(total_seconds, 1),
                 "text_mb_per_s": round(total_bytes / 2**20 / total_seconds, 1), "flagged": len(flagged),
                 "planted": len(planted), "peak_rss_mb": round(peak_rss_mb(), 1)})  # fmt: skip
    for row in rows:
        print(row)
    return rows


if __name__ == "__main__":
    main()
