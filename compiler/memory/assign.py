"""Memory assignment for a marked graph: sizes, aliases, zero-copy layouts, lifetimes, then offsets.

GE's rules (spec §5), organised around placement units:
- **Sizes** as GE computes them: raw bytes of the storage shape; allocation size align_up(raw, 32) + 32;
  blocks aligned to 512 (MEM_ALIGN_SIZE).
- **Aliases and layouts** become offset relations in a weighted union-find: an output that reuses an input
  (Reshape, NetOutput and While pass-through, `reference` ops with matching names, reuse-input flags,
  no-padding reuse, subgraph Data nodes) sits at its source's offset; a no-padding continuous input
  (zero-copy concat/pack) puts input k at input 0 + the raw sizes before it and the output at input 0; a
  no-padding continuous output (zero-copy split) is the mirror image; padded continuous inputs/outputs
  (`continuous_input`/`continuous_output`) sit back to back in 512-aligned strides. Each set is one
  placement unit: a root buffer with its members at fixed relative offsets. Two layouts demanded of one
  tensor are an error naming both.
- **Lifetimes** come from the execution order per stream: a unit lives from the first step one of its
  members is produced to the last step one is used, so cascades obey the seed's §4.4.1 rule by construction
  (a tensor whose block will later hold a cascaded group's data lives from the group's first producer on).
  Across streams a use ends only where every later step is ordered after it by what the runtime enforces
  (stream order and events, not graph edges), so memory is reused across streams only where an event orders
  the two uses.
- **Regions**: graph inputs, constants/weights and variables get their own arenas with no reuse (GE's "no
  pre/post reuse" types); feature maps (and workspaces) are placed per memory type by the planner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ...base.diagnostics import error
from .. import formats
from ..facts import attr_bool, attr_int, attr_ints, is_memory_type_special, is_subgraph_input, ref_input_index
from ..ir import ATTR_PARENT_NODE_INDEX, ComputeGraph, Node, OutAnchor
from ..streams import READY_BEFORE_RUN
from .io_offsets import ZeroCopyOffset, zero_copy_offsets
from .planner import Buffer, Placement, greedy_best_fit, plan

MEM_ALIGN_SIZE = 512
RT_MEMORY_HBM = 0x2
INPUT_TYPES = frozenset({"Data", "RefData", "AippData", "AnnData", "QueueData"})
WEIGHT_TYPES = frozenset({"Const", "Constant"})
VARIABLE_TYPES = frozenset({"Variable"})
REGIONS = ("feature_map", "input", "weight", "variable")


def align512(n: int) -> int:
    """Round up to MEM_ALIGN_SIZE."""
    return (n + MEM_ALIGN_SIZE - 1) // MEM_ALIGN_SIZE * MEM_ALIGN_SIZE


def anchor_id(out: OutAnchor) -> str:
    """`graph/node:index` — unique across the root graph and its subgraphs."""
    return f"{out.node.name}:{out.index}"


def is_nopadding_continuous_input(node: Node) -> bool:
    """GE's kTypeInputNoPadding: `_no_padding_continuous_input` and `_output_reuse_input`, more than one input."""
    return (
        attr_bool(node, "_no_padding_continuous_input")
        and attr_bool(node, "_output_reuse_input")
        and len(node.in_peers) > 1
    )


def is_nopadding_continuous_output(node: Node) -> bool:
    """GE's kTypeOutputNoPadding: `_no_padding_continuous_output` and `_output_reuse_input`."""
    return attr_bool(node, "_no_padding_continuous_output") and attr_bool(node, "_output_reuse_input")


def is_padded_continuous_input(node: Node) -> bool:
    """GE's IsContinuousInput: `continuous_input` with more than one input (and not a no-padding one)."""
    return attr_bool(node, "continuous_input") and len(node.in_peers) > 1 and not is_nopadding_continuous_input(node)


