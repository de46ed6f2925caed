"""TokenLogprobs requests: hf: computes them (with the next-token distribution's statistics when asked), the
request cache serves them back equal, and impossible results are refused before they are cached."""

from __future__ import annotations

import math

import pytest

from rueval.models.base import TokenLogprobs, TokenLogprobsResult, result_problem

TEXTS = ("Мама мыла раму.", "Кошка спала на окне, а собака лаяла во дворе.")


def test_hf_results_are_cached_and_served_equal(tiny_gpt2_dir, tmp_path):
    from rueval.models.backends.hf import HFCausalLM
    from rueval.models.cache import RequestCache
    from rueval.models.engine import Engine

    model = HFCausalLM(str(tiny_gpt2_dir), batch_size=2)
    assert model.capabilities.token_logprobs and model.capabilities.token_distribution
    requests = [TokenLogprobs(TEXTS[0], distribution=True), TokenLogprobs(TEXTS[1])]
    first = Engine(model, RequestCache(tmp_path / "cache.sqlite")).token_logprobs(requests)
    again = Engine(model, RequestCache(tmp_path / "cache.sqlite"))
    assert again.token_logprobs(requests) == first and again.computed == 0
    with_distribution, without = first
    assert len(with_distribution.means) == len(with_distribution.deviations) == len(with_distribution.logprobs)
    assert without.means == () and len(without.logprobs) == len(model.tokenizer(TEXTS[1])["input_ids"])
    # the deviation is that of log p under p: a direct sum over the vocabulary at the first position
    import torch

    ids = torch.tensor([[model.start_token, *model.tokenizer(TEXTS[0])["input_ids"]]])
    with torch.no_grad():
        log_p = torch.log_softmax(model.model(ids).logits[0, 0].double(), -1)
    mu = float((log_p.exp() * log_p).sum())
    assert with_distribution.means[0] == pytest.approx(mu, abs=1e-5)
    sigma = math.sqrt(float((log_p.exp() * (log_p - mu) ** 2).sum()))
    assert with_distribution.deviations[0] == pytest.approx(sigma, abs=1e-5)


@pytest.mark.parametrize(
    ("distribution", "result", "problem"),
    [
        (False, TokenLogprobsResult(()), "expected one or more"),
        (False, TokenLogprobsResult((-1.0, 0.5)), "positive log-probability"),
        (True, TokenLogprobsResult((-1.0,), (-2.0,), (float("nan"),)), "standard deviation"),
        (True, TokenLogprobsResult((-1.0,)), "means of ()"),
        (False, [-1.0], "no token log-probabilities result"),
    ],
)
def test_impossible_results_are_named(distribution, result, problem):
    found = result_problem(TokenLogprobs("текст", distribution), result)
    assert found is not None and problem in found


@pytest.mark.slow
def test_vllm_in_process_gives_the_token_logprobs_hf_gives(cli, tiny_gpt2_dir, tmp_path):
    """`rueval contamination -m vllm:` (a process of vLLM's own virtualenv, as a user runs it) scores TERRa's
    items as `-m hf:` does, to the tolerance the backends agree to per token (Min-K% and the log-perplexity
    are means of token log-probabilities); it declares no next-token distribution, so no Min-K%++."""
    import os
    import subprocess

    from agreement import assert_audits_agree
    from support import require
    from vllm_server import REPO, vllm_missing, vllm_python

    from rueval.results.contamination import read_item_scores

    missing = vllm_missing()
    require(missing is None, missing or "")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "VLLM_CPU_KVCACHE_SPACE": "1"}
    env |= {"VLLM_CPU_OMP_THREADS_BIND": "nobind", "RUEVAL_CACHE_DIR": str(tmp_path / "cache")}
    audit = ["contamination", "-t", "terra", "-q", "-o"]
    command = [str(vllm_python()), "-m", "rueval", *audit, str(tmp_path / "vllm"), "-m", f"vllm:{tiny_gpt2_dir}"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    assert cli(*audit, tmp_path / "hf", "-m", f"hf:{tiny_gpt2_dir}").exit_code == 0
    assert len(read_item_scores(tmp_path / "hf", "terra")) == 20
    assert_audits_agree(tmp_path / "vllm", tmp_path / "hf", "terra")
