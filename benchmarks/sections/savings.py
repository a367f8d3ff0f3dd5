"""Section 4, savings: per real model, the concats made virtual, tasks and feature-map bytes with and without the
no-task passes, copy bytes avoided.

What it measures: every light model compiled twice with `compile_graph`, with and without the passes tagged
`no-task` (Concat, Pack and Split no-task passes): *tasks* are the model's tasks, *feature map* the
feature-map arena, *bytes saved* = `MemoryResult.bytes_saved`, *copy bytes avoided* = `copy_bytes_saved` (the
bytes the virtual concats no longer copy), *no-task nodes* the nodes made virtual. *misses* names the check
the concats that stayed copies failed. How to read it: every no-task node is a kernel launch saved; the arena
can stay the same (the peak is elsewhere) or even grow slightly, since a zero-copy group must be live as one
block from its first producer on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rulepass.api import compile_graph, load_graph, load_rules
from sections.common import CONCAT, fmt_bytes, light_models, model_name, no_task_passes, table

SAVINGS_TEXT = """## 4. What the optimisation buys on real models

Every light model compiled with and without the passes tagged `no-task`: tasks, the feature-map arena, *bytes
saved* (`MemoryResult.bytes_saved`), *copy bytes avoided* (`copy_bytes_saved`), and the check that the concats
left as copies failed (*misses*). Every no-task node is a kernel launch saved; the arena can stay the same or
even grow slightly (a zero-copy group is live as one block).
"""


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
