"""The differential suite: rueval and lm-evaluation-harness 0.4.13 itself (`--model hf`, in its own
virtualenv) run the same real lm-eval task files with the same briefly trained tiny model, and must agree:
per-request log-likelihoods within 1e-4 nats, equal filtered generations, every per-sample metric and
every task and group aggregate within 1e-6; a metric that is a smooth function of log-likelihoods
(perplexities, truthfulqa_mc2's probability mass) within the 2e-4 relative that the log-likelihoods'
own tolerance allows it (differential_compare.py).

The task files are copied at test time from the installed lm-eval's `lm_eval/tasks/`; only their dataset
lines are changed, to read small JSON Lines made here in each task's own field layout
(differential_tasks.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import partial
from pathlib import Path

import pytest
from differential_compare import Output, differences, read_output
from differential_tasks import (
    TaskFiles,
    arc,
    belebele,
    global_mmlu,
    gsm8k,
    hellaswag,
    lambada,
    mgsm,
    multiblimp,
    training_texts,
    triviaqa,
    truthfulqa,
    wikitext,
    write_task_folder,
    xstorycloze,
    xwinograd,
)
from support import LM_EVAL_PYTHON, lm_eval_missing, require, require_modules

from rueval.models.backends.tiny import train_tiny_model

XSTORYCLOZE = ("ar", "en", "es", "eu", "hi", "id", "my", "ru", "sw", "te", "zh")
MMLU_SUBJECTS = ("abstract_algebra", "anatomy", "business_ethics", "econometrics", "formal_logic")
MMLU_GROUPS = ("", "_humanities", "_other", "_social_sciences", "_stem")

# The real task files: lm-eval's folder, the files copied from it, each task's documents, what is asked for.
# fmt: off
TASK_FILES = (
    TaskFiles("xstorycloze", ("_xstorycloze.yaml", *(f"default_{lang}.yaml" for lang in XSTORYCLOZE)),
              {f"xstorycloze_{lang}": partial(xstorycloze, lang, i) for i, lang in enumerate(XSTORYCLOZE)},
              ("xstorycloze",), "a group aggregate weighted by size; include chain; xstorycloze_ru"),
    TaskFiles("global_mmlu/full/ru",
              ("_ru_template_yaml", "utils.py", *(f"_global_mmlu_full_ru{g}.yaml" for g in MMLU_GROUPS),
               *(f"global_mmlu_full_ru_{s}.yaml" for s in MMLU_SUBJECTS)),
              {f"global_mmlu_full_ru_{s}": partial(global_mmlu, s, i) for i, s in enumerate(MMLU_SUBJECTS)},
              ("global_mmlu_full_ru",), "groups of groups over tags; !function process_docs; Russian"),
    TaskFiles("belebele", ("_default_template_yaml", "belebele_rus_Cyrl.yaml"), {"belebele_rus_Cyrl": belebele},
              ("belebele_rus_Cyrl",), "include of a template; acc_norm; Russian"),
    TaskFiles("multiblimp", ("_template_yaml", "multiblimp_rus.yaml"), {"multiblimp_rus": multiblimp},
              ("multiblimp_rus",), "empty context and target delimiter; Russian"),
    TaskFiles("xwinograd", ("xwinograd_common_yaml", "xwinograd_ru.yaml", "utils.py"), {"xwinograd_ru": xwinograd},
              ("xwinograd_ru",), "a context per option (!function doc_to_text, doc_to_choice); Russian"),
    TaskFiles("mgsm/direct", ("direct_yaml", "mgsm_direct_ru.yaml"), {"mgsm_direct_ru": mgsm},
              ("mgsm_direct_ru",), "generate_until; remove_whitespace and regex filters; Russian"),
    TaskFiles("gsm8k", ("gsm8k.yaml",), {"gsm8k": gsm8k},
              ("gsm8k",), "5-shot generate_until; regex + take_first; exact_match regexes_to_ignore, ignore_case"),
    TaskFiles("triviaqa", ("default.yaml",), {"triviaqa": triviaqa},
              ("triviaqa",), "generate_until against a list of aliases; exact_match ignore_punctuation"),
    TaskFiles("wikitext", ("wikitext.yaml", "preprocess_wikitext.py"), {"wikitext": wikitext},
              ("wikitext",), "loglikelihood_rolling; !function doc_to_target and process_results"),
    TaskFiles("lambada", ("lambada_openai.yaml",), {"lambada_openai": lambada},
              ("lambada_openai",), "loglikelihood; perplexity aggregation"),
    TaskFiles("truthfulqa", ("truthfulqa_mc1.yaml", "truthfulqa_mc2.yaml", "utils.py"),
              {"truthfulqa_mc1": truthfulqa, "truthfulqa_mc2": truthfulqa},
              ("truthfulqa_mc1", "truthfulqa_mc2"), "a task including a task; !function process_results"),
    TaskFiles("hellaswag", ("hellaswag.yaml", "utils.py"), {"hellaswag": hellaswag},
              ("hellaswag",), "!function process_docs; acc_norm"),
    TaskFiles("arc", ("arc_easy.yaml", "arc_challenge.yaml"), {"arc_easy": arc, "arc_challenge": arc},
              ("arc_easy", "arc_challenge"), "a task including a task"),
)
# fmt: on
ASKED = [name for entry in TASK_FILES for name in entry.asked]
OUTPUT_TYPES = {"multiple_choice", "loglikelihood", "loglikelihood_rolling", "generate_until"}
NOT_TIED_NATS = 1e-2  # the reference's best two options of every document are further apart than this


def offline(cache: Path) -> dict[str, str]:
    """A tool reads the local JSON Lines through `datasets`, into a fresh cache of its own, offline; and
    torch in one thread (the model is 64 wide: a second thread only waits, much longer on shared cores)."""
    return {"HF_DATASETS_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture
def one_torch_thread():
    """``offline``'s one thread for the torch of this process (rueval's side, the training)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def run_lm_eval(model: Path, tasks: Path, out: Path, env: dict[str, str]) -> Output:
    """The reference: lm-eval's own command line and `--model hf`, in lm-eval's virtualenv, all tasks at once."""
    command = [
        *(str(LM_EVAL_PYTHON), "-m", "lm_eval", "--model", "hf"),
        *("--model_args", f"pretrained={model},dtype=float32", "--device", "cpu", "--batch_size", "1"),
        *("--include_path", str(tasks), "--tasks", ",".join(ASKED), "--log_samples", "--output_path", str(out)),
        *("--seed", "0,1234,1234,1234"),  # lm-eval's defaults, which rueval takes too unless given --seed
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, **env, "PYTHONPATH": ""}, timeout=900
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return read_output(out)


