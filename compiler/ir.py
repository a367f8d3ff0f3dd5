"""GE's computation graph, modelled in Python: ComputeGraph, Node, OpDesc, TensorDesc and anchors.

Every later stage (rules, streams, memory, tasks) reads this IR, so it follows GE's shapes closely: data edges
join an output anchor (`node:out_index`) to an input anchor (`node:in_index`); an input anchor has at most one
producer, an output fans out, input anchors may stay unconnected; a consumer's input desc may differ from its
producer's output desc; subgraphs are owned by a node (If / While / PartitionedCall) and the root graph keeps
them all. The adjacency lives only in the per-anchor peer lists on the nodes, so the rules' navigation (peer of an
input, consumers of an output) is O(1) and a graph costs no second structure to build or copy; networkx is
brought in to name a cycle (an error), from those lists.
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# a mapping holds JSON-able data (e.g. an imported ONNX node's own attributes)
AttrValue = bool | int | float | str | list[bool] | list[int] | list[float] | list[str] | dict[str, Any]

# Graph attributes GE reads at this stage (spec §2.2, §2.4).
ATTR_SINGLE_OP_SCENE = "_single_op_scene"
ATTR_MEMORY_DISCONTIGUOUS_ALLOCATION = "_memory_discontiguous_allocation"
ATTR_DYNAMIC_SHAPE_PARTITIONED = "_dynamic_shape_partitioned"
ATTR_PARENT_NODE_INDEX = "_parent_node_index"


def copy_attrs(attrs: dict[str, AttrValue]) -> dict[str, AttrValue]:
    """A copy of an attribute map whose list values are copied too."""
    out: dict[str, AttrValue] = {}
    for k, v in attrs.items():
        out[k] = v.copy() if isinstance(v, list) else copy.deepcopy(v) if isinstance(v, dict) else v  # type: ignore[assignment]
    return out


INVALID_DESC = ("undefined", "RESERVED")  # the (dtype, format) of GE's invalid desc (an absent optional input)


@dataclass(eq=False, slots=True)
class TensorDesc:
    """GE's GeTensorDesc: storage and origin shape/format, dtype, and attributes (e.g. memory type)."""

    shape: tuple[int, ...]
    dtype: str = "float"
    format: str = "ND"
    origin_shape: tuple[int, ...] = ()
    origin_format: str = "ND"
    attrs: dict[str, AttrValue] = field(default_factory=dict)

    def copy(self) -> TensorDesc:
        """An independent copy (attribute lists copied too)."""
        return TensorDesc(
            self.shape,
            self.dtype,
            self.format,
            self.origin_shape,
            self.origin_format,
            copy_attrs(self.attrs),
        )

    @property
    def is_valid(self) -> bool:
        """GE treats a desc as invalid only when its dtype is undefined and its format RESERVED."""
        return not (self.dtype == INVALID_DESC[0] and self.format == INVALID_DESC[1])

    def same_as(self, other: TensorDesc) -> bool:
        """Field-by-field equality (descs are identity-compared elsewhere)."""
        return (
            self.shape == other.shape
            and self.dtype == other.dtype
            and self.format == other.format
            and self.origin_shape == other.origin_shape
            and self.origin_format == other.origin_format
            and self.attrs == other.attrs
        )


@dataclass(eq=False, slots=True)
class OpDesc:
    """GE's OpDesc: name, type, typed attributes, input/output descs, engine, kernel library, stream."""

    name: str
    type: str
    attrs: dict[str, AttrValue] = field(default_factory=dict)
    input_descs: list[TensorDesc] = field(default_factory=list)
    output_descs: list[TensorDesc] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    engine: str = ""  # GE's OpEngineName
    kernel_lib: str = ""  # GE's OpKernelLibName: the task builder's registry key
    stream_id: int = -1
    subgraph_names: list[str] = field(default_factory=list)
    workspace_bytes: list[int] = field(default_factory=list)


# Anchor equality and hash as the dataclass would make them (same class, same node, same index), without
# building tuples: rules compare anchors in their checks.
def _anchor_eq(self: Any, other: object) -> bool:
    if other is self:
        return True
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]
    return self.node is other.node and self.index == other.index  # type: ignore[attr-defined, no-any-return]


