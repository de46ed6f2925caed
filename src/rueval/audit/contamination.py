"""The contamination audit of a language model on a task's items (`rueval contamination`): each item's
membership scores (audit/membership_scores.py), computed from its text's token log-probabilities, beside
those of reference items the model cannot have seen, and the verdict (audit/contamination_verdict.py).

An item's text is what a dataset dump holds of it (a training corpus holds that): its record's string
fields joined in order, nested ones included; or, with ``text="prompt"``, the zero-shot prompt the task
builds from it. The reference items are the items' perturbed twins (REFERENCE_PERTURBATION, rueval's own
perturbation, seeded per item), or the items of a split the user names as unseen. lm-eval task files' items
are their evaluation documents (audit/item_texts.py), each against its perturbed twin, the corpus searched by
the task's decontamination queries.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rueval import __version__
from rueval.audit import membership_scores as ms
from rueval.audit.contamination_verdict import membership, primary_test, score_tests
from rueval.audit.guessing import GUESSED_SHAPES, ts_guessing
from rueval.audit.item_texts import decontamination_query, document_text, fields_text, split_of, task_file_tasks
from rueval.audit.ngram_overlap import CorpusOverlap, corpus_overlap
from rueval.audit.unflagged import finite_or_none, flagged, rescored
from rueval.core.errors import RuevalError
from rueval.core.progress import warn
from rueval.data import DataSource, Split, eval_split, open_data
from rueval.models.base import TokenLogprobs, TokenLogprobsResult
from rueval.models.engine import Engine
from rueval.results import RunResult
from rueval.results.contamination import (
    NO_EVIDENCE,
    ContaminationResult,
    ItemScores,
    TaskContamination,
    write_item_scores,
)
from rueval.robustness import PERTURBATIONS
from rueval.tasks import Example, Task

TEXT_CHOICES = ("fields", "prompt")
# the twin keeps every word of the item and swaps a pair of them: what the model has not seen is the exact wording
REFERENCE_PERTURBATION = "eda_swap"
TWIN_OF_TWIN_SEED = 1  # a reference item's own twin (its perturbation score) is drawn with this seed offset
# the options that apply to rueval's own tasks only, by their AuditSettings field
_OWN_TASKS_ONLY = {"--split": "split", "--reference-split": "reference_split", "--run": "run", "--guessing": "guessing"}


@dataclass(frozen=True)
class Item:
    idx: str  # the example's key, as predictions and --members name it
    text: str
    twin: str | None  # its perturbed twin's text; None where the perturbation changed nothing
    keys: tuple[str, ...] = ()  # every example of this text (idx the first): a run's rows name them


def item_text(task: Task, example: Example, text: str) -> str:
    """An example's text as ``text`` (TEXT_CHOICES) asks: its string fields joined by newlines, or its prompt."""
    if text == "fields":
        return fields_text(example.fields)
    from rueval.tasks.prompts import PROMPTS

    return PROMPTS[task.name].questions(example)[0].context


def twins_of(task: Task, examples: Sequence[Example], seed: int) -> list[Example | None]:
    """Each example's perturbed twin (REFERENCE_PERTURBATION), or None where it changed nothing."""
    return PERTURBATIONS[REFERENCE_PERTURBATION](seed=seed).perturb_batch(task, examples)


def items_of(task: Task, examples: Sequence[Example], twins: Sequence[Example | None], text: str) -> list[Item]:
    """The items with their texts and their ``twins``' texts (twins_of)."""
    if text not in TEXT_CHOICES:
        raise RuevalError(f"--text {text}: expected one of {', '.join(TEXT_CHOICES)}")
    return distinct(
        (example.key, item_text(task, example, text), item_text(task, twin, text) if twin is not None else None)
        for example, twin in zip(examples, twins, strict=True)
    )


def distinct(entries: Iterable[tuple[str, str, str | None]]) -> list[Item]:
    """Items of (key, text, twin's text); entries of one text count once, as the first of them (MuSeRC's answers,
    where the task's text leaves the answer out of the prompt); empty texts none."""
    items: dict[str, Item] = {}
    for key, own, twin in entries:
        if own in items:
            items[own] = replace(items[own], keys=(*items[own].keys, key))
        elif own.strip():
            items[own] = Item(key, own, twin if twin != own else None, (key,))
    return list(items.values())


