"""Times every command a user runs on real data, on data of the official sizes with distinct texts.

    python benchmarks/bench_fullsize.py [--scale 0.1] [--texts FILE] [--data DIR] [--only audit,run-tfidf]

Not part of the test suite. Without --data it first writes all 16 tasks in their official layouts
(RSG: `<Task>/{train,val,test}.jsonl`, test unlabelled, `LiDiRus/LiDiRus.jsonl`; TAPE: the raw
`<task>/{train,test}.jsonl`) with the official split sizes (SIZES), times --scale. The texts are
new: sentences walked through a bigram chain of the words of --texts FILE (one or more sentences
a line) or of every text of the bundled samples, about a quarter of their words swapped for
another form of the same lemma (pymorphy3), one in twenty for a made-up name, and some sentences
given a number: sentences are not reused whole, the vocabulary grows and has real text's long tail
of rare names and figures, and no two passages are equal. Structure is
rebuilt for each record: RuCoS entity spans and answers, MuSeRC's passage/question/answer nesting,
RUSSE's word offsets, inline options (A)-(D), MultiQ answer offsets, Ethics 0/1 categories.

Every command then runs in a fresh process with a fresh RUEVAL_CACHE_DIR, under /usr/bin/time -v:
its wall time, CPU time (user + system, workers included: on a shared machine the steadier
figure) and peak RSS (the largest of its processes) go to
benchmarks/results/bench_fullsize.json, and a Markdown table to bench_fullsize.md and stdout.
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
from collections import defaultdict
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from results_file import write_results  # beside this script

OUT = Path(__file__).parent / "results" / "bench_fullsize.json"
# issue #18: audit -t all within 120 s, run -t all with a classical model within 60 s, every command within 2 GB
TARGET_S = {"audit": 120, "run-majority": 60, "run-heuristic": 60, "run-tfidf": 60}
TARGET_MB = 2048

# (train, val, test) examples per task. RSG: Shavrina et al. (2020), Table 1 ("Samples"), in
# passages for MuSeRC (about 5.8 questions of 4.1 answers each, as the official v1.1 files have)
# and RuCoS (its v1.1 val holds 7,577 passages, issue #18). TAPE: Taktasheva et al. (2022),
# Table 2 (|D_train|, |D_test|; "1k" read as 1,000); TAPE has no val split.
SIZES: dict[str, tuple[int, int, int]] = {
    "lidirus": (0, 0, 1104),
    "rcb": (438, 220, 348),
    "parus": (500, 100, 400),
    "muserc": (500, 100, 322),
    "terra": (2616, 307, 3198),
    "russe": (19845, 8508, 12151),
    "rwsd": (606, 204, 154),
    "danetqa": (392, 295, 295),
    "rucos": (72193, 7577, 4147),
    "winograd": (60, 0, 986),
    "ru_openbook": (48, 0, 500),
    "ru_worldtree": (47, 0, 629),
    "multiq": (64, 0, 1000),
    "chegeka": (49, 0, 520),
    "sit_ethics": (59, 0, 1000),
    "per_ethics": (58, 0, 1000),
}
RSG_FOLDERS = {
    "lidirus": "LiDiRus",
    "rcb": "RCB",
    "parus": "PARus",
    "muserc": "MuSeRC",
    "terra": "TERRa",
    "russe": "RUSSE",
    "rwsd": "RWSD",
    "danetqa": "DaNetQA",
    "rucos": "RuCoS",
}
FORM_SWAP_RATE = 0.25
NUMBER_RATE = 0.3  # sentences that get a number
MAX_SENTENCE_WORDS = 40
NAME_RATE = 0.05  # words replaced by a made-up name
CONSONANTS, VOWELS = "бвгдзклмнпрстфхцчшщ", "аеиоуыяю"
SURNAME_ENDINGS = ("ов", "ова", "ин", "ина", "ский", "ская", "енко", "ук", "иди")
NAME = re.compile(r"\b[А-ЯЁ][а-яё]{2,}")  # RuCoS entities: capitalised words


class Texts:
    """Distinct sentences and passages: walks through a bigram chain of the pool's words (each word
    followed by a word that follows it somewhere in the pool), so sentences mix across records."""

    def __init__(self, pool: list[str], rng: random.Random) -> None:
        self.rng, self.seen = rng, set()
        self.starts = [sentence.split()[0] for sentence in pool]
        self.following: dict[str, list[str | None]] = defaultdict(list)
        for sentence in pool:
            words = sentence.split()
            for word, following in zip(words, [*words[1:], None], strict=True):
                self.following[word].append(following)

    def sentence(self) -> str:
        words = [self.rng.choice(self.starts)]
        while len(words) < MAX_SENTENCE_WORDS and (following := self.rng.choice(self.following[words[-1]])):
            words.append(following)
        words = [self.other_form(w) if self.rng.random() < FORM_SWAP_RATE else w for w in words]
        if self.rng.random() < NUMBER_RATE:  # news text is full of dates and figures
            words.insert(self.rng.randrange(1, len(words) + 1), str(self.rng.randint(2, 99_999)))
        words = [self.name() if self.rng.random() < NAME_RATE else w for w in words]
        return " ".join(words)

    def name(self) -> str:
        """A made-up surname: real text's long tail of names, rare in the corpus."""
        letters = [self.rng.choice(VOWELS if k % 2 else CONSONANTS) for k in range(self.rng.randint(3, 6))]
        return ("".join(letters) + self.rng.choice(SURNAME_ENDINGS)).capitalize()

    def other_form(self, word: str) -> str:
        forms = lexeme(word.lower().strip('.,!?:;«»"()'))
        if not forms:
            return word
        form = self.rng.choice(forms)
        return form.capitalize() if word[:1].isupper() else form

    def passage(self, sentences: int) -> str:
        """A text not produced before."""
        while True:
            text = " ".join(self.sentence() for _ in range(sentences))
            if text not in self.seen:
                self.seen.add(text)
                return text

    def phrase(self, most: int = 4) -> str:
        words = [w.strip('.,!?:;«»"()') for w in self.sentence().split()]
        words = [w for w in words if w] or ["ответ"]
        start = self.rng.randrange(len(words))
        return " ".join(words[start : start + self.rng.randint(1, most)])


