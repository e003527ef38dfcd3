"""The library's layers, as the README's "Layout" table states them: every module of csc_hf is in the table, imports
only from its own layer or below (module-level and function-level imports alike), and no import circle exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "csc_hf"
ROW = re.compile(r"\| (\d+) \| `csc_hf/([^`]+)` \|")


def layout() -> dict[str, int]:
    """``{unit: layer}`` from the README's "Layout" table: a unit is a module path (``files.py``) or a folder
    (``chars/``) whose files share the layer."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    units = {unit: int(layer) for layer, unit in ROW.findall(section)}
    assert units, "README.md's Layout section has no table rows"
    return units


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def unit_of(path: Path, units: dict[str, int]) -> str | None:
    """The table's unit that holds ``path``: the module itself, or the folder it lies in."""
    relative = path.relative_to(PACKAGE).as_posix()
    if relative in units:
        return relative
    return next((unit for unit in units if unit.endswith("/") and relative.startswith(unit)), None)


def imports(name: str, source: str, known: dict[str, Path], is_package: bool = False) -> set[str]:
    """The csc_hf modules that the module ``name`` (its ``source``) imports, anywhere in it (inside functions too):
    ``from .x import y`` counts as the module ``x.y`` when that is a module, else ``x``."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "csc_hf"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "csc_hf":
                continue
            found |= {f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target for alias in node.names}
    return found - {name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {
        name: {
            m for m in imports(name, path.read_text(encoding="utf-8"), known, path.name == "__init__.py") if m in known
        }
        for name, path in known.items()
    }


def test_every_module_is_in_the_layout():
    units = layout()
    missing = [module_name(path) for path in modules().values() if unit_of(path, units) is None]
    assert not missing, f"modules missing from README.md's Layout table: {missing}"
    stale = [unit for unit in units if not (PACKAGE / unit).exists()]
    assert not stale, f"README.md's Layout table names what does not exist: {stale}"


def test_imports_go_down_the_layers():
    units, known = layout(), modules()
    layer = {name: units[unit_of(path, units)] for name, path in known.items()}
    upward = [
        f"{name} (layer {layer[name]}) imports {target} (layer {layer[target]})"
        for name, targets in graph().items()
        for target in sorted(targets)
        if layer[target] > layer[name]
    ]
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``edges``, as the modules along it (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    return next((cycle for node in sorted(edges) if node not in state and (cycle := visit(node))), None)


def test_no_import_circles():
    cycle = find_cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


@pytest.mark.parametrize(
    "edges, circle",
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
        ({"a": {"a"}}, True),
    ],
)
def test_the_circle_finder_finds_circles(edges, circle):
    assert (find_cycle(edges) is not None) == circle


def test_function_level_and_relative_imports_count():
    known = modules()
    source = "import os\n\ndef f():\n    from .pipeline import Corrector\n    from ..x import y\n"
    assert imports("csc_hf.files", source, known) == {"csc_hf.pipeline"}
    assert imports("csc_hf.study.run", "from ..training import config\nfrom . import preset\n", known) == {
        "csc_hf.training.config",
        "csc_hf.study.preset",
    }
    assert imports("csc_hf.study", "from .run import Study\n", known, is_package=True) == {"csc_hf.study.run"}