def _anchor_hash(self: Any) -> int:
    return (id(self.node) << 4) ^ self.index  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class InAnchor:
    """Input anchor `node:index` (GE's InDataAnchor)."""

    node: Node
    index: int

    def __init__(self, node: Node, index: int) -> None:
        # the frozen dataclass's __init__, through the slots' own setters (a third cheaper: graphs make many)
        _SET_IN_NODE(self, node)
        _SET_IN_INDEX(self, index)

    @property
    def desc(self) -> TensorDesc:
        """The consumer's input desc at this index."""
        return self.node.op.input_descs[self.index]

    @property
    def peer(self) -> OutAnchor | None:
        """The producer's output anchor, or None when unconnected."""
        return self.node.in_peers[self.index]

    @property
    def connected(self) -> bool:
        """Whether a producer feeds this anchor."""
        return self.node.in_peers[self.index] is not None

    __eq__ = _anchor_eq
    __hash__ = _anchor_hash

    def __str__(self) -> str:
        return f"{self.node.name}:in{self.index}"


@dataclass(frozen=True, slots=True)
class OutAnchor:
    """Output anchor `node:index` (GE's OutDataAnchor)."""

    node: Node
    index: int

    def __init__(self, node: Node, index: int) -> None:
        _SET_OUT_NODE(self, node)
        _SET_OUT_INDEX(self, index)

    @property
    def desc(self) -> TensorDesc:
        """The producer's output desc at this index."""
        return self.node.op.output_descs[self.index]

    @property
    def consumers(self) -> list[InAnchor]:
        """Every input anchor this output feeds, in edge creation order."""
        return self.node.out_peers[self.index]

    __eq__ = _anchor_eq
    __hash__ = _anchor_hash

    def __str__(self) -> str:
        return f"{self.node.name}:{self.index}"


# the anchors' slot setters, which their __init__ use as a frozen dataclass's own __init__ uses object.__setattr__
_SET_IN_NODE, _SET_IN_INDEX = InAnchor.__dict__["node"].__set__, InAnchor.__dict__["index"].__set__
_SET_OUT_NODE, _SET_OUT_INDEX = OutAnchor.__dict__["node"].__set__, OutAnchor.__dict__["index"].__set__


class Node:
    """A node of a ComputeGraph: its OpDesc, its owner graph and its anchors' peers."""

    __slots__ = ("_ins", "_outs", "control_in", "control_out", "graph", "in_peers", "op", "out_peers", "seq")

    def __init__(self, op: OpDesc, graph: ComputeGraph, seq: int) -> None:
        self.op = op
        self.graph = graph
        self.seq = seq
        self.in_peers: list[OutAnchor | None] = [None] * len(op.input_descs)
        self.out_peers: list[list[InAnchor]] = [[] for _ in op.output_descs]
        self.control_in: list[Node] = []
        self.control_out: list[Node] = []
        # the anchor lists, built on first use and kept while the anchor counts stay the same (an anchor is the
        # node and an index; what it is connected to is read live)
        self._ins: list[InAnchor] | None = None
        self._outs: list[OutAnchor] | None = None

    @property
    def name(self) -> str:
        """The node's (unique) name."""
        return self.op.name

    @property
    def type(self) -> str:
        """The op type, e.g. `ConcatD`."""
        return self.op.type

    def in_anchor(self, index: int) -> InAnchor:
        """Input anchor `index`."""
        return InAnchor(self, index)

    def out_anchor(self, index: int) -> OutAnchor:
        """Output anchor `index`."""
        return OutAnchor(self, index)

    @property
    def in_anchors(self) -> list[InAnchor]:
        """All input anchors, connected or not (a shared list: do not modify it)."""
        ins = self._ins
        if ins is None or len(ins) != len(self.in_peers):  # first use, or inputs were added since
            ins = self._ins = [InAnchor(self, i) for i in range(len(self.in_peers))]
        return ins

    @property
    def out_anchors(self) -> list[OutAnchor]:
        """All output anchors (a shared list: do not modify it)."""
        outs = self._outs
        if outs is None or len(outs) != len(self.out_peers):
            outs = self._outs = [OutAnchor(self, i) for i in range(len(self.out_peers))]
        return outs

    def out_data_nodes(self) -> list[Node]:
        """Consumer nodes over all outputs, in anchor then edge order (GE's GetOutDataNodes)."""
        return [a.node for peers in self.out_peers for a in peers]

    def subgraphs(self) -> list[ComputeGraph]:
        """The subgraphs this node owns, in instance-name order."""
        if not self.op.subgraph_names:
            return []
        root = self.graph.root
        return [root.subgraphs[n] for n in self.op.subgraph_names if n in root.subgraphs]

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.type!r})"


