"""rulepass benchmarks: engine overhead, scale, memory quality and what the no-task optimisation buys.

    python benchmarks/run.py [--quick] [--max-nodes N] [--only engine,backends,scale,work,...]
                             [--profile] [--huge-pages] [--repeat N]

Prints one markdown table per benchmark and, unless `--no-write` (or `--quick` without `--write`), stores the
figures in benchmarks/results.json and rewrites docs/benchmarks.md from them. A section that was not run
keeps the figures of its last run (each section names its own command and date), and the largest scale run
on record (e.g. one with `--max-nodes 1000000`) is kept beside a smaller default run.

1. engine  — the Concat rule file run by the engine versus benchmarks/handwritten_concat.py (the same checks
             in plain Python) on fresh copies of the same graphs, interleaved, best of the repetitions;
             the decisions must be identical. Figure: engine time / hand-written time.
1b. backends — every rule pass run by the generated code and by the closures alone (benchmarks/backends.py),
             on the engine section's graphs; the decisions must be identical. Figure: closures / generated.
2. scale   — synthetic LLM / split-pipeline / 5HD-CNN graphs at 10k, 100k (and, opt-in, 1M) nodes, each size
             generated and then compiled in a fresh subprocess, in `--repeat` rounds (sizes up and back down):
             wall and CPU time, GC time and peak RSS of every stage (load, copy, passes, streams, memory, verify,
             baseline memory, tasks, model, write), means over the rounds; with `--huge-pages`, every graph
             compiled once more with its heap in 2 MiB transparent huge pages.
   work    — the same graphs compiled again under cProfile, counting every stage's calls per node: work that
             the caches do not change, so its growth from size to size is the code's own (1.00 = linear).
3. memory  — the feature-map arena of the offset planner versus the lower bound and versus greedy-by-size
             (`assign_memory(..., baseline=True)`), and the time per plan, on the light models and the
             synthetic graphs at 10k nodes and every larger scale size up to `--max-nodes`.
   memplan — benchmarks/memplan_bench.py: the planner and greedy-by-size on the shared memory-planning
             instances (../shared/data/memplan; refused before any work when they are not there).
4. savings — per real model: concats made virtual, tasks and feature-map bytes with and without the no-task
             passes, copy bytes avoided.
5. models  — benchmarks/real_models.py: every model of the corpus (tests/data/models) imported, compiled, run with
             and without the no-task passes and checked against onnxruntime; the stage each one fails at.

The code of each section is in benchmarks/sections/ (one module a section, `common` for what they share,
`document` for the page); this file only parses the command line, runs the sections asked for and stores them.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import backends  # noqa: E402
import cli_latency  # noqa: E402
import memplan_bench  # noqa: E402
import real_models  # noqa: E402
from sections import engine, memory, memplan, savings, scale, work  # noqa: E402
from sections.common import DOC, RESULTS, ROOT, count_bytecodes, geomean, machine, machine_line, table, warm  # noqa: E402
from sections.document import load_results, render_doc, store_results  # noqa: E402
from sections.scale_render import render_scale  # noqa: E402
from sections.workers import worker_main  # noqa: E402

from rulepass.api import load_rules  # noqa: E402

SECTIONS = ("engine", "backends", "scale", "work", "memory", "memplan", "savings", "models", "latency")
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)


def build_parser() -> argparse.ArgumentParser:
    """The command line of `python benchmarks/run.py`."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repetitions; prints only")
    parser.add_argument(
        "--max-nodes", type=int, default=100_000, help="largest scale size: 10k, 100k (default) or 1M nodes"
    )
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated: " + ",".join(SECTIONS))
    parser.add_argument("--profile", action="store_true", help="cProfile the largest scale run of each workload")
    parser.add_argument(
        "--huge-pages",
        action="store_true",
        help="scale: compile every graph once more with its heap in transparent huge pages (glibc malloc)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="scale: N rounds, each compiling every graph (and running the reference walk) at every size; means kept",
    )
    parser.add_argument("--write", action="store_true", help="store results and rewrite the doc even with --quick")
    parser.add_argument("--no-write", action="store_true", help="print only; leave results.json and the doc")
    parser.add_argument("--render", action="store_true", help="only rewrite the doc from benchmarks/results.json")
    return parser


