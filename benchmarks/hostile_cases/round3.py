"""The sweep's cases of issue 35 (security and reliability round 3) that a command line or the Python API
drives: code in task files and MERA instructions, YAML answers and duplicate keys, exports of edited runs,
runs that keep their word, lone surrogates, format specs and alias bombs. The leaderboard service's cases
are in round3_board.py."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import sys
import unicodedata
from pathlib import Path
from typing import Any

from hostile_cases.common import (
    case,
    read_jsonl,
    scores,
    set_fields,
    unchanged,
    write_jsonl,
)
from hostile_cases.harness import EITHER, ERROR, OK, TESTS, CaseDir, Outcome, Skip, python, rueval, run_command

# The issue's payload as it was found: under a plain jinja2.Environment it ran `id` and wrote the file F.
ISSUE_PAYLOAD = (
    "{{ (text.__class__.__mro__[1].__subclasses__()|selectattr('__name__','equalto','_wrap_close')|first)"
    ".__init__.__globals__.system('id > F') }}"
)
# The payload classes of issue 35's "What to build" (those that reach code write F), and the words their
# error has. A task file is lm-eval's (issue 37), its templates compiled in rueval's sandbox: a name written
# in the template is refused when the file is read (file, line and key); one a record gives, when the record
# fills the template (the task and its file).
READ_TIME = ("hostile.yaml:8: field 'doc_to_text': the template is refused",)
FILL_TIME = ("hostile.yaml: task hostile: a template cannot be filled", "unsafe")
PAYLOADS = {
    "the issue's payload": (ISSUE_PAYLOAD, READ_TIME),
    "cycler's globals": ("{{ cycler.__init__.__globals__.os.system('id > F') }}", READ_TIME),
    "lipsum's globals": ("{{ lipsum.__globals__['os'].system('id > F') }}", READ_TIME),
    "namespace's globals": ("{{ namespace.__init__.__globals__.os.system('id > F') }}", READ_TIME),
    "attr on cycler with names from the record": (
        "{{ ((cycler | attr(init)) | attr(globals))['os'].system('id > F') }}",
        FILL_TIME,
    ),
    "the issue's payload by attr with names from the record": (
        "{{ ((((((text | attr(attribute)) | attr(mro))[1] | attr(subclasses))() | selectattr(name, 'equalto', "
        "'_wrap_close') | first) | attr(init)) | attr(globals))['system']('id > F') }}",
        FILL_TIME,
    ),
    "a format string's attribute (internals into the prompt)": (
        "{{ ('{0.' ~ attribute ~ '.__mro__}').format(text) }}",
        FILL_TIME,
    ),
}
# lm-eval's form (tests/task_files.py): its data by absolute paths, doc_to_text on line 8, doc_to_target 9,
# doc_to_choice 10
TASK = """\
task: hostile
dataset_path: json
dataset_kwargs:
  data_files: {data}
