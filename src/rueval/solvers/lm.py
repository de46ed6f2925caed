"""A language model as a solver, in two visible steps: examples -> requests (``plan``), then the requests' results ->
predictions (``answer``). As a PooledSolver it plans a task in every setting (``plan_task``) and answers it with one
TaskAnswers (``answer_task``): a run plans every task, k and episode first and computes all their requests in one
engine call, so the prefix tree shares across all of them. It asks only what its backend declares (``Capabilities``).

Options are scored by log-likelihood (`loglik`, lm-evaluation-harness style: the continuation's summed log-probability,
or per byte when ``normalize``, lm-eval's acc_norm) or by perplexity (`ppl`, TAPE's Equation 1: the whole prompt's mean
log-probability per token). Open answers are generated with nucleus sampling, top_p 0.8, as TAPE does (Section 5.2),
unless ``GenerationSettings`` (--gen_kwargs, over a task's own) say otherwise.

For instruction-tuned models the plan step can render each context through the tokenizer's chat
template (``ChatFormat``, lm-evaluation-harness's --apply-chat-template, --system-instruction and
--fewshot-as-multiturn); options are then scored after the rendered template. A backend that takes
chat messages (``chat_messages``, e.g. `openai-chat:`) gets the same turns as Message tuples, which
its server renders. A backend that cannot score options (no ``chat_logprobs`` after chat messages,
no ``loglikelihood`` for text) answers choice questions by generating, MERA's way: the plan asks for
a greedy answer and ``answer`` matches it to an option (``match_option``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

from rueval.core.errors import RuevalError
from rueval.models.base import Capabilities, Generation, Loglikelihood, Message, Prompt, Request
from rueval.models.engine import Engine
from rueval.scoring.metrics import normalize_answer
from rueval.solvers.base import Exchange, ModelSize, PooledSolver, Setting, Solver, TaskAnswers
from rueval.tasks import Example, Task
from rueval.tasks.fewshot import demonstrations
from rueval.tasks.prompts import get_prompt
from rueval.tasks.prompts.base import DEMO_SEPARATOR, Choice, Question, TaskPrompt

SCORINGS = ("loglik", "ppl")
TAPE_TOP_P = 0.8
MATCH_MAX_TOKENS = 32  # a generated answer to a choice question: the option's words come first


@dataclass(frozen=True)
class GenerationSettings:
    """How open answers are generated, as lm-evaluation-harness's --gen_kwargs spells it; what is not
    given keeps TAPE's sampling (top_p 0.8 at temperature 1, seeded by the run's seed). temperature 0
    or do_sample false is greedy decoding; ``max_gen_toks`` replaces the prompt's token budget and
    ``until`` its stop sequences."""

    temperature: float | None = None
    top_p: float | None = None
    do_sample: bool | None = None
    max_gen_toks: int | None = None
    until: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.temperature is not None and not 0 <= self.temperature < math.inf:
            raise RuevalError(f"--gen_kwargs temperature={self.temperature}: expected 0 or more")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise RuevalError(f"--gen_kwargs top_p={self.top_p}: expected a number in (0, 1]")
        if self.max_gen_toks is not None and self.max_gen_toks < 1:
            raise RuevalError(f"--gen_kwargs max_gen_toks={self.max_gen_toks}: expected a positive whole number")
        if self.do_sample and self.temperature == 0:
            raise RuevalError("--gen_kwargs do_sample=true with temperature=0: sampling needs a temperature above 0")

    @classmethod
    def parse(cls, text: str) -> GenerationSettings:
        """`temperature=0,top_p=0.9,max_gen_toks=64,until=\\n,do_sample=false` (a `\\n` in until is a newline)."""
        given: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, equals, value = part.partition("=")
            if not equals:
                raise RuevalError(f"--gen_kwargs {part}: expected KEY=VALUE")
            given[key.strip()] = value.strip()
        return cls.from_mapping(given)

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any]) -> GenerationSettings:
        """From the parsed or saved keys (text or JSON values); an unknown key or bad value names the key."""
        readers: dict[str, Callable[[Any], Any]]
        readers = {"temperature": float, "top_p": float, "max_gen_toks": int, "do_sample": _flag, "until": _stops}
        values: dict[str, Any] = {}
        for key, value in given.items():
            if key not in readers:
                raise RuevalError(f"--gen_kwargs {key}: unknown key; expected one of: {', '.join(readers)}")
            try:
                values[key] = readers[key](value)
            except (TypeError, ValueError):
                raise RuevalError(f"--gen_kwargs {key}={value}: not a valid {key}") from None
        return cls(**values)

    def describe(self) -> dict[str, Any]:
        """The keys given, as JSON (results.json, the run's fingerprint, lm-eval's config.gen_kwargs)."""
        return {
            key: list(value) if key == "until" else value for key, value in asdict(self).items() if value is not None
        }

    @property
    def greedy(self) -> bool:
        return self.do_sample is False or self.temperature == 0

    def request(self, context: Prompt, budget: int, stop: tuple[str, ...], seed: int) -> Generation:
        """The generation request for ``context``; greedy requests carry no seed (their text does not depend on it)."""
        budget = self.max_gen_toks or budget
        stop = self.until if self.until is not None else stop
        if self.greedy:
            return Generation(context, budget, stop, top_p=1.0, temperature=0.0, seed=0)
        top_p = self.top_p if self.top_p is not None else TAPE_TOP_P
        return Generation(context, budget, stop, top_p=top_p, temperature=self.temperature or 1.0, seed=seed)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool) and str(value).lower() not in ("true", "false"):
        raise ValueError(value)
    return value if isinstance(value, bool) else str(value).lower() == "true"


def _stops(value: Any) -> tuple[str, ...]:
    stops = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(stop, str) and stop for stop in stops):
        raise ValueError(value)
    return tuple(stop.replace("\\n", "\n") for stop in stops)


@dataclass(frozen=True)
class ChatFormat:
    """How contexts reach the model, as lm-evaluation-harness defines its options: ``template``
    renders them through the tokenizer's chat template (the demonstrations and the question in one
    user turn, or with ``multiturn`` each demonstration as a user turn and its answer as an assistant
    turn); ``system`` opens them (a system turn, or plain text before the demonstrations)."""

    template: bool = False
    system: str | None = None
    multiturn: bool = False

    def __post_init__(self) -> None:
        if self.multiturn and not self.template:
            raise RuevalError("--fewshot-as-multiturn needs --apply-chat-template")


@dataclass(frozen=True)
class Asked:
    """One question of one example, with its full context (the setting's demonstrations, then it:
    text, or chat messages for a backend that takes them) and the requests that answer it: one per
    option, or one generation."""

    question: Question
    context: Prompt
    requests: tuple[Request, ...]


@dataclass(frozen=True)
class Plan:
    """What one task's examples ask of the model in one few-shot setting."""

    task: Task
    setting: Setting
    examples: list[Example]
    asked: list[list[Asked]]  # per example, per question
    prompt: TaskPrompt  # the prompt asked with: the task's, or one of its variants

    @property
    def requests(self) -> list[Request]:
        return [request for per_example in self.asked for asked in per_example for request in asked.requests]

    @property
    def picks_options(self) -> bool:
        """Whether the task's answers are chosen among options (not generated)."""
        return any(asked.question.choices for per_example in self.asked for asked in per_example)


