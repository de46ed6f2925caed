"""The architecture, checked on the import graph: data flows one way through layers that import only
from themselves and below, with no import circle and no module over about 420 lines. The Layout
section of the documentation's architecture page describes the same layers."""

import ast
from pathlib import Path

import rueval

SRC = Path(rueval.__file__).parent
# Lowest first. A module belongs to the first layer with a prefix that names it or a package above it.
LAYERS = {
    "core": ("rueval.errors", "rueval.paths", "rueval.progress", "rueval.text", "rueval.files", "rueval.memory"),
    "data": ("rueval.data",),
    "tasks": (
        "rueval.tasks",
        "rueval.metrics",
        "rueval.scoring",
        "rueval.stats",
        "rueval.results",
        "rueval.slices",
        "rueval.fewshot",
    ),
    "models/solvers": ("rueval.models", "rueval.solvers", "rueval.robustness"),
    "run": ("rueval.run", "rueval.audit", "rueval.duplicates"),
    "report": ("rueval.report",),
    "serve": ("rueval.serve",),
    "cli": ("rueval.cli", "rueval.__main__", "rueval.api"),
}
MAX_LINES = 420


def module_name(path: Path) -> str:
    parts = ["rueval", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def layer_of(module: str) -> int:
    if module == "rueval":
        return 0  # the package itself holds only its version
    for rank, prefixes in enumerate(LAYERS.values()):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return rank
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and to docs/architecture.md's Layout")


def imports(module: str) -> set[str]:
    """The rueval modules a module imports, anywhere in it (functions and TYPE_CHECKING blocks too):
    `from package import submodule` counts as importing the submodule."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in MODULES else node.module)
    return {name for name in found if name in MODULES and name != module}


GRAPH = {module: imports(module) for module in MODULES}


def test_every_import_goes_to_the_same_layer_or_below():
    upward = [
        f"{module} ({list(LAYERS)[layer_of(module)]}) imports {target} ({list(LAYERS)[layer_of(target)]})"
        for module, targets in GRAPH.items()
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []


def test_no_import_circle():
    # Tarjan's strongly connected components: any with more than one module is a circle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in GRAPH[module]:
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
                circles.append(sorted(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert circles == []


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
        assert name in layout
        for prefix in prefixes:
            assert prefix.removeprefix("rueval.").split(".")[0] in layout, prefix


def test_the_checks_see_a_backward_import(tmp_path):
    """The layer check is not vacuous: the graph holds the known downward imports."""
    assert "rueval.tasks" in GRAPH["rueval.solvers.lm"] and "rueval.models.engine" in GRAPH["rueval.solvers.lm"]
    assert layer_of("rueval.report.html") > layer_of("rueval.run.pipeline") > layer_of("rueval.solvers.lm")
    assert layer_of("rueval.cli.serve") > layer_of("rueval.serve.app") > layer_of("rueval.report.html")
