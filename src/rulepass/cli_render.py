"""The `render` and `report` commands: pictures of a compiled graph or model, and the compile report page.

`cli.py` registers them (`add_commands`); the pictures themselves are made by `rulepass.compiler.render`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .compiler.render.view import CompileView

EXIT_OK = 0
FORMATS = ("dot", "svg", "png", "onnx")
_SUFFIXES = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".onnx": "onnx"}


def _view(args: argparse.Namespace, err: TextIO) -> CompileView:
    """The view of the command's GRAPH or MODEL (the bundled example when none is given)."""
    from .api import load_graph, load_rules
    from .base.diagnostics import printable
    from .compiler.model import load_model_or_graph
    from .compiler.render.view import view_of_graph, view_of_model
    from .examples import example_path

    path = args.graph
    if path is None:
        path = str(example_path())
        err.write(f"(no GRAPH given: using the bundled example {Path(path).name})\n")
    if path.lower().endswith(".onnx"):
        graph = load_graph(path, warn=lambda w: err.write(f"rulepass: warning: {printable(w)}\n"))
    else:
        loaded = load_model_or_graph(path)
        if isinstance(loaded, dict):
            return view_of_model(loaded, Path(path).stem)
        graph = loaded
    before = load_rules(args.before_rules) if args.before_rules else None
    return view_of_graph(
        graph, load_rules(args.rules or None), level=args.level, disabled=args.disable, before_rules=before
    )


def _check_focus(args: argparse.Namespace) -> None:
    from .base.diagnostics import error

    if args.depth is not None and args.focus is None:
        raise error("usage", "--depth needs --focus NODE (the node whose neighbourhood to show)")


def _write(path: str | None, data: str | bytes, out: TextIO, what: str) -> None:
    from .base.files import atomic_output

    if path is None:
        assert isinstance(data, str)
        out.write(data)
        return
    with atomic_output(path, what=what, binary=isinstance(data, bytes)) as f:
        f.write(data)


def _cmd_render(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .base.diagnostics import error
    from .base.files import check_writable

    _check_focus(args)
    fmt = args.format or (_SUFFIXES.get(Path(args.output).suffix.lower()) if args.output else None) or "dot"
    if args.memory and fmt != "svg":
        if args.format is not None:
            raise error("usage", f"--memory draws SVG, not {fmt}", hint="leave out --format, or give --format svg")
        fmt = "svg"
    if args.memory and args.focus is not None:
        raise error("usage", "--focus picks part of the graph picture, not of the memory picture")
    if fmt in ("png", "onnx") and args.output is None:
        raise error("usage", f"{fmt.upper()} output is binary: give the file to write with -o FILE.{fmt}")
    if args.output:
        check_writable(args.output, what="picture")  # before any work
    view = _view(args, err)
    data: str | bytes
    if args.memory:
        from .compiler.render.memory_svg import memory_svg

        panels = [("with these rules", view.plan)] + ([(view.compared_label, view.compared)] if view.compared else [])
        data = memory_svg(panels, f"memory of {view.graph.name}")
    elif fmt == "onnx":
        from .compiler.render.onnx_export import onnx_bytes

        data = onnx_bytes(view)
    else:
        from .compiler.render.dot import graph_dot
        from .compiler.render.graphviz import layout

        dot = graph_dot(view, focus=args.focus, depth=args.depth if args.depth is not None else 2)
        data = dot if fmt == "dot" else layout(dot, fmt)
        if fmt == "svg" and isinstance(data, bytes):
            data = data.decode()
    _write(args.output, data, out, "picture")
    if args.output:
        out.write(f"wrote {args.output}\n")
    return EXIT_OK


def _cmd_report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .base.files import check_writable
    from .cli_report import cmd_corpus_report, is_corpus
    from .compiler.render.graphviz import INSTALL_HINT
    from .compiler.render.report import graph_picture, report_html

    if is_corpus(args):
        return cmd_corpus_report(args, out, err)
    args.graph = args.graph[0] if args.graph else None
    _check_focus(args)
    check_writable(args.output, what="report")  # before any work
    view = _view(args, err)
    picture = graph_picture(view, focus=args.focus, depth=args.depth if args.depth is not None else 2)
    if picture.note is not None:
        err.write(f"rulepass: note: {picture.note}\n")
    elif picture.graphviz_missing:
        err.write(f"rulepass: note: Graphviz is not installed, so the report gives the graph as DOT: {INSTALL_HINT}\n")
    _write(args.output, report_html(view, picture.dot, picture.svg, graph_note=picture.note), out, "report")
    out.write(f"wrote {args.output}\n")
    return EXIT_OK


def _common(p: argparse.ArgumentParser, *, corpus: bool = False) -> None:
    if corpus:
        p.add_argument(
            "graph",
            metavar="GRAPH|CORPUS",
            nargs="*",
            help="graph file, ONNX model or model file (default: the example); or a corpus: folders, globs, "
            "several files",
        )
    else:
        p.add_argument(
            "graph", metavar="GRAPH", nargs="?", help="graph file, ONNX model or model file (default: the example)"
        )
    p.add_argument("--focus", metavar="NODE", help="draw only this node's neighbourhood (large graphs)")
    p.add_argument("--depth", type=int, metavar="K", help="with --focus: how many edges away to draw (default 2)")
    p.add_argument(
        "--before-rules",
        action="append",
        metavar="PATH",
        help="compare the memory with the plan under these rules (repeatable; default: without the no-task passes)",
    )
    p.add_argument(
        "--rules", action="append", metavar="PATH", help="rule file or folder (repeatable; default: bundled)"
    )
    p.add_argument(
        "--level", choices=["O0", "O1", "O2", "O3"], help="optimisation level (default: the settings', else O3)"
    )
    p.add_argument("--disable", action="append", default=[], metavar="PASS", help="disable a pass (repeatable)")


def add_commands(sub: argparse._SubParsersAction, count: Callable[[str], int]) -> None:  # type: ignore[type-arg]
    """Register `render` and `report` on the `rulepass` parser's subcommands (`count`: the argument type of a
    positive count)."""
    from .cli_report import add_corpus_options

    ren = sub.add_parser(
        "render",
        help="draw the graph (virtual ops, zero-copy offsets, streams, events, decisions) or its memory",
        description="Draw the compiled graph as DOT (always), SVG or PNG (with Graphviz) or ONNX for Netron "
        "(needs rulepass[onnx]); or, with --memory, the memory plan as a time x address SVG.",
    )
    ren.add_argument(
        "-o", "--output", metavar="OUT", help="file to write (its suffix picks the format); default stdout"
    )
    ren.add_argument("--memory", action="store_true", help="draw the memory plan (time x address, per arena) instead")
    ren.add_argument("--format", choices=FORMATS, help="dot, svg, png or onnx (default: from the -o suffix, else dot)")
    _common(ren)
    ren.set_defaults(handler=_cmd_render)

    rep = sub.add_parser(
        "report",
        help="write the compile report: one self-contained HTML page",
        description="Write one HTML page (no network, opens from disk): decisions with explanations, savings, "
        "zero-copy groups, the memory picture, tasks per stream, and the graph (SVG with Graphviz, else DOT). "
        "Given a corpus (folders, globs, several files, --manifest): one page with the corpus's summary, with "
        "--before-rules the rule edit's diff, and each graph's report in a section that opens.",
    )
    rep.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="the page to write")
    _common(rep, corpus=True)
    add_corpus_options(rep, count)
    rep.set_defaults(handler=_cmd_report)
