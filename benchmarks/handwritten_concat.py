"""GE's ConcatNotaskPass written by hand in plain Python: the yardstick of the engine-overhead benchmark.

Exactly the checks of `rules/concat_notask.yaml` and the shared ones of `rules/notask_base.yaml` it uses
(spec/ge_reference.md §2.2–§2.4 and §3), in GE's order, with
GE's sequential semantics: candidates (ConcatD / ConcatV2D) in topological order, the root graph first and then
every subgraph (as GE's PassManager runs a pass), the first failing check leaves the node untouched, and a node
that passes is marked at once, so later candidates see the marks (cascades, producer locks). Every candidate
gets a :class:`Decision` naming the failing check and its path, like the engine's, so the two can be compared
record by record; the explanation (`reason`, `elements`) is what the engine adds on top and is left out here.

It is written for speed, as a hand-written pass would be: attribute reads inlined (`attrs.get(k) is True` is
GE's GetBool with default false), ref-chain tracing once per input (through `compiler/facts.ref_input_index`,
GE's IsRefFromInput, the one definition both sides share; GE's IsSingleOpScene likewise through
`compiler/facts.is_single_op_scene`) with GE's set semantics instead of the rule's pairwise
re-tracing, and the shape-transfer tables (aligned shape, axis map) cached per (formats, rank, dtype, mask).
`as_pass` and `hosted` put it in a pass manager in the rule pass's place. Used only by `benchmarks/run.py` and by
`tests/test_benchmark_handwritten.py`.
"""

from __future__ import annotations

from typing import Any

from rulepass.compiler import formats
from rulepass.compiler.facts import REF_TRACE_DEPTH_LIMIT, is_single_op_scene, ref_input_index
from rulepass.compiler.ir import ComputeGraph, Node, OutAnchor
from rulepass.compiler.passes import Pass, PassContext, PassManager, PassOutput, PythonPass
from rulepass.engine.decisions import Decision

RULE = "ConcatNotaskPass"
TARGET_TYPES = frozenset({"ConcatD", "ConcatV2D"})
_INVALID_PRE_TYPES = frozenset({"Data", "RefData", "Variable", "Constant", "Const"})
_LX_MEMORY_TYPES = frozenset({65536, 131072, 32768})  # RT_MEMORY_L1, RT_MEMORY_L2, kRtMemoryUB
_ORDINARY_MEMORY_TYPES = frozenset({0x0, 0x2, 0x4})  # RT_MEMORY_DEFAULT, HBM, DDR: all read as HBM
RT_MEMORY_HBM = 0x2
_PRE_NODE_BOOL_ATTRS = (
    "continuous_input",
    "continuous_output",
    "reference",
    "_no_task",
    "_output_reuse_input",
    "_no_padding_continuous_input",
)
LOCK = "can_reused_for_concat_optimize"

# (check name, path, kind) of every way a candidate can miss, built once.
_MISS: dict[str, tuple[tuple[str, ...], str]] = {
    "SingleOpScene": (("SingleOpScene",), "skip_graph"),
    "MemoryDiscontiguousAllocation": (("MemoryDiscontiguousAllocation",), "skip_graph"),
    "IsUnknownShapeOp": (("IsUnknownShapeOp",), "reject_if"),
    "IsOwnerGraphUnknown": (("IsOwnerGraphUnknown",), "reject_if"),
    "IsScalarInput": (("InputCheck", "IsScalarInput"), "reject_if"),
    "CheckTensorAlign": (("InputCheck", "CheckTensorAlign"), "require"),
    "HasSameSourceAnchor": (("InputCheck", "HasSameSourceAnchor"), "reject_if"),
    "IsPreNodeTypeValid": (("InputCheck", "IsPreNodeTypeValid"), "require"),
    "IsPreNodeWithSubgraph": (("InputCheck", "IsPreNodeWithSubgraph"), "reject_if"),
    "IsPreOutAnchorCanReuse": (("InputCheck", "IsPreOutAnchorCanReuse"), "require"),
    "IsPreOutAnchorValidMultiRef": (("InputCheck", "IsPreOutAnchorValidMultiRef"), "require"),
    "IsPreNodeAttrValid": (("InputCheck", "IsPreNodeAttrValid"), "reject_if"),
    "IsSameInputMemType": (("InputCheck", "IsSameInputMemType"), "reject_if"),
    "ConcatDimInRange": (("CheckDim", "ConcatDimInRange"), "require"),
    "GetAlignedShape": (("CheckDim", "GetAlignedShape"), "require"),
    "TransferDims": (("CheckDim", "TransferDims"), "require"),
    "CheckRealDim": (("CheckDim", "CheckRealDim"), "require"),
    "CheckDimAlignment": (("CheckDim", "CheckDimAlignment"), "require"),
    "NextNodeNotVirtual": (("OutputCheck", "NextNodeNotVirtual"), "reject_if"),
    "LxFusionCheck": (("LxFusionCheck",), "reject_if"),
}