training_split: train
test_split: test
output_type: multiple_choice
doc_to_text: {text}
doc_to_target: {target}
doc_to_choice: {choice}
"""
NAMES = {"attribute": "__class__", "mro": "__mro__", "subclasses": "__subclasses__", "name": "__name__",
         "init": "__init__", "globals": "__globals__"}  # names a record may hold  # fmt: skip
RECORDS = [{"text": f"Отзыв номер {i}: хорошо.", "label": i % 2, **NAMES} for i in range(6)]


def data_files(c: CaseDir, name: str, train: list[dict], test: list[dict]) -> str:
    """The records as JSON Lines, named as lm-eval's data_files (a YAML flow mapping). They are kept in the
    shared folder, under a name of letters and digits: datasets reads a data file's name as a glob pattern,
    and a case's folder may hold '*' or '['."""
    folder = c.shared.root / "task-data" / hashlib.sha1(f"{c.path}/{name}".encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / "train.jsonl", train)
    write_jsonl(folder / "test.jsonl", test)
    return json.dumps({split: str(folder / f"{split}.jsonl") for split in ("train", "test")})


def task_folder(c: CaseDir, text: str = "'Отзыв: {{text}} Хороший?'", target: str = "label", choice: str = "") -> Path:
    """An lm-eval task ``hostile`` (tasks/hostile.yaml) on six records of its own."""
    root = c / "tasks"
    root.mkdir(exist_ok=True)
    declared = TASK.format(
        data=data_files(c, "hostile", RECORDS, RECORDS[:2]), text=text, target=target, choice=choice or "[нет, да]"
    )
    (root / "hostile.yaml").write_text(declared, encoding="utf-8")
    return root


def armed(c: CaseDir, payload: str) -> str:
    """``payload`` writing the file ``pwned`` (as a YAML text), and the check that it did not. The file is
    named relative to the command's working folder, the case's, whose path may hold quotes."""
    c.check(lambda o: "the payload ran: pwned written" if (c / "pwned").exists() else None)
    return json.dumps(payload.replace("id > F", "id > pwned"), ensure_ascii=False)


def capped(argv: list[str], gb: float = 3) -> list[str]:
    """``argv`` with its address space capped (a MemoryError beyond): a blow-up this case exists to catch
    must not take a shared machine's memory. A normal hf:TINY run peaks near 0.4 GB resident."""
    limit = int(gb * 2**30)
    code = f"import os, resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); "
    return [sys.executable, "-c", code + "os.execvp(sys.argv[1], sys.argv[1:])", *argv]


def hf_run(c: CaseDir, *args: Any) -> list[str]:
    return rueval("run", "-m", f"hf:{c.shared.tiny()}", *args, "-o", c / "out")


def appended(tasks: Path, line: str) -> Path:
    """hostile.yaml with ``line`` added (its line 11)."""
    with open(tasks / "hostile.yaml", "a", encoding="utf-8") as file:
        file.write(line + "\n")
    return tasks


for label, (payload, said) in PAYLOADS.items():

    @case("round3", f"doc_to_text: {label} (-m hf:TINY)", ERROR, *said, timeout=180)
    def _(c: CaseDir, payload=payload) -> list[str]:
        tasks = task_folder(c, text=armed(c, payload))
        c.nothing_written(c / "out")
        return hf_run(c, "--include-path", tasks, "-t", "hostile")


# From Python, task files run through lm-eval's own simple_evaluate with rueval's model (rueval.evaluate takes
# no include_path since issue 37; docs/guide/task-files.md): the payload must not run there either. What
# lm-eval raises about a template is shown as the snippet's error line.
LM_EVAL_API = """
import jinja2, lm_eval
from lm_eval.tasks import TaskManager
from rueval.models.backends.lm_eval_lm import RuevalLM
try:
    lm_eval.simple_evaluate(model=RuevalLM.from_spec({model!r}, bos="tokenizer"), tasks=["hostile"],
                            task_manager=TaskManager(include_path={tasks!r}))
except jinja2.TemplateError as e:
    raise RuevalError(f"lm-eval: {{type(e).__name__}}: {{e}}") from None
"""


@case("round3", "lm_eval.simple_evaluate(RuevalLM): the issue's payload in doc_to_text (hf:TINY)", ERROR, "__",
      timeout=180)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    tasks = task_folder(c, text=armed(c, ISSUE_PAYLOAD))
    return python(LM_EVAL_API.format(model=f"hf:{c.shared.tiny()}", tasks=str(tasks)))


# the other keys lm-eval renders: refused when the file is read, each naming its line and key (rueval's own
# subset refused description and fewshot_config as keys it does not read; lm-eval reads them)
for key, line in (("doc_to_target", 9), ("doc_to_choice", 10), ("description", 11), ("fewshot_config", 11),
                  ("gen_prefix", 11)):  # fmt: skip
    field = "doc_to_text" if key == "fewshot_config" else key

    @case("round3", f"{key}: the issue's payload (-m hf:TINY)", ERROR,
          f"hostile.yaml:{line}: field '{field}': the template is refused", timeout=180)  # fmt: skip
    def _(c: CaseDir, key=key) -> list[str]:
        if key.startswith("doc_to_"):
            tasks = task_folder(c, **{key.removeprefix("doc_to_"): armed(c, ISSUE_PAYLOAD)})
        elif key == "fewshot_config":
            tasks = appended(
                task_folder(c), f"fewshot_config: {{sampler: first_n, doc_to_text: {armed(c, ISSUE_PAYLOAD)}}}"
            )
        else:
            tasks = appended(task_folder(c), f"{key}: {armed(c, ISSUE_PAYLOAD)}")
        c.nothing_written(c / "out")
        return hf_run(c, "--include-path", tasks, "-t", "hostile")


for cache_kept, state in ((True, "every answer cached"), (False, "its request cache removed")):

    @case(
        "round3",
        f"--resume of a run whose include path now holds the payload ({state})",
        ERROR,  # lm-eval builds the tasks again (their requests then answered from the cache): read again, refused
        *READ_TIME,
        timeout=240,
    )
    def _(c: CaseDir, cache_kept=cache_kept) -> list[str]:
        tasks = task_folder(c)
        c.rueval("run", "-m", f"hf:{c.shared.tiny()}", "--include-path", tasks, "-t", "hostile", "-o", c / "out")
        if not cache_kept:
            shutil.rmtree(c / "cache")
        task_folder(c, text=armed(c, ISSUE_PAYLOAD))  # the shared folder's task file, edited
        return rueval("run", "--resume", "-o", c / "out")


# YAML answers (issue 35, finding 6). Task files are lm-eval's since issue 37: the right outcome is lm-eval
# 0.4.13's own score (an integer target an index into the choices, a text target a choice's exact text; two
# choices equal in NFC are two choices), compared with lm-eval itself run on the same file and model, with
# rueval spelling the model as lm-eval does (its start-token rule), or an error naming the file.
LM_EVAL = Path("/work/venvs/lmeval/bin/python")
LM_EVAL_ACC = """
import json, sys
import lm_eval
from lm_eval.tasks import TaskManager
found = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={sys.argv[1]},device=cpu", tasks=["labels"],
                                task_manager=TaskManager(include_path=sys.argv[2]))
print(json.dumps(found["results"]["labels"]["acc,none"]))
"""


def labels_task(c: CaseDir, choices: list[str], train: list[Any], test: list[Any]) -> Path:
    root = c / "labels"
    root.mkdir()
    train_records = [{"text": f"Пример {i}.", "label": g} for i, g in enumerate(train)]
    test_records = [{"text": f"Вопрос {i}.", "label": g} for i, g in enumerate(test)]
    declared = TASK.replace("hostile", "labels").format(
        data=data_files(c, "labels", train_records, test_records), text="'{{text}}'", target="label",
        choice=json.dumps(choices, ensure_ascii=False),
    )  # fmt: skip
    (root / "labels.yaml").write_text(declared, encoding="utf-8")
    return root


def lm_eval_acc(c: CaseDir, tasks: Path) -> float:
    """lm-eval 0.4.13's own accuracy on the task (its own venv, its own HFLM on the tiny model)."""
    if not LM_EVAL.exists():
        raise Skip(f"lm-eval's own venv ({LM_EVAL}) is not on this machine")
    found = run_command([str(LM_EVAL), "-c", LM_EVAL_ACC, str(c.shared.tiny()), str(tasks)], c.path, {}, 600)
    if found.returncode != 0:
        raise RuntimeError(f"preparing: lm-eval itself failed:\n{found.output[-2000:]}")
    return json.loads(found.stdout.strip().splitlines()[-1])


def same_as_lm_eval(c: CaseDir, expected: float) -> None:
    def check(o: Outcome) -> str | None:
        if o.returncode == 2:
            return None
        document = json.loads((c / "out" / "results_lmeval.json").read_text(encoding="utf-8"))
        acc = document["results"]["labels"]["acc,none"]
        shown = scores(c / "out")["labels"]
        if round(acc, 6) != round(expected, 6) or round(shown, 4) != round(100 * expected, 4):
            return f"acc {acc} (results.json {shown}), lm-eval's own {expected}"
        return None

    c.check(check)


NFC, NFD = unicodedata.normalize("NFC", "й"), unicodedata.normalize("NFD", "й")
for label, choices, train, test in (
    ("choices '1' '2' '3' with integer labels 0 1 2", ["1", "2", "3"], [0, 0, 0, 1], [0, 1, 2]),
    ("choices 'Да' and 'да' with text labels", ["Да", "да"], ["да", "да", "Да"], ["Да", "да", "да"]),
    ("choices 'й' in NFC and NFD", [NFC, NFD], [0, 1, 0], [0, 1]),
):

    @case("round3", f"YAML {label}: lm-eval's own score (issue 37)", EITHER, "labels.yaml", timeout=300)
    def _(c: CaseDir, choices=choices, train=train, test=test) -> list[str]:
        tasks = labels_task(c, choices, train, test)
        same_as_lm_eval(c, lm_eval_acc(c, tasks))
        model = ("--model", "hf", "--model_args", f"pretrained={c.shared.tiny()}")
        return rueval("run", *model, "--include-path", tasks, "-t", "labels", "-o", c / "out")


@case("round3", "YAML task file giving doc_to_text twice", ERROR,
      "hostile.yaml:11: field 'doc_to_text': key given twice (first on line 8)", timeout=180)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    tasks = appended(task_folder(c), "doc_to_text: 'Второй раз: {{text}}'")
    c.nothing_written(c / "out")
    return hf_run(c, "--include-path", tasks, "-t", "hostile")


@case("round3", "YAML alias bomb as a task file: bounded time and memory", ERROR, "bomb.yaml",
      "more than 100000 values once its aliases are expanded", timeout=60, memory_mb=800)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    levels = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]  # 9**10 texts once expanded
    tasks = task_folder(c)
    declared = TASK.replace("hostile", "bomb").format(
        data=data_files(c, "bomb", RECORDS, RECORDS), text=f"[{', '.join(levels)}]", target="label", choice="[a, b]"
    )
    (tasks / "bomb.yaml").write_text(declared, encoding="utf-8")
    c.nothing_written(c / "out")
    return capped(hf_run(c, "--include-path", tasks, "-t", "bomb"))