# ---- schedule ------------------------------------------------------------------------------------------------
@dataclass
class Schedule:
    """The execution order: a step per node, its stream, and when every later step is ordered after it."""

    nodes: list[Node]
    step: dict[int, int]
    stream: dict[int, int]
    frontier: list[int]  # frontier[s]: first step t such that node s happens-before every node at step >= t

    @staticmethod
    def of(graph: ComputeGraph, events: Sequence[tuple[Node, Node]] = ()) -> Schedule:
        """Root nodes in topological order, each owner followed by its subgraphs' nodes (GE's GetAllNodes)."""
        nodes = graph.all_nodes()
        step = {id(n): i for i, n in enumerate(nodes)}
        stream: dict[int, int] = {}
        for n in nodes:
            s = n.op.stream_id
            if s < 0 and n.graph.parent_node is not None:
                s = stream.get(id(n.graph.parent_node), 0)
            stream[id(n)] = max(s, 0)
        return Schedule(nodes, step, stream, _frontiers(nodes, step, stream, events))

    @property
    def last_step(self) -> int:
        """The last step."""
        return len(self.nodes) - 1


def _frontiers(
    nodes: list[Node], step: dict[int, int], stream: dict[int, int], events: Sequence[tuple[Node, Node]]
) -> list[int]:
    # Graph inputs, weights and variables run nothing: they are on no stream's queue, so they neither order nor
    # delay anything (else a weight placed late in topological order would keep every feature map alive).
    runs = [not (node.op.type in READY_BEFORE_RUN and node.graph.is_root) for node in nodes]
    streams = sorted({stream[id(node)] for node, r in zip(nodes, runs, strict=True) if r})
    n = len(nodes)
    if len(streams) <= 1:
        return [i + 1 for i in range(n)]
    # Happens-before successors: what the runtime enforces, and only that: the next node on the same stream, and
    # events. A graph edge across streams without an event orders nothing at run time, so it is not read here.
    succ: list[list[int]] = [[] for _ in range(n)]
    last_on: dict[int, int] = {}
    for i, node in enumerate(nodes):
        s = stream[id(node)]
        if runs[i]:
            if s in last_on:
                succ[last_on[s]].append(i)
            last_on[s] = i
    for a, b in events:
        succ[step[id(a)]].append(step[id(b)])
    order_on: dict[int, list[int]] = {s: [] for s in streams}
    for i, node in enumerate(nodes):
        if runs[i]:
            order_on[stream[id(node)]].append(i)
    pos_on = {i: k for s in streams for k, i in enumerate(order_on[s])}
    inf = n
    # first[i][s]: position (on stream s) of the first node of s reachable from i (itself included).
    first = [[inf] * len(streams) for _ in range(n)]
    sidx = {s: k for k, s in enumerate(streams)}
    for i in range(n - 1, -1, -1):
        row = first[i]
        if runs[i]:
            row[sidx[stream[id(nodes[i])]]] = pos_on[i]
        for j in succ[i]:
            if j > i:
                rj = first[j]
                for k in range(len(streams)):
                    if rj[k] < row[k]:
                        row[k] = rj[k]
    out = []
    for i in range(n):
        t = i + 1
        if not runs[i]:
            out.append(t)
            continue
        for s, k in sidx.items():
            p = first[i][k]
            # every node of stream s before position p is not ordered after i
            if p > 0:
                prev = order_on[s][min(p, len(order_on[s])) - 1]
                if prev > i:
                    t = max(t, prev + 1)
        out.append(t)
    return out


# ---- plan ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorPlacement:
    """Where one output tensor lives."""

    anchor: str
    region: str
    mem_type: int
    offset: int
    size: int
    raw_size: int
    unit: str
    first: int
    last: int


@dataclass(frozen=True)
class WorkspacePlacement:
    """Where one workspace of a node lives."""

    node: str
    index: int
    mem_type: int
    offset: int
    size: int
    step: int


@dataclass
class ArenaReport:
    """One arena: its size, the lower bound, the planner used."""

    region: str
    mem_type: int
    size: int
    lower_bound: int
    units: int
    tensor_bytes: int
    strategy: str

    @property
    def ratio(self) -> float:
        """Arena size divided by the lower bound."""
        return self.size / self.lower_bound if self.lower_bound else 1.0

    @property
    def reused_bytes(self) -> int:
        """Bytes saved by reuse: the sum of the units' sizes minus the arena."""
        return max(0, self.tensor_bytes - self.size)


