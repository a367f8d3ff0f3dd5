"""Task generation, GE's GenerateTask flow: tasks per node from builders registered per kernel library.

- **TaskDef** follows GE's `domi::TaskDef` (field names and ModelTaskType values of spec §6.4). Addresses in
  tasks are *symbolic* ("output 0 of node X", "workspace 1 of node Y", "input 2 of the model"); the model binds
  them to offsets through the memory plan and keeps both, so a runtime can relocate or rebind without
  regenerating tasks (the seed's §7.3 improvement).
- **TaskBuilder** is one abstraction for every engine (the seed's §7.1 improvement: GE has it for AI Core only);
  a builder can be tested alone on one node. Builders register by kernel library name with a decorator (the
  Python form of REGISTER_OPS_KERNEL_BUILDER) or, for third parties, through the entry-point group
  `rulepass.task_builders`. A duplicate registration warns and keeps the first, as GE does.
- **The generator** skips `_no_task` nodes and nodes without a library, marks `is_first_node`/`is_last_node`
  per stream and library (virtual ops skipped, lists split at GE's separator ops), generates per node in a
  thread pool sized by MAX_COMPILE_CORE_NUMBER (default 1) and merges in node order, so the model is the same
  byte for byte whatever the thread count; a worker's error names its node. Fusion groups (buffer-optimize
  option) generate contiguously; FFTS+ nodes generate their subgraph's tasks and wrap them; `partially_supported`
  nodes fall back to AI CPU; `_alias_engine_name` adds that builder's tasks; events become EVENT_RECORD and
  EVENT_WAIT tasks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..base.diagnostics import error
from ..base.limits import MAX_THREADS, int_literal
from . import builders  # noqa: F401  (the built-in builders register themselves in the registry)
from .facts import attr_bool, attr_str
from .ir import ComputeGraph, Node
from .memory.assign import MemoryPlan
from .streams import StreamPlan
from .task_registry import (
    Address,
    BuildContext,
    CcKernelType,
    ModelTaskType,
    TaskBuilder,
    TaskDef,
    builder_for,
    register,
    register_builder,
    registered_libraries,
)

SEPARATOR_TYPES = frozenset({"LabelSet", "LabelGotoEx", "LabelSwitchByIndex", "StreamSwitch"})
FFTS_SUBGRAPH_ATTRS = ("_ffts_sub_graph", "_ffts_plus_sub_graph")


def no_need_gen_task(node: Node) -> bool:
    """GE's NoNeedGenTask: `_no_task` set, or no kernel library."""
    return attr_bool(node, "_no_task") or not node.op.kernel_lib


def thread_count(value: str | None = None) -> int:
    """Workers from MAX_COMPILE_CORE_NUMBER (decimal; missing, empty or <= 0 -> 1, as GE). Text that is not a
    decimal integer, or more than MAX_THREADS, is an error rather than silently one thread."""
    raw = os.environ.get("MAX_COMPILE_CORE_NUMBER", "") if value is None else value
    if not raw.strip():
        return 1
    try:
        n = int_literal(raw.strip(), 10)
    except ValueError:
        raise error(
            "usage",
            f"MAX_COMPILE_CORE_NUMBER is {raw!r}: expected a decimal number of threads",
            hint="unset it or set it to e.g. 4",
        ) from None
    return check_threads(n, "MAX_COMPILE_CORE_NUMBER") if n > 0 else 1


def check_threads(n: int, source: str) -> int:
    """`n` task generation threads, or the usage error when over MAX_THREADS."""
    if n > MAX_THREADS:
        raise error("usage", f"{source} asks for {n} threads; the limit is {MAX_THREADS}")
    return n


def _is_ffts(node: Node) -> bool:
    return any(node.op.attrs.get(a) for a in FFTS_SUBGRAPH_ATTRS)


def candidate_nodes(graph: ComputeGraph) -> list[Node]:
    """GE's FilterCandidatesNodes: all nodes (not inside FFTS nodes' subgraphs) that need tasks."""
    out: list[Node] = []

    def walk(g: ComputeGraph) -> None:
        for n in g.topological_order():
            out.append(n)
            if not _is_ffts(n) and not graph.unknown_shape:
                for sub in n.subgraphs():
                    walk(sub)

    walk(graph)
    return [n for n in out if not no_need_gen_task(n)]