@cache
def lexeme(word: str) -> tuple[str, ...]:
    """Every form of the word's most probable lemma (pymorphy3), if it is a Russian word."""
    if not word.isalpha() or not re.fullmatch(r"[а-яё]+", word):
        return ()
    from rueval.core.text import parse

    return tuple(dict.fromkeys(form.word for form in parse(word).lexeme))


def sentence_pool(texts_file: Path | None) -> list[str]:
    """Sentences of --texts, or of every string in the bundled samples."""
    from rueval.core.text import sentences
    from rueval.models.backends.tiny import sample_texts

    if texts_file is not None:
        lines = texts_file.read_text(encoding="utf-8").splitlines()
    else:  # every text of the bundled samples, markup left out
        lines = [
            re.sub(r"\(\w\)|@highlight|@placeholder|\(\d+\)", " ", text)
            for text in sample_texts()
            if len(text.split()) >= 3 and not text.startswith("http")
        ]
    pool = list(dict.fromkeys(s for line in lines for s in sentences(" ".join(line.split())) if len(s.split()) >= 3))
    if len(pool) < 20:
        raise SystemExit(f"too few sentences to recombine: {len(pool)} (at least 20 of 3 words or more)")
    return pool


def ethics(t: Texts, rng: random.Random, prefix: str) -> dict[str, Any]:
    flags = [int(rng.random() < 0.4) for _ in range(5)]
    categories = ("virtue", "moral", "law", "justice", "util")
    record = {"source": rng.choice(("news", "fiction", "lenta")), "text": t.passage(4)}
    return record | {f"{prefix}_{c}": flag for c, flag in zip(categories, flags, strict=True)} | {"label": flags}


def options_question(t: Texts, rng: random.Random) -> tuple[str, str]:
    stem = t.passage(1).rstrip(".!") + "?"
    return stem + "".join(f" ({letter}) {t.phrase()}" for letter in "ABCD"), rng.choice("ABCD")


