"""Section 3b, memplan: benchmarks/memplan_bench.py, the planner and greedy-by-size on the shared memory-planning
instances (../shared/data/memplan; refused before any work when they are not there).

What it measures: the offset planner (`plan`) and greedy-by-size (`greedy_best_fit`) on every buffer trace of
`../shared/data/memplan` (the MiniMalloc and IOPDDL benchmark instances, adversarial and real) and a seeded
synthetic 100,000-buffer trace, both placements checked by `check_placement`. How to read it: *planner / LB* as in
the memory section; *time ratio* is planner seconds over baseline seconds in the same run (best of up to 3).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import memplan_bench

from sections.common import HERE, last_line

MEMPLAN_TEXT = """### Planner on the shared instances (`benchmarks/memplan_bench.py`)

The planner and greedy-by-size on every buffer trace of `../shared/data/memplan` (the MiniMalloc and IOPDDL
instances) and a seeded synthetic 100,000-buffer trace, both placements checked by `check_placement`. *planner /
LB* as above; *time ratio*: planner seconds over baseline seconds in the same run.
"""


def bench_memplan(log: Callable[[str], None]) -> tuple[dict[str, Any] | None, str]:
    """The planner on the shared instances: `memplan_bench.py --json` in a subprocess; (its machine and rows, or
    None and why it failed)."""
    log("  memplan: running benchmarks/memplan_bench.py")
    script = HERE / "memplan_bench.py"
    proc = subprocess.run([sys.executable, str(script), "--json"], capture_output=True, text=True, check=False)
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None, f"memplan_bench.py exited with {proc.returncode}: {last_line(proc.stderr)}"
    return data, ""


def render_memplan(data: dict[str, Any]) -> str:
    """The shared instances' table, as memplan_bench.py prints it."""
    return memplan_bench.markdown(data["instances"], data["machine"])
