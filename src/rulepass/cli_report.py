"""`rulepass report CORPUS... -o report.html`: the report of a corpus of graphs and models, one page.

`cli_render` registers `report` and hands a corpus here (several paths, a folder, a glob, or `--manifest`); the
page is `rulepass.compiler.render.corpus_report`'s; this module reads the arguments and writes the page.
"""

from __future__ import annotations

import argparse
import glob
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

EXIT_OK, EXIT_INVALID = 0, 1


def add_corpus_options(p: argparse.ArgumentParser, count: Callable[[str], int]) -> None:
    """The options `report` takes for a corpus: manifests, workers, the cache and the pictures' node limit
    (`count`: the command line's argument type of a positive count)."""
    from .compiler.render.corpus_report import DEFAULT_MAX_NODES

    p.add_argument("--manifest", action="append", default=[], metavar="FILE", help="corpus: a file listing graphs")
    p.add_argument("-j", "--jobs", type=count, metavar="N", help="corpus: worker processes (default: one per core)")
    p.add_argument("--cache", metavar="DIR", help="corpus: the cache folder (default: the corpus commands')")
    p.add_argument("--no-cache", dest="corpus_no_cache", action="store_true", help="corpus: no cache")
    p.add_argument(
        "--max-nodes",
        type=count,
        default=DEFAULT_MAX_NODES,
        metavar="N",
        help=f"corpus: leave out the pictures of graphs of more than N nodes (default {DEFAULT_MAX_NODES})",
    )


def is_corpus(args: argparse.Namespace) -> bool:
    """Whether `report` was given a corpus: several paths, a folder, a glob, or a manifest."""
    paths: list[str] = args.graph or []
    if args.manifest or len(paths) > 1:
        return True
    return bool(paths) and (Path(paths[0]).is_dir() or glob.has_magic(paths[0]))


def cmd_corpus_report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Write the corpus's report page (atomically: nothing on an error); exit 1 when a graph failed."""
    from .base.diagnostics import error
    from .base.files import atomic_output, check_writable
    from .cli_corpus import progress_line
    from .compiler.corpus.execute import default_workers, open_cache
    from .compiler.corpus.inputs import RuleSource, expand
    from .compiler.render.corpus_report import corpus_report

    if args.focus is not None or args.depth is not None:
        raise error("usage", "--focus and --depth pick part of one graph: report that graph alone to use them")
    check_writable(args.output, what="report")  # before any work
    entries = expand(args.graph or [], args.manifest)
    if not entries:
        raise error("usage", "no graphs: give graph, ONNX or model files, folders, globs or --manifest files")
    rules = RuleSource.read(args.rules)
    before = RuleSource.read(args.before_rules) if args.before_rules else None
    store = None if args.no_cache or args.corpus_no_cache else open_cache(args.cache)
    page = corpus_report(
        entries,
        rules,
        before,
        level=args.level,
        disabled=args.disable,
        workers=args.jobs or default_workers(),
        store=store,
        progress=progress_line(err, bool(args.quiet), "rulepass report"),
        max_nodes=args.max_nodes,
    )
    with atomic_output(args.output, what="report") as f:
        f.write(page.html)
    out.write(f"wrote {args.output}\n")
    if not args.quiet:
        err.write(
            f"rulepass report: {page.graphs} graph(s), {page.failed} could not be read or reported; "
            f"{page.cached} of {page.results} result(s) from the cache\n"
        )
    return EXIT_INVALID if page.failed else EXIT_OK
