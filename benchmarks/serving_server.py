"""The serving benchmark's server: tests/openai_server.py's CompletionServer, scoring all the
prompts of one request in one padded forward (as a real server batches them), and counting.

    python benchmarks/serving_server.py MODEL_DIR --port N [--name tiny] [--threads 1]

The test server runs a forward per prompt. Here a scoring request (greedy, ``echo`` with
``logprobs`` and ``max_tokens`` 0 or 1, which is what rueval and lm-eval's local-completions
send) runs its prompts as one right-padded batch; the one greedy token that ``max_tokens=1``
asks for is the argmax of the same forward's last row. Anything else goes to the test server's
per-prompt path. ``GET /stats`` answers the counters: HTTP completion requests, prompts, prompt
tokens, forwards, tokens computed (padding included) and the process's CPU seconds.
``--threads`` sets torch's threads: one per server, as one GPU per server.
"""

from __future__ import annotations

import argparse
import codecs
import sys
import threading
import time
from pathlib import Path
from typing import Self

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))
from openai_server import CompletionServer, _Handler


class BatchingServer(CompletionServer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.prefix_cache = True
        self._decoded: dict[int, str] = {}  # token id -> its text alone, for top_logprobs
        self.stats = {"requests": 0, "prompts": 0, "prompt_tokens": 0, "forwards": 0, "computed_tokens": 0}
        self._stats_lock = threading.Lock()

    def __enter__(self) -> Self:
        super().__enter__()
        self._httpd.RequestHandlerClass = _StatsHandler  # type: ignore[union-attr]
        return self

    def completions(self, body: dict) -> tuple[int, dict]:
        try:
            prompts = self._prompts(body.get("prompt"))
        except ValueError:
            prompts = []
        with self._stats_lock:
            self.stats["requests"] += 1
            self.stats["prompts"] += len(prompts)
            self.stats["prompt_tokens"] += sum(len(ids) for _, ids in prompts)
        scoring = (
            body.get("echo")
            and body.get("logprobs") is not None
            and body.get("max_tokens") in (0, 1)
            and float(body.get("temperature", 1.0)) == 0
            and not body.get("stop")
            and body.get("model") == self.name
            and prompts
        )
        if not scoring:
            return super().completions(body)
        with self._model_lock:
            choices = self._score_batch(prompts, body["max_tokens"])
        return 200, {"id": "cmpl-bench", "object": "text_completion", "model": self.name, "choices": choices}

    def _score_batch(self, prompts: list[tuple[str, list[int]]], max_tokens: int) -> list[dict]:
        """Every prompt's echoed logprobs (and greedy token) from one right-padded forward."""
        logits = self._forward([ids for _, ids in prompts])
        choices = []
        for index, ((text, ids), rows) in enumerate(zip(prompts, logits, strict=True)):
            generated = [int(rows[len(ids) - 1].argmax())] if max_tokens else []
            full = ids + generated
            texts = self._token_texts(full)
            tokens, values, tops, offsets, offset = [], [], [], [], 0
            for i, token in enumerate(full):
                tokens.append(texts[i])
                offsets.append(offset)
                offset += len(texts[i])
                if i == 0:
                    values.append(None)
                    tops.append(None)
                    continue
                row = rows[i - 1]
                best = int(row.argmax())
                values.append(float(row[token]))
                tops.append({texts[i]: float(row[token]), self._decode_one(best): float(row[best])})
            completion = "".join(texts[len(ids) :])
            choices.append(
                {
                    "index": index,
                    "text": text + completion,
                    "logprobs": {
                        "tokens": tokens,
                        "token_logprobs": values,
                        "top_logprobs": tops,
                        "text_offset": offsets,
                    },
                    "finish_reason": "length",
                }
            )
        return choices

    def _forward(self, batch: list[list[int]]) -> torch.Tensor:
        """Log-softmaxed logits of right-padded rows. With the prefix cache on, the tokens that
        every row starts with are computed once and their keys and values shared by all rows
        (what vLLM's automatic prefix caching saves, within one request)."""
        shared = min(len(ids) for ids in batch) - 1 if self.prefix_cache else 0
        for i in range(shared):
            if any(ids[i] != batch[0][i] for ids in batch):
                shared = i
                break
        width = max(len(ids) for ids in batch)
        pad = self.tokenizer.eos_token_id
        rest = torch.tensor([ids[shared:] + [pad] * (width - len(ids)) for ids in batch])
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids in batch])
        with torch.inference_mode():
            if shared:
                head = self.model(input_ids=torch.tensor([batch[0][:shared]]), use_cache=True)
                head.past_key_values.batch_repeat_interleave(len(batch))
                tail = self.model(input_ids=rest, attention_mask=mask, past_key_values=head.past_key_values).logits
                logits = torch.cat([head.logits.expand(len(batch), -1, -1), tail], dim=1)
            else:
                logits = self.model(input_ids=rest, attention_mask=mask).logits
        with self._stats_lock:
            self.stats["forwards"] += 1
            self.stats["computed_tokens"] += shared + len(batch) * (width - shared)
        return logits.float().log_softmax(-1)

    def _decode_one(self, token: int) -> str:
        if token not in self._decoded:
            self._decoded[token] = self.tokenizer.decode([token])
        return self._decoded[token]

    def _token_texts(self, ids: list[int]) -> list[str]:
        """The test server's incremental detokenization in one pass (it decodes every prefix):
        each byte-level token's bytes go through an incremental UTF-8 decoder, so a token that
        completes a character carries it and the bytes before it carry empty texts."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        texts = []
        for token in self.tokenizer.convert_ids_to_tokens(ids):
            if all(c in BYTE_OF_CHAR for c in token):
                texts.append(decoder.decode(bytes(BYTE_OF_CHAR[c] for c in token)))
            else:  # a special token, which is not byte-encoded
                texts.append(decoder.decode(b"", final=True) + token)
        return texts


def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet, char -> byte: printable Latin-1 bytes stand for
    themselves, the other bytes for the characters from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = dict(zip(printable, printable, strict=True))
    for b in range(256):
        if b not in chars:
            chars[b] = 256 + len(chars) - len(printable)
    return {chr(c): b for b, c in chars.items()}


BYTE_OF_CHAR = _byte_level_alphabet()


class _StatsHandler(_Handler):
    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/stats":
            with self.app._stats_lock:  # type: ignore[attr-defined]
                stats = dict(self.app.stats)  # type: ignore[attr-defined]
            return self._send(200, stats | {"cpu_s": time.process_time()})
        super().do_GET()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="tiny")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-prefix-cache", action="store_true", help="compute every row's every token")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with BatchingServer(args.model_dir, name=args.name, port=args.port) as server:
        server.prefix_cache = not args.no_prefix_cache
        print(f"serving {args.name} at {server.url}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
