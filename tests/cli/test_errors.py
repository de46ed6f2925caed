"""Bad input: exit code 2, one line naming file, line and field, no traceback, no results.json."""

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from support import write_jsonl

PARUS = {
    "idx": 0,
    "premise": "Стекло разбилось.",
    "choice1": "Мяч попал в окно.",
    "choice2": "Пошёл снег.",
    "question": "cause",
}


@pytest.fixture
def broken(tmp_path):
    """Run `rueval run` on one broken task and return (exit code, stderr, out dir)."""

    def run(cli, task, *extra):
        out = tmp_path / "out"
        result = cli("run", "-t", task, "-m", "majority", "--data", tmp_path / "data", "-o", out, *extra)
        return result.exit_code, result.stderr, out

    return run


def check(code, stderr, out, *expected):
    assert code == 2
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    for text in expected:
        assert text in lines[0]
    assert not (out / "results.json").exists()


def test_missing_task_folder(cli, tmp_path, broken):
    (tmp_path / "data").mkdir()
    check(*broken(cli, "parus"), "no folder for task parus")


def test_missing_split_file(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "train.jsonl", [{**PARUS, "label": 0}])
    check(*broken(cli, "parus", "--split", "val"), "PARus", "no val split", "val.jsonl")


def test_malformed_json_line(cli, tmp_path, broken):
    path = write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 0}])
    path.write_text(path.read_text(encoding="utf-8") + '{"idx": 1, "premise": \n', encoding="utf-8")
    write_jsonl(tmp_path / "data" / "PARus" / "train.jsonl", [{**PARUS, "label": 0}])
    check(*broken(cli, "parus"), "val.jsonl:2", "malformed JSON")


def test_missing_field(cli, tmp_path, broken):
    record = {k: v for k, v in PARUS.items() if k != "choice2"}
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 1}, {**record, "idx": 1, "label": 0}])
    check(*broken(cli, "parus"), "val.jsonl:2", "field 'choice2'", "missing")


def test_missing_nested_field(cli, tmp_path, broken):
    passage = {"text": "(1) Текст.", "questions": [{"idx": 0, "question": "Что?", "answers": [{"idx": 0, "label": 1}]}]}
    write_jsonl(tmp_path / "data" / "MuSeRC" / "val.jsonl", [{"idx": 0, "passage": passage}])
    check(*broken(cli, "muserc"), "val.jsonl:1", "field 'passage.questions[0].answers[0].text'", "missing")


def test_unknown_label(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 2}])
    check(*broken(cli, "parus"), "val.jsonl:1", "field 'label'", "unknown label 2", "expected one of: 0, 1")


def test_wrong_type(cli, tmp_path, broken):
    entities = [{"start": "0", "end": 5}]
    record = {"idx": 0, "passage": {"text": "Мосты Петербурга.", "entities": entities}, "qas": []}
    write_jsonl(tmp_path / "data" / "RuCoS" / "val.jsonl", [record])
    check(*broken(cli, "rucos"), "val.jsonl:1", "field 'passage.entities[0].start'", "expected an integer")


def test_partly_labelled_split(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 1}, {**PARUS, "idx": 1}])
    check(*broken(cli, "parus"), "val.jsonl:2", "missing gold answer")


def test_duplicate_idx(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 1}, {**PARUS, "label": 0}])
    check(*broken(cli, "parus"), "val.jsonl:2", "duplicate idx 0")


def test_empty_split(cli, tmp_path, broken):
    path = tmp_path / "data" / "PARus" / "val.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n\n", encoding="utf-8")
    check(*broken(cli, "parus"), "val.jsonl", "empty split")


def test_unlabelled_test_split_cannot_be_scored(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "test.jsonl", [PARUS])
    check(*broken(cli, "parus", "--split", "test"), "test.jsonl", "no gold labels", "rueval submit")


def test_not_utf8(cli, tmp_path, broken):
    path = tmp_path / "data" / "PARus" / "val.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes('{"premise": "Стекло"}\n'.encode("cp1251"))
    check(*broken(cli, "parus"), "val.jsonl", "not UTF-8")


def test_majority_without_train_data(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 1}])
    check(*broken(cli, "parus"), "parus", "needs labelled train examples")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("-t", "superglue"), "unknown task 'superglue'"),
        (("-m", "gpt5"), "unknown model 'gpt5'"),
        (("--data", "/nonexistent/rsg"), "--data /nonexistent/rsg: no such directory or zip file"),
        # a name left out after the colon: an example of that backend's own names
        (("-m", "openai:"), "-m openai:: name the model after the colon, e.g. openai:Qwen/Qwen2.5-7B-Instruct"),
        (("-m", "hf:"), "-m hf:: name the model after the colon, e.g. hf:ai-forever/rugpt3small_based_on_gpt2"),
        (("-m", "finetune:"), "-m finetune: name the encoder after the colon, e.g. finetune:ai-forever/ruBert-base"),
    ],
)
def test_unknown_names(cli, tmp_path, args, expected):
    result = cli("run", "-o", tmp_path / "out", *args)
    check(result.exit_code, result.stderr, tmp_path / "out", expected)


def test_unknown_split_is_refused_by_the_cli(cli, tmp_path):
    result = cli("run", "--split", "dev", "-o", tmp_path / "out")
    assert result.exit_code == 2 and "Traceback" not in result.output + result.stderr


