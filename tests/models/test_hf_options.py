"""`hf:` options for large models, on CPU with the tiny GPT-2: --device-map auto (accelerate),
--batch-size auto backing off on out-of-memory, --peft adapters, --revision and --load-in."""

from __future__ import annotations

import json

import pytest
from support import require_modules

require_modules("torch", "transformers", "peft", extra="peft")

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM

from rueval.core.errors import RuevalError
from rueval.models.backends.hf import HFCausalLM
from rueval.models.base import Loglikelihood
from rueval.models.factory import ModelOptions, open_engine

REQUESTS = [
    Loglikelihood("Кошка сидит на", " окне"),
    Loglikelihood("Кошка сидит на", " крыше"),
    Loglikelihood("Вопрос: сколько будет два плюс два? Ответ:", " четыре"),
    Loglikelihood("", "Мама мыла раму."),
    Loglikelihood("Собака лает на", " луну"),
]


@pytest.fixture(scope="module")
def adapter_dir(tiny_gpt2_dir, tmp_path_factory):
    """A LoRA adapter with non-zero weights, so that it changes the model's scores."""
    torch.manual_seed(3)
    base = AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], init_lora_weights=False, fan_in_fan_out=True)
    out = tmp_path_factory.mktemp("adapter")
    get_peft_model(base, config).save_pretrained(out)
    return out


def logprobs(model: HFCausalLM) -> list[float]:
    return [r.logprob for r in model.loglikelihood(REQUESTS)]


def test_device_map_auto_places_the_weights_with_accelerate_and_scores_alike(tiny_gpt2_dir, monkeypatch):
    load, asked = AutoModelForCausalLM.from_pretrained, []

    def spying(*args, **kwargs):
        asked.append(kwargs.get("device_map"))
        return load(*args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", spying)
    mapped = HFCausalLM(str(tiny_gpt2_dir), device_map="auto")
    monkeypatch.undo()
    assert asked == ["auto"] and mapped.device.type == "cpu"  # the only device here
    assert logprobs(mapped) == pytest.approx(logprobs(HFCausalLM(str(tiny_gpt2_dir))), abs=1e-5)


def test_batch_size_auto_backs_off_on_out_of_memory(tiny_gpt2_dir):
    expected = logprobs(HFCausalLM(str(tiny_gpt2_dir), batch_size=1))
    model = HFCausalLM(str(tiny_gpt2_dir))
    forward, widest = model._forward, []

    def small_memory(input_ids, *args):
        if input_ids.numel() > 24:  # the longest request alone has 18 tokens
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")  # what torch says
        widest.append(input_ids.numel())
        return forward(input_ids, *args)

    model._forward = small_memory
    assert logprobs(model) == pytest.approx(expected, abs=1e-5)
    assert max(widest) <= 24 and model.max_batch_tokens < 16384  # the budget that fitted is kept
    fixed = HFCausalLM(str(tiny_gpt2_dir), batch_size=8)
    fixed._forward = small_memory
    with pytest.raises(RuntimeError, match="out of memory"):  # a fixed batch size is not changed
        fixed.loglikelihood(REQUESTS)


def test_a_peft_adapter_is_merged_and_enters_the_identity(tiny_gpt2_dir, adapter_dir):
    adapted = HFCausalLM(str(tiny_gpt2_dir), peft=str(adapter_dir))
    base = HFCausalLM(str(tiny_gpt2_dir))
    reference = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir), adapter_dir).eval()
    ids, first = adapted.encode(REQUESTS[0])
    with torch.no_grad():
        rows = reference(torch.tensor([ids])).logits[0].log_softmax(-1)
    expected = sum(float(rows[j - 1, ids[j]]) for j in range(first, len(ids)))
    assert adapted.loglikelihood(REQUESTS[:1])[0].logprob == pytest.approx(expected, abs=1e-4)
    assert logprobs(adapted) != pytest.approx(logprobs(base), abs=1e-3)
    assert adapted.identity.startswith(base.identity + f" peft={adapter_dir}@")


def test_missing_pieces_give_clear_errors(tiny_gpt2_dir, tmp_path):
    with pytest.raises(RuevalError, match="--peft .*: not a directory"):
        HFCausalLM(str(tiny_gpt2_dir), peft=str(tmp_path / "nothing"))
    with pytest.raises(RuevalError, match="--load-in 8bit needs (bitsandbytes|a CUDA GPU)"):
        HFCausalLM(str(tiny_gpt2_dir), load_in="8bit")
    with pytest.raises(RuevalError, match="--device-map everywhere: expected one of auto"):
        open_engine(f"hf:{tiny_gpt2_dir}", ModelOptions(device_map="everywhere"))
    with pytest.raises(RuevalError, match="--load-in 2bit: expected one of 8bit, 4bit"):
        open_engine(f"hf:{tiny_gpt2_dir}", ModelOptions(load_in="2bit"))
    with pytest.raises(RuevalError, match="--revision ' ': expected a hub branch, tag or commit"):
        open_engine(f"hf:{tiny_gpt2_dir}", ModelOptions(revision=" "))


def test_a_revision_of_a_local_folder_is_refused_not_taken_for_its_identity(cli, tiny_gpt2_dir, tmp_path):
    """The identity names the cached results: a revision in place of the folder's content hash would serve
    the results of the weights the folder held before."""
    result = cli("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "parus", "--revision", "main", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert (
        result.stderr.splitlines()[-1]
        == f"error: --revision main: {tiny_gpt2_dir} is a local folder; its content is its revision"
    )
    assert not (tmp_path / "out").exists()


def test_cli_takes_the_large_model_options(cli, tiny_gpt2_dir, adapter_dir, tmp_path):
    out = tmp_path / "out"
    args = ("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "parus", "--limit", "3", "-o", out)
    result = cli(*args, "--device-map", "auto", "--peft", adapter_dir, "--cache", "off")
    assert result.exit_code == 0, result.stderr
    assert f"peft={adapter_dir}@" in json.loads((out / "results.json").read_text())["model_identity"]
    refused = cli(*args[:-1], tmp_path / "other", "--load-in", "4bit")
    assert refused.exit_code == 2 and "--load-in 4bit needs" in refused.stderr
