"""Execute a compiled model with the reference kernels, exactly where its memory plan puts every tensor.

- **Memory**: one numpy uint8 arena per (region, memory type) of the plan's size, filled with 0xFF (NaN for
  floats) so a read of memory nothing wrote shows; a tensor is the view `arena[offset:offset + raw]` read with
  its dtype and storage shape. Graph inputs (Data nodes, by name or `index`; missing ones seeded random per
  rank) and weights (Const/Constant/Variable: the data they carry, see compiler/weights.py; seeded random from
  the node name for one that carries none, as the light models' weights are placeholders) are written at their
  planned addresses before the first task.
- **Kernels are initialised** per node before running (RT1): looked up by op type, a missing one is an error
  naming the op type; `_no_task` (virtual) nodes are skipped. They have no tasks, so nothing launches them
  (RT2): their consumers' tasks read the virtual op's output address, which is its input 0's.
- **Scheduling** is deterministic: each stream is a queue of its tasks in model order; repeatedly the
  lowest-numbered stream whose head task is runnable runs it. EVENT_WAIT is runnable once its event was
  recorded; an HCCL task once every rank has it at the head of that stream, then it runs for all ranks at once
  (lock-step collectives; ranks are simulated in one process with a copy of the arenas each). No runnable
  stream with tasks left is a deadlock, reported with what each stream waits for.
- :func:`evaluate_graph` is the reference: the same kernels over the graph in topological order with tensors in
  a dict, ignoring the memory plan and computing virtual ops as their op.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zlib
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from jsonschema import Draft202012Validator

from ...base.diagnostics import Diagnostic, RulepassError, did_you_mean, error
from ...base.limits import check_memory
from ...base.schema import load_schema
from ...base.yaml_source import load_text
from .. import formats
from ..facts import attr_bool, attr_int
from ..graph_file import graph_from_doc
from ..ir import ATTR_PARENT_NODE_INDEX, ComputeGraph, Node, OutAnchor, TensorDesc
from ..memory.assign import ArenaReport, MemoryPlan, TensorPlacement, WorkspacePlacement
from ..memory.verify import verify_plan
from ..weights import const_array
from .kernels import (
    Array,
    Kernel,
    numpy_dtype,
    origin_shape,
    origin_to_storage,
    run_collective,
    run_kernel,
    storage_to_origin,
)
from .onnx_ops import is_control_flow, kernel_of

__all__ = ["ExecutedTask", "RunResult", "checksum", "evaluate_graph", "model_rank_size", "run_model"]

INPUT_TYPES = frozenset({"Data", "RefData", "AippData", "AnnData", "QueueData"})
WEIGHT_TYPES = frozenset({"Const", "Constant", "Variable"})
PASSIVE_TYPES = INPUT_TYPES | WEIGHT_TYPES | {"NetOutput", "NoOp"}
CALL_TYPES = frozenset({"PartitionedCall", "StatefulPartitionedCall"})  # subgraphs that run once, in order
KERNEL_TASKS = frozenset(
    {
        "KERNEL",
        "VECTOR_KERNEL",
        "KERNEL_EX",
        "ALL_KERNEL",
        "VECTOR_ALL_KERNEL",
        "CUSTOM_KERNEL",
        "FUSION_KERNEL",
        "KERNEL_LAUNCH_V2",
        "PREPROCESS_KERNEL",
        "DSA",
        "DVPP",
    }
)
COPY_TASKS = frozenset({"MEMCPY_ASYNC", "MEMCPY_ADDR_ASYNC"})
QUIET_TASKS = frozenset({"NOP", "PROFILER_TRACE", "PROFILER_TRACE_EX", "FUSION_START", "FUSION_END", "LABEL_SET"})
EVENT_TASKS = frozenset({"EVENT_RECORD", "EVENT_WAIT"})
SUPPORTED_TASKS = KERNEL_TASKS | COPY_TASKS | QUIET_TASKS | EVENT_TASKS | {"HCCL", "FFTS_PLUS"}
CONTROL_FLOW_STEP = "CONTROL_FLOW"  # the executor's own step for an If/Loop (not a task of the model)
POISON = 0xFF  # arenas start as 0xFF bytes: NaN for floats, -1 for signed integers


def checksum(a: Array) -> str:
    """The first 16 hex digits of the sha256 of an array's bytes (C order)."""
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


@dataclass(frozen=True)
class ExecutedTask:
    """One task as it ran: id, stream, type name (without MODEL_TASK_) and op."""

    id: int
    stream: int
    type: str
    op: str


@dataclass
class RunResult:
    """Outputs (per NetOutput input, in origin layout) and what ran.

    `outputs` are rank 0's; `per_rank[r]` rank r's. `sources` names each output's producer anchor.
    `initialised` lists the nodes whose kernel was initialised (RT1), `virtual` the `_no_task` nodes that were
    skipped, `launched` rank 0's kernel launches in execution order and `trace` every task rank 0 ran.
    """

    outputs: dict[str, Array]
    per_rank: list[dict[str, Array]]
    sources: dict[str, str]
    inputs: list[dict[str, Array]]
    initialised: list[str] = field(default_factory=list)
    virtual: list[str] = field(default_factory=list)
    launched: list[str] = field(default_factory=list)
    trace: list[ExecutedTask] = field(default_factory=list)
    ranks: int = 1
    seed: int = 0
    name: str = ""

    def checksums(self, rank: int = 0) -> dict[str, str]:
        """Output name -> checksum of one rank's outputs."""
        return {k: checksum(v) for k, v in self.per_rank[rank].items()}


# ---- values: inputs and placeholder weights ---------------------------------------------------------------
def _rng(seed: int, *parts: str | int) -> np.random.Generator:
    words = [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF]
    for p in parts:
        words.append(zlib.crc32(p.encode("utf-8")) if isinstance(p, str) else p & 0xFFFFFFFF)
    return np.random.default_rng(words)


def _random_origin(desc: TensorDesc, rng: np.random.Generator, weight: bool) -> Array:
    """Seeded values of a desc's origin shape: inputs ~ N(0, 1); weights N(0, 1/fan_in), 1-D ones in [0.5, 1.5)
    (batch-norm scales and variances must be positive); integers in [-4, 4], booleans fair."""
    dt = numpy_dtype(desc.dtype)
    shape = origin_shape(desc)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -4
        return rng.integers(lo, 5, size=shape).astype(dt)
    values: Array
    if weight and len(shape) == 1:
        values = rng.uniform(0.5, 1.5, size=shape)
    else:
        values = rng.standard_normal(size=shape, dtype=np.float32)
        if weight and len(shape) >= 2:
            fan_in = max(int(np.prod(shape[1:])), 1)
            values = values / np.float32(np.sqrt(fan_in))
    if dt.kind == "c":
        values = values + 1j * rng.standard_normal(size=shape)
    return np.asarray(values).astype(dt)


