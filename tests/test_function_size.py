"""No function of the package's code, benchmarks or scripts is longer than 80 lines (issue 35).

A function's length counts its lines from `def` to its last line, docstring and comments included (decorators
not). The functions longer than that today are listed in ALLOWED with their length: one may shrink, never grow,
and the list only shrinks: an entry whose function is gone or has come down to the limit fails until it is
removed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("src/rulepass", "dsl", "engine", "compiler", "benchmarks", "scripts")
LIMIT = 80

# "path::qualified name" -> its length when it was listed (the most it may have)
ALLOWED: dict[str, int] = {}


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, length) of every function in `tree`, nested ones named as Python does (`f.<locals>.g`)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            assert node.end_lineno is not None
            yield name, node.end_lineno - node.lineno + 1
            yield from _functions(node, name + ".<locals>.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:
            yield from _functions(node, prefix)


def function_lengths() -> dict[str, int]:
    """`path::qualified name` -> length, for every function of the Python files under FOLDERS."""
    lengths: dict[str, int] = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            for name, length in _functions(tree):
                lengths[f"{rel}::{name}"] = length
    return lengths


def test_no_function_is_longer_than_the_limit() -> None:
    long = {k: n for k, n in function_lengths().items() if n > LIMIT and k not in ALLOWED}
    listed = ", ".join(f"{k} ({n} lines)" for k, n in sorted(long.items()))
    assert not long, f"functions longer than {LIMIT} lines (split them into steps of their own): {listed}"


def test_allowed_functions_only_shrink() -> None:
    lengths = function_lengths()
    problems = []
    for key, allowed in sorted(ALLOWED.items()):
        n = lengths.get(key)
        if n is None:
            problems.append(f"{key} no longer exists: remove its entry from ALLOWED in {Path(__file__).name}")
        elif n <= LIMIT:
            problems.append(f"{key} is {n} lines now: remove its entry from ALLOWED in {Path(__file__).name}")
        elif n > allowed:
            problems.append(f"{key} grew to {n} lines (at most {allowed} allowed, {LIMIT} wanted): shrink it")
    assert not problems, "; ".join(problems)


def test_the_walk_sees_the_package() -> None:
    lengths = function_lengths()
    assert "compiler/facts.py::ge_catalogue" in lengths
    assert any(k.startswith("src/rulepass/") for k in lengths)
    assert any(k.startswith("scripts/") for k in lengths)
    tree = ast.parse("class A:\n    def f(self):\n        def g():\n            pass\n")
    assert dict(_functions(tree)) == {"A.f": 3, "A.f.<locals>.g": 2}
