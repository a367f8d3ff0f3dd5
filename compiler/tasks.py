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
- **Ordered, then streamed** (the seed's §7.2): `order_tasks` sets every attribute generation sets before any
  task is built; `iter_tasks` then builds nodes at most a window ahead of the task it yields, so a writer can
  take them one by one (`model.stream_model`), and takes a reused node's tasks from a lookup instead
  (`task_cache`). An FFTS+ node's subgraph nodes, nested FFTS+ ones too, are jobs of the same pool (GE opens an
  inner pool per FFTS+ node, §3.4): no job waits for another, and the wrappers are put together in node order.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..base.diagnostics import error
from ..base.limits import MAX_THREADS, int_literal
from . import builders  # noqa: F401  (the built-in builders register themselves in the registry)
from .facts import attr_bool, attr_str
from .graph_file import graph_to_data
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
    address_from_key,
    builder_for,
    register,
    register_builder,
    registered_libraries,
)

SEPARATOR_TYPES = frozenset({"LabelSet", "LabelGotoEx", "LabelSwitchByIndex", "StreamSwitch"})
FFTS_SUBGRAPH_ATTRS = ("_ffts_sub_graph", "_ffts_plus_sub_graph")


def no_task(attrs: Mapping[str, Any], kernel_lib: str | None) -> bool:
    """GE's NoNeedGenTask on an op's attributes and kernel library: `_no_task` set (true), or no kernel library.
    The same on a node (`no_need_gen_task`) and on a node of the graph's text (its `attrs`, `kernel_lib`)."""
    return attrs.get("_no_task") is True or not kernel_lib


def no_need_gen_task(node: Node) -> bool:
    """GE's NoNeedGenTask for a node (see `no_task`)."""
    return no_task(node.op.attrs, node.op.kernel_lib)


def known_empty(op_type: str, attrs: Mapping[str, Any], kernel_lib: str | None) -> bool:
    """Whether an op's tasks are none, known from its op desc alone (as a node, or in the graph's text): it
    needs none (`no_task`), or its library's builder never builds a task for its type (`no_task_types`) and
    nothing adds any (not FFTS+, no AI CPU fallback, no alias engine). Errs towards False."""
    if no_task(attrs, kernel_lib):
        return True
    builder = builder_for(kernel_lib or "")
    return (
        builder is not None
        and op_type in builder.no_task_types
        and not any(attrs.get(a) for a in FFTS_SUBGRAPH_ATTRS)
        and not attrs.get("_alias_engine_name")
        and attrs.get("partially_supported") is not True
    )


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
    attrs = node.op.attrs  # FFTS_SUBGRAPH_ATTRS, unrolled: called for every node several times
    return bool(attrs.get("_ffts_sub_graph") or attrs.get("_ffts_plus_sub_graph"))


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


def _fallback_lib(node: Node) -> str | None:
    """The AI CPU library a `partially_supported` node falls back to (the first with a builder), else None."""
    if not attr_bool(node, "partially_supported"):
        return None
    return next((lib for lib in ("aicpu_ascend_kernel", "aicpu_tf_kernel") if builder_for(lib) is not None), None)


def _builder(node: Node, lib: str) -> TaskBuilder:
    builder = builder_for(lib)
    if builder is None:
        raise error(
            "task-gen",
            f"node '{node.name}' ({node.type}) uses kernel library '{lib}', which has no registered task builder",
            where=node.name,
            hint=f"registered: {', '.join(registered_libraries())}",
        )
    return builder


def _build_own(node: Node, ctx: BuildContext) -> list[TaskDef]:
    """The node's own tasks (an FFTS+ node's wrapper without its sub-tasks), stream ids refreshed."""
    ffts = _is_ffts(node)
    builder = _builder(node, attr_str(node, "_composite_engine_kernel_lib_name") if ffts else node.op.kernel_lib)
    try:
        tasks = builder.build(node, ctx)
        if not ffts:
            fallback = _fallback_lib(node)
            if fallback is not None:
                tasks += _builder(node, fallback).build(node, ctx)
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
    if not ffts:
        _refresh_stream_ids(node, tasks)
    return tasks


def _refresh_stream_ids(node: Node, tasks: list[TaskDef]) -> None:
    """GE's RefreshStreamId: the node's stream on its tasks and on their direct FFTS+ sub-tasks."""
    stream = node.op.stream_id if node.op.stream_id >= 0 else 0
    for t in tasks:
        if node.op.type != "SuperKernel" and "_attached_stream_id" not in node.op.attrs:
            t.stream_id = stream
        if t.ffts_plus_task is not None:
            for s in t.ffts_plus_task.get("sub_tasks", []):
                s.stream_id = stream


def _ffts_members(node: Node) -> list[Node]:
    """The nodes of an FFTS+ node's subgraphs that need tasks, in subgraph then topological order."""
    return [m for sub in node.subgraphs() for m in sub.topological_order() if not no_need_gen_task(m)]


