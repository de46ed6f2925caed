"""Comparing a backend's runs with `hf:`'s on the same weights: the choice tasks' request shapes (0-shot
and few-shot, scored by log-likelihood and by perplexity, whose contexts are empty) and the requests a
solver plans."""

from __future__ import annotations

from pathlib import Path

from support import read_samples

from rueval.data import load_task_data, open_data
from rueval.models.backends.hf import HFCausalLM
from rueval.models.base import Generation, Loglikelihood
from rueval.models.engine import Engine
from rueval.solvers.base import Setting
from rueval.solvers.lm import GenerationSettings, LMSolver
from rueval.tasks import get_task

CHOICE_TASKS = ("parus", "terra", "rcb", "ru_openbook")
TOLERANCE = 0.01  # nats
# past the tiny model's window of 2048 tokens (about 5700 and 4000 of them): vLLM keeps one token of room in it
LONG_TEXT = " ".join(["Кошка спала на окне, а собака лаяла во дворе."] * 300)
LONG_PAIR = Loglikelihood(" ".join(["Кошка спала на окне."] * 600), " А собака лаяла.")


def run_args(model: str, out: Path, scoring: str, *flags: str) -> list[str]:
    """`rueval run` on the four choice tasks, 0- and 2-shot, 8 items each, every request logged."""
    given = ["run", "-m", model, "-t", ",".join(CHOICE_TASKS), "--shots", "0,2", "--limit", "8"]
    return [*given, "--scoring", scoring, "--cache", "off", "--log-samples", "-o", str(out), *flags]


def samples(out: Path) -> dict[str, list[dict]]:
    return {task: read_samples(out, task) for task in CHOICE_TASKS}


def disagreements(served: dict[str, list[dict]], reference: dict[str, list[dict]]) -> tuple[float, int]:
    """The largest difference of a request's log-likelihood (nats) and how many predictions differ."""
    worst, flips = 0.0, 0
    for task in CHOICE_TASKS:
        for ours, theirs in zip(served[task], reference[task], strict=True):
            assert (ours["doc_id"], ours["k"], ours["episode"]) == (theirs["doc_id"], theirs["k"], theirs["episode"])
            assert ours["arguments"] == theirs["arguments"]
            for mine, hf in zip(ours["resps"], theirs["resps"], strict=True):
                worst = max(worst, abs(float(mine[0][0]) - float(hf[0][0])))
            flips += ours["prediction"] != theirs["prediction"]
    return worst, flips


def plan_requests(hf: HFCausalLM, name: str, scoring: str, k: int) -> list[Loglikelihood]:
    """The distinct log-likelihood requests the LM solver plans for a task's bundled samples."""
    task = get_task(name)
    data = load_task_data(open_data(None), task, None, None)
    plan = LMSolver(Engine(hf), "hf", scoring=scoring).plan(task, data.train.examples, data.eval.examples, Setting(k))
    return list(dict.fromkeys(plan.requests))


def generation_requests(hf: HFCausalLM, name: str, k: int) -> list[Generation]:
    """The greedy generation requests (120 new tokens) the LM solver plans for three of a task's items."""
    task = get_task(name)
    data = load_task_data(open_data(None), task, None, 3)
    solver = LMSolver(Engine(hf), "hf", generation=GenerationSettings(temperature=0, max_gen_toks=120))
    return list(dict.fromkeys(solver.plan(task, data.train.examples, data.eval.examples, Setting(k)).requests))


def assert_audits_agree(audit: Path, reference: Path, task: str) -> None:
    """Two `rueval contamination` folders of one task on the same weights, a backend's without the next-token
    distribution (``audit``) and hf:'s (``reference``): the same items; Min-K% and the log-perplexity, means of
    token log-probabilities, within the per-token tolerance; the zlib ratio (the log-perplexity over the text's
    compressed bytes) so once scaled back; the perturbation score, a difference of two means, within twice it;
    no Min-K%++, and a note that says so."""
    import math

    from rueval.results.contamination import ContaminationResult, read_item_scores

    theirs, ours = read_item_scores(audit, task), read_item_scores(reference, task)
    assert [row.idx for row in theirs] == [row.idx for row in ours] and ours
    for row, hf_row in zip(theirs, ours, strict=True):
        assert row.min_k_pp is None and hf_row.min_k_pp is not None
        assert abs(row.min_k - hf_row.min_k) <= TOLERANCE
        assert row.ppl is not None and hf_row.ppl is not None
        assert abs(math.log(row.ppl) - math.log(hf_row.ppl)) <= TOLERANCE
        assert row.zlib is not None and hf_row.zlib is not None
        compressed_bytes = math.log(hf_row.ppl) / hf_row.zlib
        assert abs(row.zlib - hf_row.zlib) * compressed_bytes <= TOLERANCE
        assert (row.perturbation is None) == (hf_row.perturbation is None)
        if hf_row.perturbation is not None:
            assert abs(row.perturbation - hf_row.perturbation) <= 2 * TOLERANCE
    notes = ContaminationResult.read(audit).tasks[task].notes
    assert any(note.startswith("Min-K%++ not available") for note in notes)