def run_rueval(cli, model: Path, tasks: Path, out: Path) -> Output:
    """rueval, spelled as lm-eval is (consenting to the files' !function code): it writes lm-eval's results
    document and sample logs."""
    args = ("--model", "hf", "--model_args", f"pretrained={model}", "--include_path", tasks, "--tasks", ",".join(ASKED))
    result = cli("run", *args, "--trust-task-code", "--log_samples", "-o", out, "--batch-size", "1")
    assert result.exit_code == 0, result.output
    return read_output(out)


@pytest.mark.slow  # trains a model, runs lm-eval's interpreter and rueval on 29 tasks
def test_rueval_and_lm_eval_agree_on_real_task_files(cli, tiny_gpt2_dir, tmp_path, monkeypatch, one_torch_thread):
    require_modules("lm_eval", extra="lm-eval")
    missing = lm_eval_missing("lm_eval", "torch", "transformers")
    require(missing is None, missing or "")
    import lm_eval.tasks

    documents = write_task_folder(TASK_FILES, Path(lm_eval.tasks.__file__).parent, tmp_path / "tasks")
    model = shutil.copytree(tiny_gpt2_dir, tmp_path / "model")
    train_tiny_model(model, training_texts(documents))
    reference = run_lm_eval(model, tmp_path / "tasks", tmp_path / "lm-eval", offline(tmp_path / "datasets-lm-eval"))
    env = offline(tmp_path / "datasets-rueval")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # this process may have imported datasets already, which reads its cache folder once
    monkeypatch.setattr("datasets.config.HF_DATASETS_CACHE", Path(env["HF_DATASETS_CACHE"]))
    candidate = run_rueval(cli, model, tmp_path / "tasks", tmp_path / "rueval")

    found = differences(reference, candidate)
    assert not found, f"{len(found)} disagreements:\n" + "\n".join(found[:40])

    configs = reference.results["configs"]
    assert set(configs) == set(documents)  # every task the files define ran, and only those
    assert {c["output_type"] for c in configs.values()} == OUTPUT_TYPES
    assert {c["dataset_path"] for c in configs.values()} == {"json"}  # the local data, never the Hub's
    assert set(reference.results["groups"]) >= {"xstorycloze", "global_mmlu_full_ru"}
    for subject in MMLU_SUBJECTS:  # process_docs kept the subject's documents, not the other subject's
        task = f"global_mmlu_full_ru_{subject}"
        kept = [doc for doc in documents[task]["test"] if doc["subject"] == subject]
        assert [s["doc"] for s in sorted(reference.samples[task], key=lambda s: s["doc_id"])] == kept
    for task, samples in reference.samples.items():
        assert samples, task
        if configs[task]["output_type"] == "multiple_choice":
            for sample in samples:
                best, second = sorted((float(r[0]) for r in sample["filtered_resps"]), reverse=True)[:2]
                assert best - second > NOT_TIED_NATS, f"{task} doc {sample['doc_id']}: options near-tied"