@dataclass
class MemoryPlan:
    """A memory plan for a graph: every output tensor and workspace, and the arenas."""

    tensors: dict[str, TensorPlacement] = field(default_factory=dict)
    workspaces: list[WorkspacePlacement] = field(default_factory=list)
    arenas: list[ArenaReport] = field(default_factory=list)
    schedule: Schedule | None = None
    # GE's SetInputOutputOffsetPass: the parts of model outputs whose addresses the runtime refreshes (io_offsets)
    zero_copy: list[ZeroCopyOffset] = field(default_factory=list)

    def arena(self, region: str, mem_type: int = RT_MEMORY_HBM) -> int:
        """The size of one arena (0 when absent)."""
        return next((a.size for a in self.arenas if a.region == region and a.mem_type == mem_type), 0)

    def total(self, region: str | None = None) -> int:
        """Total bytes over all arenas (of one region)."""
        return sum(a.size for a in self.arenas if region is None or a.region == region)

    def to_json(self) -> dict[str, object]:
        """The plan as plain data (`zero_copy_offsets` only when there are some)."""
        extra: dict[str, object] = (
            {"zero_copy_offsets": [z.to_json() for z in self.zero_copy]} if self.zero_copy else {}
        )
        return {
            "arenas": [
                {
                    "region": a.region,
                    "mem_type": a.mem_type,
                    "size": a.size,
                    "lower_bound": a.lower_bound,
                    "ratio": round(a.ratio, 6),
                    "units": a.units,
                    "reused_bytes": a.reused_bytes,
                    "strategy": a.strategy,
                }
                for a in self.arenas
            ],
            "tensors": {
                k: {
                    "region": t.region,
                    "mem_type": t.mem_type,
                    "offset": t.offset,
                    "size": t.size,
                    "raw_size": t.raw_size,
                    "unit": t.unit,
                    "first": t.first,
                    "last": t.last,
                }
                for k, t in sorted(self.tensors.items())
            },
            "workspaces": [
                {
                    "node": w.node,
                    "index": w.index,
                    "mem_type": w.mem_type,
                    "offset": w.offset,
                    "size": w.size,
                    "step": w.step,
                }
                for w in self.workspaces
            ],
            **extra,
        }