def _weight_origin(node: Node, seed: int) -> Array:
    """A Const's values in origin layout: the data it carries (`value` or `_raw_data`, see compiler/weights.py);
    seeded random values only for a Const that carries none (the light models' placeholder weights)."""
    given = const_array(node.op)
    return (
        given if given is not None else _random_origin(node.op.output_descs[0], _rng(seed, "weight", node.name), True)
    )


def _graph_inputs(graph: ComputeGraph) -> list[Node]:
    nodes = [n for n in graph.topological_order() if n.type in INPUT_TYPES and n.op.output_descs]
    return sorted(nodes, key=lambda n: (attr_int(n, "index", 0), n.seq))


def _resolve_inputs(graph: ComputeGraph, given: Mapping[str, Any] | None, what: str) -> dict[str, Any]:
    """Given inputs keyed by Data node name or index -> by node name; unknown keys are an error."""
    if not given:
        return {}
    data = _graph_inputs(graph)
    by_index = {str(attr_int(n, "index", 0)): n.name for n in data}
    names = {n.name for n in data}
    out: dict[str, Any] = {}
    for key, value in given.items():
        name = key if key in names else by_index.get(str(key))
        if name is None:
            raise error(
                "runtime-input",
                f"{what}: '{key}' is not an input of graph '{graph.name}'",
                hint=did_you_mean(str(key), names) or f"inputs: {', '.join(sorted(names)) or 'none'}",
            )
        out[name] = value
    return out


def _input_origin(node: Node, value: Any, seed: int, rank: int) -> Array:
    desc = node.op.output_descs[0]
    if value is None:
        return _random_origin(desc, _rng(seed, "input", node.name, rank), False)
    arr = np.asarray(value)
    dt = numpy_dtype(desc.dtype)
    if arr.dtype != dt:
        if not np.can_cast(arr.dtype, dt, "same_kind"):
            raise error(
                "runtime-input",
                f"input '{node.name}' is {arr.dtype}; the graph wants {desc.dtype} ({dt})",
                where=node.name,
            )
        arr = arr.astype(dt)
    oshape = origin_shape(desc)
    if tuple(arr.shape) == oshape:
        return arr
    if tuple(arr.shape) == tuple(desc.shape):
        return storage_to_origin(arr, desc, f"input '{node.name}'")
    raise error(
        "runtime-input",
        f"input '{node.name}' has shape {list(arr.shape)}; the graph wants {list(oshape)}"
        + (f" (storage {list(desc.shape)})" if tuple(desc.shape) != oshape else ""),
        where=node.name,
    )


def _rank_values(
    graph: ComputeGraph,
    inputs: Mapping[str, Any] | None,
    rank_inputs: Sequence[Mapping[str, Any]] | None,
    ranks: int,
    seed: int,
) -> list[dict[str, Array]]:
    """Every rank's graph inputs in origin layout, by Data node name."""
    if ranks < 1:
        raise error("usage", f"ranks must be at least 1, not {ranks}")
    if seed < 0:
        raise error("usage", f"the seed must not be negative, not {seed}")
    if rank_inputs is not None and len(rank_inputs) > ranks:
        raise error("usage", f"inputs for {len(rank_inputs)} ranks given to a run on {ranks} rank(s)")
    common = _resolve_inputs(graph, inputs, "inputs")
    out: list[dict[str, Array]] = []
    for r in range(ranks):
        mine = dict(common)
        if rank_inputs is not None and r < len(rank_inputs):
            mine.update(_resolve_inputs(graph, rank_inputs[r], f"inputs of rank {r}"))
        out.append({n.name: _input_origin(n, mine.get(n.name), seed, r) for n in _graph_inputs(graph)})
    return out


def _reinterpret(arr: Array, desc: TensorDesc, what: str) -> Array:
    """A producer's storage array read through a consumer's desc (same bytes, maybe another shape or dtype)."""
    dt = numpy_dtype(desc.dtype)
    if tuple(arr.shape) == tuple(desc.shape) and arr.dtype == dt:
        return arr
    raw = formats.tensor_raw_size(desc.shape, desc.dtype)
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    if raw < 0 or flat.size < raw:
        raise error("runtime-layout", f"{what}: {desc.dtype}{list(desc.shape)} needs {raw} bytes, has {flat.size}")
    return flat[:raw].view(dt).reshape(desc.shape)


def _outputs_of(graph: ComputeGraph) -> list[tuple[str, Node, int, OutAnchor]]:
    """(name, NetOutput node, input index, producer) of every model output, in order."""
    out: list[tuple[str, Node, int, OutAnchor]] = []
    for n in graph.topological_order():
        if n.type != "NetOutput":
            continue
        for k, peer in enumerate(n.in_peers):
            if peer is not None:
                out.append((f"output_{len(out)}", n, k, peer))
    return out


# ---- pre-flight: the kernel of every node --------------------------------------------------------------------
def _control_owner(node: Node) -> Node | None:
    """The outermost If/Loop whose subgraphs hold `node` (None when no control flow holds it)."""
    found: Node | None = None
    g = node.graph
    while g.parent_node is not None:
        if is_control_flow(g.parent_node):
            found = g.parent_node
        g = g.parent_graph if g.parent_graph is not None else g.root
    return found