def muserc(t: Texts, rng: random.Random, i: int) -> dict[str, Any]:
    text = " ".join(f"({k}) {t.sentence()}" for k in range(1, rng.randint(10, 14)))
    questions, answer_idx = [], 0
    for q in range(rng.choice((5, 6, 6, 6, 7))):
        answers = []
        for _ in range(rng.choice((3, 4, 4, 5))):
            answers.append({"idx": answer_idx, "text": t.sentence(), "label": int(rng.random() < 0.45)})
            answer_idx += 1
        questions.append({"question": t.sentence().rstrip(".!") + "?", "idx": q, "answers": answers})
    return {"idx": i, "passage": {"text": text, "questions": questions}}


def rucos(t: Texts, rng: random.Random, i: int) -> dict[str, Any]:
    while True:
        text = t.passage(rng.randint(6, 10)) + "\n@highlight\n" + t.sentence()
        spans = [(m.start(), m.end()) for m in NAME.finditer(text)]
        if len(spans) >= 2:
            break
    qas = []
    for q in range(rng.choice((1, 1, 1, 2))):
        start, end = rng.choice(spans)
        entity = text[start:end]
        words = t.sentence().split()
        words[rng.randrange(len(words))] = "@placeholder"
        answers = [{"start": s, "end": e, "text": text[s:e]} for s, e in spans if text[s:e] == entity]
        qas.append({"idx": q, "query": " ".join(words), "answers": answers})
    entities = [{"start": s, "end": e} for s, e in spans]
    return {
        "idx": i,
        "source": rng.choice(("lenta", "dw")),
        "passage": {"text": text, "entities": entities},
        "qas": qas,
    }


def russe(t: Texts, rng: random.Random, i: int) -> dict[str, Any]:
    first = t.passage(1)
    word = rng.choice([w for w in re.findall(r"[А-Яа-яЁё]+", first)] or ["слово"])
    second = t.sentence().split()
    second.insert(rng.randrange(len(second) + 1), word)
    second_text = " ".join(second)
    start1, start2 = first.find(word), re.search(rf"(?<!\S){re.escape(word)}(?!\S)", second_text).start()
    offsets = {"start1": start1, "end1": start1 + len(word), "start2": start2, "end2": start2 + len(word)}
    return {
        "idx": i,
        "word": word.lower(),
        "sentence1": first,
        "sentence2": second_text,
        **offsets,
        "label": rng.random() < 0.5,
    }


def rwsd(t: Texts, rng: random.Random, i: int) -> dict[str, Any]:
    words = t.passage(1).split()
    while len(words) < 4:
        words += t.sentence().split()
    first, second = sorted(rng.sample(range(len(words)), 2))
    target = {"span1_text": words[first], "span1_index": first, "span2_text": words[second], "span2_index": second}
    return {"idx": i, "text": " ".join(words), "target": target, "label": rng.random() < 0.5}


def multiq(t: Texts, rng: random.Random, i: int) -> dict[str, Any]:
    support, main = t.passage(1), t.passage(rng.randint(3, 5))

    def answer(text: str) -> dict[str, Any]:
        match = rng.choice(list(re.finditer(r"[А-Яа-яЁё]{3,}", text)) or [re.search(r"\S+", text)])
        return {"label": "passage", "offset": match.start(), "length": len(match.group()), "segment": match.group()}

    question = t.sentence().rstrip(".!") + "?"
    return {
        "support_text": support,
        "main_text": main,
        "question": question,
        "bridge_answers": [answer(support)],
        "main_answers": [answer(main)],
    }


def winograd(t: Texts, rng: random.Random, i: int) -> dict[str, Any]:
    text = t.passage(1)
    nouns = re.findall(r"[А-Яа-яЁё]{4,}", text) or ["дом", "сад"]
    options = rng.sample(nouns, 2) if len(set(nouns)) >= 2 else [nouns[0], "сад"]
    label = int(rng.random() < 0.35)
    return {
        "text": text,
        "options": options,
        "reference": "которая",
        "homonymia_type": rng.choice((1.1, 1.2, 2.1)),
        "answer": options[label],
        "label": label,
    }


