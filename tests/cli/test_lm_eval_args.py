"""lm-evaluation-harness's `--model NAME --model_args ...` spellings as rueval's model spec and options."""

from __future__ import annotations

import pytest

from rueval.cli.lm_eval_args import lm_eval_model
from rueval.core.errors import RuevalError


def test_lm_evals_vllm_model_is_the_vllm_backend_with_its_engine_keys_in_the_spec():
    args = "pretrained=/models/m,tensor_parallel_size=2,data_parallel_size=1,max_model_len=4096,dtype=bfloat16"
    model, options = lm_eval_model("vllm", {"model_args": args, "seed": 3})
    assert model == "vllm:/models/m,tensor_parallel_size=2,data_parallel_size=1,max_model_len=4096"
    assert options == {"seed": 3, "dtype": "bfloat16"}


def test_lm_evals_local_completions_is_the_openai_backend_at_the_apis_root():
    args = "model=tiny,base_url=http://h:8000/v1/completions,tokenizer=/models/m,num_concurrent=4"
    model, options = lm_eval_model("local-completions", {"model_args": args})
    assert model == "openai:tiny"
    assert options == {"base_url": "http://h:8000/v1", "tokenizer": "/models/m", "concurrency": 4}


@pytest.mark.parametrize(
    ("extra", "bos"), [("", "tokenizer"), (",add_bos_token=True", "true"), (",add_bos_token=false", "false")]
)
def test_lm_evals_hf_model_takes_hflms_start_tokens_unless_add_bos_token_says_otherwise(extra, bos):
    model, options = lm_eval_model("hf", {"model_args": "pretrained=/models/m" + extra})
    assert (model, options) == ("hf:/models/m", {"bos": bos})
    assert lm_eval_model("vllm", {"model_args": "pretrained=/models/m"})[1] == {}  # vllm: keeps hf:'s protocol


@pytest.mark.parametrize(
    ("extra", "tokenizer"),
    [
        (",tokenized_requests=False", "text"),
        (",tokenizer_backend=None", "text"),
        (",tokenizer_backend=remote", "server"),
    ],
)
def test_lm_evals_text_and_remote_tokenizer_settings_choose_how_prompts_go(extra, tokenizer):
    _, options = lm_eval_model("local-completions", {"model_args": "model=tiny,base_url=http://h/v1" + extra})
    assert options["tokenizer"] == tokenizer


@pytest.mark.parametrize(
    ("model", "args", "message"),
    [
        ("vllm", None, "--model vllm: name the model with --model_args pretrained="),
        ("vllm", "pretrained=m,swap_space=4", "swap_space=4: expected KEY=VALUE with KEY one of: pretrained, dtype"),
        ("local-completions", "base_url=http://h/v1", "name the model with model="),
        ("local-completions", "model=m,num_concurrent=many", "num_concurrent=many: expected a positive number"),
        ("local-completions", "model=m,tokenized_requests=maybe", "tokenized_requests=maybe: expected True or False"),
        ("hf", "pretrained=m,add_bos_token=maybe", "add_bos_token=maybe: expected True or False"),
        ("openai:m", "model=m", "--model_args is lm-eval's form for --model hf, vllm, local-completions"),
    ],
)
def test_lm_eval_model_args_that_cannot_work_are_one_line_errors(model, args, message):
    with pytest.raises(RuevalError, match=message):
        lm_eval_model(model, {"model_args": args} if args else {})


def test_the_cli_takes_lm_evals_vllm_spelling_and_checks_its_keys_before_vllm_loads(cli, tmp_path):
    args = ("run", "--model", "vllm", "--model_args", "pretrained=some/model,tensor_parallel_size=0", "-t", "parus")
    result = cli(*args, "-o", tmp_path)
    assert (
        result.exit_code == 2 and "-m vllm:some/model,tensor_parallel_size=0: tensor_parallel_size=0" in result.output
    )


def test_a_tokenizer_for_a_backend_with_its_own_is_one_error(cli, tiny_gpt2_dir, tmp_path):
    result = cli("run", "-m", f"hf:{tiny_gpt2_dir}", "--tokenizer", "text", "-t", "parus", "-o", tmp_path)
    assert result.exit_code == 2 and "--tokenizer is for openai:, vllm: models" in result.output
