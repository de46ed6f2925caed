"""A language model as a solver: examples -> prompts -> requests -> predictions.

Options are scored by log-likelihood (`loglik`, lm-evaluation-harness style: the continuation's
summed log-probability, or per byte when ``normalize``, lm-eval's acc_norm) or by perplexity
(`ppl`, TAPE's Equation 1: the whole prompt's mean log-probability per token). Open answers are
generated with nucleus sampling, top_p 0.8, as TAPE does (Section 5.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rueval.fewshot import episode_demos
from rueval.models.base import Generation, Loglikelihood
from rueval.models.engine import Engine
from rueval.solvers.base import ModelSize, Solver
from rueval.tasks import Example, Task
from rueval.tasks.prompts import get_prompt
from rueval.tasks.prompts.base import DEMO_SEPARATOR, Question

SCORINGS = ("loglik", "ppl")
TAPE_TOP_P = 0.8


class LMSolver(Solver):
    def __init__(self, engine: Engine, name: str, scoring: str = "loglik", seed: int = 0):
        if scoring not in SCORINGS:
            raise ValueError(f"unknown scoring {scoring!r}")
        self.engine, self.name, self.scoring, self.seed = engine, name, scoring, seed
        self.shots, self.episode, self.normalize = 0, 0, False
        self._demos: list[Example] = []

    @property
    def identity(self) -> str:
        return self.engine.model.identity

    def set_episode(self, shots: int, episode: int, normalize: bool = False) -> None:
        """Choose the few-shot setting (and, for loglik, acc_norm) for the next fit/predict."""
        self.shots, self.episode, self.normalize = shots, episode, normalize

    def picks_options(self, task: Task, example: Example) -> bool:
        """Whether the task's answers are chosen among options (not generated)."""
        return any(q.choices for q in get_prompt(task).questions(example))

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        self._demos = episode_demos(train, self.shots, self.episode, self.seed, task.name)

    def size(self) -> ModelSize | None:
        parameters = getattr(self.engine.model, "parameters", None)
        return ModelSize(parameters=parameters()) if callable(parameters) else None

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        prompt = get_prompt(task)
        examples = list(examples)
        demo_questions = [prompt.questions(demo) for demo in self._demos]
        asked = [self._contexts(prompt.questions(example), demo_questions) for example in examples]

        scored = [(q, c) for per_example in asked for q, c in per_example if q.choices]
        requests = [self._request(context, choice.continuation) for q, context in scored for choice in q.choices]
        results = iter(self.engine.loglikelihood(requests, f"{self.name} on {task.name}"))
        choice_results = {id(q): [next(results) for _ in q.choices] for q, _ in scored}

        budget = prompt.max_new_tokens[0 if self.shots == 0 else 1]
        open_questions = [(q, c) for per_example in asked for q, c in per_example if not q.choices]
        generations = [
            Generation(c, budget, prompt.stop, top_p=TAPE_TOP_P, temperature=1.0, seed=self.seed)
            for _, c in open_questions
        ]
        generated = self.engine.generate(generations, f"{self.name} on {task.name}")
        texts = {id(q): text for (q, _), text in zip(open_questions, generated, strict=True)}

        predictions = []
        for example, per_example in zip(examples, asked, strict=True):
            answers = [
                self._best(q, choice_results[id(q)]) if q.choices else texts[id(q)].strip() for q, _ in per_example
            ]
            predictions.append(prompt.prediction(example, answers))
        return predictions

    def _contexts(self, questions: list[Question], demo_questions: list[list[Question]]) -> list[tuple[Question, str]]:
        """Each question with its full context: the demonstrations of the same question, then it."""
        contexts = []
        for i, question in enumerate(questions):
            demos = [d[i].context + d[i].target for d in demo_questions if d[i].target is not None]
            contexts.append((question, DEMO_SEPARATOR.join([*demos, question.context])))
        return contexts

    def _request(self, context: str, continuation: str) -> Loglikelihood:
        if self.scoring == "ppl":
            return Loglikelihood("", context + continuation)
        return Loglikelihood(context, continuation)

    def _best(self, question: Question, results: list) -> Any:
        def value(pair) -> float:
            choice, result = pair
            if self.scoring == "ppl":
                return result.logprob / result.n_tokens
            if self.normalize:
                return result.logprob / max(1, len(choice.continuation.encode()))
            return result.logprob

        return max(zip(question.choices, results, strict=True), key=value)[0].label


LM_BACKENDS = ("hf", "openai")


def make_lm_solver(
    name: str,
    seed: int = 0,
    scoring: str = "loglik",
    device: str = "cpu",
    dtype: str = "auto",
    batch_size: int | str = "auto",
    trust_remote_code: bool = False,
    base_url: str | None = None,
    concurrency: int = 8,
    cache: bool = True,
) -> LMSolver:
    """`hf:PATH_OR_HUB_ID` or `openai:MODEL` (with ``base_url``) as a solver, with the request cache."""
    from rueval.errors import RuevalError
    from rueval.models.cache import RequestCache
    from rueval.paths import cache_dir

    backend, _, target = name.partition(":")
    if not target:
        raise RuevalError(f"-m {name}: name the model after the colon, e.g. hf:ai-forever/rugpt3small_based_on_gpt2")
    if backend == "hf":
        from rueval.models.hf import HFCausalLM

        model = HFCausalLM(
            target, device=device, dtype=dtype, batch_size=batch_size, trust_remote_code=trust_remote_code
        )
    elif backend == "openai":
        from rueval.models.openai import OpenAICompletionsModel

        if not base_url:
            raise RuevalError(f"-m {name} needs --base-url, e.g. http://localhost:8000/v1")
        model = OpenAICompletionsModel(target, base_url, concurrency=concurrency)
    else:
        raise RuevalError(f"-m {name}: unknown backend '{backend}'; expected one of: {', '.join(LM_BACKENDS)}")
    requests = RequestCache(cache_dir("requests") / "requests.sqlite") if cache else None
    return LMSolver(Engine(model, requests), name, scoring, seed)