def mark_first_and_last(nodes: Sequence[Node]) -> None:
    """GE's MarkFirstAndLastOps: per stream, per continuous list, first/last node of each kernel library."""
    by_stream: dict[int, list[Node]] = {}
    multi_stream = len({n.op.stream_id for n in nodes}) > 1
    for n in nodes:
        n.op.attrs.pop("is_first_node", None)
        n.op.attrs.pop("is_last_node", None)
        if n.op.stream_id != -1:
            by_stream.setdefault(n.op.stream_id, []).append(n)
    for stream_nodes in by_stream.values():
        lists: list[list[Node]] = [[]]
        for n in stream_nodes:
            if attr_bool(n, "_no_task"):
                continue
            if n.op.type in SEPARATOR_TYPES or (multi_stream and n.op.subgraph_names):
                lists.append([])
                continue
            lists[-1].append(n)
        for group in lists:
            first: dict[str, Node] = {}
            last: dict[str, Node] = {}
            for n in group:
                if not n.op.kernel_lib:
                    raise error("task-gen", f"node '{n.name}' has no kernel library", where=n.name)
                first.setdefault(n.op.kernel_lib, n)
                last[n.op.kernel_lib] = n
            for n in first.values():
                n.op.attrs["is_first_node"] = True
            for n in last.values():
                n.op.attrs["is_last_node"] = True


def _build_one(node: Node, ctx: BuildContext) -> list[TaskDef]:
    lib = attr_str(node, "_composite_engine_kernel_lib_name") if _is_ffts(node) else node.op.kernel_lib
    builder = builder_for(lib)
    if builder is None:
        raise error(
            "task-gen",
            f"node '{node.name}' ({node.type}) uses kernel library '{lib}', which has no registered task builder",
            where=node.name,
            hint=f"registered: {', '.join(registered_libraries())}",
        )
    try:
        if _is_ffts(node):
            subs: list[TaskDef] = []
            for sub in node.subgraphs():
                for m in sub.topological_order():
                    if not no_need_gen_task(m):
                        subs.extend(_build_one(m, ctx))
            ctx_tasks = builder.build(node, ctx)
            for t in ctx_tasks:
                if t.type == ModelTaskType.FFTS_PLUS and t.ffts_plus_task is not None:
                    t.ffts_plus_task["sub_tasks"] = subs
            tasks = ctx_tasks
        else:
            tasks = builder.build(node, ctx)
            if attr_bool(node, "partially_supported"):
                for fallback in ("aicpu_ascend_kernel", "aicpu_tf_kernel"):
                    fb = builder_for(fallback)
                    if fb is not None:
                        node.op.attrs["aicpu_kernel_lib_name"] = fallback
                        tasks += fb.build(node, ctx)
                        break
            alias = attr_str(node, "_alias_engine_name")
            if alias:
                ab = builder_for(alias)
                if ab is None:
                    raise error(
                        "task-gen", f"node '{node.name}': alias engine '{alias}' has no task builder", where=node.name
                    )
                tasks += ab.build(node, ctx)
    except Exception as exc:
        if hasattr(exc, "diagnostics"):
            raise
        raise error(
            "task-gen",
            f"generating tasks for node '{node.name}' ({node.type}) failed: {type(exc).__name__}: {exc}",
            where=node.name,
        ) from None
    stream = node.op.stream_id if node.op.stream_id >= 0 else 0
    for t in tasks:  # GE's RefreshStreamId
        if node.op.type != "SuperKernel" and "_attached_stream_id" not in node.op.attrs:
            t.stream_id = stream
        if t.ffts_plus_task is not None:
            for s in t.ffts_plus_task.get("sub_tasks", []):
                s.stream_id = stream
    return tasks


@dataclass
class TaskResult:
    """The generated tasks in model order, the tasks per node, and the order fusion imposed."""

    tasks: list[TaskDef]
    per_node: dict[str, list[TaskDef]]
    fusion_order: list[str]


def _fusion_groups(nodes: Sequence[Node], options: dict[str, str]) -> dict[int, list[Node]]:
    if options.get("ge.bufferOptimize") not in ("l1_optimize", "l2_optimize"):
        return {}
    groups: dict[int, list[Node]] = {}
    for n in nodes:
        gid = n.op.attrs.get("_l1_fusion_group_id", n.op.attrs.get("_l2_fusion_group_id"))
        if isinstance(gid, int) and not isinstance(gid, bool):
            key = gid + max(n.op.stream_id, 0) * 100000
            n.op.attrs["_fusion_group_key"] = key
            groups.setdefault(key, []).append(n)
    return groups


