"""Storage formats of an imported ONNX model as GE assigns them (`rulepass import --formats ascend`).

The rule, per graph, over the 4-D tensors (a tensor is one output of one node, with all its consumers):
1. Ops that *require* NC1HWC0 (REQUIRES_5HD: convolution, pooling, batch norm, LRN) take their 4-D data input
   and give their outputs in NC1HWC0; a convolution's weight is FRACTAL_Z (its Const too, when that is its only
   consumer).
2. Format-agnostic ops (FORMAT_AGNOSTIC: Split/Concat, Identity, Dropout, activations, elementwise ops, and a
   Slice that keeps C whole or cuts it on C0 boundaries) take whatever format their neighbours have: the 4-D
   tensors around each such op are joined into one group, and a group that touches an op of rule 1 is a
   feature-map group.
3. In a feature-map group, every port of a rule-1 or rule-2 op is NC1HWC0 (so a Split or a ReLU between two
   convolutions needs no TransData), and every other port (Data, Reshape, MatMul, NetOutput...) keeps the
   origin format NCHW, with one TransData where the two meet.
4. A 4-D tensor in no feature-map group never reaches a convolution chain: GE keeps it ND (e.g. the K/V cache of
   a transformer going through MatMul and Concat), and so does this: format and origin format ND.
An elementwise binary op is format-agnostic when every operand is 4-D with the output's C, or holds one
element: broadcasting over N, H or W reads the same in NC1HWC0, over C it does not (C is padded to C1 x C0), so
an op broadcasting over C stays in the origin format [inferred from the layouts, not read in GE].
Then a TransData is inserted wherever a consumer's input format differs from its producer's output, except
after a Const read by that consumer alone, which takes the consumer's format (GE folds such a TransData).
"""

from __future__ import annotations

from collections.abc import Callable

from . import formats
from .ir import ComputeGraph, Node, OpDesc, TensorDesc

REQUIRES_5HD = frozenset(
    {
        *("Conv2D", "Conv2DTransposeD", "MaxPool", "AvgPool", "AvgPoolV2", "BatchNorm", "LRN"),
        *("GlobalAveragePool", "GlobalMaxPool"),
    }
)
FORMAT_AGNOSTIC = frozenset(
    {
        *("ConcatD", "SplitD", "SplitVD", "Identity", "Dropout", "Relu", "Relu6", "Sigmoid", "Tanh", "LeakyRelu"),
        *("Elu", "ClipByValue", "Abs", "Neg", "Exp", "Sqrt", "HardSigmoid", "HardSwish", "Swish"),
        *("Add", "Sub", "Mul", "Div", "AddN", "AccumulateNV2", "Maximum", "Minimum"),
    }
)
_ELEMENTWISE_BINARY = frozenset({"Add", "Sub", "Mul", "Div", "AddN", "AccumulateNV2", "Maximum", "Minimum"})

_SLICES = frozenset({"StridedSliceV2"})  # ONNX Slice, bounds as inputs
_CONVS = frozenset({"Conv2D", "Conv2DTransposeD"})  # input 1 is a FRACTAL_Z weight
_Key = tuple[int, int]  # (id of the producer node, output index)


def _is_4d(d: TensorDesc) -> bool:
    return d.is_valid and len(d.origin_shape) == 4


def _role(n: Node) -> str:
    """'5hd' for rule 1, 'agnostic' for rule 2, '' otherwise."""
    outs = n.op.output_descs
    if not outs or not all(_is_4d(d) for d in outs):
        return ""
    if n.op.type in REQUIRES_5HD:
        return "5hd"
    if n.op.type not in FORMAT_AGNOSTIC and n.op.type not in _SLICES:
        return ""
    ins = [d for d in n.op.input_descs if d.is_valid]
    if n.op.type in _ELEMENTWISE_BINARY:
        # broadcasting over N, H or W is the same in NC1HWC0; over C it is not (C1 x C0 is padded)
        c = outs[0].origin_shape[1]
        ok = all((_is_4d(d) and d.origin_shape[1] == c) or _is_one_element(d) for d in ins)
        return "agnostic" if ok and any(_is_4d(d) for d in ins) else ""
    if n.op.type in _SLICES:
        return "agnostic" if _is_4d(ins[0]) and _slice_keeps_c_blocks(n) else ""
    if not ins or not all(_is_4d(d) for d in ins):
        return ""
    return "agnostic"


def _const_ints(n: Node, k: int) -> list[int] | None:
    peer = n.in_peers[k] if k < len(n.in_peers) else None
    v = peer.node.op.attrs.get("value") if peer is not None and peer.node.op.type == "Const" else None
    return [int(x) for x in v] if isinstance(v, list) and all(isinstance(x, int) for x in v) else None


