"""Every data file is read within bounds (ReadLimits: line length, a file's decompressed size, its
lines and its blank lines; each error names the option that raises it), only regular files are
opened (a pipe, a device or a folder where a split file is expected is refused, never read), and
a task found in two folders is an error naming both."""

from __future__ import annotations

import json
import os
import threading
import time
import zipfile

import pytest
from support import write_jsonl

from rueval.core.errors import DataError, RuevalError
from rueval.data import DEFAULT_LIMITS, ReadLimits, eval_split, open_data
from rueval.tasks import get_task

RECORD = {"premise": "Стекло разбилось.", "choice1": "Мяч.", "choice2": "Снег.", "question": "cause", "label": 0}


def parus_val(root, n=5, blank_every=0):
    lines = []
    for idx in range(n):
        lines.append(json.dumps({**RECORD, "idx": idx}, ensure_ascii=False))
        lines += [""] * blank_every
    path = root / "PARus" / "val.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def load(root, limits=DEFAULT_LIMITS, split="val"):
    return open_data(str(root), limits).load(get_task("parus"), split)


def test_the_default_limits_read_an_ordinary_file(tmp_path):
    parus_val(tmp_path, 50, blank_every=1)
    assert len(load(tmp_path).examples) == 50


def test_a_file_with_more_lines_than_the_limit_is_refused_naming_the_option(tmp_path):
    path = parus_val(tmp_path, 5)
    assert len(load(tmp_path, ReadLimits(lines=5)).examples) == 5
    with pytest.raises(DataError) as caught:
        load(tmp_path, ReadLimits(lines=4))
    assert str(caught.value) == f"{path}:5: more than 4 lines: not read (raise --max-lines)"


def test_blank_lines_beyond_the_limit_are_refused(tmp_path):
    path = parus_val(tmp_path, 3, blank_every=2)
    assert len(load(tmp_path, ReadLimits(blank_lines=6)).examples) == 3
    with pytest.raises(DataError) as caught:
        load(tmp_path, ReadLimits(blank_lines=5))
    assert str(caught.value) == f"{path}:9: more than 5 blank lines: not read (raise --max-blank-lines)"


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = parus_val(tmp_path, 20)
    limit = path.stat().st_size - 1
    with pytest.raises(DataError) as caught:
        load(tmp_path, ReadLimits(file_bytes=limit))
    assert str(caught.value) == f"{path}: larger than {limit / 2**20:g} MB: not read (raise --max-file-mb)"
    assert len(load(tmp_path, ReadLimits(file_bytes=limit + 1)).examples) == 20


def test_a_zip_member_is_bounded_by_its_inflated_size_also_when_only_its_hash_is_read(tmp_path):
    archive = tmp_path / "rsg.zip"
    text = "".join(json.dumps({**RECORD, "idx": i}, ensure_ascii=False) + "\n" for i in range(200))
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("PARus/val.jsonl", text)
    limit = len(text.encode()) - 1
    with pytest.raises(
        DataError, match=r"rsg.zip/PARus/val.jsonl: larger than .* MB: not read \(raise --max-file-mb\)"
    ):
        open_data(str(archive), ReadLimits(file_bytes=limit)).load(get_task("parus"), "val", limit=2)


