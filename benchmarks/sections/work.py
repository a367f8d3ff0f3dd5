"""Section 2b, work: the scale section's graphs compiled again under cProfile, counting every stage's calls per
node: work that the caches do not change, so its growth from size to size is the code's own (1.00 = linear).

What it measures: the same workloads and sizes, each compiled once more in a fresh subprocess under Python's
`cProfile`, which counts every call a stage makes (Python functions and builtins such as `len` or `dict.get`;
work done inside one builtin call, such as `json.loads` in *load* or a sort, counts once). How to read it: a
call count does not depend on the caches, so where calls per node stay flat from size to size (ratio 1.00) the
code is linear, and what CPU time per node gains beyond that is the memory hierarchy's, which the machine's
reference walk measures on its own. A stage making less than a call a node (*write*: the model text, encoded in
C, written in one call) has no growth to show (—). The profiler's own cost makes these runs slower; their times
are not used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import synthetic

from sections.common import table
from sections.scale import STAGES, each_graph, run_worker

WORK_TEXT = """### Work: calls counted per stage

The same graphs compiled once more under `cProfile`, counting every call a stage makes. A call count does not
depend on the caches: where calls per node stay flat from size to size (1.00) the code is linear, and what CPU
time per node gains beyond that is the memory hierarchy's. — marks a stage making less than a call a node.
"""


def bench_work(sizes: Sequence[int], log: Callable[[str], None]) -> dict[str, Any]:
    """Count the calls every stage makes on every workload at every size (compiled under cProfile, each in its
    own subprocess): work that does not depend on the machine's caches, unlike time."""
    runs: list[dict[str, Any]] = []
    for w, n, gpath, mpath, gen in each_graph("rulepass-work-", sizes, runs, log):
        log(f"  work: {w} {n}: compiling {gen['nodes']} nodes, counting calls")
        res, _, err = run_worker(["compile", gpath, mpath, "--count-calls"], log)
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
