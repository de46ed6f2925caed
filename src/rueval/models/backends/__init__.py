"""The language-model backends the engine drives: transformers (hf), OpenAI-compatible servers, vLLM."""
