"""Fault injection: a hand-written OpenAI-compatible server that fails on demand, for what a real
vLLM server (tests/models/vllm_server.py, where everything else is tested) will not do when asked:
answer 503s, drop connections, time out, leave out logprobs, refuse ``max_tokens`` 0, change its
``system_fingerprint`` mid-run, serve other weights behind the same name and port.

Between faults it answers as vLLM does, so that a run can go on around them: it serves a
transformers causal LM from a local directory on 127.0.0.1 (an ephemeral port) with the
standard library's ThreadingHTTPServer, and implements the subset of the API that rueval uses:

- ``GET /v1/models``: the served model name, with vLLM's ``root`` (the weights' directory) and
  ``created`` (as vLLM: the time of the answer, unless ``created`` is set);
- ``POST /v1/completions``: ``prompt`` as a string, a list of strings, a list of token ids or
  a list of such lists; ``echo``, ``logprobs`` (prompt tokens get logprobs when echoed; the
  first has none), ``max_tokens`` (0 with echo: no generation), ``temperature`` (0: greedy),
  ``top_p``, ``seed`` (applied per prompt) and ``stop``;
- ``POST /v1/chat/completions``: ``messages`` rendered with the tokenizer's chat template (set by
  the test), ``add_generation_prompt`` and ``continue_final_message`` as vLLM takes them, one
  choice; vLLM's ``prompt_logprobs`` extension (per prompt token after the first, the prompt's
  token and the top one: ``{token id: {logprob, rank, decoded_token}}``) and ``return_token_ids``.

Token texts are decoded incrementally, as vLLM does: a token that completes a character
carries it, and the bytes before it carry empty texts; ``text_offset`` sums the earlier texts.

The switches are the faults: ``logprobs_supported = False`` answers without any
logprobs, ``chat_logprobs_supported = False`` ignores ``prompt_logprobs`` on the chat endpoint (as
llama.cpp and hosted APIs do), ``fail_next = N`` answers the next N completion requests with HTTP
503 (with a Retry-After header when ``retry_after`` is set), ``drop_next = N`` closes the
connection of the next N POST requests without an answer,
``refuse_zero_max_tokens`` rejects ``max_tokens = 0``, ``delay`` holds each completion request
for that many seconds (so that concurrent requests overlap), ``api_key`` requires a bearer key
and ``system_fingerprint`` is sent with every completion when set. ``aliases`` serves the model
under more names, as vLLM's ``--served-model-name`` (answers name the first).

Fault injection, for answers no real server gives on demand: ``fault_logprob`` (when not None)
replaces every logprob the server answers (NaN, infinity, a positive number, a string: JSON as
Python writes it, ``NaN`` and ``Infinity`` included), ``fault_model`` names another model in
every answer.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


class FaultServer:
    """Start with ``with FaultServer(model_dir) as server:``; ``server.url`` is the base URL."""

    def __init__(self, model_dir: Path, name: str = "tiny-gpt2", api_key: str | None = None, port: int = 0):
        self.name = name
        self.port = port
        self.root = str(model_dir)
        self.created: int | None = None
        self.system_fingerprint: str | None = None
        self.api_key = api_key
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
        self.logprobs_supported = True
        self.chat_logprobs_supported = True
        self.refuse_zero_max_tokens = False
        self.fail_next = 0
        self.retry_after: str | None = None
        self.drop_next = 0
        self.delay = 0.0
        self.aliases: tuple[str, ...] = ()
        self.fault_logprob: Any = None
        self.fault_model: str | None = None
        self.completion_requests = 0  # counters, read by the tests
        self.failures_served = 0
        self.peak_in_flight = 0
        self._in_flight = 0
        self._counters = threading.Lock()
        self._model_lock = threading.Lock()  # one computation at a time: seeding stays per prompt
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> FaultServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.app = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    # -- the API -------------------------------------------------------------------------------
    def authorised(self, header: str | None) -> bool:
        return self.api_key is None or header == f"Bearer {self.api_key}"

    def models(self) -> dict:
        card = {
            "id": self.name,
            "object": "model",
            "owned_by": "rueval-tests",
            "root": self.root,
            "created": self.created if self.created is not None else int(time.time()),
        }
        # vLLM's --served-model-name a b: each name listed with the same root, answers naming the first
        return {"object": "list", "data": [card] + [{**card, "id": alias} for alias in self.aliases]}

    def completions(self, body: dict) -> tuple[int, dict]:
        with self._counters:
            self.completion_requests += 1
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            fail = self.fail_next > 0
            if fail:
                self.fail_next -= 1
                self.failures_served += 1
        try:
            if fail:
                return 503, _error(503, "the server is overloaded, try again later", "ServiceUnavailableError")
            if body.get("model") not in (self.name, *self.aliases):
                return 404, _error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
            max_tokens = body.get("max_tokens", 16)
            least = 1 if self.refuse_zero_max_tokens else 0
            if not isinstance(max_tokens, int) or max_tokens < least:
                return 400, _error(400, f"max_tokens must be at least {least}, got {max_tokens}")
            try:
                prompts = self._prompts(body.get("prompt"))
            except ValueError as e:
                return 400, _error(400, str(e))
            time.sleep(self.delay)
            with self._model_lock:
                choices = [self._choice(i, prompt, body, max_tokens) for i, prompt in enumerate(prompts)]
            answer = {
                "id": f"cmpl-{time.monotonic_ns()}",
                "object": "text_completion",
                "created": int(time.time()),
                "model": self.fault_model or self.name,
                "choices": choices,
            }
            return 200, answer | ({"system_fingerprint": self.system_fingerprint} if self.system_fingerprint else {})
        finally:
            with self._counters:
                self._in_flight -= 1

    def chat(self, body: dict) -> tuple[int, dict]:
        if body.get("model") not in (self.name, *self.aliases):
            return 404, _error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) and "content" in m for m in messages):
            return 400, _error(400, "messages must be a list of {role, content} objects")
        go_on = bool(body.get("continue_final_message"))
        text = self.tokenizer.apply_chat_template(
            messages,
            add_generation_prompt=bool(body.get("add_generation_prompt", True)) and not go_on,
            continue_final_message=go_on,
            tokenize=False,
        )
        ids = self.tokenizer(text)["input_ids"]
        max_tokens = body.get("max_tokens", 16)
        with self._model_lock:
            generated = self._generate(ids, body, max_tokens)
            prompt_logprobs = None
            if body.get("prompt_logprobs") is not None and self.chat_logprobs_supported:
                prompt_logprobs = self._prompt_logprobs(ids)
        content = self.tokenizer.decode(generated, skip_special_tokens=True)
        stops = body.get("stop") or []
        cuts = [content.find(s) for s in ([stops] if isinstance(stops, str) else stops) if s and s in content]
        message = {"role": "assistant", "content": content[: min(cuts)] if cuts else content}
        answer = {
            "id": f"chatcmpl-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.fault_model or self.name,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop" if cuts else "length"}],
        }
        if prompt_logprobs is not None:
            answer["prompt_logprobs"] = prompt_logprobs
        if body.get("return_token_ids"):
            answer["prompt_token_ids"] = ids
        return 200, answer | ({"system_fingerprint": self.system_fingerprint} if self.system_fingerprint else {})

    # -- the model -----------------------------------------------------------------------------
    def _prompt_logprobs(self, ids: list[int]) -> list[dict | None]:
        """vLLM's prompt_logprobs=1: per prompt token after the first, its own and the top token."""
        with torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids])).logits[0].float().log_softmax(-1)
        texts = self._token_texts(ids)
        out: list[dict | None] = [None]
        for i in range(1, len(ids)):
            row = logits[i - 1]
            own, best = float(row[ids[i]]), int(row.argmax())
            rank = int((row > own).sum()) + 1
            entry = {str(ids[i]): {"logprob": self._faulty(own), "rank": rank, "decoded_token": texts[i]}}
            if best != ids[i]:
                entry[str(best)] = {
                    "logprob": self._faulty(float(row[best])),
                    "rank": 1,
                    "decoded_token": self.tokenizer.decode([best]),
                }
            out.append(entry)
        return out

    def _prompts(self, prompt: Any) -> list[tuple[str, list[int]]]:
        """Each prompt as (text, token ids); strings are tokenized as vLLM does, with the
        tokenizer's own special tokens (this GPT-2 tokenizer adds none)."""
        if isinstance(prompt, str) or (isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)):
            prompt = [prompt]
        if not isinstance(prompt, list) or not prompt:
            raise ValueError("prompt must be a string, a list of strings or a list of token id lists")
        out = []
        for p in prompt:
            if isinstance(p, str):
                out.append((p, self.tokenizer(p)["input_ids"]))
            elif isinstance(p, list) and p and all(isinstance(t, int) for t in p):
                out.append((self.tokenizer.decode(p), p))
            else:
                raise ValueError(f"cannot read the prompt {p!r}")
        return out

    def _choice(self, index: int, prompt: tuple[str, list[int]], body: dict, max_tokens: int) -> dict:
        text, ids = prompt
        generated = self._generate(ids, body, max_tokens) if max_tokens else []
        completion = self.tokenizer.decode(generated, skip_special_tokens=True)
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else stops
        cuts = [completion.find(s) for s in stops if s and s in completion]
        finish = "stop" if cuts or (generated and generated[-1] == self.tokenizer.eos_token_id) else "length"
        completion = completion[: min(cuts)] if cuts else completion
        echo = bool(body.get("echo"))
        logprobs = None
        if body.get("logprobs") is not None and self.logprobs_supported:
            logprobs = self._logprobs(ids + generated, len(ids), echo, len(text))
        return {
            "index": index,
            "text": text + completion if echo else completion,
            "logprobs": logprobs,
            "finish_reason": finish,
        }

    def _generate(self, ids: list[int], body: dict, max_tokens: int) -> list[int]:
        temperature = float(body.get("temperature", 1.0))
        sample = temperature > 0
        if body.get("seed") is not None:
            torch.manual_seed(int(body["seed"]))
        stops = body.get("stop") or []
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=max_tokens,
                do_sample=sample,
                temperature=temperature if sample else None,
                top_p=float(body.get("top_p", 1.0)) if sample else None,
                top_k=None,
                pad_token_id=self.tokenizer.eos_token_id,
                stop_strings=([stops] if isinstance(stops, str) else stops) or None,
                tokenizer=self.tokenizer,
            )
        return out[0, len(ids) :].tolist()

    def _logprobs(self, ids: list[int], n_prompt: int, echo: bool, prompt_chars: int) -> dict:
        """OpenAI's logprobs object for the echoed prompt tokens (if ``echo``) and the generated ones."""
        with torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids])).logits[0].float().log_softmax(-1)
        texts = self._token_texts(ids)
        first = 0 if echo else n_prompt
        tokens, values, tops, offsets = [], [], [], []
        offset = 0 if echo else prompt_chars
        for i in range(first, len(ids)):
            tokens.append(texts[i])
            offsets.append(offset)
            offset += len(texts[i])
            if i == 0:  # nothing before the first token predicts it
                values.append(None)
                tops.append(None)
                continue
            row = logits[i - 1]
            best = int(row.argmax())
            values.append(self._faulty(float(row[ids[i]])))
            # the chosen token first, then the top one: on a text collision the top value wins
            top = {texts[i]: float(row[ids[i]]), self.tokenizer.decode([best]): float(row[best])}
            tops.append({text: self._faulty(value) for text, value in top.items()})
        return {"tokens": tokens, "token_logprobs": values, "top_logprobs": tops, "text_offset": offsets}

    def _faulty(self, logprob: float) -> Any:
        return logprob if self.fault_logprob is None else self.fault_logprob

    def _token_texts(self, ids: list[int]) -> list[str]:
        """Incremental detokenization: a token's text is what it adds to the decoded prefix,
        empty while a character is still incomplete."""
        texts, done = [], ""
        for i in range(len(ids)):
            prefix = self.tokenizer.decode(ids[: i + 1])
            if prefix.endswith("\ufffd"):
                texts.append("")
                continue
            texts.append(prefix[len(done) :])
            done = prefix
        return texts


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # keep the test output clean
        pass

    @property
    def app(self) -> FaultServer:
        return self.server.app  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        if not self.app.authorised(self.headers.get("Authorization")):
            return self._send(401, _error(401, "Incorrect API key provided", "AuthenticationError"))
        if self.path.rstrip("/") == "/v1/models":
            return self._send(200, self.app.models())
        self._send(404, _error(404, f"no route {self.path}", "NotFoundError"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        with self.app._counters:
            drop, self.app.drop_next = self.app.drop_next > 0, max(0, self.app.drop_next - 1)
        if drop:
            self.close_connection = True
            return
        if not self.app.authorised(self.headers.get("Authorization")):
            return self._send(401, _error(401, "Incorrect API key provided", "AuthenticationError"))
        routes = {"/v1/completions": self.app.completions, "/v1/chat/completions": self.app.chat}
        answer = routes.get(self.path.rstrip("/"))
        if answer is None:
            return self._send(404, _error(404, f"no route {self.path}", "NotFoundError"))
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(400, _error(400, "the body is not JSON"))
        self._send(*answer(body))

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        if status == 503 and self.app.retry_after is not None:
            self.send_header("Retry-After", self.app.retry_after)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _error(code: int, message: str, kind: str = "BadRequestError") -> dict:
    return {"error": {"message": message, "type": kind, "code": code}}
