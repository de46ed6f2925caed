"""TAPE's model-free perturbations as rueval makes them, beside RuTransform's own code on the same
1,000 sentences: the rate table of the docs (benchmarks/results/rutransform_rates.md).

    python benchmarks/rutransform_rates.py --checkout RUTRANSFORM_DIR --venv RUTRANSFORM_VENV [--nltk-data DIR]
    python benchmarks/rutransform_rates.py --inputs-only

Not part of the test suite. The inputs (benchmarks/results/rutransform_inputs.txt, written here
when missing or with --inputs-only) are 900 distinct sentences of rueval's bundled samples, drawn
with a seeded generator, and 100 made from templates with numbers and common nouns in agreement
(pymorphy3), which Emojify rewrites. RuTransform's side runs in its own virtualenv
(benchmarks/rutransform_side.py; NLTK_DATA must hold corpora/stopwords for its EDA).

Each transformation draws 3 outputs per sentence on both sides (RuTransform's max_outputs in its
pipeline; rueval: 3 candidate generators), at rueval's default rates, without the semantic
filter (RuTransform's needs BERTScore's model), and the rates are measured the same way on both
(see RATES; Emojify's per word its own dictionary maps, and per word of the text). RuTransform's
are measured with a seed per sentence (see PIPELINE_SEED) and shown at its seed 42 beside them.
Writes benchmarks/results/rutransform_rates.json and .md, with Emojify's coverage of TAPE's
dictionary (the Russian words it maps that rueval's maps too, by their lemma).
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
from collections.abc import Callable
from difflib import SequenceMatcher
from pathlib import Path

from results_file import write_results

from rueval.core.text import lemma, morph, sentences
from rueval.data import open_data
from rueval.robustness.perturbations import PERTURBATIONS, emoji_dictionary
from rueval.tasks import TASKS, Example, get_task

RESULTS = Path(__file__).parent / "results"
INPUTS = RESULTS / "rutransform_inputs.txt"
SIDE = Path(__file__).with_name("rutransform_side.py")
MODEL_FREE = ("butter_fingers", "change_char_case", "emojify", "eda_delete", "eda_swap")
OUTPUTS = 3
# RuTransform re-seeds Python's generator with its seed (42) at every sentence, so that every
# sentence sees the same random numbers and its rates are those of one short stream (at seed 42,
# EDA deletes 5 of the first 10 tokens of every sentence, at p = 0.3). Its rates are measured with a
# seed of its own for each sentence (1000 + the sentence's index), and shown at seed 42 beside them.
PIPELINE_SEED, FIRST_OWN_SEED = 42, 1000
TAPE_DICTIONARY = "rutransform/transformations/transformations/spelling/emoji_dict_ru.json"


# --- the inputs ---------------------------------------------------------------------------------


def sample_sentences(count: int, seed: int) -> list[str]:
    """Distinct sentences of 5-40 words from rueval's bundled samples (on one line), drawn with a seeded generator."""
    source, found = open_data(None), set()
    for task in TASKS.values():
        for split in ("train", "val", "test"):
            try:
                examples = source.load(task, split).examples
            except Exception:  # noqa: BLE001 - a task without this split among the samples
                continue
            texts = [v for e in examples for v in e.fields.values() if isinstance(v, str)]
            found |= {" ".join(s.split()) for text in texts for s in sentences(text) if 5 <= len(s.split()) <= 40}
    return random.Random(seed).sample(sorted(found), count)


_NAMES = {"Анна": "а", "Мария": "а", "Ольга": "а", "Елена": "а", "Иван": "", "Пётр": "", "Сергей": "", "Олег": ""}
_VERBS = ("купил", "увидел", "нарисовал", "нашёл", "подарил")
_NOUNS = ("яблоко", "кошка", "собака", "книга", "машина", "цветок", "мяч", "торт", "звезда", "дом", "рыба", "гитара")
_PLACES = ("в магазине", "на рынке", "в парке", "возле дома", "у моря", "в городе")


def made_sentences(count: int, seed: int) -> list[str]:
    """Sentences with a year, a count and a noun agreeing with it: "В 2017 году Анна купила 3 яблока в парке."."""
    rng, made = random.Random(seed), set()
    while len(made) < count:
        name, ending = rng.choice(sorted(_NAMES.items()))
        verb = rng.choice(_VERBS)
        verb = verb[:-2] + "ла" if verb.endswith("ёл") and ending else verb + ending  # нашёл, нашла
        number = rng.choice([2, 3, 4, 5, 7, 11, 12, 21, 25, 40])
        noun = morph().parse(rng.choice(_NOUNS))[0].inflect({"accs"}).make_agree_with_number(number).word
        made.add(f"В {rng.randint(1990, 2024)} году {name} {verb} {number} {noun} {rng.choice(_PLACES)}.")
    return sorted(made)


