"""What the benchmark sections share: paths, the machine record, and the measuring and formatting helpers."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rulepass.compiler.ir import ComputeGraph
from rulepass.compiler.render.svg import binary_unit

HERE = Path(__file__).resolve().parent.parent  # benchmarks/
ROOT = HERE.parent
DOC = ROOT / "docs" / "benchmarks.md"
RESULTS = HERE / "results.json"
CONCAT = "ConcatNotaskPass"
MiB = 1 << 20


# ---- machine -------------------------------------------------------------------------------------------------
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


# ---- formatting ----------------------------------------------------------------------------------------------
def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A markdown table; `align` has one letter per column (l/r), right by default for all but the first."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(str(h) for h in headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def fmt_bytes(n: float) -> str:
    """Bytes with a binary unit."""
    unit = binary_unit(n)
    return f"{int(n)} B" if unit is None else f"{unit[0]:.2f} {unit[1]}B"


def fmt_ms(seconds: float) -> str:
    """Milliseconds with 3 significant digits."""
    ms = seconds * 1000
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def geomean(xs: Sequence[float]) -> float:
    """Geometric mean of positive numbers."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def mean(xs: Sequence[float]) -> float:
    """Arithmetic mean of a non-empty sequence."""
    return sum(xs) / len(xs)


# ---- graphs and measuring ------------------------------------------------------------------------------------
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


def last_line(stderr: str) -> str:
    """What a failed subprocess said last (its error, for a Python traceback)."""
    return (stderr.strip().splitlines() or ["(no output)"])[-1]
