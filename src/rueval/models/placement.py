"""Where an `hf:` model's weights go and what is loaded with them: accelerate's device map,
bitsandbytes quantization, a PEFT adapter. Each is refused with a clear error when a library
or a GPU it needs is missing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rueval.errors import RuevalError


def weights_placement(device_map: str | None, load_in: str | None, peft: str | None) -> dict:
    """from_pretrained's arguments that place and quantize the weights, refused clearly when a
    library or a GPU they need is missing."""
    import torch

    if peft and not Path(peft).is_dir():
        raise RuevalError(f"--peft {peft}: not a directory (a PEFT adapter saved with save_pretrained)")
    if peft and importlib.util.find_spec("peft") is None:
        raise RuevalError("--peft needs peft: pip install 'rueval[peft]'")
    placement: dict = {}
    if load_in:
        if peft:
            raise RuevalError("--peft cannot be merged into --load-in weights; merge the adapter first")
        if importlib.util.find_spec("bitsandbytes") is None:
            raise RuevalError(f"--load-in {load_in} needs bitsandbytes: pip install 'rueval[quantize]'")
        if not torch.cuda.is_available():
            raise RuevalError(f"--load-in {load_in} needs a CUDA GPU; torch {torch.__version__} sees none")
        from transformers import BitsAndBytesConfig

        placement["quantization_config"] = BitsAndBytesConfig(
            load_in_8bit=load_in == "8bit", load_in_4bit=load_in == "4bit"
        )
        device_map = device_map or "auto"
    if device_map:
        if importlib.util.find_spec("accelerate") is None:
            raise RuevalError(f"--device-map {device_map} needs accelerate: pip install 'rueval[lm]'")
        placement["device_map"] = device_map
    return placement


def merged_adapter(model, adapter: str):
    """The model with the PEFT adapter's weights merged in (forwards stay plain transformers ones)."""
    from peft import PeftModel

    try:
        return PeftModel.from_pretrained(model, adapter).merge_and_unload()
    except (OSError, ValueError, KeyError) as e:
        raise RuevalError(f"--peft {adapter}: cannot load the adapter ({str(e).splitlines()[0]})") from None