# dtype -> GE's GetSizeByDataType (-1 when invalid); filled lazily.
_DTYPE_SIZE: dict[str, int] = {}
# (origin format, format, origin rank, dtype, mask) -> (aligned shape or None, axis map or None)
_TRANSFER: dict[tuple[str, str, int, str, int], tuple[tuple[int, ...] | None, formats.AxisMap | None]] = {}


def _dtype_size(dtype: str) -> int:
    size = _DTYPE_SIZE.get(dtype)
    if size is None:
        size = _DTYPE_SIZE[dtype] = formats.dtype_size(dtype)
    return size


def _transfer(origin_format: str, fmt: str, rank: int, dtype: str, mask: int) -> tuple[Any, Any]:
    key = (origin_format, fmt, rank, dtype, mask)
    hit = _TRANSFER.get(key)
    if hit is None:
        shape = (1,) * rank  # both depend on the origin shape through its rank only
        hit = _TRANSFER[key] = (
            formats.get_aligned_shape(origin_format, fmt, shape, dtype, mask),
            formats.transfer_dims(origin_format, fmt, shape, mask),
        )
    return hit


def _ref_source(out: OutAnchor) -> OutAnchor | None:
    """GetFirstOutAnchorNotInRefNode: follow outputs that reuse an input; null past the chain or 100 steps."""
    anchor: OutAnchor | None = out
    for _ in range(REF_TRACE_DEPTH_LIMIT):
        if anchor is None:
            return None
        k = ref_input_index(anchor)  # GE's GraphUtils::IsRefFromInput, as a hand-written pass would call it
        if k < 0:
            return anchor
        peers = anchor.node.in_peers
        anchor = peers[k] if 0 <= k < len(peers) else None
    return None


def _memory_type(pattrs: dict[str, Any], index: int) -> int:
    """The producer output's memory type as IsSameInputMemType reads it (special values kept, others HBM)."""
    types = pattrs.get("_output_memory_type") if pattrs else None
    if type(types) is list and index < len(types) and all(type(x) is int for x in types):
        v: int = types[index]
        if v not in _ORDINARY_MEMORY_TYPES:
            return v
    return RT_MEMORY_HBM


def _tensor_aligned(desc: Any) -> bool:
    """CheckTensorAlign for one input desc: a positive whole number of 32-byte blocks."""
    size = _dtype_size(desc.dtype)
    if size < 0:
        return False
    count = formats.shape_size(desc.shape)
    if count <= 0:  # empty (0) or unknown (-1): GetSizeInBytes gives 0 / -1
        return False
    nbytes = formats.size_in_bytes(count, desc.dtype)
    return nbytes > 0 and nbytes % 32 == 0


def _input_check(node: Node) -> str | None:
    """InputCheck over the connected inputs; the name of the first failing sub-check, or None."""
    op = node.op
    descs = op.input_descs
    single = len(descs) == 1
    sources: set[Any] = set()
    first_mem = -1
    for k, out in enumerate(node.in_peers):
        if out is None:
            continue
        desc = descs[k]
        if not desc.origin_shape:
            return "IsScalarInput"
        if not single and not _tensor_aligned(desc):
            return "CheckTensorAlign"
        src = _ref_source(out)
        key = None if src is None else (id(src.node), src.index)
        if key in sources:
            return "HasSameSourceAnchor"
        sources.add(key)
        if src is None or src.node.op.type in _INVALID_PRE_TYPES:
            return "IsPreNodeTypeValid"
        if src.node.op.subgraph_names:
            return "IsPreNodeWithSubgraph"
        producer = out.node
        pop = producer.op
        if pop.output_descs[out.index].attrs.get(LOCK) is False:
            return "IsPreOutAnchorCanReuse"
        consumers = producer.out_peers[out.index]
        if len(consumers) != 1:
            for c in consumers:
                if c.node.op.type == "NetOutput":
                    return "IsPreOutAnchorValidMultiRef"
        pattrs = pop.attrs
        if pattrs:
            for name in _PRE_NODE_BOOL_ATTRS:
                if pattrs.get(name) is True:
                    return "IsPreNodeAttrValid"
            atomic = pattrs.get("atomic_output_index")
            if isinstance(atomic, list) and atomic and all(type(x) is int for x in atomic):
                return "IsPreNodeAttrValid"
        mem = _memory_type(pattrs, out.index)
        if first_mem < 0:
            first_mem = mem
        elif mem != first_mem:  # every earlier input had first_mem, else it would have failed already
            return "IsSameInputMemType"
    return None