class _Layout:
    """Weighted union-find: offset(x) = offset(parent(x)) + delta(x), over the tensors layouts relate."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.delta: dict[str, int] = {}
        self.why: dict[str, str] = {}
        self.part_of: dict[str, set[str]] = {}  # tensor -> tensors whose bytes contain it (equal: both ways)
        self.placed_by: dict[str, set[str]] = {}  # tensor -> nodes whose layout rules placed it
        self.conflicts: list[LayoutConflict] = []

    def contain(self, inner: str, outer: str) -> None:
        """Record that `inner`'s bytes lie within `outer`'s."""
        self.part_of.setdefault(inner, set()).add(outer)

    def related(self, a: str, b: str) -> bool:
        """Whether one of the two tensors contains the other (through any chain of layouts)."""
        return self._reaches(a, b) or self._reaches(b, a)

    def _reaches(self, a: str, b: str) -> bool:
        seen, todo = {a}, [a]
        while todo:
            x = todo.pop()
            if x == b:
                return True
            for y in self.part_of.get(x, ()):
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        return False

    def add(self, x: str) -> None:
        if x not in self.parent:
            self.parent[x] = x
            self.delta[x] = 0

    def offset(self, x: str) -> tuple[str, int]:
        """(root, offset of x relative to the root), compressing the path; a tensor no layout relates is its own."""
        if x not in self.parent:
            return x, 0
        path = []
        y = x
        while self.parent[y] != y:
            path.append(y)
            y = self.parent[y]
        root, acc = y, 0
        for z in reversed(path):  # nearest the root first: accumulate offsets downwards
            acc += self.delta[z]
            self.parent[z] = root
            self.delta[z] = acc
        return root, (self.delta[x] if x != root else 0)

    def relate(self, x: str, y: str, delta: int, why: str, node: str, kind: str) -> None:
        """Require offset(x) = offset(y) + delta; `kind`: 'equal' (same bytes), 'part' (x lies in y), or 'next'."""
        self.add(x)
        self.add(y)
        self.placed_by.setdefault(x, set()).add(node)
        self.placed_by.setdefault(y, set()).add(node)
        if kind in ("equal", "part"):
            self.contain(x, y)
        if kind in ("equal", "contains"):
            self.contain(y, x)
        rx, ox = self.offset(x)
        ry, oy = self.offset(y)
        if rx == ry:
            if ox != oy + delta:
                ops = tuple(sorted(self.placed_by.get(x, set()) | self.placed_by.get(y, set())))
                self.conflicts.append(
                    LayoutConflict(
                        x,
                        y,
                        ops,
                        f"{x} would have to be at {y} + {delta} ({why}) and at {y} + {ox - oy} "
                        f"({self.why.get(rx, 'an earlier layout')})",
                    )
                )
            return
        # attach rx under ry: offset(rx) = offset(x) - ox = offset(y) + delta - ox = offset(ry) + oy + delta - ox
        self.parent[rx] = ry
        self.delta[rx] = oy + delta - ox
        self.why.setdefault(ry, why)


@dataclass(frozen=True)
class LayoutConflict:
    """Two tensors that zero-copy layouts would put on the same bytes (or one tensor put in two places)."""

    a: str
    b: str
    ops: tuple[str, ...]  # the nodes whose layout rules placed them
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class _Tensor:
    out: OutAnchor
    id: str
    raw: int
    size: int
    mem_type: int
    region: str
    first: int
    last: int


def _mem_type(out: OutAnchor) -> int:
    types = attr_ints(out.node, "_output_memory_type")
    if out.index < len(types) and is_memory_type_special(types[out.index]):
        return types[out.index]
    return RT_MEMORY_HBM


def _region(out: OutAnchor) -> str:
    node = out.node
    t = node.op.type
    if t in WEIGHT_TYPES:
        return "weight"
    if t in VARIABLE_TYPES:
        return "variable"
    if t in INPUT_TYPES and node.graph.is_root:
        return "input"
    return "feature_map"


def _tensor_sizes(out: OutAnchor) -> tuple[int, int]:
    d = out.desc
    raw = formats.tensor_raw_size(d.shape, d.dtype)
    if raw < 0:
        raise error(
            "memory-size",
            f"output {anchor_id(out)} has no static size ({d.dtype}{list(d.shape)}): memory "
            "cannot be planned for unknown shapes",
            where=anchor_id(out),
        )
    return raw, formats.mem_size_of_raw(raw)


def _nopadding_size(node: Node, desc_shape: Sequence[int], dtype: str, dim_index: int) -> int:
    # GE's CalculateTensorRealSizeAndOutSize: dims before dim_index multiplied out and set to 1; with dim index 0
    # (what the no-task passes set) this is the raw size of the whole tensor.
    shape = list(desc_shape)
    for i in range(min(dim_index, len(shape))):
        shape[i] = 1
    return formats.tensor_raw_size(shape, dtype)


def build_layout(graph: ComputeGraph, sched: Schedule) -> tuple[dict[str, _Tensor], _Layout]:
    """Every output tensor with its size, type, region and own lifetime, and the layout relations between them."""
    tensors: dict[str, _Tensor] = {}
    for node in sched.nodes:
        for out in node.out_anchors:
            raw, size = _tensor_sizes(out)
            tid = anchor_id(out)
            s = sched.step[id(node)]
            tensors[tid] = _Tensor(out, tid, raw, size, _mem_type(out), _region(out), s, s)
    last = sched.last_step
    # lifetimes of the tensors themselves (uses extended to where later steps are ordered after them)
    for t in tensors.values():
        end = sched.frontier[t.first] - 1  # the write itself is a use: unordered streams may still run beside it
        for a in t.out.consumers:
            c = a.node
            if c.op.type == "NetOutput" and c.graph.is_root:
                end = last  # model outputs stay until the end of the run
            elif id(c) in sched.step:
                end = max(end, sched.frontier[sched.step[id(c)]] - 1)
        t.last = max(end, t.first)
    lay = _Layout()
    _relate_layouts(sched.nodes, lay, {}, lambda out: tensors[anchor_id(out)].size)
    return tensors, lay


def _relate_layouts(
    nodes: Sequence[Node], lay: _Layout, anchors: dict[str, OutAnchor], alloc_size: Callable[[OutAnchor], int]
) -> None:
    """The layout relations every node's attributes demand, in execution order; `anchors` gets every tensor related.

    `alloc_size` gives a tensor's allocation size (padded continuous layouts stride by it).
    """
    relations = _Relations(lay, anchors, alloc_size)
    for node in nodes:
        relations.node(node)


class _Relations:
    """The layout relations of one node after another, recorded in `lay` (see `_relate_layouts`)."""

    def __init__(self, lay: _Layout, anchors: dict[str, OutAnchor], alloc_size: Callable[[OutAnchor], int]) -> None:
        self.lay = lay
        self.anchors = anchors
        self.alloc_size = alloc_size

    def aid(self, out: OutAnchor) -> str:
        """The tensor's id, noting it among the related anchors."""
        tid = anchor_id(out)
        self.anchors[tid] = out
        return tid

    def node(self, node: Node) -> None:
        """What `node` demands: a no-padding split alone, else its outputs' reuse, as a subgraph's NetOutput,
        a zero-copy or padded continuous input, a continuous output."""
        dim_index = attr_int(node, "_reuse_input_on_dim_index", 0)
        if is_nopadding_continuous_output(node):
            self._nopad_outputs(node, dim_index)
            return
        if is_subgraph_input(node):
            self._subgraph_input(node)
        else:
            self._reuses(node)
        if node.op.type == "NetOutput" and node.graph.parent_node is not None:
            self._subgraph_output(node, node.graph.parent_node)
        if is_nopadding_continuous_input(node):
            self._nopad_inputs(node, dim_index)
        elif is_padded_continuous_input(node):
            self._padded_inputs(node)
        if attr_bool(node, "continuous_output") and len(node.out_peers) > 1:
            self._continuous_outputs(node)

    def _nopad_outputs(self, node: Node, dim_index: int) -> None:
        """A no-padding split: its outputs back to back inside its input 0."""
        src = node.in_peers[0] if node.in_peers else None
        if src is None:
            raise error("memory-layout", f"no-padding split '{node.name}' has no input 0", where=node.name)
        offset = 0
        for out in node.out_anchors:
            why = f"no-padding continuous output of {node.name}"
            self.lay.relate(self.aid(out), self.aid(src), offset, why, node.name, "part")
            offset += _nopadding_size(node, out.desc.shape, out.desc.dtype, dim_index)

    def _subgraph_input(self, node: Node) -> None:
        """A subgraph's input node: each output is the parent's input `_parent_node_index`."""
        for out in node.out_anchors:
            p = attr_int(node, ATTR_PARENT_NODE_INDEX, -1)
            parent = node.graph.parent_node
            if parent is not None and 0 <= p < len(parent.in_peers) and parent.in_peers[p] is not None:
                src = parent.in_peers[p]
                assert src is not None
                self.lay.relate(self.aid(out), self.aid(src), 0, f"subgraph input {node.name}", node.name, "equal")

    def _reuses(self, node: Node) -> None:
        """Each output reusing an input: at that input."""
        for out in node.out_anchors:
            k = ref_input_index(out)
            if 0 <= k < len(node.in_peers):
                src = node.in_peers[k]
                if src is not None:
                    # a zero-copy concat's output starts at input 0 and contains it; other reuse is the same bytes
                    kind = "contains" if is_nopadding_continuous_input(node) else "equal"
                    why = f"{node.name} output {out.index} reuses input {k}"
                    self.lay.relate(self.aid(out), self.aid(src), 0, why, node.name, kind)

    def _subgraph_output(self, node: Node, parent: Node) -> None:
        """A subgraph's NetOutput: its input carrying `_parent_node_index` p is the parent's output p."""
        for k, src in enumerate(node.in_peers):
            p = attr_int(node.op.input_descs[k], ATTR_PARENT_NODE_INDEX, -1)
            if src is not None and 0 <= p < len(parent.out_peers):
                why = f"subgraph output of {parent.name}"
                self.lay.relate(self.aid(OutAnchor(parent, p)), self.aid(src), 0, why, node.name, "equal")

    def _nopad_inputs(self, node: Node, dim_index: int) -> None:
        """A zero-copy concat: its inputs back to back from input 0, each within the output."""
        first = node.in_peers[0]
        if first is None:
            raise error("memory-layout", f"zero-copy concat '{node.name}' has no input 0", where=node.name)
        offset = 0
        for k, src in enumerate(node.in_peers):
            d = node.op.input_descs[k]
            if src is not None and node.out_peers:
                self.lay.contain(anchor_id(src), f"{node.name}:0")  # every input lies within the output
            if src is not None and k > 0:
                why = f"no-padding continuous input of {node.name}"
                self.lay.relate(self.aid(src), self.aid(first), offset, why, node.name, "next")
            offset += _nopadding_size(node, d.shape, d.dtype, dim_index)

    def _padded_inputs(self, node: Node) -> None:
        """Padded continuous inputs: each after the previous one's allocation rounded up to 512 bytes."""
        first = node.in_peers[0]
        offset = 0
        for k, src in enumerate(node.in_peers):
            if src is None:
                continue
            if first is None:
                first = src
            if k > 0:
                why = f"continuous input of {node.name}"
                self.lay.relate(self.aid(src), self.aid(first), offset, why, node.name, "next")
            offset += align512(self.alloc_size(src))

    def _continuous_outputs(self, node: Node) -> None:
        """Continuous outputs: each after the previous one's allocation rounded up to 512 bytes."""
        offset = 0
        for out in node.out_anchors:
            if out.index > 0:
                why = f"continuous output of {node.name}"
                self.lay.relate(self.aid(out), self.aid(OutAnchor(node, 0)), offset, why, node.name, "next")
            offset += align512(self.alloc_size(out))


