"""What a corpus run reports, as JSON data: per graph, the decisions a rule edit flipped and the figures it
moved, ranked by impact (`diff_report`); or a batch's figures per graph and in all (`batch_report`). Nothing
here depends on where or in what order the graphs were computed, nor on the cache.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from .execute import Outcome

# the figures a diff compares, in the order reports show them
METRICS = ("virtual_ops", "kernel_tasks", "tasks", "copy_bytes_saved", "feature_map")
# the figures a batch adds up
TOTALS = ("nodes", "virtual_ops", "kernel_tasks", "tasks", "copy_bytes_saved", "feature_map")


def state_text(d: dict[str, Any] | None) -> str:
    """A decision's final state in a few words."""
    if d is None:
        return "not a candidate"
    state = d["state"]
    if state == "missed":
        return f"missed at {d['check']}"
    if state == "undone":
        return f"undone {d['detail']}"
    return "undid an earlier zero-copy decision" if state == "undo" else "fired"


def _decided_by(d: dict[str, Any] | None) -> str:
    """What decides a decision now: the failing check, every check passing, or the pass that undid it."""
    if d is None:
        return "(no decision: not a candidate)"
    return str({"missed": d["check"], "fired": "(every check passed)"}.get(d["state"], state_text(d)))


def _by_key(result: dict[str, Any]) -> dict[tuple[str, str, str, int], dict[str, Any]]:
    """A result's decisions by (pass, graph, node, occurrence)."""
    seen: Counter[tuple[str, str, str]] = Counter()
    out = {}
    for d in result.get("decisions", []):
        k = (d["pass"], d["graph"], d["node"])
        out[(*k, seen[k])] = d
        seen[k] += 1
    return out


