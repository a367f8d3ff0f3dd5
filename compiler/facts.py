"""What the rules see of a GE graph: entity types, their fields, and GE's helpers, registered in the catalogue.

This is the only place where the rule language meets the GE domain. Fields read the IR (a node's inputs, an
input's producer, a desc's origin shape); helpers reproduce GE's utilities exactly as `spec/ge_reference.md`
describes them: typed attribute reads with GE's defaults (AttrUtils::GetBool...), ref-chain tracing
(GetFirstOutAnchorNotInRefNode / IsRefFromInput, depth limit 100), memory-type normalisation
(IsMemoryTypeSpecial), the single-op-scene test, sizes, and the format library's aligned shapes and axis maps.
None of it is specific to Concat: Pack and Split rules use the same facts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..dsl.builtins import builtin_catalogue
from ..dsl.catalogue import Catalogue, IndexedList
from . import formats
from . import graph_edit as ge_edit
from .ir import (
    ATTR_PARENT_NODE_INDEX,
    ATTR_SINGLE_OP_SCENE,
    INVALID_DESC,
    AttrValue,
    ComputeGraph,
    InAnchor,
    Node,
    OutAnchor,
    TensorDesc,
)

REF_TRACE_DEPTH_LIMIT = 100  # GE's recursion limit in GetFirstOutAnchorNotInRefNode
RT_MEMORY_DEFAULT, RT_MEMORY_HBM, RT_MEMORY_DDR = 0x0, 0x2, 0x4
ATTR_OUTPUT_MEM_TYPE_LIST = "_output_memory_type"
ATTR_IS_UNKNOWN_SHAPE = "_is_unknown_shape"
# GE keeps the reuse-input flag on the tensor desc (TensorUtils::SetReuseInput / SetReuseInputIndex).
DESC_REUSE_INPUT = "reuse_input"
DESC_REUSE_INPUT_INDEX = "reuse_input_index"
_PASS_THROUGH_TYPES = frozenset({"NetOutput", "While", "_While", "StatelessWhile"})
# Formats a user can give a tensor; every other format is internal (private) to the Ascend engines
# [inferred from GE's TypeUtils::IsInternalFormat, which treats the 5HD/fractal families as internal].
_PUBLIC_FORMATS = frozenset(
    {
        "ND",
        "NCHW",
        "NHWC",
        "HWCN",
        "CHWN",
        "NDHWC",
        "NCDHW",
        "DHWCN",
        "DHWNC",
        "NC",
        "CN",
        "NCL",
        "ALL",
        "NULL",
        "RESERVED",
    }
)


_UNKNOWN: Any = object()
# attr_int's inline form around the read of the stored value (`{t}` a temporary, `{2}` the default)
_INT_FORM = "{{t}} if isinstance(({{t}} := {0}), int) and {{t}} is not True and {{t}} is not False else {{2}}"


# ---- typed attribute reads (GE's AttrUtils: absent or wrongly typed -> the default) --------------------------
def _attrs(holder: Any) -> dict[str, AttrValue]:
    cls = holder.__class__
    if cls is Node:  # the common cases first, without isinstance
        return holder.op.attrs  # type: ignore[no-any-return]
    if cls is TensorDesc or cls is ComputeGraph:
        return holder.attrs  # type: ignore[no-any-return]
    if isinstance(holder, Node):
        return holder.op.attrs
    if isinstance(holder, (TensorDesc, ComputeGraph)):
        return holder.attrs
    raise TypeError(f"{type(holder).__name__} holds no attributes")


def attr_bool(holder: Any, name: str, default: bool = False) -> bool:
    """GE's AttrUtils::GetBool with a default."""
    v = _attrs(holder).get(name)
    return v if v.__class__ is bool else default  # type: ignore[return-value]