@dataclass
class _Unit:
    id: str
    members: list[tuple[str, int]]  # (tensor id, offset relative to the unit's start)
    size: int
    region: str
    mem_type: int
    first: int
    last: int


def _overlaps(raw_sizes: Iterable[tuple[str, int]], lay: _Layout) -> list[LayoutConflict]:
    """Tensors of one placement unit whose bytes overlap though neither contains the other.

    `raw_sizes`: (tensor, raw size) in execution order; only tensors that layouts relate can overlap.
    """
    groups: dict[str, list[tuple[int, int, str]]] = {}
    for tid, raw in raw_sizes:
        if raw > 0 and tid in lay.parent:
            root, off = lay.offset(tid)
            groups.setdefault(root, []).append((off, off + raw, tid))
    out: list[LayoutConflict] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort()
        active: list[tuple[int, int, str]] = []
        for lo, hi, tid in members:
            active = [m for m in active if m[1] > lo]
            for _, _, other in active:
                if not lay.related(tid, other):
                    ops = tuple(sorted(lay.placed_by.get(tid, set()) | lay.placed_by.get(other, set())))
                    out.append(
                        LayoutConflict(
                            other,
                            tid,
                            ops,
                            f"{tid} and {other} would share bytes though "
                            f"neither contains the other (layouts of {', '.join(ops)})",
                        )
                    )
            active.append((lo, hi, tid))
    return out


