"""The sweep's cases of simple bad values: every number option of run, submit, perturb and compare,
strings, caches, generation budgets, and rueval.evaluate's arguments."""

from __future__ import annotations

from typing import Any

from hostile_cases.common import (
    cache_file,
    case,
    fresh_scores,
    immutable,
    majority_run,
    mera_folder,
    results,
    same_scores,
    scores,
    set_fields,
)
from hostile_cases.harness import EITHER, ERROR, OK, CaseDir, python, rueval

BAD_NUMBERS = ("nan", "inf", "-inf", "-1", "1e400", "x")


def base_args(c: CaseDir, command: str, option: str) -> list[Any]:
    """A command line that runs quickly on the samples and that ``option`` applies to."""
    if command == "compare":
        return ["compare", majority_run(c, c / "a"), majority_run(c, c / "b")]
    if command == "perturb":
        return ["perturb", "-t", "winograd", "--perturbations", "change_char_case", "--limit", "2", "-o", c / "out"]
    head = [command] + (["-t", "parus", "--limit", "2", "-o", c / "out"] if command == "run" else ["-o", c / "sub.zip"])
    if option in ("--concurrency", "--timeout"):
        return [*head, "-m", "openai:tiny-gpt2", "--base-url", c.shared.server().url, "--tokenizer", c.shared.tiny()]
    if option.startswith("--ft-"):
        return [*head, "-m", f"finetune:{c.shared.tiny_bert()}", "--ft-epochs", "0.1"]
    if option in ("--num_fewshot", "--episodes"):
        return [*head, "-m", f"hf:{c.shared.tiny()}", "--shots", "0,1"][: None if option == "--episodes" else -2]
    if option.startswith("--filter-"):
        return [*head, "-m", "majority", "--perturb", "change_char_case"][: None if command == "run" else -2]
    return [*head, "-m", "majority"]


NUMBER_OPTIONS = {
    "run": ("--seed", "--limit", "--num_fewshot", "--episodes", "--concurrency", "--timeout", "--ft-epochs", "--ft-lr",
            "--ft-batch-size", "--ft-max-length", "--ft-seed", "--ft-grad-accum", "--ft-heldout", "--filter-threshold",
            "--filter-min-share", "--max-line-mb", "--max-file-mb", "--max-lines", "--max-blank-lines"),
    "submit": ("--seed", "--shots", "--timeout", "--ft-epochs", "--max-line-mb", "--max-lines"),
    "perturb": ("--seed", "--limit", "--filter-threshold", "--filter-min-share", "--max-file-mb", "--max-blank-lines"),
    "compare": ("--resamples", "--seed"),
}  # fmt: skip
for command, options in NUMBER_OPTIONS.items():
    for option in options:
        # the words the error must have: the option, or for fine-tuning the field it sets ("epochs" for --ft-epochs)
        said = option.removeprefix("--ft-").split("-")[0] if option.startswith("--ft-") else option.split("_")[0]
        for value in BAD_NUMBERS if command in ("run", "compare") or option == "--seed" else ("nan", "-1"):

            @case("values", f"{command} {option} {value}", ERROR, said.split("-mb")[0])
            def _(c: CaseDir, command=command, option=option, value=value) -> list[str]:
                c.nothing_written(c / "out", c / "sub.zip")
                return rueval(*base_args(c, command, option), option, value)


@case("values", "compare --resamples 99999999999", ERROR, "--resamples", timeout=60, memory_mb=2000)
def _(c: CaseDir) -> list[str]:
    return rueval("compare", majority_run(c, c / "a"), majority_run(c, c / "b"), "--resamples", "99999999999")


@case("values", "run --limit 1e30: a full run, not partial", OK)
def _(c: CaseDir) -> list[str]:
    expected = fresh_scores(c, "-m", "majority", "-t", "rcb,parus")
    same_scores(c, c / "out", expected)
    c.check(lambda o: None if results(c / "out")["partial"] is False else "marked partial")
    return rueval("run", "-m", "majority", "-t", "rcb,parus", "--limit", "1e30", "-o", c / "out")


@case("values", "run --seed -5 with LM work to do: refused before it", ERROR, "--seed -5")
def _(c: CaseDir) -> list[str]:
    c.nothing_written(c / "out")
    return rueval("run", "-m", f"hf:{c.shared.tiny()}", "-t", "parus", "--seed", "-5", "-o", c / "out")


