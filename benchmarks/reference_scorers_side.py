"""The reference scorers' values on randomized subsets with edge cases, computed by the reference
code itself, for the tests of rueval's metrics (tests/tasks/test_reference_scorers.py holds the
values as data). Not part of rueval, nor imported by it; run in the references' own virtualenvs.

    JIANT_VENV/bin/python benchmarks/reference_scorers_side.py rcb RSG_CHECKOUT OUT.json
    MERA_VENV/bin/python benchmarks/reference_scorers_side.py chegeka MERA_SCORING OUT.json

rcb: RCB's F1 and accuracy as jiant computes them, on subsets where classes are often absent:
- jiant 2.2.0 (nyu-mll/jiant, the wheel on the package index, ``pip install --no-deps``):
  ``CommitmentBankEvaluationScheme.compute_metrics_from_preds_and_labels``. Its module imports all
  of jiant, whose pins (transformers 4.5, tokenizers 0.10) do not install here; the modules it
  imports and this function does not use are stand-ins, the function runs as published.
- RSG's jiant fork (RussianNLP/RussianSuperGLUE, jiant-russian-v2/jiant/tasks/tasks.py, with
  allennlp 0.8.4 ``pip install --no-deps``): ``RCBTask.get_metrics`` over allennlp's
  ``CategoricalAccuracy`` and three ``F1Measure``s, fed as jiant's ``update_metrics`` feeds them.
  allennlp's package __init__ files import spaCy 2, which does not install: the metric modules are
  loaded without them, with stand-ins for the registry their classes register in and for the
  ``overrides`` decorator (a signature check; no version of it that allennlp 0.8 knows runs on 3.11).
chegeka: CheGeKa's F1 and EM as MERA's scorer computes them (MERA-Evaluation/MERA,
modules/scoring/src/tasks/chegeka.py, with its pins transformers 4.30.2 and omegaconf 2.0.6;
scikit-learn 1.0.2 does not build for 3.11 and CheGeKa does not use it, so the current one; the
``datasets`` package, used only to download the gold answers, is a stand-in), on golds with empty
alternatives ("Пингвин;", ";", "a;;b").
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import json
import random
import sys
import types
from pathlib import Path

RCB_LABELS = ("neutral", "entailment", "contradiction")  # jiant-russian-v2's targ_map order


def stand_in(name: str, path: Path | None = None, **attributes) -> types.ModuleType:
    """A module in place of ``name``, bound to its parent package too (``import a.b as c`` reads it
    there); with ``path``, a package whose submodules load from ``path`` without its __init__."""
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    if path is not None:
        module.__path__ = [str(path)]
    module.__dict__.update(attributes)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        try:
            importlib.import_module(parent)
        except ImportError:
            stand_in(parent)
        setattr(sys.modules[parent], child, module)
    return module


def rcb_cases(seed: int = 2024, n: int = 40) -> list[dict]:
    """Subsets of 1-12 examples over a random subset of the classes, so that a class is often absent
    from the golds, the predictions or both."""
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        present = rng.sample(range(3), rng.randint(1, 3))
        size = rng.randint(1, 12)
        golds = [rng.choice(present) for _ in range(size)]
        preds = [rng.choice(present if rng.random() < 0.7 else range(3)) for _ in range(size)]
        cases.append({"golds": golds, "preds": preds})
    return cases


def jiant_cb(cases: list[dict]) -> list[dict]:
    import importlib.metadata

    import numpy as np

    for name in (
        "jiant.shared.model_resolution",
        "jiant.tasks.lib.bucc2018",
        "jiant.tasks.lib.mlqa",
        "jiant.tasks.lib.tatoeba",
        "jiant.tasks.lib.templates.squad_style.core",
        "jiant.tasks.lib.templates.squad_style.utils",
        "jiant.tasks.retrieval",
        "jiant.tasks.lib.templates.mlm",
        "seqeval",
        "seqeval.metrics",
    ):
        stand_in(name)
    from jiant.tasks.evaluate.core import CommitmentBankEvaluationScheme

    version = importlib.metadata.version("jiant")
    values = []
    for case in cases:
        metrics = CommitmentBankEvaluationScheme.compute_metrics_from_preds_and_labels(
            np.array(case["preds"]), np.array(case["golds"])
        )
        values.append({"f1": metrics.minor["avg_f1"], "accuracy": metrics.minor["acc"]})
    return [{"reference": f"jiant {version}", "values": values}]


def rsg_rcb(cases: list[dict], rsg: Path) -> list[dict]:
    import importlib.metadata
    import importlib.util

    import torch

    root = Path(importlib.util.find_spec("allennlp").submodule_search_locations[0])

    class Registrable:  # the registry's stand-in: metric classes register under a name
        @classmethod
        def register(cls, name):
            return lambda subclass: subclass

    stand_in("overrides", overrides=lambda method: method)  # a signature check; none installs for 3.11
    stand_in("allennlp", root)
    stand_in("allennlp.common", root / "common")
    stand_in("allennlp.common.registrable", Registrable=Registrable)
    stand_in("allennlp.training", root / "training")
    stand_in("allennlp.training.metrics", root / "training" / "metrics")
    from allennlp.training.metrics.categorical_accuracy import CategoricalAccuracy
    from allennlp.training.metrics.f1_measure import F1Measure

    get_metrics = _method_source(rsg / "jiant-russian-v2" / "jiant" / "tasks" / "tasks.py", "RCBTask", "get_metrics")
    values = []
    for case in cases:
        task = types.SimpleNamespace(scorer1=CategoricalAccuracy())
        task.scorer2, task.scorer3, task.scorer4 = F1Measure(0), F1Measure(1), F1Measure(2)
        logits = torch.nn.functional.one_hot(torch.tensor(case["preds"]), 3).float()
        labels = torch.tensor(case["golds"])
        for scorer in (task.scorer1, task.scorer2, task.scorer3, task.scorer4):  # as update_metrics does
            scorer(logits, labels)
        metrics = get_metrics(task, reset=True)
        values.append({"f1": float(metrics["f1"]), "accuracy": float(metrics["accuracy"])})
    return [
        {
            "reference": "RussianSuperGLUE jiant-russian-v2 RCBTask, allennlp "
            + importlib.metadata.version("allennlp"),
            "values": values,
        }
    ]


def _method_source(path: Path, cls: str, method: str):
    """A method of a class in a module that cannot be imported, compiled from its own source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    function = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == method)
    namespace: dict = {}
    exec(compile(ast.Module([function], []), str(path), "exec"), namespace)
    return namespace[method]


