"""RuevalLM: rueval's engine as an lm-evaluation-harness model. lm-eval 0.4.13's own simple_evaluate runs
task files written here over local JSON Lines, once with RuevalLM and once with lm-eval's HFLM on the same
weights: every sample's responses and every metric agree."""

from __future__ import annotations

import json
import math

import pytest
from support import require_modules

require_modules("torch", "transformers", "lm_eval", extra="lm-eval")

import lm_eval
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM
from lm_eval.tasks import TaskManager

from rueval.core.errors import RuevalError
from rueval.models.backends.lm_eval_lm import RuevalLM
from rueval.models.backends.tiny import build_tiny_gpt2
from rueval.models.base import Generation

QUESTIONS = [
    ("Какого цвета снег?", ["белый", "зелёный", "синий"], 0),
    ("Сколько ног у паука?", ["шесть", "восемь", "четыре"], 1),
    ("Что пьёт кошка?", ["бензин", "чай", "молоко"], 2),
    ("Где живёт белый медведь?", ["в Арктике", "в пустыне", "в лесу"], 0),
    ("Какое время года после зимы?", ["осень", "весна", "лето"], 1),
    ("Чем пишут на доске?", ["мелом", "ложкой", "ногой"], 0),
]
TEXTS = ["Кошка спит на тёплом подоконнике.", "Поезд прибыл на вокзал с опозданием.", "Дети слепили снеговика."]
TASKS = {
    "rueval_mc": """
output_type: multiple_choice
doc_to_text: "Вопрос: {{question}}\\nОтвет:"
doc_to_choice: "{{choices}}"
doc_to_target: label
num_fewshot: 2
fewshot_split: test
metric_list:
  - metric: acc
  - metric: acc_norm
""",
    "rueval_ppl": """
output_type: loglikelihood_rolling
doc_to_text: ""
doc_to_target: "{{text}}"
metric_list:
  - metric: word_perplexity
  - metric: byte_perplexity
  - metric: bits_per_byte
""",
    "rueval_gen": """
output_type: generate_until
doc_to_text: "Вопрос: {{question}}\\nОтвет:"
doc_to_target: "{{choices[label]}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 8
  do_sample: false
metric_list:
  - metric: exact_match
""",
}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny GPT-2 whose tokenizer adds a BOS of its own (so the start-token policy matters)."""
    return str(build_tiny_gpt2(tmp_path_factory.mktemp("tiny-bos"), adds_bos=True))


@pytest.fixture(scope="module")
def task_manager(tmp_path_factory):
    """The three task files, each over its own JSON Lines, in an include folder."""
    folder = tmp_path_factory.mktemp("tasks")
    qa = [{"question": q, "choices": c, "label": label} for q, c, label in QUESTIONS]
    rows = {"rueval_mc": qa, "rueval_gen": qa, "rueval_ppl": [{"text": text} for text in TEXTS]}
    for name, body in TASKS.items():
        data = folder / f"{name}.jsonl"
        data.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows[name]), encoding="utf-8")
        head = f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\ntest_split: test\n"
        (folder / f"{name}.yaml").write_text(head + body, encoding="utf-8")
    return TaskManager(include_path=str(folder))


def evaluate(model, task_manager) -> dict:
    return lm_eval.simple_evaluate(
        model=model, tasks=list(TASKS), task_manager=task_manager, log_samples=True, bootstrap_iters=0
    )


def assert_close(ours, theirs, tolerance: float) -> None:
    """Nested responses: numbers within ``tolerance``, everything else equal."""
    if isinstance(theirs, list | tuple):
        assert isinstance(ours, list | tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert_close(a, b, tolerance)
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, abs=tolerance)
    else:
        assert ours == theirs


@pytest.mark.parametrize(("bos", "add_bos_token"), [("tokenizer", None), ("false", False)])
def test_simple_evaluate_with_rueval_equals_lm_evals_hflm_sample_by_sample(model_dir, task_manager, bos, add_bos_token):
    ours = evaluate(RuevalLM.from_spec(f"hf:{model_dir}", bos=bos, batch_size=1), task_manager)
    harness = HFLM(pretrained=model_dir, add_bos_token=add_bos_token, batch_size=1, device="cpu")
    theirs = evaluate(harness, task_manager)
    for task in TASKS:
        samples = {s["doc_id"]: s for s in ours["samples"][task]}
        assert len(samples) == len(theirs["samples"][task]) > 0
        for sample in theirs["samples"][task]:
            assert_close(samples[sample["doc_id"]]["resps"], sample["resps"], 1e-4)
            assert_close(samples[sample["doc_id"]]["filtered_resps"], sample["filtered_resps"], 1e-4)
        metrics = {key: value for key, value in theirs["results"][task].items() if isinstance(value, float)}
        assert metrics and all(not math.isnan(value) for value in metrics.values())
        for key, value in metrics.items():
            assert ours["results"][task][key] == pytest.approx(value, rel=1e-6, abs=1e-6), (task, key)
    texts = [s["resps"][0][0] for s in ours["samples"]["rueval_gen"]]
    assert any(texts), "the generations are not all empty"


def test_a_second_run_on_the_same_request_cache_computes_nothing(model_dir, task_manager):
    first = RuevalLM.from_spec(f"hf:{model_dir}", bos="tokenizer", batch_size=1)
    evaluate(first, task_manager)
    assert first.engine.computed > 0
    again = RuevalLM.create_from_arg_string(f"model=hf:{model_dir},bos=tokenizer,batch_size=1")
    results = evaluate(again, task_manager)
    assert again.engine.computed == 0 and results["results"]["rueval_mc"]["acc,none"] >= 0


def test_the_registered_name_and_model_args_run_through_lm_evals_own_loader(model_dir, task_manager):
    results = lm_eval.simple_evaluate(
        model="rueval",
        model_args=f"model=hf:{model_dir},bos=true,cache=off",
        tasks=["rueval_ppl"],
        task_manager=task_manager,
        batch_size=1,
        bootstrap_iters=0,
    )
    assert results["config"]["rueval_model"].endswith(" bos=true")
    assert results["results"]["rueval_ppl"]["word_perplexity,none"] > 1


def test_gen_kwargs_map_to_rueval_generation_and_others_are_refused(model_dir):
    lm = RuevalLM.from_spec(f"hf:{model_dir}", bos="tokenizer", cache="off")
    eos = lm.engine.model.tokenizer.eos_token
    assert lm.generation("Вопрос", {"until": "\n\n", "max_gen_toks": 5}) == Generation("Вопрос", 5, ("\n\n", eos))
    assert lm.generation("Вопрос", {}) == Generation("Вопрос", 256, (eos,))  # HFLM's defaults
    sampled = lm.generation("Вопрос", {"do_sample": True, "temperature": 0.7, "top_p": 0.9, "seed": 3})
    assert (sampled.temperature, sampled.top_p, sampled.seed) == (0.7, 0.9, 3)
    with pytest.raises(RuevalError, match="gen_kwargs top_k, num_beams: rueval's lm-eval model takes until"):
        lm.generation("Вопрос", {"top_k": 5, "num_beams": 2})
    with pytest.raises(RuevalError, match="does not apply chat templates"):
        lm.apply_chat_template([{"role": "user", "content": "Привет"}])
    with pytest.raises(RuevalError, match="unknown pretrained; it takes: model, device"):
        RuevalLM.create_from_arg_string(f"pretrained={model_dir},model=hf:{model_dir}")


def test_an_empty_rolling_text_scores_zero_as_lm_evals_windows_give_it(tiny_gpt2_dir):
    lm = RuevalLM.from_spec(f"hf:{tiny_gpt2_dir}", bos="tokenizer", cache="off")
    harness = HFLM(pretrained=str(tiny_gpt2_dir), batch_size=1, device="cpu")
    requests = [Instance("loglikelihood_rolling", {}, (text,), 0) for text in ("", "Ёжик")]
    assert lm.loglikelihood_rolling(requests) == pytest.approx(harness.loglikelihood_rolling(requests), abs=1e-4)