def write_inputs() -> list[str]:
    lines = sample_sentences(900, seed=0) + made_sentences(100, seed=0)
    INPUTS.parent.mkdir(parents=True, exist_ok=True)
    INPUTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written {INPUTS}: {len(lines)} sentences")
    return lines


# --- the outputs --------------------------------------------------------------------------------


def rueval_outputs(lines: list[str], rates: dict[str, float]) -> dict[str, list[list[str]]]:
    """Each model-free perturbation's 3 outputs per sentence (the sentence itself where nothing changed)."""
    task, outputs = get_task("sit_ethics"), {}
    for name in MODEL_FREE:
        perturbation = PERTURBATIONS[name](rates[name], seed=0)
        outputs[name] = []
        for i, line in enumerate(lines):
            example = Example(idx=i, fields={"text": line})
            drawn = []
            for candidate in range(OUTPUTS):
                rng = random.Random(f"{name}/{i}/{candidate}")
                out = perturbation.perturb(example, task, rng, {"text": []})
                drawn.append(line if out is None else out.fields["text"])
            outputs[name].append(drawn)
    return outputs


def rutransform_outputs(args: argparse.Namespace, rates: dict[str, float]) -> list[dict]:
    """RuTransform's outputs per sentence (benchmarks/rutransform_side.py in its virtualenv), kept
    in --their-outputs when given (and read from there when it exists)."""
    if args.their_outputs and args.their_outputs.exists():
        return json.loads(args.their_outputs.read_text(encoding="utf-8"))
    env = dict(os.environ) | ({"NLTK_DATA": str(args.nltk_data)} if args.nltk_data else {})
    with tempfile.TemporaryDirectory() as tmp:
        out = args.their_outputs or Path(tmp) / "rutransform.json"
        command = [str(args.venv / "bin" / "python"), "-W", "ignore", str(SIDE), str(args.checkout), str(INPUTS)]
        command += [str(out), *(f"--rate={name}={rate}" for name, rate in rates.items())]
        command += [f"--seed={PIPELINE_SEED}", f"--seed-per-sentence={FIRST_OWN_SEED}"]
        subprocess.run(command, check=True, env=env)
        return json.loads(out.read_text(encoding="utf-8"))


# --- the rates ----------------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"[^\W\d_]+")


def letters_changed(original: str, output: str) -> tuple[int, int]:
    """(letters changed, letters): position by position where the output keeps the length
    (RuTransform's ButterFingers may type a "." for a letter), else letter by letter (its
    ChangeCharCase drops other characters now and then, never a letter)."""
    if len(original) == len(output):
        changed = sum(a.isalpha() and a != b for a, b in zip(original, output, strict=True))
        return changed, sum(map(str.isalpha, original))
    before, after = [c for c in original if c.isalpha()], [c for c in output if c.isalpha()]
    if len(before) != len(after):
        raise ValueError(f"letters added or removed: {original!r} -> {output!r}")
    return sum(a != b for a, b in zip(before, after, strict=True)), len(before)


def words_replaced(original: str, output: str) -> tuple[int, int]:
    """(words gone from the output, words): Emojify's replaced words, aligned by difflib."""
    before, after = _WORD.findall(original), _WORD.findall(output)
    matched = sum(block.size for block in SequenceMatcher(None, before, after, autojunk=False).get_matching_blocks())
    return len(before) - matched, len(before)


def tokens_deleted(original: str, output: str) -> tuple[int, int]:
    before, after = _TOKEN.findall(original), _TOKEN.findall(output)
    return len(before) - len(after), len(before)


def swapped(original: str, output: str) -> tuple[int, int]:
    """(1 if the tokens were reordered, 1)."""
    before, after = _TOKEN.findall(original), _TOKEN.findall(output)
    return int(before != after and sorted(before) == sorted(after)), 1


RATES: dict[str, tuple[str, Callable[[str, str], tuple[int, int]]]] = {
    "butter_fingers": ("letters changed", letters_changed),
    "change_char_case": ("letters changed", letters_changed),
    "emojify": ("words replaced", words_replaced),
    "eda_delete": ("tokens deleted", tokens_deleted),
    "eda_swap": ("sentences with a swap", swapped),
}


