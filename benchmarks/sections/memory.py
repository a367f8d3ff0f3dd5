"""Section 3, memory quality: the feature-map arena of the offset planner versus the lower bound and versus
greedy-by-size (`assign_memory(..., baseline=True)`), and the time per plan, on the light models and the synthetic
graphs at 10k nodes and every larger scale size up to `--max-nodes`.

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

from __future__ import annotations

import contextlib
import re
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import synthetic
from rulepass.compiler.ir import ComputeGraph

from rulepass.api import load_graph, load_rules, optimize
from sections.common import fmt_bytes, fmt_ms, light_models, model_name, table

MEMORY_TEXT = """## 3. Memory quality: planner versus lower bound and greedy-by-size

The feature-map arena planned by `assign_memory` with the offset planner (`plan`) and with greedy-by-size
(`baseline=True`), on every light model (formats kept and Ascend) and the synthetic graphs. *planner / LB* =
1.0000 is optimal (LB: the largest total size live at one step); *planner / greedy* below 1 is the planner's gain.
*planner ms* / *greedy ms* time the placement alone, *assign ms* the whole `assign_memory`; *safe*: `verify_plan`
finds no violation in either plan.
"""


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