def _checked_size(out: OutAnchor) -> tuple[int, int]:
    # (raw, allocation size), both 0 without a static size: no layout can be checked for such a tensor
    # (memory assignment refuses it)
    d = out.desc
    raw = formats.tensor_raw_size(d.shape, d.dtype)
    return (0, 0) if raw < 0 else (raw, formats.mem_size_of_raw(raw))


def find_layout_conflicts(graph: ComputeGraph) -> list[LayoutConflict]:
    """Every layout conflict the graph's zero-copy and alias attributes would create (empty when sound).

    Looks only at the tensors layouts relate: no schedule, lifetimes or sizes of the others.
    """
    nodes = graph.all_nodes()
    lay = _Layout()
    anchors: dict[str, OutAnchor] = {}
    _relate_layouts(nodes, lay, anchors, lambda out: _checked_size(out)[1])
    if not anchors:
        return lay.conflicts
    step = {id(n): i for i, n in enumerate(nodes)}
    related = sorted(anchors.items(), key=lambda kv: (step[id(kv[1].node)], kv[1].index))
    return lay.conflicts + _overlaps(((tid, _checked_size(out)[0]) for tid, out in related), lay)


def _units(tensors: dict[str, _Tensor], lay: _Layout) -> list[_Unit]:
    groups: dict[str, list[tuple[str, int]]] = {}
    for tid in tensors:
        root, off = lay.offset(tid)
        groups.setdefault(root, []).append((tid, off))
    units = []
    for root, members in groups.items():
        base = min(off for _, off in members)
        rel = [(tid, off - base) for tid, off in members]
        ts = [tensors[tid] for tid, _ in rel]
        regions = {t.region for t in ts}
        region = next((r for r in ("input", "variable", "weight") if r in regions), "feature_map")
        mem_types = {t.mem_type for t in ts}
        if len(mem_types) > 1:
            raise error(
                "memory-layout",
                f"tensors {', '.join(sorted(t.id for t in ts))} must share memory but have "
                f"memory types {sorted(mem_types)}",
                where=root,
            )
        size = align512(max(off + tensors[tid].size for tid, off in rel))
        first = min(t.first for t in ts)
        last = max(t.last for t in ts)
        # the unit is named after the member placed lowest (the root of the layout, e.g. a concat's input 0)
        name = min(rel, key=lambda m: (m[1], tensors[m[0]].first, m[0]))[0]
        units.append(_Unit(name, sorted(rel, key=lambda m: (m[1], m[0])), size, region, mem_types.pop(), first, last))
    units.sort(key=lambda u: (u.first, u.id))
    return units


