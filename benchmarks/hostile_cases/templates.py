"""The sweep's cases of code and bombs in data (issue 35, findings 1 and 9), in lm-eval task files since
issue 37: template injection (when a task file is read, when a record fills a prompt, when --resume reads
it again), MERA instructions that reach past their fields or ask for gigabytes, YAML alias bombs and
duplicate keys, lone surrogates; and what decides whether a task folder's code runs: ``!function`` with
and without --trust-task-code, ``unsafe_code`` without --confirm-run-unsafe-code, a broken file beside
the asked one."""

from __future__ import annotations

import json

from hostile_cases.common import case, read_jsonl, results
from hostile_cases.harness import ERROR, OK, CaseDir, Outcome, rueval
from hostile_cases.round3 import FILL_TIME, ISSUE_PAYLOAD, READ_TIME, appended, armed, hf_run, task_folder


def asked(c: CaseDir, text: str | None = None, *args: str) -> list[str]:
    """hf:TINY on the task ``hostile`` (round3's task file), its doc_to_text ``text`` writing ``pwned`` if it
    ran; a refusal leaves no run folder."""
    tasks = task_folder(c) if text is None else task_folder(c, text=armed(c, text))
    c.nothing_written(c / "out")
    return hf_run(c, "--include-path", tasks, "-t", "hostile", *args)


@case("templates", "the payload of issue 35 in doc_to_text", ERROR, *READ_TIME, "'__", timeout=180)
def _(c: CaseDir) -> list[str]:
    return asked(c, ISSUE_PAYLOAD)


@case("templates", "a dunder name taken from a record (tiny model)", ERROR, *FILL_TIME, timeout=180)
def _(c: CaseDir) -> list[str]:
    return asked(c, "{{ text | attr(attribute) }}")


@case("templates", "a 1500000000 wide format in doc_to_text (tiny model)", ERROR, FILL_TIME[0], "width or precision",
      timeout=180, memory_mb=1500)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    return asked(c, "{{ '{:>1500000000}'.format(text) }}")


@case("templates", "text * 10**9 in doc_to_text (tiny model)", ERROR, FILL_TIME[0], "the text would pass",
      timeout=180, memory_mb=1500)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    return asked(c, "{{ text * 1000000000 }}")


@case("templates", "--resume of a run whose task file now holds the payload", ERROR, *READ_TIME, "'__", timeout=240)
def _(c: CaseDir) -> list[str]:
    c.rueval(*hf_run(c, "--include-path", task_folder(c), "-t", "hostile")[3:])
    task_folder(c, text=armed(c, ISSUE_PAYLOAD))
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


@case("templates", "a YAML alias bomb as a task file", ERROR, "hostile.yaml", "more than 100000 values",
      timeout=60, memory_mb=800)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 10)]
    argv = asked(c)
    appended(c / "tasks", "\n".join(lines) + "\nmetadata: *l9")
    return argv


@case("templates", "a YAML task file with a key given twice", ERROR,
      "hostile.yaml:11: field 'doc_to_choice': key given twice (first on line 10)", timeout=180)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    argv = asked(c)
    appended(c / "tasks", "doc_to_choice: ['да', 'нет']")
    return argv


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


# Python beside a task file, and the model's code: what lm-eval would run, only with the user's consent
def with_code(c: CaseDir, task: str = "hostile") -> None:
    """tasks/utils.py, which leaves the file ``imported`` when imported, named by ``task``'s process_docs
    (keeping one test record)."""
    code = f"from pathlib import Path\n\nPath({str(c / 'imported')!r}).write_text('imported')\n\n\n"
    (c / "tasks" / "utils.py").write_text(code + "def first_one(dataset):\n    return dataset.select(range(1))\n")
    if task == "hostile":
        appended(c / "tasks", "process_docs: !function utils.first_one")


def imported(c: CaseDir, expected: bool) -> None:
    said = "imported" if expected else "not imported"
    c.check(lambda o: None if (c / "imported").exists() == expected else f"tasks/utils.py {said}: wrong")


@case("templates", "!function without --trust-task-code: refused, its module not imported", ERROR,
      "hostile.yaml:11: utils.first_one", "--trust-task-code", timeout=180)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    argv = asked(c)
    with_code(c)
    imported(c, False)
    return argv


@case("templates", "!function with --trust-task-code: runs", OK, timeout=180)
def _(c: CaseDir) -> list[str]:
    argv = asked(c, None, "--trust-task-code")
    with_code(c)
    imported(c, True)
    c.check(
        lambda o: None if (n := results(c / "out")["tasks"]["hostile"]["n"]) == 1 else f"n {n}, process_docs keeps 1"
    )
    return argv


@case("templates", "!function in another task's file of the folder: that module never imported", OK, timeout=180)
def _(c: CaseDir) -> list[str]:
    argv = asked(c)
    with_code(c, "other")
    other = (c / "tasks" / "hostile.yaml").read_text(encoding="utf-8").replace("task: hostile", "task: other")
    (c / "tasks" / "other.yaml").write_text(other + "process_docs: !function utils.first_one\n", encoding="utf-8")
    imported(c, False)
    return argv


@case("templates", "unsafe_code: true without --confirm-run-unsafe-code", ERROR, "hostile.yaml", "unsafe_code",
      "--confirm-run-unsafe-code", timeout=180)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    argv = asked(c)
    appended(c / "tasks", "metadata: {version: 1.0}\nunsafe_code: true")
    return argv


for _label, _text, _memory in (
    ("not valid YAML", "task: broken\ndoc_to_text: [unclosed\n", None),
    ("an alias bomb", "\n".join(['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'] +
     [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 10)]) + "\ntask: bomb\n", 800),
):  # fmt: skip

    @case("templates", f"{_label} in another file of the include folder: a warning, the asked task runs", OK,
          timeout=180, memory_mb=_memory)  # fmt: skip
    def _(c: CaseDir, text: str = _text) -> list[str]:
        argv = asked(c)
        (c / "tasks" / "broken.yaml").write_text(text, encoding="utf-8")

        def warned(o: Outcome) -> str | None:
            if "broken.yaml" not in o.stderr or "its tasks are not run" not in o.stderr:
                return "no warning naming broken.yaml"
            return None if results(c / "out")["tasks"]["hostile"]["n"] == 2 else "hostile not scored on its 2 records"

        c.check(warned)
        return argv