def generate_tasks(
    graph: ComputeGraph,
    plan: MemoryPlan | None = None,
    streams: StreamPlan | None = None,
    *,
    threads: int | None = None,
    options: dict[str, str] | None = None,
) -> TaskResult:
    """Generate every task of `graph` in model order (deterministic for any thread count)."""
    opts = dict(options or {})
    nodes = candidate_nodes(graph)
    mark_first_and_last(nodes)
    ctx = BuildContext(plan, opts)
    workers = check_threads(threads, "threads") if threads is not None else thread_count()
    per_node: dict[str, list[TaskDef]] = {}
    if workers <= 1 or len(nodes) < 2:
        results = [_build_one(n, ctx) for n in nodes]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ge_gentask") as pool:
            futures = [pool.submit(_build_one, n, ctx) for n in nodes]
            results = [f.result() for f in futures]  # in node order: the first failing node's error is raised
    for n, node_tasks in zip(nodes, results, strict=True):
        per_node[n.name] = node_tasks
    groups = _fusion_groups(nodes, opts)
    group_of = {m.name: key for key, members in groups.items() for m in members}
    # events: EVENT_RECORD after the producer, EVENT_WAIT before the consumer (each on its own stream)
    records: dict[str, list[TaskDef]] = {}
    waits: dict[str, list[TaskDef]] = {}
    for e in streams.events if streams is not None else []:
        records.setdefault(e.producer.name, []).append(
            TaskDef(ModelTaskType.EVENT_RECORD, e.producer.name, max(e.record_stream, 0), event_id=e.id)
        )
        waits.setdefault(e.consumer.name, []).append(
            TaskDef(ModelTaskType.EVENT_WAIT, e.consumer.name, max(e.wait_stream, 0), event_id=e.id)
        )
    tasks: list[TaskDef] = []
    fusion_order: list[str] = []
    emitted: set[str] = set()

    def emit(name: str) -> None:
        emitted.add(name)
        tasks.extend(waits.get(name, ()))
        tasks.extend(per_node.get(name, ()))
        tasks.extend(records.get(name, ()))

    # Walk the execution order; virtual and task-less nodes still anchor their events at their place.
    for n in graph.all_nodes():
        if n.name in emitted:
            continue
        key = group_of.get(n.name)
        if key is None:
            if n.name in per_node or n.name in records or n.name in waits:
                emit(n.name)
            continue
        for m in groups[key]:  # GE's "fusion inner": the whole group, contiguously, at its first member
            fusion_order.append(m.name)
            emit(m.name)
    for i, t in enumerate(tasks):
        t.id = i
    return TaskResult(tasks, per_node, fusion_order)


def bind_addresses(tasks: Iterable[TaskDef], plan: MemoryPlan) -> dict[str, dict[str, Any]]:
    """Bind every symbolic address the tasks use to its (region, memory type, offset, size) in the plan."""
    out: dict[str, dict[str, Any]] = {}
    ws = {(w.node, w.index): w for w in plan.workspaces}
    for t in tasks:
        for a in t.addresses():
            key = a.key()
            if key in out:
                continue
            if a.kind == "workspace":
                w = ws.get((a.node, a.index))
                if w is None:
                    raise error("task-gen", f"{a} has no place in the memory plan", where=a.node)
                out[key] = {"region": "feature_map", "mem_type": w.mem_type, "offset": w.offset, "size": w.size}
                continue
            tid = f"{a.node}:{a.index if a.kind != 'model_input' else 0}"
            p = plan.tensors.get(tid)
            if p is None:
                raise error("task-gen", f"{a} has no place in the memory plan", where=a.node)
            out[key] = {"region": p.region, "mem_type": p.mem_type, "offset": p.offset, "size": p.size, "tensor": tid}
    return dict(sorted(out.items()))


__all__ = [
    "Address",
    "BuildContext",
    "CcKernelType",
    "ModelTaskType",
    "TaskBuilder",
    "TaskDef",
    "TaskResult",
    "bind_addresses",
    "builder_for",
    "generate_tasks",
    "register",
    "register_builder",
]