def _slice_keeps_c_blocks(n: Node) -> bool:
    """A slice (inputs x, starts, ends, axes, steps) that keeps C whole, or cuts it on C0 boundaries with step 1."""
    src, out = n.op.input_descs[0], n.op.output_descs[0]
    c_in, c_out = src.origin_shape[1], out.origin_shape[1]
    if c_in == c_out:
        return True
    starts, axes, steps = _const_ints(n, 1), _const_ints(n, 3), _const_ints(n, 4)
    if starts is None:
        return False
    axes = axes if axes is not None else list(range(len(starts)))
    at = [i for i, a in enumerate(axes) if a in (1, -3)]
    if len(at) != 1 or (steps is not None and steps[at[0]] != 1):
        return False
    c0 = formats.c0_of(src.dtype)
    start = min(max(starts[at[0]] + (c_in if starts[at[0]] < 0 else 0), 0), c_in)
    return start % c0 == 0 and c_out % c0 == 0


def _is_one_element(d: TensorDesc) -> bool:
    return all(x == 1 for x in d.origin_shape)  # a scalar, or a tensor of one element


class _Groups:
    def __init__(self) -> None:
        self.parent: dict[_Key, _Key] = {}

    def find(self, k: _Key) -> _Key:
        root = k
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while k != root:  # path compression
            self.parent[k], k = root, self.parent.get(k, k)
        return root

    def union(self, a: _Key, b: _Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def assign_ascend_formats(g: ComputeGraph, unique: Callable[[str], str]) -> int:
    """Assign storage formats by the module's rule and insert TransData ops; returns how many were inserted."""
    inserted = 0
    for sub in [g, *g.all_subgraphs()]:
        nodes = list(sub.topological_order())
        roles = {id(n): _role(n) for n in nodes}
        groups = _Groups()
        anchored: set[_Key] = set()
        for n in nodes:
            role = roles[id(n)]
            if not role:
                continue
            ins = [  # only 4-D tensors join a group (a shared scalar must not join two chains)
                (p.node, p.index)
                for p, d in zip(n.in_peers, n.op.input_descs, strict=False)
                if p is not None and _is_4d(d)
            ]
            if role == "5hd":
                anchored.update((id(n), k) for k in range(len(n.op.output_descs)))
                anchored.update((id(src), k) for src, k in ins[:1])
                continue
            first = (id(n), 0)
            for k in range(len(n.op.output_descs)):
                groups.union(first, (id(n), k))
            for src, k in ins:
                groups.union(first, (id(src), k))
        feature = {groups.find(k) for k in anchored}
        in_feature = _membership(groups, feature)
        for n in nodes:
            _place(n, roles[id(n)], in_feature)
        inserted += _insert_transdata(sub, nodes, unique)
    return inserted


def _membership(groups: _Groups, feature: set[_Key]) -> Callable[[_Key], bool]:
    return lambda key: groups.find(key) in feature


def _place(n: Node, role: str, is_feature: Callable[[_Key], bool]) -> None:
    for k, d in enumerate(n.op.output_descs):
        if _is_4d(d):
            _set(d, is_feature((id(n), k)), role != "")
    for k, (d, peer) in enumerate(zip(n.op.input_descs, n.in_peers, strict=False)):
        if peer is None or not d.is_valid:
            continue
        if n.op.type in _CONVS and k == 1 and role == "5hd":
            _to_format(d, "FRACTAL_Z")
            w = peer.node
            if w.op.type == "Const" and len(w.out_peers[peer.index]) == 1:
                _to_format(peer.desc, "FRACTAL_Z")
        elif _is_4d(d):
            _set(d, is_feature((id(peer.node), peer.index)), role == "agnostic" or (role == "5hd" and k == 0))


def _set(d: TensorDesc, feature: bool, five_hd: bool) -> None:
    if not feature:
        d.format = d.origin_format = "ND"
        d.shape = d.origin_shape
    elif five_hd:
        _to_format(d, "NC1HWC0")


def _to_format(d: TensorDesc, fmt: str) -> None:
    shape = formats.transfer_shape(d.origin_format, fmt, d.origin_shape, d.dtype)
    if shape is not None:
        d.format = fmt
        d.shape = shape


def _insert_transdata(sub: ComputeGraph, nodes: list[Node], unique: Callable[[str], str]) -> int:
    inserted = 0
    for n in nodes:
        for k, peer in enumerate(list(n.in_peers)):
            if peer is None:
                continue
            want, have = n.op.input_descs[k], peer.desc
            if want.format == have.format or not want.is_valid:
                continue
            if peer.node.op.type == "Const" and len(peer.node.out_peers[peer.index]) == 1:
                peer.node.op.output_descs[peer.index] = want.copy()  # GE folds a TransData of a weight away
                continue
            inserted += 1
            td = sub.add_node(
                OpDesc(
                    unique(f"trans_{peer.node.name}_{n.name}_{k}"),
                    "TransData",
                    {"src_format": have.format, "dst_format": want.format},
                    [have.copy()],
                    [want.copy()],
                )
            )
            sub.remove_data_edge(n, k)
            sub.add_data_edge(peer.node, peer.index, td, 0)
            sub.add_data_edge(td, 0, n, k)
    return inserted
