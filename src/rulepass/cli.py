"""The `rulepass` command line: a thin face over the library's stages.

Exit codes: 0 success, 1 invalid input or a failed check, 2 usage error, 3 internal error. Diagnostics go
to stderr with file:line:col and a caret excerpt; `--format json` gives tools the same facts as JSON on stdout.
No input makes it print a traceback (set RULEPASS_DEBUG=1 to see one for an internal error).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from . import __version__

if TYPE_CHECKING:  # the foundation is imported by the commands that use it: `--version` needs none of it
    from .base.diagnostics import Diagnostic
    from .engine.decisions import Reason

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line and exit code 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _p(text: str, *, keep_newlines: bool = False) -> str:
    """`rulepass.base.diagnostics.printable`: user text with control characters escaped, so a name can neither
    forge a line nor send escape sequences (imported when a command prints one)."""
    from .base.diagnostics import printable

    return printable(text, keep_newlines=keep_newlines)


def check_writable(path: str, *, what: str) -> None:
    """`rulepass.base.files.check_writable`, imported when a command writes a file."""
    from .base.files import check_writable as check

    check(path, what=what)


def _verbosity(err: TextIO) -> int:
    """The command's verbosity (-v adds 1, -q takes 1 away), which `main` gives its stderr stream."""
    return int(getattr(err, "verbosity", 0))


def _print_diagnostics(diags: Sequence[Diagnostic], err: TextIO) -> None:
    for d in diags:
        if d.severity == "error" or _verbosity(err) >= 0:  # -q: errors only
            err.write(d.render() + "\n")


def _cmd_graph_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .base.diagnostics import RulepassError

    status = EXIT_OK
    reports: list[dict[str, Any]] = []
    for path in args.files:
        try:
            g = _load_graph_arg(path, err)
        except RulepassError as exc:
            status = EXIT_INVALID
            if args.format == "json":
                reports.append({"file": path, "valid": False, "diagnostics": [d.to_json() for d in exc.diagnostics]})
            else:
                _print_diagnostics(exc.diagnostics, err)
                err.write(f"{_p(path)}: invalid ({len(exc.diagnostics)} error(s))\n")
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
            hist = ", ".join(f"{_p(t)} x{c}" for t, c in summary["op_types"].items())
            out.write(
                f"{_p(path)}: ok: graph '{_p(g.name)}', {len(nodes)} nodes, {data_edges} data edges, "
                f"{control_edges} control edges, {len(graphs) - 1} subgraphs\n    op types: {hist}\n"
            )
    if args.format == "json":
        out.write(json.dumps(reports, indent=1) + "\n")
    return status


def _rule_paths(paths: Sequence[str]) -> list[str]:
    from .rules import bundled_rules_dir

    return list(paths) if paths else [str(bundled_rules_dir())]


def _load_graph_arg(path: str, err: TextIO) -> Any:
    """A graph file, or an ONNX model imported on the fly (its warnings go to stderr)."""
    from .api import load_graph

    return load_graph(path, warn=lambda w: _verbosity(err) < 0 or err.write(f"rulepass: warning: {_p(w)}\n"))


def _cmd_import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.output:
        check_writable(args.output, what="graph file")  # before any work
    from .compiler.graph_file import save_graph
    from .compiler.onnx_fold import parse_dims, parse_input_shapes
    from .compiler.onnx_import import import_onnx

    dims = parse_dims(args.dim)
    shapes = parse_input_shapes(args.input_shape) if args.input_shape else None
    result = import_onnx(args.model, format_mode=args.formats, dims=dims, input_shapes=shapes, weights=args.weights)
    for w in result.warnings:
        err.write(f"rulepass: warning: {w}\n")
    save_graph(result.graph, args.output)
    g = result.graph
    n = len(g.all_nodes())
    out.write(
        f"imported {_p(args.model)}: graph '{_p(g.name)}', {n} nodes, {len(g.all_subgraphs())} subgraph(s), "
        f"formats {args.formats}; wrote {_p(args.output)}\n"
    )
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .compiler.passes import validate_ge_rules

    rs = validate_ge_rules(_rule_paths(args.paths))
    if args.format == "json":
        doc = {
            "valid": not rs.errors,
            "files": rs.files,
            "rules": rs.rules,
            "errors": len(rs.errors),
            "warnings": len(rs.warnings),
            "diagnostics": [d.to_json() for d in rs.diagnostics],
        }
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        _print_diagnostics(rs.diagnostics, err)
        if args.verbose:  # -v: what was read and what compiled
            out.write("".join(f"file {_p(f)}\n" for f in rs.files) + "".join(f"rule {r}\n" for r in rs.rules))
        state = "valid" if not rs.errors else "invalid"
        out.write(
            f"{len(rs.files)} rule file(s), {len(rs.rules)} rule(s) compiled: {state} "
            f"({len(rs.errors)} error(s), {len(rs.warnings)} warning(s))\n"
        )
    return EXIT_INVALID if rs.errors else EXIT_OK