def reference_examples(task: Task, twins: Sequence[Example | None]) -> list[Example]:
    """The default reference: the examples' perturbed twins (twins_of; those the perturbation changed). Their
    own twins (their perturbation score) are then drawn with the seed moved by TWIN_OF_TWIN_SEED."""
    changed = [twin for twin in twins if twin is not None]
    if len(changed) < len(twins):
        warn(f"{task.name}: {len(twins) - len(changed)} of {len(twins)} items have no perturbed twin")
    return changed


def score_items(engine: Engine, items: Sequence[Item], k: float, description: str) -> list[ItemScores]:
    """Each item's scores: Min-K%++ where the backend gives the next-token distribution (else absent, and
    the summary says why), the perturbation score where the item has a twin."""
    capabilities = engine.model.capabilities
    if not capabilities.token_logprobs:
        raise RuevalError(
            f"{_shown(engine)} gives no token log-probabilities of a text, which every "
            "contamination score needs; use an hf:, vllm: or openai: model"
        )
    full = capabilities.token_distribution
    texts = list(dict.fromkeys([item.text for item in items] + [item.twin for item in items if item.twin]))
    results = dict(zip(texts, engine.token_logprobs([TokenLogprobs(t, full) for t in texts], description), strict=True))
    return [_scores(item, results[item.text], results.get(item.twin or ""), k, full) for item in items]


def _scores(item: Item, own: TokenLogprobsResult, twin: TokenLogprobsResult | None, k: float, full: bool) -> ItemScores:
    """The item's scores; one that is not a finite number (no spread for Min-K%++, a perplexity past floats) is
    left out as not applying."""
    return ItemScores(
        idx=item.idx,
        min_k=ms.min_k(own.logprobs, k),
        min_k_pp=finite_or_none(ms.min_k_pp(own.logprobs, own.means, own.deviations, k) if full else math.nan),
        zlib=finite_or_none(ms.zlib_ratio(own.logprobs, item.text)),
        ppl=finite_or_none(ms.perplexity(own.logprobs)),
        perturbation=finite_or_none(ms.perturbation(own.logprobs, twin.logprobs) if twin is not None else math.nan),
    )


def read_members(path: Path) -> set[str]:
    """--members: the ids of items known to be in the model's training data, one per line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise RuevalError(f"--members {path}: cannot be read ({e})") from None
    members = {line.strip() for line in lines if line.strip()}
    if not members:
        raise RuevalError(f"--members {path}: no ids in it (expected one item id per line)")
    return members


@dataclass(frozen=True)
class AuditSettings:
    split: str | None = None  # the items' split (default: test, answers or not; else val)
    reference_split: str | None = None  # a split known to be unseen; default: the items' perturbed twins
    text: str = "fields"
    k: float = ms.DEFAULT_K
    seed: int = 0
    members: frozenset[str] | None = None
    run: Path | None = None  # --run: a run whose scores are rescored on the unflagged items
    corpus: Path | None = None  # --corpus: a training corpus whose 13-grams the items are looked up in
    corpus_fields: tuple[str, ...] = ("text",)  # the text fields of its JSON Lines and Parquet files
    guessing: bool = False  # --guessing: TS-Guessing on the audited split's labelled items of a choice task
    include_path: tuple[str, ...] = ()  # --include-path: folders of lm-eval task files
    trust_task_code: bool = False  # --trust-task-code: the task files' Python may run

    def __post_init__(self) -> None:
        if self.text not in TEXT_CHOICES:
            raise RuevalError(f"--text {self.text}: expected one of {', '.join(TEXT_CHOICES)}")


def audit_task(
    engine: Engine, source: DataSource, task: Task, settings: AuditSettings
) -> tuple[TaskContamination, list[ItemScores]]:
    """One task's item scores and its summary (the reference items' scores are not written)."""
    chosen = eval_split(source, task, settings.split, None, predict_only=True)
    twins = twins_of(task, chosen.examples, settings.seed)
    items = items_of(task, chosen.examples, twins, settings.text)
    if settings.reference_split is None:
        reference, examples = f"perturbed twins ({REFERENCE_PERTURBATION})", reference_examples(task, twins)
        seed = settings.seed + TWIN_OF_TWIN_SEED
    elif settings.reference_split == chosen.name:
        raise RuevalError(f"--reference-split {chosen.name}: that is the split audited; name another, unseen one")
    else:
        reference, examples = f"split {settings.reference_split}", source.load(task, settings.reference_split).examples
        seed = settings.seed
    references = items_of(task, examples, twins_of(task, examples, seed), settings.text)
    overlap = (
        corpus_overlap([item.text for item in items], settings.corpus, settings.corpus_fields)
        if settings.corpus
        else None
    )
    return _audited(
        engine,
        task.name,
        Audited(chosen.name, items, reference, references, overlap),
        settings,
        guessing=lambda notes: _guessing(engine, task, chosen, settings.seed, notes) if settings.guessing else {},
        run_scores=lambda rows, reference_rows, score: _run_scores(
            settings.run, task, items, rows, reference_rows, score, overlap
        ),
    )


def audit_task_file(
    engine: Engine, name: str, task: Any, settings: AuditSettings
) -> tuple[TaskContamination, list[ItemScores]]:
    """One lm-eval task file's documents (audit/item_texts.py): each one's text against its perturbed twin as
    the reference, the corpus searched by the task's decontamination queries."""
    docs = list(task.eval_docs)
    twin_of = _text_twins(name, settings.seed)
    texts = [document_text(task, doc, settings.text, name, i) for i, doc in enumerate(docs)]
    items = distinct((str(i), text, twin_of(text, i)) for i, text in enumerate(texts))
    twins = [(item.idx, item.twin) for item in items if item.twin is not None]
    if len(twins) < len(items):
        warn(f"{name}: {len(items) - len(twins)} of {len(items)} items have no perturbed twin")
    twin_of_twin = _text_twins(name, settings.seed + TWIN_OF_TWIN_SEED)
    references = distinct((idx, twin, twin_of_twin(twin, int(idx))) for idx, twin in twins)
    overlap = None
    if settings.corpus:
        queries = [decontamination_query(task, docs[int(item.idx)], name, int(item.idx)) for item in items]
        overlap = corpus_overlap(queries, settings.corpus, settings.corpus_fields)
    audited = Audited(split_of(task), items, f"perturbed twins ({REFERENCE_PERTURBATION})", references, overlap)
    return _audited(engine, name, audited, settings, guessing=lambda notes: {}, run_scores=lambda *_: {})