@dataclass(frozen=True)
class TaskPlans:
    """One task's plans, one per setting, and all their requests in order."""

    plans: tuple[Plan, ...]
    requests: tuple[Request, ...]


class LMSolver(Solver, PooledSolver[TaskPlans]):
    """A language model behind ``engine``, asked only what its backend declares (``Capabilities``)."""

    def __init__(
        self,
        engine: Engine,
        name: str,
        scoring: str = "loglik",
        seed: int = 0,
        chat: ChatFormat = ChatFormat(),
        generation: GenerationSettings = GenerationSettings(),
    ):
        if scoring not in SCORINGS:
            raise ValueError(f"unknown scoring {scoring!r}")
        self.engine, self.name, self.scoring, self.seed, self.chat = engine, name, scoring, seed, chat
        self.generation = generation
        self._train: dict[str, Sequence[Example]] = {}
        declared = engine.model.capabilities  # what is known without asking a server
        self._messages = declared.chat_messages  # the backend's server renders the turns
        if scoring == "ppl" and (self._messages or not declared.loglikelihood):
            raise RuevalError(f"--scoring ppl scores whole prompts; {name} scores the assistant's answer: use loglik")
        self._tokenizer = _chat_tokenizer(declared, name) if chat.template and not self._messages else None

    @property
    def identity(self) -> str:
        return self.engine.model.identity

    @property
    def pooled(self) -> LMSolver:
        return self

    def size(self) -> ModelSize | None:
        parameters = self.engine.model.capabilities.parameters
        return ModelSize(parameters=parameters) if parameters is not None else None

    @cached_property
    def _capabilities(self) -> Capabilities:
        """The backend's capabilities, settled when first needed (a chat server may be asked once)."""
        return self.engine.model.settle()

    # -- the two steps ---------------------------------------------------------------------------
    def plan(
        self,
        task: Task,
        train: Sequence[Example],
        examples: Sequence[Example],
        setting: Setting,
        prompt: TaskPrompt | None = None,
    ) -> Plan:
        """The requests that answer ``examples`` with the setting's demonstrations drawn from ``train``,
        asked with ``prompt`` (default: the task's; tasks.prompts.prompt_variants has the others)."""
        prompt = prompt or get_prompt(task)
        k, episode, per_item_seed = setting.k, setting.episode, setting.per_item_seed
        drawn = demonstrations(train, k, episode, per_item_seed, len(examples), self.seed, task.name, examples)
        budget = prompt.max_new_tokens[0 if setting.k == 0 else 1]
        shown_by_set: dict[int, list[list[Question]]] = {}
        asked = []
        for example, demos in zip(examples, drawn, strict=True):
            if id(demos) not in shown_by_set:
                shown_by_set[id(demos)] = [prompt.demonstration(demo, n) for n, demo in enumerate(demos)]
            demo_questions = shown_by_set[id(demos)]
            per_example = []
            questions = prompt.after_demonstrations(example) if demos else prompt.questions(example)
            for i, question in enumerate(questions):
                shown = [(q.context, q.target) for q in (d[i] for d in demo_questions) if q.target is not None]
                context = self._render(shown, question.context)
                per_example.append(Asked(question, context, self._requests(question, context, budget, prompt.stop)))
            asked.append(per_example)
        return Plan(task, setting, list(examples), asked, prompt)

    def answer(self, plan: Plan, results: Mapping[Request, Any], normalize: bool = False) -> list[Any]:
        """The predictions the requests' results give; ``normalize``: options by log-likelihood per byte."""
        prompt = plan.prompt
        predictions = []
        for example, per_example in zip(plan.examples, plan.asked, strict=True):
            answers = [self._answer_one(asked, results, normalize) for asked in per_example]
            predictions.append(prompt.prediction(example, answers))
        return predictions

    # -- the PooledSolver interface: a task in every setting ---------------------------------------
    def plan_task(
        self,
        task: Task,
        train: Sequence[Example],
        examples: Sequence[Example],
        settings: Sequence[Setting],
        prompt: TaskPrompt | None = None,
    ) -> TaskPlans:
        plans = tuple(self.plan(task, train, examples, setting, prompt) for setting in settings)
        return TaskPlans(plans, tuple(request for plan in plans for request in plan.requests))

    def answer_task(self, plan: TaskPlans, results: Mapping[Request, Any]) -> TaskAnswers:
        plans = plan.plans
        unmatched = [count for one in plans if (count := self._unmatched(one, results)) is not None]
        return TaskAnswers(
            by_setting={one.setting: self.answer(one, results) for one in plans},
            normalized={one.setting: self.answer(one, results, True) for one in plans if self._normalizes(one)},
            protocol=self._protocol(plans[0]),
            unmatched=sum(unmatched) if unmatched else None,
            exchanges={one.setting: _exchanges(one, results) for one in plans},
        )

    # -- the Solver interface: zero-shot -----------------------------------------------------------
    def fit(self, task: Task, train: Sequence[Example]) -> None:
        self._train[task.name] = train  # demonstrations come from here when a setting asks for them

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        plan = self.plan(task, self._train.get(task.name, ()), list(examples), Setting())
        requests = plan.requests
        return self.answer(plan, dict(zip(requests, self.engine.compute(requests, f"{self.name} on {task.name}"))))

    # -- planning ----------------------------------------------------------------------------------
    def _render(self, shown: Sequence[tuple[str, str]], question: str) -> Prompt:
        """The context of one question after the demonstrations ``shown`` (context, target)."""
        system = [self.chat.system] if self.chat.system else []
        if self._tokenizer is None and not self._messages:
            return DEMO_SEPARATOR.join([*system, *(context + target for context, target in shown), question])
        messages = [Message("system", text) for text in system]
        if self.chat.multiturn:
            for context, target in shown:
                messages += [Message("user", context.rstrip()), Message("assistant", target.strip())]
            messages.append(Message("user", question.rstrip()))
        else:
            together = DEMO_SEPARATOR.join([*(context + target for context, target in shown), question])
            messages.append(Message("user", together.rstrip()))
        if self._messages or self._tokenizer is None:  # no tokenizer here: the backend takes messages
            return tuple(messages)
        turns = [asdict(message) for message in messages]
        rendered = self._tokenizer.apply_chat_template(turns, add_generation_prompt=True, tokenize=False)
        bos = self._tokenizer.bos_token
        # the backend starts every sequence with BOS itself: a template that writes it would double it
        return rendered[len(bos) :] if bos and rendered.startswith(bos) else rendered

    def _requests(self, question: Question, context: Prompt, budget: int, stop: tuple[str, ...]) -> tuple[Request, ...]:
        """One request per option, or one generation (an open question, or options named by generating)."""
        if question.choices and not self._generates_choices:
            return tuple(
                self._loglikelihood(context, self._continuation(choice.continuation)) for choice in question.choices
            )
        if not self.engine.model.capabilities.generation:
            raise RuevalError(f"{self.name} declares no generation: it cannot answer {question.context[:60]!r}")
        if question.choices:
            return (Generation(context, MATCH_MAX_TOKENS, seed=self.seed),)
        generation = GenerationSettings.from_mapping({**self.generation.describe(), **question.generation})
        return tuple(generation.request(context, budget, stop, self.seed + i) for i in range(question.samples))

    def _continuation(self, continuation: str) -> str:
        """After a chat template the answer opens the assistant's turn: lm-eval drops the target delimiter."""
        return continuation.lstrip() if self._tokenizer is not None or self._messages else continuation

    def _loglikelihood(self, context: Prompt, continuation: str) -> Loglikelihood:
        if self.scoring == "ppl":
            assert isinstance(context, str)  # ppl is refused for a backend that takes messages (__init__)
            return Loglikelihood("", context + continuation)
        return Loglikelihood(context, continuation)

    @property
    def _generates_choices(self) -> bool:
        """Whether choice questions are answered by generating and matching (MERA's way): the backend scores
        no option (a chat server without prompt logprobs, a model that only generates)."""
        settled = self._capabilities
        return not (settled.chat_logprobs if settled.chat_messages else settled.loglikelihood)

    # -- answering ---------------------------------------------------------------------------------
    def _protocol(self, plan: Plan) -> str:
        """How the plan's task is scored, as results.json states it: e.g. loglik, ppl-chat-template, generate."""
        if self._messages:
            if not plan.picks_options:
                return "generate-chat"
            return "generate-match" if self._generates_choices else "loglik-chat-logprobs"
        scored = ("generate-match" if self._generates_choices else self.scoring) if plan.picks_options else "generate"
        return f"{scored}-chat-template" if self.chat.template else scored

    def _unmatched(self, plan: Plan, results: Mapping[Request, Any]) -> int | None:
        """How many generated answers to choice questions matched no option (None: options were scored)."""
        if not (plan.picks_options and self._generates_choices):
            return None
        return sum(
            match_option(asked.question.choices, results[asked.requests[0]]) is None
            for per_example in plan.asked
            for asked in per_example
            if asked.question.choices
        )

    def _normalizes(self, plan: Plan) -> bool:
        """Log-likelihood scoring of options is also read per byte (lm-eval's acc_norm)."""
        return self.scoring == "loglik" and plan.picks_options and not self._generates_choices

    def _answer_one(self, asked: Asked, results: Mapping[Request, Any], normalize: bool) -> Any:
        if not asked.question.choices:  # as generated (samples: their list); the prompt's prediction cleans it
            return [results[r] for r in asked.requests] if asked.question.samples > 1 else results[asked.requests[0]]
        if self._generates_choices:
            return self._matched(asked, results[asked.requests[0]])
        return self._best(asked, [results[r] for r in asked.requests], normalize)

    def _matched(self, asked: Asked, generated: str) -> Any:
        """The label of the option the generated answer names. An answer that names none is scored as
        wrong: it stands for the first option that is not the gold one (the labels stay the task's)."""
        choice = match_option(asked.question.choices, generated)
        if choice is None:
            gold = asked.question.target
            choice = next((c for c in asked.question.choices if c.continuation != gold), asked.question.choices[0])
        return choice.label

    def _best(self, asked: Asked, results: list, normalize: bool) -> Any:
        def value(index: int) -> float:
            result = results[index]
            if self.scoring == "ppl":
                return result.logprob / result.n_tokens
            if normalize:
                continuation = self._continuation(asked.question.choices[index].continuation)  # its request's
                return result.logprob / max(1, len(continuation.encode()))
            return result.logprob

        return asked.question.choices[max(range(len(results)), key=value)].label