def _sections(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The sections asked for, after the checks that refuse a run before any work (the others take an hour)."""
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, not {args.repeat}")
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = sorted(set(only) - set(SECTIONS))
    if bad:
        parser.error(f"unknown section(s) {', '.join(bad)}; expected some of {', '.join(SECTIONS)}")
    why = memplan_bench.missing_data() if "memplan" in only else None
    if why:  # before any work: the other sections take an hour
        parser.error(f"the memplan section has nothing to measure: {why}; leave it out with --only")
    return only


def log(msg: str) -> None:
    """Progress, on stderr."""
    print(msg, file=sys.stderr, flush=True)


class _Run:
    """One run of the sections: what each measured (`fresh`, as results.json stores it), the markdown printed at
    the end (`out`), and what failed."""

    def __init__(self, args: argparse.Namespace, command: str, m: dict[str, Any]) -> None:
        self.args, self.command, self.machine = args, command, m
        self.fresh: dict[str, Any] = {}
        self.out: list[str] = [f"machine: {machine_line(m)}", f"command: `{command}`", ""]
        self.failures: list[str] = []

    def record(self, key: str, data: dict[str, Any]) -> dict[str, Any]:
        """Keep a section's figures with the command and machine that measured them."""
        entry = {"command": self.command, "machine": self.machine, "quick": self.args.quick, "data": data}
        self.fresh[key] = entry
        return entry

    def show(self, title: str, text: str) -> None:
        """Add a section's table to the printed output."""
        self.out += [title, "", text, ""]


def _run_speed(run: _Run, only: list[str]) -> None:
    """Sections 1 and 2: engine, back-ends, scale and work."""
    args = run.args
    if "engine" in only:
        log("1. engine overhead")
        sec = run.record("engine", engine.bench_engine(args.quick, log))
        run.show("## 1. Engine overhead", engine.render_engine(sec["data"]))
    if "backends" in only:
        log("1b. back-ends")
        reps = 3 if args.quick else 7
        cases = engine.engine_cases(args.quick)
        sec = run.record("backends", backends.bench(load_rules(), cases, warm, count_bytecodes, log, reps))
        run.show("## 1b. Back-ends", backends.render(sec["data"], table, geomean))
    if "scale" in only:
        log("2. scale")
        sec = run.record("scale", scale.bench_scale(_sizes(args), args.profile, log, args.huge_pages, args.repeat))
        run.show("## 2. Scale", render_scale(sec["data"]))
        for name, text in sec["data"]["profiles"].items():
            run.out += [f"cProfile of the {name} compile:", "```", text, "```", ""]
    if "work" in only:
        log("2b. work (calls counted)")
        sec = run.record("work", work.bench_work(_sizes(args), log))
        run.show("## 2b. Work", work.render_work(sec["data"], run.fresh.get("scale", {}).get("data")))


def _sizes(args: argparse.Namespace) -> list[int]:
    """The scale and work sections' graph sizes."""
    sizes = [s for s in (QUICK_SIZES if args.quick else DEFAULT_SIZES) if s <= args.max_nodes]
    return sizes or [min(args.max_nodes, 1000)]


def _run_quality(run: _Run, only: list[str]) -> None:
    """Sections 3 to 6: memory, memplan, savings, models and latency."""
    args = run.args
    if "memory" in only:
        log("3. memory quality")
        sec = run.record("memory", memory.bench_memory(args.quick, log, _sizes(args)))
        run.show("## 3. Memory quality", memory.render_memory(sec["data"]))
    if "memplan" in only:
        log("3b. memory planner on the shared instances")
        plans, err = memplan.bench_memplan(log)
        if plans is None:  # not stored: the page keeps the last figures
            run.failures.append(f"memplan: {err}")
        else:
            run.record("memplan", plans)
            run.show("## 3b. Shared instances", memplan.render_memplan(plans))
            if not all(r["valid"] for r in plans["instances"]):
                run.failures.append("memplan: a placement is not valid (the table's *valid* column)")
    if "savings" in only:
        log("4. savings")
        sec = run.record("savings", savings.bench_savings(args.quick, log))
        run.show("## 4. Savings", savings.render_savings(sec["data"]))
    if "models" in only:
        log("5. real models")
        sec = run.record("models", real_models.bench_models(log))
        run.show("## 5. Real models", real_models.render(sec["data"]["rows"]))
    if "latency" in only:
        log("6. command latency")
        sec = run.record("latency", cli_latency.bench(3 if args.quick else 7))
        run.show("## 6. Command latency", cli_latency.render(sec["data"]))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sections asked for, print their tables, store them (unless told not to); the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--worker"]:
        return worker_main(args_list[1:])
    parser = build_parser()
    args = parser.parse_args(args_list)
    if args.render:
        DOC.write_text(render_doc(load_results()), encoding="utf-8")
        return 0
    only = _sections(parser, args)
    write = (args.write or not args.quick) and not args.no_write
    command = "python benchmarks/run.py" + (f" {shlex.join(args_list)}" if args_list else "")
    m = machine()
    print(f"machine: {machine_line(m)}", file=sys.stderr)
    run = _Run(args, command, m)
    _run_speed(run, only)
    _run_quality(run, only)
    print("\n".join(run.out))
    if write:
        DOC.write_text(render_doc(store_results(run.fresh)), encoding="utf-8")
        log(f"wrote {RESULTS.relative_to(ROOT)} and {DOC.relative_to(ROOT)}")
    engine_sec = run.fresh.get("engine")
    if engine_sec and not all(r["identical"] for r in engine_sec["data"]["rows"]):
        run.failures.append("the engine and the hand-written pass disagree")
    for failure in run.failures:
        log(f"error: {failure}")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