def _preflight(graph: ComputeGraph, launched: set[str] | None = None) -> dict[str, Kernel | None]:
    """The kernel of every node of the graph and its subgraphs that computes (with `launched`: of the nodes with
    kernel tasks, the If/Loop owners and their subgraphs' nodes; None for an If/Loop, whose subgraphs run), or
    one error naming the nodes that cannot run (the first in full), before any work."""
    kernels: dict[str, Kernel | None] = {}
    problems: list[Diagnostic] = []
    for node in graph.all_nodes():
        if node.type in PASSIVE_TYPES or (node.op.subgraph_names and node.type in CALL_TYPES):
            continue
        computed = launched is None or node.name in launched or is_control_flow(node) or _control_owner(node)
        if not computed:
            continue
        where = node.name
        if is_control_flow(node):
            kernels[node.name] = None
            why = _control_flow_problem(node)
        elif node.op.subgraph_names:
            why = (
                f"node '{node.name}' ({node.type}) is control flow that was not imported from an ONNX If/Loop, "
                "which the reference executor does not simulate"
            )
        else:
            try:
                kernels[node.name] = k = kernel_of(node)
            except RulepassError as exc:
                problems.append(exc.diagnostics[0])
                continue
            inside = k.collective and _control_owner(node) is not None
            why = f"node '{node.name}' ({node.type}) is a collective inside an If/Loop subgraph" if inside else None
        if why:
            problems.append(Diagnostic("runtime-unsupported", why, where=where))
    if not problems:
        return kernels
    first = problems[0]
    if len(problems) > 1:
        others = ", ".join(d.where or "?" for d in problems[1:6]) + (", ..." if len(problems) > 6 else "")
        first = dataclasses.replace(first, message=f"{first.message} (and {len(problems) - 1} more node(s): {others})")
    raise RulepassError(first)


# ---- control flow: If and Loop evaluate their subgraphs ------------------------------------------------------
def _parent_index(node: Node, k: int = 0, output: bool = False) -> int:
    v = (node.op.input_descs[k].attrs if output else node.op.attrs).get(ATTR_PARENT_NODE_INDEX)
    return v if isinstance(v, int) and not isinstance(v, bool) else -1


def _branch(node: Node, attr: str) -> ComputeGraph | None:
    rec = node.op.attrs.get("_onnx_attrs")
    ref = rec.get(attr) if isinstance(rec, dict) else None
    name = ref.get("graph") if isinstance(ref, dict) else None
    return next((g for g in node.subgraphs() if g.name == name), None)


def _control_flow_problem(node: Node) -> str | None:
    want = ("then_branch", "else_branch") if node.op.attrs.get("_onnx_op_type") == "If" else ("body",)
    missing = [a for a in want if _branch(node, a) is None]
    if missing:
        return f"node '{node.name}' ({node.type}) has no subgraph recorded for {', '.join(missing)}"
    return None


def _run_subgraph(
    sub: ComputeGraph, feed: Mapping[int, Array | None], seed: int, kernels: Mapping[str, Kernel | None]
) -> dict[int, Array]:
    """Evaluate a subgraph: each Data node reads feed[its _parent_node_index]; its NetOutput's inputs (origin
    layout) by their _parent_node_index."""
    bound: dict[str, Array] = {}
    for n in sub.topological_order():
        if n.type in INPUT_TYPES and n.op.output_descs:
            value = feed.get(_parent_index(n))
            if value is None:
                raise error("runtime", f"subgraph '{sub.name}': input '{n.name}' has no value", where=n.name)
            bound[n.name] = _input_origin(n, value, seed, 0)
    values = _evaluate_nodes(sub, [bound], seed, kernels, [])[0]
    out: dict[int, Array] = {}
    for _, net, k, peer in _outputs_of(sub):
        desc = net.op.input_descs[k]
        arr = _reinterpret(values[(peer.node.name, peer.index)], desc, f"subgraph '{sub.name}' output {k}")
        p = _parent_index(net, k, output=True)
        out[p if p >= 0 else k] = storage_to_origin(arr, desc, f"subgraph '{sub.name}' output {k}")
    return out


def _scalar(a: Array | None, default: int | bool) -> int | bool | None:
    return default if a is None or a.size == 0 else a.reshape(-1)[0].item()  # type: ignore[no-any-return]


def _control_flow(
    node: Node, ins: Sequence[Array | None], seed: int, kernels: Mapping[str, Kernel | None]
) -> list[Array]:
    """Run an imported If (the branch its condition picks) or Loop (its body, while i < M and the condition
    holds; loop-carried values fed back, scan outputs stacked): origin inputs in, origin outputs out."""
    n_out = len(node.op.output_descs)
    feed = dict(enumerate(ins))
    if node.op.attrs.get("_onnx_op_type") == "If":
        branch = _branch(node, "then_branch" if _scalar(ins[0], False) else "else_branch")
        assert branch is not None  # the pre-flight checked both
        outs = _run_subgraph(branch, feed, seed, kernels)
        return [outs[j] for j in range(n_out)]
    body = _branch(node, "body")
    assert body is not None
    formal = [n for n in body.topological_order() if n.type in INPUT_TYPES and "index" in n.op.attrs]
    n_carried = len(formal) - 2
    limit, cond = _scalar(ins[0], -1), bool(_scalar(ins[1] if len(ins) > 1 else None, True))
    carried = [ins[2 + k] for k in range(n_carried)]
    scans: list[list[Array]] = []
    i = 0
    while cond and (limit is None or limit < 0 or i < limit):
        feed.update({0: np.array(i, dtype=np.int64), 1: np.array(cond)})
        feed.update({2 + k: v for k, v in enumerate(carried)})
        outs = _run_subgraph(body, feed, seed, kernels)
        cond = bool(_scalar(outs.get(0), True))
        carried = [outs[1 + k] for k in range(n_carried)]
        scans.append([outs[k] for k in sorted(outs) if k > n_carried])
        i += 1
    results: list[Array] = []
    for j in range(n_out):
        if j < n_carried:
            v = carried[j]
            results.append(v if v is not None else np.zeros(origin_shape(node.op.output_descs[j])))
        elif scans and j - n_carried < len(scans[0]):
            results.append(np.stack([s[j - n_carried] for s in scans]))
        else:  # no iteration ran: an empty scan output
            desc = node.op.output_descs[j]
            results.append(np.zeros(origin_shape(desc), dtype=numpy_dtype(desc.dtype)))
    return results