LONG = "a" * 300
for command in ("run", "submit", "perturb", "compare", "report", "leaderboard", "audit", "export", "make-tiny-model"):

    @case("values", f"{command} -o an over-long path", ERROR, LONG[:50], timeout=60)
    def _(c: CaseDir, command=command) -> list[str]:
        target = c / LONG
        if command in ("compare", "report", "leaderboard"):
            runs = [majority_run(c, c / "a")] + ([majority_run(c, c / "b")] if command == "compare" else [])
            return rueval(command, *runs, "-o", target)
        if command == "export":
            c.rueval("run", "-m", "majority", "-t", "rcb", "--data", mera_folder(c, [50, 51]), "-o", c / "run")
            return rueval("export", c / "run", "-o", target)
        if command == "make-tiny-model":
            return rueval(command, target)
        tasks = {"run": ("-t", "parus"), "perturb": ("-t", "winograd", "--limit", "2"), "audit": ("-t", "parus")}
        return rueval(command, *tasks.get(command, ()), "-o", target)


for command in ("compare", "report", "leaderboard", "export"):

    @case("values", f"{command}: a run folder named with an over-long name", ERROR, LONG[:50], timeout=60)
    def _(c: CaseDir, command=command) -> list[str]:
        target = c / LONG
        return rueval(command, target, *((c / "a",) if command == "compare" else ()))


def cache_dir_case(c: CaseDir, how: str) -> None:
    if how == "a file":
        (c / "cache-file").write_text("mine", encoding="utf-8")
        c.env["RUEVAL_CACHE_DIR"] = str(c / "cache-file")
    elif how == "an immutable folder":
        (c / "ro").mkdir()
        immutable(c, c / "ro")
        c.env["RUEVAL_CACHE_DIR"] = str(c / "ro")
    elif how == "an immutable request cache":
        c.rueval("run", "-m", f"hf:{c.shared.tiny()}", "-t", "parus", "--limit", "2", "-o", c / "first")
        immutable(c, cache_file(c).parent)
    elif how == "a model-files memo that is a list":
        (c / "cache" / "model-files").mkdir(parents=True, exist_ok=True)
        (c / "cache" / "model-files" / "sha256.json").write_text("[1, 2]", encoding="utf-8")
    elif how == "a request cache that is no SQLite":
        cache_file(c).parent.mkdir(parents=True, exist_ok=True)
        cache_file(c).write_bytes(b"not sqlite" * 100)


for how in ("a file", "an immutable folder", "an immutable request cache", "a model-files memo that is a list",
            "a request cache that is no SQLite"):  # fmt: skip
    for model in ("hf", "tfidf"):
        if model == "tfidf" and "request" in how or "model-files" in how and model == "tfidf":
            continue

        @case("values", f"run -m {model}: RUEVAL_CACHE_DIR {how}", EITHER, "RUEVAL_CACHE_DIR")
        def _(c: CaseDir, how=how, model=model) -> list[str]:
            spec = f"hf:{c.shared.tiny()}" if model == "hf" else "tfidf"
            args = ("-m", spec, "-t", "parus", "--limit", "2")
            expected = fresh_scores(c, *args)
            cache_dir_case(c, how)
            c.check(lambda o: None if o.returncode == 2 or scores(c / "out") == expected else "other scores")
            return rueval("run", *args, "-o", c / "out")


GEN_KWARGS = ("max_gen_toks=99999999999", "max_gen_toks=0", "max_gen_toks=-1", "max_gen_toks=nan", "max_gen_toks=1.5",
              "temperature=-1", "temperature=nan", "temperature=inf", "top_p=0", "top_p=2", "top_p=nan",
              "do_sample=maybe", "until=", "foo=1", "max_gen_toks", "=5", "max_gen_toks=4,max_gen_toks=8")  # fmt: skip
