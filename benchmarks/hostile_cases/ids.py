"""The sweep's cases of ids validated where they enter: RSG's idx in every loader, TAPE's ID and
question_id, MERA's meta.id, the leaderboard's uploads."""

from __future__ import annotations

import json
from pathlib import Path

from hostile_cases.common import (
    DROP,
    case,
    mera_folder,
    read_jsonl,
    set_fields,
    write_jsonl,
    zip_members,
)
from hostile_cases.harness import ERROR, OK, CaseDir, python, rueval

BAD_IDS = {"missing": DROP, "null": None, "2.5": 2.5, "'2'": "2", "[1,2]": [1, 2], "true": True, "''": "", "{}": {}}

for label, value in BAD_IDS.items():

    @case("ids", f"submit: PARus test idx {label}", ERROR, "PARus/test.jsonl:1: field 'idx'")
    def _(c: CaseDir, value=value) -> list[str]:
        data = c.samples()
        set_fields(data / "PARus" / "test.jsonl", 1, idx=value)
        c.nothing_written(c / "sub.zip")
        return rueval("submit", "-m", "majority", "--data", data, "-o", c / "sub.zip")

    @case("ids", f"run: PARus val idx {label}", ERROR, "PARus/val.jsonl:1: field 'idx'")
    def _(c: CaseDir, value=value) -> list[str]:
        data = c.samples()
        set_fields(data / "PARus" / "val.jsonl", 1, idx=value)
        c.nothing_written(c / "out")
        return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("ids", "submit: two test lines with one idx", ERROR, "PARus/test.jsonl", "idx")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "test.jsonl", 2, idx=0)
    c.nothing_written(c / "sub.zip")
    return rueval("submit", "-m", "majority", "--data", data, "-o", c / "sub.zip")


@case("ids", "run: two val lines with one idx", ERROR, "PARus/val.jsonl", "idx")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "val.jsonl", 2, idx=0)
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case(
    "ids", "run: a missing idx whose position collides is reported missing", ERROR, "val.jsonl:3: field 'idx': missing"
)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "val.jsonl", 1, idx=2)
    set_fields(data / "PARus" / "val.jsonl", 3, idx=DROP)
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("ids", "run -m tfidf: PARus train idx null", ERROR, "PARus/train.jsonl:1: field 'idx'")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "train.jsonl", 1, idx=None)
    return rueval("run", "-m", "tfidf", "-t", "parus", "--data", data, "-o", c / "out")


@case("ids", "audit: PARus val idx '2'", ERROR, "PARus/val.jsonl:1: field 'idx'")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "val.jsonl", 1, idx="2")
    return rueval("audit", "-t", "parus", "--data", data, "-o", c / "audit")


@case("ids", "submit: LiDiRus idx 1.5", ERROR, "LiDiRus.jsonl:1: field 'idx'")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "LiDiRus" / "LiDiRus.jsonl", 1, idx=1.5)
    c.nothing_written(c / "sub.zip")
    return rueval("submit", "-m", "majority", "--data", data, "-o", c / "sub.zip")


@case("ids", "submit: MuSeRC question idx missing", ERROR, "MuSeRC/test.jsonl:1: field 'passage.questions[0].idx'")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    records = read_jsonl(data / "MuSeRC" / "test.jsonl")
    del records[0]["passage"]["questions"][0]["idx"]
    write_jsonl(data / "MuSeRC" / "test.jsonl", records)
    c.nothing_written(c / "sub.zip")
    return rueval("submit", "-m", "majority", "--data", data, "-o", c / "sub.zip")


@case("ids", "submit: MuSeRC answer idx '0'", ERROR, "MuSeRC/test.jsonl:1", "answers[0].idx")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    records = read_jsonl(data / "MuSeRC" / "test.jsonl")
    records[0]["passage"]["questions"][0]["answers"][0]["idx"] = "0"
    write_jsonl(data / "MuSeRC" / "test.jsonl", records)
    c.nothing_written(c / "sub.zip")
    return rueval("submit", "-m", "majority", "--data", data, "-o", c / "sub.zip")


@case("ids", "submit: RuCoS query idx null", ERROR, "RuCoS/test.jsonl:1", "qas[0].idx")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    records = read_jsonl(data / "RuCoS" / "test.jsonl")
    records[0]["qas"][0]["idx"] = None
    write_jsonl(data / "RuCoS" / "test.jsonl", records)
    c.nothing_written(c / "sub.zip")
    return rueval("submit", "-m", "majority", "--data", data, "-o", c / "sub.zip")


@case("ids", "submit: a huge integer idx is written exactly", OK)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "test.jsonl", 1, idx=12345678901234567890123)
    c.check(
        lambda o: (
            None
            if zip_members(c / "sub.zip")["PARus.jsonl"][0]["idx"] == 12345678901234567890123
            else "the idx was not written as read"
        )
    )
    return rueval("submit", "-m", "majority", "--data", data, "-o", c / "sub.zip")