# ---- the direct evaluation ----------------------------------------------------------------------------------
def _evaluate_nodes(
    graph: ComputeGraph,
    bound: Sequence[Mapping[str, Array]],
    seed: int,
    kernels: Mapping[str, Kernel | None],
    launched: list[str],
    reads: dict[str, Array] | None = None,
) -> list[dict[tuple[str, int], Array]]:
    """Every rank's tensors (storage layout) of one graph, its nodes run in topological order; `reads`, when
    given, receives rank 0's kernel inputs as read, by "node:input index"."""
    ranks = len(bound)
    values: list[dict[tuple[str, int], Array]] = [{} for _ in range(ranks)]
    for node in graph.topological_order():
        t = node.type
        if t in INPUT_TYPES:
            desc = node.op.output_descs[0]
            for r in range(ranks):
                values[r][(node.name, 0)] = origin_to_storage(bound[r][node.name], desc, f"input '{node.name}'")
            continue
        if t in WEIGHT_TYPES:
            if node.op.output_descs:
                w = origin_to_storage(_weight_origin(node, seed), node.op.output_descs[0], f"weight '{node.name}'")
                for r in range(ranks):
                    values[r][(node.name, 0)] = w
            continue
        if t in ("NetOutput", "NoOp"):
            continue
        per_rank: list[list[Array | None]] = []
        for r in range(ranks):
            ins: list[Array | None] = []
            for i, peer in enumerate(node.in_peers):
                if peer is None:
                    ins.append(None)
                    continue
                src = values[r].get((peer.node.name, peer.index))
                if src is None:
                    raise error("runtime", f"node '{node.name}' input {i}: {peer} was never computed", where=node.name)
                value = _reinterpret(src, node.op.input_descs[i], f"node '{node.name}' input {i}")
                ins.append(value)
                if reads is not None and r == 0:
                    reads[f"{node.name}:{i}"] = value
            per_rank.append(ins)
        kernel = kernels.get(node.name)
        if is_control_flow(node):
            outs = [_run_control_flow(node, ins, seed, kernels) for ins in per_rank]
        elif kernel is None:
            raise error(
                "runtime-unsupported",
                f"node '{node.name}' ({node.type}) owns subgraphs, which the direct evaluation does not run",
                where=node.name,
            )
        elif kernel.collective:
            outs = run_collective(node.op, per_rank, kernel)
        else:
            outs = [run_kernel(node.op, ins, kernel) for ins in per_rank]
        for r in range(ranks):
            for j, arr in enumerate(outs[r]):
                values[r][(node.name, j)] = arr
        launched.append(node.name)
    return values


def _run_control_flow(
    node: Node, ins: Sequence[Array | None], seed: int, kernels: Mapping[str, Kernel | None]
) -> list[Array]:
    """An If/Loop on storage-layout inputs: storage -> origin, its subgraphs, origin -> storage."""
    what = f"node '{node.name}' ({node.type})"
    origin = [
        None if a is None else storage_to_origin(a, node.op.input_descs[i], f"{what} input {i}")
        for i, a in enumerate(ins)
    ]
    outs = _control_flow(node, origin, seed, kernels)
    result: list[Array] = []
    for j, desc in enumerate(node.op.output_descs):
        arr = np.asarray(outs[j])
        if tuple(arr.shape) != origin_shape(desc):
            raise error(
                "runtime-kernel",
                f"{what} output {j}: its subgraph computed shape {list(arr.shape)}, the graph says "
                f"{list(origin_shape(desc))}",
                where=node.name,
            )
        arr = arr.astype(numpy_dtype(desc.dtype), copy=False)
        result.append(np.asarray(origin_to_storage(arr, desc, f"{what} output {j}"), order="C"))
    return result


def evaluate_graph(
    graph: ComputeGraph,
    inputs: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
    ranks: int = 1,
    rank_inputs: Sequence[Mapping[str, Any]] | None = None,
    reads: dict[str, Array] | None = None,
) -> RunResult:
    """Evaluate `graph` directly: tensors in a dict, topological order, the same kernels and values as
    :func:`run_model`, no memory plan; virtual (`_no_task`) ops are computed as their op, If/Loop run their
    subgraphs. `reads`, when given, receives rank 0's kernel inputs as read, by "node:input index" (as
    :func:`run_model` fills it)."""
    kernels = _preflight(graph)
    bound = _rank_values(graph, inputs, rank_inputs, ranks, seed)
    result = RunResult({}, [], {}, bound, ranks=ranks, seed=seed, name=graph.name)
    values = _evaluate_nodes(graph, bound, seed, kernels, result.launched, reads)
    result.initialised = list(result.launched)
    for r in range(ranks):
        mine: dict[str, Array] = {}
        for name, net, k, peer in _outputs_of(graph):
            desc = net.op.input_descs[k]
            arr = _reinterpret(values[r][(peer.node.name, peer.index)], desc, f"output {name}")
            mine[name] = np.asarray(storage_to_origin(arr, desc, f"output {name}"), order="C")
            result.sources[name] = f"{peer.node.name}:{peer.index}"
        result.per_rank.append(mine)
    result.outputs = result.per_rank[0]
    return result


# ---- the model ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Place:
    region: str
    mem_type: int
    offset: int
    size: int
    tensor: str = ""


@dataclass
class _Model:
    name: str
    graph: ComputeGraph
    nodes: dict[str, Node]
    tasks: list[dict[str, Any]]
    addresses: dict[str, _Place]
    tensors: dict[str, _Place]
    raw: dict[str, int]
    arenas: dict[tuple[str, int], int]
    events: list[tuple[Node, Node]]
    plan: dict[str, Any]


@cache
def _model_validator() -> Draft202012Validator:
    return Draft202012Validator(load_schema("rulepass.compiler", "model.schema.json"))


def _bad(message: str, hint: str | None = None) -> RulepassError:
    return error("model", message, hint=hint)


def _nonneg_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _place(v: Any, where: str) -> _Place:
    if not isinstance(v, dict):
        raise _bad(f"{where} is not a mapping")
    region, mem_type, offset, size = v.get("region"), v.get("mem_type"), v.get("offset"), v.get("size")
    ints = isinstance(mem_type, int) and isinstance(offset, int) and isinstance(size, int)
    if not (isinstance(region, str) and ints and all(_nonneg_int(x) for x in (mem_type, offset, size))):
        raise _bad(f"{where} needs region (string), mem_type, offset and size (non-negative integers)")
    assert isinstance(mem_type, int) and isinstance(offset, int) and isinstance(size, int)
    tensor = v.get("tensor", "")
    return _Place(region, mem_type, offset, size, tensor if isinstance(tensor, str) else "")


def _task_type(t: dict[str, Any]) -> str:
    name = t.get("type_name", "")
    return name[len("MODEL_TASK_") :] if isinstance(name, str) and name.startswith("MODEL_TASK_") else str(name)


