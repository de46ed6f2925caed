"""TS-Guessing's multiple-choice test (Testset Slot Guessing, Deng et al. 2024, "Investigating Data
Contamination in Modern Benchmarks for Large Language Models", NAACL): one wrong option of each item is
hidden and the model is asked to write it. A model that has not read the item can only guess a plausible
wrong answer; writing the hidden option exactly says it has seen the item.

What rueval asks (the paper's idea, its own Russian words): the item with the hidden option shown as
[MASK], the request to restore it word for word and differently from the other options, then the item's
own text again up to the hidden option's mark, so that a base model that has read the item continues with
it and an instruction-following one is asked plainly. The answer is read up to the line's end or the next
option's mark, greedily, and compared with the hidden option after rueval's answer normalisation
(rueval.scoring.metrics.normalize_answer): exact match.

Chance is what the same answers score against other items' hidden options: the mean exact-match rate over
every re-pairing of answers with hidden options (computed from the counts, not sampled). It counts what
generic answers earn ("нет", a number, a common word) without knowing the item. The p-value is a one-sided
permutation test of the observed rate against that pairing (PERMUTATIONS random re-pairings, seeded).

Tasks: options inline in a question (RuOpenBookQA, RuWorldTree, ruMMLU, MaMuRAMu, MathLogicQA), option
fields (PARus, ruHHH, ruHateSpeech, ruTiE) and MuSeRC's answers to a question (its wrong answers). Only
labelled items take part: the hidden option must be a wrong one. RuCoS is not asked: its options are the
passage's own entities, which the item shows.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rueval.core.errors import RuevalError
from rueval.models.base import Generation, Message, Prompt
from rueval.models.engine import Engine
from rueval.scoring.metrics import normalize_answer
from rueval.tasks import Example, Task
from rueval.tasks.inline_options import option_spans
from rueval.tasks.shapes import AnswerCheck, Choice, InlineChoice

GUESSED_SHAPES = (InlineChoice, Choice, AnswerCheck)  # the task shapes with a wrong option to hide
MASK = "[MASK]"
MAX_GUESS_TOKENS = 48  # an option is a few words
PERMUTATIONS = 10_000
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
ASKS = {"cause": "Что было причиной?", "effect": "Что произошло в результате?"}  # PARus's question field
INSTRUCTION = (
    "Ниже задание из тестового набора, в котором один неверный вариант ответа скрыт за {mask}. "
    "Восстановите скрытый вариант ({letter}) дословно, так, как он записан в наборе; он отличается "
    "от остальных вариантов.\n\n{shown}\n\nЗадание целиком:\n{prefix}"
)


@dataclass(frozen=True)
class MaskedItem:
    """An item with one wrong option to hide: ``text`` with the option at ``span`` and its ``letter``'s
    mark just before it; ``stop``: what ends an answer (the next option's mark, a line break)."""

    idx: Any
    text: str
    span: tuple[int, int]
    letter: str
    stop: tuple[str, ...]

    @property
    def hidden(self) -> str:
        return self.text[self.span[0] : self.span[1]].strip()

    def prompt(self) -> str:
        start, end = self.span
        shown = f"{self.text[:start].rstrip()} {MASK}{self.text[end:]}"
        return INSTRUCTION.format(mask=MASK, letter=self.letter, shown=shown, prefix=self.text[:start].rstrip())


@dataclass(frozen=True)
class Guess:
    idx: Any
    letter: str
    hidden: str
    guess: str

    @property
    def exact(self) -> bool:
        return normalize_answer(self.guess) == normalize_answer(self.hidden)

    def to_json(self) -> dict[str, Any]:
        return {"idx": self.idx, "letter": self.letter, "hidden": self.hidden, "guess": self.guess, "exact": self.exact}


@dataclass(frozen=True)
class GuessingResult:
    """A task's guesses (in the items' order), the items left out (unlabelled, or without a wrong option
    beside another), chance and the permutation p-value (None without guesses)."""

    task: str
    guesses: tuple[Guess, ...]
    left_out: int
    chance: float | None
    p_value: float | None
    permutations: int = PERMUTATIONS

    @property
    def exact_matches(self) -> int:
        return sum(guess.exact for guess in self.guesses)

    @property
    def rate(self) -> float | None:
        return self.exact_matches / len(self.guesses) if self.guesses else None

    def summary(self) -> dict[str, Any]:
        return {
            "items": len(self.guesses),
            "left_out": self.left_out,
            "exact_matches": self.exact_matches,
            "exact_match_rate": self.rate,
            "chance": self.chance,
            "p_value": self.p_value,
            "permutations": self.permutations,
        }


def ts_guessing(
    engine: Engine, task: Task, examples: Sequence[Example], seed: int = 0, permutations: int = PERMUTATIONS
) -> GuessingResult:
    """The guessing test of a choice task's labelled examples, asked through the engine (cached, batched)."""
    if not engine.model.capabilities.generation:
        raise RuevalError(f"{engine.model.identity}: declares no generation; the guessing test asks for text")
    items = masked_items(task, examples, seed)
    messages = engine.model.capabilities.chat_messages
    requests = [
        Generation(_prompt(item.prompt(), messages), MAX_GUESS_TOKENS, stop=item.stop, seed=seed) for item in items
    ]
    answers = engine.generate(requests, f"TS-Guessing on {task.name}")
    guesses = tuple(
        Guess(item.idx, item.letter, item.hidden, _first_line(answer))
        for item, answer in zip(items, answers, strict=True)
    )
    left_out = len({_item_key(task, example) for example in examples}) - len(items)
    chance, p_value = permutation_test(guesses, permutations, seed)
    return GuessingResult(task.name, guesses, left_out, chance, p_value, permutations)


def _prompt(text: str, messages: bool) -> Prompt:
    return (Message("user", text),) if messages else text


def _first_line(answer: str) -> str:
    return (answer.strip().splitlines() or [""])[0].strip()


def permutation_test(guesses: Sequence[Guess], permutations: int, seed: int) -> tuple[float | None, float | None]:
    """Chance (the mean exact-match rate over every pairing of guesses with hidden options) and the share of
    ``permutations`` random pairings matching at least as often as the real one (with the real one counted)."""
    if not guesses:
        return None, None
    codes: dict[str, int] = {}
    guessed = np.array([codes.setdefault(normalize_answer(g.guess), len(codes)) for g in guesses])
    hidden = np.array([codes.setdefault(normalize_answer(g.hidden), len(codes)) for g in guesses])
    n = len(guesses)
    by_guess, by_hidden = Counter(guessed.tolist()), Counter(hidden.tolist())
    chance = sum(count * by_hidden[code] for code, count in by_guess.items()) / n**2
    observed = int((guessed == hidden).sum())
    rng = np.random.default_rng(seed)
    at_least = sum(int((guessed == rng.permutation(hidden)).sum()) >= observed for _ in range(permutations))
    return chance, (1 + at_least) / (1 + permutations)


def masked_items(task: Task, examples: Sequence[Example], seed: int = 0) -> list[MaskedItem]:
    """Each labelled item with a wrong option to hide (chosen at random, seeded by ``seed`` and the item)."""
    shape = task.shape
    if isinstance(shape, InlineChoice):
        found = [_inline(shape, example, seed) for example in examples]
    elif isinstance(shape, Choice):
        found = [_fields(shape, example, seed) for example in examples]
    elif isinstance(shape, AnswerCheck):
        groups: dict[Any, list[Example]] = {}
        for example in examples:
            groups.setdefault(example.group, []).append(example)
        found = [_answers(answers, seed) for answers in groups.values()]
    else:
        raise RuevalError(
            f"task {task.name}: the guessing test hides a wrong option of a choice task (options inline, "
            "option fields or MuSeRC's answers); this task has none"
        )
    return [item for item in found if item is not None]


def _item_key(task: Task, example: Example) -> Any:
    return example.group if isinstance(task.shape, AnswerCheck) else example.idx


def _wrong(idx: Any, wrong: Sequence[int], seed: int) -> int | None:
    return random.Random(f"{seed}:{idx!r}").choice(wrong) if wrong else None


def _inline(shape: InlineChoice, example: Example, seed: int) -> MaskedItem | None:
    question = example.fields[shape.question]
    _, spans = option_spans(question, shape.question)
    letters = list(spans)
    chosen = _wrong(example.idx, [i for i, letter in enumerate(letters) if letter != example.label], seed)
    if example.label is None or chosen is None:
        return None
    letter = letters[chosen]
    stop = ("\n", f"({letters[chosen + 1]})") if chosen + 1 < len(letters) else ("\n",)
    return MaskedItem(example.idx, question, spans[letter], letter, stop)


def _lines(idx: Any, stem: str, options: Sequence[str], masked: int) -> MaskedItem:
    """An item whose options are written one per line, "A) ...", after its stem."""
    text = stem
    for i, option in enumerate(options):
        text += f"\n{LETTERS[i]}) "
        if i == masked:
            span = (len(text), len(text) + len(option))
        text += option
    return MaskedItem(idx, text, span, LETTERS[masked], ("\n",))


def _fields(shape: Choice, example: Example, seed: int) -> MaskedItem | None:
    if example.label is None or len(shape.options) < 2:
        return None
    chosen = _wrong(example.idx, [i for i in range(len(shape.options)) if i != example.label], seed)
    assert chosen is not None  # two options or more, one of them right
    stem = "\n".join(str(example.fields[field]) for field in shape.context)
    if shape.question:
        asked = str(example.fields[shape.question])
        stem += "\n" + ASKS.get(asked, asked)
    options = [str(example.fields[field]) for field in shape.options]
    return _lines(example.idx, stem, options, chosen)


def _answers(answers: Sequence[Example], seed: int) -> MaskedItem | None:
    """MuSeRC: a question's answers as its options, one of its wrong ones hidden."""
    if len(answers) < 2 or any(answer.label is None for answer in answers):
        return None
    group = answers[0].group
    chosen = _wrong(group, [i for i, answer in enumerate(answers) if answer.label == 0], seed)
    if chosen is None:
        return None
    fields = answers[0].fields
    stem = f"{fields['passage']}\n{fields['question']}"
    return _lines(group, stem, [answer.fields["answer"] for answer in answers], chosen)