CHEGEKA_GOLDS = ["Пингвин;", ";Пингвин", ";", "Пётр I;;Пётр Первый", "Ответ", "  ;  ", "«Война и мир»;", "..."]
CHEGEKA_PREDICTIONS = ["", "Пингвин", "пингвин!", "Пётр Первый", "петр", "—", "Война и мир", " ", "..."]


def chegeka_cases(seed: int = 2024, n: int = 40) -> list[dict]:
    """Random subsets of golds with empty alternatives paired with predictions, empty ones included."""
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        size = rng.randint(1, 6)
        cases.append({"golds": rng.choices(CHEGEKA_GOLDS, k=size), "preds": rng.choices(CHEGEKA_PREDICTIONS, k=size)})
    return cases


def mera_chegeka(cases: list[dict], scoring: Path) -> list[dict]:
    import importlib.metadata

    sys.path.insert(0, str(scoring))
    stand_in("datasets")  # used only to download the gold answers
    stand_in("src.tasks", scoring / "src" / "tasks")  # its __init__ imports every task's module
    from src.tasks.chegeka import CheGeKa

    scorer = CheGeKa.__new__(CheGeKa)  # process_results reads no configuration
    values = []
    for case in cases:
        rows = [
            scorer.process_results({"outputs": gold}, {"outputs": pred})
            for gold, pred in zip(case["golds"], case["preds"], strict=True)
        ]
        aggregate = scorer.aggregation()
        values.append({name: float(aggregate[name]([row[name] for row in rows])) for name in ("f1", "em")})
    version = importlib.metadata.version("transformers")
    return [{"reference": f"MERA-Evaluation/MERA modules/scoring CheGeKa, transformers {version}", "values": values}]


def main() -> None:
    which, checkout, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if which == "rcb":
        cases = rcb_cases()
        results = jiant_cb(cases) + rsg_rcb(cases, checkout)
    else:
        cases = chegeka_cases()
        results = mera_chegeka(cases, checkout)
    out.write_text(json.dumps({"cases": cases, "references": results}, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
