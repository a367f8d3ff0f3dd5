"""What the pictures show, gathered once: the marked graph, every decision with its explanation, the events, the
tasks, the memory plan and the plan to compare it with.

A graph is compiled here (`pipeline.compile_graph`) and its decisions explained by a second run of the passes on
a copy (`pipeline.optimize`, the explanations `engine.explain` builds): nothing is re-derived. A model file is
read as it is: it holds the marked graph, the events, the tasks and the plan, but no decisions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...base.diagnostics import error
from ...dsl.load import RuleSet
from ...engine.decisions import Decision
from ..facts import attr_bool
from ..graph_file import copy_graph, load_graph_text
from ..ir import ComputeGraph, Node
from ..memory.assign import ArenaReport, MemoryPlan, TensorPlacement, WorkspacePlacement, anchor_id
from ..passes import DEFAULT_LEVEL, default_rules
from ..pipeline import QUIET_TAG, Undo, compile_graph, optimize, undone_decisions

__all__ = ["CompileView", "EventView", "Member", "TaskView", "ZeroCopyGroup", "view_of_graph", "view_of_model"]


@dataclass(frozen=True)
class EventView:
    """An event: recorded after `producer` on `record_stream`, waited for before `consumer` on `wait_stream`."""

    id: int
    producer: str
    consumer: str
    record_stream: int
    wait_stream: int


@dataclass(frozen=True)
class TaskView:
    """A task in model order: its type name (KERNEL, EVENT_RECORD, ...), op, stream and event."""

    id: int
    type: str
    op: str
    stream: int
    event: int | None = None


@dataclass(frozen=True)
class Member:
    """One tensor of a zero-copy group: the op's input or output it is, and where it sits in the group."""

    role: str  # "in 0", "out 1"
    tensor: str
    offset: int  # bytes from the start of the group's lowest member
    size: int


@dataclass(frozen=True)
class ZeroCopyGroup:
    """A virtual op and the tensors its layout ties together, as the memory plan placed them."""

    node: str
    op_type: str
    members: tuple[Member, ...]

    def parts(self) -> tuple[Member, ...]:
        """The members that are pieces of the whole: a concat's inputs, a split's outputs (the side with more
        members; the inputs when both sides have one)."""
        ins = tuple(m for m in self.members if m.role.startswith("in "))
        outs = tuple(m for m in self.members if m.role.startswith("out "))
        return outs if len(outs) > len(ins) else ins


@dataclass
class CompileView:
    """Everything the pictures and the report show, for one graph or model."""

    graph: ComputeGraph
    decisions: list[Decision]
    undone: dict[int, Undo]
    events: list[EventView]
    tasks: list[TaskView]
    plan: MemoryPlan
    compared: MemoryPlan | None = None  # the plan to set beside `plan`, or None
    compared_label: str = ""  # what `compared` is, e.g. "without the no-task passes"
    report: dict[str, Any] | None = None  # the compile's report (None for a model file)
    quiet_passes: frozenset[str] = field(default_factory=frozenset)  # housekeeping passes (engine placement)

    @property
    def from_model(self) -> bool:
        """Whether this view was read from a model file (which holds no decisions)."""
        return self.report is None

    def virtual_nodes(self) -> list[Node]:
        """The zero-copy (virtual, `_no_task`) ops, in execution order."""
        return [n for n in self.graph.all_nodes() if attr_bool(n, "_no_task")]

    def shown_decisions(self) -> list[tuple[Decision, Undo | None]]:
        """The decisions worth showing (housekeeping passes left out), each with what undid it."""
        return [(d, self.undone.get(i)) for i, d in enumerate(self.decisions) if d.rule not in self.quiet_passes]

    def decisions_by_node(self) -> dict[tuple[str, str], list[tuple[Decision, Undo | None]]]:
        """`shown_decisions` by (graph, node)."""
        out: dict[tuple[str, str], list[tuple[Decision, Undo | None]]] = {}
        for d, u in self.shown_decisions():
            out.setdefault((d.graph, d.node), []).append((d, u))
        return out

    def zero_copy_groups(self) -> list[ZeroCopyGroup]:
        """Each virtual op with its inputs and outputs at their offsets in the plan (relative to the lowest)."""
        groups = []
        for n in self.virtual_nodes():
            named = [(f"in {a.index}", anchor_id(p)) for a in n.in_anchors if (p := a.peer) is not None]
            named += [(f"out {o.index}", anchor_id(o)) for o in n.out_anchors]
            placed = [(role, self.plan.tensors[t]) for role, t in named if t in self.plan.tensors]
            if not placed:
                continue
            base = min(p.offset for _, p in placed)
            members = tuple(Member(role, p.anchor, p.offset - base, p.size) for role, p in placed)
            groups.append(ZeroCopyGroup(n.name, n.type, members))
        return groups


