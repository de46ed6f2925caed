"""Fixtures of the model tests: one real vLLM server per session (tests/models/vllm_server.py)."""

from __future__ import annotations

import pytest
from support import require
from vllm_server import VLLMServer, vllm_missing


@pytest.fixture(scope="session")
def vllm_server(chat_model, tmp_path_factory):
    """A real vLLM server on 127.0.0.1 serving the tiny GPT-2 (with a chat template) as tiny-gpt2,
    started once per session and stopped at its end."""
    missing = vllm_missing()
    require(missing is None, missing or "")
    with VLLMServer(chat_model, tmp_path_factory.mktemp("vllm") / "server.log") as server:
        yield server
