"""`rulepass schema [rule|graph|model|fixture] [-o FILE]`: the JSON Schemas of rulepass's files, for editors."""

from __future__ import annotations

import argparse
from importlib import resources
from typing import Any, TextIO

# the schemas by kind: (package, file name) as shipped in the package data
SCHEMAS = {
    "rule": ("rulepass.dsl", "rule.schema.json"),
    "graph": ("rulepass.compiler", "graph.schema.json"),
    "model": ("rulepass.compiler", "model.schema.json"),
    "fixture": ("rulepass.compiler", "fixture.schema.json"),
}


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register `rulepass schema`."""
    p = sub.add_parser(
        "schema",
        help="print or write the JSON Schema of rule, graph, model or fixture files (for editors)",
        description="Print the JSON Schema (2020-12) of a kind of file, or write it with -o: point an editor at "
        "the written file (see docs/editor.md). Each schema's $id is a stable URL naming it.",
    )
    p.add_argument("kind", nargs="?", choices=list(SCHEMAS), default="rule", help="which schema (default: rule)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the schema here instead of printing it")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the schema, or write it atomically to `--output`."""
    from .base.files import atomic_output, check_writable

    package, name = SCHEMAS[args.kind]
    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    if not args.output:
        out.write(text)
        return 0
    check_writable(args.output, what="schema file")
    with atomic_output(args.output, what="schema file") as f:
        f.write(text)
    if args.output not in ("-", "/dev/stdout"):
        out.write(f"wrote the {args.kind} schema to {args.output}\n")
    return 0