def _check_dim(node: Node) -> str | None:
    """CheckDim over every input desc (connected or not); the first failing sub-check, or None."""
    descs = node.op.input_descs
    if not descs:
        return None
    raw = node.op.attrs.get("concat_dim", 0)
    dim = raw if type(raw) is int else 0
    if dim < 0:
        dim += len(descs[0].origin_shape)  # normalised once, with the first input's origin rank
    for d in descs:
        origin = d.origin_shape
        rank = len(origin)
        if not 0 <= dim < rank:
            return "ConcatDimInRange"
        mask = d.attrs.get("_reshape_type_mask", 0) if d.attrs else 0
        if type(mask) is not int:
            mask = 0
        align, amap = _transfer(d.origin_format, d.format, rank, d.dtype, mask)
        if align is None or len(align) != rank:
            return "GetAlignedShape"
        shape = d.shape
        if amap is None or len(amap.src_to_dst) != rank or len(amap.dst_to_src) != len(shape):
            return "TransferDims"
        src_to_dst = amap.src_to_dst
        real_dims = src_to_dst[dim]
        if not real_dims:
            return "CheckRealDim"
        real = real_dims[0]
        if not 0 <= real < len(shape):
            return "CheckRealDim"
        for a in range(real):
            if shape[a] != 1:
                return "CheckRealDim"
        merged = amap.dst_to_src[real]
        if len(merged) > 1:
            if dim not in merged:
                return "CheckRealDim"
            for f in merged[: merged.index(dim)]:
                if f < 0 or f >= rank:
                    return "CheckRealDim"
                parts = src_to_dst[f]
                if len(parts) > 1:
                    ok = origin[f] <= align[f] if parts[0] == real else align[f] == 1
                else:
                    ok = origin[f] == 1
                if not ok:
                    return "CheckRealDim"
        a_dim = align[dim]
        if a_dim <= 0 or origin[dim] % a_dim != 0:
            return "CheckDimAlignment"
    return None


def _output_check(node: Node) -> str | None:
    """OutputCheck: no consumer (one step past a Reshape) is already virtual."""
    for peers in node.out_peers:
        for c in peers:
            nxt = c.node
            if nxt.op.type == "Reshape":
                for later in nxt.out_peers:
                    if later:
                        nxt = later[0].node
                        break
            attrs = nxt.op.attrs
            if attrs and (
                attrs.get("_no_task") is True
                or attrs.get("_output_reuse_input") is True
                or attrs.get("_no_padding_continuous_input") is True
            ):
                return "NextNodeNotVirtual"
    return None


def _int_list(v: Any) -> list[int]:
    if isinstance(v, list) and all(type(x) is int for x in v):
        return v
    return []


def _lx_fusion(node: Node) -> bool:
    attrs = node.op.attrs
    if attrs:
        for t in _int_list(attrs.get("_input_memory_type")) + _int_list(attrs.get("_output_memory_type")):
            if t in _LX_MEMORY_TYPES:
                return True
    return "lxslice" in node.op.name


def decide(node: Node, graph: ComputeGraph) -> str | None:
    """The name of the first check `node` fails, or None when every check passes (nothing is changed)."""
    op = node.op
    for d in op.input_descs:
        if not (d.dtype == "undefined" and d.format == "RESERVED") and any(x < 0 for x in d.shape):
            return "IsUnknownShapeOp"
    for d in op.output_descs:
        if not (d.dtype == "undefined" and d.format == "RESERVED") and any(x < 0 for x in d.shape):
            return "IsUnknownShapeOp"
    if graph.attrs.get("_dynamic_shape_partitioned") is True or graph.unknown_shape:
        return "IsOwnerGraphUnknown"
    return (
        _input_check(node) or _check_dim(node) or _output_check(node) or ("LxFusionCheck" if _lx_fusion(node) else None)
    )