def eda_split(original: str, candidates: list[str]) -> dict[str, str]:
    """RuTransform's EDA returns its swap and its deletion candidates shuffled, an unchanged one
    dropped: tell them apart (a swap keeps the tokens, a deletion has fewer)."""
    tokens = sorted(_TOKEN.findall(original))
    split = {"eda_swap": original, "eda_delete": original}
    for candidate in candidates:
        split["eda_swap" if sorted(_TOKEN.findall(candidate)) == tokens else "eda_delete"] = candidate
    return split


def rate(pairs: list[tuple[str, str]], measure: Callable[[str, str], tuple[int, int]]) -> float:
    counts = [measure(original, output) for original, output in pairs]
    return sum(c for c, _ in counts) / max(1, sum(total for _, total in counts))


# --- Emojify's dictionary -----------------------------------------------------------------------


def emoji_coverage(checkout: Path) -> dict:
    """How many of the Russian words TAPE's dictionary maps (its keys of Cyrillic letters and
    hyphens) rueval's maps too, by their lemma (as Emojify looks words up), and, of those it lacks,
    how many pymorphy3 does not know (misspellings, transliterations), with a few of each cited."""
    tape = json.loads((checkout / TAPE_DICTIONARY).read_text(encoding="utf-8"))
    words = sorted(key for key in tape if re.fullmatch(r"[а-яё-]+", key))
    ours = emoji_dictionary()
    missing = [word for word in words if lemma(word) not in ours]
    unknown = [word for word in missing if not morph().word_is_known(word)]
    known = [word for word in missing if word not in unknown]
    return {
        "tape_words": len(words),
        "covered": len(words) - len(missing),
        "missing_known": len(known),
        "missing_unknown": len(unknown),
        "examples_known": known[:: max(1, len(known) // 12)][:12],
        "examples_unknown": unknown[:: max(1, len(unknown) // 12)][:12],
    }


# --- the table ----------------------------------------------------------------------------------


def their_pairs(name: str, theirs: list[dict], run: int) -> list[tuple[str, str]]:
    """(original, output) pairs of RuTransform's transformation ``name`` in one run (0: seed 42, 1:
    a seed per sentence)."""
    if name.startswith("eda"):
        return [(r["text"], eda_split(r["text"], r["eda"][run])[name]) for r in theirs]
    if name == "emojify":  # keeps the spaces
        return [(r["text"], out) for r in theirs for out in r[name][run]]
    # the others join the tokens with spaces
    return [(" ".join(r["tokens"]), out) for r in theirs for out in r[name][run]]


def measure(lines: list[str], theirs: list[dict], ours: dict[str, list[list[str]]]) -> list[dict]:
    rows = []
    for name in MODEL_FREE:
        label, measure_one = RATES[name]
        our_pairs = [(line, out) for line, outs in zip(lines, ours[name], strict=True) for out in outs]
        theirs_rate, ours_rate = rate(their_pairs(name, theirs, 1), measure_one), rate(our_pairs, measure_one)
        rows.append(
            {
                "perturbation": name,
                "measure": label,
                "rutransform": round(theirs_rate, 4),
                "rutransform_seed_42": round(rate(their_pairs(name, theirs, 0), measure_one), 4),
                "rueval": round(ours_rate, 4),
            }
        )
    return rows


def emojify_per_dictionary_word(lines: list[str], theirs: list[dict], ours: list[list[str]], tape: dict) -> dict:
    """Emojify's rate on the words its dictionary maps (the words it may replace; each side with its
    own dictionary and lemmatiser), and the share of the inputs' words each dictionary maps."""
    ours_dictionary = emoji_dictionary()
    theirs_in = sum(found in tape for r in theirs for t, found in zip(r["tokens"], r["lemmas"]) if t.isalpha())
    ours_in = sum(lemma(w) in ours_dictionary for line in lines for w in _WORD.findall(line))
    words = sum(len(_WORD.findall(line)) for line in lines)
    replaced_theirs = sum(words_replaced(r["text"], out)[0] for r in theirs for out in r["emojify"][1])
    replaced_ours = sum(words_replaced(line, out)[0] for line, outs in zip(lines, ours, strict=True) for out in outs)
    return {
        "rutransform": round(replaced_theirs / (OUTPUTS * theirs_in), 4),
        "rutransform_seed_42": round(
            sum(words_replaced(r["text"], out)[0] for r in theirs for out in r["emojify"][0]) / (OUTPUTS * theirs_in), 4
        ),
        "rueval": round(replaced_ours / (OUTPUTS * ours_in), 4),
        "words_in_tape_dictionary": round(theirs_in / words, 4),
        "words_in_rueval_dictionary": round(ours_in / words, 4),
    }


def markdown(rows: list[dict], rates: dict[str, float], coverage: dict) -> str:
    lines = [
        "# TAPE's perturbations: RuTransform's rates and rueval's on the same 1,000 sentences",
        "",
        "Made by `benchmarks/rutransform_rates.py` (inputs: `rutransform_inputs.txt`): RuTransform's own "
        "model-free transformations run in its virtualenv, 3 outputs per sentence on both sides, no semantic "
        "filter. RuTransform re-seeds with one seed (42) at every sentence, so that all sentences see the same "
        "random numbers; its rate is measured with a seed per sentence, and shown at seed 42 in brackets.",
        "",
        "| perturbation | p | measured as | RuTransform | (at seed 42 throughout) | rueval | difference |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        difference = row["rueval"] / row["rutransform"] - 1
        lines.append(
            f"| {row['perturbation']} | {rates[row['perturbation']]:g} | {row['measure']} | {row['rutransform']:.1%} "
            f"| ({row['rutransform_seed_42']:.1%}) | {row['rueval']:.1%} | {difference:+.1%} |"
        )
    share = coverage["covered"] / coverage["tape_words"]
    lines += [
        "",
        f"Emojify's dictionary maps {coverage['covered']:,} of the {coverage['tape_words']:,} Russian words "
        f"TAPE's dictionary maps ({share:.1%}); of the inputs' words, TAPE's maps "
        f"{coverage['words_in_tape_dictionary']:.1%} and rueval's {coverage['words_in_rueval_dictionary']:.1%}.",
    ]
    lines += [
        "",
        f"What CLDR lacks: of the {coverage['missing_known'] + coverage['missing_unknown']} words missing, "
        f"{coverage['missing_known']} are Russian words that CLDR's Russian names and keywords do not use (TAPE's "
        f"dictionary reads as translated from English emoji keywords), e.g. {', '.join(coverage['examples_known'])}; "
        f"{coverage['missing_unknown']} are words pymorphy3 does not know, misspellings and transliterations in "
        f"TAPE's list, e.g. {', '.join(coverage['examples_unknown'])}.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, help="a RuTransform checkout (RussianNLP/rutransform)")
    parser.add_argument("--venv", type=Path, help="the virtualenv RuTransform's modules run in")
    parser.add_argument("--nltk-data", type=Path, help="NLTK_DATA for RuTransform's EDA (corpora/stopwords)")
    parser.add_argument("--their-outputs", type=Path, help="keep RuTransform's outputs here (reused if present)")
    parser.add_argument("--inputs-only", action="store_true", help="(re)write the 1,000 inputs and stop")
    args = parser.parse_args()
    if args.inputs_only or not INPUTS.exists():
        write_inputs()
        if args.inputs_only:
            return
    if args.checkout is None or args.venv is None:
        sys.exit("give --checkout and --venv (or --inputs-only)")
    lines = INPUTS.read_text(encoding="utf-8").splitlines()
    rates = {name: PERTURBATIONS[name].default_rate for name in MODEL_FREE}
    theirs, ours = rutransform_outputs(args, rates), rueval_outputs(lines, rates)
    rows, coverage = measure(lines, theirs, ours), emoji_coverage(args.checkout)
    tape = json.loads((args.checkout / TAPE_DICTIONARY).read_text(encoding="utf-8"))
    per_word = emojify_per_dictionary_word(lines, theirs, ours["emojify"], tape)
    coverage |= {key: per_word.pop(key) for key in ("words_in_tape_dictionary", "words_in_rueval_dictionary")}
    at = next(i for i, row in enumerate(rows) if row["perturbation"] == "emojify")
    rows.insert(at, {"perturbation": "emojify", "measure": "dictionary words replaced", **per_word})
    write_results(
        RESULTS / "rutransform_rates.json",
        rows,
        rates=rates,
        outputs=OUTPUTS,
        seeds=[PIPELINE_SEED, f"{FIRST_OWN_SEED} + index"],
        emojify=coverage,
    )
    table = markdown(rows, rates, coverage)
    (RESULTS / "rutransform_rates.md").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