def view_of_graph(
    graph: ComputeGraph,
    rules: RuleSet | None = None,
    *,
    level: str = DEFAULT_LEVEL,
    disabled: Iterable[str] = (),
    before_rules: RuleSet | None = None,
    baseline: bool = True,
) -> CompileView:
    """Compile `graph` (in place) and explain its decisions; compare its memory with the plan under
    `before_rules` when given, else (with `baseline`) with the plan without the no-task passes."""
    disabled = list(disabled)
    before = copy_graph(graph) if before_rules is not None else None
    explained = optimize(copy_graph(graph), rules, level=level, disabled=disabled)
    result = compile_graph(graph, rules, level=level, disabled=disabled, baseline=baseline and before is None)
    compared, label = result.memory.baseline, "without the no-task passes"
    if before is not None:
        compared = compile_graph(before, before_rules, level=level, disabled=disabled).memory.plan
        label = "before the rule edit"
    quiet = frozenset(r.name for r in (rules or default_rules()).rules if QUIET_TAG in r.rule.tags)
    return CompileView(
        graph=graph,
        decisions=explained.decisions,
        undone=undone_decisions(explained.decisions),
        events=[
            EventView(e.id, e.producer.name, e.consumer.name, e.record_stream, e.wait_stream)
            for e in result.streams.events
        ],
        tasks=[TaskView(t.id, t.type.name, t.op_name, t.stream_id, t.event_id) for t in result.tasks.tasks],
        plan=result.memory.plan,
        compared=compared,
        compared_label=label if compared is not None else "",
        report=result.report(),
        quiet_passes=quiet,
    )


def view_of_model(model: dict[str, Any], name: str = "<model>") -> CompileView:
    """A view of a model file's data: its graph, events, tasks and memory plan (it holds no decisions)."""
    try:
        graph = load_graph_text(json.dumps(model["graph"]), name)
        events = [
            EventView(
                int(e["id"]), str(e["producer"]), str(e["consumer"]), int(e["record_stream"]), int(e["wait_stream"])
            )
            for e in model.get("events", [])
        ]
        tasks = [
            TaskView(
                int(t["id"]),
                str(t["type_name"]).removeprefix("MODEL_TASK_"),
                str(t["op"]),
                int(t["stream_id"]),
                t.get("event_id"),
            )
            for t in model["model_def"]["task"]
        ]
        plan = plan_from_json(model["memory_plan"])
    except (KeyError, TypeError, ValueError) as exc:
        raise error(
            "model", f"model '{name}' lacks what a picture needs: {type(exc).__name__} {exc}", where=name
        ) from None
    return CompileView(graph, [], {}, events, tasks, plan)


def plan_from_json(data: dict[str, Any]) -> MemoryPlan:
    """A memory plan from its JSON form (`MemoryPlan.to_json`); the schedule is not stored, so it is None."""
    plan = MemoryPlan()
    for k, t in data["tensors"].items():
        plan.tensors[k] = TensorPlacement(
            k, t["region"], t["mem_type"], t["offset"], t["size"], t["raw_size"], t["unit"], t["first"], t["last"]
        )
    plan.workspaces = [
        WorkspacePlacement(w["node"], w["index"], w["mem_type"], w["offset"], w["size"], w["step"])
        for w in data["workspaces"]
    ]
    plan.arenas = [
        ArenaReport(
            a["region"],
            a["mem_type"],
            a["size"],
            a["lower_bound"],
            a["units"],
            a["reused_bytes"] + a["size"],
            a["strategy"],
        )
        for a in data["arenas"]
    ]
    return plan
