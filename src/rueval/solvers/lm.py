"""A language model as a solver, in two visible steps: examples -> requests (``plan``), then the
requests' results -> predictions (``answer``). A run plans every task, k and episode first and
computes all their requests in one engine call, so the prefix tree shares across all of them.

Options are scored by log-likelihood (`loglik`, lm-evaluation-harness style: the continuation's
summed log-probability, or per byte when ``normalize``, lm-eval's acc_norm) or by perplexity
(`ppl`, TAPE's Equation 1: the whole prompt's mean log-probability per token). Open answers are
generated with nucleus sampling, top_p 0.8, as TAPE does (Section 5.2), unless ``GenerationSettings``
(lm-evaluation-harness's --gen_kwargs) say otherwise.

For instruction-tuned models the plan step can render each context through the tokenizer's chat
template (``ChatFormat``, lm-evaluation-harness's --apply-chat-template, --system-instruction and
--fewshot-as-multiturn); options are then scored after the rendered template. A chat backend
(``takes_messages``: `openai-chat:`) gets the same turns as messages, which its server renders; when
it scores options by generating (``choice_scoring == "generate"``, MERA's way) the plan asks for
a greedy answer and ``answer`` matches it to an option (``match_option``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rueval.errors import RuevalError
from rueval.fewshot import episode_demos
from rueval.metrics import normalize_answer
from rueval.models.base import Generation, Loglikelihood, Request
from rueval.models.engine import Engine
from rueval.models.openai_chat import encode_messages
from rueval.solvers.base import ModelSize, Setting, Solver
from rueval.tasks import Example, Task
from rueval.tasks.prompts import get_prompt
from rueval.tasks.prompts.base import DEMO_SEPARATOR, Choice, Question

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
        if self.temperature is not None and self.temperature < 0:
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
        readers = {"temperature": float, "top_p": float, "max_gen_toks": int, "do_sample": _flag, "until": _stops}
        values = {}
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

    def request(self, context: str, budget: int, stop: tuple[str, ...], seed: int) -> Generation:
        """The generation request for ``context``; greedy requests carry no seed (their text does not depend on it)."""
        budget = self.max_gen_toks or budget
        stop = self.until if self.until is not None else stop
        if self.greedy:
            return Generation(context, budget, stop, top_p=1.0, temperature=0.0, seed=0)
        top_p = self.top_p if self.top_p is not None else TAPE_TOP_P
        return Generation(context, budget, stop, top_p=top_p, temperature=self.temperature or 1.0, seed=seed)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() not in ("true", "false"):
        raise ValueError(value)
    return str(value).lower() == "true"


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
    """One question of one example, with its full context (the setting's demonstrations, then it)
    and the requests that answer it: one per option, or one generation."""

    question: Question
    context: str
    requests: tuple[Request, ...]


@dataclass(frozen=True)
class Plan:
    """What one task's examples ask of the model in one few-shot setting."""

    task: Task
    setting: Setting
    examples: list[Example]
    asked: list[list[Asked]]  # per example, per question

    @property
    def requests(self) -> list[Request]:
        return [request for per_example in self.asked for asked in per_example for request in asked.requests]

    @property
    def picks_options(self) -> bool:
        """Whether the task's answers are chosen among options (not generated)."""
        return any(asked.question.choices for per_example in self.asked for asked in per_example)


class LMSolver(Solver):
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
        self._messages = getattr(getattr(engine, "model", None), "takes_messages", False)  # an openai-chat: backend
        if self._messages and scoring == "ppl":
            raise RuevalError(f"--scoring ppl scores whole prompts; {name} scores the assistant's answer: use loglik")
        self._tokenizer = _chat_tokenizer(engine, name) if chat.template and not self._messages else None

    @property
    def identity(self) -> str:
        return self.engine.model.identity

    def size(self) -> ModelSize | None:
        parameters = getattr(self.engine.model, "parameters", None)
        return ModelSize(parameters=parameters()) if callable(parameters) else None

    # -- the two steps ---------------------------------------------------------------------------
    def plan(self, task: Task, train: Sequence[Example], examples: Sequence[Example], setting: Setting) -> Plan:
        """The requests that answer ``examples`` with the setting's demonstrations drawn from ``train``."""
        prompt = get_prompt(task)
        demos = episode_demos(train, setting.k, setting.episode, self.seed, task.name)
        demo_questions = [prompt.questions(demo) for demo in demos]
        budget = prompt.max_new_tokens[0 if setting.k == 0 else 1]
        asked = []
        for example in examples:
            per_example = []
            for i, question in enumerate(prompt.questions(example)):
                shown = [(d[i].context, d[i].target) for d in demo_questions if d[i].target is not None]
                context = self._render(shown, question.context)
                if question.choices and self.generates_choices:
                    requests = (Generation(context, MATCH_MAX_TOKENS, seed=self.seed),)
                elif question.choices:
                    requests = tuple(
                        self._loglikelihood(context, self._continuation(choice.continuation))
                        for choice in question.choices
                    )
                else:
                    requests = (self.generation.request(context, budget, prompt.stop, self.seed),)
                per_example.append(Asked(question, context, requests))
            asked.append(per_example)
        return Plan(task, setting, list(examples), asked)

    def answer(self, plan: Plan, results: Mapping[Request, Any], normalize: bool = False) -> list[Any]:
        """The predictions the requests' results give; ``normalize``: options by log-likelihood per byte."""
        prompt = get_prompt(plan.task)
        predictions = []
        for example, per_example in zip(plan.examples, plan.asked, strict=True):
            answers = [self._answer_one(asked, results, normalize) for asked in per_example]
            predictions.append(prompt.prediction(example, answers))
        return predictions

    def protocol(self, plan: Plan) -> str:
        """How the plan's task is scored, as results.json states it: e.g. loglik, ppl-chat-template, generate."""
        if self._messages:
            if not plan.picks_options:
                return "generate-chat"
            return "generate-match" if self.generates_choices else "loglik-chat-logprobs"
        scored = self.scoring if plan.picks_options else "generate"
        return f"{scored}-chat-template" if self.chat.template else scored

    def unmatched(self, plan: Plan, results: Mapping[Request, Any]) -> int | None:
        """How many generated answers to choice questions matched no option (None: options were scored)."""
        if not (plan.picks_options and self.generates_choices):
            return None
        return sum(
            match_option(asked.question.choices, results[asked.requests[0]]) is None
            for per_example in plan.asked
            for asked in per_example
            if asked.question.choices
        )

    # -- the Solver interface: zero-shot -----------------------------------------------------------
    def fit(self, task: Task, train: Sequence[Example]) -> None:
        self._train[task.name] = train  # demonstrations come from here when a setting asks for them

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        plan = self.plan(task, self._train.get(task.name, ()), list(examples), Setting())
        requests = plan.requests
        return self.answer(plan, dict(zip(requests, self.engine.compute(requests, f"{self.name} on {task.name}"))))

    # -- helpers ---------------------------------------------------------------------------------
    def _render(self, shown: Sequence[tuple[str, str]], question: str) -> str:
        """The context of one question after the demonstrations ``shown`` (context, target)."""
        system = [self.chat.system] if self.chat.system else []
        if self._tokenizer is None and not self._messages:
            return DEMO_SEPARATOR.join([*system, *(context + target for context, target in shown), question])
        messages = [{"role": "system", "content": text} for text in system]
        if self.chat.multiturn:
            for context, target in shown:
                messages += [
                    {"role": "user", "content": context.rstrip()},
                    {"role": "assistant", "content": target.strip()},
                ]
            messages.append({"role": "user", "content": question.rstrip()})
        else:
            together = DEMO_SEPARATOR.join([*(context + target for context, target in shown), question])
            messages.append({"role": "user", "content": together.rstrip()})
        if self._messages:
            return encode_messages(messages)
        rendered = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        bos = self._tokenizer.bos_token
        # the backend starts every sequence with BOS itself: a template that writes it would double it
        return rendered[len(bos) :] if bos and rendered.startswith(bos) else rendered

    def _continuation(self, continuation: str) -> str:
        """After a chat template the answer opens the assistant's turn: lm-eval drops the target delimiter."""
        return continuation.lstrip() if self._tokenizer is not None or self._messages else continuation

    def _loglikelihood(self, context: str, continuation: str) -> Loglikelihood:
        if self.scoring == "ppl":
            return Loglikelihood("", context + continuation)
        return Loglikelihood(context, continuation)

    @property
    def generates_choices(self) -> bool:
        """Whether choice questions are answered by generating (a chat backend without prompt logprobs)."""
        return self._messages and self.engine.model.choice_scoring == "generate"

    def _answer_one(self, asked: Asked, results: Mapping[Request, Any], normalize: bool) -> Any:
        if not asked.question.choices:
            return results[asked.requests[0]].strip()
        if self.generates_choices:
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
                return result.logprob / max(1, len(asked.requests[index].continuation.encode()))
            return result.logprob

        return asked.question.choices[max(range(len(results)), key=value)].label


def match_option(choices: Sequence[Choice], generated: str) -> Choice | None:
    """The option a generated answer names, after normalisation (case, ё, punctuation, spaces): the
    one it equals, else the longest one it starts with as whole words; None if it names none."""
    answer = normalize_answer(generated)
    texts = [(normalize_answer(choice.continuation), choice) for choice in choices]
    named = [(text, choice) for text, choice in texts if text and (answer == text or answer.startswith(text + " "))]
    return max(named, key=lambda pair: len(pair[0]))[1] if named else None


def _chat_tokenizer(engine: Engine, name: str) -> Any:
    """The hf: backend's tokenizer, which must carry a chat template."""
    tokenizer = getattr(engine.model, "tokenizer", None)
    if not name.startswith("hf:") or tokenizer is None:
        raise RuevalError(f"--apply-chat-template renders an hf: model's chat template; {name} is not an hf: model")
    if not getattr(tokenizer, "chat_template", None):
        raise RuevalError(f"--apply-chat-template: the tokenizer of {name} has no chat template")
    return tokenizer
