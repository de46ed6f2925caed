"""The sweep's cases of the smaller wrong answers: two folders for a task, bad labels, make-tiny-model,
escaping, extras not installed, --quiet, messages."""

from __future__ import annotations

import shutil
import sys
import zipfile
from typing import Any

from hostile_cases.common import (
    DROP,
    case,
    fresh_scores,
    majority_run,
    read_jsonl,
    same_scores,
    set_fields,
    write_jsonl,
)
from hostile_cases.harness import EITHER, ERROR, OK, CaseDir, Outcome, rueval


@case("smaller", "two folders a/PARus and b/parus with different labels", ERROR, "two folders")
def _(c: CaseDir) -> list[str]:
    from rueval.data.local import SAMPLES_DIR

    shutil.copytree(SAMPLES_DIR / "PARus", c / "root" / "a" / "PARus")
    shutil.copytree(SAMPLES_DIR / "PARus", c / "root" / "b" / "parus")
    records = read_jsonl(c / "root" / "b" / "parus" / "val.jsonl")
    write_jsonl(c / "root" / "b" / "parus" / "val.jsonl", [{**r, "label": 1 - r["label"]} for r in records])
    return rueval("run", "-m", "majority", "-t", "parus", "--data", c / "root", "-o", c / "out")


@case("smaller", "two folders PARus and parus side by side", ERROR, "two folders")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    shutil.copytree(data / "PARus", data / "parus")
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("smaller", "a zip with a/PARus and b/parus", ERROR, "two folders")
def _(c: CaseDir) -> list[str]:
    from rueval.data.local import SAMPLES_DIR

    with zipfile.ZipFile(c / "data.zip", "w") as archive:
        for folder in ("a/PARus", "b/parus"):
            for file in (SAMPLES_DIR / "PARus").iterdir():
                archive.write(file, f"{folder}/{file.name}")
    return rueval("run", "-m", "majority", "-t", "parus", "--data", c / "data.zip", "-o", c / "out")


RECORD_DAMAGE = {
    ("PARus", "val", "question 'why'"): {"question": "why"},
    ("PARus", "val", "question 'Cause'"): {"question": "Cause"},
    ("PARus", "val", "question missing"): {"question": DROP},
    ("PARus", "val", "label 2"): {"label": 2},
    ("PARus", "val", "label '1' (read as 1)"): {"label": "1"},
    ("PARus", "val", "premise 5"): {"premise": 5},
    ("PARus", "val", "choice1 missing"): {"choice1": DROP},
    ("RCB", "val", "label 'maybe'"): {"label": "maybe"},
    ("TERRa", "val", "label 1"): {"label": 1},
    ("DaNetQA", "val", "label 'true' (read as true)"): {"label": "true"},
    ("RWSD", "val", "target a string"): {"target": "x"},
    ("RUSSE", "val", "label 2"): {"label": 2},
    ("winograd", "test", "label 2"): {"label": 2},
    ("ru_openbook", "test", "answer 'Z'"): {"answer": "Z"},
    ("sit_ethics", "test", "sit_virtue 2"): {"sit_virtue": 2},
    ("sit_ethics", "test", "sit_law missing"): {"sit_law": DROP},
    ("chegeka", "test", "answer 5"): {"answer": 5},
}
for (folder, split, label), values in RECORD_DAMAGE.items():
    read_as = "read as" in label  # a label written as JSON text reads as the label (RUSSE's official "true")

    @case("smaller", f"{folder} {split}: {label}", OK if read_as else ERROR, f"{folder}/{split}.jsonl:1: field '")
    def _(c: CaseDir, folder=folder, split=split, values=values, read_as=read_as) -> list[str]:
        args = ("-m", "majority", "-t", folder.lower())
        if read_as:
            same_scores(c, c / "out", fresh_scores(c, *args))
        data = c.samples()
        set_fields(data / folder / f"{split}.jsonl", 1, **values)
        return rueval("run", *args, "--data", data, "-o", c / "out")


@case("smaller", "make-tiny-model onto an existing file", ERROR, "file")
def _(c: CaseDir) -> list[str]:
    (c / "mine.txt").write_text("mine", encoding="utf-8")
    c.check(lambda o: None if (c / "mine.txt").read_text(encoding="utf-8") == "mine" else "mine.txt changed")
    return rueval("make-tiny-model", c / "mine.txt")