def _text_twins(name: str, seed: int) -> Callable[[str, int], str | None]:
    """A task file's document text -> its perturbed twin (REFERENCE_PERTURBATION as a free text), seeded by
    the document's position."""
    perturbation = PERTURBATIONS[REFERENCE_PERTURBATION](seed=seed)
    return lambda text, index: perturbation.perturb_text(
        text, random.Random(f"{seed}/{perturbation.name}/{name}/{index}")
    )


@dataclass(frozen=True)
class Audited:
    """What one task's audit scores: its split's items, the reference items (and what they are), and the items'
    corpus overlap (--corpus)."""

    split: str
    items: list[Item]
    reference: str
    references: list[Item]
    overlap: CorpusOverlap | None


def _audited(
    engine: Engine,
    name: str,
    audited: Audited,
    settings: AuditSettings,
    guessing: Callable[[list[str]], dict[str, Any]],
    run_scores: Callable[[list[ItemScores], list[ItemScores], str | None], dict[str, Any]],
) -> tuple[TaskContamination, list[ItemScores]]:
    """The items and references scored in one engine call (an item's twin is the reference item of the same
    text when the twins are the reference), tested, and summarised."""
    items, references, overlap = audited.items, audited.references, audited.overlap
    scored = score_items(engine, [*items, *references], settings.k, f"{name}: scoring items and references")
    rows, reference_rows = scored[: len(items)], scored[len(items) :]
    if overlap is not None:
        rows = [replace(row, ngram_overlap=found.share) for row, found in zip(rows, overlap.items, strict=True)]
    tests = score_tests(rows, reference_rows)
    primary = primary_test(tests)
    notes = []
    if not engine.model.capabilities.token_distribution:
        notes.append(f"Min-K%++ not available: {_shown(engine)} does not give the whole next-token distribution")
    if primary is None:
        notes.append(f"no verdict: too few reference items ({len(references)})")
    if overlap is not None:
        notes.append(f"--corpus: {overlap.flagged} of {len(rows)} items share a {overlap.n}-gram with the corpus")
    guessed = guessing(notes)
    found = membership(rows, set(settings.members)) if settings.members else []
    if settings.members and not found:
        notes.append("--members: no AUROC (the file's ids are none or all of the items)")
    if settings.members and (strangers := len(settings.members - {row.idx for row in rows})):
        notes.append(f"--members: {strangers} of the file's {len(settings.members)} ids are no item of {audited.split}")
    summary = TaskContamination(
        split=audited.split,
        items=len(rows),
        reference=audited.reference,
        references=len(references),
        tests=tuple(tests),
        primary=primary.score if primary else "",
        verdict=primary.verdict if primary else NO_EVIDENCE,
        membership=tuple(found),
        notes=tuple(notes),
        corpus=overlap.summary() if overlap is not None else {},
        guessing=guessed,
        run_scores=run_scores(rows, reference_rows, primary.score if primary else None),
    )
    return summary, rows


