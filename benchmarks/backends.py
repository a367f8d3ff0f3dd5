"""Section 1b of benchmarks/run.py: the two back-ends of the rule engine, generated code against the closures.

Every rule pass (the bundled rules, as `compile` runs them: no explanations) over the engine section's graphs,
once with each rule's generated code (`dsl/codegen`) and once with the closures alone (`dsl/compile`, what the
engine runs for a rule Python cannot compile); both through the same `dsl.backend` interface. The decisions
must be identical. Figures: the least CPU time of interleaved samples, and the bytecodes executed (steady).
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

TEXT = """## 1b. Back-ends: generated code versus closures

Every rule pass of the bundled rules, run as `compile` runs them over the engine section's graphs, once with each
rule's generated decision function (`dsl/codegen`) and once with the closures alone (`dsl/compile`, the reference
back-end). *closures / generated* is what the generated code buys (above 1: the generated code is faster);
*identical*: both made the same decision for every candidate and left the same attributes.
"""


def bench(
    rules: Any,
    cases: Sequence[tuple[str, list[Any]]],
    warm: Callable[[Any], Any],
    count: Callable[[Callable[[], object]], int],
    log: Callable[[str], None],
    reps: int,
) -> dict[str, Any]:
    """Per case: the least CPU seconds and the bytecodes of both back-ends, and whether they agree."""
    from rulepass.compiler.passes import build_pass_manager

    closures = dataclasses.replace(rules, rules=[dataclasses.replace(r, fast=None) for r in rules.rules])
    pms = {"generated": build_pass_manager(rules), "closures": build_pass_manager(closures)}
    rows = []
    for label, graphs in cases:
        results, best, ops = {}, {}, {}
        for name, pm in pms.items():
            copies = [warm(g.copy()) for g in graphs]
            reports = [r for g in copies for r in pm.run(g, explain=False)]
            results[name] = ([d.to_json() for r in reports for d in r.decisions], [g.attribute_state() for g in copies])
            best[name] = float("inf")
        for rep in range(reps):
            for name in pms if rep % 2 == 0 else reversed(pms):
                copies = [warm(g.copy()) for g in graphs]
                gc.collect()
                gc.disable()
                t0 = time.process_time()
                for g in copies:
                    pms[name].run(g, explain=False)
                best[name] = min(best[name], time.process_time() - t0)
                gc.enable()
        for name, pm in pms.items():
            copies = [warm(g.copy()) for g in graphs]
            ops[name] = count(lambda: [pm.run(g, explain=False) for g in copies])  # noqa: B023 (called at once)
        row = {
            "case": label,
            "generated_s": best["generated"],
            "closures_s": best["closures"],
            "ops_generated": ops["generated"],
            "ops_closures": ops["closures"],
            "identical": results["generated"] == results["closures"],
        }
        rows.append(row)
        log(
            f"  back-ends: {label}: closures / generated {row['closures_s'] / max(row['generated_s'], 1e-9):.2f} "
            f"(bytecodes {row['ops_closures'] / row['ops_generated']:.2f})"
        )
    return {"rows": rows}


def render(data: dict[str, Any], table: Callable[..., str], geomean: Callable[[Sequence[float]], float]) -> str:
    """The back-ends table and its summary line."""
    rows = data["rows"]
    time_r = [r["closures_s"] / r["generated_s"] for r in rows]
    ops_r = [r["ops_closures"] / r["ops_generated"] for r in rows]
    body = [
        [
            r["case"],
            f"{r['generated_s'] * 1e3:.3g}",
            f"{r['closures_s'] * 1e3:.3g}",
            f"**{t:.2f}**",
            f"{o:.2f}",
            "yes" if r["identical"] else "**NO**",
        ]
        for r, t, o in zip(rows, time_r, ops_r, strict=True)
    ]
    headers = [
        "graph",
        "generated CPU ms",
        "closures CPU ms",
        "closures / generated",
        "bytecodes closures / generated",
        "identical",
    ]
    summary = (
        f"Closures / generated code, all rule passes: geometric mean **{geomean(time_r):.2f}** (min {min(time_r):.2f}, "
        f"max {max(time_r):.2f}); bytecodes {geomean(ops_r):.2f}. Decisions identical on every graph: "
        f"**{'yes' if all(r['identical'] for r in rows) else 'NO'}**."
    )
    return table(headers, body, "lrrrrl") + "\n\n" + summary
