"""How a task's examples read to a language model.

A prompt turns an example into one or more questions (Ethics asks one per category, every
other task one). A question is a context that ends right before the answer, plus either the
answer options as continuations (scored by log-likelihood or perplexity) or nothing, in which
case the answer is generated. ``target`` is the gold continuation, used when the example is a
few-shot demonstration.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rueval.tasks.base import Example

DEMO_SEPARATOR = "\n\n"  # between few-shot demonstrations and before the question


@dataclass(frozen=True)
class Choice:
    continuation: str  # appended to the context, e.g. " Да"
    label: Any  # the prediction this option stands for


@dataclass(frozen=True)
class Question:
    context: str
    choices: tuple[Choice, ...] = ()  # empty: the answer is generated
    target: str | None = None  # the gold continuation, when the example is labelled
    # a generated answer: how many to sample (lm-eval's repeats; the answer is then their list), and
    # the task's own generation settings (lm-eval's generation_kwargs keys), over the run's
    samples: int = 1
    generation: Mapping[str, Any] = field(default_factory=dict)


class TaskPrompt(ABC):
    """One per task, in rueval/tasks/prompts/<task>.py."""

    # generation budget in tokens: (zero-shot, few-shot); TAPE Section 5.2: CheGeKa 100/200, MultiQ 400/800
    max_new_tokens: tuple[int, int] = (32, 32)
    stop: tuple[str, ...] = ("\n",)

    @abstractmethod
    def questions(self, example: Example) -> list[Question]: ...

    def demonstration(self, example: Example, position: int) -> list[Question]:
        """How ``example`` reads as the demonstration at ``position`` (0: the first); as a question by default."""
        return self.questions(example)

    def after_demonstrations(self, example: Example) -> list[Question]:
        """How ``example`` reads after demonstrations; as without them by default."""
        return self.questions(example)

    def prediction(self, example: Example, answers: list[Any]) -> Any:
        """The task-level prediction from each question's answer (a choice label or generated text)."""
        return answers[0]