@dataclass
class _Pending:
    """A node's submitted build, and (FFTS+) its subgraph nodes' ones, each a job of the one pool."""

    node: Node
    own: Future[list[TaskDef]]
    members: list[_Pending]

    def result(self) -> list[TaskDef]:
        """The node's tasks: an FFTS+ node's wrapper holds its members' tasks (nested FFTS+ ones wrapped alike);
        the first failing build, in node order, raises."""
        tasks = self.own.result()
        if not _is_ffts(self.node):
            return tasks
        subs = [t for m in self.members for t in m.result()]
        for t in tasks:
            if t.type == ModelTaskType.FFTS_PLUS and t.ffts_plus_task is not None:
                t.ffts_plus_task["sub_tasks"] = subs
        _refresh_stream_ids(self.node, tasks)
        return tasks


Submit = Callable[[Node], "Future[list[TaskDef]]"]


def _schedule(node: Node, submit: Submit) -> _Pending:
    """Submit the node's build and, for an FFTS+ node, its members' (recursively) as jobs of the same pool:
    no job waits for another, so nested FFTS+ subgraphs cannot starve the pool; results are put together in
    node order by the caller."""
    members = [_schedule(m, submit) for m in _ffts_members(node)] if _is_ffts(node) else []
    return _Pending(node, submit(node), members)


@contextmanager
def _submitter(workers: int, ctx: BuildContext) -> Iterator[Submit]:
    """A function submitting a node's own build: to a pool of `workers` threads, or (one) run at once."""
    if workers <= 1:

        def now(node: Node) -> Future[list[TaskDef]]:
            f: Future[list[TaskDef]] = Future()
            try:
                f.set_result(_build_own(node, ctx))
            except BaseException as exc:
                f.set_exception(exc)
            return f

        yield now
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ge_gentask") as pool:
        try:
            yield lambda node: pool.submit(_build_own, node, ctx)
        finally:
            pool.shutdown(cancel_futures=True)


@dataclass
class TaskResult:
    """The generated tasks in model order, the tasks per node, the order fusion imposed, and counts. After a
    streamed compile (tasks written to the model file as they were made) `tasks` and `per_node` are empty and
    the counts stand for them."""

    tasks: list[TaskDef]
    per_node: dict[str, list[TaskDef]]
    fusion_order: list[str]
    total: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_stream: dict[int, int] = field(default_factory=dict)
    incremental: bool = False  # whether a previous compile's tasks were looked up
    reused: int = 0  # nodes whose tasks came from a previous compile
    regenerated: int = 0  # nodes whose tasks were built
    streamed: bool = False
    # the graph's text once generation set its attributes, when a task cache needed it (the model reuses it)
    graph_data: dict[str, Any] | None = field(default=None, repr=False)
    node_texts: list[str] | None = field(default=None, repr=False)  # its nodes' text (`TaskSource.node_texts`)

    def count(self, t: TaskDef) -> None:
        """Count one task of the model."""
        self.total += 1
        self.by_type[t.type.name] = self.by_type.get(t.type.name, 0) + 1
        self.by_stream[t.stream_id] = self.by_stream.get(t.stream_id, 0) + 1


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


@dataclass
class TaskOrder:
    """What generation needs before any task is built: the nodes in model order (each with the event tasks
    around it), the candidates by name, and the order fusion imposed. Every attribute generation sets is set
    here, so the graph no longer changes once it exists (its text can key a task cache)."""

    emit: list[Node]
    candidates: dict[str, Node]
    waits: dict[str, list[TaskDef]]
    records: dict[str, list[TaskDef]]
    fusion_order: list[str]


def order_tasks(graph: ComputeGraph, streams: StreamPlan | None, options: dict[str, str]) -> TaskOrder:
    """Candidates, first/last marks, fusion groups, fallback libraries and events; the nodes in model order."""
    nodes = candidate_nodes(graph)
    mark_first_and_last(nodes)
    groups = _fusion_groups(nodes, options)
    built = list(nodes)
    while built:  # every node that will be built (FFTS+ members too) knows its fallback library beforehand
        n = built.pop()
        fallback = None if _is_ffts(n) else _fallback_lib(n)
        if fallback is not None:
            n.op.attrs["aicpu_kernel_lib_name"] = fallback
        if _is_ffts(n):
            built += _ffts_members(n)
    candidates = {n.name: n for n in nodes}
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
    emit: list[Node] = []
    fusion_order: list[str] = []
    emitted: set[str] = set()
    # Walk the execution order; virtual and task-less nodes still anchor their events at their place.
    for n in graph.all_nodes():
        if n.name in emitted:
            continue
        key = group_of.get(n.name)
        if key is None:
            if n.name in candidates or n.name in records or n.name in waits:
                emitted.add(n.name)
                emit.append(n)
            continue
        for m in groups[key]:  # GE's "fusion inner": the whole group, contiguously, at its first member
            fusion_order.append(m.name)
            emitted.add(m.name)
            emit.append(m)
    return TaskOrder(emit, candidates, waits, records, fusion_order)


# a reused node's tasks, or None to build them
Lookup = Callable[[Node], "list[TaskDef] | None"]


