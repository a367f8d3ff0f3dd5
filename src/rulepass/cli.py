"""The `rulepass` command line: a thin face over the library's stages.

Exit codes: 0 success, 1 invalid input or a failed check, 2 usage error, 3 internal error. Diagnostics go
to stderr with file:line:col and a caret excerpt; `--format json` gives tools the same facts as JSON on stdout.
No input makes it print a traceback (set RULEPASS_DEBUG=1 to see one for an internal error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from . import __version__
from .dsl.diagnostics import Diagnostic, RulepassError

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line and exit code 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _print_diagnostics(diags: Sequence[Diagnostic], err: TextIO) -> None:
    for d in diags:
        err.write(d.render() + "\n")


def _cmd_graph_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .compiler.graph_file import load_graph

    status = EXIT_OK
    reports: list[dict[str, Any]] = []
    for path in args.files:
        try:
            g = load_graph(path)
        except RulepassError as exc:
            status = EXIT_INVALID
            if args.format == "json":
                reports.append({"file": path, "valid": False, "diagnostics": [d.to_json() for d in exc.diagnostics]})
            else:
                _print_diagnostics(exc.diagnostics, err)
                err.write(f"{path}: invalid ({len(exc.diagnostics)} error(s))\n")
            continue
        graphs = [g, *g.all_subgraphs()]
        nodes = [n for sub in graphs for n in sub.nodes_in_insertion_order()]
        data_edges = sum(sub.edge_count()[0] for sub in graphs)
        control_edges = sum(sub.edge_count()[1] for sub in graphs)
        types = Counter(n.type for n in nodes)
        summary = {
            "file": path,
            "valid": True,
            "graph": g.name,
            "nodes": len(nodes),
            "data_edges": data_edges,
            "control_edges": control_edges,
            "subgraphs": len(graphs) - 1,
            "op_types": dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
        }
        if args.format == "json":
            reports.append(summary)
        else:
            hist = ", ".join(f"{t} x{c}" for t, c in summary["op_types"].items())
            out.write(
                f"{path}: ok: graph '{g.name}', {len(nodes)} nodes, {data_edges} data edges, "
                f"{control_edges} control edges, {len(graphs) - 1} subgraphs\n    op types: {hist}\n"
            )
    if args.format == "json":
        out.write(json.dumps(reports, indent=1) + "\n")
    return status


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `rulepass` command."""
    parser = _Parser(
        prog="rulepass",
        description="Rule-based GE graph optimizer: validate rules, optimize "
        "graphs, explain decisions, plan memory, generate tasks.",
    )
    parser.add_argument("--version", action="version", version=f"rulepass {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    graph = sub.add_parser("graph", help="graph file tools")
    gsub = graph.add_subparsers(dest="graph_command", metavar="SUBCOMMAND", parser_class=_Parser)
    gsub.required = True
    check = gsub.add_parser("check", help="validate graph files and print a summary")
    check.add_argument("files", nargs="+", metavar="FILE")
    check.add_argument("--format", choices=["text", "json"], default="text")
    check.set_defaults(handler=_cmd_graph_check)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command line; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    handler: Handler = args.handler
    try:
        return handler(args, out, err)
    except RulepassError as exc:
        _print_diagnostics(exc.diagnostics, err)
        return EXIT_INVALID
    except KeyboardInterrupt:
        err.write("rulepass: interrupted\n")
        return 130
    except Exception as exc:  # the last guard: a bug must not show users a traceback
        if os.environ.get("RULEPASS_DEBUG"):
            raise
        err.write(
            f"rulepass: internal error: {type(exc).__name__}: {exc}\n"
            "    (this is a bug in rulepass; rerun with RULEPASS_DEBUG=1 for a traceback)\n"
        )
        return EXIT_INTERNAL
