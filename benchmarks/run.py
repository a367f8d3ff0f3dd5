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
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as dt
import gc
import io
import json
import math
import os
import platform
import pstats
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOC = ROOT / "docs" / "benchmarks.md"
RESULTS = HERE / "results.json"
FINDINGS = HERE / "findings.md"
# sections measured by scripts of their own, too long to rerun with the page (their text is the script's output)
HAND_RUN = (
    HERE / "onnx_backend_sweep.md",
    HERE / "corpus_bench.md",
    HERE / "task_incremental.md",
    HERE / "memplan_peer.md",
)
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import backends  # noqa: E402
import cli_latency  # noqa: E402
import handwritten_concat as hand  # noqa: E402
import memplan_bench  # noqa: E402
import real_models  # noqa: E402
import synthetic  # noqa: E402
from rulepass.compiler.ir import ComputeGraph  # noqa: E402

from rulepass.api import compile_graph, load_graph, load_rules, optimize  # noqa: E402

SECTIONS = ("engine", "backends", "scale", "work", "memory", "memplan", "savings", "models", "latency")
CONCAT = "ConcatNotaskPass"
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)
MiB = 1 << 20
LINEAR_GOAL = 1.10  # the scale section's goal: CPU time per node at most this much of a smaller size's
# address-space cap of the scale workers (the machine has 24 GiB); RULEPASS_BENCH_MEM_GIB overrides it
MEM_LIMIT_GIB = float(os.environ.get("RULEPASS_BENCH_MEM_GIB", "23"))


# ---- machine and small helpers -----------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    """Where and when the figures were measured."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        m = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        if m:
            cpu = m.group(1).strip()
    mem = ""
    with contextlib.suppress(OSError):
        m = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        if m:
            mem = f"{int(m.group(1)) / (1 << 20):.1f} GiB"
    commit = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        # what the benchmark writes itself (the figures of an earlier section, this page) is not the code measured
        written = [f":(exclude){p.relative_to(ROOT)}" for p in (RESULTS, DOC)]
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", ".", *written],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        commit += " (with uncommitted changes)" if dirty else ""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "caches": caches(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory": mem,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "loadavg": f"{load[0]:.2f}",
    }


def caches() -> str:
    """The data caches of CPU 0 as Linux reports them (`L2 2048K, L3 491520K`), '' where it does not: how much of
    a graph can stay in cache is what bends the scale benchmark's per-node times."""
    out = []
    with contextlib.suppress(OSError):
        for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
            if (d / "type").read_text().strip() in ("Data", "Unified"):
                out.append(f"L{(d / 'level').read_text().strip()} {(d / 'size').read_text().strip()}")
    return ", ".join(out)