def write_parus(data):
    write_jsonl(data / "PARus" / "train.jsonl", [{**PARUS, "label": 0}])
    return write_jsonl(data / "PARus" / "val.jsonl", [{**PARUS, "label": 1}])


def unreadable_file(data, monkeypatch, model_dir):
    val = write_parus(data)
    opened = Path.open

    def refusing(self, *args, **kwargs):
        if self == val:  # tests run as root, whom chmod does not stop: the refusal is the kernel's answer
            raise PermissionError(13, "Permission denied", str(self))
        return opened(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing)
    return ["-m", "majority", "--data", data], [f"{val}: permission denied"]


def unreadable_folder(data, monkeypatch, model_dir):
    folder = write_parus(data).parent
    listed = Path.iterdir

    def refusing(self):
        if self == folder:
            raise PermissionError(13, "Permission denied", str(self))
        return listed(self)

    monkeypatch.setattr(Path, "iterdir", refusing)
    return ["-m", "majority", "--data", data], [f"{folder}: permission denied"]


def corrupt_zip_member(data, monkeypatch, model_dir):
    content = (json.dumps({**PARUS, "label": 1}, ensure_ascii=False) + "\n").encode()
    archive = data.parent / "rsg.zip"
    with zipfile.ZipFile(archive, "w") as z:  # stored: the member's bytes sit in the archive as they are
        z.writestr("PARus/train.jsonl", content.replace(b'"label": 1', b'"label": 0'))
        z.writestr("PARus/val.jsonl", content)
    raw = archive.read_bytes()
    at = raw.rindex(content) + 20
    archive.write_bytes(raw[:at] + bytes([raw[at] ^ 1]) + raw[at + 1 :])
    return ["-m", "majority", "--data", archive], [f"{archive}/PARus/val.jsonl", "corrupt zip data", "CRC"]


def broken_symlink(data, monkeypatch, model_dir):
    val = write_parus(data)
    val.unlink()
    val.symlink_to(data / "gone.jsonl")
    return ["-m", "majority", "--data", data], [f"{val}: broken symbolic link", "gone.jsonl"]


def damaged_weights(data, monkeypatch, model_dir):
    write_parus(data)
    damaged = data.parent / "damaged-model"
    shutil.copytree(model_dir, damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # a download cut short
    return ["--data", data, "-m", f"hf:{damaged}", "--cache", "off"], [f"hf:{damaged}", "cannot load the model"]


def never_loading_weights(monkeypatch):
    import transformers

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: pytest.fail("loaded"))


def absent_cuda(data, monkeypatch, model_dir):
    write_parus(data)  # the data is read first: valid, so the model's options are checked
    never_loading_weights(monkeypatch)
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    return ["--data", data, "-m", f"hf:{model_dir}", "--device", "cuda"], ["--device cuda", "no cuda device"]


def unknown_device(data, monkeypatch, model_dir):
    write_parus(data)
    never_loading_weights(monkeypatch)
    return ["--data", data, "-m", f"hf:{model_dir}", "--device", "gpu"], ["--device gpu", "not a torch device"]


def missing_library(name):
    def setup(data, monkeypatch, model_dir):
        import rueval.models.backends

        write_parus(data)

        monkeypatch.setattr(rueval.models.backends, "hf", sys.modules.get("rueval.models.backends.hf"), raising=False)
        for module in (
            "rueval.models.backends.hf",
            "rueval.models.backends.prefix_tree",
            "rueval.models.backends.sampling",
        ):
            monkeypatch.delitem(sys.modules, module, raising=False)  # imported afresh, as on that machine
        monkeypatch.setitem(sys.modules, name, None)  # `import name` now raises ImportError
        install = "pip install torch==" if name == "torch" else "pip install 'rueval[lm]'"
        return ["--data", data, "-m", f"hf:{model_dir}"], [f"-m hf:{model_dir} needs", install]

    return setup


def finetune_without(name):
    def setup(data, monkeypatch, model_dir):
        write_parus(data)
        for module in [m for m in sys.modules if m.startswith("rueval.solvers.finetune")]:
            monkeypatch.delitem(sys.modules, module)  # imported afresh, as on a machine without the extra
        monkeypatch.setitem(sys.modules, name, None)  # `import name` now raises ImportError
        return ["--data", data, "-m", f"finetune:{model_dir}"], [f"-m finetune: needs {name}", "rueval[finetune]"]

    setup.__name__ = f"finetune_without_{name}"
    return setup


@pytest.mark.parametrize(
    "setup",
    [
        unreadable_file,
        unreadable_folder,
        corrupt_zip_member,
        broken_symlink,
        damaged_weights,
        absent_cuda,
        unknown_device,
        missing_library("torch"),
        missing_library("transformers"),
        finetune_without("transformers"),
        finetune_without("accelerate"),
    ],
    ids=lambda setup: setup.__name__,
)
def test_input_failures_end_in_one_line_and_exit_2(cli, tmp_path, monkeypatch, tiny_gpt2_dir, setup):
    data = tmp_path / "data"
    data.mkdir()
    args, expected = setup(data, monkeypatch, tiny_gpt2_dir)
    out = tmp_path / "out"
    result = cli("run", "-t", "parus", *args, "-o", out)
    check(result.exit_code, result.stderr, out, *expected)
