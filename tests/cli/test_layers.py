"""The architecture, checked on the import graph: data flows one way through layers that import only
from themselves and below, with no import circle (in src, tests and benchmarks alike) and no module
over about 420 lines. The Layout section of the documentation's architecture page describes the same
layers."""

import ast
import importlib
from collections.abc import Collection, Mapping
from pathlib import Path

import rueval

SRC = Path(rueval.__file__).parent
ROOT = SRC.parents[1]  # src, tests and benchmarks
# Lowest first, one folder each. The command line's layer also holds the Python API and `python -m rueval`.
LAYERS = {
    "core": ("rueval.core",),
    "data": ("rueval.data",),
    "tasks": ("rueval.tasks",),
    "scoring": ("rueval.scoring",),
    "results": ("rueval.results",),
    "models": ("rueval.models",),
    "solvers": ("rueval.solvers",),
    "robustness": ("rueval.robustness",),
    "run": ("rueval.run",),
    "audit": ("rueval.audit",),
    "report": ("rueval.report",),
    "serve": ("rueval.serve",),
    "cli": ("rueval.cli", "rueval.api", "rueval.__main__"),
}
# The import paths the documentation gave before the folders: each only re-exports what its new home defines.
REEXPORTS = {"rueval.errors": "rueval.core.errors", "rueval.metrics": "rueval.scoring.metrics"}
MAX_LINES = 420


def module_name(path: Path) -> str:
    parts = ["rueval", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def layer_of(module: str) -> int:
    if module == "rueval":
        return 0  # the package itself holds only its version
    if module in REEXPORTS:
        return layer_of(REEXPORTS[module])
    for rank, prefixes in enumerate(LAYERS.values()):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return rank
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and to docs/architecture.md's Layout")


def imports(path: Path, modules: Collection[str]) -> set[str]:
    """The ``modules`` a file imports, anywhere in it (functions and TYPE_CHECKING blocks too):
    `from package import submodule` counts as importing the submodule."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    return {name for name in found if name in modules}


GRAPH = {module: imports(path, MODULES) - {module} for module, path in MODULES.items()}


def importable_name(path: Path) -> str:
    """The name a test or benchmark file is imported by: its packages (folders with __init__.py) below
    the first folder that is none, which is on sys.path (pytest puts a test's folder there, Python a
    script's). conftest.py files, which pytest loads by path and nothing imports, are named by their path."""
    if path.name == "conftest.py":
        return str(path.relative_to(ROOT))
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


OUTSIDE_SRC = sorted(path for top in ("tests", "benchmarks") for path in (ROOT / top).rglob("*.py"))
TREE_NAMES = {**{path: module for module, path in MODULES.items()}, **{p: importable_name(p) for p in OUTSIDE_SRC}}
TREE = {name: imports(path, set(TREE_NAMES.values())) - {name} for path, name in TREE_NAMES.items()}


def circles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components: any with more than one module is a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_every_import_goes_to_the_same_layer_or_below():
    upward = [
        f"{module} ({list(LAYERS)[layer_of(module)]}) imports {target} ({list(LAYERS)[layer_of(target)]})"
        for module, targets in GRAPH.items()
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []


def test_no_import_circle_in_the_whole_tree():
    assert len(set(TREE_NAMES.values())) == len(TREE_NAMES)  # each file has a name of its own
    assert circles(TREE) == []


def test_the_report_layer_presents_and_runs_nothing():
    """report/ only shows finished runs: it makes no solver and runs no model (submissions live in run/)."""
    running = [
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if module.startswith("rueval.report")
        for target in sorted(targets)
        if target.startswith(("rueval.run", "rueval.solvers"))
    ]
    assert running == []


def test_modules_stay_small():
    assert {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES} == {}


def test_the_architecture_page_layout_names_every_layer():
    page = SRC.parents[1] / "docs" / "architecture.md"
    layout = page.read_text(encoding="utf-8").split("## Layout", 1)[1]
    for name, prefixes in LAYERS.items():
        assert f"| {name} | `{prefixes[0].removeprefix('rueval.')}/`" in layout, name


def test_every_module_is_in_a_layer_folder_or_a_documented_reexport():
    loose = {m for m, path in MODULES.items() if path.parent == SRC and path.name != "__init__.py"}
    assert loose - {"rueval.api", "rueval.__main__"} == set(REEXPORTS)


def test_the_documented_import_paths_are_the_objects_of_their_new_homes():
    for old, new in REEXPORTS.items():
        shim, home = importlib.import_module(old), importlib.import_module(new)
        assert shim.__all__ and all(getattr(shim, name) is getattr(home, name) for name in shim.__all__)
        assert GRAPH[old] == {new}  # nothing but the re-export


def test_the_checks_see_a_backward_import(tmp_path):
    """The checks are not vacuous: the graphs hold the known imports, and a circle is found."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}) == [["a", "b", "c"]]
    assert "hostile_cases.harness" in TREE["hostile_sweep"] and "hostile_cases" in TREE["hostile_sweep"]
    assert {"support", "rueval.cli.app"} <= TREE["tests/conftest.py"] and GRAPH.items() <= TREE.items()
    assert "rueval.tasks" in GRAPH["rueval.solvers.lm"] and "rueval.models.engine" in GRAPH["rueval.solvers.lm"]
    assert layer_of("rueval.report.html") > layer_of("rueval.run.pipeline") > layer_of("rueval.solvers.lm")
    assert layer_of("rueval.cli.serve") > layer_of("rueval.serve.app") > layer_of("rueval.report.html")
