"""`rulepass corpus diff|compile|optimize`: a rule set (or two) over a corpus of graph and ONNX files, cached,
on local worker processes or a Dask cluster; one report (text, JSON, markdown or HTML).

`add_corpus_parser` adds the command to the `rulepass` parser; `_cmd_corpus` runs it. The work is
`rulepass.compiler.corpus`'s; this module reads the arguments and writes the report.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TextIO

EXIT_OK, EXIT_INVALID = 0, 1


def add_corpus_parser(sub: Any, *, count: Callable[[str], int], seconds: Callable[[str], float]) -> None:
    """Add `corpus diff|compile|optimize|nearmiss` to the subparsers `sub` of the `rulepass` parser; `count` and
    `seconds` are the argument types of a positive count and of seconds (the command line's own)."""
    corpus = sub.add_parser("corpus", help="a rule edit's impact, or a batch run, over a corpus of graphs")
    csub = corpus.add_subparsers(dest="corpus_command", metavar="SUBCOMMAND", parser_class=type(corpus))
    csub.required = True
    diff = csub.add_parser("diff", help="every decision and figure a rule edit changes, per graph, ranked by impact")
    diff.add_argument("--base", action="append", metavar="PATH", help="the rules before (default: the bundled rules)")
    comp = csub.add_parser("compile", help="compile every graph; one summary")
    opt = csub.add_parser("optimize", help="run the rule passes over every graph; one summary")
    near = csub.add_parser("nearmiss", help="candidates that fail at most K checks, ranked by what firing would save")
    near.add_argument("--max-failed", type=count, default=1, metavar="K", help="at most K failing checks (default 1)")
    for p in (diff, comp, opt, near):
        _options(p, count, seconds)
    for p in (comp, opt, near):
        p.add_argument("--rules", action="append", metavar="PATH", help="rule file or folder (default: the bundled)")
    diff.add_argument("--rules", action="append", metavar="PATH", help="the rules after (default: the bundled rules)")


def _options(p: argparse.ArgumentParser, count: Callable[[str], int], seconds: Callable[[str], float]) -> None:
    p.add_argument("corpus", nargs="*", metavar="CORPUS", help="graph or ONNX files, folders, globs")
    p.add_argument("--manifest", action="append", default=[], metavar="FILE", help="a file listing graphs (repeatable)")
    p.add_argument(
        "--level", choices=["O0", "O1", "O2", "O3"], help="optimisation level (default: the settings', else O3)"
    )
    p.add_argument("--disable", action="append", default=[], metavar="PASS", help="disable a pass (repeatable)")
    p.add_argument("--formats", choices=["keep", "ascend"], default="keep", help="ONNX files: as `rulepass import`")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=N", help="ONNX files: a symbolic dim's size")
    p.add_argument("--input-shape", metavar='"NAME:D0,D1,...;..."', help="ONNX files: whole input shapes")
    p.add_argument("--weights", choices=["inline", "placeholder"], default="inline", help="ONNX files: weights")
    p.add_argument("-j", "--jobs", type=count, metavar="N", help="local worker processes (default: one per core)")
    p.add_argument("--cluster", metavar="ADDRESS", help="run on the Dask scheduler at ADDRESS (rulepass[cluster])")
    p.add_argument(
        "--connect-timeout", type=seconds, default=10.0, metavar="S", help="seconds to reach the cluster (10)"
    )
    p.add_argument("--cache", metavar="DIR", help="the cache folder (default: corpus/ in the user's cache folder)")
    p.add_argument("--no-cache", dest="corpus_no_cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--format", choices=["text", "json", "markdown", "html"], default="text")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report here (default: standard output)")
    p.set_defaults(handler=_cmd_corpus)


def progress_line(err: TextIO, quiet: bool, what: str) -> Callable[[int, int], None]:
    """A corpus run's progress, `what: DONE/TOTAL graphs`, redrawn on one line of `err` when it is a terminal
    (and not `quiet`)."""
    tty = err.isatty() and not quiet
    # the line is redrawn with a carriage return, which the command line's stream escapes (it shows user text):
    # this text is ours alone, so it goes to the stream below
    raw: TextIO = getattr(err, "_stream", err)

    def progress(done: int, total: int) -> None:
        if tty:
            raw.write(f"\r{what}: {done}/{total} graphs" + ("\n" if done == total else ""))
            raw.flush()

    return progress


def _cmd_corpus(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .base.diagnostics import error
    from .base.files import atomic_output, check_writable
    from .compiler.corpus.execute import default_workers, open_cache, run_corpus
    from .compiler.corpus.inputs import ImportOptions, RuleSource, expand
    from .compiler.corpus.jobs import NEAR_MISS
    from .compiler.corpus.render import render
    from .compiler.corpus.report import batch_report, diff_report, nearmiss_report
    from .compiler.onnx_fold import parse_dims, parse_input_shapes

    if args.output:
        check_writable(args.output, what="report")  # before any work
    if args.input_shape:
        parse_input_shapes(args.input_shape)  # a bad value is one usage error now, not one per ONNX file
    imports = ImportOptions(args.formats, tuple(sorted(parse_dims(args.dim).items())), args.input_shape, args.weights)
    entries = expand(args.corpus, args.manifest, imports)
    if not entries:
        raise error("usage", "no graphs: give graph or ONNX files, folders, globs or --manifest files")
    new = RuleSource.read(args.rules)
    sides = [("compile", RuleSource.read(args.base)), ("compile", new)] if args.corpus_command == "diff" else []
    kind = f"{NEAR_MISS}{args.max_failed}" if args.corpus_command == "nearmiss" else args.corpus_command
    store = None if args.no_cache or args.corpus_no_cache else open_cache(args.cache)
    quiet = bool(getattr(args, "quiet", 0))  # the global -q/--quiet
    progress = progress_line(err, quiet, "rulepass corpus")
    outcomes = run_corpus(
        entries,
        sides or [(kind, new)],
        level=args.level,
        disabled=args.disable,
        workers=args.jobs or default_workers(),
        cluster=args.cluster,
        store=store,
        progress=progress,
        connect_timeout=args.connect_timeout,
    )
    if sides:
        report = diff_report(outcomes, [n for n, _ in sides[0][1].files], [n for n, _ in new.files], args.level)
    elif args.corpus_command == "nearmiss":
        report = nearmiss_report(outcomes, args.max_failed, [n for n, _ in new.files], args.level)
    else:
        report = batch_report(outcomes, args.corpus_command, [n for n, _ in new.files], args.level)
    text = render(report, args.format)
    if args.output:
        with atomic_output(args.output, what="report") as f:
            f.write(text)
    else:
        out.write(text)
    if not quiet:
        products = sum(len(o.results) for o in outcomes)
        cached = sum(o.cached for o in outcomes)
        err.write(f"rulepass corpus: {len(outcomes)} graph(s), {cached} of {products} result(s) from the cache\n")
    return EXIT_INVALID if report["errors"] else EXIT_OK