def twice(text: str, key: str, value: Any) -> str:
    """A JSON text whose first object holding ``key`` gives it again (``value``)."""
    at = text.index(f'"{key}":')
    return text[:at] + f'"{key}": {json.dumps(value)}, ' + text[at:]


@case("round3", "a data file's line giving its label twice", ERROR, "RCB/val.jsonl:2", "label")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    lines = (data / "RCB" / "val.jsonl").read_text(encoding="utf-8").splitlines()
    other = "contradiction" if json.loads(lines[1])["label"] != "contradiction" else "neutral"
    lines[1] = twice(lines[1], "label", other)
    (data / "RCB" / "val.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    c.nothing_written(c / "out")
    return rueval("run", "-m", "majority", "-t", "rcb", "--data", data, "-o", c / "out")


def mera_data(c: CaseDir, layout: str, change=None) -> Path:
    """MERA's seven tasks (tests/mera_files.py) in ``layout``, ``change(tasks)`` applied first."""
    sys.path.insert(0, str(TESTS))
    from mera_files import LAYOUTS, seven_tasks

    tasks = seven_tasks()
    if change is not None:
        change(tasks)
    return LAYOUTS[layout](c / "mera", tasks)


for layout in ("task folders", "dataset snapshot"):

    @case("round3", f"MERA ({layout}): a record giving its outputs twice", ERROR, "outputs")
    def _(c: CaseDir, layout=layout) -> list[str]:
        data = mera_data(c, layout)
        file = data / "RCB" / "task.json" if layout == "task folders" else data / "data" / "rcb" / "train.jsonl"
        file.write_text(twice(file.read_text(encoding="utf-8"), "outputs", "1"), encoding="utf-8")
        return rueval("run", "-m", "majority", "-t", "rcb", "--data", data, "-o", c / "out")


# Exports of what no run computed (finding 7): a majority run on MERA's files, edited afterwards
def mera_run(c: CaseDir) -> tuple[Path, Path]:
    data = mera_data(c, "task folders")
    c.rueval("run", "-m", "majority", "-t", "rcb,parus", "--data", data, "--predict-only", "-o", c / "run")
    c.nothing_written(c / "sub.zip")
    return c / "run", data


def edit_prediction(run: Path, value: Any, checksum: bool = False) -> None:
    predictions = run / "predictions" / "parus.jsonl"
    rows = read_jsonl(predictions)
    rows[0]["prediction"] = value(rows[0]["prediction"]) if callable(value) else value
    write_jsonl(predictions, rows)
    if checksum:  # a forger who also mends run.json's checksum
        recorded = json.loads((run / "run.json").read_text(encoding="utf-8"))
        for files in recorded.get("files", {}).values():
            if "predictions/parus.jsonl" in files:
                files["predictions/parus.jsonl"] = hashlib.sha256(predictions.read_bytes()).hexdigest()
        (run / "run.json").write_text(json.dumps(recorded), encoding="utf-8")


@case("round3", "export after the test texts were edited", ERROR, "task.json")
def _(c: CaseDir) -> list[str]:
    run, data = mera_run(c)
    task = data / "RCB" / "task.json"
    task.write_text(task.read_text(encoding="utf-8").replace("Маша", "Даша"), encoding="utf-8")
    return rueval("export", run, "-o", c / "sub.zip")


for label, value, checksum in (
    ("to another valid label", lambda p: 1 - p, False),  # PARus's answers are 0 and 1
    ("to 'bogus'", "bogus", False),
    ("to 'bogus', run.json's checksum mended", "bogus", True),
):

    @case("round3", f"export after a prediction was edited {label}", ERROR, "parus")
    def _(c: CaseDir, value=value, checksum=checksum) -> list[str]:
        run, _ = mera_run(c)
        edit_prediction(run, value, checksum)
        return rueval("export", run, "-o", c / "sub.zip")


# Runs that keep their word (finding 8)
@case("round3", "leaderboard: a run on the bundled samples is marked, not ranked", OK)
def _(c: CaseDir) -> list[str]:
    c.rueval("run", "-m", "majority", "-t", "rsg", "-o", c / "run")

    def marked(o: Outcome) -> str | None:
        board = (c / "board" / "leaderboard_rsg.csv").read_text(encoding="utf-8")
        runs = [row for row in csv.DictReader(board.splitlines()) if row["kind"] == "run"]
        wrong = [f"{row['name']} ranked {row['rank']}" for row in runs if row["rank"] or "not comparable" not in
                 row["name"]]  # fmt: skip
        return "; ".join(wrong) or (None if runs else "no run row")

    c.check(marked)
    return rueval("leaderboard", c / "run", "-o", c / "board")


def without_train_labels(data: Path, folder: str) -> None:
    train = data / folder / "train.jsonl"
    write_jsonl(train, [{k: v for k, v in row.items() if k != "label"} for row in read_jsonl(train)])


for tasks in ("rsg", "parus"):

    @case("round3", f"-t {tasks} into the folder of an interrupted -t all run", ERROR, "--force", "--resume")
    def _(c: CaseDir, tasks=tasks) -> list[str]:
        data = c.samples()
        without_train_labels(data, "winograd")  # -t all stops at winograd, the first TAPE task
        stopped = run_command(rueval("run", "-m", "majority", "-t", "all", "--data", data, "-o", c / "out"),
                              c.path, c.env, 300)  # fmt: skip
        if stopped.returncode != 2 or len(json.loads((c / "out" / "run.json").read_text())["tasks"]) != 16:
            raise RuntimeError(f"preparing: the -t all run did not stop at winograd:\n{stopped.output[-1000:]}")
        unchanged(c, c / "out")
        return rueval("run", "-m", "majority", "-t", tasks, "--data", data, "-o", c / "out")


@case("round3", "a refused run writes nothing; the corrected rerun runs", ERROR, "rcb")
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    without_train_labels(data, "RCB")
    c.nothing_written(c / "out")

    def rerun(o: Outcome) -> str | None:
        again = run_command(rueval("run", "-m", "majority", "-t", "rcb", "-o", c / "out"), c.path, c.env, 120)
        return None if again.returncode == 0 else f"the corrected rerun: {again.error_line()}"

    c.check(rerun)
    return rueval("run", "-m", "majority", "-t", "rcb", "--data", data, "-o", c / "out")


DATA_FIRST_S = 15  # the data's error comes before any model or server: a Python start and a file read
for label, model in (
    ("an unreachable hub id", ("-m", "hf:nonexistent-org/nonexistent-model")),
    ("a server nobody runs", ("-m", "openai:some-model", "--base-url", "http://127.0.0.1:9/v1")),
):

    @case("round3", f"bad --data with {label}: the data's error, at once", ERROR, "RCB/val.jsonl:1", timeout=120)
    def _(c: CaseDir, model=model) -> list[str]:
        data = c.samples()
        set_fields(data / "RCB" / "val.jsonl", 1, label="maybe")
        c.env["HF_HUB_OFFLINE"] = "1"
        c.check(lambda o: None if o.seconds < DATA_FIRST_S else f"the data's error after {o.seconds:.0f} s")
        c.nothing_written(c / "out")
        return rueval("run", *model, "-t", "rcb", "--data", data, "-o", c / "out")


for via in ("rueval run --output_path", "evaluate(out=...)"):

    @case("round3", f"{via} x.json writes x_<date>.json and no folder x.json", OK)
    def _(c: CaseDir, via=via) -> list[str]:
        def file_form(o: Outcome) -> str | None:
            if (c / "x.json").is_dir():
                return "made a folder x.json"
            return None if list(c.path.glob("x_*.json")) else "no x_<date>.json beside x.json"

        c.check(file_form)
        if via.startswith("evaluate"):
            return python(f"rueval.evaluate('majority', tasks='rcb,parus', out={str(c / 'x.json')!r})")
        return rueval("run", "-m", "majority", "-t", "rcb,parus", "--output_path", "x.json")


@case("round3", "COLUMNS=80 rueval run: the results table whole", OK)
def _(c: CaseDir) -> list[str]:
    c.env["COLUMNS"] = "80"

    def whole(o: Outcome) -> str | None:
        wide = [line for line in o.stdout.splitlines() if len(line) > 80]
        shown = {f"{score:.2f}" for score in scores(c / "out").values()}
        lost = [score for score in shown if score not in o.stdout]
        cut = "…" in o.stdout
        return f"lines over 80: {len(wide)}, scores not shown: {lost}, cut: {cut}" if wide or lost or cut else None

    c.check(whole)
    return rueval("run", "-m", "majority", "-t", "rsg", "-o", c / "out")


@case("round3", "COLUMNS=80 rueval run --help: every option whole", OK)
def _(c: CaseDir) -> list[str]:
    wide = run_command(rueval("run", "--help"), c.path, {"COLUMNS": "400"}, 60).stdout
    options = set(re.findall(r"--[a-z][a-z0-9_-]*[a-z0-9]", wide))
    c.env["COLUMNS"] = "80"

    def whole(o: Outcome) -> str | None:
        lost = sorted(options - set(re.findall(r"--[a-z][a-z0-9_-]*[a-z0-9]", o.stdout)))
        return f"options cut or lost: {lost[:8]}" if lost or "…" in o.stdout else None

    c.check(whole)
    return rueval("run", "--help")


# Tracebacks and memory (finding 9)
def surrogate(path: Path, line: int, field: str) -> None:
    """Line ``line`` of a JSON Lines file with a lone surrogate in ``field`` (valid JSON: an escape)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[line - 1])
    record[field] = "Лёд \ud800 растаял."
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


for task, file, field, model in (
    ("parus", "PARus/val.jsonl", "premise", "majority"),
    ("parus", "PARus/val.jsonl", "premise", "hf:TINY"),
    ("winograd", "winograd/test.jsonl", "text", "majority"),
):

    @case("round3", f"a lone surrogate in {file} ({field}), -m {model}", ERROR, f"{file}:2", timeout=180)
    def _(c: CaseDir, task=task, file=file, field=field, model=model) -> list[str]:
        data = c.samples()
        surrogate(data / file, 2, field)
        spec = f"hf:{c.shared.tiny()}" if model == "hf:TINY" else model
        return rueval("run", "-m", spec, "-t", task, "--limit", "4", "--data", data, "-o", c / "out")


def set_everywhere(tasks: dict, task: str, **values: Any) -> None:
    """Every record of ``task`` (each split) with ``values`` set (``inputs``: some of its inputs)."""
    for records in tasks[task].values():
        for n, record in enumerate(records):
            records[n] = {**record, **values, "inputs": {**record["inputs"], **values.get("inputs", {})}}


for layout in ("task folders", "dataset snapshot"):
    for model in ("majority", "hf:TINY"):

        @case("round3", f"MERA ({layout}): a lone surrogate in an input, -m {model}", ERROR, "inputs.text",
              timeout=180)  # fmt: skip
        def _(c: CaseDir, layout=layout, model=model) -> list[str]:
            data = mera_data(c, layout, lambda t: set_everywhere(t, "CheGeKa", inputs={"text": "ЭТОТ <> тает."}))
            for file in data.rglob("*.json*"):  # the JSON escape written where the text has "<>"
                file.write_text(file.read_text(encoding="utf-8").replace("<>", "\\ud800"), encoding="utf-8")
            spec = f"hf:{c.shared.tiny()}" if model == "hf:TINY" else model
            return rueval("run", "-m", spec, "-t", "chegeka", "--data", data, "-o", c / "out")

    for instruction in ("{premise.nope}", "{premise.__class__.__mro__}", "{premise:>1500000000}", "{premise[0]}"):

        @case("round3", f"MERA ({layout}): instruction {instruction}", ERROR, "instruction", timeout=180,
              memory_mb=800)  # fmt: skip
        def _(c: CaseDir, layout=layout, instruction=instruction) -> list[str]:
            data = mera_data(c, layout, lambda t: set_everywhere(t, "PARus", instruction=instruction))
            return capped(rueval("run", "-m", f"hf:{c.shared.tiny()}", "-t", "parus", "--data", data, "-o", c / "out"))


@case("round3", "evaluate(): a MERA instruction {premise.__class__} through the API", ERROR, "instruction")
def _(c: CaseDir) -> list[str]:
    data = mera_data(c, "task folders", lambda t: set_everywhere(t, "PARus", instruction="{premise.__class__}"))
    tiny, out = str(c.shared.tiny()), str(c / "out")
    return python(f"rueval.evaluate('hf:{tiny}', tasks='parus', data={str(data)!r}, out={out!r})")