def machine_line(m: dict[str, Any]) -> str:
    """One line for a machine record."""
    return (
        f"{m['platform']}; {m['cpus']} CPU(s) ({m['cpu']}"
        + (f"; caches {m['caches']}" if m.get("caches") else "")
        + f"); {m['memory']} RAM; {m['python']}; "
        f"{m['date']}; commit {m['commit'] or '?'}; load average {m['loadavg']} at start"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A markdown table; `align` has one letter per column (l/r), right by default for all but the first."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(str(h) for h in headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def fmt_bytes(n: float) -> str:
    """Bytes with a binary unit."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def fmt_ms(seconds: float) -> str:
    """Milliseconds with 3 significant digits."""
    ms = seconds * 1000
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def geomean(xs: Sequence[float]) -> float:
    """Geometric mean of positive numbers."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def light_models() -> list[Path]:
    """The ONNX light models that ship in the onnx wheel's backend test data."""
    import onnx

    return sorted((Path(onnx.__file__).parent / "backend" / "test" / "data" / "light").glob("*.onnx"))


def model_name(p: Path) -> str:
    """`light_densenet121.onnx` -> `densenet121`."""
    return p.stem.removeprefix("light_").removeprefix("bvlc_")


def no_task_passes(rules: Any) -> list[str]:
    """The passes tagged `no-task` (what `bytes_saved` and `baseline` turn off)."""
    return [r.name for r in rules.rules if "no-task" in r.rule.tags]


def all_graphs(g: ComputeGraph) -> list[ComputeGraph]:
    """The root graph and every subgraph."""
    return [g, *g.all_subgraphs()]


def warm(g: ComputeGraph) -> ComputeGraph:
    """Compute (and cache) the topological order of every graph, so neither contender pays for it."""
    for x in all_graphs(g):
        x.topological_order()
    return g


# ---- 1. engine overhead ------------------------------------------------------------------------------------
def _fixture_graphs() -> list[ComputeGraph]:
    from rulepass.compiler.graph_file import graph_from_doc
    from rulepass.rules import bundled_rules_dir

    from rulepass.base.yaml_source import load_file

    out = []
    for f in sorted((bundled_rules_dir() / "fixtures" / "concat_notask").glob("*.yaml")):
        out.append(graph_from_doc(load_file(f, what="fixture").sub(["graph"]), f.stem))
    return out


def engine_cases(quick: bool) -> list[tuple[str, list[ComputeGraph]]]:
    """(label, graphs) for the engine benchmark: the rule fixtures, the light models, synthetic graphs."""
    cases: list[tuple[str, list[ComputeGraph]]] = [("rule fixtures (concat_notask, all files)", _fixture_graphs())]
    formats = ("keep",) if quick else ("keep", "ascend")
    for p in light_models():
        for fm in formats:
            cases.append((f"{model_name(p)} ({fm})", [load_graph(p, onnx_formats=fm)]))
    n = 2_000 if quick else 10_000
    for w in synthetic.WORKLOADS:
        cases.append((f"synthetic {w} {n // 1000}k", [synthetic.generate(w, n)]))
    return cases


def graph_state(graphs: Sequence[ComputeGraph]) -> list[Any]:
    """Every node's attributes and every output desc's attributes: what a pass may change."""
    return [s for g in graphs for s in g.attribute_state()]


def bench_engine(quick: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """Engine vs hand-written on each case; per case the best times and the ratios (and the medians' ratio)."""
    from rulepass.compiler.passes import build_pass_manager

    rules = load_rules()
    # every pass but the concat rule (GE's placeholders do nothing); Python passes (e.g. MemLayoutConflictPass,
    # which may revert a zero-copy op) are not part of the rule's decisions
    others = [p.name for p in build_pass_manager(rules).passes if p.kind != "placeholder" and p.name != CONCAT]
    pm = build_pass_manager(rules, disabled=others)
    hand_pm = hand.hosted(pm)  # the hand-written pass in the rule pass's place, run by the same pass manager
    reps = 5 if quick else 9
    rows = []

    def engine_run(graphs: list[ComputeGraph]) -> list[Any]:  # as compile runs the passes
        return [d for g in graphs for r in pm.run(g, explain=False) for d in r.decisions if d.rule == CONCAT]

    def explained_run(graphs: list[ComputeGraph]) -> list[Any]:  # as optimize runs them
        return [d for g in graphs for r in pm.run(g) for d in r.decisions if d.rule == CONCAT]

    def api_run(graphs: list[ComputeGraph]) -> list[Any]:
        return [d for g in graphs for d in optimize(g, rules, disabled=others).decisions if d.rule == CONCAT]

    def hand_pm_run(graphs: list[ComputeGraph]) -> list[Any]:  # as compile would run a hand-written pass
        return [d for g in graphs for r in hand_pm.run(g, explain=False) for d in r.decisions if d.rule == CONCAT]

    def hand_run(graphs: list[ComputeGraph]) -> list[Any]:  # the bare function
        return [d for g in graphs for d in hand.concat_notask_pass(g)]

    contenders: dict[str, Callable[[list[ComputeGraph]], list[Any]]] = {
        "engine": engine_run,
        "explained": explained_run,
        "api": api_run,
        "hand_pm": hand_pm_run,
        "hand": hand_run,
    }
    for label, graphs in engine_cases(quick):
        # identical decisions and identical graph changes, on fresh copies
        results = {}
        for name, fn in contenders.items():
            copies = [warm(g.copy()) for g in graphs]
            decisions = fn(copies)
            results[name] = ([hand.decision_key(d) for d in decisions], graph_state(copies))
        identical = all(results[k] == results["hand"] for k in contenders)
        keys = results["engine"][0]
        # batch size: enough copies per sample for ~5 ms of hand-written CPU time (the CPU clock has ns resolution)
        first = [warm(g.copy()) for g in graphs]
        t0 = time.perf_counter()
        hand_run(first)
        one = max(time.perf_counter() - t0, 1e-6)
        batch = max(1, min(1000, math.ceil(0.005 / one)))  # the cap only bounds what the smallest graphs copy
        samples: dict[str, list[float]] = {k: [] for k in contenders}
        for rep in range(reps):
            order = list(contenders) if rep % 2 == 0 else list(reversed(contenders))
            for name in order:
                copies = [[warm(g.copy()) for g in graphs] for _ in range(batch)]
                gc.collect()
                gc.disable()  # as timeit does: a batch of copies makes collections scan far more than one graph
                t0 = time.process_time()  # CPU time: the machine is shared, wall time counts the others' load
                for c in copies:
                    contenders[name](c)
                samples[name].append((time.process_time() - t0) / batch)
                gc.enable()
                del copies
        # the least of the samples: on this shared machine the noise only ever adds time (as `timeit` advises);
        # the medians' ratio is kept beside it, to show the spread
        best = {k: min(v) for k, v in samples.items()}
        med = {k: statistics.median(v) for k, v in samples.items()}
        # the same runs counted in bytecodes (every Python frame): exact, so free of the machine's noise
        ops = {}
        for name in ("engine", "hand_pm"):
            copies = [warm(g.copy()) for g in graphs]
            ops[name] = count_bytecodes(lambda: contenders[name](copies))  # noqa: B023 (called at once)
        row = {
            "case": label,
            "nodes": sum(len(x) for g in graphs for x in all_graphs(g)),
            "graphs": len(graphs),
            "concats": len(keys),
            "fired": sum(1 for k in keys if k[3]),
            "engine_s": best["engine"],
            "explained_s": best["explained"],
            "api_s": best["api"],
            "hand_s": best["hand"],
            "hand_pm_s": best["hand_pm"],
            "ratio": best["engine"] / best["hand"],  # against the bare function
            "pm_ratio": best["engine"] / best["hand_pm"],  # both run by a pass manager: the figure
            "pm_ratio_median": med["engine"] / med["hand_pm"],
            "explained_ratio": best["explained"] / best["hand_pm"],
            "api_ratio": best["api"] / best["hand_pm"],
            "identical": identical,
            "batch": batch,
            "reps": reps,
            "ops_engine": ops["engine"],
            "ops_hand_pm": ops["hand_pm"],
        }
        rows.append(row)
        log(
            f"  engine: {label}: engine {fmt_ms(row['engine_s'])} ms, hand in the pass manager "
            f"{fmt_ms(row['hand_pm_s'])} ms, ratio {row['pm_ratio']:.2f} (medians {row['pm_ratio_median']:.2f}; bare "
            f"function {fmt_ms(row['hand_s'])} ms, ratio {row['ratio']:.2f}; bytecodes "
            f"{ops['engine'] / ops['hand_pm']:.3f})"
            f"{'' if identical else '  DECISIONS DIFFER'}"
        )
    return {"rows": rows}


def count_bytecodes(run: Callable[[], object]) -> int:
    """The Python bytecode instructions `run()` executes, in every frame (a builtin or C function counts as the
    instruction calling it): unlike time, the same on every run of the same code on the same graph."""
    count = 0

    def trace(frame: Any, event: str, arg: object) -> Any:
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        run()
    finally:
        sys.settrace(previous)
    return count


def _ops_ratio(r: dict[str, Any]) -> float | None:
    return r["ops_engine"] / r["ops_hand_pm"] if r.get("ops_hand_pm") else None


def render_engine(data: dict[str, Any]) -> str:
    """The engine table and its summary line."""
    rows = data["rows"]
    ops = [_ops_ratio(r) for r in rows]  # None for a run on record from before the count
    body = [
        [
            r["case"],
            r["nodes"],
            f"{r['fired']}/{r['concats']}",
            fmt_ms(r["engine_s"]),
            fmt_ms(r["hand_pm_s"]),
            fmt_ms(r["hand_s"]),
            f"**{r['pm_ratio']:.2f}**",
            f"{r['pm_ratio_median']:.2f}" if "pm_ratio_median" in r else "—",
            f"{r['ratio']:.2f}",
            f"{r['explained_ratio']:.2f}",
            f"{r['api_ratio']:.2f}",
            f"{o:.3f}" if o is not None else "—",
            "yes" if r["identical"] else "**NO**",
        ]
        for r, o in zip(rows, ops, strict=True)
    ]
    t = table(
        [
            "graph",
            "nodes",
            "concats fired",
            "engine CPU ms",
            "hand-written pass CPU ms",
            "hand-written function CPU ms",
            "engine / hand-written pass",
            "the same, medians",
            "engine / hand-written function",
            "explained / hand-written pass",
            "api / hand-written pass",
            "bytecodes engine / hand-written pass",
            "identical",
        ],
        body,
        "lrrrrrrrrrrrl",
    )
    pm_r = [r["pm_ratio"] for r in rows]
    with_concats = [r["pm_ratio"] for r in rows if r["concats"]]
    bare = [r["ratio"] for r in rows]
    explained = [r["explained_ratio"] for r in rows]
    summary = (
        f"Engine / hand-written pass (both run by the pass manager): geometric mean **{geomean(pm_r):.2f}** over "
        f"all {len(pm_r)} graphs, {geomean(with_concats):.2f} over the {len(with_concats)} with concats (min "
        f"{min(pm_r):.2f}, max {max(pm_r):.2f}); with an explanation built for every miss, "
        f"{geomean(explained):.2f}. Against the bare hand-written function (the pass manager's own cost counted "
        f"against the engine, the figure of the earlier runs): {geomean(bare):.2f} (min {min(bare):.2f}, max "
        f"{max(bare):.2f}). Goal: at most 1.2 on every graph (aim 1.0): "
        f"**{'met' if max(pm_r) <= 1.2 else 'not met'}**. Decisions identical on every graph: "
        f"**{'yes' if all(r['identical'] for r in rows) else 'NO'}**."
    )
    counted = [o for o in ops if o is not None]
    if counted:
        summary += (
            f" Bytecodes executed, engine / hand-written pass: geometric mean {geomean(counted):.3f} (min "
            f"{min(counted):.3f}, max {max(counted):.3f})."
        )
    return t + "\n\n" + summary


# ---- 2. scale ----------------------------------------------------------------------------------------------
STAGES = (
    "load",
    "copy",
    "passes",
    "streams",
    "memory",
    "verify",
    "baseline memory",
    "tasks",
    "model",
    "write",
)


class _StageMeter:
    """Wall time, CPU time, GC time and peak RSS per stage (peak reset at every stage start)."""

    def __init__(self, count_calls: bool = False) -> None:
        self.stages: dict[str, dict[str, float]] = {}
        self.current: str | None = None
        self.t_wall = self.t_cpu = 0.0
        self.gc_start = 0.0
        self.gc_acc = 0.0
        self.can_reset = self._reset_peak()
        # with count_calls, a fresh cProfile per stage counts the stage's calls (its times are not kept)
        self.count_calls = count_calls
        self.prof: cProfile.Profile | None = None
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.gc_start = time.perf_counter()
        else:
            self.gc_acc += time.perf_counter() - self.gc_start

    @staticmethod
    def _reset_peak() -> bool:
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (peak RSS) on Linux
            return True
        except OSError:
            return False

    @staticmethod
    def _status(key: str) -> float:
        with contextlib.suppress(OSError):
            m = re.search(rf"{key}:\s+(\d+) kB", Path("/proc/self/status").read_text())
            if m:
                return int(m.group(1)) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def start(self, stage: str) -> None:
        self.stop()
        self.current = stage
        if self.can_reset:
            self._reset_peak()
        self.gc_acc = 0.0
        self.t_wall, self.t_cpu = time.perf_counter(), time.process_time()
        if self.count_calls:
            self.prof = cProfile.Profile()
            self.prof.enable()

    def stop(self) -> None:
        if self.current is None:
            return
        calls = None
        if self.prof is not None:
            self.prof.disable()
            calls = sum(e.callcount for e in self.prof.getstats())  # every Python and builtin call of the stage
            self.prof = None
        wall, cpu = time.perf_counter() - self.t_wall, time.process_time() - self.t_cpu
        peak = self._status("VmHWM")
        self.stages[self.current] = {
            "wall": wall,
            "cpu": cpu,
            "gc": self.gc_acc,
            "peak_mib": peak,
            "rss_mib": self._status("VmRSS"),
        }
        if calls is not None:
            self.stages[self.current]["calls"] = calls
        self.current = None
        print(json.dumps({"stage_done": self.stages}), flush=True)


def worker_generate(workload: str, nodes: int, out: str) -> dict[str, Any]:
    """Generate a graph and save it as JSON (one subprocess per size)."""
    from rulepass.compiler.graph_file import save_graph

    t0 = time.perf_counter()
    g = synthetic.generate(workload, nodes)
    t1 = time.perf_counter()
    save_graph(g, out)
    t2 = time.perf_counter()
    return {
        "nodes": len(g),
        "edges": g.edge_count()[0],
        "generate_s": t1 - t0,
        "save_s": t2 - t1,
        "file_mib": os.path.getsize(out) / MiB,
    }


class _RefNode:
    __slots__ = ("attrs", "name", "outs", "peers")

    def __init__(self, i: int) -> None:
        self.name = f"n{i}"
        self.attrs: dict[str, Any] = {"index": i, "shape": [1, i % 7, 16]}
        self.peers: list[_RefNode] = []
        self.outs: list[_RefNode] = []


def worker_reference(n: int) -> dict[str, Any]:
    """The machine's own scaling: CPU µs per element of trivially linear pure-Python work on a linked structure
    of `n` objects shaped like graph nodes (built, walked through peers with dict reads, copied). Any growth
    from 10k to 1M here is the memory hierarchy's (a larger heap, more cache and TLB misses), not an algorithm's.
    """
    gc.collect()
    gc.disable()
    t0 = time.process_time()
    nodes = [_RefNode(i) for i in range(n)]
    by_name = {x.name: x for x in nodes}
    for i, x in enumerate(nodes):
        for d in (1, 3, 17):
            if i >= d:
                x.peers.append(nodes[i - d])
                nodes[i - d].outs.append(x)
    t1 = time.process_time()
    total = 0
    for x in nodes:
        for p in x.peers:
            total += p.attrs["index"] + len(by_name[p.name].outs) + p.attrs["shape"][1]
    t2 = time.process_time()
    copies = [(x.name, dict(x.attrs), [p.name for p in x.peers]) for x in nodes]
    t3 = time.process_time()
    gc.enable()
    assert len(copies) == n and total >= 0
    return {
        "build": 1e6 * (t1 - t0) / n,
        "walk": 1e6 * (t2 - t1) / n,
        "copy": 1e6 * (t3 - t2) / n,
        "huge_mib": anon_huge_mib(),
    }


def worker_compile(
    graph_path: str, model_path: str, profile_path: str | None, verify: bool = True, count_calls: bool = False
) -> dict[str, Any]:
    """Load, compile and write one graph, measuring every stage (one fresh subprocess per graph); with
    `count_calls`, also the calls each stage makes (under cProfile: its times then measure the profiler too)."""
    rules = load_rules()
    compile_graph(synthetic.generate("split", 200), rules)  # warm-up: parsers, catalogue, builders
    assert all(r.fast is not None for r in rules.rules)  # every rule's code generated (on first use) before the stages
    gc.collect()
    prof = cProfile.Profile() if profile_path else None
    meter = _StageMeter(count_calls)
    rss_before = meter._status("VmRSS")
    if prof:
        prof.enable()
    meter.start("load")
    graph = load_graph(graph_path)
    meter.start("copy")  # compile_graph copies the graph for the baseline before its first stage
    result = compile_graph(graph, rules, progress=meter.start, verify=verify)
    meter.start("write")
    result.write_model(model_path)
    meter.stop()
    if prof:
        prof.disable()
        prof.dump_stats(profile_path)
    decisions = [d for d in result.optimize.decisions if d.rule == CONCAT]
    return {
        "nodes": len(graph.all_nodes()),
        "stages": meter.stages,
        "rss_before_mib": rss_before,
        "peak_reset": meter.can_reset,
        "concats": len(decisions),
        "fired": sum(1 for d in decisions if d.fired),
        "tasks": len(result.tasks.tasks),
        "streams": result.streams.stream_count,
        "feature_map": result.memory.plan.total("feature_map"),
        "model_mib": os.path.getsize(model_path) / MiB,
        "huge_mib": anon_huge_mib(),
    }


def mem_cap() -> int:
    """The address-space cap for a worker: MEM_LIMIT_GIB, or what the machine has available less 1 GiB."""
    cap = int(MEM_LIMIT_GIB * (1 << 30))
    with contextlib.suppress(OSError):
        m = re.search(r"MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        if m:
            cap = min(cap, int(m.group(1)) * 1024 - (1 << 30))
    return cap


# The huge-pages runs of the scale section: every allocation through glibc's malloc (CPython's own small-object
# allocator maps its arenas itself, in 4 KiB pages), which glibc backs with transparent huge pages (2 MiB).
HUGE_PAGES_ENV = {"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


def huge_pages_unavailable() -> str | None:
    """Why this machine cannot run the huge-pages mode, or None when it can (Linux with transparent huge pages
    not disabled, glibc 2.35 or later: its `glibc.malloc.hugetlb` tunable)."""
    try:
        mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "no transparent huge pages (not Linux, or a kernel without them)"
    if "[never]" in mode:
        return "transparent huge pages are disabled on this machine ([never])"
    lib, version = platform.libc_ver()
    parts = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if lib != "glibc" or parts < (2, 35):
        return f"needs glibc 2.35 or later for glibc.malloc.hugetlb (found {lib or 'no glibc'} {version})"
    return None


def anon_huge_mib() -> float | None:
    """The process's memory in transparent huge pages now, MiB (None where the kernel does not say)."""
    with contextlib.suppress(OSError):
        m = re.search(r"AnonHugePages:\s+(\d+) kB", Path("/proc/self/smaps_rollup").read_text())
        if m:
            return int(m.group(1)) / 1024
    return None


def _last_line(stderr: str) -> str:
    """What a failed subprocess said last (its error, for a Python traceback)."""
    return (stderr.strip().splitlines() or ["(no output)"])[-1]


def _run_worker(
    args: list[str], log: Callable[[str], None], *, huge_pages: bool = False
) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    """Run `run.py --worker ...` (with `huge_pages`, in the huge-pages mode); (final result or None, last stage
    report, error text)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", *args]
    env = {**os.environ, **HUGE_PAGES_ENV} if huge_pages else None

    cap = mem_cap()

    def limit() -> None:  # fail with MemoryError rather than wake the OOM killer on a shared machine
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, preexec_fn=limit, env=env)
    last: dict[str, Any] = {}
    final = None
    for line in proc.stdout.splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            doc = json.loads(line)
            if "stage_done" in doc:
                last = doc["stage_done"]
            if "result" in doc:
                final = doc["result"]
    err = ""
    if proc.returncode != 0 or final is None:
        err = f"exit code {proc.returncode}: {_last_line(proc.stderr)}"
        log(f"  worker failed: {err}")
    return final, last, err


def _each_graph(
    prefix: str,
    sizes: Sequence[int],
    runs: list[dict[str, Any]],
    log: Callable[[str], None],
) -> Iterator[tuple[str, int, str, str, dict[str, Any]]]:
    """Every workload at every size, generated one at a time into a temporary directory (`_generated`) and both
    files removed after use."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        for w, n, gpath, mpath, gen in _generated(tmp, sizes, runs, log, {}):
            yield w, n, gpath, mpath, gen
            for path in (gpath, mpath):
                with contextlib.suppress(OSError):
                    os.remove(path)


def round_order(sizes: Sequence[int]) -> list[int]:
    """The order of the sizes in one round of the scale section: up, then back down without repeating the largest
    (10k, 100k, 1M, 100k, 10k), so every smaller size is measured just before and just after each larger one."""
    up = sorted(sizes)
    return up + up[-2::-1]


def bench_scale(
    sizes: Sequence[int], profile: bool, log: Callable[[str], None], huge_pages: bool = False, repeat: int = 1
) -> dict[str, Any]:
    """Generate every workload at every size, then compile them (and run the reference walk) in `repeat` rounds,
    each in its own subprocess; a round runs, workload by workload, the sizes in `round_order`, so that every size
    is measured in every stretch of the run and their means see the same drift of the host's speed (`combine`).
    With `huge_pages`, all of it once more in the huge-pages mode (`HUGE_PAGES_ENV`)."""
    runs: list[dict[str, Any]] = []
    profiles: dict[str, str] = {}
    reference: list[dict[str, Any]] = []
    unavailable = huge_pages_unavailable() if huge_pages else None
    if unavailable:
        log(f"  scale: no huge-pages runs: {unavailable}")
    # every default run first, then every huge-pages run (graphs generated again: the same graphs), so that no
    # default run follows a process that held ~10 GiB in huge pages
    for huge in [False, True] if huge_pages and not unavailable else [False]:
        mode = {"pages": "huge"} if huge else {}
        with tempfile.TemporaryDirectory(prefix="rulepass-scale-") as tmp:
            compiles = {
                (w, n): _ScaledGraph(w, n, gpath, mpath, gen, huge)
                for w, n, gpath, mpath, gen in _generated(tmp, sizes, runs, log, mode)
            }
            refs: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
            ref_errors: dict[int, str] = {}
            for rnd in range(repeat):
                log(f"  scale: round {rnd + 1} of {repeat}" + (" (huge pages)" if huge else ""))
                for n in round_order(sizes):
                    if n not in ref_errors:
                        ref, _, err = _run_worker(["reference", str(n)], log, huge_pages=huge)
                        if ref is None:
                            ref_errors[n] = err
                        else:
                            refs[n].append({**ref, "round": rnd})
                for w in synthetic.WORKLOADS:
                    for n in round_order(sizes):
                        if (w, n) in compiles:
                            compiles[w, n].compile(rnd, log)
            reference += [
                {"size": n, **mode, **(combine_reference(refs[n]) if n not in ref_errors else {"error": ref_errors[n]})}
                for n in sizes
            ]
            for graph in compiles.values():
                runs += graph.records()
            if profile and not huge:
                for w in synthetic.WORKLOADS:
                    top = compiles.get((w, max(sizes)))
                    if top is None or top.failed:
                        continue
                    ppath = top.gpath + ".prof"  # in the same temporary directory
                    log(f"  scale: {w} {max(sizes)}: profiling (cProfile)")
                    pres, _, _ = _run_worker(["compile", top.gpath, top.mpath, ppath], log)
                    if pres is not None:
                        profiles[f"{w} {max(sizes)}"] = profile_text(ppath)
    out: dict[str, Any] = {
        "sizes": list(sizes),
        "runs": runs,
        "profiles": profiles,
        "reference": reference,
        "repeat": repeat,
        "schedule": "rounds",
    }
    if unavailable:
        out["huge_pages_unavailable"] = unavailable
    return out


def _generated(
    tmp: str, sizes: Sequence[int], runs: list[dict[str, Any]], log: Callable[[str], None], mode: dict[str, str]
) -> Iterator[tuple[str, int, str, str, dict[str, Any]]]:
    """Every workload at every size generated into `tmp`, each in a subprocess: (workload, size, graph path, model
    path, the generator's report); a graph that could not be made is recorded in `runs` instead."""
    for w in synthetic.WORKLOADS:
        for n in sizes:
            gpath, mpath = os.path.join(tmp, f"{w}_{n}.json"), os.path.join(tmp, f"{w}_{n}.model.json")
            log(f"  {w} {n}: generating")
            gen, _, err = _run_worker(["generate", w, str(n), gpath], log)
            if gen is None:
                runs.append({"workload": w, "size": n, **mode, "error": f"generate: {err}"})
            else:
                yield w, n, gpath, mpath, gen


class _ScaledGraph:
    """One generated graph of the scale section and its compiles, one a call (`compile`), each in a fresh worker.

    A compile that fails fails the graph: no figure of it is kept, and its record names the stage it failed in.
    When the verifier alone ran out, that failure is recorded and the graph is compiled from then on without it
    (its earlier samples, which include the verifier, are dropped), so the rest of the pipeline is still measured.
    """

    def __init__(self, workload: str, size: int, gpath: str, mpath: str, gen: dict[str, Any], huge: bool) -> None:
        self.workload, self.size, self.gpath, self.mpath, self.gen, self.huge = workload, size, gpath, mpath, gen, huge
        self.verify = True
        self.samples: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []  # the failed attempts' records, in order
        self.failed = False

    def _record(self, **fields: Any) -> dict[str, Any]:
        mode = {"pages": "huge"} if self.huge else {}
        return {
            "workload": self.workload,
            "size": self.size,
            **mode,
            "generate": self.gen,
            "verify": self.verify,
            **fields,
        }

    def compile(self, rnd: int, log: Callable[[str], None]) -> None:
        """Compile the graph once more (round `rnd`), unless it has failed."""
        if self.failed:
            return
        label = f"{self.workload} {self.size}" + (" (huge pages)" if self.huge else "")
        log(f"  scale: {label}: compiling {self.gen['nodes']} nodes ({self.gen['file_mib']:.0f} MiB of JSON)")
        args = ["compile", self.gpath, self.mpath] + ([] if self.verify else ["--no-verify"])
        res, last, err = _run_worker(args, log, huge_pages=self.huge)
        if res is not None:
            self.samples.append({**res, "round": rnd})
            wall = sum(s["wall"] for s in res["stages"].values())
            log(f"  scale: {label}: {wall:.1f} s, peak {max_peak(res):.0f} MiB")
            return
        failed_at = next((s for s in STAGES if s not in last and (self.verify or s != "verify")), "?")
        self.errors.append(self._record(error=f"failed in {failed_at}: {err}", stages=last, nodes=self.gen["nodes"]))
        if failed_at == "verify" and self.verify:  # the verifier ran out: measure the rest of the pipeline without it
            log(f"  scale: {label}: compiling again without the verifier")
            self.verify, self.samples = False, []
            self.compile(rnd, log)
        else:
            self.failed = True

    def records(self) -> list[dict[str, Any]]:
        """The graph's records for the section's `runs`: any failure, then its combined samples (if it did not fail
        in the end)."""
        done = [] if self.failed or not self.samples else [self._record(**combine(self.samples))]
        return self.errors + done


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def combine(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One compile result from the same graph compiled in several rounds: every stage's times are the mean over the
    rounds, its peak RSS the highest any reached; each compile's round and total CPU seconds are kept in `samples`
    (for the ratios paired by round, and the spread), the least total in `cpu_least`.

    Means, not the least of the repeats: the host's speed drifts by a fifth over minutes, and every size is
    measured throughout the run (`round_order`), so the means of two sizes see the same drift; the least of a
    short compile's repeats catches a fast moment that a compile lasting minutes cannot, which biases the ratio
    of a large size to a small one upwards."""
    out = {k: v for k, v in results[0].items() if k not in ("stages", "round")}
    stages: dict[str, dict[str, float]] = {}
    for stage in results[0]["stages"]:
        entries = [r["stages"][stage] for r in results if stage in r["stages"]]
        stages[stage] = {
            k: (max if k in ("peak_mib", "rss_mib") else _mean)([e[k] for e in entries]) for k in entries[0]
        }
    out["stages"] = stages
    out["huge_mib"] = max((r["huge_mib"] for r in results if r.get("huge_mib") is not None), default=None)
    totals = [sum(s["cpu"] for s in r["stages"].values()) for r in results]
    out["samples"] = [{"round": r.get("round", 0), "cpu": t} for r, t in zip(results, totals, strict=True)]
    out["cpu_least"] = min(totals)
    return out


def combine_reference(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The reference walk at one size over its rounds: the mean CPU µs per element of each part (build, walk,
    copy), and each round's walk in `samples`."""
    out: dict[str, Any] = {k: _mean([r[k] for r in results]) for k in ("build", "walk", "copy")}
    out["huge_mib"] = max((r["huge_mib"] for r in results if r.get("huge_mib") is not None), default=None)
    out["samples"] = [{"round": r.get("round", 0), "walk": r["walk"]} for r in results]
    return out


def paired_ratios(small: dict[str, Any], large: dict[str, Any], key: str, per: tuple[float, float]) -> list[float]:
    """The ratio of two sizes' figures round by round (`samples`' `key`, divided by `per`: the nodes or 1), each
    round's samples of a size averaged: [large / small for every round both have]."""
    out = []
    for rnd in sorted({s["round"] for s in small.get("samples", [])} & {s["round"] for s in large.get("samples", [])}):
        a = _mean([s[key] for s in small["samples"] if s["round"] == rnd]) / per[0]
        b = _mean([s[key] for s in large["samples"] if s["round"] == rnd]) / per[1]
        if a > 0:
            out.append(b / a)
    return out


def _range(xs: Sequence[float]) -> str:
    """Ratios paired by round as 'least–most' (one: itself; none: a dash)."""
    if not xs:
        return "—"
    return f"{min(xs):.2f}" if len(xs) == 1 else f"{min(xs):.2f}–{max(xs):.2f}"


def bench_work(sizes: Sequence[int], log: Callable[[str], None]) -> dict[str, Any]:
    """Count the calls every stage makes on every workload at every size (compiled under cProfile, each in its
    own subprocess): work that does not depend on the machine's caches, unlike time."""
    runs: list[dict[str, Any]] = []
    for w, n, gpath, mpath, gen in _each_graph("rulepass-work-", sizes, runs, log):
        log(f"  work: {w} {n}: compiling {gen['nodes']} nodes, counting calls")
        res, _, err = _run_worker(["compile", gpath, mpath, "--count-calls"], log)
        if res is None:
            runs.append({"workload": w, "size": n, "nodes": gen["nodes"], "error": err})
        else:
            calls = {k: v["calls"] for k, v in res["stages"].items()}
            runs.append({"workload": w, "size": n, "nodes": res["nodes"], "calls": calls})
            log(f"  work: {w} {n}: {sum(calls.values()) / res['nodes']:.0f} calls a node")
    return {"sizes": list(sizes), "runs": runs}


def _per_node(run: dict[str, Any], stage: str | None = None) -> float:
    """A counted run's calls per node: in one stage, or in all."""
    calls = run["calls"]
    return float(calls[stage] if stage else sum(calls.values())) / run["nodes"]


def render_work(data: dict[str, Any], scale: dict[str, Any] | None = None) -> str:
    """Calls per node per stage, their growth between sizes, and beside it the CPU time's growth and the
    machine's (from the scale section, where it measured the same sizes)."""
    runs = [r for r in data["runs"] if "error" not in r]
    failed = [f"{r['workload']} {r['size'] // 1000}k: {r['error']}" for r in data["runs"] if "error" in r]
    shown = [s for s in STAGES if any(s in r["calls"] for r in runs)]
    rows = [
        [f"{r['workload']} {r['size'] // 1000}k", r["nodes"]]
        + [f"{_per_node(r, s):.{1 if _per_node(r, s) < 10 else 0}f}" if s in r["calls"] else "—" for s in shown]
        + [f"**{_per_node(r):.0f}**"]
        for r in runs
    ]
    t1 = table(["workload", "nodes", *shown, "total"], rows)
    default = [r for r in (scale or {}).get("runs", []) if "error" not in r and r.get("pages") != "huge"]
    timed = {(r["workload"], r["size"]): r for r in default}
    walk = {
        r["size"]: r["walk"]
        for r in (scale or {}).get("reference", [])
        if "error" not in r and r.get("pages") != "huge"
    }
    lrows = []
    for w in synthetic.WORKLOADS:
        ok = [r for r in runs if r["workload"] == w]
        for base, r in [(a, b) for i, a in enumerate(ok) for b in ok[i + 1 :]]:
            # a stage making less than a call a node (the model text written in one call) has no per-node work
            ratios = [
                f"{_per_node(r, s) / _per_node(base, s):.2f}" if s in r["calls"] and _per_node(base, s) >= 1 else "—"
                for s in shown
            ]
            ta, tb = timed.get((w, base["size"])), timed.get((w, r["size"]))
            cpu = "—"
            if ta and tb and ta.get("verify", True) and tb.get("verify", True):
                cpu_a, cpu_b = (sum(s["cpu"] for s in x["stages"].values()) / x["nodes"] for x in (ta, tb))
                cpu = f"{cpu_b / cpu_a:.2f}"
            ref = f"{walk[r['size']] / walk[base['size']]:.2f}" if base["size"] in walk and r["size"] in walk else "—"
            lrows.append(
                [
                    f"{w} {r['size'] // 1000}k vs {base['size'] // 1000}k",
                    *ratios,
                    f"**{_per_node(r) / _per_node(base):.2f}**",
                    cpu,
                    ref,
                ]
            )
    t2 = table(["sizes", *shown, "calls", "CPU time (scale)", "machine walk (scale)"], lrows) if lrows else ""
    out = "Calls per node, by stage:\n\n" + t1
    if t2:
        out += (
            "\n\nGrowth: calls per node at the larger size divided by the same at the smaller (1.00 = linear), by "
            "stage and in total; beside it, where a scale run measured both sizes (on this page, the largest run on "
            "record), the same ratio of its CPU time per node and of its machine reference walk:\n\n" + t2
        )
    if failed:
        out += "\n\nFailed: " + "; ".join(failed)
    return out


def profile_text(path: str, top: int = 25) -> str:
    """The top functions of a profile, by own time and by cumulative time."""
    out = io.StringIO()
    st = pstats.Stats(path, stream=out)
    st.strip_dirs()
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    lines = [
        ln
        for ln in out.getvalue().splitlines()
        if ln.strip() and not ln.startswith(("   Ordered by", "   List reduced"))
    ]
    return "\n".join(lines)


def max_peak(run: dict[str, Any]) -> float:
    """The highest per-stage peak RSS of a run, MiB."""
    return max((s["peak_mib"] for s in run.get("stages", {}).values()), default=0.0)


def net_peak(run: dict[str, Any]) -> float:
    """The run's peak RSS above the interpreter's own (RSS before loading the graph), MiB."""
    return max_peak(run) - run.get("rss_before_mib", 0.0)


def render_scale(data: dict[str, Any]) -> str:
    """Time per stage, peak memory per stage, and the linearity table."""
    runs = data["runs"]
    shown = [s for s in STAGES if any(s in r.get("stages", {}) for r in runs)]
    huge = any(r.get("pages") == "huge" for r in runs)
    repeated = any(len(_samples(r, "cpu")) > 1 for r in runs)
    trows, mrows = [], []
    for r in runs:
        st = r.get("stages", {})
        name = _run_label(r) + ("" if r.get("verify", True) else " (verify off)")
        nodes = r.get("nodes", r.get("generate", {}).get("nodes", "?"))
        total = sum(s["wall"] for s in st.values())
        cpu = sum(s["cpu"] for s in st.values())
        gct = sum(s["gc"] for s in st.values())
        status = f" ({r['error']})" if "error" in r else ""
        trows.append(
            [name + status, nodes]
            + [f"{st[s]['wall']:.2f}" if s in st else "—" for s in shown]
            + [f"**{total:.1f}**", f"{cpu:.1f}", f"{100 * gct / total:.0f}%" if total else "—"]
            + [f"{1e6 * cpu / nodes:.0f}" if isinstance(nodes, int) and nodes else "—"]
            + ([_spread(_samples(r, "cpu"))] if repeated else [])
        )
        mrows.append(
            [name + status, nodes]
            + [f"{st[s]['peak_mib']:.0f}" if s in st else "—" for s in shown]
            + [
                f"**{max_peak(r):.0f}**",
                f"{1024 * net_peak(r) / nodes:.1f}" if isinstance(nodes, int) and "rss_before_mib" in r else "—",
            ]
            + ([f"{r['huge_mib']:.0f}" if r.get("huge_mib") is not None else "—"] if huge else [])
        )
    spread_col = ["CPU spread of compiles"] if repeated else []
    t1 = table(["workload", "nodes", *shown, "total s", "CPU s", "GC", "CPU µs/node", *spread_col], trows)
    huge_col = ["in huge pages at the end"] if huge else []
    t2 = table(["workload", "nodes", *shown, "peak MiB", "KiB/node above start", *huge_col], mrows)
    # linearity: CPU time per node at each size relative to each smaller one, in total and per stage
    lrows = []
    totals: list[tuple[float, str, tuple[int, int]]] = []  # the default pages' total ratios, for the goal line
    sampled = any("samples" in r for r in runs)
    for w, pages in [(w, pages) for pages in ("small", "huge") for w in synthetic.WORKLOADS]:
        ok = [r for r in runs if r["workload"] == w and r.get("pages", "small") == pages and "error" not in r]
        if any(not r.get("verify", True) for r in ok):  # compare like with like: the verifier is ~10% of a run
            ok = [{**r, "stages": {k: v for k, v in r["stages"].items() if k != "verify"}} for r in ok]
        if len(ok) < 2:
            continue
        for base, r in [(a, b) for i, a in enumerate(ok) for b in ok[i + 1 :]]:
            per = []
            for s in shown:
                a, b = base["stages"].get(s), r["stages"].get(s)
                per.append(
                    f"{(b['cpu'] / r['nodes']) / (a['cpu'] / base['nodes']):.2f}" if a and b and a["cpu"] > 0 else "—"
                )
            tot_a = sum(s["cpu"] for s in base["stages"].values()) / base["nodes"]
            tot_b = sum(s["cpu"] for s in r["stages"].values()) / r["nodes"]
            nogc_a = sum(s["cpu"] - s["gc"] for s in base["stages"].values()) / base["nodes"]
            nogc_b = sum(s["cpu"] - s["gc"] for s in r["stages"].values()) / r["nodes"]
            mem = (net_peak(r) / r["nodes"]) / (net_peak(base) / base["nodes"]) if net_peak(base) > 0 else float("nan")
            pair = f"{w} {r['size'] // 1000}k vs {base['size'] // 1000}k"
            if pages == "small":
                totals.append((tot_b / tot_a, pair, (base["size"], r["size"])))
            rounds = []
            if sampled:
                nodes = (base["nodes"], r["nodes"])
                least = (r["cpu_least"] / r["nodes"]) / (base["cpu_least"] / base["nodes"])
                rounds = [_range(paired_ratios(base, r, "cpu", nodes)), f"{least:.2f}"]
            lrows.append(
                [
                    pair
                    + (" (huge pages)" if pages == "huge" else "")
                    + ("" if r.get("verify", True) else " (verify left out)"),
                    *per,
                    f"**{tot_b / tot_a:.2f}**",
                    *rounds,
                    f"{nogc_b / nogc_a:.2f}",
                    f"{mem:.2f}",
                ]
            )
    sampled_cols = ["total, paired by round", "total, least of the compiles"] if sampled else []
    t3 = (
        table(["sizes", *shown, "total", *sampled_cols, "total without GC", "peak memory"], lrows)
        if lrows
        else "(one size only: no ratio)"
    )
    if totals:
        worst = max(totals)
        met = sum(1 for x, *_ in totals if x <= LINEAR_GOAL)
        walks = {
            r["size"]: r["walk"]
            for r in data.get("reference", [])
            if "error" not in r and r.get("pages", "small") == "small"
        }
        small, large = worst[2]
        walk = (
            f"; the machine's reference walk {walks[large] / walks[small]:.2f}" if {small, large} <= set(walks) else ""
        )
        t3 += (
            f"\n\nGoal: CPU time per node within ~10% of every smaller size's (total at most {LINEAR_GOAL:.2f}): "
            f"**{'met' if met == len(totals) else 'not met'}**, {met} of {len(totals)} pairs of sizes within it "
            f"(highest {worst[0]:.2f}, {worst[1]}{walk})."
        )
    rrows = []
    repeated_ref = any(len(_samples(r, "walk")) > 1 for r in data.get("reference", []))
    for pages in ("small", "huge"):
        ref = [r for r in data.get("reference", []) if "error" not in r and r.get("pages", "small") == pages]
        rrows += [
            [
                f"{r['size'] // 1000}k vs {a['size'] // 1000}k" + (" (huge pages)" if pages == "huge" else ""),
                *(f"{r[k] / a[k]:.2f}" for k in ("build", "walk", "copy")),
                *([_range(paired_ratios(a, r, "walk", (1.0, 1.0)))] if sampled else []),
                f"{r['walk']:.2f}",
                *([_spread(_samples(r, "walk"))] if repeated_ref else []),
            ]
            for i, a in enumerate(ref)
            for r in ref[i + 1 :]
        ]
    if rrows:
        t3 += (
            "\n\nThe machine's own scaling, measured in the same run (`worker_reference`: no project code, a "
            "trivially linear pure-Python workload over as many linked objects as the graph has nodes; the same "
            "ratio of CPU µs per element). What grows here comes from the memory hierarchy, not from an "
            "algorithm, and bounds how linear Python code that walks a graph of that size can look:\n\n"
            + table(
                ["sizes", "build", "walk (peers + dict reads)", "copy"]
                + (["walk, paired by round"] if sampled else [])
                + ["walk µs/element"]
                + (["walk spread of runs"] if repeated_ref else []),
                rrows,
            )
        )
    repeat = data.get("repeat", 1)
    if sampled:
        order = ", ".join(f"{s // 1000}k" for s in round_order(data.get("sizes", [])))
        best = (
            f" The graphs were compiled in {repeat} round{'s' if repeat > 1 else ''}, each compile in a fresh "
            f"process; a round runs the reference walk and then every workload at the sizes in the order {order} "
            "(each smaller size just before and just after each larger one), so every size is measured throughout "
            "the run; every stage's figures are the mean over its compiles (the smaller sizes twice a round), its "
            "peak the highest; *CPU spread of compiles* is (most − least) / least total CPU seconds of a graph's "
            "compiles."
        )
    else:
        best = ""
    return (
        "Time per stage (wall seconds; total also in CPU seconds, with the share spent in Python's cyclic GC)."
        + best
        + "\n\n"
        + t1
        + "\n\nPeak RSS during each stage (MiB; the peak is reset at every stage start):\n\n"
        + t2
        + "\n\nLinearity: CPU time per node at the larger size divided by the same at the smaller size, for "
        "every pair of sizes (1.00 = perfectly linear; the goal is within ~10%, i.e. at most 1.10; where the "
        "smaller graph's whole compile fits in the CPU's last-level cache and the larger one's does not, the ratio "
        "also measures the cache, see the findings); "
        + (
            "*total* divides the two sizes' mean CPU time per node; *paired by round* divides them round by round "
            "(least–most over the rounds), to show how far the host's drift moves the ratio; *least of the "
            "compiles* divides the two sizes' least CPU time per node, the estimate of the runs before the rounds, "
            "biased upwards by a short compile's fast moments; "
            if sampled
            else ""
        )
        + "*total without GC* leaves out the "
        "time in Python's cyclic garbage collector; *peak memory* compares the peak above the interpreter's own "
        "RSS per node:\n\n" + t3 + _huge_pages_note(data)
    )


def _samples(record: dict[str, Any], key: str) -> list[float]:
    """A scale run's (`cpu`: total CPU seconds) or a reference walk's (`walk`: µs per element) figure, run by run."""
    return [s[key] for s in record.get("samples", [])]


def _spread(xs: Sequence[float]) -> str:
    """(most - least) / least of repeated measurements, as a percentage; a dash for fewer than two."""
    return f"{100 * (max(xs) - min(xs)) / min(xs):.0f}%" if len(xs) > 1 and min(xs) > 0 else "—"


def _run_label(r: dict[str, Any]) -> str:
    """A scale run's name: workload, size and, for the huge-pages mode, that."""
    return f"{r['workload']} {r['size'] // 1000}k" + (" (huge pages)" if r.get("pages") == "huge" else "")


def _huge_pages_note(data: dict[str, Any]) -> str:
    if data.get("huge_pages_unavailable"):
        return f"\n\nNo huge-pages runs: {data['huge_pages_unavailable']}."
    if not any(r.get("pages") == "huge" for r in data["runs"]):
        return ""
    return (
        "\n\n*(huge pages)*: the same graph compiled once more by the same code with every allocation through "
        "glibc's malloc backed by 2 MiB transparent huge pages (`PYTHONMALLOC=malloc "
        "GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, run with `--huge-pages`; *in huge pages at the end* is the "
        "process's `AnonHugePages`, MiB). The default runs use CPython's small-object allocator, whose arenas "
        "are in 4 KiB pages. The two modes differ in the allocator and in the page size, not in the code or "
        "the work it does (the *work* table's calls); what grows in one mode and not in the other is the memory "
        "system's: translating addresses through 4 KiB page tables on a larger heap, and where the allocator "
        "puts objects."
    )


# ---- 3. memory quality -------------------------------------------------------------------------------------
@contextlib.contextmanager
def timed_planners() -> Iterator[dict[str, float]]:
    """Time the offset planner and the greedy baseline inside assign_memory (module attributes wrapped)."""
    from rulepass.compiler.memory import assign as assign_mod

    acc = {"plan": 0.0, "greedy_best_fit": 0.0}
    originals = {k: getattr(assign_mod, k) for k in acc}

    def wrap(name: str) -> Callable[..., Any]:
        fn = originals[name]

        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                acc[name] += time.perf_counter() - t0

        return timed

    for k in acc:
        setattr(assign_mod, k, wrap(k))
    try:
        yield acc
    finally:
        for k, fn in originals.items():
            setattr(assign_mod, k, fn)


def bench_memory(quick: bool, log: Callable[[str], None], sizes: Sequence[int] = ()) -> dict[str, Any]:
    """Planner vs lower bound vs greedy-by-size on every light model and the synthetic graphs (at 10k nodes,
    2k with `quick`, and at each larger size in `sizes`: where the planner's fixed search budgets run out, the
    table shows what that costs in arena size). Graphs above 10k nodes are planned once, not best of 3."""
    from rulepass.compiler.memory.assign import assign_memory
    from rulepass.compiler.memory.verify import verify_plan
    from rulepass.compiler.streams import assign_streams

    rules = load_rules()
    cases: list[tuple[str, Callable[[], ComputeGraph]]] = []
    for p in light_models():
        for fm in ("keep",) if quick else ("keep", "ascend"):
            cases.append((f"{model_name(p)} ({fm})", lambda p=p, fm=fm: load_graph(p, onnx_formats=fm)))
    small = 2_000 if quick else 10_000
    for n in sorted({small, *(s for s in sizes if s > small)}):
        for w in synthetic.WORKLOADS:
            cases.append((f"synthetic {w} {n // 1000}k", lambda w=w, n=n: synthetic.generate(w, n)))
    rows = []
    for label, make in cases:
        g = make()
        nodes = len(g.all_nodes())
        reps = 1 if quick or nodes > 10_000 else 3
        optimize(g, rules)
        events = assign_streams(g).event_pairs()
        out: dict[str, Any] = {"case": label, "nodes": nodes}
        for kind, baseline in (("plan", False), ("greedy", True)):
            best: float | None = None
            for _ in range(reps):
                with timed_planners() as acc:
                    t0 = time.perf_counter()
                    mp = assign_memory(g, events=events, baseline=baseline)
                    total = time.perf_counter() - t0
                if best is None or total < best:
                    best = total
                    inner = acc["greedy_best_fit" if baseline else "plan"]
            fm_arenas = [a for a in mp.arenas if a.region == "feature_map"]
            out[kind] = {
                "arena": sum(a.size for a in fm_arenas),
                "lower_bound": sum(a.lower_bound for a in fm_arenas),
                "buffers": sum(a.units for a in fm_arenas),
                "strategy": ", ".join(sorted({a.strategy for a in fm_arenas})),
                "assign_s": best,
                "offsets_s": inner,
                "safe": not verify_plan(g, mp, events=events),
            }
        rows.append(out)
        del g, mp, events  # the next (maybe a million-node) graph is made without this one alive
        p, gr = out["plan"], out["greedy"]
        log(
            f"  memory: {label}: plan {fmt_bytes(p['arena'])} (lb {fmt_bytes(p['lower_bound'])}), "
            f"greedy {fmt_bytes(gr['arena'])}"
        )
    return {"rows": rows}


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.4f}" if b else "—"


def render_memory(data: dict[str, Any]) -> str:
    """The memory-quality table and a summary."""
    body = []
    for r in data["rows"]:
        p, g = r["plan"], r["greedy"]
        lb = p["lower_bound"]
        body.append(
            [
                r["case"],
                r["nodes"],
                p["buffers"],
                fmt_bytes(lb),
                fmt_bytes(p["arena"]),
                f"**{_ratio(p['arena'], lb)}**",
                fmt_bytes(g["arena"]),
                _ratio(g["arena"], lb),
                _ratio(p["arena"], g["arena"]),
                fmt_ms(p["offsets_s"]),
                fmt_ms(p["assign_s"]),
                fmt_ms(g["offsets_s"]),
                fmt_ms(g["assign_s"]),
                "yes" if p["safe"] and g["safe"] else "**NO**",
                p["strategy"],
            ]
        )
    t = table(
        [
            "graph",
            "nodes",
            "buffers",
            "lower bound",
            "planner arena",
            "planner / LB",
            "greedy arena",
            "greedy / LB",
            "planner / greedy",
            "planner ms",
            "assign ms",
            "greedy ms",
            "assign (greedy) ms",
            "safe",
            "strategy",
        ],
        body,
        "lrrrrrrrrrrrrll",
    )
    rows = data["rows"]
    at_lb = sum(1 for r in rows if r["plan"]["arena"] <= r["plan"]["lower_bound"])
    worse = [r["case"] for r in rows if r["plan"]["arena"] > r["greedy"]["arena"]]
    gains = [1 - r["plan"]["arena"] / r["greedy"]["arena"] for r in rows if r["greedy"]["arena"]]
    summary = (
        f"The planner reaches the lower bound on {at_lb} of {len(rows)} graphs; it is never larger than "
        f"greedy-by-size{'' if not worse else ' except on ' + ', '.join(worse)}; its largest gain over greedy is "
        f"{100 * max(gains, default=0):.1f}% of the greedy arena (median {100 * statistics.median(gains or [0]):.1f}%)."
    )
    by_size: dict[str, list[str]] = {}
    for r in rows:
        m = re.fullmatch(r"synthetic (\w+) (\d+k)", r["case"])
        if m is not None:
            lb = r["plan"]["lower_bound"]
            planner, greedy = _ratio(r["plan"]["arena"], lb), _ratio(r["greedy"]["arena"], lb)
            by_size.setdefault(m.group(1), []).append(f"{planner} ({m.group(2)}; greedy {greedy})")
    if any(len(v) > 1 for v in by_size.values()):
        summary += (
            " Planner / LB of the synthetic graphs as they grow: "
            + "; ".join(f"{w} {' → '.join(v)}" for w, v in by_size.items())
            + "."
        )
    return t + "\n\n" + summary


def bench_memplan(log: Callable[[str], None]) -> tuple[dict[str, Any] | None, str]:
    """The planner on the shared instances: `memplan_bench.py --json` in a subprocess; (its machine and rows, or
    None and why it failed)."""
    log("  memplan: running benchmarks/memplan_bench.py")
    script = HERE / "memplan_bench.py"
    proc = subprocess.run([sys.executable, str(script), "--json"], capture_output=True, text=True, check=False)
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None, f"memplan_bench.py exited with {proc.returncode}: {_last_line(proc.stderr)}"
    return data, ""


def render_memplan(data: dict[str, Any]) -> str:
    """The shared instances' table, as memplan_bench.py prints it."""
    return memplan_bench.markdown(data["instances"], data["machine"])


# ---- 4. savings ----------------------------------------------------------------------------------------------
def bench_savings(quick: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """Per light model: what the no-task passes save (memory, copies, tasks)."""
    rules = load_rules()
    off = no_task_passes(rules)
    rows = []
    for p in light_models():
        for fm in ("keep", "ascend"):
            g = load_graph(p, onnx_formats=fm)
            plain = g.copy()
            t0 = time.perf_counter()
            r = compile_graph(g, rules, baseline=True)
            t1 = time.perf_counter()
            base = compile_graph(plain, rules, disabled=off)
            concat = [d for d in r.optimize.decisions if d.rule == CONCAT]
            misses: dict[str, int] = {}
            for d in concat:
                if not d.fired:
                    misses[str(d.check)] = misses.get(str(d.check), 0) + 1
            m = r.memory
            row = {
                "model": model_name(p),
                "format": fm,
                "nodes": len(g.all_nodes()),
                "concats": len(concat),
                "fired": sum(1 for d in concat if d.fired),
                "misses": misses,
                "no_task": len(m.no_task_nodes),
                "tasks": len(r.tasks.tasks),
                "tasks_without": len(base.tasks.tasks),
                "fm": m.plan.total("feature_map"),
                "fm_without": m.baseline.total("feature_map"),
                "bytes_saved": m.bytes_saved,
                "copy_bytes_saved": m.copy_bytes_saved,
                "compile_s": t1 - t0,
            }
            rows.append(row)
            log(
                f"  savings: {row['model']} ({fm}): {row['fired']}/{row['concats']} concats, "
                f"{row['tasks_without'] - row['tasks']} tasks, {fmt_bytes(row['bytes_saved'])} saved"
            )
    return {"rows": rows, "passes": off}


def render_savings(data: dict[str, Any]) -> str:
    """The savings table."""
    body = []
    for r in data["rows"]:
        saved_tasks = r["tasks_without"] - r["tasks"]
        pct = f" ({100 * r['bytes_saved'] / r['fm_without']:.1f}%)" if r["fm_without"] else ""
        misses = ", ".join(f"{k} ×{v}" for k, v in sorted(r["misses"].items())) or "—"
        body.append(
            [
                r["model"],
                r["format"],
                r["nodes"],
                f"{r['fired']}/{r['concats']}",
                misses,
                r["no_task"],
                f"{r['tasks_without']} → {r['tasks']}",
                f"**{saved_tasks}**"
                + (f" ({100 * saved_tasks / r['tasks_without']:.1f}%)" if r["tasks_without"] else ""),
                f"{fmt_bytes(r['fm_without'])} → {fmt_bytes(r['fm'])}",
                f"**{fmt_bytes(r['bytes_saved'])}**{pct}",
                fmt_bytes(r["copy_bytes_saved"]),
            ]
        )
    t = table(
        [
            "model",
            "formats",
            "nodes",
            "concats fired",
            "misses (check)",
            "no-task nodes",
            "tasks without → with",
            "tasks saved",
            "feature map without → with",
            "bytes saved",
            "copy bytes avoided",
        ],
        body,
        "llrrlrrrrrr",
    )
    rows = data["rows"]
    tot_tasks = sum(r["tasks_without"] - r["tasks"] for r in rows)
    tot_copy = sum(r["copy_bytes_saved"] for r in rows)
    return (
        t + f"\n\nOver the {len(rows)} model variants: {tot_tasks} tasks and {fmt_bytes(tot_copy)} of copies avoided; "
        f"no-task passes compared: {', '.join(data['passes'])}."
    )


# ---- the document ------------------------------------------------------------------------------------------
INTRO = """# Benchmarks

Generated by `benchmarks/run.py` from the figures in `benchmarks/results.json`: do not edit by hand, run

```sh
python benchmarks/run.py                       # every benchmark; scale and work at 10k and 100k nodes (rewrites it)
python benchmarks/run.py --max-nodes 1000000   # scale and work up to 1M nodes too (about two hours)
python benchmarks/run.py --only work --max-nodes 1000000  # calls counted per stage up to 1M (about 30 minutes)
python benchmarks/run.py --quick               # a smoke run (small sizes, fewer repetitions), prints only
python benchmarks/run.py --only engine,memory  # some sections; the others keep their last figures
python benchmarks/run.py --only backends       # generated code against the closures on every rule pass (minutes)
python benchmarks/run.py --profile             # also profile the largest scale run of every workload
python benchmarks/run.py --only scale --max-nodes 1000000 --huge-pages  # scale in both page sizes (about 50 minutes)
python benchmarks/run.py --only scale --max-nodes 1000000 --repeat 3  # 3 rounds of every size, means compared (~70 min)
python benchmarks/run.py --only models         # the real models of tests/data/models end to end (seconds)
python benchmarks/run.py --only latency        # command latency, whole processes (about a minute)
python benchmarks/run.py --render              # rewrite this page from benchmarks/results.json only
```

Each section names the command and the machine it was measured with. Quote the ratios (engine / hand-written,
time per node against a smaller size, arena against the lower bound): they are measured within one run and
carry over between machines; absolute times do not. The machine is a shared 2-core VM, so absolute times
also vary with what else runs on it (the load average at the start of each run is recorded).
"""

ENGINE_TEXT = """## 1. Engine overhead: the Concat rule file versus hand-written Python

What it measures: `rules/concat_notask.yaml` (with the shared checks of `rules/notask_base.yaml` it uses) run by the
rule engine against `benchmarks/handwritten_concat.py`, a plain-Python ConcatNotaskPass with exactly the same checks
(spec §2.2–§2.4, §3) in GE's order and the same actions, written for speed (inlined attribute reads, one ref trace
per input, transfer tables cached per format pair). Both run on fresh copies (`graph.copy()`) of the same graph,
with the topological order computed beforehand (both need it and it is cached on the graph, so it is not part of the
comparison); the other rule passes are disabled. *engine* drives the pass manager (`build_pass_manager`, built once)
as `compile` does: every candidate gets its decision record (fired, or the failing check, its path, the elements and
any error), without the explanation; *engine + explanations* also builds the explanation (`reason`: the failing
sub-expression, its span and values) of every miss, as `optimize` and `explain` do; *api.optimize* is that library
call itself, with explanations (it looks up the pass manager it keeps for the rule set, level and disabled passes,
built on its first call). The engine runs each rule's generated decision function (`dsl/codegen`); the closures
are the reference it falls back to. Repetitions are interleaved (engine, explained, api, hand-written pass,
hand-written function; then reversed), each sample runs a batch of copies (≥ 5 ms of hand-written work) with the
cyclic GC off (as `timeit` does) and is timed in process CPU time (the machine is shared); the table shows the least
of the samples (the noise on this shared machine only ever adds time, so the least is the steadiest estimate, as
`timeit` advises), per graph (all files together for the fixtures), and beside the figure the ratio of the medians,
to show the spread. The hand-written pass is timed twice: as a *pass*, in the rule pass's place in the same pass
manager (`handwritten_concat.as_pass`: a Python pass with the rule's name, levels and order, run on the root graph
and every subgraph as the rule is), and as the bare *function* `concat_notask_pass`. How to read it: *engine /
hand-written pass* is the figure (goal ≤ 1.2): the rule file against the same checks written in Python, each run as
`compile` would run it, so the pass manager's own cost (gates, reports, the subgraph walk), which either pays, is
not counted against the engine. *engine / hand-written function* counts it against the engine (the figure of the
runs up to the sixth session); on the graphs without a concat that cost is most of the difference. *identical* says
that all five produced the same decision for every candidate (fired, or the same failing check and check path, in
the same order) and left the same attributes on every node and output desc. The hand-written pass records the
failing check only, so the engine is timed without explanations too; *explained / hand-written pass* shows what the
explanations cost on top. *bytecodes engine / hand-written pass* counts the Python bytecode instructions each side
executes in one run over fresh copies of the same graphs (`sys.settrace` opcode events, every frame; a builtin or C
function counts as the instruction calling it): the same figure on every run, where a time ratio moves by up to ±20%
a graph from process to process on this shared machine (best sample or median). It weighs every instruction alike (a
`dict.get` call counts one, as a local's read does), so it is a steady proxy for the work, not the figure; `python
benchmarks/instructions.py` counts machine instructions inside the runs instead (valgrind's callgrind), weighed as
the CPU weighs them: two runs of the same code agree to 0.02%, and the heap the runs find (how many copies were
made) moves the ratio by 1-3% (see the findings). """

SCALE_TEXT = """## 2. Scale: synthetic workloads at 10k, 100k and 1M nodes

What it measures: `benchmarks/synthetic.py` builds three graph shapes — `llm` (tensor-parallel transformer
layers: AllGather'd Q/K/V shards concatenated on axis 0, a fused gate/up concat on axis 1 that cannot be
zero-copy, ReduceScatter / AllReduce; 32 nodes a layer), `split` (SplitD → ReLU/Sigmoid/Mul → ConcatD → Gelu
pipelines; 15–16 nodes a block) and `cnn` (Inception-style blocks in NC1HWC0 with FRACTAL_Z weights, four
branches concatenated on C; 16 nodes a block). For every size a subprocess generates the graph and saves it as
a JSON graph file; a fresh subprocess then runs the real pipeline on it: `load_graph` (*load*), `compile_graph`
(its stages: the baseline *copy* of the graph, *passes*, *streams*, *memory*, *verify*, *baseline memory* =
passes, streams and memory again without the no-task passes, *tasks*, *model*) and writing the model file
(*write*). The rule files are loaded (and a small graph compiled) before the measurement starts.
How to read it: per stage the wall time, and its peak RSS (Linux `VmHWM`, reset at the start of every stage,
so each figure is that stage's own peak). CPU time is used for the linearity ratios, because it is less
disturbed by other processes on the machine than wall time; a ratio above 1.10 marks a stage that grows faster
than the number of nodes. The graphs are generated first and then compiled in rounds (`--repeat N`, one by
default): a round takes every workload through the sizes up and back down (10k, 100k, 1M, 100k, 10k), so every
size is measured throughout the run and the host's drifting speed (a fifth over minutes on this shared VM) falls
on all sizes alike; each figure is the mean over a graph's compiles. Each round starts by measuring the machine's
own scaling: a trivially linear pure-Python workload (no project code) over as many linked objects as the graph
has nodes, whose CPU time per element grows only because a larger heap misses the caches more often (the last
table of each run).
With `--huge-pages`, every graph and the reference walk run a second time in a process whose heap is in 2 MiB
transparent huge pages instead of 4 KiB pages (the rows marked *(huge pages)*): the same code doing the same
work, so the two modes' ratios side by side separate what grows in the code from what grows in the memory system.
"""

WORK_TEXT = """### Work: calls counted per stage

What it measures: the same workloads and sizes, each compiled once more in a fresh subprocess under Python's
`cProfile`, which counts every call a stage makes (Python functions and builtins such as `len` or `dict.get`;
work done inside one builtin call, such as `json.loads` in *load* or a sort, counts once). How to read it: a
call count does not depend on the caches, so where calls per node stay flat from size to size (ratio 1.00) the
code is linear, and what CPU time per node gains beyond that is the memory hierarchy's, which the machine's
reference walk measures on its own. A stage making less than a call a node (*write*: the model text, encoded in
C, written in one call) has no growth to show (—). The profiler's own cost makes these runs slower; their times
are not used.
"""

MEMORY_TEXT = """## 3. Memory quality: planner versus lower bound and greedy-by-size

What it measures: for every light model (ONNX formats kept as they are, and converted to Ascend storage formats
with TransData) and the synthetic graphs, the graph is optimised (all rules) and given streams; then
`assign_memory` plans the feature-map arena with the offset planner (`compiler/memory/planner.py: plan`), and
again with `baseline=True` (greedy by size, first fit: `greedy_best_fit`). The lower bound is the largest total
size live at one step. How to read it: *planner / LB* = 1.0000 is optimal; *planner / greedy* below 1 is what
the planner gains over the usual heuristic. *planner ms* / *greedy ms* time the offset placement alone,
*assign ms* the whole `assign_memory` (schedule, lifetimes, layouts, placement); best of 3 (one run for a graph
above 10k nodes). *safe*: the independent verifier (`verify_plan`) finds no violation in either plan. The
synthetic graphs are planned at 10k nodes and, when the run is given `--max-nodes`, at every larger size up to
it: some of the planner's budgets are fixed (`PAIR_LIMIT`, the exact search's work units; the greedy portfolio's
grows with the buffers), which a larger graph can run out of, and those rows show what that costs in arena size.
"""

MEMPLAN_TEXT = """### Planner on the shared instances (`benchmarks/memplan_bench.py`)

What it measures: the offset planner (`plan`) and greedy-by-size (`greedy_best_fit`) on every buffer trace of
`../shared/data/memplan` (the MiniMalloc and IOPDDL benchmark instances, adversarial and real) and a seeded
synthetic 100,000-buffer trace, both placements checked by `check_placement`. How to read it: *planner / LB* as in
the table above; *time ratio* is planner seconds over baseline seconds in the same run (best of up to 3).
"""

SAVINGS_TEXT = """## 4. What the optimisation buys on real models

What it measures: every light model compiled twice with `compile_graph`, with and without the passes tagged
`no-task` (Concat, Pack and Split no-task passes): *tasks* are the model's tasks, *feature map* the
feature-map arena, *bytes saved* = `MemoryResult.bytes_saved`, *copy bytes avoided* = `copy_bytes_saved` (the
bytes the virtual concats no longer copy), *no-task nodes* the nodes made virtual. *misses* names the check
the concats that stayed copies failed. How to read it: every no-task node is a kernel launch saved; the arena
can stay the same (the peak is elsewhere) or even grow slightly, since a zero-copy group must be live as one
block from its first producer on.
"""


MODELS_TEXT = """## 5. Real models end to end

What it measures: every model of the corpus in `tests/data/models` (small torch / torchvision / transformers
models with random weights, exported to ONNX by `scripts/make_model_corpus.py`; versions below), in both format
modes, through the stages of `benchmarks/real_models.py`: *import*, *compile* (`compile_graph`, and again with
the no-task passes off), *run* (`run_model` of both on the stored seeded inputs), *no-task* (the two runs'
outputs bit-identical) and *oracle* (max |out − onnxruntime's| ≤ 1e-3 × max(1, max |ref|)). *zero-copy* counts
the no-task candidates made virtual, *copies saved* the bytes they no longer copy, *arena* the feature-map
memory planned (the model's peak), *compile s* one `compile_graph`; *unknown shapes; ops without a kernel* are
read off the imported graph: what compile and run will still miss after the first failure. How to read it: a
row is done when it says **passed**; otherwise *fails at* names the first stage that failed and the first line of
its error (the figures of the stages before it are still measured), and the count under the table is the goal's
distance.
"""

LATENCY_TEXT = """## 6. Command latency: the edit loop, whole processes (`benchmarks/cli_latency.py`)

What a rule author waits for: each command a fresh `python -m rulepass` process on the bundled example graph,
CPU time (user + system of the child) per run, the commands interleaved round after round, the median of the
rounds and its ratio to `python -c pass` in the same rounds (bytecode warm, as installed). *cold* runs with an
empty cache folder, as the first command after installing or after any change to the rules or to rulepass;
*warm* with the cache filled by an earlier command (see `dsl/cache.py`): the rule files' parsed expressions and
schema check, and what `validate` found of the whole set. The targets are issue 39's; quote the ratios, the
absolute figures move with the machine and its load.
"""


def render_doc(results: dict[str, Any]) -> str:
    """docs/benchmarks.md from the stored results."""
    parts = [INTRO]

    def meta(sec: dict[str, Any]) -> str:
        return f"Measured with `{sec['command']}` on: {machine_line(sec['machine'])}.\n"

    if "engine" in results:
        sec = results["engine"]
        parts += [ENGINE_TEXT, meta(sec), render_engine(sec["data"]), ""]
    if "backends" in results:
        sec = results["backends"]
        parts += [backends.TEXT, meta(sec), backends.render(sec["data"], table, geomean), ""]
    if "scale" in results or "scale_largest" in results:
        parts.append(SCALE_TEXT)
        for key, title in (("scale_largest", "Largest run on record"), ("scale", "Latest run")):
            if key not in results:
                continue
            if key == "scale" and "scale_largest" in results and results["scale_largest"] == results["scale"]:
                continue
            sec = results[key]
            sizes = ", ".join(f"{s // 1000}k" for s in sec["data"]["sizes"])
            parts += [f"### {title} (sizes {sizes})\n", meta(sec), render_scale(sec["data"]), ""]
            profiles = sec["data"].get("profiles") or {}
            for name, text in profiles.items():
                parts += [
                    f"<details><summary>cProfile of the {name} compile</summary>\n",
                    "```",
                    text,
                    "```",
                    "</details>\n",
                ]
    if "work" in results:
        sec = results["work"]
        scale = results.get("scale_largest") or results.get("scale")
        parts += [WORK_TEXT, meta(sec), render_work(sec["data"], scale["data"] if scale else None), ""]
    if "memory" in results:
        sec = results["memory"]
        parts += [MEMORY_TEXT, meta(sec), render_memory(sec["data"]), ""]
    if "memplan" in results:
        sec = results["memplan"]
        parts += [MEMPLAN_TEXT, meta(sec), render_memplan(sec["data"]), ""]
    if "savings" in results:
        sec = results["savings"]
        parts += [SAVINGS_TEXT, meta(sec), render_savings(sec["data"]), ""]
    if "models" in results:
        sec = results["models"]
        versions = ", ".join(f"{k} {v}" for k, v in sorted(sec["data"]["versions"].items()))
        parts += [
            MODELS_TEXT,
            meta(sec),
            f"Corpus made with {versions}.\n",
            real_models.render(sec["data"]["rows"]),
            "",
        ]
    if "latency" in results:
        sec = results["latency"]
        parts += [LATENCY_TEXT, meta(sec), cli_latency.render(sec["data"]), ""]
    parts += [f.read_text(encoding="utf-8").rstrip() + "\n" for f in HAND_RUN if f.exists()]
    if FINDINGS.exists():  # the analysis behind these figures stays beside the benchmarks, not on this page
        parts += [
            "## Findings",
            "",
            "How figures were obtained, profiles, slow spots and suspected bugs: "
            "[benchmarks/findings.md](../benchmarks/findings.md).",
            "",
        ]
    return "\n".join(parts).rstrip() + "\n"


def load_results() -> dict[str, Any]:
    """The stored results (empty when there are none)."""
    try:
        data = json.loads(RESULTS.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, json.JSONDecodeError):
        return {}


# ---- main ----------------------------------------------------------------------------------------------------
def _worker_main(argv: list[str]) -> int:
    kind = argv[0]
    if kind == "generate":
        result = worker_generate(argv[1], int(argv[2]), argv[3])
    elif kind == "reference":
        result = worker_reference(int(argv[1]))
    elif kind == "compile":
        verify = "--no-verify" not in argv
        rest = [a for a in argv[1:] if a not in ("--no-verify", "--count-calls")]
        result = worker_compile(rest[0], rest[1], rest[2] if len(rest) > 2 else None, verify, "--count-calls" in argv)
    else:
        raise SystemExit(f"unknown worker {kind!r}")
    print(json.dumps({"result": result}), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--worker"]:
        return _worker_main(args_list[1:])
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
    args = parser.parse_args(args_list)
    if args.render:
        DOC.write_text(render_doc(load_results()), encoding="utf-8")
        return 0
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, not {args.repeat}")
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = sorted(set(only) - set(SECTIONS))
    if bad:
        parser.error(f"unknown section(s) {', '.join(bad)}; expected some of {', '.join(SECTIONS)}")
    why = memplan_bench.missing_data() if "memplan" in only else None
    if why:  # before any work: the other sections take an hour
        parser.error(f"the memplan section has nothing to measure: {why}; leave it out with --only")
    write = (args.write or not args.quick) and not args.no_write
    failures: list[str] = []
    command = "python benchmarks/run.py" + (f" {shlex.join(args_list)}" if args_list else "")
    m = machine()
    print(f"machine: {machine_line(m)}", file=sys.stderr)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    fresh: dict[str, Any] = {}

    def record(key: str, data: dict[str, Any]) -> dict[str, Any]:
        fresh[key] = {"command": command, "machine": m, "quick": args.quick, "data": data}
        return fresh[key]

    out: list[str] = [f"machine: {machine_line(m)}", f"command: `{command}`", ""]
    if "engine" in only:
        log("1. engine overhead")
        sec = record("engine", bench_engine(args.quick, log))
        out += ["## 1. Engine overhead", "", render_engine(sec["data"]), ""]
    if "backends" in only:
        log("1b. back-ends")
        reps = 3 if args.quick else 7
        sec = record(
            "backends", backends.bench(load_rules(), engine_cases(args.quick), warm, count_bytecodes, log, reps)
        )
        out += ["## 1b. Back-ends", "", backends.render(sec["data"], table, geomean), ""]
    sizes = [s for s in (QUICK_SIZES if args.quick else DEFAULT_SIZES) if s <= args.max_nodes]
    sizes = sizes or [min(args.max_nodes, 1000)]  # the scale and work sections' graph sizes
    if "scale" in only:
        log("2. scale")
        sec = record("scale", bench_scale(sizes, args.profile, log, args.huge_pages, args.repeat))
        out += ["## 2. Scale", "", render_scale(sec["data"]), ""]
        for name, text in sec["data"]["profiles"].items():
            out += [f"cProfile of the {name} compile:", "```", text, "```", ""]
    if "work" in only:
        log("2b. work (calls counted)")
        sec = record("work", bench_work(sizes, log))
        out += ["## 2b. Work", "", render_work(sec["data"], fresh.get("scale", {}).get("data")), ""]
    if "memory" in only:
        log("3. memory quality")
        sec = record("memory", bench_memory(args.quick, log, sizes))
        out += ["## 3. Memory quality", "", render_memory(sec["data"]), ""]
    if "memplan" in only:
        log("3b. memory planner on the shared instances")
        plans, err = bench_memplan(log)
        if plans is None:  # not stored: the page keeps the last figures
            failures.append(f"memplan: {err}")
        else:
            sec = record("memplan", plans)
            out += ["## 3b. Shared instances", "", render_memplan(plans), ""]
            if not all(r["valid"] for r in plans["instances"]):
                failures.append("memplan: a placement is not valid (the table's *valid* column)")
    if "savings" in only:
        log("4. savings")
        sec = record("savings", bench_savings(args.quick, log))
        out += ["## 4. Savings", "", render_savings(sec["data"]), ""]
    if "models" in only:
        log("5. real models")
        sec = record("models", real_models.bench_models(log))
        out += ["## 5. Real models", "", real_models.render(sec["data"]["rows"]), ""]
    if "latency" in only:
        log("6. command latency")
        sec = record("latency", cli_latency.bench(3 if args.quick else 7))
        out += ["## 6. Command latency", "", cli_latency.render(sec["data"]), ""]
    print("\n".join(out))
    if write:
        results = load_results()  # another run may have stored a section meanwhile
        results.update(fresh)
        if "scale" in fresh:
            largest = results.get("scale_largest")
            if largest is None or max(fresh["scale"]["data"]["sizes"]) >= max(largest["data"]["sizes"]):
                results["scale_largest"] = fresh["scale"]
        RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        DOC.write_text(render_doc(results), encoding="utf-8")
        log(f"wrote {RESULTS.relative_to(ROOT)} and {DOC.relative_to(ROOT)}")
    engine = fresh.get("engine")
    if engine and not all(r["identical"] for r in engine["data"]["rows"]):
        failures.append("the engine and the hand-written pass disagree")
    for failure in failures:
        log(f"error: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