def test_a_disagreement_names_task_document_and_both_values():
    results = {"results": {}, "configs": {"t": {"output_type": "multiple_choice"}}}

    def run(resps: list, acc: float) -> Output:
        sample = {"doc_id": 3, "filter": "none", "doc": {}, "arguments": {}, "target": 0, "metrics": ["acc"]}
        return Output(results, {"t": [{**sample, "resps": resps, "filtered_resps": [r[0] for r in resps], "acc": acc}]})

    resps = [[["-1.5", "False"]], [["-2.0", "False"]]]
    within = [[["-1.50005", "False"]], [["-2.0", "False"]]]
    beyond = [[["-1.5", "False"]], [["-2.0002", "False"]]]

    assert differences(run(resps, 1.0), run(within, 1.0)) == []
    assert differences(run(resps, 1.0), run(beyond, 0.0)) == [
        f"t doc 3 filter none resps: lm-eval {resps!r}, rueval {beyond!r}",
        f"t doc 3 filter none filtered_resps: lm-eval {[r[0] for r in resps]!r}, rueval {[r[0] for r in beyond]!r}",
        "t doc 3 filter none acc: lm-eval 1.0, rueval 0.0",
    ]


def test_a_metric_smooth_in_log_likelihoods_moves_with_them_and_a_decision_does_not():
    results = {"results": {}, "configs": {"t": {"output_type": "multiple_choice"}}}

    def run(mass: float, acc: float) -> Output:
        sample = {"doc_id": 0, "filter": "none", "doc": {}, "arguments": {}, "target": 0, "metrics": ["mass", "acc"]}
        resps = [[["-1.5", "False"]]]
        return Output(
            results, {"t": [{**sample, "resps": resps, "filtered_resps": resps[0], "mass": mass, "acc": acc}]}
        )

    assert differences(run(0.2254669, 1.0), run(0.2254656, 1.0)) == []  # as e^(2e-5 nats) moves it
    assert differences(run(0.2254669, 1.0), run(0.226, 1.0)) == [
        "t doc 0 filter none mass: lm-eval 0.2254669, rueval 0.226"
    ]
    assert differences(run(0.2254669, 1.0), run(0.2254669, 0.9999)) == [
        "t doc 0 filter none acc: lm-eval 1.0, rueval 0.9999"
    ]
