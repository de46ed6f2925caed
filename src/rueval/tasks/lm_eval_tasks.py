"""lm-evaluation-harness task files (``--include-path DIR``, and lm-eval's own task names), built by
lm-eval's own ``TaskManager``, so every key, filter, metric, group, include chain and sampler means
what lm-eval means. They need the ``lm-eval`` extra (lm-eval 0.4.13).

Before lm-eval reads a task file, rueval makes reading it safe:
- its templates render in rueval's sandbox (rueval.core.sandbox): ``lm_eval.utils.env``, the plain
  jinja2 environment lm-eval renders ``doc_to_text`` and the rest in, is swapped for it in this process;
- every YAML file under the include path is checked within rueval's bounds (rueval.core.yaml_files):
  an asked task's file (or a file it includes) that fails is an error; any other is named in a warning,
  and lm-eval's index passes it over;
- the asked tasks' files and their includes are scanned for ``!function``: Python next to a task file
  (``process_docs``, ``process_results``, a metric, a Python task's ``class``) runs only with
  ``--trust-task-code``. lm-eval's own tasks import only lm-eval's installed code, trusted as lm-eval is.

datasets 4 and later run no dataset loading script, so a folder's loading script never runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.memory import import_libraries
from rueval.core.progress import warn
from rueval.core.yaml_files import composed, is_special
from rueval.tasks import get_task, is_known

EXTRA = "task files need the lm-eval extra: pip install 'rueval[lm-eval]'"
FUNCTION_TAG = "!function"
TRUST_FLAG = "--trust-task-code"
UNSAFE_FLAG = "--confirm-run-unsafe-code"
# the keys lm-eval renders as templates (in a task's config and its fewshot_config)
TEMPLATE_KEYS = (
    "doc_to_text",
    "doc_to_target",
    "doc_to_choice",
    "description",
    "gen_prefix",
    "doc_to_decontamination_query",
)


def lm_eval_module() -> Any:
    """lm-eval, its templates rendering in rueval's sandbox from here on; one line naming the extra without it."""
    try:
        import_libraries("datasets", "lm_eval.utils")
        import datasets
        import lm_eval.utils
    except ImportError:
        raise RuevalError(EXTRA) from None
    if int(datasets.__version__.split(".")[0]) < 4:
        raise RuevalError(f"datasets {datasets.__version__} runs dataset loading scripts; task files need datasets>=4")
    from rueval.core.sandbox import environment  # jinja2 only where templates are read: the CLI starts without it

    lm_eval.utils.env = environment()
    return lm_eval


def aggregation_name(function: Any) -> str:
    """The name lm-eval's registry gives an aggregation function ("" for a task's own)."""
    from lm_eval.api.registry import AGGREGATION_REGISTRY, get_aggregation

    get_aggregation("mean")  # fills the registry on first use
    return next((name for name, known in AGGREGATION_REGISTRY.items() if known is function), "")


def aggregation(name: str) -> Any:
    """lm-eval's aggregation function of that name in its registry; one line when there is none."""
    lm_eval_module()
    from lm_eval.api.registry import AGGREGATION_REGISTRY, get_aggregation

    get_aggregation("mean")
    if name not in AGGREGATION_REGISTRY:
        raise RuevalError(f"aggregation {name!r:.60}: not one of lm-eval's ({', '.join(AGGREGATION_REGISTRY)})")
    return AGGREGATION_REGISTRY.get(name)


@dataclass(frozen=True)
class TaskCode:
    """A ``!function`` a task file names: the file, its line, and the function."""

    file: Path
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.function}"


