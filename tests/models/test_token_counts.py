"""A run's requests counted in tokens for its progress line: each request's tokens not shared with the
request before it in the engine's order (what the prefix tree forwards), plus a generation's budget."""

import re

import pytest
from support import require_modules

require_modules("torch", "transformers", extra="lm")

from rueval.core import progress
from rueval.models.backends.hf import HFCausalLM
from rueval.models.base import Generation, Loglikelihood
from rueval.models.engine import KINDS, Engine
from rueval.models.token_counts import CHARS_PER_TOKEN, Tokens, request_tokens

DEMOS = "Вопрос: Где живёт белый медведь?\nОтвет: в Арктике\n\nВопрос: Сколько ног у паука?\nОтвет: восемь\n\n"
QUESTIONS = ["Какого цвета снег?", "Что пьёт кошка?", "Кто живёт в дупле?", "Где растут кактусы?"]
SCORED = [Loglikelihood(f"{DEMOS}Вопрос: {q}\nОтвет:", option) for q in QUESTIONS for option in (" да", " нет")]
GENERATED = [Generation(f"{DEMOS}Вопрос: {q}\nОтвет:", 12, ("\n",)) for q in QUESTIONS]


@pytest.fixture(scope="module")
def model(tiny_gpt2_dir):
    return HFCausalLM(str(tiny_gpt2_dir))


def sorted_text(kind):
    return next(key for k, _, key in KINDS if k is kind)


def test_a_request_counts_the_tokens_it_does_not_share_with_the_one_before_it(model):
    first, second = sorted([GENERATED[0], GENERATED[1]], key=sorted_text(Generation))
    counted = request_tokens([([first, second], sorted_text(Generation))], model.tokenizer)
    whole = len(model._tokens(first.prompt))
    shared = len(model._tokens(f"{DEMOS}Вопрос:"))
    assert counted[first] == Tokens(whole, 12)  # the first of its part: all of it, and its budget
    # the second: its own question, from the space before its first word (tokens start at spaces)
    assert counted[second] == Tokens(len(model._tokens(second.prompt)) - shared, 12)
    assert counted[second].prompt < whole / 3


def test_counted_log_likelihood_tokens_are_those_the_prefix_tree_forwards(model):
    part = sorted(SCORED, key=sorted_text(Loglikelihood))
    counted = sum(t.shown for t in request_tokens([(part, sorted_text(Loglikelihood))], model.tokenizer).values())
    before = model.stats.forwarded_tokens
    model.loglikelihood(part)
    forwarded = model.stats.forwarded_tokens - before
    # the tree forwards the start token too, but never a sequence's last token (its log-probability comes
    # from the position before it): one fewer per sequence, one more in all
    assert abs(counted - (forwarded + len(part) - 1)) <= 0.05 * counted


def test_without_a_tokenizer_tokens_are_estimated_from_the_text_s_length():
    a, b = Loglikelihood("Мама мыла раму", " утром"), Loglikelihood("Мама мыла раму", " вечером")
    counted = request_tokens([([a, b], sorted_text(Loglikelihood))], tokenizer=None)
    assert counted[a].prompt == round(len("Мама мыла раму утром") / CHARS_PER_TOKEN)
    assert counted[b].prompt == round(len("вечером") / CHARS_PER_TOKEN)


def test_a_pooled_mixed_run_counts_every_request_s_tokens_up_front(model, monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)  # a line at every finished batch
    requests = [*SCORED, *GENERATED]
    Engine(model).compute(requests, "pooled")
    scored = request_tokens(
        [(sorted(SCORED, key=sorted_text(Loglikelihood)), sorted_text(Loglikelihood))], model.tokenizer
    )
    generated = request_tokens(
        [(sorted(GENERATED, key=sorted_text(Generation)), sorted_text(Generation))], model.tokenizer
    )
    prompts = sum(t.prompt for t in [*scored.values(), *generated.values()])
    total = prompts + 12 * len(GENERATED)  # prompts' unshared tokens and the generations' budgets
    lines = capsys.readouterr().err.splitlines()
    counts = [
        tuple(int(n.replace(",", "")) for n in re.search(r"([\d,]+)/([\d,]+) tokens", line).groups()) for line in lines
    ]
    assert counts and all(shown_total == total for _, shown_total in counts)  # known from the first line on
    assert counts[-1][0] == total