def _all_tasks(tasks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks and, after each FFTS+ task, its sub-tasks."""
    out: list[dict[str, Any]] = []
    for t in tasks:
        out.append(t)
        ffts = t.get("ffts_plus_task")
        if isinstance(ffts, dict) and isinstance(ffts.get("sub_tasks"), list):
            out.extend(_all_tasks([s for s in ffts["sub_tasks"] if isinstance(s, dict)]))
    return out


def _operands(t: dict[str, Any], node: Node) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(input index, address key) and (output index, address key) of a kernel-like or HCCL task."""
    kind = _task_type(t)
    conn = [i for i, p in enumerate(node.in_peers) if p is not None]
    n_out = len(node.out_peers)
    where = f"task {t.get('id')} ({kind} of '{node.name}')"
    if t.get("kernel") is not None or t.get("kernel_ex") is not None:
        part = t.get("kernel") if t.get("kernel") is not None else t.get("kernel_ex")
        args = part.get("args") if isinstance(part, dict) else None
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise _bad(f"{where} has no list of address keys in 'args'")
        if len(args) < len(conn) + n_out:
            raise _bad(
                f"{where} has {len(args)} args; node '{node.name}' has {len(conn)} connected input(s) and "
                f"{n_out} output(s)"
            )
        ins = list(zip(conn, args[: len(conn)], strict=True))
        outs = list(enumerate(args[len(conn) : len(conn) + n_out]))
        return ins, outs
    for key in ("kernel_hccl", "dsa_task", "dvpp_task"):
        part = t.get(key)
        if isinstance(part, dict):
            i_keys, o_keys = part.get("inputs"), part.get("outputs")
            if not isinstance(i_keys, list) or not isinstance(o_keys, list):
                raise _bad(f"{where}: '{key}' needs 'inputs' and 'outputs' lists of address keys")
            if len(i_keys) != len(conn) or len(o_keys) != n_out:
                raise _bad(
                    f"{where} has {len(i_keys)} input(s) and {len(o_keys)} output(s); node '{node.name}' has "
                    f"{len(conn)} connected input(s) and {n_out} output(s)"
                )
            return list(zip(conn, i_keys, strict=True)), list(enumerate(o_keys))
    raise _bad(f"{where} has no kernel, kernel_ex, kernel_hccl, dsa_task or dvpp_task part")


def _load_model(model: Mapping[str, Any]) -> _Model:
    """A model file's JSON object, checked (schema, graph, placements, tasks) and read for the executor."""
    _check_schema(model)
    md = model["model_def"]
    try:
        graph = graph_from_doc(load_text(json.dumps(model["graph"]), "<model graph>"), str(md["name"]))
    except RulepassError as exc:
        raise _bad(f"the model's graph is invalid: {exc.diagnostics[0].headline()}") from None
    except (TypeError, ValueError) as exc:
        raise _bad(f"the model's graph cannot be read: {exc}") from None
    nodes = {n.name: n for n in graph.all_nodes()}
    plan = model["memory_plan"]
    arenas = _arenas(plan)
    raw_tensors = plan.get("tensors")
    if not isinstance(raw_tensors, dict):
        raise _bad("memory_plan.tensors must map tensors (node:index) to their placements")
    tensors = {k: _place(v, f"memory_plan.tensors['{k}']") for k, v in raw_tensors.items()}
    raw: dict[str, int] = {}
    for k, v in raw_tensors.items():
        r = v.get("raw_size", v.get("size"))
        raw[k] = r if _nonneg_int(r) else tensors[k].size
    addresses = {k: _place(v, f"addresses['{k}']") for k, v in model["addresses"].items()}
    _check_placements(arenas, tensors, raw, addresses)
    tasks = [t for t in md["task"]]
    _check_tasks(tasks, nodes, addresses)
    events: list[tuple[Node, Node]] = []
    for e in model["events"]:
        prod, cons = nodes.get(str(e.get("producer"))), nodes.get(str(e.get("consumer")))
        if prod is not None and cons is not None:
            events.append((prod, cons))
    return _Model(str(md["name"]), graph, nodes, tasks, addresses, tensors, raw, arenas, events, plan)


def _check_schema(model: Mapping[str, Any]) -> None:
    """The model is a mapping valid under the model schema (the first five errors, by path, otherwise)."""
    if not isinstance(model, Mapping):
        raise _bad(f"a model is a mapping (the model file's JSON object), not {type(model).__name__}")
    errors = sorted(_model_validator().iter_errors(model), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        diags = []
        for e in errors[:5]:
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path).lstrip(".")
            msg = e.message if len(e.message) <= 200 else e.message[:200] + "..."
            diags.append(Diagnostic("model", f"model field '{path or '(root)'}': {msg}"))
        raise RulepassError(diags)


def _arenas(plan: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    """The memory plan's arenas: (region, memory type) -> size."""
    arenas: dict[tuple[str, int], int] = {}
    for k, a in enumerate(plan.get("arenas", []) if isinstance(plan.get("arenas"), list) else [None]):
        if (
            not isinstance(a, dict)
            or not isinstance(a.get("region"), str)
            or not all(_nonneg_int(a.get(x)) for x in ("mem_type", "size"))
        ):
            raise _bad(f"memory_plan.arenas[{k}] needs region (string), mem_type and size (non-negative integers)")
        arenas[(a["region"], a["mem_type"])] = a["size"]
    return arenas


def _check_placements(
    arenas: dict[tuple[str, int], int],
    tensors: dict[str, _Place],
    raw: dict[str, int],
    addresses: dict[str, _Place],
) -> None:
    """Every address and planned tensor lies inside an arena, and every address naming a tensor is where the
    plan puts it."""
    for what, table in (("addresses", addresses), ("memory_plan.tensors", tensors)):
        for k, place in table.items():
            size = arenas.get((place.region, place.mem_type))
            if size is None:
                raise _bad(f"{what}['{k}'] is in {place.region} memory type {place.mem_type}, which has no arena")
            if place.offset + min(place.size, raw.get(place.tensor or k, place.size)) > size:
                raise _bad(
                    f"{what}['{k}'] at [{place.offset}, {place.offset + place.size}) lies outside its {size}-byte arena"
                )
    for k, place in addresses.items():
        planned = tensors.get(place.tensor) if place.tensor else None
        if place.tensor and planned is None:
            raise _bad(f"address '{k}' names tensor '{place.tensor}', which the memory plan does not place")
        if planned is not None and (planned.region, planned.mem_type, planned.offset) != (
            place.region,
            place.mem_type,
            place.offset,
        ):
            raise _bad(
                f"address '{k}' puts tensor '{place.tensor}' at {place.region}@{place.offset}, but the memory plan "
                f"puts it at {planned.region}@{planned.offset}"
            )


def _check_tasks(tasks: Sequence[dict[str, Any]], nodes: dict[str, Node], addresses: dict[str, _Place]) -> None:
    """Every task (nested ones too) is of a kind the executor runs, on a node of the graph, with its event id
    and with addresses the address table has."""
    for t in _all_tasks(tasks):
        kind = _task_type(t)
        where = f"task {t.get('id')} ({kind})"
        if kind not in SUPPORTED_TASKS:
            raise error(
                "runtime-unsupported",
                f"{where} of '{t.get('op')}': the reference executor does not run {kind} tasks",
                hint="control flow (stream switch/active, labels) is not simulated",
            )
        if t.get("op") not in nodes:
            raise _bad(f"{where} names op '{t.get('op')}', which is not a node of the model's graph")
        if kind in EVENT_TASKS and not _nonneg_int(t.get("event_id")):
            raise _bad(f"{where} has no event_id")
        keys: list[Any] = []
        if kind in KERNEL_TASKS or kind == "HCCL":
            ins, outs = _operands(t, nodes[t["op"]])
            keys = [k for _, k in ins + outs]
        elif kind in COPY_TASKS:
            mc = t.get("memcpy_async")
            keys = [mc.get("src"), mc.get("dst")] if isinstance(mc, dict) else [None]
        for key in keys:
            if not isinstance(key, str) or key not in addresses:
                raise _bad(f"{where} of '{t['op']}' uses address {key!r}, which the model's address table lacks")


def _plan_of(m: _Model) -> MemoryPlan:
    """The model's memory plan as a MemoryPlan, for the verifier."""
    plan = MemoryPlan()
    for k, p in m.tensors.items():
        v = m.plan["tensors"][k]
        first, last = v.get("first", 0), v.get("last", 0)
        if not (_nonneg_int(first) and _nonneg_int(last)):
            raise _bad(
                f"tensor '{k}' of the memory plan: 'first' and 'last' must be step numbers, got {first!r}, {last!r}"
            )
        plan.tensors[k] = TensorPlacement(
            k, p.region, p.mem_type, p.offset, p.size, m.raw[k], str(v.get("unit", k)), int(first), int(last)
        )
    for w in m.plan.get("workspaces", []) or []:
        if isinstance(w, dict) and all(_nonneg_int(w.get(x)) for x in ("index", "mem_type", "offset", "size", "step")):
            plan.workspaces.append(
                WorkspacePlacement(str(w.get("node")), w["index"], w["mem_type"], w["offset"], w["size"], w["step"])
            )
    for (region, mem_type), size in m.arenas.items():
        plan.arenas.append(ArenaReport(region, mem_type, size, size, 0, size, ""))
    return plan


def _memory_needed(m: _Model, ranks: int) -> int:
    """Bytes a run allocates, at least: every arena and graph input per rank, and every weight once."""

    def raw(desc: TensorDesc) -> int:
        return max(formats.tensor_raw_size(desc.shape, desc.dtype), 0)

    inputs = sum(raw(n.op.output_descs[0]) for n in _graph_inputs(m.graph) if n.graph.is_root and n.op.output_descs)
    weights = sum(
        raw(n.op.output_descs[0]) for n in m.graph.all_nodes() if n.type in WEIGHT_TYPES and n.op.output_descs
    )
    return ranks * (sum(m.arenas.values()) + inputs) + weights


def model_rank_size(model: Mapping[str, Any]) -> int:
    """The largest `rank_size` of the model's HCCL tasks (1 without collectives): the ranks it is built for."""
    best = 1
    md = model.get("model_def") if isinstance(model, Mapping) else None
    tasks = md.get("task") if isinstance(md, Mapping) else None
    for t in _all_tasks([t for t in tasks if isinstance(t, dict)]) if isinstance(tasks, list) else []:
        h = t.get("kernel_hccl")
        if isinstance(h, dict) and _nonneg_int(h.get("rank_size")):
            best = max(best, h["rank_size"])
    return best


# ---- the executor -------------------------------------------------------------------------------------------
@dataclass
class _Rank:
    rank: int
    arenas: dict[tuple[str, int], Array]
    queues: dict[int, deque[int]]
    recorded: set[int] = field(default_factory=set)
    launched: list[str] = field(default_factory=list)
    trace: list[ExecutedTask] = field(default_factory=list)


class _Executor:
    def __init__(
        self, m: _Model, ranks: int, kernels: dict[str, Kernel | None], seed: int, reads: dict[str, Array] | None
    ) -> None:
        self.m = m
        self.ranks = ranks
        self.kernels = kernels
        self.seed = seed
        self.states: list[_Rank] = []
        self.reads = reads  # rank 0's kernel inputs as read, by "node:input" (for differential checks)

    # memory
    def view(self, st: _Rank, p: _Place, desc: TensorDesc, what: str) -> Array:
        raw = formats.tensor_raw_size(desc.shape, desc.dtype)
        if raw < 0:
            raise error("runtime", f"{what}: {desc.dtype}{list(desc.shape)} has no static size")
        arena = st.arenas[(p.region, p.mem_type)]
        if p.offset + raw > arena.size:
            raise error(
                "runtime-memory",
                f"{what}: {raw} bytes at {p.region}@{p.offset} run past the end of the {arena.size}-byte arena",
            )
        return arena[p.offset : p.offset + raw].view(numpy_dtype(desc.dtype)).reshape(desc.shape)

    def tensor(self, anchor: str, what: str) -> _Place:
        p = self.m.tensors.get(anchor)
        if p is None:
            raise _bad(f"{what}: tensor '{anchor}' has no place in the model's memory plan")
        return p

    # tasks
    def run_task(self, st: _Rank, t: dict[str, Any]) -> None:
        kind = _task_type(t)
        node = self.m.nodes[t["op"]]
        if kind == "EVENT_RECORD":
            st.recorded.add(t["event_id"])
        elif kind in KERNEL_TASKS:
            if attr_bool(node, "_no_task"):
                return  # RT2: a virtual op never launches, even if a task names it
            ins, outs = _operands(t, node)
            inputs: list[Array | None] = [None] * len(node.op.input_descs)
            for i, key in ins:
                view = self.view(st, self.m.addresses[key], node.op.input_descs[i], f"'{node.name}' input {i}")
                value = inputs[i] = np.array(view)
                if self.reads is not None and st.rank == 0:
                    self.reads[f"{node.name}:{i}"] = value
            results = run_kernel(node.op, inputs, self.kernels.get(node.name))
            self.write(st, node, outs, results)
            st.launched.append(node.name)
        elif kind == CONTROL_FLOW_STEP:
            self.control_flow(st, node)
        elif kind in COPY_TASKS:
            mc = t["memcpy_async"]
            src, dst = self.m.addresses[mc["src"]], self.m.addresses[mc["dst"]]
            n = min(self.m.raw.get(src.tensor, src.size), self.m.raw.get(dst.tensor, dst.size))
            a_src, a_dst = st.arenas[(src.region, src.mem_type)], st.arenas[(dst.region, dst.mem_type)]
            a_dst[dst.offset : dst.offset + n] = a_src[src.offset : src.offset + n].copy()
            st.launched.append(node.name)
        elif kind == "FFTS_PLUS":
            for sub in t["ffts_plus_task"].get("sub_tasks", []):
                if _task_type(sub) == "HCCL":
                    raise error("runtime-unsupported", f"FFTS+ task of '{node.name}' holds an HCCL sub-task")
                self.run_task(st, sub)

    def control_flow(self, st: _Rank, node: Node) -> None:
        """An If/Loop: its inputs read where the plan puts its producers' outputs, its subgraphs evaluated
        directly, its outputs written at its planned addresses."""
        inputs: list[Array | None] = []
        for i, peer in enumerate(node.in_peers):
            if peer is None:
                inputs.append(None)
                continue
            p = self.tensor(f"{peer.node.name}:{peer.index}", f"'{node.name}' input {i}")
            inputs.append(np.array(self.view(st, p, node.op.input_descs[i], f"'{node.name}' input {i}")))
        results = _run_control_flow(node, inputs, self.seed, self.kernels)
        for j, arr in enumerate(results):
            p_out = self.m.tensors.get(f"{node.name}:{j}")
            if p_out is None:
                if node.out_peers[j]:
                    raise _bad(f"tensor '{node.name}:{j}' has no place in the model's memory plan")
                continue
            self.view(st, p_out, node.op.output_descs[j], f"'{node.name}' output {j}")[...] = arr
        st.launched.append(node.name)

    def write(self, st: _Rank, node: Node, outs: list[tuple[int, str]], results: list[Array]) -> None:
        for j, key in outs:
            view = self.view(st, self.m.addresses[key], node.op.output_descs[j], f"'{node.name}' output {j}")
            view[...] = results[j]

    def run_collective(self, t: dict[str, Any]) -> None:
        node = self.m.nodes[t["op"]]
        ins, outs = _operands(t, node)
        per_rank: list[list[Array | None]] = []
        for st in self.states:
            inputs: list[Array | None] = [None] * len(node.op.input_descs)
            for i, key in ins:
                view = self.view(st, self.m.addresses[key], node.op.input_descs[i], f"'{node.name}' input {i}")
                value = inputs[i] = np.array(view)
                if self.reads is not None and st.rank == 0:
                    self.reads[f"{node.name}:{i}"] = value
            per_rank.append(inputs)
        results = run_collective(node.op, per_rank, self.kernels.get(node.name))
        for st, res in zip(self.states, results, strict=True):
            self.write(st, node, outs, res)
            st.launched.append(node.name)

    # scheduling
    def runnable(self, st: _Rank, stream: int) -> bool:
        q = st.queues[stream]
        if not q:
            return False
        t = self.m.tasks[q[0]]
        kind = _task_type(t)
        if kind == "EVENT_WAIT":
            return int(t["event_id"]) in st.recorded
        if kind == "HCCL":
            return all(o.queues[stream] and o.queues[stream][0] == q[0] for o in self.states)
        return True

    def deadlock(self) -> RulepassError:
        lines = []
        for st in self.states:
            for s, q in sorted(st.queues.items()):
                if not q:
                    continue
                t = self.m.tasks[q[0]]
                kind = _task_type(t)
                why = (
                    f"waits for event {t['event_id']}, which is never recorded"
                    if kind == "EVENT_WAIT"
                    else "waits for the other ranks at this collective"
                    if kind == "HCCL"
                    else "is blocked"
                )
                lines.append(f"rank {st.rank} stream {s}: task {t.get('id')} ({kind} of '{t['op']}') {why}")
        return error("runtime-deadlock", "deadlock: no stream can run; " + "; ".join(lines[:8]))

    def run(self) -> None:
        while any(q for st in self.states for q in st.queues.values()):
            progressed = False
            for st in self.states:
                stream = next((s for s in sorted(st.queues) if self.runnable(st, s)), None)
                if stream is None:
                    continue
                index = st.queues[stream][0]
                t = self.m.tasks[index]
                if _task_type(t) == "HCCL":
                    for o in self.states:
                        o.queues[stream].popleft()
                        o.trace.append(ExecutedTask(int(t["id"]), stream, "HCCL", t["op"]))
                    self.run_collective(t)
                else:
                    st.queues[stream].popleft()
                    st.trace.append(ExecutedTask(int(t["id"]), stream, _task_type(t), t["op"]))
                    self.run_task(st, t)
                progressed = True
            if not progressed:
                raise self.deadlock()


def _order_key(t: dict[str, Any], position: Mapping[str, int]) -> tuple[int, int]:
    return position[t["op"]], 0 if _task_type(t) == "EVENT_WAIT" else 2


def _schedule(m: _Model) -> dict[int, list[int]]:
    """Each stream's queue of task indices in model order. An If/Loop has no task: its subgraphs' kernel and copy
    tasks are left out (the owner evaluates them) and one CONTROL_FLOW step for the owner is put on its stream
    after its own event waits, before its event records and the tasks of later nodes (GE's node order: an owner,
    then its subgraphs' nodes)."""
    position = {n.name: k for k, n in enumerate(m.graph.all_nodes())}
    queues: dict[int, list[int]] = {}
    owners: list[Node] = []
    for i, t in enumerate(m.tasks):
        node = m.nodes[t["op"]]
        if _control_owner(node) is not None and _task_type(t) not in EVENT_TASKS:
            continue
        queues.setdefault(int(t["stream_id"]), []).append(i)
    for node in m.graph.all_nodes():
        if is_control_flow(node) and _control_owner(node) is None:
            owners.append(node)
    for node in owners:
        stream = max(node.op.stream_id, 0)
        m.tasks.append({"id": -1, "type_name": CONTROL_FLOW_STEP, "stream_id": stream, "op": node.name})
        q = queues.setdefault(stream, [])
        mine = (position[node.name], 1)  # after the owner's own event waits, before its records
        at = next((k for k, i in enumerate(q) if _order_key(m.tasks[i], position) > mine), len(q))
        q.insert(at, len(m.tasks) - 1)
    return dict(sorted(queues.items()))


def _initialise(m: _Model) -> tuple[list[str], list[str]]:
    """RT1: the kernel of every node that has kernel tasks (the pre-flight has found every node's), skipping
    `_no_task` nodes and the nodes inside If/Loop subgraphs (their owner runs them); and refuse a node that
    computes something without a task while its outputs are not its input's memory (nothing would write them).
    """
    kinds: dict[str, set[str]] = {}
    for t in _all_tasks(m.tasks):
        kinds.setdefault(str(t["op"]), set()).add(_task_type(t))
    initialised: list[str] = []
    virtual: list[str] = []
    for node in m.graph.all_nodes():
        if _control_owner(node) is not None:
            continue
        if is_control_flow(node):
            initialised.append(node.name)
            continue
        if attr_bool(node, "_no_task"):
            virtual.append(node.name)
            continue
        mine = kinds.get(node.name, set())
        if mine & (KERNEL_TASKS | {"HCCL"}):
            initialised.append(node.name)
            continue
        if mine & (COPY_TASKS | {"FFTS_PLUS"}) or node.type in PASSIVE_TYPES or node.op.subgraph_names:
            continue
        src = node.in_peers[0] if node.in_peers else None
        for out in node.out_anchors:
            if not out.consumers:
                continue
            mine_p = m.tensors.get(f"{node.name}:{out.index}")
            src_p = m.tensors.get(f"{src.node.name}:{src.index}") if src is not None else None
            same = (
                mine_p is not None
                and src_p is not None
                and (mine_p.region, mine_p.mem_type, mine_p.offset) == (src_p.region, src_p.mem_type, src_p.offset)
            )
            if not same:
                raise error(
                    "runtime-model",
                    f"node '{node.name}' ({node.type}) has no task and is not virtual, yet its output "
                    f"{node.name}:{out.index} is not its input's memory: nothing would write what its consumers read",
                    hint="a compiler bug: give the op a task, or alias its output to its input in the memory plan",
                    where=node.name,
                )
    return initialised, virtual


def run_model(
    model: Mapping[str, Any],
    inputs: Mapping[str, Any] | None = None,
    *,
    ranks: int = 1,
    seed: int = 0,
    rank_inputs: Sequence[Mapping[str, Any]] | None = None,
    verify: bool = True,
    reads: dict[str, Array] | None = None,
    max_memory: int | None = None,
) -> RunResult:
    """Execute a compiled model (the model file's JSON object) on `ranks` simulated ranks.

    `reads`, when given, receives rank 0's kernel inputs as they were read, by "node:input index".

    `inputs` (by Data node name or index, origin or storage shape) apply to every rank, `rank_inputs[r]` to
    rank r; missing inputs are seeded random per rank, weights seeded random per node. With `verify` the
    memory plan is proved safe by the independent verifier first, and an unsafe plan is an error. A model whose
    arenas, inputs and weights need more than `max_memory` bytes (default: `default_memory_budget()`) is
    refused before anything is allocated.
    """
    m = _load_model(model)
    need = model_rank_size(model)
    if need > 1 and ranks != need:
        raise error(
            "runtime-ranks",
            f"model '{m.name}' has collectives over {need} ranks; it cannot run on {ranks}",
            hint=f"run it with ranks={need} (--ranks {need})",
        )
    check_memory(_memory_needed(m, ranks), max_memory, f"running model '{m.name}' on {ranks} rank(s)")
    if verify:
        violations = verify_plan(m.graph, _plan_of(m), events=m.events)
        if violations:
            raise error(
                "memory-plan",
                f"the memory plan of model '{m.name}' is unsafe: " + "; ".join(str(v) for v in violations[:5]),
                hint="run with verify=False (--no-verify) to execute it anyway",
            )
    launched = {str(t["op"]) for t in _all_tasks(m.tasks) if _task_type(t) in KERNEL_TASKS | {"HCCL"}}
    kernels = _preflight(m.graph, launched)
    initialised, virtual = _initialise(m)
    bound = _rank_values(m.graph, inputs, rank_inputs, ranks, seed)
    ex = _Executor(m, ranks, kernels, seed, reads)
    order = _schedule(m)
    weights = [n for n in m.graph.all_nodes() if n.type in WEIGHT_TYPES and n.op.output_descs]
    weight_values = {n.name: origin_to_storage(_weight_origin(n, seed), n.op.output_descs[0]) for n in weights}
    for r in range(ranks):
        arenas = {key: np.full(size, POISON, dtype=np.uint8) for key, size in sorted(m.arenas.items())}
        queues = {s: deque(q) for s, q in order.items()}
        st = _Rank(r, arenas, queues)
        ex.states.append(st)
        for n in _graph_inputs(m.graph):
            if not n.graph.is_root:
                continue
            desc = n.op.output_descs[0]
            p = ex.tensor(f"{n.name}:0", f"input '{n.name}'")
            ex.view(st, p, desc, f"input '{n.name}'")[...] = origin_to_storage(bound[r][n.name], desc, n.name)
        for n in weights:
            p = ex.tensor(f"{n.name}:0", f"weight '{n.name}'")
            ex.view(st, p, n.op.output_descs[0], f"weight '{n.name}'")[...] = weight_values[n.name]
    ex.run()
    result = RunResult(
        {}, [], {}, bound, initialised, virtual, ex.states[0].launched, ex.states[0].trace, ranks, seed, m.name
    )
    for st in ex.states:
        mine: dict[str, Array] = {}
        for name, net, k, peer in _outputs_of(m.graph):
            desc = net.op.input_descs[k]
            anchor = f"{peer.node.name}:{peer.index}"
            view = ex.view(st, ex.tensor(anchor, f"output {name}"), desc, f"output {name}")
            mine[name] = np.asarray(storage_to_origin(np.array(view), desc, f"output {name}"), order="C")
            result.sources[name] = anchor
        result.per_rank.append(mine)
    result.outputs = result.per_rank[0]
    return result
