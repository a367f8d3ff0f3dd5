"""`rulepass nearmiss GRAPH...`: the candidates of the no-task rules that fail only a few checks, per graph,
ranked by the copy bytes and tasks the rule firing on them would save (`compiler.nearmiss.near_misses`)."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO


def add_parser(sub: Any) -> None:
    """Register the `nearmiss` command on the `rulepass` subparsers `sub`."""
    p = sub.add_parser(
        "nearmiss", help="candidates of the no-task rules that fail only a few checks, and what fixing them saves"
    )
    p.add_argument("graphs", nargs="+", metavar="GRAPH", help="graph files or ONNX models")
    p.add_argument(
        "--max-failed",
        type=_positive,
        default=1,
        metavar="K",
        help="list the candidates failing at most K checks (default 1)",
    )
    p.add_argument("--rules", action="append", metavar="PATH", help="rule file or folder (default: the bundled rules)")
    p.add_argument("--level", choices=["O0", "O1", "O2", "O3"], default="O3", help="optimisation level (O3)")
    p.add_argument("--disable", action="append", default=[], metavar="PASS", help="disable a pass (repeatable)")
    p.add_argument(
        "--input-shape",
        metavar="SHAPES",
        help='ONNX models: input shapes "name:d0,d1,...;name2:..." (fixes their symbolic dims)',
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(handler=run)


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _graph(path: str, input_shape: str | None, err: TextIO) -> Any:
    """A graph file, or an ONNX model imported (with `input_shape` fixing its inputs; warnings to `err`)."""
    from .base.diagnostics import printable

    if not path.lower().endswith(".onnx"):
        from .api import load_graph

        return load_graph(path)
    from .compiler.onnx_fold import parse_input_shapes
    from .compiler.onnx_import import import_onnx

    result = import_onnx(path, input_shapes=parse_input_shapes(input_shape) if input_shape else None)
    for w in result.warnings:
        err.write(f"rulepass: warning: {printable(w)}\n")
    return result.graph


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """List the near misses of every graph given, in the order given."""
    from .api import load_rules
    from .compiler.nearmiss import near_misses

    rules = load_rules(args.rules or None)
    found = []
    for path in args.graphs:
        graph = _graph(path, args.input_shape, err)
        misses = near_misses(graph, rules, max_failed=args.max_failed, level=args.level, disabled=args.disable)
        found.append((path, misses))
    if args.format == "json":
        docs = [{"file": path, "near_misses": [m.to_json() for m in misses]} for path, misses in found]
        out.write(json.dumps(docs, indent=1) + "\n")
    else:
        for path, misses in found:
            _write_text(path, misses, args.max_failed, out)
    return 0


def _write_text(path: str, misses: list[Any], max_failed: int, out: TextIO) -> None:
    """One graph's near misses as text: a line per candidate, a line per failing check."""
    from .base.diagnostics import printable as p

    checks = "1 check" if max_failed == 1 else f"at most {max_failed} checks"
    out.write(f"{p(path)}: {len(misses)} candidate(s) failing {checks}\n")
    for m in misses:
        d = m.decision
        failing = f"{len(m.failed)} check" + ("s" if len(m.failed) > 1 else "")
        out.write(
            f"  {d.rule} on {p(d.node)} ({p(d.op_type)}) in graph '{p(d.graph)}': would save {m.copy_bytes:,} copy "
            f"bytes and {m.tasks} task(s); fails {failing}\n"
        )
        for f in m.failed:
            where = f" at {f.check_span}" if f.check_span else ""
            elements = f" [{', '.join(f.elements)}]" if f.elements else ""
            why = f.error or (f.reason.summary() if f.reason else "")
            out.write(f"    {'/'.join(f.check_path)}{p(where)}{p(elements)}: {p(why)}\n")
