"""`openai:`'s token log-probabilities of a text (TokenLogprobs) against a real vLLM server (the session's
``vllm_server``, tests/models/vllm_server.py) serving the tiny GPT-2 that `hf:` loads from the same folder:
`rueval contamination -m openai:` scores TERRa's items as `-m hf:` does, to the tolerance the backends agree to
per token; token-id prompts equal `hf:` token by token (a text longer than the window cut one token shorter:
vLLM needs room for the token it generates, a long context's log-likelihood too), text prompts are the plain
model's tokens after the first. `openai-chat:` gives none."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from agreement import LONG_PAIR, LONG_TEXT, TOLERANCE, assert_audits_agree

from rueval.core.errors import RuevalError
from rueval.models.backends.hf import HFCausalLM
from rueval.models.backends.openai import OpenAICompletionsModel
from rueval.models.backends.openai_chat import OpenAIChatModel
from rueval.models.base import TokenLogprobs
from rueval.results.contamination import read_item_scores

pytestmark = pytest.mark.slow

TEXTS = ("Мама мыла раму.", "Кошка спала на окне, а собака лаяла во дворе. 🙂", "да")


def test_the_cli_contamination_audit_on_openai_scores_as_hf_but_min_k_pp(cli, vllm_server, chat_model, tmp_path):
    """Min-K% and the log-perplexity are means of token log-probabilities, so they agree to the per-token
    tolerance; the zlib ratio is the log-perplexity over the text's compressed bytes, and the perturbation score
    the difference of two means. The server's top logprobs are no distribution: no Min-K%++, and a note says so."""
    audit = ("contamination", "-t", "terra", "-q", "-o")
    served = cli(*audit, tmp_path / "openai", "-m", f"openai:{vllm_server.name}", "--base-url", vllm_server.url)
    assert served.exit_code == 0, served.output
    assert cli(*audit, tmp_path / "hf", "-m", f"hf:{chat_model}").exit_code == 0
    assert len(read_item_scores(tmp_path / "hf", "terra")) == 20
    assert_audits_agree(tmp_path / "openai", tmp_path / "hf", "terra")


def test_token_id_prompts_give_hfs_token_logprobs_and_cut_a_long_text_at_the_window(vllm_server, chat_model):
    """A text longer than the window: vLLM refuses a prompt that leaves no room for the one token it generates
    (even with max_tokens 0), so the served prompt holds one token fewer than hf:'s, and its logprobs are hf:'s
    but the last."""
    hf = HFCausalLM(str(chat_model))
    requests = [TokenLogprobs(text) for text in (*TEXTS, LONG_TEXT)]
    served = OpenAICompletionsModel(vllm_server.name, vllm_server.url, prompts_per_request=2).token_logprobs(requests)
    expected = [r.logprobs for r in hf.token_logprobs(requests)]
    assert len(hf.tokenizer(LONG_TEXT)["input_ids"]) > hf.max_length == vllm_server.max_model_len
    assert len(expected[-1]) == hf.max_length - 1  # after the start token, the text's first tokens
    expected[-1] = expected[-1][:-1]
    assert [len(r.logprobs) for r in served] == [len(e) for e in expected]
    for ours, theirs in zip(served, expected, strict=True):
        assert ours.means == ours.deviations == ()
        assert max(abs(a - b) for a, b in zip(ours.logprobs, theirs, strict=True)) <= TOLERANCE


def test_text_prompts_give_the_plain_models_tokens_after_the_first(vllm_server, plain):
    """vLLM tokenizes text without GPT-2's start token: the text's first token is predicted by nothing."""
    model, tokenizer = plain
    served = OpenAICompletionsModel(vllm_server.name, vllm_server.url, tokenizer="text")
    results = served.token_logprobs([TokenLogprobs(text) for text in TEXTS[:2]])
    for text, result in zip(TEXTS[:2], results, strict=True):
        ids = tokenizer(text)["input_ids"]
        with torch.no_grad():
            log_p = model(torch.tensor([ids])).logits[0].log_softmax(-1)
        expected = log_p[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()
        assert list(result.logprobs) == pytest.approx(expected, abs=1e-4)
    one_token = next(text for text in TEXTS if len(tokenizer(text)["input_ids"]) == 1)
    with pytest.raises(RuevalError, match="gave no logprob for any token .* pass the model's tokenizer"):
        served.token_logprobs([TokenLogprobs(one_token)])  # its one token starts the prompt


def test_openai_chat_gives_no_token_logprobs_and_the_audit_says_so_in_one_line(cli, vllm_server, tmp_path):
    chat = OpenAIChatModel(vllm_server.name, vllm_server.url)
    assert not chat.capabilities.token_logprobs
    with pytest.raises(RuevalError, match="scores a text only inside the chat template; use -m openai:"):
        chat.token_logprobs([TokenLogprobs(TEXTS[0])])
    model = ("-m", f"openai-chat:{vllm_server.name}", "--base-url", vllm_server.url)
    refused = cli("contamination", *model, "-t", "terra", "-o", tmp_path / "chat")
    assert refused.exit_code == 2
    assert "gives no token log-probabilities of a text" in refused.stderr and "openai:" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_context_longer_than_the_window_is_scored_leaving_room_for_the_generated_token(vllm_server, plain):
    """vLLM refuses a prompt as long as its max_model_len even with max_tokens 0: the oldest context tokens are
    dropped until one token of room is left, and the rest is scored as the plain model scores those ids."""
    from text_prompts import reference

    from rueval.models.backends.token_ids import local_tokens

    model, tokenizer = plain
    tokens = replace(local_tokens(tokenizer, "the test"), window=vllm_server.max_model_len - 1)
    ids, first = tokens.pair(LONG_PAIR)
    assert len(tokenizer(LONG_PAIR.context)["input_ids"]) > vllm_server.max_model_len == len(ids) + 1
    (result,) = OpenAICompletionsModel(vllm_server.name, vllm_server.url).loglikelihood([LONG_PAIR])
    logprob, n_tokens, _ = reference(model, ids, first)
    assert (result.logprob, result.n_tokens) == (pytest.approx(logprob, abs=TOLERANCE), n_tokens)