BUILDERS: dict[str, Callable[[Texts, random.Random, int], dict[str, Any]]] = {
    "lidirus": lambda t, rng, i: {
        "idx": i,
        "sentence1": t.passage(1),
        "sentence2": t.sentence(),
        "label": rng.choice(("entailment", "not_entailment")),
        "knowledge": "",
        "lexical-semantics": "",
        "logic": rng.choice(("", "Negation", "Conjunction")),
        "predicate-argument-structure": "",
    },
    "rcb": lambda t, rng, i: {
        "idx": i,
        "premise": t.passage(2),
        "hypothesis": t.sentence(),
        "verb": "знать",
        "negation": "no_negation",
        "label": rng.choice(("entailment", "contradiction", "neutral")),
    },
    "parus": lambda t, rng, i: {
        "idx": i,
        "premise": t.passage(1),
        "choice1": t.sentence(),
        "choice2": t.sentence(),
        "question": rng.choice(("cause", "effect")),
        "label": rng.randint(0, 1),
    },
    "muserc": muserc,
    "terra": lambda t, rng, i: {
        "idx": i,
        "premise": t.passage(2),
        "hypothesis": t.sentence(),
        "label": rng.choice(("entailment", "not_entailment")),
    },
    "russe": russe,
    "rwsd": rwsd,
    "danetqa": lambda t, rng, i: {
        "idx": i,
        "question": t.sentence().rstrip(".!").lower() + "?",
        "passage": t.passage(rng.randint(4, 7)),
        "label": rng.random() < 0.6,
    },
    "rucos": rucos,
    "winograd": winograd,
    "ru_openbook": lambda t, rng, i: dict(zip(("question", "answer"), options_question(t, rng))) | {"ID": f"{i}"},
    "ru_worldtree": lambda t, rng, i: (
        dict(zip(("question", "answer"), options_question(t, rng)))
        | {
            "exam_name": rng.choice(("MCAS", "TIMSS", "NYSEDREGENTS")),
            "school_grade": rng.randint(3, 9),
            "knowledge_type": "PROP",
        }
    ),
    "multiq": multiq,
    "chegeka": lambda t, rng, i: {
        "question_id": i,
        "question": t.passage(1),
        "answer": t.phrase(3),
        "topic": t.phrase(2),
        "author": "Автор",
        "tour_name": "Турнир",
        "tour_link": "https://example.org",
    },
    "sit_ethics": lambda t, rng, i: ethics(t, rng, "sit"),
    "per_ethics": lambda t, rng, i: ethics(t, rng, "per"),
}


def unlabelled(record: dict[str, Any]) -> dict[str, Any]:
    """An RSG test record: no label, no MuSeRC answer labels, no RuCoS answers."""
    record = {k: v for k, v in record.items() if k != "label"}
    if "questions" in record.get("passage", {}):
        for question in record["passage"]["questions"]:
            question["answers"] = [{k: v for k, v in a.items() if k != "label"} for a in question["answers"]]
    for query in record.get("qas", []):
        query.pop("answers", None)
    return record


def generate(out: Path, scale: float, texts_file: Path | None, seed: int = 0) -> dict[str, Any]:
    """Every task's splits under OUT in the official layouts; returns the sizes written."""
    pool = sentence_pool(texts_file)
    written: dict[str, Any] = {}
    for task, sizes in SIZES.items():
        rng = random.Random(f"{seed}/{task}")
        texts = Texts(pool, rng)
        folder = out / RSG_FOLDERS.get(task, task)
        folder.mkdir(parents=True, exist_ok=True)
        written[task] = {}
        for split, size in zip(("train", "val", "test"), sizes, strict=True):
            n = max(1, round(size * scale)) if size else 0
            if not n:
                continue
            records = [BUILDERS[task](texts, rng, i) for i in range(n)]
            if task in RSG_FOLDERS and split == "test" and task != "lidirus":
                records = [unlabelled(r) for r in records]
            name = "LiDiRus.jsonl" if task == "lidirus" else f"{split}.jsonl"
            lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            (folder / name).write_text(lines, encoding="utf-8")
            written[task][split] = n
        print(f"generated {task}: {written[task]}", file=sys.stderr, flush=True)
    return written