@dataclass
class TaskSource:
    """Where generation takes a node's tasks from besides its builders, and where it keeps them: `lookup` gives
    a reused node's tasks (None: build them); `keep` is told every candidate node's own tasks, reused or built,
    in model order."""

    lookup: Lookup | None = None
    keep: Callable[[Node, list[TaskDef]], None] | None = None
    # the model encoder's text of each node of the root graph's text, when the source made it (the model
    # writer copies it rather than encoding the graph's nodes again)
    node_texts: list[str] | None = None


# the task source for a graph, given its text (`graph_to_data`) once generation has set its attributes
Reuse = Callable[[dict[str, Any]], TaskSource]
WINDOW = 64  # nodes submitted ahead of the one being written, per worker


def iter_tasks(
    order: TaskOrder,
    ctx: BuildContext,
    workers: int,
    result: TaskResult,
    source: TaskSource | None = None,
) -> Iterator[TaskDef]:
    """Every task in model order, numbered, built in a pool of `workers` threads at most a window ahead of the
    one yielded (so they are never all held); `result` counts them and the reused and rebuilt nodes. With a
    lookup, a node whose tasks are `known_empty` is reused with none, without a lookup."""
    next_id = 0
    reuse = None if source is None else source.lookup
    keep = None if source is None else source.keep
    result.incremental = reuse is not None
    with _submitter(workers, ctx) as submit:
        window: deque[tuple[Node, _Pending | list[TaskDef] | None]] = deque()
        todo = iter(order.emit)
        ahead = WINDOW * max(workers, 1)
        while True:
            while len(window) < ahead and (n := next(todo, None)) is not None:
                node = order.candidates.get(n.name)
                known = None
                if node is not None and reuse is not None:  # tasks known to be none are not looked up
                    op = node.op
                    known = [] if known_empty(op.type, op.attrs, op.kernel_lib) else reuse(node)
                window.append((n, known if known is not None or node is None else _schedule(node, submit)))
            if not window:
                break
            n, made = window.popleft()
            if isinstance(made, _Pending):
                result.regenerated += 1
            elif made is not None:
                result.reused += 1
            own = made.result() if isinstance(made, _Pending) else made or []
            if n.name in order.candidates:
                if keep is not None:
                    keep(n, own)
                if not result.streamed:
                    result.per_node[n.name] = own
            for t in (*order.waits.get(n.name, ()), *own, *order.records.get(n.name, ())):
                t.id = next_id
                next_id += 1
                result.count(t)
                yield t


def generate_tasks(
    graph: ComputeGraph,
    plan: MemoryPlan | None = None,
    streams: StreamPlan | None = None,
    *,
    threads: int | None = None,
    options: dict[str, str] | None = None,
    reuse: Reuse | None = None,
) -> TaskResult:
    """Generate every task of `graph` in model order (deterministic for any thread count)."""
    opts = dict(options or {})
    order = order_tasks(graph, streams, opts)
    result = TaskResult([], {}, order.fusion_order)
    source = reused(graph, result, reuse)
    result.tasks.extend(iter_tasks(order, BuildContext(plan, opts), workers_for(threads), result, source))
    return result


def reused(graph: ComputeGraph, result: TaskResult, reuse: Reuse | None) -> TaskSource | None:
    """The task source of `reuse` for `graph` (its text kept in `result` for the model), or None."""
    if reuse is None:
        return None
    result.graph_data = graph_to_data(graph)
    source = reuse(result.graph_data)
    result.node_texts = source.node_texts
    return source


def workers_for(threads: int | None) -> int:
    """Task generation threads: `threads` when given (checked), else MAX_COMPILE_CORE_NUMBER's."""
    return check_threads(threads, "threads") if threads is not None else thread_count()


def bind_addresses(tasks: Iterable[TaskDef], plan: MemoryPlan) -> dict[str, dict[str, Any]]:
    """Bind every symbolic address the tasks use to its (region, memory type, offset, size) in the plan."""
    return bind((k for t in tasks for k in t.address_keys()), plan)


def bind(keys: Iterable[str], plan: MemoryPlan) -> dict[str, dict[str, Any]]:
    """Bind address keys (`Address.key`, repeats allowed) to their places in the plan, by key in sorted order."""
    out: dict[str, dict[str, Any]] = {}
    ws = {(w.node, w.index): w for w in plan.workspaces}
    for key in keys:
        if key in out:
            continue
        kind, rest = key.split(":", 1)  # rest: `node:index`, a tensor id
        if kind == "workspace":
            node, index = rest.rsplit(":", 1)
            w = ws.get((node, int(index)))
            if w is None:
                raise error("task-gen", f"{address_from_key(key)} has no place in the memory plan", where=node)
            out[key] = {"region": "feature_map", "mem_type": w.mem_type, "offset": w.offset, "size": w.size}
            continue
        tid = rest if kind != "model_input" else rest.rsplit(":", 1)[0] + ":0"
        p = plan.tensors.get(tid)
        if p is None:
            a = address_from_key(key)
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
    "bind",
    "bind_addresses",
    "builder_for",
    "generate_tasks",
    "register",
    "register_builder",
]
