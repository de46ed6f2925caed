"""Text prompts (`-m openai:` with ``tokenizer=text``, or without a tokenizer to be had): which echoed
tokens are the continuation's, told by their characters.

The server tokenizes ``context + continuation`` itself and returns each token's text; a token spans
the characters from its ``text_offset`` (the sum of the earlier tokens' texts) to the next token's
offset. As in the HF backend, the context's trailing spaces count as the continuation's. The boundary
is measured from the end of the prompt, that many characters before it, so whatever a server
shows at the start cannot move it (vLLM echoes a Llama model's start token as its text,
``<s>``, which shifts every offset). A token is scored for the continuation when it
starts at or after the boundary, or when it straddles it (starts before, ends after): such a
token is the model's prediction of the continuation's first characters, and leaving it out
would drop them from the score (the continuation ``"да"`` after the context ``"Ответ: "`` is
scored as the tokens ``" д"`` and ``"а"``). Byte-level tokens that each hold part of one
character have empty texts but the last, so they all go with the character's side. The first
prompt token has no logprob (nothing precedes it): with an empty context the text is scored
from its second token on, unless the server adds a start token itself (Llama-style tokenizers
do), when every text token is scored, as the HF backend does.
"""

from __future__ import annotations

from rueval.core.errors import RuevalError
from rueval.models.base import Loglikelihood, text_of


def continuation_positions(tokens: list[str], request: Loglikelihood, url: str) -> list[int]:
    """The indices of the echoed prompt ``tokens`` (their texts) scored for the request's continuation."""
    starts = [0]
    for token in tokens:
        starts.append(starts[-1] + len(token))
    prompt = text_of(request.context)
    context = prompt.rstrip()  # its trailing spaces go with the continuation, as in the HF backend
    continuation = prompt[len(context) :] + request.continuation
    if context and not "".join(tokens).endswith(continuation):
        raise RuevalError(
            f"the token texts from the server at {url} do not end with the continuation "
            f"{continuation!r}, so it cannot be told from the context; pass the model's tokenizer "
            "(--tokenizer) to score by token ids"
        )
    boundary = starts[-1] - len(continuation) if context else 0
    return [i for i in range(len(tokens)) if starts[i] >= boundary or starts[i + 1] > boundary]
