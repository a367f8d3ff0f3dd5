"""Decision records: for every candidate, whether its rule fired and, if not, exactly why.

A miss is a value, not an exception: it names the failing check (GE's check names, so explanations speak GE's
language), the failing sub-expression with its span in the rule file, the values it saw, and the graph
elements where it stopped (e.g. `i = input 1 (from allgather_2:0)`). Records are plain frozen data and have a
stable JSON form for tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..base.diagnostics import Span


@dataclass(frozen=True)
class Reason:
    """Why an expression did not give the value its check needed; `sub` narrows it down to one part, and
    `alternatives` holds one reason for each operand when every operand is to blame (an `or` none of whose
    alternatives held, an `and` that had to be false and all of whose conditions held)."""

    text: str
    span: Span | None
    message: str
    values: tuple[tuple[str, str], ...] = ()
    element: str | None = None
    sub: Reason | None = None
    alternatives: tuple[Reason, ...] = ()

    def leaf(self) -> Reason:
        """The innermost reason (where the chain of `sub`s ends; it may hold `alternatives`)."""
        r = self
        while r.sub is not None:
            r = r.sub
        return r

    def elements(self, within: bool = True) -> list[str]:
        """The elements bound along the chain, outermost first; with `within`, also those each alternative at its
        end stopped at."""
        out = []
        r: Reason | None = self
        while r is not None:
            if r.element:
                out.append(r.element)
            if r.sub is None and within:
                for x in (x for a in r.alternatives for x in a.elements()):
                    if x not in out:
                        out.append(x)
            r = r.sub
        return out

    def summary(self) -> str:
        """The innermost reason in one line; at an `or` (or an `and`) to which every operand is to blame, each
        operand's, with the elements it stopped at."""
        r = self.leaf()
        if not r.alternatives:
            return r.message
        parts = []
        for a in r.alternatives:
            at = a.elements()
            parts.append(a.summary() + (f" (at {', '.join(at)})" if at else ""))
        return f"{r.message}: " + "; ".join(parts)

    def lines(self, depth: int = 0) -> list[str]:
        """The reason as `explain` prints it, indented two spaces a level from `depth`: its message, then the part
        it narrows to one level deeper, or each alternative to blame, down to the innermost, whose values and
        place in the rule file close it."""
        pad = "  " * depth
        out = ([f"{pad}at {self.element}"] if self.element else []) + [f"{pad}{self.message}"]
        if self.sub is not None:
            return out + self.sub.lines(depth + 1)
        if self.alternatives:  # the operands' values are in each alternative's own lines
            return out + [x for a in self.alternatives for x in a.lines(depth + 1)]
        out += [f"{pad}  {k} = {v}" for k, v in self.values]
        return out + ([f"{pad}  at {self.span}"] if self.span is not None else [])

    def to_json(self) -> dict[str, Any]:
        """The reason as a JSON object."""
        return {
            "expression": self.text,
            "span": self.span.to_json() if self.span else None,
            "message": self.message,
            "values": {k: v for k, v in self.values},
            "element": self.element,
            "sub": self.sub.to_json() if self.sub else None,
            "alternatives": [a.to_json() for a in self.alternatives],
        }


@dataclass(frozen=True)
class TraceEntry:
    """One evaluated check in an explain trace."""

    path: tuple[str, ...]
    passed: bool
    span: Span | None
    elements: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Decision:
    """What a rule decided for one candidate node."""

    rule: str
    graph: str
    node: str
    op_type: str
    fired: bool
    check: str | None = None
    check_path: tuple[str, ...] = ()
    check_kind: str | None = None
    check_span: Span | None = None
    elements: tuple[str, ...] = ()
    reason: Reason | None = None
    error: str | None = None
    dry_run: bool = False
    trace: tuple[TraceEntry, ...] = field(default=(), compare=False)
    changes: tuple[str, ...] = ()  # what a fired rule's structural actions did to the graph, one line each

    def __init__(
        self,
        rule: str,
        graph: str,
        node: str,
        op_type: str,
        fired: bool,
        check: str | None = None,
        check_path: tuple[str, ...] = (),
        check_kind: str | None = None,
        check_span: Span | None = None,
        elements: tuple[str, ...] = (),
        reason: Reason | None = None,
        error: str | None = None,
        dry_run: bool = False,
        trace: tuple[TraceEntry, ...] = (),
        changes: tuple[str, ...] = (),
    ) -> None:
        # The dataclass's own __init__ for these fields, minus its cost: a frozen dataclass sets each field with
        # object.__setattr__, which made a record cost three times this (a pass makes one per candidate).
        d = self.__dict__
        d["rule"] = rule
        d["graph"] = graph
        d["node"] = node
        d["op_type"] = op_type
        d["fired"] = fired
        d["check"] = check
        d["check_path"] = check_path
        d["check_kind"] = check_kind
        d["check_span"] = check_span
        d["elements"] = elements
        d["reason"] = reason
        d["error"] = error
        d["dry_run"] = dry_run
        d["trace"] = trace
        d["changes"] = changes

    def summary(self) -> str:
        """One line: fired, or the failing check and its innermost reason."""
        if self.fired:
            return "fired" + (" (dry run)" if self.dry_run else "")
        elements = [*self.elements, *(self.reason.elements(within=False) if self.reason else [])]
        where = f" at {', '.join(elements)}" if elements else ""
        why = self.error or (self.reason.summary() if self.reason else "")
        return f"missed at {'/'.join(self.check_path) or self.check}{where}: {why}"

    def to_json(self) -> dict[str, Any]:
        """The decision as a JSON object (stable keys)."""
        return {
            "pass": self.rule,
            "graph": self.graph,
            "node": self.node,
            "op_type": self.op_type,
            "fired": self.fired,
            "check": self.check,
            "check_path": list(self.check_path),
            "check_kind": self.check_kind,
            "check_span": self.check_span.to_json() if self.check_span else None,
            "elements": list(self.elements),
            "reason": self.reason.to_json() if self.reason else None,
            "error": self.error,
            "dry_run": self.dry_run,
            **({"changes": list(self.changes)} if self.changes else {}),
        }


@dataclass(slots=True)
class RuleStats:
    """Per-rule counters over a run: candidates seen, fired, misses by check, and time spent."""

    rule: str
    candidates: int = 0
    fired: int = 0
    graphs_skipped: int = 0
    misses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, d: Decision) -> None:
        """Count one decision."""
        self.candidates += 1
        if d.fired:
            self.fired += 1
        else:
            key = d.check or "?"
            self.misses[key] = self.misses.get(key, 0) + 1

    def add_all(self, decisions: Iterable[Decision]) -> None:
        """Count decisions, as `add` does one by one."""
        misses = self.misses
        n = fired = 0
        for d in decisions:
            n += 1
            if d.fired:
                fired += 1
            else:
                key = d.check or "?"
                misses[key] = misses.get(key, 0) + 1
        self.candidates += n
        self.fired += fired

    def to_json(self, *, timings: bool = False) -> dict[str, Any]:
        """Counters as JSON (time only when asked: outputs stay byte-identical run to run)."""
        out: dict[str, Any] = {
            "pass": self.rule,
            "candidates": self.candidates,
            "fired": self.fired,
            "graphs_skipped": self.graphs_skipped,
            "misses": dict(sorted(self.misses.items())),
        }
        if timings:
            out["seconds"] = round(self.seconds, 6)
        return out
