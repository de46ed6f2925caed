"""The sweep's cases of code and bombs in data (issue 35, findings 1 and 9): template injection in a task
file (when it is read, when a prompt is filled, when --resume reads it again), MERA instructions that
reach past their fields or ask for gigabytes, YAML alias bombs and duplicate keys, lone surrogates."""

from __future__ import annotations

import json

from hostile_cases.common import case, read_jsonl
from hostile_cases.harness import ERROR, CaseDir, rueval
from hostile_cases.round3 import ISSUE_PAYLOAD
from hostile_cases.round3 import TASK as ROUND3_TASK

# round3's task file with a label field and two answers: only doc_to_text varies here
TASK = ROUND3_TASK.replace("{target}", "label").replace("{choice}", '["нет", "да"]')


def task_folder(c: CaseDir, template: str = "Отзыв: {{text}}") -> tuple[str, ...]:
    """A task file over records that hold dunder names as data; --include-path and -t for it. The payload's
    file is the case's ``pwned``, checked absent after the command."""
    records = [{"text": f"Отзыв {i}.", "name": "__class__", "label": i % 2} for i in range(4)]
    for split in ("train", "test"):
        (c / "tasks" / "data").mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        (c / "tasks" / "data" / f"{split}.jsonl").write_text(lines, encoding="utf-8")
    text = json.dumps(template.replace("id > F", f"id > {c / 'pwned'}"), ensure_ascii=False)
    (c / "tasks" / "hostile.yaml").write_text(TASK.format(text=text), encoding="utf-8")
    c.check(lambda o: "the payload wrote its file" if (c / "pwned").exists() else None)
    return ("--include-path", str(c / "tasks"), "-t", "hostile")


@case("templates", "the payload of issue 35 in doc_to_text", ERROR, "doc_to_text", "'__")
def _(c: CaseDir) -> list[str]:
    return rueval("run", "-m", "majority", *task_folder(c, ISSUE_PAYLOAD), "-o", c / "out")


@case("templates", "a dunder name taken from a record (tiny model)", ERROR, "doc_to_text", "unsafe", timeout=300)
def _(c: CaseDir) -> list[str]:
    return rueval("run", "-m", f"hf:{c.shared.tiny()}", *task_folder(c, "{{ text | attr(name) }}"), "-o", c / "out")


@case("templates", "a 1500000000 wide format in doc_to_text (tiny model)", ERROR, "width", timeout=300, memory_mb=1500)
def _(c: CaseDir) -> list[str]:
    template = "{{ '{:>1500000000}'.format(text) }}"
    return rueval("run", "-m", f"hf:{c.shared.tiny()}", *task_folder(c, template), "-o", c / "out")


@case("templates", "text * 10**9 in doc_to_text (tiny model)", ERROR, "would pass", timeout=300, memory_mb=1500)
def _(c: CaseDir) -> list[str]:
    return rueval("run", "-m", f"hf:{c.shared.tiny()}", *task_folder(c, "{{ text * 1000000000 }}"), "-o", c / "out")


@case("templates", "--resume of a run whose task file now holds the payload", ERROR, "doc_to_text", "'__")
def _(c: CaseDir) -> list[str]:
    c.rueval("run", "-m", "majority", *task_folder(c), "-o", c / "out")
    (c / "tasks" / "hostile.yaml").write_text(
        TASK.format(text=json.dumps(ISSUE_PAYLOAD.replace("id > F", f"id > {c / 'pwned'}"))), encoding="utf-8"
    )
    return rueval("run", "--resume", "-o", c / "out")


def mera_instruction(c: CaseDir, instruction: str) -> list[str]:
    """MERA's PARus (task folders) with one train record's instruction replaced."""
    data = c.samples()
    records = read_jsonl(data / "PARus" / "train.jsonl")
    mera = {
        "data": {
            split: [
                {"instruction": instruction if n == 1 else "{premise} {choice1} {choice2}",
                 "inputs": {k: r[k] for k in ("premise", "choice1", "choice2")},
                 "outputs": str(r["label"] + 1), "meta": {"id": n, "task": r["question"]}}
                for n, r in enumerate(records[:4])
            ]
            for split in ("train", "test")
        }
    }  # fmt: skip
    (c / "mera" / "PARus").mkdir(parents=True)
    (c / "mera" / "PARus" / "task.json").write_text(json.dumps(mera), encoding="utf-8")  # ASCII: escapes kept
    return rueval("run", "-m", "majority", "-t", "parus", "--data", c / "mera", "-o", c / "out")


for _instruction, _said in (
    ("{premise.nope}", "more than a field name"),
    ("{premise.__class__.__mro__}", "more than a field name"),
    ("{premise:>1500000000}", "width or precision"),
):

    @case("templates", f"a MERA instruction {_instruction}", ERROR, "instruction", _said, memory_mb=1500)
    def _(c: CaseDir, instruction: str = _instruction) -> list[str]:
        return mera_instruction(c, instruction)


@case("templates", "a YAML alias bomb as a task file", ERROR, "aliases", timeout=60, memory_mb=400)
def _(c: CaseDir) -> list[str]:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 10)]
    task_folder(c)
    with open(c / "tasks" / "hostile.yaml", "a", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\nmetadata: *l9\n")
    return rueval("run", "-m", "majority", "--include-path", c / "tasks", "-t", "hostile", "-o", c / "out")


@case("templates", "a YAML task file with a key given twice", ERROR, "hostile.yaml:9", "key given twice")
def _(c: CaseDir) -> list[str]:
    task_folder(c)
    with open(c / "tasks" / "hostile.yaml", "a", encoding="utf-8") as file:
        file.write("doc_to_choice: ['да', 'нет']\n")
    return rueval("run", "-m", "majority", "--include-path", c / "tasks", "-t", "hostile", "-o", c / "out")


@case("templates", "a lone surrogate in a PARus premise", ERROR, "val.jsonl:1", "premise", "lone surrogate")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    lines = (data / "PARus" / "val.jsonl").read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), "premise": "Лёд \ud800 растаял."})
    (data / "PARus" / "val.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("templates", "a lone surrogate in a MERA instruction", ERROR, "instruction", "lone surrogate")
def _(c: CaseDir) -> list[str]:
    return mera_instruction(c, "{premise} \ud800 {choice1}")