def _cmd_catalogue(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .compiler.facts import ge_catalogue

    data = ge_catalogue().to_json()
    if args.format == "json":
        out.write(json.dumps(data, indent=1) + "\n")
        return EXIT_OK
    out.write("Root bindings (bound for every candidate):\n")
    for name, r in data["roots"].items():
        out.write(f"  {name}: {r['type']}  -- {r['doc']}\n")
    out.write("\nEntities:\n")
    for name, e in data["entities"].items():
        parents = f" (is a {', '.join(e['parents'])})" if e["parents"] else ""
        out.write(f"  {name}{parents}: {e['doc']}\n")
        for f, spec in e["fields"].items():
            out.write(f"    .{f}: {spec['type']}  -- {spec['doc']}\n")
    out.write("\nHelpers (also callable as x.f(...) with x as the first argument):\n")
    for _name, h in data["helpers"].items():
        out.write(f"  {h['signature']}  -- {h['doc']}\n")
    return EXIT_OK


def _decision_summary(d: Any, undo: Any) -> str:
    """A decision's final state in one line (`pipeline.verdict`)."""
    from .compiler.pipeline import verdict

    return verdict(d, undo)


def _decision_row(d: Any, undo: Any = None) -> str:
    return f"{d.rule:<22} {_p(d.graph):<18} {_p(d.node):<22} {_p(d.op_type):<12} {_p(_decision_summary(d, undo))}"


def _decision_json(d: Any, undo: Any) -> dict[str, Any]:
    """A decision as JSON, with `undone` (the pass that undid it and why, or null)."""
    doc: dict[str, Any] = d.to_json()
    doc["undone"] = undo.to_json() if undo is not None else None
    return doc


def _undone_note(name: str, decisions: Sequence[Any], undone: dict[int, Any]) -> str:
    """', N undone later by PASS' for one pass's decisions ('' when none was undone)."""
    by = sorted({u.by for i, u in undone.items() if decisions[i].rule == name})
    count = sum(1 for i in undone if decisions[i].rule == name)
    return f", {count} undone later by {', '.join(by)}" if count else ""


def _default_graph(err: TextIO) -> str:
    from .examples import example_path

    path = example_path()
    if _verbosity(err) >= 0:
        err.write(f"(no GRAPH given: using the bundled example {path.name})\n")
    return str(path)


def _cmd_optimize(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.output:
        check_writable(args.output, what="graph file")  # before any work
    from .api import load_rules, optimize
    from .compiler.graph_file import save_graph

    graph = _load_graph_arg(args.graph or _default_graph(err), err)
    rules = load_rules(args.rules or None)
    result = optimize(graph, rules, level=args.level, disabled=args.disable, dry_run=args.dry_run)
    undone = result.undone()
    if args.output:
        save_graph(graph, args.output)
    if args.format == "json":
        doc = {
            "graph": graph.name,
            "level": args.level,
            "dry_run": args.dry_run,
            "passes": [
                {
                    "pass": r.name,
                    "kind": r.kind,
                    "ran": r.ran,
                    "skipped_reason": r.skipped_reason or None,
                    "stats": r.stats.to_json(timings=args.timings) if r.stats else None,
                }
                for r in result.reports
            ],
            "decisions": [_decision_json(d, undone.get(i)) for i, d in enumerate(result.decisions)],
        }
        out.write(json.dumps(doc, indent=1) + "\n")
        return EXIT_OK
    quiet = {r.name for r in rules.rules if "quiet" in r.rule.tags}
    shown = [(i, d) for i, d in enumerate(result.decisions) if d.rule not in quiet or d.changes]
    if shown:
        out.write(f"{'pass':<22} {'graph':<18} {'node':<22} {'type':<12} decision\n")
        for i, d in shown:
            out.write(_decision_row(d, undone.get(i)) + "\n")
    for r in result.reports:
        if r.kind == "placeholder":
            continue
        if not r.ran:
            out.write(f"{r.name}: skipped ({r.skipped_reason})\n")
        elif r.stats is not None:
            s = r.stats
            misses = ", ".join(f"{k} {v}" for k, v in sorted(s.misses.items(), key=lambda kv: (-kv[1], kv[0])))
            t = f", {s.seconds * 1000:.1f} ms" if args.timings else ""
            out.write(
                f"{r.name}: {s.candidates} candidate(s), {s.fired} fired, {s.candidates - s.fired} missed"
                + (f" ({misses})" if misses else "")
                + _undone_note(r.name, result.decisions, undone)
                + t
                + "\n"
            )
    if args.output:
        out.write(f"wrote {_p(args.output)}\n")
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .api import explain, load_rules, undone_decisions

    graph = _load_graph_arg(args.graph, err)
    rules = load_rules(args.rules or None)
    decisions = explain(graph, args.node, rules, rule=args.rule, level=args.level, disabled=args.disable)
    if args.rule is None:  # housekeeping rules (tagged quiet, e.g. engine placement) only when asked for by name
        quiet = {r.name for r in rules.rules if "quiet" in r.rule.tags}
        decisions = [d for d in decisions if d.rule not in quiet or d.changes]  # a graph edit always shows
    undone = undone_decisions(decisions)
    if args.format == "json":
        docs = []
        for i, d in enumerate(decisions):
            doc = _decision_json(d, undone.get(i))
            doc["trace"] = [
                {
                    "check": "/".join(t.path),
                    "passed": t.passed,
                    "elements": list(t.elements),
                    "span": t.span.to_json() if t.span else None,
                    "note": t.note or None,
                }
                for t in d.trace
            ]
            docs.append(doc)
        out.write(json.dumps(docs, indent=1) + "\n")
        return EXIT_OK
    if not decisions:
        out.write(
            f"node '{_p(args.node)}' is not a candidate of any rule that ran"
            + (f" (rule {_p(args.rule)})" if args.rule else "")
            + "\n"
        )
        return EXIT_OK
    for i, d in enumerate(decisions):
        verdict = "FIRED" if d.fired else f"MISSED at {'/'.join(d.check_path) or d.check}"
        if d.check_kind == "undo":
            verdict = f"UNDID the earlier zero-copy decision: {d.reason.message if d.reason else ''}"
        elif i in undone:
            verdict = f"FIRED, then UNDONE by {undone[i].by}: {undone[i].reason}"
        out.write(f"{d.rule} on {_p(d.node)} ({_p(d.op_type)}) in graph '{_p(d.graph)}': {_p(verdict)}\n")
        for change in d.changes:  # what the rule's structural actions did
            out.write(f"  changed: {_p(change)}\n")
        for t in d.trace:
            mark = "pass" if t.passed else "FAIL"
            at = f"  [{_p('; '.join(t.elements))}]" if t.elements else ""
            note = f"  ({_p(t.note)})" if t.note else ""
            out.write(f"  {mark}  {'/'.join(t.path)}{at}{note}\n")
        if not d.fired and d.check_kind != "undo":
            if d.check_kind == "skip_graph":
                out.write(f"  FAIL  graph exclusion {d.check}\n")
            if d.reason is not None:
                _write_reason(out, d.reason, 2)
            if d.error and d.reason is None:
                out.write(f"    {_p(d.error)}\n")
            if d.check_span is not None:
                out.write(f"  decided by check '{d.check}' defined at {d.check_span}\n")
    return EXIT_OK


def _write_reason(out: TextIO, r: Reason, depth: int) -> None:
    """A reason as `explain` prints it (`Reason.lines`)."""
    for line in r.lines(depth):
        out.write(_p(line) + "\n")


def _cmd_test(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .compiler.fixtures import run_fixtures

    results, diags = run_fixtures(_rule_paths(args.paths))
    failed = [r for r in results if not r.ok]
    if args.format != "text":
        from .cli_junit import fixtures_json, fixtures_junit

        out.write((fixtures_json if args.format == "json" else fixtures_junit)(results, diags))
        return EXIT_INVALID if failed or diags or not results else EXIT_OK
    _print_diagnostics(diags, err)
    for r in results:
        if not r.ok or args.verbose:
            out.write(f"{'PASS' if r.ok else 'FAIL'} {r.id}" + ("" if r.ok else f"\n     {r.message}") + "\n")
    out.write(f"{len(results) - len(failed)} passed, {len(failed)} failed\n")
    return EXIT_INVALID if failed or diags or not results else EXIT_OK


def _soundness(args: argparse.Namespace, err: TextIO) -> bool:
    """Whether to prove zero-copy ops sound; when not, say loudly what is skipped (the API's own warning of it
    is silenced by `_no_soundness_warning` around the call)."""
    if not getattr(args, "no_soundness_check", False):
        return True
    from .compiler.memory.soundness import SKIP_WARNING

    err.write(f"rulepass: WARNING: {SKIP_WARNING}\n")
    return False


@contextlib.contextmanager
def _no_soundness_warning() -> Iterator[None]:
    """The API's warning that the soundness proof is off, silenced: the command said it on stderr already."""
    from .compiler.memory.soundness import SoundnessWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SoundnessWarning)
        yield


@contextlib.contextmanager
def _task_cache_warnings(err: TextIO) -> Iterator[None]:
    """The task cache's warnings (a cache folder it cannot use), each said once on stderr."""
    from .compiler.task_cache import TaskCacheWarning

    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always", TaskCacheWarning)
            try:
                yield
            finally:
                caught = list(recorded)
    finally:
        for w in caught:  # the others as they would have been shown
            if issubclass(w.category, TaskCacheWarning):
                err.write(f"rulepass: warning: {w.message}\n")
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _fmt_bytes(n: int) -> str:
    from .compiler.render.svg import human_bytes

    return human_bytes(n)


def _cmd_memory(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .api import load_rules, plan_memory

    graph = _load_graph_arg(args.graph or _default_graph(err), err)
    with _no_soundness_warning(), _planner_deadline(args):
        result = plan_memory(
            graph,
            load_rules(args.rules or None),
            level=args.level,
            disabled=args.disable,
            verify=args.verify,
            soundness=_soundness(args, err),
            memory_budget_s=args.budget,
        )
    saved = result.report()
    if args.format == "json":
        doc = {
            "graph": graph.name,
            "plan": result.plan.to_json(),
            "without_no_task_passes": {"arenas": result.baseline.to_json()["arenas"] if result.baseline else []},
            "saved": {
                "bytes": saved["bytes_saved"],
                "copies": len(result.no_task_nodes),
                "copy_bytes": saved["copy_bytes_saved"],
                "no_task_nodes": result.no_task_nodes,
            },
            "verified": args.verify,
            "violations": [str(v) for v in result.violations],
        }
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        out.write(f"memory plan for graph '{_p(graph.name)}'\n")
        out.write(
            f"  {'region':<12} {'type':>5} {'arena':>28} {'lower bound':>14} {'ratio':>7} {'blocks':>7} "
            f"{'reused':>14}  planner\n"
        )
        for a in result.plan.arenas:
            out.write(
                f"  {a.region:<12} {a.mem_type:>5} {_fmt_bytes(a.size):>28} {a.lower_bound:>14} "
                f"{a.ratio:>7.4f} {a.units:>7} {a.reused_bytes:>14}  {a.strategy}\n"
            )
        out.write(_savings_text(saved, "  "))
        sound = (
            "NOT checked" if args.no_soundness_check else f"{len(result.no_task_nodes)} zero-copy op(s) proved sound"
        )
        out.write(f"  soundness: {sound}\n")
        if args.verify:
            out.write(f"  verifier: {'plan is safe' if not result.violations else 'UNSAFE'}\n")
            for v in result.violations:
                err.write(f"rulepass: memory plan violation: {v}\n")
    return EXIT_INVALID if result.violations else EXIT_OK


def _savings_text(mem: dict[str, Any], indent: str) -> str:
    """The no-task savings of a memory report, as lines; the arena without them only when it was planned."""
    nodes = mem["no_task_nodes"]
    text = (
        f"{indent}no-task ops: {len(nodes)} ({_p(', '.join(nodes)) or 'none'}): {len(nodes)} kernel task(s) and "
        f"{_fmt_bytes(mem['copy_bytes_saved'])} of copies saved\n"
        f"{indent}feature-map memory: {_fmt_bytes(mem['feature_map'])}"
    )
    if mem["feature_map_without_no_task"] is None:
        return text + " (--baseline plans it without the no-task passes too)\n"
    return (
        text + f" with them, {_fmt_bytes(mem['feature_map_without_no_task'])} without "
        f"({_fmt_bytes(mem['bytes_saved'])} saved)\n"
    )


def _cmd_memplan(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .compiler.memory.planner import check_placement, greedy_best_fit, plan, read_csv

    try:
        buffers = read_csv(args.file)
    except (ValueError, OSError) as exc:
        err.write(f"rulepass: {exc}\n")
        return EXIT_INVALID
    with _planner_deadline(args):
        placement = plan(buffers, budget_s=args.budget)
    base = greedy_best_fit(buffers) if args.baseline else None
    problems = check_placement(buffers, placement.offsets)
    if args.format == "json":
        doc: dict[str, Any] = {
            "file": args.file,
            "buffers": len(buffers),
            "arena": placement.arena,
            "lower_bound": placement.lower_bound,
            "ratio": round(placement.ratio, 6),
            "strategy": placement.strategy,
            "work": placement.work,
            "budget": placement.budget,
            "valid": not problems,
            "offsets": placement.offsets if args.offsets else None,
        }
        if base is not None:
            doc["baseline"] = {"arena": base.arena, "ratio": round(base.ratio, 6)}
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        out.write(
            f"{args.file}: {len(buffers)} buffers, arena {placement.arena}, lower bound "
            f"{placement.lower_bound}, ratio {placement.ratio:.4f} ({placement.strategy}; work "
            f"{placement.work:,} of {placement.budget:,} units)\n"
        )
        if base is not None:
            out.write(f"  greedy best-fit baseline: arena {base.arena}, ratio {base.ratio:.4f}\n")
    for p in problems:
        err.write(f"rulepass: invalid placement: {p}\n")
    return EXIT_INTERNAL if problems else EXIT_OK


def _cmd_compile(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.output:
        check_writable(args.output, what="model file")  # before any work
    from .api import compile_graph, load_rules

    graph = _load_graph_arg(args.graph or _default_graph(err), err)
    show_progress = args.verbose > 0 or (not args.quiet and (err.isatty() or len(graph) >= 5000))

    def progress(stage: str) -> None:
        if show_progress:
            err.write(f"rulepass: {stage}...\n")

    options = {"ge.bufferOptimize": args.buffer_optimize} if args.buffer_optimize else {}
    streamed = bool(args.output) and args.output != "-" and not args.check  # (--check writes no model on failure)
    reuse = _task_reuse(args, args.output if streamed else None)
    with _no_soundness_warning(), _planner_deadline(args), _task_cache_warnings(err):
        result = compile_graph(
            graph,
            load_rules(args.rules or None),
            level=args.level,
            disabled=args.disable,
            threads=args.threads,
            single_stream=args.single_stream,
            options=options,
            progress=progress,
            baseline=args.baseline,
            soundness=_soundness(args, err),
            memory_budget_s=args.budget,
            reuse=reuse,
        )
    check: Any = None
    if args.check:
        from .compiler.runtime.differential import check_model
        from .compiler.runtime.executor import model_rank_size

        check = check_model(result.model, ranks=model_rank_size(result.model))
        if check.difference is not None:  # no model is written
            return _check_status(check, err)
    if args.output and not streamed:
        result.write_model(args.output)
    report = result.report()
    if args.format == "json":
        if not args.timings:
            del report["seconds"]
        report["model"] = args.output
        if check is not None:
            report["check"] = _check_json(check)
        out.write(json.dumps(report, indent=1) + "\n")
        return EXIT_OK
    out.write(_compile_text(report))
    if args.timings:
        out.write("time: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in report["seconds"].items()) + "\n")
    if check is not None:
        out.write(_check_line(check) + "\n")
    if args.output:
        out.write(f"wrote {_p(args.output)}\n")
    return EXIT_OK


def _task_reuse(args: argparse.Namespace, model_path: str | None) -> Any:
    """How `compile` reuses a previous compile's tasks and streams them into the model file (None: neither)."""
    from pathlib import Path

    from .base.files import check_readable
    from .compiler.task_cache import TaskReuse

    if args.incremental_from is None and args.task_cache is None and model_path is None:
        return None
    if args.incremental_from is not None:
        check_readable(args.incremental_from, what="previous model")
    return TaskReuse(args.incremental_from, args.task_cache, None if model_path is None else Path(model_path))


def _compile_text(report: dict[str, Any]) -> str:
    """A compile report for reading: passes (and what was undone later), memory and savings, arenas, tasks."""
    lines = [f"compiled graph '{_p(report['graph'])}' ({report['nodes']} nodes)", "passes:"]
    for r in report["passes"]:
        s = r["stats"]
        if not r["ran"]:
            lines.append(f"  {r['pass']}: skipped ({r['skipped_reason']})")
        elif s is not None:
            misses = ", ".join(f"{k} {v}" for k, v in sorted(s["misses"].items(), key=lambda kv: (-kv[1], kv[0])))
            undone = [u for u in report["undone"] if u["pass"] == r["pass"]]
            later = f", {len(undone)} undone later by {', '.join(sorted({u['by'] for u in undone}))}" if undone else ""
            missed = f", missed: {misses}" if misses and not r["quiet"] else ""
            lines.append(f"  {r['pass']}: {s['candidates']} candidate(s), {s['fired']} fired{later}{missed}")
    lines += [
        f"  undone: {u['pass']} on {_p(u['node'])} ({_p(u['op_type'])}), by {u['by']}: {_p(u['reason'])}"
        for u in report["undone"]
    ]
    mem = report["memory"]
    sound = "NOT checked" if not report["soundness"] else f"{len(mem['no_task_nodes'])} zero-copy op(s) proved sound"
    lines.append(f"memory: plan verified safe; soundness: {sound}")
    text = "\n".join(lines) + "\n" + _savings_text(mem, "  ")
    for a in mem["arenas"]:
        ratio = a["size"] / a["lower_bound"] if a["lower_bound"] else 1.0
        text += (
            f"  {a['region']:<12} type {a['mem_type']:<3} {_fmt_bytes(a['size']):>28}  lower bound {a['lower_bound']}"
            f"  ratio {ratio:.4f}\n"
        )
    t = report["tasks"]
    by_type = ", ".join(f"{k} {v}" for k, v in t["by_type"].items())
    by_stream = ", ".join(f"stream {k}: {v}" for k, v in t["by_stream"].items())
    streams = f"{report['streams']} stream(s), {report['events']} event(s)"
    reused = f"; nodes' tasks reused {t['reused']}, regenerated {t['regenerated']}" if t["incremental"] else ""
    return text + f"tasks: {t['total']} ({by_type}); {by_stream}; {streams}{reused}\n"


def _run_model_doc(args: argparse.Namespace, err: TextIO) -> dict[str, Any]:
    """The model to run: a model file as it is, or a graph file (or ONNX model) compiled first."""
    from .api import compile_graph, load_rules
    from .compiler.model import load_model_or_graph

    path = args.model or _default_graph(err)
    if path.lower().endswith(".onnx"):
        graph = _load_graph_arg(path, err)
    else:
        loaded = load_model_or_graph(path)
        if isinstance(loaded, dict):
            return loaded
        graph = loaded
    rules = load_rules(args.rules or None)
    with _no_soundness_warning():
        return compile_graph(
            graph, rules, level=args.level, disabled=args.disable, soundness=_soundness(args, err)
        ).model


def _npz_members(path: str, budget: int) -> list[tuple[str, int]]:
    """(name, bytes) of every array of an .npz file, from the .npy headers alone, within `budget` bytes in all:
    nothing is decompressed and no pickle is ever loaded."""
    import warnings
    import zipfile

    import numpy as np
    from numpy.lib import format as npy

    from .base.diagnostics import error
    from .base.files import check_readable
    from .base.limits import check_memory

    check_readable(path, what="inputs file")
    members: list[tuple[str, int]] = []
    try:
        with zipfile.ZipFile(path) as zf, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's note on headers written by Python 2
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    raise ValueError(f"member '{info.filename}' is not a .npy array")
                with zf.open(info) as f:
                    version = npy.read_magic(f)
                    if version not in ((1, 0), (2, 0)):
                        raise ValueError(f"array '{info.filename[:-4]}' is in .npy format {version}, not 1.0 or 2.0")
                    read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                    try:
                        shape, _fortran, dtype = read(f, max_header_size=10000)
                    except Exception as exc:  # numpy parses the header's Python literal: any error it raises
                        raise ValueError(f"array '{info.filename[:-4]}' has a malformed .npy header ({exc})") from None
                if dtype.hasobject:
                    raise ValueError(f"array '{info.filename[:-4]}' holds Python objects, which are never loaded")
                members.append((info.filename[:-4], int(np.prod(shape, dtype=object)) * dtype.itemsize))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise error(
            "io",
            f"inputs file '{path}' is not an .npz archive of arrays: {exc}",
            hint="write inputs with numpy.savez (arrays only, no pickled objects)",
            where=path,
        ) from None
    check_memory(sum(n for _, n in members), budget, f"inputs file '{path}'")
    return members


def _read_npz(path: str, ranks: int, budget: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Arrays of an .npz file: `NAME` for every rank, `rank<R>.NAME` for rank R only; their sizes are checked
    against `budget` from the headers before any is read."""
    import re
    import warnings
    import zipfile
    import zlib

    import numpy as np

    from .base.diagnostics import error

    names = [name for name, _ in _npz_members(path, budget)]
    bad = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)
    common: dict[str, Any] = {}
    per_rank: list[dict[str, Any]] = [{} for _ in range(ranks)]
    try:
        loaded = np.load(path, allow_pickle=False)
    except bad as exc:
        raise error("io", f"inputs file '{path}' is not a readable .npz archive: {exc}", where=path) from None
    with loaded, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key in names:
            try:
                arr = loaded[key]
            except bad as exc:
                raise error("io", f"inputs file '{path}': array '{key}' cannot be read: {exc}", where=path) from None
            m = re.fullmatch(r"rank(\d+)\.(.+)", key)
            if m is None:
                common[key] = arr
            elif int(m.group(1)) < ranks:
                per_rank[int(m.group(1))][m.group(2)] = arr
            else:
                raise error("usage", f"inputs file '{path}': '{key}' is for rank {m.group(1)}, but {ranks} rank(s) run")
    return common, per_rank


def _cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.output:
        check_writable(args.output, what="outputs file")  # before any work
    from .api import run_model
    from .base.diagnostics import error
    from .base.files import atomic_output
    from .base.limits import default_memory_budget

    try:
        import numpy as np

        from .compiler.runtime.executor import checksum, model_rank_size
    except ImportError as exc:
        raise error("usage", f"running models needs numpy: pip install 'rulepass[run]' ({exc})") from None
    model = _run_model_doc(args, err)
    ranks = args.ranks or model_rank_size(model)
    budget = args.max_memory if args.max_memory is not None else default_memory_budget()
    inputs, rank_inputs = _read_npz(args.inputs, ranks, budget) if args.inputs else ({}, None)
    run_args: dict[str, Any] = {"ranks": ranks, "seed": args.seed, "rank_inputs": rank_inputs, "verify": args.verify}
    check: Any = None
    if args.check:
        from .compiler.runtime.differential import check_model

        check = check_model(model, inputs, **run_args, max_memory=budget)
        result = check.run
    else:
        result = run_model(model, inputs, **run_args, max_memory=budget)
    rows: list[dict[str, Any]] = [
        {
            "rank": r,
            "name": name,
            "source": result.sources[name],
            "shape": list(a.shape),
            "dtype": str(a.dtype),
            "sha256": checksum(a),
        }
        for r, outs in enumerate(result.per_rank)
        for name, a in outs.items()
    ]
    if args.output:
        arrays = {
            (name if ranks == 1 else f"rank{r}.{name}"): a
            for r, outs in enumerate(result.per_rank)
            for name, a in outs.items()
        }
        savez: Any = np.savez  # numpy's stub types **kwds as its own keyword arguments
        with atomic_output(args.output, what="outputs file", binary=True) as f:
            savez(f, **arrays)
    if args.format == "json":
        doc = {
            "model": result.name,
            "ranks": ranks,
            "seed": args.seed,
            "tasks_run": len(result.trace),
            "initialised": result.initialised,
            "virtual": result.virtual,
            "outputs": rows,
            "written": args.output,
        }
        if check is not None:
            doc["check"] = _check_json(check)
        out.write(json.dumps(doc, indent=1) + "\n")
        return _check_status(check, err)
    out.write(
        f"ran model '{_p(result.name)}' on {ranks} rank(s), seed {args.seed}: {len(result.trace)} task(s) per rank, "
        f"{len(result.initialised)} kernel(s) initialised, {len(result.virtual)} virtual op(s) neither initialised "
        f"nor launched{': ' + _p(', '.join(result.virtual)) if result.virtual else ''}\n"
    )
    for row in rows:
        where = f"rank {row['rank']} " if ranks > 1 else ""
        shape = ",".join(str(d) for d in row["shape"])
        out.write(f"  {where}{_p(row['name'])} ({_p(row['source'])}): {row['dtype']}[{shape}] sha256:{row['sha256']}\n")
    if args.output:
        out.write(f"wrote {_p(args.output)}\n")
    if check is not None:
        out.write(_check_line(check) + "\n")
    return _check_status(check, err)


def _check_json(check: Any) -> dict[str, Any]:
    """A differential check's report as JSON."""
    d = check.difference
    return {
        "compared": check.compared,
        "equal": d is None,
        "first_difference": None if d is None else {"tensor": d.tensor, "reader": d.reader, "detail": d.detail},
    }


def _check_line(check: Any) -> str:
    """A differential check's report on one line."""
    if check.difference is None:
        return f"check: equal to the direct evaluation of the graph, bit for bit ({check.compared} tensor(s) compared)"
    return f"check: DIFFERS from the direct evaluation of the graph: {check.difference}"


def _check_status(check: Any, err: TextIO) -> int:
    """The exit status after a (possible) differential check; a difference is also said on stderr."""
    if check is None or check.difference is None:
        return EXIT_OK
    err.write(f"rulepass: the compiled model differs from the graph evaluated directly: {check.difference}\n")
    return EXIT_INVALID


def _positive_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _thread_count(text: str) -> int:
    from .base.limits import MAX_THREADS

    value = _positive_int(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"{value} threads is over the limit of {MAX_THREADS}")
    return value


def _byte_size(text: str) -> int:
    from .base.limits import LimitError, parse_byte_size

    try:
        return parse_byte_size(text)
    except LimitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def _budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite non-negative number of seconds, got {text}")
    return value


def budget_option(parser: argparse.ArgumentParser) -> None:
    """The memory planner's `--budget` (memplan, memory, compile)."""
    parser.add_argument(
        "--budget",
        type=_budget,
        metavar="S",
        help="the memory planner's budget in seconds, counted in calibrated work units so the plan "
        "never depends on the machine (default: plan()'s, 8)",
    )
    parser.add_argument(
        "--wall-clock",
        action="store_true",
        help="also end the planner's optional work once --budget seconds of wall time have passed: never "
        "longer than asked on a loaded machine, but the plan may then depend on the machine's load",
    )


def _planner_deadline(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """The planner's wall-clock deadline when `--wall-clock` asks for it, else nothing (plans stay deterministic)."""
    if not args.wall_clock:
        return contextlib.nullcontext()
    from .compiler.memory.planner import wall_clock_budget

    return wall_clock_budget()


def verbosity_options(p: argparse.ArgumentParser, *, top: bool = False) -> None:
    """`-v/--verbose` and `-q/--quiet` (counted), before the command or after it (a command's own options of
    those names are left alone)."""
    default = 0 if top else argparse.SUPPRESS  # after the command, only what is given overrides the top's
    if "-v" not in p._option_string_actions and "--verbose" not in p._option_string_actions:
        p.add_argument("-v", "--verbose", action="count", default=default, help="say more (repeatable)")
    if "-q" not in p._option_string_actions and "--quiet" not in p._option_string_actions:
        p.add_argument("-q", "--quiet", action="count", default=default, help="errors only: no notes, no warnings")


def _leaf_parsers(sub: argparse._SubParsersAction[Any]) -> Iterator[argparse.ArgumentParser]:
    """The parsers of every command and subcommand below `sub`."""
    for p in dict.fromkeys(sub.choices.values()):  # aliases share one parser
        nested = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            yield from _leaf_parsers(nested[0])
        yield p


def _pass_options(p: argparse.ArgumentParser) -> None:
    """--rules, --level, --disable and --format, as every command that runs the passes takes them."""
    p.add_argument(
        "--rules",
        action="append",
        metavar="PATH",
        help="rule file or folder (repeatable; default: the bundled rules)",
    )
    p.add_argument(
        "--level", choices=["O0", "O1", "O2", "O3"], help="optimisation level (default: the settings', else O3)"
    )
    p.add_argument("--disable", action="append", default=[], metavar="PASS", help="disable a pass (repeatable)")
    p.add_argument("--format", choices=["text", "json"], default="text")


def _check_option(p: argparse.ArgumentParser, command: str) -> None:
    seeded = "seeded (--seed) inputs" if command == "run" else "inputs seeded 0"
    p.add_argument(
        "--check",
        action="store_true",
        help=f"run the model on {seeded} and compare it bit for bit with the graph evaluated directly (no "
        "planned memory, no virtual ops); name the first tensor that differs and exit 1 (needs rulepass[run])",
    )


def _soundness_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-soundness-check",
        action="store_true",
        help="experiments only: do NOT prove that every zero-copy op reads and writes the bytes its copy would",
    )


def _add_inspect_commands(sub: Any) -> None:
    """graph check, validate and catalogue."""
    graph = sub.add_parser("graph", help="graph file tools")
    gsub = graph.add_subparsers(dest="graph_command", metavar="SUBCOMMAND", parser_class=_Parser)
    gsub.required = True
    check = gsub.add_parser("check", help="validate graph files and print a summary")
    check.add_argument("files", nargs="+", metavar="FILE")
    check.add_argument("--format", choices=["text", "json"], default="text")
    check.set_defaults(handler=_cmd_graph_check)

    val = sub.add_parser("validate", help="check rule files (default: the bundled rules)")
    val.add_argument("paths", nargs="*", metavar="PATH", help="rule files or folders")
    val.add_argument("--format", choices=["text", "json"], default="text")
    val.set_defaults(handler=_cmd_validate)

    cat = sub.add_parser("catalogue", help="list the entities, fields and helpers rules can use")
    cat.add_argument("--format", choices=["text", "json"], default="text")
    cat.set_defaults(handler=_cmd_catalogue)


def _add_decision_commands(sub: Any) -> None:
    """optimize, explain and test: the rule passes' decisions."""
    opt = sub.add_parser("optimize", help="run the rule passes over a graph and show every decision")
    opt.add_argument("graph", metavar="GRAPH", nargs="?", help="graph file (default: the bundled example)")
    opt.add_argument("-o", "--output", metavar="OUT", help="write the marked graph here")
    opt.add_argument("--dry-run", action="store_true", help="decide, change nothing")
    opt.add_argument("--timings", action="store_true", help="show time per pass")
    _pass_options(opt)
    opt.set_defaults(handler=_cmd_optimize)

    exp = sub.add_parser("explain", help="the check-by-check trace of one node's decision")
    exp.add_argument("graph", metavar="GRAPH")
    exp.add_argument("--node", required=True, metavar="NAME")
    exp.add_argument("--rule", metavar="PASS", help="only this rule's decision")
    _pass_options(exp)
    exp.set_defaults(handler=_cmd_explain)

    tst = sub.add_parser("test", help="run rule fixtures (default: the bundled rules' fixtures)")
    tst.add_argument("paths", nargs="*", metavar="PATH", help="rule files, fixture files or folders")
    tst.add_argument("--format", choices=["text", "json", "junit"], default="text", help="junit: JUnit XML for CI")
    tst.set_defaults(handler=_cmd_test)


def _add_compile_command(sub: Any) -> None:
    """compile: the whole compiler, writing the model."""
    comp = sub.add_parser("compile", help="passes, streams, memory and tasks: write the model")
    comp.add_argument("graph", metavar="GRAPH", nargs="?", help="graph file (default: the bundled example)")
    comp.add_argument("-o", "--output", metavar="MODEL", help="write the model (JSON) here")
    comp.add_argument(
        "--threads",
        type=_thread_count,
        metavar="N",
        help="task generation threads (default: MAX_COMPILE_CORE_NUMBER, else 1)",
    )
    comp.add_argument("--single-stream", action="store_true", help="put every node on stream 0")
    comp.add_argument(
        "--buffer-optimize",
        choices=["l1_optimize", "l2_optimize"],
        help="GE's ge.bufferOptimize option: generate fusion groups contiguously",
    )
    comp.add_argument("--timings", action="store_true", help="show time per stage")
    comp.add_argument(
        "--baseline",
        action="store_true",
        help="also plan the graph without the no-task passes, to report the feature-map memory they save",
    )
    comp.add_argument(
        "--incremental-from",
        metavar="MODEL",
        help="reuse this previous model's tasks for every node whose tasks cannot have changed",
    )
    comp.add_argument(
        "--task-cache",
        metavar="DIR",
        help="reuse the last compile's tasks kept in this folder, and keep this compile's there",
    )
    budget_option(comp)
    _check_option(comp, "compile")
    _soundness_option(comp)
    _pass_options(comp)
    comp.set_defaults(handler=_cmd_compile)


def _add_import_command(sub: Any) -> None:
    """import: an ONNX model as a graph file."""
    imp = sub.add_parser("import", help="import an ONNX model as a graph file (needs rulepass[onnx])")
    imp.add_argument("model", metavar="MODEL.onnx")
    imp.add_argument("-o", "--output", required=True, metavar="GRAPH", help="graph file to write (.yaml or .json)")
    imp.add_argument(
        "--formats",
        choices=["keep", "ascend"],
        default="keep",
        help="keep the model's formats, or assign Ascend storage formats (NC1HWC0, FRACTAL_Z)",
    )
    imp.add_argument("--dim", action="append", default=[], metavar="NAME=N", help="size of a symbolic input dim")
    imp.add_argument(
        "--input-shape",
        metavar='"NAME:D0,D1,...;..."',
        help="whole input shapes, as ATC's --input_shape (also sets unnamed and -1 dims)",
    )
    imp.add_argument(
        "--weights",
        choices=["inline", "placeholder"],
        default="inline",
        help="carry every weight's data in the graph (inline), or only small ones (placeholder: run seeds the rest)",
    )
    imp.set_defaults(handler=_cmd_import)


def _add_memory_commands(sub: Any) -> None:
    """memory and memplan: the offset planner on a graph or on a buffer CSV."""
    mem = sub.add_parser("memory", help="plan memory for an optimized graph; savings of the no-task passes")
    mem.add_argument("graph", metavar="GRAPH", nargs="?", help="graph file (default: the bundled example)")
    mem.add_argument(
        "--verify",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="prove the plans safe with the independent verifier (default: on)",
    )
    _soundness_option(mem)
    budget_option(mem)
    _pass_options(mem)
    mem.set_defaults(handler=_cmd_memory)

    mp = sub.add_parser("memplan", help="run the offset planner on a buffer CSV (id,lower,upper,size)")
    mp.add_argument("file", metavar="FILE.csv")
    mp.add_argument("--baseline", action="store_true", help="also run the greedy best-fit baseline")
    mp.add_argument("--offsets", action="store_true", help="include every offset in the JSON output")
    mp.add_argument("--format", choices=["text", "json"], default="text")
    budget_option(mp)
    mp.set_defaults(handler=_cmd_memplan)


def _add_run_command(sub: Any) -> None:
    """run: execute a model with the reference kernels."""
    run = sub.add_parser("run", help="execute a compiled model with the reference kernels (needs rulepass[run])")
    run.add_argument(
        "model", metavar="MODEL", nargs="?", help="model file, or a graph file to compile first (default: the example)"
    )
    run.add_argument("--inputs", metavar="FILE.npz", help="input arrays by Data node name (rank<R>.NAME: rank R)")
    run.add_argument("-o", "--output", metavar="OUTPUTS.npz", help="write the outputs here")
    run.add_argument("--ranks", type=_positive_int, metavar="R", help="simulated ranks (default: the model's ranks)")
    run.add_argument("--seed", type=_nonnegative_int, default=0, metavar="N", help="seed of missing inputs and weights")
    run.add_argument(
        "--max-memory",
        type=_byte_size,
        metavar="SIZE",
        help="refuse models and inputs needing more (e.g. 512M, 8G; default: half the available memory)",
    )
    run.add_argument(
        "--verify",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="prove the memory plan safe before running (default: on)",
    )
    _check_option(run, "run")
    _soundness_option(run)
    _pass_options(run)
    run.set_defaults(handler=_cmd_run)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `rulepass` command."""
    parser = _Parser(
        prog="rulepass",
        description="Rule-based GE graph optimizer: validate rules, optimize "
        "graphs, explain decisions, plan memory, generate tasks.",
    )
    parser.add_argument("--version", action="version", version=f"rulepass {__version__}")
    parser.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the cache of loaded rules (RULEPASS_NO_CACHE=1)"
    )
    verbosity_options(parser, top=True)
    parser.add_argument(
        "--no-config", action="store_true", help="ignore rulepass.toml and [tool.rulepass] of pyproject.toml"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for add in (_add_inspect_commands, _add_decision_commands, _add_compile_command, _add_import_command,
                _add_memory_commands, _add_run_command):  # fmt: skip
        add(sub)

    from . import cli_completion, cli_lsp, cli_schema
    from .cli_render import add_commands as add_render_commands

    add_render_commands(sub, count=_positive_int)
    cli_lsp.add_parser(sub)
    cli_schema.add_parser(sub)
    cli_completion.add_parser(sub, parser)
    from .cli_corpus import add_corpus_parser

    add_corpus_parser(sub, count=_positive_int, seconds=_budget)
    from .cli_nearmiss import add_parser as add_nearmiss

    add_nearmiss(sub)
    for p in _leaf_parsers(sub):  # last: every command takes -v/-q after its name too
        verbosity_options(p)
    return parser


class _Printable(io.TextIOBase):
    """A text stream that escapes control characters but newline and tab (see `printable`): whatever user text
    reaches the terminal, it cannot send escape sequences. Names are escaped, newlines too, where they are shown."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.verbosity = 0  # what -v/-q asked for (see `_verbosity`)

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self._stream.write(_p(s, keep_newlines=True))
        return len(s)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command line; returns the exit code."""
    out = cast(TextIO, _Printable(out or sys.stdout))
    err = cast(TextIO, _Printable(err or sys.stderr))
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # --help, --version, usage
            args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    handler: Handler = args.handler
    cast(_Printable, err).verbosity = args.verbose - args.quiet
    from .base.diagnostics import RulepassError

    try:
        from .config import apply_config

        config = apply_config(args, Path.cwd())
        if config is not None and args.verbose > 0:
            err.write(f"rulepass: settings from {_p(str(config.path))}\n")
        if args.no_cache:
            from .dsl.cache import disabled

            with disabled():
                return handler(args, out, err)
        return handler(args, out, err)
    except RulepassError as exc:
        _print_diagnostics(exc.diagnostics, err)
        return EXIT_USAGE if all(d.code == "usage" for d in exc.diagnostics) else EXIT_INVALID
    except BrokenPipeError:  # e.g. `rulepass catalogue | head`: the reader has gone, nothing more to say
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit-time flush quiet
        return EXIT_OK
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