class TaskFiles:
    """lm-eval's index of task files: the include path's (first), then lm-eval's own when ``defaults``."""

    def __init__(self, include_path: Sequence[str] = (), defaults: bool = True):
        lm_eval = lm_eval_module()
        from lm_eval.tasks import TaskManager

        self.include_path = tuple(include_path)
        self.unread = unread_files(self.include_path)
        for error in self.unread.values():
            warn(f"{error} (its tasks are not run)")
        self.manager = TaskManager(include_path=list(self.include_path) or None, include_defaults=defaults)
        self.own_folder = Path(lm_eval.tasks.__file__).parent.resolve()

    @classmethod
    def finding(cls, names: Sequence[str], include_path: Sequence[str] = ()) -> TaskFiles:
        """The include path's tasks alone when they have every name (lm-eval's own 15,000 take seconds to
        index), else lm-eval's own with them."""
        if include_path:
            declared = indexed(tuple(include_path), False, _signature(include_path))
            if all(declared.knows(name) for name in names):
                return declared
        return indexed(tuple(include_path), True, _signature(include_path))

    @classmethod
    def checked(cls, names: Sequence[str], include_path: Sequence[str], trusted: bool, confirmed: bool) -> TaskFiles:
        """The index that has the names (finding), each name known (check_names) and their files checked (check)."""
        files = cls.finding(names, include_path)
        files.check_names(names)
        files.check(names, trusted, confirmed)
        return files

    def knows(self, name: str) -> bool:
        return name in self.manager.task_index

    def check_names(self, names: Sequence[str]) -> None:
        unknown = [name for name in names if not self.knows(name)]
        if unknown:
            where = f" (nor under {', '.join(self.include_path)})" if self.include_path else ""
            raise RuevalError(f"unknown task '{unknown[0]}': not among lm-eval's tasks, groups and tags{where}")

    def files(self, names: Sequence[str]) -> list[Path]:
        """The task files the names are read from, with the files they include, each once."""
        found: dict[Path, None] = {}
        for path in self._entry_files(names, set()):
            for file in _with_includes(path, set()):
                found.setdefault(file)
        return list(found)

    def task_code(self, names: Sequence[str]) -> list[TaskCode]:
        """Every ``!function`` of the names' files outside lm-eval's own tasks."""
        return [code for file in self.files(names) if not self._own(file) for code in _functions(file)]

    def check(self, names: Sequence[str], trusted: bool, confirmed: bool) -> None:
        """Before lm-eval builds the asked tasks: their files (and what they include) read within bounds,
        their templates compiled in the sandbox (a template it refuses is an error naming the file, line
        and key), their Python run only when ``trusted`` and the model's code only when ``confirmed``."""
        files = self.files(names)
        for file in files:
            if file in self.unread:
                raise self.unread[file]
            _check_templates(file)
        code = self.task_code(names)
        if code and not trusted:
            shown = "; ".join(map(str, code[:5])) + (f"; and {len(code) - 5} more" if len(code) > 5 else "")
            raise RuevalError(f"the task files run Python ({shown}): give {TRUST_FLAG} to run it")
        marked = [str(file) for file in files if _says_unsafe(file)]
        if marked and not confirmed:
            raise RuevalError(
                f"{', '.join(marked)}: unsafe_code: the task runs the code the model writes, on this machine (not in "
                f"a sandbox): give {UNSAFE_FLAG} to run it"
            )

    def declaring(self, task: str) -> str:
        """The file that declares a task, for messages ("" when lm-eval's index does not say)."""
        entry = self.manager.task_index.get(task)
        return str(entry.yaml_path) if entry is not None and entry.yaml_path else ""

    def listing(self) -> list[dict[str, Any]]:
        """The include path's tasks, groups and tags: name, kind, file, output type, and Python run."""
        rows = []
        for name, entry in sorted(self.manager.task_index.items()):
            file = entry.yaml_path
            if file is not None and self._own(file):
                continue
            code = self.task_code([name])
            rows.append({
                "name": name,
                "kind": entry.kind.name.lower(),
                "file": str(file) if file else "",
                "output_type": (entry.cfg or {}).get("output_type", ""),
                "python": ", ".join(sorted({c.function for c in code})),
            })  # fmt: skip
        return rows

    def _own(self, file: Path) -> bool:
        return file.resolve().is_relative_to(self.own_folder)

    def _entry_files(self, names: Sequence[str], seen: set[str]) -> Iterator[Path]:
        index = self.manager.task_index
        for name in names:
            if name in seen or name not in index:
                continue
            seen.add(name)
            entry = index[name]
            if entry.yaml_path is not None:
                yield Path(entry.yaml_path)
            members = sorted(entry.tags) if entry.kind.name == "TAG" else []
            for item in (entry.cfg or {}).get("task", []) if entry.kind.name == "GROUP" else []:
                named = item if isinstance(item, str) else item.get("task") if isinstance(item, dict) else None
                members += [named] if isinstance(named, str) else []
            yield from self._entry_files(members, seen)


@lru_cache(maxsize=2)
def indexed(include_path: tuple[str, ...], defaults: bool, signature: tuple[Any, ...]) -> TaskFiles:
    """TaskFiles, built once while the include path's files stay as they were (``signature``): a run's
    names are checked, then its tasks built, from one index."""
    return TaskFiles(include_path, defaults)


def _signature(include_path: Sequence[str]) -> tuple[Any, ...]:
    """The include path's files with their sizes and times: a file changed, added or removed changes it."""
    files = [file for folder in map(Path, include_path) for file in sorted(folder.glob("**/*")) if file.is_file()]
    return tuple((str(file), file.stat().st_mtime_ns, file.stat().st_size) for file in files)