def commands(data: Path, work: Path) -> dict[str, list[str]]:
    """Every command a user runs on real data, by name; run folders under WORK."""
    from rueval.solvers.heuristics import RULES

    runs = [str(work / f"run-{model}") for model in ("majority", "heuristic", "tfidf")]
    result = {
        f"run-{model}": ["run", "-t", "all", "-m", model, "--data", str(data), "-o", str(work / f"run-{model}")]
        for model in ("majority", "heuristic", "tfidf")
    }
    result["audit"] = ["audit", "-t", "all", "--data", str(data), "-o", str(work / "audit")]
    result |= {f"heuristics-{task}": ["heuristics", "-t", task, "--data", str(data)] for task in RULES}
    result["perturb"] = ["perturb", "-t", "tape", "--data", str(data), "-o", str(work / "perturbed")]
    result["submit"] = ["submit", "-m", "heuristic", "--data", str(data), "-o", str(work / "submission.zip")]
    result["report"] = ["report", *runs, "-o", str(work / "report.html")]
    result["leaderboard"] = ["leaderboard", *runs, "-o", str(work / "leaderboard")]
    return result


def measure(name: str, argv: list[str]) -> dict[str, Any]:
    """Run `rueval ARGV` in a fresh process with an empty cache: wall time and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="rueval-bench-") as cache_dir:
        env = os.environ | {"RUEVAL_CACHE_DIR": cache_dir}
        started = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-v", sys.executable, "-m", "rueval", *argv],
            check=False,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", done.stderr))
    row = {
        "command": name,
        "argv": ["rueval", *argv],
        "exit": done.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),  # user + system of the command and its worker processes
        "peak_rss_mb": round(int(peak.group(1)) / 1024) if peak else None,
    }
    if done.returncode != 0:
        row["error"] = done.stderr.strip().splitlines()[-3:]
    return row


def markdown(rows: list[dict[str, Any]], data: str) -> str:
    lines = [
        f"Data: {data}",
        "",
        "| command | wall s | CPU s | peak RSS MB | within target |",
        "|---|---:|---:|---:|---|",
    ]
    for row in rows:
        limit_s = TARGET_S.get(row["command"])
        within = row["exit"] == 0 and (row["peak_rss_mb"] or 0) <= TARGET_MB
        within = within and (limit_s is None or row["wall_s"] <= limit_s)
        status = "yes" if within else ("FAILED" if row["exit"] else "no")
        shown = [part for part in row["argv"] if not part.startswith("/")]
        command = " ".join(shown[: shown.index("--data")] if "--data" in shown else [*shown[:2], "RUNS"])
        lines.append(f"| `{command}` | {row['wall_s']:.1f} | {row['cpu_s']:.1f} | {row['peak_rss_mb']} | {status} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a real data directory: measure on it instead of generating")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the official sizes to generate")
    parser.add_argument("--texts", type=Path, help="a text file to draw sentences from (default: the samples)")
    parser.add_argument("--only", help="comma-separated command names (run-tfidf, audit, heuristics-rucos, ...)")
    parser.add_argument("--keep", type=Path, help="write the data and outputs here and keep them")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rueval-fullsize-") as scratch:
        work = args.keep or Path(scratch)
        data, sizes = args.data, None
        if data is None:
            data = work / "data"
            started = time.perf_counter()
            sizes = generate(data, args.scale, args.texts)
            print(f"generated in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        chosen = commands(data, work)
        if args.only:
            wanted = args.only.split(",")
            unknown = [name for name in wanted if name not in chosen]
            if unknown:
                raise SystemExit(f"unknown command {', '.join(unknown)}; expected some of: {', '.join(chosen)}")
            chosen = {name: chosen[name] for name in wanted}
        rows = []
        for name, argv in chosen.items():
            rows.append(measure(name, argv))
            print(json.dumps(rows[-1], ensure_ascii=False), file=sys.stderr, flush=True)
    described = str(args.data) if args.data else f"generated, scale {args.scale}, texts {args.texts or 'samples'}"
    write_results(args.out, rows, data=described, sizes=sizes)
    table = markdown(rows, described)
    args.out.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
    print(table)
    print(f"written {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
