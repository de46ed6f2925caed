"""RuTransform's model-free transformations on the rate benchmark's inputs, run in RuTransform's own
virtualenv by benchmarks/rutransform_rates.py (not part of rueval, nor imported by it).

    RUTRANSFORM_VENV/bin/python benchmarks/rutransform_side.py CHECKOUT INPUTS OUT --rate NAME=P ...
        [--seed S ...] [--seed-per-sentence FIRST]

Imports RuTransform's transformation modules from its checkout as they are, and only those: the
package's __init__ files would import every transformation, and the model-based ones need
dependencies its old pins keep from installing (textattack, tensorflow_text, nlg-eval).
RuTransform loads spaCy's ru_core_news_sm, which is published outside the package index; in its
place a blank Russian spaCy pipeline (the same rule-based tokenizer) whose lemmatizer is spaCy's
pymorphy3 one, fed with pymorphy3's part of speech. EDA reads NLTK's Russian stopwords: set
NLTK_DATA to a folder holding corpora/stopwords.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

import pymorphy3
import spacy
from spacy.language import Language

# pymorphy3's part of speech -> the universal one spaCy's Russian lemmatizer reads
_UNIVERSAL = {
    "NOUN": "NOUN",
    "ADJF": "ADJ",
    "ADJS": "ADJ",
    "COMP": "ADJ",
    "VERB": "VERB",
    "INFN": "VERB",
    "PRTF": "VERB",
    "PRTS": "VERB",
    "GRND": "VERB",
    "NUMR": "NUM",
    "NPRO": "PRON",
    "ADVB": "ADV",
    "PREP": "ADP",
    "CONJ": "CCONJ",
    "PRCL": "PART",
    "INTJ": "INTJ",
}
_MORPH = pymorphy3.MorphAnalyzer()


@Language.component("pymorphy3_pos")
def _pos(doc):
    for token in doc:
        if token.is_punct:
            token.pos_ = "PUNCT"
        elif token.like_num:
            token.pos_ = "NUM"
        else:
            token.pos_ = _UNIVERSAL.get(_MORPH.parse(token.text)[0].tag.POS, "X")
    return doc


def spacy_model():
    nlp = spacy.blank("ru")
    nlp.add_pipe("pymorphy3_pos")
    nlp.add_pipe("lemmatizer", config={"mode": "pymorphy3"})
    nlp.initialize()
    return nlp


def load_modules(checkout: Path) -> dict[str, types.ModuleType]:
    """RuTransform's transformation modules, imported from the checkout without the package __init__s."""
    sys.path.insert(0, str(checkout))
    for package in (
        "rutransform",
        "rutransform.transformations",
        "rutransform.transformations.transformations",
        "rutransform.transformations.transformations.spelling",
        "rutransform.transformations.transformations.eda",
    ):
        module = types.ModuleType(package)
        module.__path__ = [str(checkout / package.replace(".", "/"))]
        sys.modules[package] = module
    from rutransform.transformations.transformations.eda import eda
    from rutransform.transformations.transformations.spelling import butter_fingers, change_char_case, emojify

    return {"butter_fingers": butter_fingers, "change_char_case": change_char_case, "emojify": emojify, "eda": eda}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("inputs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--rate", action="append", default=[], help="NAME=P, one per transformation")
    parser.add_argument("--outputs", type=int, default=3, help="RuTransform's max_outputs (3 in its pipeline)")
    parser.add_argument("--seed", type=int, action="append", help="a seed for every sentence (42 in its pipeline)")
    parser.add_argument("--seed-per-sentence", type=int, help="then a run with seed FIRST + the sentence's index")
    args = parser.parse_args()
    rates = {name: float(p) for name, p in (item.split("=") for item in args.rate)}
    args.seed = args.seed or [42]
    modules, nlp = load_modules(args.checkout), spacy_model()
    spelling = args.checkout / "rutransform/transformations/transformations/spelling"
    emoji_dict = json.loads((spelling / "emoji_dict_ru.json").read_text(encoding="utf-8"))
    n, records = args.outputs, []
    bf, case, emo = modules["butter_fingers"], modules["change_char_case"], modules["emojify"]
    for i, sentence in enumerate(args.inputs.read_text(encoding="utf-8").splitlines()):
        doc = nlp(sentence)
        record = {"text": sentence, "tokens": [t.text for t in doc], "lemmas": [t.lemma_.lower() for t in doc]}
        for name in ("butter_fingers", "change_char_case", "emojify", "eda"):
            record[name] = []
        own = [] if args.seed_per_sentence is None else [args.seed_per_sentence + i]
        for seed in [*args.seed, *own]:  # each call re-seeds Python's generator with it, as RuTransform's functions do
            record["butter_fingers"].append(
                bf.butter_finger(sentence, nlp, prob=rates["butter_fingers"], seed=seed, max_outputs=n)
            )
            record["change_char_case"].append(
                case.change_char_case(sentence, nlp, prob=rates["change_char_case"], seed=seed, max_outputs=n)
            )
            record["emojify"].append(
                emo.emojify(sentence, emoji_dict, nlp, prob=rates["emojify"], seed=seed, max_outputs=n)
            )
            record["eda"].append(
                modules["eda"].eda(
                    sentence, nlp, alpha_rs=rates["eda_swap"], p_rd=rates["eda_delete"], num_aug=n, seed=seed
                )
            )
        records.append(record)
    args.out.write_text(json.dumps(records, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(records)} sentences")


if __name__ == "__main__":
    main()
