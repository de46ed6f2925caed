"""A task scored under every prompt of its paper, outside the run pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from rueval.data import load_task_data, open_data
from rueval.scoring.task_scores import score_task
from rueval.solvers import make_solver
from rueval.solvers.base import Setting
from rueval.solvers.prompt_variants import score_prompt_variants
from rueval.tasks import get_task
from rueval.tasks.prompts import prompt_variants


@pytest.mark.parametrize("name", ["winograd", "per_ethics", "ru_worldtree"])
def test_every_prompt_is_scored_and_the_default_one_as_a_plain_run_scores_it(tiny_gpt2_dir, name):
    task = get_task(name)
    data = load_task_data(open_data(None), task, None, 6)
    solver = make_solver(f"hf:{tiny_gpt2_dir}")
    solver.fit(task, data.train.examples)
    scored = score_prompt_variants(solver, task, data.train.examples, data.eval.examples)
    assert len(scored.variants) == len(prompt_variants(task))
    scores = [variant.score for variant in scored.variants]
    assert scored.mean == pytest.approx(np.mean(scores)) and scored.std == pytest.approx(np.std(scores))
    assert scored.metrics_mean.keys() == set(task.metrics)
    plain = score_task(task, data.eval.examples, solver.predict(task, data.eval.examples))  # the default prompt
    assert scored.variants[0].metrics == plain.metrics
    demonstrated = score_prompt_variants(solver, task, data.train.examples, data.eval.examples, Setting(k=1))
    assert len(demonstrated.variants) == len(scored.variants)
