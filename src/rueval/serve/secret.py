"""The board's secret (`--secret-file`): 256 random bits that seed the bootstrap resamples and key
the hashes API tokens are looked up by. Without it nobody can redo a submission's resamples offline
(so its intervals and marks say nothing about the gold beyond its score), and a copy of the
database gives no token away.

The file is made once (``openssl rand -hex 32`` would do the same), readable by its owner only, and
kept outside the store: the store's folder is shared with workers and backed up with the uploads,
the secret is not. Every process of a board reads the same file, so its workers seed alike, and a
restart keeps the same secret: the same submission gets the same interval.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from rueval.core.errors import RuevalError

SECRET_BYTES = 32


def default_secret_file(store: Path) -> Path:
    """Beside the store, never in it: ``board`` -> ``board.secret``."""
    store = Path(store).resolve()
    return store.parent / f"{store.name}.secret"


def load_secret(path: Path, store: Path, create: bool = True) -> bytes:
    """The secret in ``path``, made there first (owner-only) if the file does not exist and
    ``create`` (a worker never makes one: it must seed as the board's other processes do)."""
    path, store = Path(path).resolve(), Path(store).resolve()
    if path == store or path.is_relative_to(store):
        raise RuevalError(f"--secret-file {path}: inside the store {store}; keep the secret outside it")
    if not path.exists():
        if not create:
            raise RuevalError(f"--secret-file {path}: not found; copy the board's secret file (`rueval serve` made it)")
        _create(path)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise RuevalError(f"--secret-file {path}: cannot be read ({getattr(e, 'strerror', None) or e})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise RuevalError(f"--secret-file {path}: readable by others; chmod 600 it")
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) < SECRET_BYTES:
        raise RuevalError(f"--secret-file {path}: expected {SECRET_BYTES * 2} hex digits (256 random bits)")
    return secret


def _create(path: Path) -> None:
    """A fresh secret, written whole under a temporary name and linked into place: a process
    starting at the same time reads either no file or the whole secret, and the first one wins."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as file:
            file.write(secrets.token_hex(SECRET_BYTES) + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # made meanwhile by another process of the board: theirs is the secret
        finally:
            temporary.unlink()
    except OSError as e:
        raise RuevalError(f"--secret-file {path}: cannot be made ({e.strerror or e})") from None


def keyed_digest(secret: bytes, purpose: str, *parts: bytes) -> bytes:
    """HMAC-SHA256 of the parts under the secret, one purpose's digests apart from another's."""
    message = purpose.encode() + b"".join(b"\0" + hashlib.sha256(part).digest() for part in parts)
    return hmac.new(secret, message, hashlib.sha256).digest()