def task_file_names(names: Sequence[str], include_path: Sequence[str]) -> tuple[str, ...]:
    """Which of the names a run takes from task files: those the include path declares (over rueval's own
    task of the same name: the user pointed at them), then those rueval does not know, each checked
    against lm-eval's index. Without the lm-eval extra an unknown name is rueval's unknown-task error."""
    unknown = [name for name in names if not is_known(name)]
    if not include_path and not unknown:
        return ()
    try:
        lm_eval_module()
    except RuevalError:
        if include_path:
            raise
        get_task(unknown[0])  # rueval's own error, listing the tasks it knows
        raise
    declared = TaskFiles.finding([], include_path) if include_path else None
    files = tuple(name for name in names if (declared and declared.knows(name)) or not is_known(name))
    if files:
        found = TaskFiles.finding(files, include_path)
        for name in files:
            if not found.knows(name):  # nor rueval's: its error lists rueval's names, then lm-eval's place
                try:
                    get_task(name)
                except RuevalError as e:
                    where = f" (nor under {', '.join(include_path)})" if include_path else ""
                    raise RuevalError(f"{e}; nor is it among lm-eval's tasks, groups and tags{where}") from None
    return files


def unread_files(include_path: Sequence[str]) -> dict[Path, DataError]:
    """The YAML files under the include path that fail rueval's checks, with why. One that is not a regular
    file (a FIFO) is an error of the run: lm-eval's index opens every YAML file of the folder and would wait
    on it for ever."""
    unread = {}
    for folder in map(Path, include_path):
        for file in sorted(folder.glob("**/*.yaml")) if folder.is_dir() else [folder]:
            if is_special(file):
                raise DataError(str(file), "not a regular file, which lm-eval would wait on: move it out of the folder")
            try:
                composed(file)
            except DataError as e:
                unread[file.resolve()] = e
    return unread


def _with_includes(file: Path, seen: set[Path]) -> Iterator[Path]:
    """The file, then every file its ``include`` keys name (relative to it), theirs in turn."""
    file = file.resolve()
    if file in seen:
        return
    seen.add(file)
    yield file
    for included in _texts_under(_composed(file), "include"):
        path = Path(included)
        yield from _with_includes(path if path.is_absolute() else file.parent / path, seen)


def _functions(file: Path) -> list[TaskCode]:
    return [TaskCode(file, n.start_mark.line + 1, n.value) for n in _nodes(_composed(file)) if n.tag == FUNCTION_TAG]


def _check_templates(file: Path) -> None:
    """Each template key's text compiled in the sandbox: what it refuses when a template is read (a name
    starting with "__", a syntax error) is a DataError naming the file, line and key."""
    import jinja2

    from rueval.core.sandbox import environment

    for key, value in _pairs(_composed(file)):
        if key in TEMPLATE_KEYS and isinstance(value.value, str) and ("{{" in value.value or "{%" in value.value):
            try:
                environment().from_string(value.value)
            except jinja2.TemplateError as e:
                raise DataError(str(file), f"the template is refused: {e}", value.start_mark.line + 1, key) from None


def _says_unsafe(file: Path) -> bool:
    return any(value.lower() not in ("false", "no", "off") for value in _texts_under(_composed(file), "unsafe_code"))


def _composed(file: Path) -> Any:
    """The file's nodes; None for a file that fails rueval's checks (``TaskFiles.check`` refuses it first)."""
    try:
        return composed(file)
    except DataError:
        return None


def _nodes(node: Any) -> Iterator[Any]:
    """Every node of a composed document, each once (an alias is one node met twice)."""
    seen: set[int] = set()
    stack = [node] if node is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node.value, list):
            stack.extend(child for item in node.value for child in (item if isinstance(item, tuple) else (item,)))


def _pairs(node: Any) -> Iterator[tuple[Any, Any]]:
    """Every key (its text) and value node of every mapping in the document."""
    for mapping in _nodes(node):
        if isinstance(mapping.value, list):
            yield from ((pair[0].value, pair[1]) for pair in mapping.value if isinstance(pair, tuple))


def _texts_under(node: Any, key: str) -> Iterator[str]:
    """The texts given under ``key`` anywhere in the document (a text, or a list of texts)."""
    for name, value in _pairs(node):
        if name == key:
            values = value.value if isinstance(value.value, list) else [value]
            yield from (v.value for v in values if isinstance(v.value, str))