for label, value in {"''": "", "null": None, "2.5": 2.5, "missing in one record": DROP}.items():

    @case("ids", f"run: ru_openbook test ID {label}", ERROR, "ru_openbook/test.jsonl:2: field 'ID'")
    def _(c: CaseDir, value=value) -> list[str]:
        data = c.samples()
        set_fields(data / "ru_openbook" / "test.jsonl", 2, ID=value)
        return rueval("run", "-m", "majority", "-t", "ru_openbook", "--data", data, "-o", c / "out")


@case("ids", "run: ru_openbook two records with one ID", ERROR, "ru_openbook/test.jsonl", "ID")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    first = read_jsonl(data / "ru_openbook" / "test.jsonl")[0]["ID"]
    set_fields(data / "ru_openbook" / "test.jsonl", 2, ID=first)
    return rueval("run", "-m", "majority", "-t", "ru_openbook", "--data", data, "-o", c / "out")


@case("ids", "run: chegeka question_id null", ERROR, "chegeka/test.jsonl:1: field 'question_id'")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "chegeka" / "test.jsonl", 1, question_id=None)
    return rueval("run", "-m", "majority", "-t", "chegeka", "--data", data, "-o", c / "out")


@case("ids", "run: winograd (no ids) given an idx in one record", ERROR, "winograd/test.jsonl:2", "idx")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "winograd" / "test.jsonl", 2, idx=7)
    return rueval("run", "-m", "majority", "-t", "winograd", "--data", data, "-o", c / "out")


@case("ids", "API: evaluate on a val file with idx null", ERROR, "PARus/val.jsonl:1: field 'idx'")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "val.jsonl", 1, idx=None)
    return python(f"rueval.evaluate('majority', tasks='parus', data={str(data)!r})")


for label, ids in {"meta.id missing": [50, DROP], "meta.id '51'": [50, "51"], "meta.id twice": [50, 50]}.items():

    @case("ids", f"run on MERA files: test {label}", ERROR, "RCB/task.json", "meta.id")
    def _(c: CaseDir, ids=ids) -> list[str]:
        return rueval("run", "-m", "majority", "-t", "rcb", "--data", mera_folder(c, ids), "-o", c / "out")


@case("ids", "export: MERA's labelled test ids changed after the run", ERROR, "ids do not match")
def _(c: CaseDir) -> list[str]:
    root = mera_folder(c, [50, 51], answer="2")
    c.rueval("run", "-m", "majority", "-t", "rcb", "--data", root, "-o", c / "run")
    task = json.loads((root / "RCB" / "task.json").read_text(encoding="utf-8"))
    task["data"]["test"][1]["meta"]["id"] = 52
    (root / "RCB" / "task.json").write_text(json.dumps(task, ensure_ascii=False), encoding="utf-8")
    c.nothing_written(c / "sub.zip")
    return rueval("export", c / "run", "-o", c / "sub.zip")


def upload(c: CaseDir, lines_of: str) -> list[str]:
    """check_submission on a PARus file made by ``lines_of`` (Python: a list of {"idx", "label"} from ``ids``)."""
    sys_path = Path(__file__).resolve().parents[2] / "tests" / "serve"
    return python(
        f"""
import sys; sys.path.insert(0, {str(sys_path)!r})
from board_support import write_gold, zip_of
from rueval.serve.gold import Gold
from rueval.serve.upload import check_submission
gold = Gold.load(write_gold(Path({str(c / "gold")!r}), tasks=("parus",)))
ids = [e.idx for e in gold.tasks["parus"].examples]
check_submission(zip_of({{"PARus.jsonl": {lines_of}}}), gold)
"""
    )


for label, first in {"'0'": '"0"', "true": "True", "0.0": "0.0", "null": "None", "[0]": "[0]"}.items():

    @case("ids", f"serve upload: PARus idx {label}", ERROR, "PARus.jsonl:1: field 'idx'")
    def _(c: CaseDir, first=first) -> list[str]:
        return upload(c, f'[{{"idx": {first}, "label": 0}}] + [{{"idx": i, "label": 0}} for i in ids[1:]]')


@case("ids", "serve upload: PARus idx missing", ERROR, "PARus.jsonl:1: field 'idx': missing")
def _(c: CaseDir) -> list[str]:
    return upload(c, '[{"label": 0}] + [{"idx": i, "label": 0} for i in ids[1:]]')


@case("ids", "serve upload: a 2 MB line", ERROR, "PARus.jsonl:1", "line longer")
def _(c: CaseDir) -> list[str]:
    return upload(c, '"x" * (2 * 2**20)')
