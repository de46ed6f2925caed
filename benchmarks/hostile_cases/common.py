"""What the sweep's cases share: the registry (``case``), and helpers that make data, runs and
servers and check what a command left behind."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hostile_cases.harness import Case, CaseDir, Skip, rueval

CASES: list[Case] = []
GROUPS = (
    "ids",
    "numbers",
    "rundir",
    "bounds",
    "values",
    "api",
    "smaller",
    "serve",
    "templates",
    "round3",
)  # 27's, 35's
DROP = object()  # a field value that removes the field


def case(group: str, name: str, expect: str, *said: str, **options: Any):
    def register(prepare: Callable[[CaseDir], list[str]]) -> Callable[[CaseDir], list[str]]:
        CASES.append(Case(group, name, expect, prepare, said, **options))
        return prepare

    return register


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def set_fields(path: Path, line: int, **values: Any) -> None:
    """Line ``line`` (1-based) of a JSON Lines file with ``values`` set (DROP: removed)."""
    records = read_jsonl(path)
    for name, value in values.items():
        if value is DROP:
            records[line - 1].pop(name, None)
        else:
            records[line - 1][name] = value
    write_jsonl(path, records)


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def scores(out: Path) -> dict[str, float]:
    return {task: r["score"] for task, r in results(out)["tasks"].items()}


def zip_members(path: Path) -> dict[str, list[dict]]:
    with zipfile.ZipFile(path) as archive:
        return {
            n: [json.loads(x) for x in archive.read(n).decode().splitlines() if x.strip()] for n in archive.namelist()
        }


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def unchanged(c: CaseDir, folder: Path) -> None:
    before = tree(folder)
    c.check(lambda o: None if tree(folder) == before else f"{folder.name} changed although refused")


def said_in_output(c: CaseDir, *words: str) -> None:
    c.check(lambda o: None if all(w in o.output for w in words) else f"the output does not say {words}")


def majority_run(c: CaseDir, out: Path, *args: str) -> Path:
    c.rueval("run", "-m", "majority", "-t", "rcb,parus", "-o", out, *args)
    return out


def need_root() -> None:
    if os.geteuid() != 0:
        raise Skip("needs root")


def immutable(c: CaseDir, path: Path) -> None:
    """``path`` made immutable (chattr +i: even root cannot write it), undone after the case."""
    need_root()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)]).returncode:
        raise Skip("chattr +i is not available here")
    c.cleanups.append(lambda: subprocess.run(["chattr", "-i", str(path)]))


def mera_folder(c: CaseDir, rcb_test_ids: list[Any], answer: str = "") -> Path:
    """MERA's RCB task file; its test records' answers ``answer`` (MERA hides them: "")."""
    root = c / "mera"
    meta = {"verb": "знать", "negation": "no_negation", "genre": "kp"}

    def rcb(id_: Any, outputs: str) -> dict:
        record = {"instruction": "{premise} {hypothesis}", "outputs": outputs, "meta": {**meta, "id": id_}}
        record["inputs"] = {"premise": "Маша знала, что идёт дождь.", "hypothesis": "Идёт дождь."}
        if id_ is DROP:
            del record["meta"]["id"]
        return record

    (root / "RCB").mkdir(parents=True)
    splits = {"train": [rcb(1, "2"), rcb(2, "2"), rcb(3, "1")], "validation": [rcb(4, "2")]}
    splits["test"] = [rcb(i, answer) for i in rcb_test_ids]
    (root / "RCB" / "task.json").write_text(json.dumps({"data": splits}, ensure_ascii=False), encoding="utf-8")
    return root


def cache_file(c: CaseDir) -> Path:
    return c / "cache" / "requests" / "requests.sqlite"


def cache_rows(c: CaseDir) -> int:
    if not cache_file(c).exists():
        return 0
    with sqlite3.connect(cache_file(c)) as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def served_run(c: CaseDir, out: Path, *args: str, model: str = "openai:tiny-gpt2", task: str = "parus") -> list[str]:
    server = c.shared.server()
    tokenizer = ("--tokenizer", c.shared.tiny()) if model.startswith("openai:") else ()
    return rueval(
        "run", "-m", model, "--base-url", server.url, *tokenizer, "-t", task, "--limit", "4", "-o", out, *args
    )


def nothing_kept(c: CaseDir, out: Path) -> None:
    c.nothing_written(out / "results.json")
    c.check(lambda o: f"{cache_rows(c)} impossible results cached" if cache_rows(c) else None)


def fresh_scores(c: CaseDir, *args: str) -> dict[str, float]:
    """The scores of a run of ``args`` into a new folder: what a run that mixed nothing gives."""
    out = c / "fresh"
    c.rueval("run", *args, "-o", out)
    found = scores(out)
    shutil.rmtree(out)
    return found


def same_scores(c: CaseDir, out: Path, expected: dict[str, float]) -> None:
    c.check(lambda o: None if scores(out) == expected else f"scores {scores(out)}, a fresh run gives {expected}")


def zipped_samples(c: CaseDir, member: str, write: Callable[[Any], None]) -> Path:
    """The bundled samples as a zip, ``member`` (e.g. PARus/val.jsonl) written by ``write(stream)``."""
    from rueval.data.local import SAMPLES_DIR

    path = c / "data.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for file in sorted(SAMPLES_DIR.rglob("*.jsonl")):
            name = str(file.relative_to(SAMPLES_DIR))
            if name != member:
                archive.write(file, name)
        with archive.open(member, "w", force_zip64=True) as stream:
            write(stream)
    return path


def repeated(chunk: bytes, total: int) -> Callable[[Any], None]:
    def write(stream) -> None:
        block = chunk * (2**20 // len(chunk))
        for _ in range(total // len(block)):
            stream.write(block)

    return write


def fifo_at(c: CaseDir, path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
