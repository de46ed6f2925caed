"""The sweep's cases of the leaderboard service's commands: serve, serve-worker, serve-admin and submit --to."""

from __future__ import annotations

import shutil
from pathlib import Path

from hostile_cases.common import (
    case,
    fifo_at,
    free_port,
    read_jsonl,
    set_fields,
    write_jsonl,
)
from hostile_cases.harness import EITHER, ERROR, CaseDir, rueval


def gold_copy(c: CaseDir) -> Path:
    target = c / "gold"
    shutil.copytree(c.shared.gold(), target)
    return target


@case("serve", "serve --gold that does not exist", ERROR, "nope", timeout=30)
def _(c: CaseDir) -> list[str]:
    return rueval("serve", "--gold", c / "nope", "--store", c / "board", "--port", free_port())


@case("serve", "serve --gold with an idx '0' in a test file", ERROR, "PARus/test.jsonl:1: field 'idx'", timeout=30)
def _(c: CaseDir) -> list[str]:
    gold = gold_copy(c)
    set_fields(gold / "PARus" / "test.jsonl", 1, idx="0")
    return rueval("serve", "--gold", gold, "--store", c / "board", "--port", free_port())


@case("serve", "serve --gold with a FIFO as a test file", ERROR, "named pipe", timeout=30)
def _(c: CaseDir) -> list[str]:
    gold = gold_copy(c)
    fifo_at(c, gold / "PARus" / "test.jsonl")
    return rueval("serve", "--gold", gold, "--store", c / "board", "--port", free_port())


@case("serve", "serve --gold with unlabelled tests", ERROR, "label", timeout=30)
def _(c: CaseDir) -> list[str]:
    gold = gold_copy(c)
    records = read_jsonl(gold / "PARus" / "test.jsonl")
    write_jsonl(gold / "PARus" / "test.jsonl", [{k: v for k, v in r.items() if k != "label"} for r in records])
    return rueval("serve", "--gold", gold, "--store", c / "board", "--port", free_port())


for option, value in (("--store", "FILE"), ("--db", "nonsense"), ("--db", "postgresql://nobody@127.0.0.1:9/x"),
                      ("--db", "sqlite:///FILE/x.db"), ("--host", "999.1.1.1"), ("--lease", "nan"),
                      ("--max-upload-mb", "nan"), ("--max-upload-mb", "inf"), ("--lease", "inf"),
                      ("--daily-limit", "99999999999999999999"), ("--port", "nan")):  # fmt: skip
    for command in ("serve", "serve-worker"):
        if command == "serve-worker" and option not in ("--store", "--db", "--lease"):
            continue

        # a limit of any size is a limit (counted in Python): the board serves with it
        right = EITHER if option == "--daily-limit" else ERROR

        @case("serve", f"{command} {option} {value}", right, "", timeout=30, serves=True)
        def _(c: CaseDir, command=command, option=option, value=value) -> list[str]:
            if "FILE" in value:  # a file where a folder goes
                (c / "file").write_text("mine", encoding="utf-8")
                value = value.replace("FILE", str(c / "file"))
            store = () if option == "--store" else ("--store", c / "board")
            port = ("--port", str(free_port())) if command == "serve" and option != "--port" else ()
            return rueval(command, "--gold", c.shared.gold(), *store, *port, option, value)


for name in ("", " ", "x" * 10_000, "a\nb"):

    @case("serve", f"serve-admin add-team {name[:12]!r}", ERROR, "", timeout=30)
    def _(c: CaseDir, name=name) -> list[str]:
        return rueval("serve-admin", "add-team", name, "--store", c / "board")


for to, token in (("http://127.0.0.1:9", "t"), ("nope", "t"), ("http://127.0.0.1:9", None), ("", "t")):

    @case("serve", f"submit --to {to!r} token {token!r}", ERROR, "", timeout=60)
    def _(c: CaseDir, to=to, token=token) -> list[str]:
        return rueval("submit", "-o", c / "sub.zip", "--to", to, *(("--token", token) if token else ()))