class GraphError(Exception):
    """A structural mistake while building a graph (duplicate name, double producer, bad index, cycle)."""


def _not_here(graph: ComputeGraph, node: object, role: str) -> str | None:
    """The error text when `node` (an edge's `role` end) is not a node of `graph`; None when it is."""
    if node.__class__ is not Node:
        return f"the {role} of an edge in graph '{graph.name}' must be a Node, not {type(node).__name__}"
    owner: ComputeGraph = node.graph  # type: ignore[attr-defined]
    if owner is graph:
        return None
    where = "another graph of the same name (a copy?)" if owner.name == graph.name else f"graph '{owner.name}'"
    return f"node '{node.name}' ({role}) belongs to {where}, not to graph '{graph.name}'"  # type: ignore[attr-defined]


def _no_anchor(node: Node, kind: str, index: object) -> str:
    """The error text for an anchor index that `node` does not have (out of range, or not an integer)."""
    count = len(node.in_peers if kind == "input" else node.out_peers)
    if type(index) is not int:
        return f"node '{node.name}' has {count} {kind}(s); an {kind} index is an integer, not {index!r}"
    return f"node '{node.name}' has {count} {kind}(s); {kind} {index} does not exist"


class ComputeGraph:
    """GE's ComputeGraph: nodes, data and control edges, graph attributes, and owned subgraphs."""

    def __init__(self, name: str, *, attrs: dict[str, AttrValue] | None = None, unknown_shape: bool = False) -> None:
        self.name = name
        self.attrs: dict[str, AttrValue] = dict(attrs or {})
        self.unknown_shape = unknown_shape  # GE's GetGraphUnknownFlag
        self.parent_node: Node | None = None
        self.parent_graph: ComputeGraph | None = None
        self.subgraphs: dict[str, ComputeGraph] = {}  # kept on the root graph, as GE does
        self._nodes: dict[str, Node] = {}
        self._topo: list[Node] | None = None
        self._next_seq = 0  # a node's seq: its insertion rank (never reused, so a removal leaves no tie)

    # ---- structure -------------------------------------------------------------------------------------
    @property
    def root(self) -> ComputeGraph:
        """The root graph (self for the root)."""
        g = self
        while g.parent_graph is not None:
            g = g.parent_graph
        return g

    @property
    def is_root(self) -> bool:
        """True for the root graph."""
        return self.parent_graph is None

    def add_node(self, op: OpDesc) -> Node:
        """Add a node for `op`; names must be unique in the graph."""
        if op.name in self._nodes:
            raise GraphError(f"duplicate node name '{op.name}'")
        # GE's default IR names (x/x0.., y/y0..) where the builder gave none
        n_in, n_out = len(op.input_descs), len(op.output_descs)
        op.input_names += [f"x{k}" if n_in > 1 else "x" for k in range(len(op.input_names), n_in)]
        op.output_names += [f"y{k}" if n_out > 1 else "y" for k in range(len(op.output_names), n_out)]
        node = Node(op, self, self._next_seq)
        self._next_seq += 1
        self._nodes[op.name] = node
        self._topo = None
        return node

    def node(self, name: str) -> Node | None:
        """The node called `name`, or None."""
        return self._nodes.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def add_data_edge(self, src: Node, out_index: int, dst: Node, in_index: int) -> None:
        """Connect `src:out_index` to `dst:in_index` (both nodes of this graph; the input must be free)."""
        try:
            here = src.graph is self and dst.graph is self
        except AttributeError:  # not a Node
            here = False
        if not here:
            raise GraphError(_not_here(self, src, "source") or _not_here(self, dst, "destination") or "")
        if type(out_index) is not int or not 0 <= out_index < len(src.out_peers):
            raise GraphError(_no_anchor(src, "output", out_index))
        if type(in_index) is not int or not 0 <= in_index < len(dst.in_peers):
            raise GraphError(_no_anchor(dst, "input", in_index))
        current = dst.in_peers[in_index]
        if current is not None:
            raise GraphError(
                f"input {in_index} of node '{dst.name}' already has a producer ({current}); "
                f"cannot also connect {src.name}:{out_index}"
            )
        dst.in_peers[in_index] = OutAnchor(src, out_index)
        src.out_peers[out_index].append(InAnchor(dst, in_index))
        self._topo = None

    def remove_data_edge(self, dst: Node, in_index: int) -> OutAnchor:
        """Disconnect input `in_index` of `dst` from its producer, which is returned (the input must be
        connected)."""
        if (problem := _not_here(self, dst, "destination")) is not None:
            raise GraphError(problem)
        if type(in_index) is not int or not 0 <= in_index < len(dst.in_peers):
            raise GraphError(_no_anchor(dst, "input", in_index))
        peer = dst.in_peers[in_index]
        if peer is None:
            raise GraphError(f"input {in_index} of node '{dst.name}' has no producer to disconnect")
        dst.in_peers[in_index] = None
        consumers = peer.node.out_peers[peer.index]
        consumers[:] = [a for a in consumers if not (a.node is dst and a.index == in_index)]
        self._topo = None
        return peer

    def remove_node(self, node: Node) -> None:
        """Remove `node`, which must have no data edge left (its control edges go with it)."""
        if (problem := _not_here(self, node, "node to remove")) is not None:
            raise GraphError(problem)
        if any(p is not None for p in node.in_peers) or any(node.out_peers):
            raise GraphError(f"node '{node.name}' still has data edges; disconnect them before removing it")
        if node.op.subgraph_names:
            raise GraphError(f"node '{node.name}' owns subgraphs; it cannot be removed")
        for c in node.control_in:
            c.control_out.remove(node)
        for c in node.control_out:
            c.control_in.remove(node)
        node.control_in, node.control_out = [], []
        del self._nodes[node.name]
        self._topo = None

    def add_control_edge(self, src: Node, dst: Node) -> None:
        """Add a control edge src -> dst (both nodes of this graph)."""
        if (problem := _not_here(self, src, "source") or _not_here(self, dst, "destination")) is not None:
            raise GraphError(problem)
        if dst in src.control_out:
            return
        src.control_out.append(dst)
        dst.control_in.append(src)
        self._topo = None

    def set_subgraph(self, owner: Node, sub: ComputeGraph) -> None:
        """Attach `sub` as a subgraph owned by `owner` (registered on the root graph)."""
        root = self.root
        if sub.name in root.subgraphs or sub.name == root.name:
            raise GraphError(f"duplicate subgraph name '{sub.name}'")
        sub.parent_node = owner
        sub.parent_graph = owner.graph
        root.subgraphs[sub.name] = sub
        if sub.name not in owner.op.subgraph_names:
            owner.op.subgraph_names.append(sub.name)

    # ---- traversal -------------------------------------------------------------------------------------
    def find_cycle(self) -> list[str] | None:
        """Node names along a cycle, or None when the graph is acyclic."""
        order = self._kahn_order()
        if order is not None:  # the common, acyclic case: the order is kept for topological_order
            self._topo = order
            return None
        import networkx as nx  # only to name a cycle: loading it costs more than a small compile

        adjacency = nx.DiGraph()
        for n in self._nodes.values():
            adjacency.add_node(n.name)
            adjacency.add_edges_from((n.name, a.node.name) for peers in n.out_peers for a in peers)
            adjacency.add_edges_from((n.name, c.name) for c in n.control_out)
        try:
            edges = nx.find_cycle(adjacency)
        except nx.NetworkXNoCycle:  # pragma: no cover - Kahn's order and networkx disagree
            return None
        return [str(e[0]) for e in edges] + [str(edges[-1][1])]

    def _kahn_order(self) -> list[Node] | None:
        """Topological order preferring insertion order among ready nodes; None when there is a cycle."""
        nodes = list(self._nodes.values())
        indeg = {id(n): 0 for n in nodes}
        succ: dict[int, list[Node]] = {id(n): [] for n in nodes}
        for n in nodes:
            targets = {id(a.node): a.node for peers in n.out_peers for a in peers}
            for c in n.control_out:
                targets[id(c)] = c
            for t in targets.values():
                succ[id(n)].append(t)
                indeg[id(t)] += 1
        ready = [(n.seq, n) for n in nodes if indeg[id(n)] == 0]
        heapq.heapify(ready)
        out: list[Node] = []
        while ready:
            _, n = heapq.heappop(ready)
            out.append(n)
            for t in succ[id(n)]:
                indeg[id(t)] -= 1
                if indeg[id(t)] == 0:
                    heapq.heappush(ready, (t.seq, t))
        return out if len(out) == len(nodes) else None

    def topological_order(self) -> list[Node]:
        """Nodes in a stable topological order: among ready nodes, the one added first."""
        if self._topo is None:
            order = self._kahn_order()
            if order is None:
                raise GraphError(f"graph '{self.name}' has a cycle: {' -> '.join(self.find_cycle() or [])}")
            self._topo = order
        return self._topo

    def copy(self) -> ComputeGraph:
        """A deep copy of this graph (the root: with every subgraph), sharing nothing mutable."""
        if not self.is_root:
            raise GraphError("copy the root graph; subgraphs are copied with it")
        return self._copy_into(None)

    def _copy_into(self, owner: Node | None) -> ComputeGraph:
        g = ComputeGraph(self.name, attrs=copy_attrs(self.attrs), unknown_shape=self.unknown_shape)
        if owner is not None:
            owner.graph.set_subgraph(owner, g)
        mapping: dict[int, Node] = {}
        for n in self._nodes.values():
            op = n.op
            new = OpDesc(
                op.name,
                op.type,
                copy_attrs(op.attrs),
                [d.copy() for d in op.input_descs],
                [d.copy() for d in op.output_descs],
                list(op.input_names),
                list(op.output_names),
                op.engine,
                op.kernel_lib,
                op.stream_id,
                [],
                list(op.workspace_bytes),
            )
            mapping[id(n)] = g.add_node(new)
        for n in self._nodes.values():
            dst = mapping[id(n)]
            for k, peer in enumerate(n.in_peers):
                if peer is not None:
                    g.add_data_edge(mapping[id(peer.node)], peer.index, dst, k)
            for c in n.control_in:
                g.add_control_edge(mapping[id(c)], dst)
        for n in self._nodes.values():
            for sub in n.subgraphs():
                sub._copy_into(mapping[id(n)])
        return g

    def direct_nodes(self) -> list[Node]:
        """This graph's own nodes in topological order (GE's GetDirectNode)."""
        return self.topological_order()

    def nodes_in_insertion_order(self) -> Iterator[Node]:
        """This graph's own nodes in the order they were added."""
        return iter(self._nodes.values())

    def all_subgraphs(self) -> list[ComputeGraph]:
        """Every subgraph below this graph, parents before children, in owner topological order."""
        out: list[ComputeGraph] = []
        if not self.root.subgraphs:
            return out
        for node in self.topological_order():
            for sub in node.subgraphs():
                out.append(sub)
                out.extend(sub.all_subgraphs())
        return out

    def all_nodes(self) -> list[Node]:
        """This graph's nodes and, after each owner, its subgraphs' nodes (GE's GetAllNodes)."""
        order = self.topological_order()
        if not self.root.subgraphs:  # no node owns a subgraph
            return list(order)
        out: list[Node] = []
        for node in order:
            out.append(node)
            for sub in node.subgraphs():
                out.extend(sub.all_nodes())
        return out

    def attribute_state(self) -> list[tuple[str, str, str]]:
        """Every node's attributes and its output descs' attributes, this graph's and its subgraphs' (what a
        pass may change), as comparable text: (graph, node, attributes) in insertion order."""
        out: list[tuple[str, str, str]] = []
        for g in [self, *self.all_subgraphs()]:
            for n in g.nodes_in_insertion_order():
                out.append((g.name, n.name, repr(sorted(n.op.attrs.items()))))
                out.extend((g.name, n.name, repr(sorted(d.attrs.items()))) for d in n.op.output_descs)
        return out

    def edge_count(self) -> tuple[int, int]:
        """(data edges, control edges) of this graph alone."""
        nodes = self._nodes.values()
        return sum(len(p) for n in nodes for p in n.out_peers), sum(len(n.control_out) for n in nodes)

    def __repr__(self) -> str:
        return f"ComputeGraph({self.name!r}, {len(self._nodes)} nodes)"