def attr_int(holder: Any, name: str, default: int = 0) -> int:
    """GE's AttrUtils::GetInt with a default."""
    v = _attrs(holder).get(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def attr_ints(holder: Any, name: str) -> list[int]:
    """GE's AttrUtils::GetListInt; empty when absent."""
    v = (holder.op.attrs if holder.__class__ is Node else _attrs(holder)).get(name)
    if v is None:
        return []
    return _int_list(v)


def _int_list(v: Any) -> list[int]:
    """A stored list-of-int attribute value as GetListInt reads it (a copy), empty when it is anything else."""
    if isinstance(v, list) and all(x.__class__ is int or (isinstance(x, int) and not isinstance(x, bool)) for x in v):
        return list(v)
    return []


def attr_str(holder: Any, name: str, default: str = "") -> str:
    """GE's AttrUtils::GetStr with a default."""
    v = _attrs(holder).get(name)
    return v if isinstance(v, str) else default


# OpDesc fields (not attributes) that rules may set: GE's OpEngineName and OpKernelLibName.
NODE_FIELDS_SETTABLE = {"engine": "engine", "kernel_lib": "kernel_lib"}


def set_attr(holder: Any, name: str, value: Any) -> None:
    """Set an attribute on a node's op desc, a tensor desc or a graph (`engine`/`kernel_lib` set the op's fields)."""
    cls = holder.__class__
    if cls is TensorDesc or cls is ComputeGraph:  # the common cases first (every effect of a rule comes here)
        holder.attrs[name] = value
        return
    if cls is Node and name not in NODE_FIELDS_SETTABLE:
        holder.op.attrs[name] = value
        return
    if isinstance(holder, Node) and name in NODE_FIELDS_SETTABLE:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, not {value!r}")
        setattr(holder.op, NODE_FIELDS_SETTABLE[name], value)
        return
    _attrs(holder)[name] = value


# ---- GE utilities ------------------------------------------------------------------------------------------
def is_subgraph_input(node: Node) -> bool:
    """GE: a subgraph node carrying `_parent_node_index` (with the unknown-shape parent exception)."""
    g = node.graph
    if g.parent_node is None or ATTR_PARENT_NODE_INDEX not in node.op.attrs:
        return False
    parent = g.parent_node
    if attr_bool(parent, ATTR_IS_UNKNOWN_SHAPE):
        owner = parent.graph
        return not owner.unknown_shape and owner.parent_node is not None
    return True


def ref_input_index(out: OutAnchor) -> int:
    """GE's GraphUtils::IsRefFromInput: the input an output reuses, or -1 (spec §2.5)."""
    node = out.node
    op = node.op
    attrs = op.attrs
    index = out.index
    if op.type in _PASS_THROUGH_TYPES or (
        node.graph.parent_node is not None and ATTR_PARENT_NODE_INDEX in attrs and is_subgraph_input(node)
    ):
        return index
    if index == 0 and op.type in ("Merge", "Reshape"):
        return 0
    if attrs and attrs.get("reference") is True:
        out_name = op.output_names[index] if index < len(op.output_names) else ""
        for k, in_name in enumerate(op.input_names):
            if in_name == out_name:
                return k
    dattrs = op.output_descs[index].attrs
    if dattrs and dattrs.get(DESC_REUSE_INPUT) is True:
        v = dattrs.get(DESC_REUSE_INPUT_INDEX, 0)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0
    if (
        attrs
        and attrs.get("_output_reuse_input") is True
        and (attrs.get("_no_padding_continuous_input") is True or attrs.get("_no_padding_continuous_output") is True)
    ):
        return 0
    return -1


def ref_source(out: OutAnchor | None) -> OutAnchor | None:
    """GE's GetFirstOutAnchorNotInRefNode: follow outputs that reuse an input back to the first that does not.

    Null when the chain leaves the graph (an unconnected input) or exceeds GE's depth limit of 100.
    """
    anchor = out
    for _ in range(REF_TRACE_DEPTH_LIMIT):
        if anchor is None:
            return None
        k = ref_input_index(anchor)
        if k < 0:
            return anchor
        node = anchor.node
        anchor = node.in_peers[k] if 0 <= k < len(node.in_peers) else None
    return None


def ref_chain(out: OutAnchor | None) -> list[OutAnchor]:
    """`out` and every output it reuses up the ref chain (the anchors GE's GetRefMapping puts in one symbol with
    it, upwards), ending where an output reuses no input, an input is unconnected, or at GE's depth limit."""
    chain: list[OutAnchor] = []
    anchor = out
    while anchor is not None and len(chain) < REF_TRACE_DEPTH_LIMIT:
        chain.append(anchor)
        k = ref_input_index(anchor)
        node = anchor.node
        anchor = node.in_peers[k] if 0 <= k < len(node.in_peers) else None
    return chain


def is_single_op_scene(graph: ComputeGraph) -> bool:
    """GE's GraphUtils::IsSingleOpScene: the graph attr, else the first node (GetAllNodes) carrying it."""
    v = graph.attrs.get(ATTR_SINGLE_OP_SCENE)
    if isinstance(v, bool):
        return v
    return _first_single_op_attr(graph) is True


def _first_single_op_attr(graph: ComputeGraph) -> bool | None:
    """The first `_single_op_scene` bool in GetAllNodes order (each owner, then its subgraphs' nodes)."""
    if not graph.root.subgraphs:  # no subgraph anywhere: this graph's own nodes are all there is
        for node in graph.topological_order():
            attrs = node.op.attrs
            if ATTR_SINGLE_OP_SCENE in attrs:
                v = attrs[ATTR_SINGLE_OP_SCENE]
                if isinstance(v, bool):
                    return v
        return None
    for node in graph.topological_order():
        op = node.op
        nv = op.attrs.get(ATTR_SINGLE_OP_SCENE)
        if isinstance(nv, bool):
            return nv
        if op.subgraph_names:
            for sub in node.subgraphs():
                found = _first_single_op_attr(sub)
                if found is not None:
                    return found
    return None


def is_memory_type_special(mem_type: int) -> bool:
    """GE's MemTypeUtils::IsMemoryTypeSpecial: anything but DEFAULT, HBM or DDR."""
    return mem_type not in (RT_MEMORY_DEFAULT, RT_MEMORY_HBM, RT_MEMORY_DDR)


def memory_type(out: OutAnchor) -> int:
    """The memory type of an output as IsSameInputMemType reads it: HBM unless `_output_memory_type` is special."""
    attrs = out.node.op.attrs
    if not attrs:  # the common case: no attribute, HBM
        return RT_MEMORY_HBM
    v = attrs.get(ATTR_OUTPUT_MEM_TYPE_LIST)
    if v is None:
        return RT_MEMORY_HBM
    types = _int_list(v)
    if out.index < len(types) and is_memory_type_special(types[out.index]):
        return types[out.index]
    return RT_MEMORY_HBM


# GetAlignedShape and TransferDims depend on the origin shape through its rank only: one entry per
# (origin format, format, rank, dtype, mask), as GE's tables are. The entries are handed to the rules as they
# are (the rule language never changes a value).
_ALIGNED: dict[tuple[str, str, int, str, int], list[int] | None] = {}
_AXIS_MAPS: dict[tuple[str, str, int, int], AxisLists | None] = {}
_TABLE_LIMIT = 4096


class AxisLists:
    """TransferDims' axis maps as the rules read them: lists of lists (built once per table entry)."""

    __slots__ = ("dst_to_src", "src_to_dst")

    def __init__(self, m: formats.AxisMap) -> None:
        self.src_to_dst = [list(x) for x in m.src_to_dst]
        self.dst_to_src = [list(x) for x in m.dst_to_src]


def reshape_mask(desc: TensorDesc) -> int:
    """The desc's `_reshape_type_mask` (0 when absent), as attr_int reads it (inline: this is read for every
    input of every candidate)."""
    attrs = desc.attrs
    if not attrs:
        return 0
    v = attrs.get("_reshape_type_mask", 0)
    return v if v.__class__ is int or (isinstance(v, int) and not isinstance(v, bool)) else 0  # type: ignore[no-any-return]


def aligned_shape(desc: TensorDesc) -> list[int] | None:
    """GetAlignedShape for a desc (origin format -> format, origin shape, dtype, mask); null where GE fails."""
    mask = reshape_mask(desc) if desc.attrs else 0  # no attribute, the usual desc: no call
    key = (desc.origin_format, desc.format, len(desc.origin_shape), desc.dtype, mask)
    a = _ALIGNED.get(key, _UNKNOWN)
    if a is _UNKNOWN:
        if len(_ALIGNED) >= _TABLE_LIMIT:  # graphs name few format pairs; a flood of odd ones must not grow it
            _ALIGNED.clear()
        got = formats.get_aligned_shape(key[0], key[1], (1,) * key[2], key[3], key[4])
        a = _ALIGNED[key] = list(got) if got is not None else None
    return a  # type: ignore[no-any-return]


def axis_map(desc: TensorDesc) -> AxisLists | None:
    """TransferDims for a desc; null where GE fails."""
    key = (desc.origin_format, desc.format, len(desc.origin_shape), reshape_mask(desc) if desc.attrs else 0)
    m = _AXIS_MAPS.get(key, _UNKNOWN)
    if m is _UNKNOWN:
        if len(_AXIS_MAPS) >= _TABLE_LIMIT:
            _AXIS_MAPS.clear()
        got = formats.transfer_dims(key[0], key[1], (1,) * key[2], key[3])
        m = _AXIS_MAPS[key] = AxisLists(got) if got is not None else None
    return m  # type: ignore[no-any-return]


class ShapeTransfer:
    """TransferShapeUtils for one (origin format, format, rank, dtype, mask): both tables a check reads."""

    __slots__ = ("aligned_shape", "axis_map")

    def __init__(self, aligned: list[int] | None, axes: AxisLists | None) -> None:
        self.aligned_shape = aligned
        self.axis_map = axes


_TRANSFERS: dict[tuple[str, str, int, str, int], ShapeTransfer] = {}


def shape_transfer(desc: TensorDesc) -> ShapeTransfer:
    """`aligned_shape(desc)` and `axis_map(desc)` (the same entries) found by one key and one lookup."""
    key = (desc.origin_format, desc.format, len(desc.origin_shape), desc.dtype, reshape_mask(desc) if desc.attrs else 0)
    t = _TRANSFERS.get(key)
    if t is None:
        if len(_TRANSFERS) >= _TABLE_LIMIT:
            _TRANSFERS.clear()
        t = _TRANSFERS[key] = ShapeTransfer(aligned_shape(desc), axis_map(desc))
    return t


# ---- describing values in decision records -----------------------------------------------------------------
def _desc_text(d: TensorDesc) -> str:
    base = f"{d.dtype}[{','.join(map(str, d.shape))}] {d.format}"
    if d.origin_format != d.format or d.origin_shape != d.shape:
        base += f" (origin {d.origin_format} [{','.join(map(str, d.origin_shape))}])"
    return base


def _in_text(a: InAnchor) -> str:
    node = a.node
    peer = node.in_peers[a.index]
    if peer is None:
        return f"input {a.index} of {node.op.name} (unconnected)"
    return f"input {a.index} of {node.op.name} (from {peer.node.op.name}:{peer.index})"  # the peer's str()


def _consumers(n: Node) -> list[InAnchor]:
    return [a for peers in n.out_peers for a in peers]


# ---- the catalogue ------------------------------------------------------------------------------------------
# A field of an entity: (name, type, doc, getter), the getter an attribute path or a function of the object, or
# (name, type, doc, function or None, inline form[, view]); see Catalogue.add_entity.
_Field = (
    tuple[str, str, str, Callable[[Any], Any] | str]
    | tuple[str, str, str, Callable[[Any], Any] | None, str]
    | tuple[str, str, str, Callable[[Any], Any] | None, str | None, str]
)


@dataclass(frozen=True)
class _EntityDecl:
    """An entity type GE's catalogue declares: Catalogue.add_entity's arguments."""

    name: str
    doc: str
    fields: tuple[_Field, ...]
    parents: tuple[str, ...] = ()
    set_attr: Callable[[Any, str, Any], None] | None = None
    describe: Callable[[Any], str] = str
    settable: Mapping[str, str] = field(default_factory=dict)
    attrs_inline: str | None = None
    indexed: Mapping[str, IndexedList] | None = None
    key_inline: str | None = None


@dataclass(frozen=True)
class _HelperDecl:
    """A helper GE's catalogue declares (group `ge`): Catalogue.add_helper's arguments."""

    name: str
    params: str
    returns: str
    doc: str
    fn: Callable[..., Any]
    defaults: Mapping[str, Any] | None = None
    inline: Mapping[str, str] | None = None
    reads_views: bool = False


# The entity types, registered in this order.
_ENTITIES: tuple[_EntityDecl, ...] = (
    _EntityDecl(
        "AttrHolder", "Anything that carries GE attributes (op descs, tensor descs, graphs).", (), set_attr=set_attr
    ),
    _EntityDecl(
        "Graph",
        "A ComputeGraph: the root graph or a subgraph.",
        (
            ("name", "str", "The graph's name.", "name"),
            ("is_root", "bool", "True for the root graph.", "is_root"),
            (
                "unknown_shape",
                "bool",
                "GE's graph unknown-shape flag (GetGraphUnknownFlag).",
                "unknown_shape",
            ),
            ("parent_node", "Node?", "The node owning this subgraph; null for the root.", "parent_node"),
            (
                "is_single_op_scene",
                "bool",
                "GE's IsSingleOpScene: the `_single_op_scene` graph attr, else the first "
                "node carrying it (all nodes, subgraphs included); false by default.",
                is_single_op_scene,
            ),
            ("nodes", "list[Node]", "The graph's own nodes in topological order.", lambda g: g.topological_order()),
        ),
        parents=("AttrHolder",),
        describe=lambda g: f"graph '{g.name}'",
        attrs_inline="{0}.attrs",
    ),
    _EntityDecl(
        "Node",
        "A node of a graph with its op desc (GE's Node + OpDesc).",
        (
            ("name", "str", "The node's name.", "op.name"),
            ("type", "str", "The op type, e.g. ConcatD.", "op.type"),
            ("graph", "Graph", "The owner graph.", "graph"),
            ("inputs", "list[InputAnchor]", "All in-data anchors, connected or not, by index.", "in_anchors"),
            ("outputs", "list[OutputAnchor]", "All out-data anchors, by index.", "out_anchors"),
            ("input_count", "int", "Number of in-data anchors.", None, "len({0}.in_peers)"),
            ("output_count", "int", "Number of out-data anchors.", None, "len({0}.out_peers)"),
            (
                "input_descs",
                "list[TensorDesc]",
                "The op's input descs (GetAllInputsDescPtr).",
                "op.input_descs",
            ),
            ("output_descs", "list[TensorDesc]", "The op's output descs.", "op.output_descs"),
            (
                "consumers",
                "list[InputAnchor]",
                "Every peer in-anchor of every output, output by output.",
                _consumers,
                None,
                # read only: a node with one output (most) has its consumers stored as they are
                "{0}.out_peers[0] if len({0}.out_peers) == 1 else {f}({0})",
            ),
            (
                "out_data_nodes",
                "list[Node]",
                "Consumer nodes over all outputs (GetOutDataNodes).",
                lambda n: n.out_data_nodes(),
            ),
            (
                "subgraph_names",
                "list[str]",
                "Names of the subgraphs the node owns (GetSubgraphInstanceNames).",
                "op.subgraph_names",
            ),
            ("engine", "str", "GE's OpEngineName.", "op.engine"),
            ("kernel_lib", "str", "GE's OpKernelLibName.", "op.kernel_lib"),
            ("stream_id", "int", "The stream id (-1 until assigned).", "op.stream_id"),
        ),
        parents=("AttrHolder",),
        describe=lambda n: f"{n.name} ({n.type})",
        attrs_inline="{0}.op.attrs",
        settable=NODE_FIELDS_SETTABLE,
        # input k is InAnchor(node, k): generated code counts the producers rather than building the anchors
        indexed={"inputs": IndexedList("len({0}.in_peers)", InAnchor, ("node", "index"))},
    ),
    _EntityDecl(
        "InputAnchor",
        "An in-data anchor `node:index`.",
        (
            ("index", "int", "The anchor's index.", "index"),
            ("node", "Node", "The node the anchor belongs to.", "node"),
            (
                "desc",
                "TensorDesc",
                "The node's own input desc at this index.",
                None,
                "{0}.node.op.input_descs[{0}.index]",
            ),
            (
                "peer",
                "OutputAnchor?",
                "The producer's output anchor; null when unconnected.",
                None,
                "{0}.node.in_peers[{0}.index]",
            ),
            (
                "connected",
                "bool",
                "Whether a producer feeds this anchor.",
                None,
                "{0}.node.in_peers[{0}.index] is not None",
            ),
        ),
        describe=_in_text,
    ),
    _EntityDecl(
        "OutputAnchor",
        "An out-data anchor `node:index`.",
        (
            ("index", "int", "The anchor's index.", "index"),
            ("node", "Node", "The producer node.", "node"),
            (
                "desc",
                "TensorDesc",
                "The producer's output desc at this index.",
                None,
                "{0}.node.op.output_descs[{0}.index]",
            ),
            (
                "consumers",
                "list[InputAnchor]",
                "The in-anchors this output feeds.",
                None,
                "{0}.node.out_peers[{0}.index]",
            ),
            (
                "name",
                "str",
                "The output's name in the op's IR.",
                lambda a: a.node.op.output_names[a.index] if a.index < len(a.node.op.output_names) else "",
            ),
        ),
        describe=lambda a: f"{a} ({a.node.type})",
        key_inline="({0}.node, {0}.index)",  # equal as the anchors are (the node by identity); hashed in C
    ),
    _EntityDecl(
        "TensorDesc",
        "GE's GeTensorDesc: storage and origin shape/format, dtype, attributes.",
        (
            (
                "shape",
                "list[int]",
                "The storage shape (GetShape).",
                None,
                "list({0}.shape)",
                "{0}.shape",  # the IR's tuple, where only its elements are read
            ),
            (
                "origin_shape",
                "list[int]",
                "The origin shape (GetOriginShape).",
                None,
                "list({0}.origin_shape)",
                "{0}.origin_shape",
            ),
            ("dtype", "str", "The data type, e.g. float16.", "dtype"),
            ("format", "str", "The storage format, e.g. NC1HWC0.", "format"),
            ("origin_format", "str", "The origin format, e.g. NCHW.", "origin_format"),
            ("rank", "int", "Storage rank (GetShape().GetDimNum()).", None, "len({0}.shape)"),
            (
                "origin_rank",
                "int",
                "Origin rank (GetOriginShape().GetDimNum()).",
                None,
                "len({0}.origin_shape)",
            ),
            (
                "is_valid",
                "bool",
                "False only for GE's invalid desc (dtype undefined and format RESERVED).",
                None,
                "not ({{0}}.dtype == {!r} and {{0}}.format == {!r})".format(*INVALID_DESC),  # the property, inline
            ),
        ),
        parents=("AttrHolder",),
        describe=_desc_text,
        attrs_inline="{0}.attrs",
    ),
    _EntityDecl(
        "AxisMap",
        "TransferDims' axis maps between origin and storage axes.",
        (
            (
                "src_to_dst",
                "list[list[int]]",
                "Per origin axis, the storage axes it maps to.",
                "src_to_dst",
            ),
            (
                "dst_to_src",
                "list[list[int]]",
                "Per storage axis, the origin axes it comes from (-1: none).",
                "dst_to_src",
            ),
        ),
        describe=lambda m: f"src_to_dst={[list(x) for x in m.src_to_dst]}",
    ),
    _EntityDecl(
        "ShapeTransfer",
        "TransferShapeUtils for a desc: its aligned shape (GetAlignedShape) and axis maps (TransferDims).",
        (
            ("aligned_shape", "list[int]?", "As `aligned_shape(d)`.", "aligned_shape"),
            ("axis_map", "AxisMap?", "As `axis_map(d)`.", "axis_map"),
        ),
    ),
)

# GE's helpers (group `ge`), registered in this order.
_HELPERS: tuple[_HelperDecl, ...] = (
    _HelperDecl(
        "attr_bool",
        "h: AttrHolder, name: str, default: bool",
        "bool",
        "GE's AttrUtils::GetBool: the bool attribute, or `default` (false) when absent.",
        attr_bool,
        defaults={"default": False},
        # absent or not a bool -> false: the stored value `is True`
        inline={
            "Node/2": "{0}.op.attrs.get({1}) is True",
            "TensorDesc/2": "{0}.attrs.get({1}) is True",
            "Graph/2": "{0}.attrs.get({1}) is True",
            # with a literal default: only the other bool decides
            "Node/3/true": "{0}.op.attrs.get({1}) is not False",
            "TensorDesc/3/true": "{0}.attrs.get({1}) is not False",
            "Graph/3/true": "{0}.attrs.get({1}) is not False",
            "Node/3/false": "{0}.op.attrs.get({1}) is True",
            "TensorDesc/3/false": "{0}.attrs.get({1}) is True",
            "Graph/3/false": "{0}.attrs.get({1}) is True",
            # with a default: the stored value when it is a bool
            "Node/3": "{t} if ({t} := {0}.op.attrs.get({1})) is True or {t} is False else {2}",
            "TensorDesc/3": "{t} if ({t} := {0}.attrs.get({1})) is True or {t} is False else {2}",
            "Graph/3": "{t} if ({t} := {0}.attrs.get({1})) is True or {t} is False else {2}",
        },
    ),
    _HelperDecl(
        "attr_int",
        "h: AttrHolder, name: str, default: int",
        "int",
        "GE's AttrUtils::GetInt: the int attribute, or `default` (0) when absent.",
        attr_int,
        defaults={"default": 0},
        # an int that is not a bool, else the default
        inline={
            "Node/3": _INT_FORM.format("{0}.op.attrs.get({1})"),
            "TensorDesc/3": _INT_FORM.format("{0}.attrs.get({1})"),
            "Graph/3": _INT_FORM.format("{0}.attrs.get({1})"),
        },
    ),
    _HelperDecl(
        "attr_ints",
        "h: AttrHolder, name: str",
        "list[int]",
        "GE's AttrUtils::GetListInt: the list-of-int attribute, empty when absent.",
        attr_ints,
        # absent (the common case) -> empty, without the call
        inline={
            "Node/2": "[] if {0}.op.attrs.get({1}) is None else {f}({0}, {1})",
            "TensorDesc/2": "[] if {0}.attrs.get({1}) is None else {f}({0}, {1})",
            "Graph/2": "[] if {0}.attrs.get({1}) is None else {f}({0}, {1})",
        },
    ),
    _HelperDecl(
        "attr_str",
        "h: AttrHolder, name: str, default: str",
        "str",
        "GE's AttrUtils::GetStr: the string attribute, or `default` ('') when absent.",
        attr_str,
        defaults={"default": ""},
    ),
    _HelperDecl(
        "has_attr",
        "h: AttrHolder, name: str",
        "bool",
        "Whether the attribute is present at all.",
        lambda h, name: name in _attrs(h),
    ),
    _HelperDecl(
        "dtype_size",
        "dtype: str",
        "int",
        "GE's GetSizeByDataType: bytes per element, 1000+bits for sub-byte types, -1 if invalid.",
        formats.dtype_size,
    ),
    _HelperDecl(
        "size_in_bytes",
        "count: int, dtype: str",
        "int",
        "GE's GetSizeInBytes: element count times size (sub-byte rounded up), -1 if invalid.",
        formats.size_in_bytes,
    ),
    _HelperDecl(
        "shape_size",
        "shape: list[int]",
        "int",
        "GE's GetShapeSize: product of dims; 0 when empty or any dim is 0; -1 when any is unknown.",
        formats.shape_size,
        reads_views=True,
    ),
    _HelperDecl(
        "is_unknown_shape",
        "shape: list[int]",
        "bool",
        "GE's IsUnknownShape: any dim is negative.",
        formats.is_unknown_shape,
        inline={"list/1": "len({0}) > 0 and min({0}) < 0"},  # the smallest dim, in one C call
        reads_views=True,
    ),
    _HelperDecl(
        "tensor_bytes",
        "d: TensorDesc",
        "int",
        "Raw byte size of a desc's storage shape (-1 if unknown).",
        lambda d: formats.tensor_raw_size(d.shape, d.dtype),
    ),
    _HelperDecl(
        "ref_input_index",
        "o: OutputAnchor",
        "int",
        "GE's IsRefFromInput: the input index this output reuses (pass-through, Reshape, reference, "
        "reuse-input flag, no-padding reuse), or -1.",
        ref_input_index,
    ),
    _HelperDecl(
        "ref_source",
        "o: OutputAnchor?",
        "OutputAnchor?",
        "GE's GetFirstOutAnchorNotInRefNode: the first output up the ref chain that reuses no input; "
        "null when the chain leaves the graph or exceeds GE's depth limit of 100.",
        ref_source,
    ),
    _HelperDecl(
        "ref_chain",
        "o: OutputAnchor?",
        "list[OutputAnchor]",
        "`o` and every output it reuses up the ref chain (what shares its memory upwards, as one GE symbol); "
        "empty for null.",
        ref_chain,
    ),
    _HelperDecl(
        "memory_type",
        "o: OutputAnchor",
        "int",
        "The output's memory type as IsSameInputMemType reads it: `_output_memory_type[index]` when "
        "special, else RT_MEMORY_HBM (2).",
        memory_type,
    ),
    _HelperDecl(
        "is_memory_type_special",
        "t: int",
        "bool",
        "GE's MemTypeUtils::IsMemoryTypeSpecial: anything but DEFAULT (0), HBM (2), DDR (4).",
        is_memory_type_special,
    ),
    _HelperDecl(
        "aligned_shape",
        "d: TensorDesc",
        "list[int]?",
        "TransferShapeUtils::GetAlignedShape for the desc's origin/storage formats, origin shape, dtype "
        "and `_reshape_type_mask`; null where GE fails.",
        aligned_shape,
    ),
    _HelperDecl(
        "axis_map",
        "d: TensorDesc",
        "AxisMap?",
        "TransferShapeUtils::TransferDims for the desc; null where GE fails.",
        axis_map,
    ),
    _HelperDecl(
        "shape_transfer",
        "d: TensorDesc",
        "ShapeTransfer",
        "Both of TransferShapeUtils' answers for the desc, `aligned_shape(d)` and `axis_map(d)`, found by one "
        "lookup (a check reading both calls this once).",
        shape_transfer,
    ),
    _HelperDecl(
        "is_internal_format",
        "fmt: str",
        "bool",
        "Whether a format is internal to the Ascend engines (5HD, fractal...) rather than a user format.",
        lambda fmt: formats.primary_format(fmt) not in _PUBLIC_FORMATS,
    ),
    _HelperDecl("primary_format", "fmt: str", "str", "The primary format of a format name.", formats.primary_format),
)


# The variables bound for every candidate: (name, type, doc).
_ROOTS = (
    ("node", "Node", "The candidate node."),
    ("graph", "Graph", "The candidate's owner graph (the graph being processed)."),
)


@cache
def ge_catalogue() -> Catalogue:
    """The catalogue the GE rules are checked and run against: builtins plus GE's entities and helpers."""
    c = builtin_catalogue()
    for e in _ENTITIES:
        c.add_entity(
            e.name,
            e.doc,
            e.fields,
            parents=e.parents,
            set_attr=e.set_attr,
            describe=e.describe,
            settable=e.settable,
            attrs_inline=e.attrs_inline,
            indexed=e.indexed,
            key_inline=e.key_inline,
        )
    for h in _HELPERS:
        c.add_helper(
            h.name,
            h.params,
            h.returns,
            h.doc,
            h.fn,
            group="ge",
            defaults=h.defaults,
            inline=h.inline,
            reads_views=h.reads_views,
        )
    _add_edits(c)
    for name, type_, doc in _ROOTS:
        c.add_root(name, type_, doc)
    return c


def _add_edits(c: Catalogue) -> None:
    """The structural actions (`graph_edit`): an insert on an edge, a bypass."""
    ops = sorted(ge_edit.INSERTABLE)
    c.add_edit(
        "insert_before",
        "InputAnchor",
        "`insert OP before i`: a new OP node on the edge into input anchor i (GE's InsertNodeBefore).",
        ops,
        ge_edit.why_not_insert_before,
        ge_edit.insert_before,
    )
    c.add_edit(
        "insert_after",
        "OutputAnchor",
        "`insert OP after o`: one new OP node between output anchor o and all its consumers (InsertNodeAfter).",
        ops,
        ge_edit.why_not_insert_after,
        ge_edit.insert_after,
    )
    c.add_edit(
        "bypass",
        "Node",
        "`bypass n`: n's producer feeds n's consumers and n is removed (one input, one output, no control edge).",
        (),
        ge_edit.why_not_bypass,
        ge_edit.bypass,
    )


class GeGraphAccess:
    """How the engine walks ComputeGraphs."""

    def nodes(self, graph: ComputeGraph) -> list[Node]:
        """The graph's own nodes, topologically ordered."""
        return graph.topological_order()

    def of_types(self, nodes: Sequence[Node], op_types: frozenset[str]) -> list[Node]:
        """The nodes whose op type is one of `op_types`, in order."""
        return [n for n in nodes if n.op.type in op_types]

    # The op type, the node name and the graph name, read for every record the engine makes: static methods, so
    # a call binds no `self` (on CPython 3.11 a Python function reading two attributes costs fewer instructions
    # than an `operator.attrgetter`, whose call builds an argument tuple and looks each attribute up unspecialised)
    @staticmethod
    def op_type(node: Node) -> str:
        """The op type used to index candidates."""
        return node.op.type

    @staticmethod
    def node_name(node: Node) -> str:
        """The node's name, for records."""
        return node.op.name

    @staticmethod
    def graph_name(graph: ComputeGraph) -> str:
        """The graph's name, for records."""
        return graph.name

    def bindings(self, graph: ComputeGraph, node: Node) -> dict[str, Any]:
        """`node` and its owner `graph` (a new dict)."""
        return {"node": node, "graph": graph}

    def graph_bindings(self, graph: ComputeGraph) -> dict[str, Any]:
        """`graph` alone, for graph-level exclusions."""
        return {"graph": graph}
