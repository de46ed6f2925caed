"""--bos: hf: tokenizes as lm-eval's HFLM under each of its start-token settings, checked against lm-eval
0.4.13's own HFLM on the same weights; `always` (hf:'s own) keeps its identity and cache keys."""

from __future__ import annotations

import hashlib
import json

import pytest
from support import require_modules

require_modules("torch", "transformers", "lm_eval", extra="lm-eval")

from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM

from rueval.core.errors import RuevalError
from rueval.models.backends.hf import HFCausalLM
from rueval.models.backends.tiny import BOS, build_tiny_gpt2
from rueval.models.base import Generation, Loglikelihood
from rueval.models.cache import request_key
from rueval.models.factory import ModelOptions, open_engine

WINDOW = 96  # the Llama-style model's: one context below is longer, so both tools cut it
DEMOS = "Вопрос: Где живёт белый медведь? Ответ: в Арктике\n\n"
REQUESTS = [  # (context, continuation), as lm-eval's loglikelihood takes them
    (DEMOS + "Вопрос: Какого цвета снег? Ответ:", " белый"),
    (DEMOS + "Вопрос: Что пьёт кошка? Ответ: ", "молоко"),  # the trailing space moves to the continuation
    ("Кошка спит ", " на тёплом подоконнике"),
    ("", "Ёжик в тумане"),  # an empty context: the prefix token before the continuation
    ("", f"{BOS}Поезд прибыл"),  # ... unless the continuation starts with it (the BOS-adding model's)
    ("Река " * 60, "замёрзла в начале декабря"),  # longer than WINDOW: the oldest tokens dropped
    ("Короткий", " и длинное продолжение, в котором много разных слов"),
]
TEXTS = ["Бабушка испекла яблочный пирог.", f"{BOS}Оркестр сыграл симфонию", "Дети слепили снеговика во дворе"]
PROMPTS = ["Вопрос: Какого цвета снег?\nОтвет:", "Кошка спит ", f"{BOS}Самолёт взлетел"]
POLICIES = [("tokenizer", None), ("true", True), ("false", False)]


@pytest.fixture(scope="module")
def bos_adding_dir(tmp_path_factory):
    """A tiny GPT-2 whose tokenizer puts a BOS of its own before every text, as Llama's does."""
    return build_tiny_gpt2(tmp_path_factory.mktemp("llama-style"), n_positions=WINDOW, adds_bos=True)


@pytest.fixture(params=["gpt2-style", "llama-style"])
def model_dir(request, tiny_gpt2_dir, bos_adding_dir):
    return str(tiny_gpt2_dir if request.param == "gpt2-style" else bos_adding_dir)


def lm_eval_scores(harness: HFLM, kind: str, args: list[tuple]) -> list:
    """lm-eval's answers, one request per call: within one call its one-token-continuation lookup answers
    a request from another's logits when their token sequences meet, at another position (lm-eval's own)."""
    return [getattr(harness, kind)([Instance(kind, {}, arg, 0)])[0] for arg in args]


@pytest.mark.parametrize(("policy", "add_bos_token"), POLICIES)
def test_each_policy_scores_and_generates_as_lm_evals_hflm(model_dir, policy, add_bos_token):
    harness = HFLM(pretrained=model_dir, add_bos_token=add_bos_token, batch_size=1, device="cpu")
    ours = HFCausalLM(model_dir, batch_size=1, bos=policy)
    assert ours.max_length == harness.max_length

    expected = lm_eval_scores(harness, "loglikelihood", REQUESTS)
    got = ours.loglikelihood([Loglikelihood(*pair) for pair in REQUESTS])
    for pair, (logprob, greedy), result in zip(REQUESTS, expected, got, strict=True):
        assert result.logprob == pytest.approx(logprob, abs=1e-4), pair
        assert result.greedy == greedy

    rolling = lm_eval_scores(harness, "loglikelihood_rolling", [(text,) for text in TEXTS])
    got = ours.loglikelihood([Loglikelihood("", text, rolling=True) for text in TEXTS])
    assert [r.logprob for r in got] == pytest.approx(rolling, abs=1e-4)

    stop = ["\n", harness.tok_decode(harness.eot_token_id, skip_special_tokens=False)]  # HFLM adds EOS's text
    kwargs = {"until": ["\n"], "max_gen_toks": 12, "do_sample": False}
    expected_texts = lm_eval_scores(harness, "generate_until", [(prompt, dict(kwargs)) for prompt in PROMPTS])
    assert ours.generate([Generation(prompt, 12, tuple(stop)) for prompt in PROMPTS]) == expected_texts


def test_the_policies_tokenize_differently_where_lm_eval_does(bos_adding_dir):
    """Not a vacuous comparison: on the BOS-adding tokenizer the context starts with its BOS under
    tokenizer and true, not under false; hf:'s own puts its start token first either way."""
    request = Loglikelihood("Кошка спит", " на окне")
    starts = {policy: HFCausalLM(str(bos_adding_dir), bos=policy).encode(request)[0][:2] for policy, _ in POLICIES}
    model = HFCausalLM(str(bos_adding_dir))
    bos = model.tokenizer.bos_token_id
    assert starts["tokenizer"][0] == starts["true"][0] == bos != starts["false"][0]
    assert model.encode(request)[0][0] == bos
    rolling = HFCausalLM(str(bos_adding_dir), bos="tokenizer").encode(Loglikelihood("", "Ёжик", rolling=True))[0]
    assert rolling[:2] == [bos, bos]  # lm-eval's rolling text keeps the tokenizer's BOS after its prefix token


def test_a_rolling_text_longer_than_the_window_is_one_error(bos_adding_dir):
    model = HFCausalLM(str(bos_adding_dir), bos="tokenizer")
    with pytest.raises(RuevalError, match=f"longer than the model's window of {WINDOW}; rueval does not compute"):
        model.loglikelihood([Loglikelihood("", "Река " * 100, rolling=True)])


def test_the_policy_is_part_of_the_models_cache_identity_and_always_keeps_todays(tiny_gpt2_dir):
    always, harness = HFCausalLM(str(tiny_gpt2_dir)), HFCausalLM(str(tiny_gpt2_dir), bos="tokenizer")
    assert harness.identity == always.identity + " bos=tokenizer"
    assert " bos=" not in always.identity
    request = Loglikelihood("Кошка", " спит")
    assert request_key(always.identity, request) != request_key(harness.identity, request)
    # a request that is not rolling keys as it did before the field existed: caches stay valid
    fields = [always.identity, "Loglikelihood", {"context": "Кошка", "continuation": " спит"}]
    before = hashlib.sha256(json.dumps(fields, ensure_ascii=False, sort_keys=True).encode()).hexdigest()
    assert request_key(always.identity, request) == before
    assert request_key(always.identity, Loglikelihood("", " спит", rolling=True)) != request_key(
        always.identity, Loglikelihood("", " спит")
    )


def test_a_policy_other_than_always_for_another_backend_is_one_error():
    with pytest.raises(RuevalError, match="--bos tokenizer: only hf: models tokenize as lm-eval's HFLM, not openai:"):
        open_engine("openai:m", ModelOptions(bos="tokenizer", base_url="http://localhost:1/v1", cache="off"))
    with pytest.raises(RuevalError, match="--bos maybe: expected one of always, tokenizer, true, false"):
        open_engine("hf:m", ModelOptions(bos="maybe"))
