"""Fine-tuned encoders (-m finetune:...) on a tiny random BERT built here: learning, every task's head,
LiDiRus on TERRa's model, saved models, resume after a kill, two processes under torchrun."""

from __future__ import annotations

import json
import os
import runpy
import signal
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from rueval.core.errors import RuevalError
from rueval.data import load_task_data, open_data
from rueval.solvers import make_solver
from rueval.solvers.finetune import FinetuneOptions, FinetuneSolver
from rueval.solvers.finetune.heads import head_for
from rueval.tasks import TASKS, Example, resolve_tasks

pytestmark = pytest.mark.slow  # trains models, in this process and in launched ones

# Fine-tunes on a separable task: label entailment <=> the hypothesis ends with a marker word.
# Run in subprocesses (killed, or under torchrun) and in this process, so it is a script.
SCRIPT = """
import json, random, sys
from rueval.models.backends.tiny import sample_texts
from rueval.solvers.finetune import FinetuneOptions, FinetuneSolver
from rueval.tasks import TASKS, Example

def separable(n, seed):
    rng = random.Random(seed)
    texts = [t for t in sample_texts() if 20 < len(t) < 200]
    examples = []
    for i in range(n):
        label = rng.choice(("entailment", "not_entailment"))
        hypothesis = rng.choice(texts) + (" Байкал" if label == "entailment" else "")
        examples.append(Example(idx=i, fields={"premise": rng.choice(texts), "hypothesis": hypothesis}, label=label))
    return examples

if __name__ == "__main__":
    encoder, work_dir, out, epochs, checkpoint_steps = sys.argv[1:]
    options = FinetuneOptions(
        epochs=float(epochs), lr=1e-3, batch_size=8, max_length=64, heldout=0.0, checkpoint_steps=int(checkpoint_steps)
    )
    solver = FinetuneSolver(encoder, options, work_dir=work_dir)
    solver.fit(TASKS["terra"], separable(160, 0))
    test = separable(60, 1)
    predictions = solver.predict(TASKS["terra"], test)
    if int(__import__("os").environ.get("RANK", "0")) == 0:
        report = solver.training_report(TASKS["terra"])
        gold = [e.label for e in test]
        json.dump({"predictions": predictions, "gold": gold, "report": report}, open(out, "w"))
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "finetune_script.py"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def _separable(script: Path, n: int, seed: int) -> list[Example]:
    return runpy.run_path(str(script))["separable"](n, seed)


def _run(script: Path, *args: object, torchrun: bool = False) -> subprocess.Popen:
    launcher = (
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"] if torchrun else [sys.executable]
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([*launcher, str(script), *map(str, args)], env=env, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> None:
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]


def _accuracy(result: dict) -> float:
    return sum(p == g for p, g in zip(result["predictions"], result["gold"], strict=True)) / len(result["gold"])


def test_learns_a_separable_task_well_above_chance(tiny_bert, script, tmp_path):
    task = TASKS["terra"]
    options = FinetuneOptions(epochs=8, lr=1e-3, batch_size=8, max_length=64, heldout=0.1, checkpoint_steps=20)
    solver = FinetuneSolver(str(tiny_bert), options, work_dir=tmp_path / "work")
    solver.fit(task, _separable(script, 160, 0))
    test = _separable(script, 60, 1)
    predictions = solver.predict(task, test)
    accuracy = sum(p == e.label for p, e in zip(predictions, test, strict=True)) / len(test)
    majority = max(sum(e.label == label for e in test) for label in task.labels) / len(test)
    assert accuracy >= 0.75 and accuracy > majority + 0.15
    report = solver.training_report(task)
    assert report["trained_now"] and report["train_examples"] + report["heldout_examples"] == 160
    assert report["heldout_examples"] > 0 and report["best_heldout_accuracy"] is not None
    assert report["final_train_loss"] < 0.69  # below chance's cross-entropy, ln 2
    assert report["train_examples_per_s"] > 0 and report["peak_rss_mb"] > 0


def test_every_head_predicts_every_task_on_the_samples(tiny_bert, tmp_path):
    source = open_data(None)
    solver = make_solver(f"finetune:{tiny_bert}", work_dir=str(tmp_path / "work"), ft_epochs=1, ft_heldout=0.2)
    for task in resolve_tasks("all"):  # the bundled samples' tasks
        data = load_task_data(source, task, None, None)
        if task.name in ("multiq", "chegeka"):
            with pytest.raises(RuevalError, match="no classification form"):
                solver.fit(task, data.train.examples)
            continue
        solver.fit(task, data.train.examples[:12])
        predictions = solver.predict(task, iter(data.eval.examples))
        assert len(predictions) == len(data.eval.examples), task.name
        for prediction, example in zip(predictions, data.eval.examples, strict=True):
            if task.kind == "multilabel":
                assert isinstance(prediction, tuple) and len(prediction) == len(task.categories)
                assert set(prediction) <= {0, 1}
            elif task.kind == "classification":
                assert prediction in task.labels, task.name
            else:  # RuCoS: one of the passage's entities
                assert prediction in example.candidates


def test_heads_mark_the_spans_jiant_marks():
    rwsd = Example(
        idx=0,
        fields={
            "text": "Шкаф не прошёл в дверной проём, потому что он был слишком широким.",
            "target": {"span1_text": "Шкаф", "span1_index": 0, "span2_text": "он был", "span2_index": 8},
        },
    )
    assert head_for(TASKS["rwsd"]).pairs(rwsd) == [
        ("*Шкаф* не прошёл в дверной проём, потому что [он был] слишком широким.", None)
    ]
    russe = Example(
        idx=0,
        fields={"word": "лук", "sentence1": "Взошёл лук.", "sentence2": "Тетива лука.", "start1": 7, "end1": 10},
    )
    assert head_for(TASKS["russe"]).pairs(russe) == [("Взошёл *лук*.", "Тетива *лук*а.")]
    parus = Example(idx=0, fields={"premise": "Пол мокрый.", "choice1": "А.", "choice2": "Б.", "question": "cause"})
    pairs = head_for(TASKS["parus"]).pairs(parus)
    assert [second for _, second in pairs] == ["А.", "Б."] and pairs[0][0].startswith("Пол мокрый. ")


def test_lidirus_reuses_terra_model_and_a_saved_model_needs_no_training(tiny_bert, script, tmp_path):
    terra, lidirus = TASKS["terra"], TASKS["lidirus"]
    train, test = _separable(script, 40, 0), _separable(script, 20, 1)
    renamed = {"premise": "sentence1", "hypothesis": "sentence2"}
    as_lidirus = [replace(e, fields={renamed[k]: v for k, v in e.fields.items()}) for e in (*train, *test)]
    options = FinetuneOptions(epochs=1, lr=1e-3, batch_size=8, max_length=64, heldout=0.0)
    saved = tmp_path / "saved"
    solver = FinetuneSolver(str(tiny_bert), options, work_dir=tmp_path / "work", save_dir=saved)
    solver.fit(terra, train)
    expected = solver.predict(terra, test)
    solver.fit(lidirus, as_lidirus[: len(train)])
    assert solver.predict(lidirus, as_lidirus[len(train) :]) == expected
    assert not solver.training_report(lidirus)["trained_now"]
    # A second run over the same work folder loads the finished model.
    again = FinetuneSolver(str(tiny_bert), options, work_dir=tmp_path / "work")
    again.fit(terra, train)
    assert not again.training_report(terra)["trained_now"] and again.predict(terra, test) == expected
    # The saved folder is a fine-tuned encoder: it predicts without training, and cannot do other tasks.
    from_saved = make_solver(f"finetune:{saved}", work_dir=str(tmp_path / "other"), ft_max_length=64)
    assert from_saved.identity != solver.identity
    from_saved.fit(lidirus, [])
    assert from_saved.predict(lidirus, as_lidirus[len(train) :]) == expected
    with pytest.raises(RuevalError, match="not for rcb"):
        from_saved.fit(TASKS["rcb"], [])


def test_options_are_json_and_checked(tiny_bert, tmp_path):
    options = FinetuneOptions()
    assert json.loads(json.dumps(asdict(options))) == asdict(options)
    assert (options.lr, options.max_length, options.batch_size) == (1e-5, 256, 4)  # jiant-russian's defaults
    with pytest.raises(RuevalError, match="heldout"):
        FinetuneOptions(heldout=1.0)
    with pytest.raises(RuevalError, match="precision"):
        FinetuneOptions(precision="fp8")
    unlabelled = [Example(idx=7, fields={"premise": "а", "hypothesis": "б"})]
    with pytest.raises(RuevalError, match="train example 7 has no label"):
        FinetuneSolver(str(tiny_bert), work_dir=tmp_path).fit(TASKS["terra"], unlabelled)
    solver = FinetuneSolver(str(tiny_bert), FinetuneOptions(precision="fp16"), work_dir=tmp_path)
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(RuevalError, match="needs a GPU"):
            solver.fit(TASKS["terra"], [Example(idx=0, fields={"premise": "а", "hypothesis": "б"}, label="entailment")])


def test_a_killed_training_resumes_to_the_same_predictions(tiny_bert, script, tmp_path):
    args = (tiny_bert, tmp_path / "killed", tmp_path / "resumed.json", 3, 10)
    process = _run(script, *args)
    deadline = time.monotonic() + 300
    while not list((tmp_path / "killed").glob("*/checkpoints/checkpoint-*/trainer_state.json")):
        assert process.poll() is None and time.monotonic() < deadline, "training ended before a checkpoint"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (tmp_path / "resumed.json").exists()
    _finish(_run(script, *args))
    _finish(_run(script, tiny_bert, tmp_path / "whole", tmp_path / "whole.json", 3, 10))
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    whole = json.loads((tmp_path / "whole.json").read_text())
    assert resumed["report"]["resumed_from_step"] > 0 and whole["report"]["resumed_from_step"] == 0
    assert resumed["report"]["steps"] == whole["report"]["steps"]
    assert resumed["predictions"] == whole["predictions"]
    assert resumed["report"]["final_train_loss"] == pytest.approx(whole["report"]["final_train_loss"], abs=1e-6)


def test_two_processes_under_torchrun_train_and_predict_the_same_examples(tiny_bert, script, tmp_path):
    _finish(_run(script, tiny_bert, tmp_path / "two", tmp_path / "two.json", 2, 100, torchrun=True))
    _finish(_run(script, tiny_bert, tmp_path / "one", tmp_path / "one.json", 2, 100))
    two, one = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("two", "one"))
    assert two["report"]["train_examples"] == one["report"]["train_examples"] == 160
    assert 2 * two["report"]["steps"] == one["report"]["steps"]  # each step: a batch per process
    assert two["gold"] == one["gold"] and len(two["predictions"]) == len(one["predictions"])
    # The gathered predictions are the saved model's, in the examples' order.
    (model,) = (tmp_path / "two").glob("*/model")
    solver = FinetuneSolver(str(model), FinetuneOptions(max_length=64), work_dir=tmp_path / "check")
    solver.fit(TASKS["terra"], [])
    assert solver.predict(TASKS["terra"], _separable(script, 60, 1)) == two["predictions"]