for kwargs in GEN_KWARGS:
    for via in ("hf", "openai"):
        if via == "openai" and kwargs not in GEN_KWARGS[:2]:
            continue

        # the last of a repeated key (lm-eval's reading); a served model's own window decides its budget
        lenient = kwargs == GEN_KWARGS[-1] or via == "openai" and kwargs == GEN_KWARGS[0]

        @case("values", f"{via}: --gen_kwargs {kwargs}", EITHER if lenient else ERROR, "--gen_kwargs")
        def _(c: CaseDir, kwargs=kwargs, via=via) -> list[str]:
            model = ("-m", f"hf:{c.shared.tiny()}") if via == "hf" else base_args(c, "run", "--timeout")[-6:]
            c.nothing_written(c / "out")
            return rueval("run", *model, "-t", "multiq", "--limit", "2", "--gen_kwargs", kwargs, "-o", c / "out")


STRING_VALUES = {
    "-m": ("", "hf:", "hf:/nonexistent", "openai:", "openai:x", "finetune:", "vllm:", "nope", "HF:x", "hf: x"),
    "-t": ("", ",", "nope", "parus,nope", "RSG,parus"),
    "--slices": ("nope", ",", "length,nope"),
    "--data": ("", "/nonexistent", "README.md", "hf:", "."),
    "--include-path": ("/nonexistent", ""),
    "--shots": ("", "x", "1,,2", "-1", "0.5", "1e400", "99999999999"),
    "--batch-size": ("0", "-3", "x", "nan", "1e9", "auto:x", "99999999999"),
    "--perturb": ("all:5", "nope", "butter_fingers:2", "butter_fingers:nan", "butter_fingers:x", "", ","),
    "--base-url": ("", "nope", "ftp://x", "@/nonexistent", ",", "http://"),
    "--device": ("nope", "cuda", "cuda:99", "mps", ""),
    "--tokenizer": ("/nonexistent", "", "server"),
    "--model_args": ("garbage", "pretrained=", "=x", "pretrained=a,pretrained=b"),
    "--revision": ("nope", ""),
    "--peft": ("/nonexistent",),
    "--load-in": ("8bit",),
    "--system-instruction": ("",),
    "--ft-precision": ("nope", "fp16"),
    "--split": ("train", ""),
}
NEEDS_LM = ("--shots", "--batch-size", "--device", "--revision", "--peft", "--load-in", "--model_args")
for option, values in STRING_VALUES.items():
    for value in values:
        lenient = (
            ("-t", "RSG,parus"),
            ("--system-instruction", ""),
            ("--data", "."),
            ("--include-path", ""),
            ("--shots", "1,,2"),
            ("--batch-size", "99999999999"),
            ("--device", ""),
            ("--tokenizer", "server"),
        )
        right = EITHER if (option, value) in lenient else ERROR  # read leniently, as lm-eval does: no wrong result

        @case("values", f"run {option} {value!r}", right, "")
        def _(c: CaseDir, option=option, value=value) -> list[str]:
            if option in ("--tokenizer", "--base-url"):
                head = base_args(c, "run", "--timeout")
                head = [a for a in head if a not in ("--tokenizer", str(c.shared.tiny()), c.shared.tiny())]
                if option == "--base-url":
                    head = [a for a in head if a not in ("--base-url", c.shared.server().url)]
            elif option == "--ft-precision":
                head = base_args(c, "run", "--ft-epochs")
            elif option in NEEDS_LM:
                head = ["run", "-t", "parus", "--limit", "2", "-o", c / "out", "-m", f"hf:{c.shared.tiny()}"]
                if option == "--model_args":
                    head = ["run", "-t", "parus", "--limit", "2", "-o", c / "out", "--model", "hf"]
            elif option == "--perturb":
                head = ["run", "-t", "winograd", "--limit", "2", "-o", c / "out"]
            else:
                head = ["run", "-t", "parus", "--limit", "2", "-o", c / "out"]
            head = [a for i, a in enumerate(head) if not (option == "-t" and (a == "-t" or head[i - 1] == "-t"))]
            return rueval(*head, option, value)


