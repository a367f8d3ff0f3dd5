"""The layers hold: no module imports a higher layer, and no import cycle exists between modules.

Layers, lowest first: base (the foundation) → dsl (the rule language) → engine → compiler → the API and CLI.
`rules` and `examples` are data packages that import no layer. Every `import` and `from … import` counts,
also those inside functions (a lazy import still ties the two modules together).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import networkx as nx
import pytest

LAYERS = {
    "rulepass.base": 0,
    "rulepass.rules": 0,
    "rulepass.examples": 0,
    "rulepass.dsl": 1,
    "rulepass.engine": 2,
    "rulepass.compiler": 3,
    "rulepass.api": 4,
    "rulepass.cli": 5,
    "rulepass.cli_render": 5,
    "rulepass.cli_lsp": 5,
    "rulepass.cli_schema": 5,
    "rulepass.cli_junit": 5,
    "rulepass.config": 5,
    "rulepass.cli_completion": 5,
    "rulepass.lsp": 5,  # front-ends beside the command line (the language server)
    "rulepass.lsp_analysis": 5,
    "rulepass.cli_corpus": 5,
    "rulepass.cli_report": 5,
    "rulepass.cli_nearmiss": 5,  # a command of the CLI in its own module
    "rulepass.__main__": 6,
    "rulepass": 0,  # the package's own __init__ (its version)
}


def _modules() -> dict[str, Path]:
    """Every module of the installed package by dotted name, found through the import system."""
    out: dict[str, Path] = {}
    for pkg in ("rulepass", "rulepass.base", "rulepass.dsl", "rulepass.engine", "rulepass.compiler"):
        spec = importlib.util.find_spec(pkg)
        assert spec is not None and spec.origin is not None
        root = Path(spec.origin).parent
        files = root.rglob("*.py") if pkg != "rulepass" else root.glob("*.py")
        for f in files:
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([pkg, *parts])] = f
    for pkg in ("rulepass.rules", "rulepass.examples"):
        spec = importlib.util.find_spec(pkg)
        assert spec is not None and spec.origin is not None
        out[pkg] = Path(spec.origin)
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The rulepass modules `name` imports (a `from pkg import x` of a submodule counts as that submodule)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        found.update(t for t in targets if t in known and t != name)
    return found


def _layer(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


GRAPH = nx.DiGraph()
MODULES = _modules()
for _name, _path in MODULES.items():
    GRAPH.add_node(_name)
    for _target in _imports(_name, _path, set(MODULES)):
        GRAPH.add_edge(_name, _target)


def test_the_walk_sees_the_whole_package() -> None:
    assert {"rulepass.base.files", "rulepass.dsl.codegen", "rulepass.compiler.pipeline", "rulepass.cli"} <= set(MODULES)
    assert GRAPH.has_edge("rulepass.compiler.pipeline", "rulepass.compiler.passes")  # relative imports resolve
    assert GRAPH.has_edge("rulepass.api", "rulepass.compiler.pipeline")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer(module: str) -> None:
    upward = [t for t in GRAPH.successors(module) if _layer(t) > _layer(module)]
    assert upward == [], f"{module} (layer {_layer(module)}) imports {upward}"


def test_no_import_cycle() -> None:
    cycles = sorted(sorted(c) for c in nx.simple_cycles(GRAPH))
    assert cycles == []


def test_only_its_command_imports_the_language_server() -> None:
    """The language server is a front-end: only `rulepass lsp` starts it, and only it reads its analysis."""
    assert sorted(GRAPH.predecessors("rulepass.lsp")) == ["rulepass.cli_lsp"]
    assert sorted(GRAPH.predecessors("rulepass.lsp_analysis")) == ["rulepass.lsp"]
    assert sorted(GRAPH.predecessors("rulepass.config")) == ["rulepass.cli", "rulepass.lsp_analysis"]
