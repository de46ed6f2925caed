"""Loading an `hf:` model: its libraries and device, where its weights go and what is loaded with
them (accelerate's device map, bitsandbytes quantization, a PEFT adapter), and which weights they
are (the revision in the model's identity). Each is refused with a clear error when a library or a
GPU it needs is missing."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from rueval.core.background import in_background
from rueval.core.errors import RuevalError
from rueval.core.memory import import_libraries
from rueval.core.paths import cache_dir

TORCH_INSTALL = "pip install torch==2.13.0 (a CPU build; see pytorch.org for CUDA builds)"


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


def load_weights(
    path: str,
    dtype: str,
    trust_remote_code: bool,
    revision: str | None,
    placement: dict[str, Any],
    tokenizer_args: dict[str, Any] | None = None,
) -> tuple[Any, Any]:
    import torch
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(
            path, revision=revision, trust_remote_code=trust_remote_code, **(tokenizer_args or {})
        )
        model = AutoModelForCausalLM.from_pretrained(
            path,
            revision=revision,
            trust_remote_code=trust_remote_code,
            dtype=getattr(torch, dtype) if dtype != "auto" else "auto",
            **placement,
        )
    except (OSError, ValueError, SafetensorError) as e:  # SafetensorError: a damaged weights file
        raise RuevalError(f"hf:{path}: cannot load the model or its tokenizer ({str(e).splitlines()[0]})") from None
    return model, tokenizer


def require_libraries(path: str) -> None:
    """torch and transformers imported, with the base of every transformers model (its modeling_utils: most
    of the import's time, whichever model loads) kept out of the cyclic collector's way (import_libraries)."""
    try:
        import_libraries("torch")
    except ImportError:
        raise RuevalError(f"-m hf:{path} needs PyTorch, which is not installed: {TORCH_INSTALL}") from None
    try:
        import_libraries("transformers")
    except ImportError:
        raise RuevalError(
            f"-m hf:{path} needs transformers, which is not installed: pip install 'rueval[lm]'"
        ) from None
    import_libraries("transformers.modeling_utils")


def check_device(device: str):
    """The torch device, refused before any weights load if torch does not know it or sees none."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise RuevalError(f"--device {device}: not a torch device; expected e.g. cpu, cuda, cuda:1, mps") from None
    if parsed.type == "cpu":
        return parsed
    backend = getattr(torch, parsed.type, None)  # torch.cuda, torch.mps, torch.xpu, ...
    available = getattr(backend, "is_available", None)
    if backend is None or available is None or not available():
        raise RuevalError(f"--device {device}: torch {torch.__version__} sees no {parsed.type} device on this machine")
    count = backend.device_count()
    if parsed.index is not None and parsed.index >= count:
        raise RuevalError(f"--device {device}: this machine has {count} {parsed.type} device(s), numbered from 0")
    return parsed


def hash_while_loading(path: str, revision: str | None) -> Future[str] | None:
    """For a local folder loaded without a named revision, its content hash (model_revision's),
    started now in a thread: hashlib lets go of the interpreter over large reads, so the weights are
    hashed while torch and transformers import and read them, and the page cache serves the second read.
    The thread is a daemon: a load that fails does not wait for it."""
    if not Path(path).is_dir():
        return None
    check_no_revision(path, revision)  # before the weights load
    return in_background(lambda: content_hash(Path(path)), "rueval-hash")


def check_no_revision(folder: str, revision: str | None) -> None:
    """A local folder has no revisions: its content is its revision (a named one would name the cached
    results of whatever the folder held before)."""
    if revision is not None:
        raise RuevalError(f"--revision {revision}: {folder} is a local folder; its content is its revision")


def model_revision(path: str, config=None, revision: str | None = None, folder_hash: Future[str] | None = None) -> str:
    """For a local directory a hash of its files' contents (``folder_hash``'s, when hash_while_loading
    started it), else the hub commit, else the asked revision."""
    if Path(path).is_dir():
        check_no_revision(path, revision)
        return folder_hash.result() if folder_hash is not None else content_hash(Path(path))
    commit = getattr(config, "_commit_hash", None)
    if commit or revision:
        return str(commit or revision)
    # so that a cached result is never served for another revision
    raise RuevalError(f"hf:{path}: cannot tell which revision was loaded; download it to a folder and pass that")


def content_hash(folder: Path) -> str:
    """A hash of the name and full content of every file in the folder (weights, config, tokenizer;
    not hidden files or READMEs). Each file's hash is remembered by its path, size, mtime, ctime and
    inode, so a rerun on an unchanged folder reads no weights."""
    memo_path = cache_dir("model-files") / "sha256.json"
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    if not isinstance(memo, dict):  # damaged: every file is hashed again, and the memo written anew
        memo = {}
    digest, changed = hashlib.sha256(), False
    for file in sorted(folder.iterdir()):
        if not file.is_file() or file.name.startswith(".") or file.suffix.lower() == ".md":
            continue
        stat = file.stat()
        stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]
        key = str(file.resolve())
        known = memo.get(key)
        if not isinstance(known, dict) or known.get("stamp") != stamp or not isinstance(known.get("sha256"), str):
            with file.open("rb") as f:
                memo[key] = {"stamp": stamp, "sha256": hashlib.file_digest(f, "sha256").hexdigest()}
            changed = True
        digest.update(f"{file.name}\0{memo[key]['sha256']}\n".encode())
    if changed:  # written whole and renamed: concurrent runs at worst hash a file again
        temporary = memo_path.with_name(f"{memo_path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps(memo), encoding="utf-8")
            temporary.replace(memo_path)
        except OSError:  # a cache that cannot be written (read-only, full): the next run hashes again
            temporary.unlink(missing_ok=True)
    return digest.hexdigest()[:16]