API_CASES = {
    # the nine of the issue, and split='train'
    "tasks=123": "--tasks", "limit='10'": "--limit", "limit=math.nan": "--limit", "seed='x'": "--seed",
    "seed=-1": "--seed", "shots='abc'": "--shots", "shots=[-1]": "--shots", "episodes=0": "--episodes",
    "batch_size=-3": "batch_size", "split='train'": "--split",
    # variants
    "tasks=[]": "task", "tasks=''": "task", "tasks=None": "--tasks", "tasks=['parus', 5]": "--tasks",
    "limit=-1": "--limit", "limit=0": "--limit", "limit=True": "--limit", "limit=math.inf": "--limit",
    "limit=[5]": "--limit", "seed=True": "--seed", "seed=1.5": "--seed", "seed=None": "--seed", "seed=2**64": "--seed",
    "shots=(0, '1')": "--shots", "shots=[]": "--shots", "shots=math.nan": "--shots",
    "episodes=True": "--episodes", "episodes=2.5": "--episodes", "episodes=-1": "--episodes",
    "data=5": "--data", "data=Path('/nonexistent')": "/nonexistent", "out=5": "out", "force='yes'": "force",
    "include_path=5": "include_path", "scoring='nope'": "scoring", "split=''": "--split",
    "log_samples=1": "--log-samples", "log_samples=True, out=None": "log_samples",
    "model=None": "model", "model=''": "", "model='hf:'": "hf:",
    "tokenizer='x'": "tokenizer", "device=5": "device", "gen_kwargs={'max_gen_toks': 10**12}": "majority",
    "foo=1": "foo", "slices='nope'": "slices", "system_instruction=5": "system",
}  # fmt: skip
for arguments, said in API_CASES.items():

    @case("api", f"evaluate({arguments})", ERROR, said)
    def _(c: CaseDir, arguments=arguments) -> list[str]:
        c.nothing_written(c / "out")
        keyword = "" if arguments.startswith("tasks=") else "tasks='parus', "
        model = "" if arguments.startswith("model=") else "'majority', "
        out = "" if "out=" in arguments else f", out={str(c / 'out')!r}"
        return python(f"rueval.evaluate({model}{keyword}{arguments}{out})")


for arguments, said in {
    "batch_size=-3": "--batch-size -3",
    "batch_size=0": "--batch-size",
    "batch_size='x'": "--batch-size",
    "batch_size=2.5": "--batch-size",
    "gen_kwargs={'max_gen_toks': 10**12}": "max_gen_toks",
    "gen_kwargs={'temperature': math.nan}": "temperature",
    "gen_kwargs='max_gen_toks=99999999999'": "max_gen_toks",
    "device='nope'": "nope",
    "dtype='nope'": "dtype",
    "shots=[99999]": "99999-shot",
    "episodes=10**6, shots=[1]": "--episodes",
    "limit=1e30": None,
    "shots=None": None,  # the default: 0-shot, or on MERA's files MERA's shots
}.items():

    @case("api", f"evaluate('hf:TINY', {arguments})", OK if said is None else ERROR, said or "")
    def _(c: CaseDir, arguments=arguments) -> list[str]:
        tasks = "'multiq'" if "gen_kwargs" in arguments else "'parus'"
        return python(f"rueval.evaluate('hf:{c.shared.tiny()}', tasks={tasks}, {arguments})")


for command, args, said in (
    ("heuristics", ("-t", "nope"), "nope"),
    ("heuristics", ("-t", "winograd"), "winograd"),  # a task without heuristic rules
    ("heuristics", ("-t", "parus", "--data", "/nonexistent"), "/nonexistent"),
    ("heuristics", ("-t", "parus", "--split", "test"), "test"),  # RSG's test sets are unlabelled
    ("audit", ("-t", "nope"), "nope"),
    ("audit", ("-t", "parus", "--data", ""), "--data"),
    ("tasks", ("--include-path", "/nonexistent"), "/nonexistent"),
    ("leaderboard", ("/nonexistent",), "/nonexistent"),
    ("report", ("/nonexistent",), "/nonexistent"),
    ("export", ("/nonexistent",), "/nonexistent"),
    ("export", ("--format", "nope", "."), "nope"),
):

    @case("values", f"{command} {' '.join(args)}", ERROR, said, timeout=60)
    def _(c: CaseDir, command=command, args=args) -> list[str]:
        return rueval(command, *args)


@case(
    "values",
    "heuristics -t parus --data a folder whose PARus val has idx null",
    ERROR,
    "PARus/val.jsonl:1: field 'idx'",
)
def _(c: CaseDir) -> list[str]:
    data = c.samples()
    set_fields(data / "PARus" / "val.jsonl", 1, idx=None)
    return rueval("heuristics", "-t", "parus", "--data", data)
