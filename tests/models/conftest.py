"""Fixtures of the model tests: one real vLLM server per session (tests/models/vllm_server.py), and the
tiny GPT-2 loaded with plain transformers as a reference."""

from __future__ import annotations

import pytest
from support import require
from vllm_server import VLLMServer, vllm_missing


@pytest.fixture(scope="session")
def vllm_server(chat_model, tmp_path_factory):
    """A real vLLM server on 127.0.0.1 serving the tiny GPT-2 (with a chat template) as tiny-gpt2,
    started once per session and stopped at its end; its threads on the first core (a second server
    takes the other, and the tests' own computing shares it)."""
    missing = vllm_missing()
    require(missing is None, missing or "")
    with VLLMServer(chat_model, tmp_path_factory.mktemp("vllm") / "server.log", cores="0") as server:
        yield server


@pytest.fixture(scope="session")
def hf_runs(chat_model, tmp_path_factory) -> dict[str, dict[str, list[dict]]]:
    """`rueval run -m hf:` on the served folder (agreement.run_args), scored by log-likelihood and by
    perplexity (empty contexts): what served and in-process vLLM must equal."""
    from agreement import run_args, samples
    from typer.testing import CliRunner

    from rueval.cli import app

    base = tmp_path_factory.mktemp("hf-runs")
    runs = {}
    for scoring in ("loglik", "ppl"):
        result = CliRunner().invoke(app, run_args(f"hf:{chat_model}", base / scoring, scoring), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        runs[scoring] = samples(base / scoring)
    return runs


@pytest.fixture(scope="session")
def plain(tiny_gpt2_dir):
    """The tiny model and tokenizer loaded with plain transformers: the reference."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval(), AutoTokenizer.from_pretrained(tiny_gpt2_dir)


@pytest.fixture(scope="session")
def trained_gpt2(tiny_gpt2_dir, tmp_path_factory):
    """The tiny GPT-2 trained briefly on the bundled samples: its greedy choices tie rarely (a random tiny
    model's often do), and its texts end at its end-of-text token as often as at their budget."""
    import shutil

    from rueval.models.backends.tiny import sample_texts, train_tiny_model

    model = shutil.copytree(tiny_gpt2_dir, tmp_path_factory.mktemp("trained") / "model")
    return train_tiny_model(model, sample_texts())


@pytest.fixture(scope="session")
def cut_cases(chat_model):
    """generation_cases' stops and budgets on the served (random) tiny model, whose long greedy texts hold
    stops to cut at (and a prompt longer than its window, and one whose tokens end between a character's
    bytes), with `hf:`'s texts one prompt at a time."""
    from generation_cases import Cases, byte_prompt, long_prompt, prompts

    from rueval.models.backends.hf import HFCausalLM

    hf = HFCausalLM(str(chat_model), batch_size=1)
    broken = byte_prompt(hf)
    assert broken is not None, "no prompt's greedy tokens end between a character's bytes"
    return Cases.of(hf, [*prompts(8), long_prompt(), broken])


@pytest.fixture(scope="session")
def tie_cases(trained_gpt2):
    """The same on the briefly trained model (texts that end at the end-of-text token, and rare ties)."""
    from generation_cases import Cases, prompts

    from rueval.models.backends.hf import HFCausalLM

    return Cases.of(HFCausalLM(str(trained_gpt2), batch_size=1), prompts(24))
