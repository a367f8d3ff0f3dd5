"""Benchmark of the offset planner (compiler/memory/planner.py) on the public memory-planning instances.

Exists to show, in one run on one machine, how close `plan` gets to the lower bound and what it costs next to
the plain greedy baseline (`greedy_best_fit`): for every CSV in tests/data/memplan (or the folder
RULEPASS_MEMPLAN_DATA names) and a seeded synthetic 100,000-buffer instance it prints buffers, lower bound,
both arenas and their ratios to the bound, both times and the ratio of times, plus the machine it ran on.
Times are only compared within this run. Usage: ``python benchmarks/memplan_bench.py [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rulepass.compiler.memory.planner import (
    DEFAULT_BUDGET_S,
    WORK_PER_SECOND,
    Buffer,
    Placement,
    check_placement,
    greedy_best_fit,
    plan,
    read_csv,
)

ROOT = Path(__file__).resolve().parents[1]
# The public instances, copied into the repository with their licences; a bigger folder of the same CSV format
# (for example ../shared/data/memplan, or traces of your own) is read instead when RULEPASS_MEMPLAN_DATA names it.
DATA = Path(os.environ.get("RULEPASS_MEMPLAN_DATA") or ROOT / "tests" / "data" / "memplan")
SYNTHETIC_BUFFERS = 100_000
SYNTHETIC_SEED = 2024


def synthetic(n: int = SYNTHETIC_BUFFERS, seed: int = SYNTHETIC_SEED) -> list[Buffer]:
    """A seeded inference-like trace: 97% short-lived, 2.95% skip connections, 0.05% long-lived buffers."""
    rng = random.Random(seed)
    steps = n * 3 // 5
    out = []
    for i in range(n):
        u = rng.random()
        first = rng.randrange(steps)
        if u < 0.0005:
            first = rng.randrange(steps // 4)
            last = steps - 1 - rng.randrange(steps // 4)
        elif u < 0.03:
            last = min(steps - 1, first + rng.randrange(8, 300))
        else:
            last = min(steps - 1, first + rng.randrange(0, 8))
        size = (int(2 ** rng.uniform(9, 22)) + 511) // 512 * 512
        out.append(Buffer(f"t{i}", first, last, size))
    return out


def instances() -> list[Path]:
    """The shared instances measured: every CSV in `DATA`, by name."""
    return sorted(DATA.glob("*.csv"))


def missing_data() -> str | None:
    """Why the shared instances cannot be measured (the folder is missing or holds no CSV), or None."""
    if not DATA.is_dir():
        return f"{DATA}: no such folder (set RULEPASS_MEMPLAN_DATA to a folder of memory-planning CSV instances)"
    if not instances():
        return f"{DATA}: no CSV instance in the folder (expected the shared memory-planning instances, *.csv)"
    return None


def timed(fn: Callable[[], Placement]) -> tuple[Placement, float]:
    """Run ``fn`` (up to 3 times while under a second in all) and return its result and best time."""
    best = float("inf")
    spent = 0.0
    result = None
    for _ in range(3):
        t0 = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - t0
        best = min(best, elapsed)
        spent += elapsed
        if spent > 1.0:
            break
    assert result is not None
    return result, best


def measure(name: str, buffers: list[Buffer]) -> dict[str, Any]:
    """One row: the planner and the baseline on ``buffers``, both checked for validity."""
    placement, plan_s = timed(lambda: plan(buffers))
    baseline, base_s = timed(lambda: greedy_best_fit(buffers))
    lb = placement.lower_bound
    return {
        "instance": name,
        "buffers": len(buffers),
        "lower_bound": lb,
        "baseline_arena": baseline.arena,
        "baseline_ratio": baseline.arena / lb if lb else 1.0,
        "planner_arena": placement.arena,
        "planner_ratio": placement.arena / lb if lb else 1.0,
        "planner_s": plan_s,
        "baseline_s": base_s,
        "time_ratio": plan_s / base_s if base_s else float("inf"),
        "strategy": placement.strategy,
        "exact_work": placement.exact_work,
        "valid": not check_placement(buffers, placement.offsets) and not check_placement(buffers, baseline.offsets),
    }


def machine() -> dict[str, Any]:
    """Where the numbers were measured."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
    }


def markdown(rows: list[dict[str, Any]], env: dict[str, Any]) -> str:
    """The rows as a markdown table, with the machine and the budget underneath."""
    head = (
        "| instance | buffers | lower bound | baseline arena | baseline / LB | planner arena | planner / LB "
        "| planner s | baseline s | time ratio | valid |"
    )
    rate = env.get("work_per_second", 10_000_000)  # the rate of runs recorded before it was stored
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        valid = "yes" if r["valid"] else "NO"
        lines.append(
            f"| {r['instance']} | {r['buffers']:,} | {r['lower_bound']:,} | {r['baseline_arena']:,} "
            f"| {r['baseline_ratio']:.4f} | {r['planner_arena']:,} | {r['planner_ratio']:.4f} "
            f"| {r['planner_s']:.3f} | {r['baseline_s']:.3f} | {r['time_ratio']:.1f} | {valid} |"
        )
    at_lb = sum(1 for r in rows if r["planner_arena"] == r["lower_bound"])
    worse = sum(1 for r in rows if r["planner_arena"] > r["baseline_arena"])
    lines += [
        "",
        f"Planner at the lower bound on {at_lb} of {len(rows)} instances; worse than the baseline on {worse}.",
        f"Budget: plan()'s default, {env['budget_work']:,} work units ({env['budget_work'] / rate:g} "
        f"seconds at {rate:,} units/s); results do not depend on the machine, times do.",
        f"Machine: {env['platform']}, {env['cpus']} CPUs, {env['implementation']} {env['python']}.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure every shared instance and the synthetic one; print markdown (default) or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    args = parser.parse_args(argv)
    why = missing_data()
    if why:
        print(f"memplan_bench: {why}", file=sys.stderr)
        return 1
    rows = [measure(path.name, read_csv(path)) for path in instances()]
    rows.append(measure(f"synthetic {SYNTHETIC_BUFFERS:,} (seed {SYNTHETIC_SEED})", synthetic()))
    env = machine()
    env["budget_work"] = int(DEFAULT_BUDGET_S * WORK_PER_SECOND)
    env["work_per_second"] = WORK_PER_SECOND
    if args.json:
        print(json.dumps({"machine": env, "instances": rows}, indent=1))
    else:
        print(markdown(rows, env))
    return 0 if all(r["valid"] for r in rows) else 2


if __name__ == "__main__":
    sys.exit(main())