def _exchanges(plan: Plan, results: Mapping[Request, Any]) -> list[Exchange]:
    """Per example: every request it sent, in order, and what each returned."""
    sent = [tuple(request for asked in per_example for request in asked.requests) for per_example in plan.asked]
    return [Exchange(requests, tuple(results[request] for request in requests)) for requests in sent]


def match_option(choices: Sequence[Choice], generated: str) -> Choice | None:
    """The option a generated answer names, after normalisation (case, ё, punctuation, spaces): the
    one it equals, else the longest one it starts with as whole words; None if it names none."""
    answer = normalize_answer(generated)
    texts = [(normalize_answer(choice.continuation), choice) for choice in choices]
    named = [(text, choice) for text, choice in texts if text and (answer == text or answer.startswith(text + " "))]
    return max(named, key=lambda pair: len(pair[0]))[1] if named else None


def _chat_tokenizer(declared: Capabilities, name: str) -> Any:
    """The model's own tokenizer, which must carry a chat template."""
    if declared.tokenizer is None:
        raise RuevalError(
            f"--apply-chat-template renders the model's own chat template; {name} has no tokenizer (hf: models have)"
        )
    if not getattr(declared.tokenizer, "chat_template", None):
        raise RuevalError(f"--apply-chat-template: the tokenizer of {name} has no chat template")
    return declared.tokenizer