def mark(node: Node) -> None:
    """SetNotaskAttr: the concat becomes virtual and locks every direct producer output it reads."""
    attrs = node.op.attrs
    attrs["_no_task"] = True
    attrs["_no_padding_continuous_input"] = True
    attrs["_output_reuse_input"] = True
    attrs["_reuse_input_on_dim_index"] = 0
    for out in node.in_peers:
        if out is not None:
            out.node.op.output_descs[out.index].attrs[LOCK] = False


def _owned(node: Node) -> list[ComputeGraph]:
    """The subgraphs `node` owns, in instance-name order (only called for nodes that name some)."""
    registry = node.graph.root.subgraphs
    return [registry[name] for name in node.op.subgraph_names if name in registry]


def _subgraphs(graph: ComputeGraph, out: list[ComputeGraph]) -> list[ComputeGraph]:
    """Every subgraph below `graph`, parents before children, in owner topological order (all_subgraphs)."""
    for node in graph.topological_order():
        if node.op.subgraph_names:
            for sub in _owned(node):
                out.append(sub)
                _subgraphs(sub, out)
    return out


def _skip(graph: ComputeGraph) -> str | None:
    if is_single_op_scene(graph):  # GE's GraphUtils::IsSingleOpScene, the shared domain function
        return "SingleOpScene"
    if graph.attrs.get("_memory_discontiguous_allocation") is True:
        return "MemoryDiscontiguousAllocation"
    return None


def _miss(graph: ComputeGraph, node: Node, check: str, dry_run: bool) -> Decision:
    path, kind = _MISS[check]
    return Decision(RULE, graph.name, node.op.name, node.op.type, False, check, path, kind, dry_run=dry_run)


def run_graph(graph: ComputeGraph, out: list[Decision], *, dry_run: bool = False) -> None:
    """Decide every candidate of one graph (its own nodes), appending to `out`."""
    candidates = [n for n in graph.topological_order() if n.op.type in TARGET_TYPES]
    if not candidates:
        return
    skip = _skip(graph)
    if skip is not None:
        out.extend(_miss(graph, n, skip, dry_run) for n in candidates)
        return
    gname = graph.name
    for node in candidates:
        failed = decide(node, graph)
        if failed is not None:
            out.append(_miss(graph, node, failed, dry_run))
            continue
        if not dry_run:
            mark(node)
        out.append(Decision(RULE, gname, node.op.name, node.op.type, True, dry_run=dry_run))


def concat_notask_pass(graph: ComputeGraph, *, dry_run: bool = False) -> list[Decision]:
    """Run the pass over `graph` and then every subgraph (GE's PassManager order); the decisions in run order."""
    out: list[Decision] = []
    run_graph(graph, out, dry_run=dry_run)
    if graph.subgraphs:  # the root keeps every subgraph: none registered, none to visit
        for sub in _subgraphs(graph, []):
            run_graph(sub, out, dry_run=dry_run)
    return out


def as_pass(rule_pass: Pass) -> PythonPass:
    """This pass in the rule pass's place: a Python pass with its name, levels and order, which a pass manager
    runs as it runs the rule (on the root graph, then every subgraph), so the two compare without the manager's
    own cost counted against either."""

    def run(graph: ComputeGraph, ctx: PassContext, out: PassOutput) -> None:
        run_graph(graph, out.decisions, dry_run=ctx.dry_run)

    return PythonPass(rule_pass.name, run, levels=rule_pass.levels, after=rule_pass.after, before=rule_pass.before)


def hosted(pm: PassManager) -> PassManager:
    """A pass manager with `pm`'s passes, level and disabled set, this pass in the rule pass's place."""
    return PassManager([as_pass(p) if p.name == RULE else p for p in pm.passes], level=pm.level, disabled=pm.disabled)


def decision_key(d: Decision) -> tuple[Any, ...]:
    """What must agree between the engine and this pass for one candidate."""
    return (d.graph, d.node, d.op_type, d.fired, d.check, d.check_path, d.check_kind)
