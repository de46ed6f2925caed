"""The sweep's cases of unbounded inputs: zip bombs, pipes and devices where files go, a server that
never answers, the memory of a large file."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

from hostile_cases.common import (
    case,
    fifo_at,
    majority_run,
    read_jsonl,
    repeated,
    served_run,
    set_fields,
    zipped_samples,
)
from hostile_cases.harness import EITHER, ERROR, OK, CaseDir, Outcome, rueval
from hostile_cases.round3 import hf_run, task_folder


@case("bounds", "a 2 MB zip of 2 GiB of newlines as --data", ERROR, "--max-file-mb", timeout=60, slow=True)
def _(c: CaseDir) -> list[str]:
    data = zipped_samples(c, "PARus/val.jsonl", repeated(b"\n", 2 * 2**30))
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("bounds", "a zip of 2 GiB without a line break", ERROR, "--max-file-mb", timeout=60, slow=True)
def _(c: CaseDir) -> list[str]:
    data = zipped_samples(c, "PARus/val.jsonl", repeated(b"x", 2 * 2**30))
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("bounds", "a zip of 2 GiB of '{}' lines", ERROR, "--max-file-mb", timeout=60, slow=True)
def _(c: CaseDir) -> list[str]:
    data = zipped_samples(c, "PARus/val.jsonl", repeated(b"{}\n", 2 * 2**30))
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("bounds", "2 million blank lines in a plain val file", ERROR, "--max-blank-lines", timeout=60)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    with (data / "PARus" / "val.jsonl").open("ab") as f:
        f.write(b"\n" * 2_000_000)
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("bounds", "a 30 MB line, --max-line-mb 1", ERROR, "line longer", timeout=60)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "val.jsonl", 1, premise="я" * (15 * 2**20))
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "--max-line-mb", "1", "-o", c / "out")


@case("bounds", "a 30 MB line, audit (no --max-line-mb there)", ERROR, "line longer", timeout=60)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "val.jsonl", 1, premise="я" * (15 * 2**20))
    return rueval("audit", "-t", "parus", "--data", data, "-o", c / "audit")


for command, task, split in (("run", "parus", "val"), ("submit", None, "test"), ("audit", "parus", "val"),
                             ("perturb", "winograd", "test"), ("run -m tfidf", "parus", "train")):  # fmt: skip

    @case("bounds", f"{command}: a FIFO as {split}.jsonl", ERROR, "named pipe", timeout=30)
    def _(c: CaseDir, command=command, task=task, split=split) -> list[str]:
        data = c.samples()
        folder = {"parus": "PARus", "winograd": "winograd", None: "PARus"}[task]
        fifo_at(c, data / folder / f"{split}.jsonl")
        words = command.split()
        tasks = ("-t", task) if task else ()
        out = c / ("sub.zip" if command == "submit" else "out")
        return rueval(*words, *tasks, "--data", data, "-o", out)


@case("bounds", "a FIFO as --data", ERROR, "--data", timeout=30)
def _(c: CaseDir) -> list[str]:
    return rueval("run", "-t", "parus", "--data", fifo_at(c, c / "data.zip"), "-o", c / "out")


@case("bounds", "/dev/zero as val.jsonl (a symbolic link)", ERROR, "device", timeout=30)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    (data / "PARus" / "val.jsonl").unlink()
    (data / "PARus" / "val.jsonl").symlink_to("/dev/zero")
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("bounds", "val.jsonl a symbolic link to itself", ERROR, "val.jsonl", timeout=30)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    (data / "PARus" / "val.jsonl").unlink()
    (data / "PARus" / "val.jsonl").symlink_to(data / "PARus" / "val.jsonl")
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("bounds", "a FIFO as run.json, then --resume", ERROR, "run.json", timeout=30)
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    fifo_at(c, out / "run.json")
    return rueval("run", "--resume", "-o", out)


@case("bounds", "a FIFO as run.json, then the same run", ERROR, "run.json", timeout=30)
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    fifo_at(c, out / "run.json")
    return rueval("run", "-m", "majority", "-t", "rcb,parus", "-o", out)


for command in ("report", "leaderboard", "compare"):

    @case("bounds", f"{command}: a FIFO as results.json", ERROR, "results.json", timeout=30)
    def _(c: CaseDir, command=command) -> list[str]:
        out = majority_run(c, c / "out")
        fifo_at(c, out / "results.json")
        tail = (majority_run(c, c / "other"),) if command == "compare" else ("-o", c / "made")
        return rueval(command, out, *tail)

    @case("bounds", f"{command}: /dev/zero as results.json", ERROR, "results.json", timeout=30, memory_mb=1000)
    def _(c: CaseDir, command=command) -> list[str]:
        out = majority_run(c, c / "out")
        (out / "results.json").unlink()
        (out / "results.json").symlink_to("/dev/zero")
        tail = (majority_run(c, c / "other"),) if command == "compare" else ("-o", c / "made")
        return rueval(command, out, *tail)


@case("bounds", "compare: /dev/zero as a predictions file", ERROR, "parus", timeout=30, memory_mb=1000)
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    (out / "predictions" / "parus.jsonl").unlink()
    (out / "predictions" / "parus.jsonl").symlink_to("/dev/zero")
    return rueval("compare", out, majority_run(c, c / "other"))


@case("bounds", "--base-url @FIFO", ERROR, "--base-url", timeout=30)
def _(c: CaseDir) -> list[str]:
    return rueval("run", "-m", "openai:x", "--base-url", f"@{fifo_at(c, c / 'urls')}", "-t", "parus", "-o", c / "out")


# A FIFO where the include folder's YAML files are: every .yaml file there is read (lm-eval's task files
# since issue 37), so it is either passed over with a warning naming it or one error naming it; never a wait.
@case("bounds", "--include-path a folder holding a FIFO named .yaml", EITHER, "mine.yaml", timeout=30)
def _(c: CaseDir) -> list[str]:
    (c / "tasks").mkdir()
    fifo_at(c, c / "tasks" / "mine.yaml")
    return rueval("run", "--include-path", c / "tasks", "-t", "parus", "-o", c / "out")


@case("bounds", "--include-path: a FIFO named .yaml beside the asked task file", EITHER, "mine.yaml", timeout=60)
def _(c: CaseDir) -> list[str]:
    tasks = task_folder(c)
    fifo_at(c, tasks / "mine.yaml")
    return hf_run(c, "--include-path", tasks, "-t", "hostile")


@case("bounds", "a server that never answers: a line every 5 s, stops at --timeout 12", ERROR, "--timeout", timeout=60)
def _(c: CaseDir) -> list[str]:
    argv = served_run(c, c / "out", "--timeout", "12")
    c.shared.server(delay=600)

    def reported(o: Outcome) -> str | None:
        n = o.output.count("waiting for the server")
        return None if n >= 2 and o.seconds < 40 else f"{n} waiting lines in {o.seconds:.0f} s"

    c.check(reported)
    return argv


@case("bounds", "majority on a 134 MB PARus val file: memory within 3x the file", OK, timeout=900, slow=True)
def _(c: CaseDir) -> list[str]:
    from bench_data_memory import write_data

    val = write_data(c / "big", 200_000)
    size_mb = val.stat().st_size / 2**20
    c.memory_mb = 3 * size_mb
    return rueval("run", "-m", "majority", "-t", "parus", "--data", c / "big", "-o", c / "out")


def patched_zip(c: CaseDir, member: str, patch: Callable[[bytearray, zipfile.ZipInfo, int], None]) -> Path:
    """The samples zipped, then ``patch(data, info, central_offset)`` applied to ``member``'s headers."""
    from rueval.data.local import SAMPLES_DIR

    path = c / "data.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for file in sorted(SAMPLES_DIR.rglob("*.jsonl")):
            archive.write(file, str(file.relative_to(SAMPLES_DIR)))
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    central = data.find(b"PK\x01\x02")  # the central directory's entries: the member's by its name
    while (
        data[central + 46 : central + 46 + int.from_bytes(data[central + 28 : central + 30], "little")]
        != member.encode()
    ):
        central = data.find(b"PK\x01\x02", central + 4)
    patch(data, info, central)
    path.write_bytes(bytes(data))
    return path