def _same(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    if a is None or b is None:
        return a is b
    detail = a["state"] in ("undone", "undo")
    return (a["state"], a["check"], a["detail"] if detail else "") == (
        b["state"],
        b["check"],
        b["detail"] if detail else "",
    )


def diff_graph(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The decisions that changed between two results of one graph, and the figures that moved."""
    old, new = _by_key(before), _by_key(after)
    changes = []
    for k in [*new, *(k for k in old if k not in new)]:
        a, b = old.get(k), new.get(k)
        if not _same(a, b):
            either = b or a or {}
            changes.append(
                {
                    "pass": k[0],
                    "graph": k[1],
                    "node": k[2],
                    "op_type": either.get("op_type", ""),
                    "before": state_text(a),
                    "after": state_text(b),
                    "decided_by": _decided_by(b),
                    "where": (b or {}).get("detail", "") if (b or {}).get("state") == "missed" else "",
                }
            )
    deltas = {}
    for m in METRICS:
        x, y = before.get(m), after.get(m)
        if x != y:
            deltas[m] = {"before": x, "after": y, "delta": y - x if isinstance(x, int) and isinstance(y, int) else None}
    out: dict[str, Any] = {"changes": changes, "deltas": deltas}
    for field in ("soundness", "error"):
        x, y = before.get(field), after.get(field)
        if x != y:
            out[field] = {"before": _brief(x), "after": _brief(y)}
    return out


def _brief(value: Any) -> Any:
    """An error as its message (the rest of a product's error is for machines)."""
    return value.get("message") if isinstance(value, dict) else value


def _impact(g: dict[str, Any]) -> tuple[int, int, int, int]:
    """How much a graph's diff matters, highest first: a verdict or an error that changed, then the bytes
    moved (copies avoided, feature-map arena), then tasks and virtual ops, then decisions flipped."""
    d = g["deltas"]

    def moved(*names: str) -> int:
        return sum(abs(d[n]["delta"] or 0) for n in names if n in d)

    verdict = int("soundness" in g or "error" in g)
    return (
        verdict,
        moved("copy_bytes_saved", "feature_map"),
        moved("kernel_tasks", "tasks", "virtual_ops"),
        len(g["changes"]),
    )


def diff_report(outcomes: Sequence[Outcome], base: Sequence[str], rules: Sequence[str], level: str) -> dict[str, Any]:
    """The diff of every graph's results under the base rules (product 0) and the new rules (product 1): the
    graphs that changed ranked by impact, the graphs that could not be read, and a summary."""
    changed, errors, unchanged = [], [], 0
    flips: Counter[tuple[str, str, str]] = Counter()
    totals: Counter[str] = Counter()
    for o in outcomes:
        if o.error is not None:
            errors.append({"graph": o.entry.label, "error": o.error})
            continue
        g = {"graph": o.entry.label, "name": o.name, **diff_graph(o.results[0], o.results[1])}
        if not (g["changes"] or g["deltas"] or "soundness" in g or "error" in g):
            unchanged += 1
            continue
        changed.append(g)
        for c in g["changes"]:
            flips[(c["pass"], c["before"], c["after"])] += 1
        for m, v in g["deltas"].items():
            totals[m] += v["delta"] or 0
    changed.sort(key=lambda g: (*(-x for x in _impact(g)), g["graph"]))
    for rank, g in enumerate(changed, 1):
        g["rank"], g["impact"] = rank, list(_impact(g))
    summary = {
        "graphs": len(outcomes),
        "changed": len(changed),
        "unchanged": unchanged,
        "unreadable": len(errors),
        "decisions_changed": sum(len(g["changes"]) for g in changed),
        "verdicts_changed": sum(1 for g in changed if "soundness" in g or "error" in g),
        "deltas": {m: totals[m] for m in METRICS},
        "by_pass": [
            {"pass": p, "before": b, "after": a, "count": n}
            for (p, b, a), n in sorted(flips.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
    }
    return {
        "kind": "diff",
        "level": level,
        "base": list(base),
        "rules": list(rules),
        "summary": summary,
        "graphs": changed,
        "errors": errors,
    }


def batch_report(outcomes: Sequence[Outcome], kind: str, rules: Sequence[str], level: str) -> dict[str, Any]:
    """A batch's figures per graph (in the corpus's order) and in all, and the graphs that failed."""
    rows, errors = [], []
    totals: Counter[str] = Counter()
    passes: dict[str, Counter[str]] = {}
    for o in outcomes:
        if o.error is not None:
            errors.append({"graph": o.entry.label, "error": o.error})
            continue
        r = o.results[0]
        row = {"graph": o.entry.label, "name": o.name, **{m: r.get(m) for m in TOTALS if m in r}}
        row["soundness"], row["error"] = r.get("soundness"), _brief(r.get("error"))
        rows.append(row)
        if row["error"] is not None:
            errors.append({"graph": o.entry.label, "error": row["error"]})
        for m in TOTALS:
            totals[m] += r.get(m) or 0
        for name, s in r.get("passes", {}).items():
            passes.setdefault(name, Counter()).update(s)
    summary = {
        "graphs": len(outcomes),
        "ok": sum(1 for r in rows if r["error"] is None),
        "failed": len(errors),
        "unsound": sum(1 for r in rows if r.get("soundness") == "unsound"),
        "totals": {m: totals[m] for m in TOTALS if kind == "compile" or m in ("nodes", "virtual_ops")},
        "by_pass": {name: dict(sorted(c.items())) for name, c in sorted(passes.items())},
    }
    return {"kind": kind, "level": level, "rules": list(rules), "summary": summary, "graphs": rows, "errors": errors}


def nearmiss_report(outcomes: Sequence[Outcome], max_failed: int, rules: Sequence[str], level: str) -> dict[str, Any]:
    """Every near miss of the corpus (candidates failing 1..`max_failed` checks), most copy bytes first, then most
    tasks, then the corpus's order; and the graphs that failed."""
    found: list[tuple[int, dict[str, Any]]] = []
    errors: list[dict[str, Any]] = []
    for k, o in enumerate(outcomes):
        r: dict[str, Any] = o.results[0] if o.error is None else {"error": o.error}
        if r.get("error") is not None:
            errors.append({"graph": o.entry.label, "error": _brief(r["error"])})
            continue
        found += [(k, {**m, "graph": o.entry.label, "in_graph": m["graph"]}) for m in r.get("near_misses", [])]
    found.sort(key=lambda km: (-km[1]["copy_bytes"], -km[1]["tasks"], km[0]))
    misses = [m for _, m in found]
    summary = {
        "graphs": len(outcomes),
        "with_near_misses": len({m["graph"] for m in misses}),
        "near_misses": len(misses),
        "copy_bytes": sum(m["copy_bytes"] for m in misses),
        "tasks": sum(m["tasks"] for m in misses),
        "by_check": dict(sorted(Counter(f["check"] for m in misses for f in m["failed"]).items())),
    }
    return {
        "kind": "nearmiss",
        "max_failed": max_failed,
        "level": level,
        "rules": list(rules),
        "summary": summary,
        "near_misses": misses,
        "errors": errors,
    }