def assign_memory(
    graph: ComputeGraph,
    *,
    events: Sequence[tuple[Node, Node]] = (),
    baseline: bool = False,
    budget_s: float | None = None,
) -> MemoryPlan:
    """Plan memory for a (marked) graph; `baseline` uses the plain greedy-by-size planner instead.

    `budget_s` is the planner's budget (`plan`'s; None: its default)."""
    sched = Schedule.of(graph, events)
    tensors, lay = build_layout(graph, sched)
    conflicts = lay.conflicts + _overlaps(((tid, t.raw) for tid, t in tensors.items()), lay)
    if conflicts:
        raise error(
            "memory-layout",
            f"the zero-copy layouts conflict: {conflicts[0]}"
            + (f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""),
            where=conflicts[0].a,
            hint="MemLayoutConflictPass reverts the op responsible; was it disabled?",
        )
    units = _units(tensors, lay)
    result = MemoryPlan(schedule=sched)
    unit_offset: dict[str, int] = {}
    # workspaces: feature-map buffers live at their node's step
    ws_units: list[tuple[Node, int, int, int]] = []
    for node in sched.nodes:
        for k, w in enumerate(node.op.workspace_bytes):
            if w > 0:
                ws_units.append((node, k, align512(w), sched.step[id(node)]))
    arenas: dict[tuple[str, int], list[Buffer]] = {}
    for u in units:
        arenas.setdefault((u.region, u.mem_type), []).append(Buffer(u.id, u.first, u.last, u.size, MEM_ALIGN_SIZE))
    for node, k, size, s in ws_units:
        arenas.setdefault(("feature_map", RT_MEMORY_HBM), []).append(
            Buffer(f"{node.name}#ws{k}", s, s, size, MEM_ALIGN_SIZE)
        )
    for (region, mem_type), buffers in sorted(arenas.items(), key=lambda kv: (REGIONS.index(kv[0][0]), kv[0][1])):
        if region == "feature_map":
            placement: Placement = greedy_best_fit(buffers) if baseline else plan(buffers, budget_s=budget_s)
            offsets, arena, strategy = placement.offsets, placement.arena, placement.strategy
            lb = placement.lower_bound
        else:  # no reuse: every unit its own block, in order
            offsets, cursor = {}, 0
            for b in buffers:
                offsets[b.id] = cursor
                cursor += b.size
            arena, strategy, lb = cursor, "stacked (no reuse)", sum(b.size for b in buffers)
        unit_offset.update(offsets)
        result.arenas.append(
            ArenaReport(region, mem_type, arena, lb, len(buffers), sum(b.size for b in buffers), strategy)
        )
    for u in units:
        base = unit_offset[u.id]
        for tid, off in u.members:
            t = tensors[tid]
            result.tensors[tid] = TensorPlacement(
                tid, u.region, u.mem_type, base + off, t.size, t.raw, u.id, u.first, u.last
            )
    for node, k, size, s in ws_units:
        result.workspaces.append(
            WorkspacePlacement(node.name, k, RT_MEMORY_HBM, unit_offset[f"{node.name}#ws{k}"], size, s)
        )
    result.zero_copy = zero_copy_offsets(graph, {tid: t.offset for tid, t in result.tensors.items()})
    return result