def encrypted(data: bytearray, info: zipfile.ZipInfo, central: int) -> None:
    data[info.header_offset + 6] |= 1
    data[central + 8] |= 1


def unknown_method(data: bytearray, info: zipfile.ZipInfo, central: int) -> None:
    data[info.header_offset + 8 : info.header_offset + 10] = (99).to_bytes(2, "little")
    data[central + 10 : central + 12] = (99).to_bytes(2, "little")


for label, patch, said in (("encrypted", encrypted, "encrypted"), ("compressed by method 99", unknown_method, "unzip")):
    for command in ("run", "submit", "audit"):

        @case("bounds", f"{command}: a --data zip whose PARus/val.jsonl is {label}", ERROR, said, timeout=30)
        def _(c: CaseDir, patch=patch, command=command) -> list[str]:
            member = "PARus/test.jsonl" if command == "submit" else "PARus/val.jsonl"
            data = patched_zip(c, member, patch)
            tail = ("-o", c / "sub.zip") if command == "submit" else ("-t", "parus", "-o", c / "out")
            return rueval(command, "--data", data, *tail)


for label, chunk, said in (
    ("newlines", b"\n", "--max-blank-lines"),
    ("text without a line break", b"x", "line longer"),
):

    @case("bounds", f"a zip of 900 MB of {label} (under --max-file-mb)", ERROR, said, timeout=90, slow=True)
    def _(c: CaseDir, chunk=chunk) -> list[str]:
        data = zipped_samples(c, "PARus/val.jsonl", repeated(chunk, 900 * 2**20))
        return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case(
    "bounds",
    "a zip of 1.1 million valid PARus records (over --max-lines)",
    ERROR,
    "--max-lines",
    timeout=180,
    slow=True,
)
def _(c: CaseDir) -> list[str]:
    record = read_jsonl(c.shared.samples_file("PARus/val.jsonl"))[0]

    def write(stream) -> None:
        for idx in range(1_100_000):
            stream.write((json.dumps({**record, "idx": idx}, ensure_ascii=False) + "\n").encode())

    data = zipped_samples(c, "PARus/val.jsonl", write)
    return rueval("run", "-m", "majority", "-t", "parus", "--data", data, "-o", c / "out")


@case("bounds", "hf: a model folder whose weights file is a FIFO", ERROR, "model.safetensors", timeout=60)
def _(c: CaseDir) -> list[str]:
    model = c / "model"
    shutil.copytree(c.shared.tiny(), model)
    fifo_at(c, model / "model.safetensors")
    return rueval("run", "-m", f"hf:{model}", "-t", "parus", "--limit", "2", "-o", c / "out")


@case("bounds", "perturb: a FIFO where the winograd folder goes", ERROR, "", timeout=30)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    shutil.rmtree(data / "winograd")
    fifo_at(c, data / "winograd")
    return rueval("perturb", "-t", "winograd", "--data", data, "--limit", "2", "-o", c / "out")