@case("smaller", "make-tiny-model into a folder of one's own files: they are kept", EITHER, "mine")
def _(c: CaseDir) -> list[str]:
    (c / "mine").mkdir()
    (c / "mine" / "notes.txt").write_text("mine", encoding="utf-8")
    c.check(lambda o: None if (c / "mine" / "notes.txt").read_text(encoding="utf-8") == "mine" else "notes.txt lost")
    return rueval("make-tiny-model", c / "mine")


@case("smaller", "make-tiny-model '' (the current folder, as '.')", EITHER, "")
def _(c: CaseDir) -> list[str]:
    return rueval("make-tiny-model", "")


HOSTILE_NAMES = {
    "<script>": "<script>alert(1)</script>",
    "a pipe": "a|b",
    "a newline": "a\nb",
    "markdown": "**x**_[y](z)",
}
for label, name in HOSTILE_NAMES.items():

    @case("smaller", f"a run folder named with {label}: leaderboard and report escape it", OK)
    def _(c: CaseDir, name=name) -> list[str]:
        out = majority_run(c, c / name)

        def escaped(o: Outcome) -> str | None:
            for md in (c / "lb").glob("*.md"):
                text = md.read_text(encoding="utf-8")
                rows = [line for line in text.splitlines() if line.startswith("|")]
                if "<script>" in text or any(line.count(" | ") != rows[0].count(" | ") for line in rows[:1] + rows):
                    return f"{md.name}: the name breaks the table or goes in raw"
            c.rueval("report", out, "-o", c / "report.html")
            html = (c / "report.html").read_text(encoding="utf-8")
            return "report.html holds the raw <script>" if "<script>alert" in html else None

        c.check(escaped)
        return rueval("leaderboard", out, "-o", c / "lb")


def without(module: str, *argv: Any) -> list[str]:
    """The command line run with ``module`` impossible to import (an extra not installed)."""
    code = f"import sys; sys.modules[{module!r}] = None; sys.argv = ['rueval', *{[str(a) for a in argv]!r}]; "
    return [sys.executable, "-c", code + "from rueval.cli import main; main()"]


for module, argv, said in (
    ("transformers", ("run", "-m", "finetune:x", "-t", "parus"), "pip install"),
    ("transformers", ("run", "-m", "hf:x", "-t", "parus"), "pip install"),
    ("torch", ("run", "-m", "hf:x", "-t", "parus"), "torch"),
    ("natasha", ("run", "-t", "winograd", "--perturb", "change_char_case", "--limit", "2"), "pip install"),
    ("peft", ("run", "-m", "hf:TINY", "-t", "parus", "--peft", "x"), "peft"),
    ("fastapi", ("serve", "--gold", "x"), "pip install"),
):

    @case("smaller", f"{' '.join(argv[:3])} without {module}", ERROR, said)
    def _(c: CaseDir, module=module, argv=argv) -> list[str]:
        return without(module, *[str(c.shared.tiny()) if a == "TINY" else a for a in argv])


for command in ("run", "submit", "perturb"):

    @case("smaller", f"{command} --quiet: no progress bars", OK)
    def _(c: CaseDir, command=command) -> list[str]:
        def quiet(o: Outcome) -> str | None:
            bars = [line for line in o.stderr.splitlines() if "%|" in line or "it/s" in line or "Loading" in line]
            return f"stderr shows: {bars[0][:100]}" if bars else None

        c.check(quiet)
        if command == "perturb":
            return rueval("perturb", "-t", "winograd", "--perturbations", "change_char_case", "--limit", "2", "-q",
                          "-o", c / "out")  # fmt: skip
        model = ("-m", f"hf:{c.shared.tiny()}")
        out = ("-o", c / "sub.zip") if command == "submit" else ("-t", "parus", "--limit", "2", "-o", c / "out")
        return rueval(command, *model, *out, "-q")


@case("smaller", "-m openai: says what openai: needs, not an hf: example", ERROR, "openai:")
def _(c: CaseDir) -> list[str]:
    c.check(lambda o: "suggests hf:" if "hf:" in o.error_line() else None)
    return rueval("run", "-m", "openai:", "-t", "parus", "-o", c / "out")


@case("smaller", "--perturb all:5 says all takes no rate", ERROR, "all takes no rate")
def _(c: CaseDir) -> list[str]:
    return rueval("run", "-t", "winograd", "--perturb", "all:5", "-o", c / "out")


@case("smaller", "val.jsonl a folder: said so, not 'no val split'", ERROR, "a folder where a file is expected")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    (data / "PARus" / "val.jsonl").unlink()
    (data / "PARus" / "val.jsonl").mkdir()
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")