def test_a_zip_of_gigabytes_of_newlines_is_refused_in_a_moment(tmp_path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z, z.open("PARus/val.jsonl", "w") as f:
        block = b"\n" * (1 << 20)
        for _ in range(1024):  # 1 GiB of blank lines in a zip of about 1 MB
            f.write(block)
    assert archive.stat().st_size < 2 << 20
    started = time.monotonic()
    with pytest.raises(DataError, match=r"bomb.zip/PARus/val.jsonl:100001: more than 100000 blank lines"):
        open_data(str(archive)).load(get_task("parus"), "val")
    assert time.monotonic() - started < 10


def _zip_with_header_changed(archive, change) -> None:
    """PARus/val.jsonl in a zip, ``change(data, local_header, central_header)`` applied to its bytes."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        z.writestr("PARus/val.jsonl", json.dumps({**RECORD, "idx": 0}, ensure_ascii=False) + "\n")
    data = bytearray(archive.read_bytes())
    change(data, data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02"))
    archive.write_bytes(bytes(data))


def _encrypt(data, local, central):  # the encryption flag, as a zip made with a password has it
    data[local + 6] |= 1
    data[central + 8] |= 1


def _method_99(data, local, central):  # a compression method Python's zipfile has no decoder for (AES: 99)
    data[local + 8 : local + 10] = data[central + 10 : central + 12] = (99).to_bytes(2, "little")


@pytest.mark.parametrize(
    ("change", "said"),
    [(_encrypt, "encrypted in the zip: not read"), (_method_99, "cannot be unzipped (That compression method")],
)
def test_a_zip_member_that_cannot_be_read_is_an_error_naming_it_not_a_traceback(tmp_path, change, said):
    _zip_with_header_changed(tmp_path / "rsg.zip", change)
    with pytest.raises(DataError) as caught:
        open_data(str(tmp_path / "rsg.zip")).load(get_task("parus"), "val")
    assert str(caught.value).startswith(f"{tmp_path / 'rsg.zip'}/PARus/val.jsonl: {said}")


def test_limits_must_be_positive_whole_numbers():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(RuevalError, match="read limit lines: expected a positive whole number"):
            ReadLimits(lines=bad)


def test_a_named_pipe_as_a_split_file_is_refused_without_blocking(tmp_path):
    parus_val(tmp_path)
    fifo = tmp_path / "PARus" / "val.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)
    outcome = []

    def read():
        try:
            load(tmp_path)
        except DataError as e:
            outcome.append(str(e))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(20)
    if reader.is_alive():  # blocked in open(): a writer lets it go before the test fails
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert outcome == [f"{fifo}: a named pipe (FIFO), not a regular file: not read"]


def test_a_device_as_a_split_file_is_refused(tmp_path):
    (tmp_path / "PARus").mkdir()
    (tmp_path / "PARus" / "val.jsonl").symlink_to("/dev/zero")
    with pytest.raises(DataError, match=r"val.jsonl: a device, not a regular file: not read"):
        load(tmp_path)


def test_a_folder_named_like_the_split_file_is_an_error_not_a_missing_split(tmp_path):
    unlabelled = {name: value for name, value in RECORD.items() if name != "label"}
    write_jsonl(tmp_path / "PARus" / "test.jsonl", [{**unlabelled, "idx": 0}])  # as RSG's test sets: val is scored
    (tmp_path / "PARus" / "val.jsonl").mkdir()
    with pytest.raises(DataError) as caught:
        eval_split(open_data(str(tmp_path)), get_task("parus"), None, None)
    assert str(caught.value) == f"{tmp_path / 'PARus' / 'val.jsonl'}: a folder where a file is expected"


def test_a_folder_in_a_zip_named_like_the_split_file_is_an_error(tmp_path):
    archive = tmp_path / "rsg.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("PARus/val.jsonl/part.jsonl", json.dumps({**RECORD, "idx": 0}))
    with pytest.raises(DataError, match="val.jsonl/: a folder where a file is expected"):
        open_data(str(archive)).load(get_task("parus"), "val")


def test_two_folders_for_one_task_are_an_error_naming_both(tmp_path):
    write_jsonl(tmp_path / "a" / "PARus" / "val.jsonl", [{**RECORD, "idx": 0}])
    write_jsonl(tmp_path / "b" / "parus" / "val.jsonl", [{**RECORD, "idx": 0, "label": 1}])
    with pytest.raises(DataError) as caught:
        load(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path}: two folders for task parus: {tmp_path / 'a' / 'PARus'} and {tmp_path / 'b' / 'parus'}; "
        "keep one, or point --data at the one to use"
    )
    assert [e.label for e in load(tmp_path / "b").examples] == [1]


def test_a_task_at_two_depths_or_in_two_tape_sets_is_no_ambiguity(tmp_path):
    write_jsonl(tmp_path / "PARus" / "val.jsonl", [{**RECORD, "idx": 0}])
    write_jsonl(tmp_path / "old" / "PARus" / "val.jsonl", [{**RECORD, "idx": 0, "label": 1}])
    assert [e.label for e in load(tmp_path).examples] == [0]  # the shallowest, as documented
    winograd = {"text": "Он пришёл.", "options": ["он"], "reference": "он", "answer": "он", "label": 1}
    for tape_set in ("episodes", "raw"):
        write_jsonl(tmp_path / "tape" / tape_set / "winograd" / "test.jsonl", [winograd])
    assert open_data(str(tmp_path / "tape")).load(get_task("winograd"), "test").examples


def test_meras_task_file_is_bounded_and_must_be_a_regular_file(tmp_path):
    inputs = {"premise": "Маша знала.", "hypothesis": "Идёт дождь."}
    document = {"data": {"test": [{"instruction": "", "inputs": inputs, "outputs": "1", "meta": {"id": 0}}]}}
    task_file = tmp_path / "RCB" / "task.json"
    task_file.parent.mkdir()
    task_file.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataError, match=r"task.json: larger than .* MB: not read \(raise --max-file-mb\)"):
        open_data(str(tmp_path), ReadLimits(file_bytes=10)).load(get_task("rcb"), "test")
    task_file.unlink()
    os.mkfifo(task_file)
    with pytest.raises(DataError, match="task.json: a named pipe"):
        open_data(str(tmp_path)).load(get_task("rcb"), "test")
    os.unlink(task_file)
    task_file.write_text(json.dumps(document), encoding="utf-8")
    (tmp_path / "rcb").mkdir()
    (tmp_path / "rcb" / "task.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataError, match="two folders for MERA's RCB"):
        open_data(str(tmp_path)).load(get_task("rcb"), "test")


@pytest.mark.parametrize(
    ("option", "tight", "loose", "said"),
    [
        ("--max-lines", "4", "20", "more than 4 lines"),
        ("--max-blank-lines", "3", "10", "more than 3 blank lines"),
        ("--max-file-mb", "0.001", "1", "larger than 0.000999451 MB"),  # 1048 bytes
    ],
)
def test_each_limit_is_an_option_of_rueval_run_that_its_error_names(cli, tmp_path, option, tight, loose, said):
    path = parus_val(tmp_path / "data", 10, blank_every=1)  # 20 lines, about 1.5 KB
    write_jsonl(path.parent / "train.jsonl", [{**RECORD, "idx": idx} for idx in range(3)])
    run = ("run", "-m", "majority", "-t", "parus", "--data", tmp_path / "data", "--split", "val")
    refused = cli(*run, option, tight, "-o", tmp_path / "refused")
    assert refused.exit_code == 2
    assert refused.output.startswith(f"error: {path}") and said in refused.output
    assert option in refused.output and len(refused.output.strip().splitlines()) == 1
    assert cli(*run, option, loose, "-o", tmp_path / "read").exit_code == 0