def _run_scores(
    run: Path | None,
    task: Task,
    items: Sequence[Item],
    rows: Sequence[ItemScores],
    references: Sequence[ItemScores],
    score: str | None,
    overlap: CorpusOverlap | None,
) -> dict[str, Any]:
    """--run: the run's scores in full and on the items neither its primary score nor the corpus flags
    (audit/unflagged.py)."""
    if run is None:
        return {}
    flags = flagged(rows, references, score) if score else set()
    if overlap is not None:
        flags |= {item.idx for item, found in zip(items, overlap.items, strict=True) if found.flagged}
    keys = {key for item in items if item.idx in flags for key in item.keys}
    return {"flagged_items": len(flags), **rescored(run, task, keys, {key for item in items for key in item.keys})}


def _guessing(engine: Engine, task: Task, chosen: Split, seed: int, notes: list[str]) -> dict[str, Any]:
    """--guessing: TS-Guessing's summary (audit/guessing.py), or a note why the task has none."""
    if not isinstance(task.shape, GUESSED_SHAPES):
        notes.append("--guessing: not asked (no wrong option to hide: the task is no choice task)")
        return {}
    if not engine.model.capabilities.generation:
        notes.append(f"--guessing: not asked ({_shown(engine)} generates no text)")
        return {}
    result = ts_guessing(engine, task, chosen.examples, seed)
    if not result.guesses:
        notes.append(f"--guessing: no labelled item in {chosen.name} (audit a split with answers, e.g. --split val)")
    return result.summary()


def _shown(engine: Engine) -> str:
    return engine.model.identity.split(" ")[0]


def check_task_file_options(settings: AuditSettings, task_files: Sequence[str]) -> None:
    """Before any work: a task file reads its own split, and no run of rueval's scores it."""
    given = [option for option, value in _OWN_TASKS_ONLY.items() if getattr(settings, value) not in (None, False)]
    if task_files and given:
        raise RuevalError(
            f"{', '.join(given)}: for rueval's own tasks; the task files ({', '.join(task_files)}) are "
            "audited on lm-eval's evaluation documents against their perturbed twins"
        )


def audit_contamination(
    engine: Engine,
    tasks: Sequence[Task],
    data: str | None,
    out: Path,
    settings: AuditSettings,
    task_files: Sequence[str] = (),
) -> ContaminationResult:
    """Audit each task, then each lm-eval task file's (``task_files``: task, group or tag names under
    ``settings.include_path`` or lm-eval's own), writing OUT/contamination/<task>.jsonl as each finishes and
    OUT/contamination.json."""
    check_task_file_options(settings, task_files)
    source = open_data(data)
    if settings.run is not None:  # before any work: the run has each task's predictions
        scored = RunResult.read(settings.run).tasks
        if missing := [task.name for task in tasks if task.name not in scored]:
            raise RuevalError(
                f"--run {settings.run}: the run has no {', '.join(missing)}; it scored {', '.join(scored)}"
            )
    built = task_file_tasks(task_files, settings.include_path, settings.trust_task_code) if task_files else {}
    summaries = {}
    for task in tasks:
        summaries[task.name], rows = audit_task(engine, source, task, settings)
        write_item_scores(out, task.name, rows)
    for name, task_file in built.items():
        summaries[name], rows = audit_task_file(engine, name, task_file, settings)
        write_item_scores(out, name, rows)
    result = ContaminationResult(
        model=engine.model.identity,
        data=source.description if tasks else "lm-eval's task files",
        text=settings.text,
        k=settings.k,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        rueval_version=__version__,
        tasks=summaries,
    )
    result.write(out)
    return result
