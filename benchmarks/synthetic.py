"""Synthetic graphs shaped like real workloads, at any size, built straight into the IR.

Three shapes, each a repeated block, so a graph of N nodes is N / (block size) blocks chained one after the other:

* ``llm`` — a tensor-parallel transformer training layer (tp = 2): LayerNorm, Q/K/V projections whose shards are
  gathered with ``HcomAllGather`` and concatenated on axis 0 (zero-copy: the AllGather + Concat scenario),
  attention, output projection with ``HcomReduceScatter``, residual add, a fused gate/up projection concatenated
  on axis 1 (not zero-copy: the rows are not leading 1s), SwiGLU, down projection with ``HcomAllReduce``.
  32 nodes a layer, 11 of them weights.
* ``split`` — split -> compute -> concat pipelines: ``SplitD`` in 4 along axis 0, ReLU / Sigmoid / Mul on each
  part, ``ConcatD`` back along axis 0 (zero-copy split and concat), then a Gelu; every fourth block
  concatenates on axis 1 instead (a miss) and reshapes back. 15 nodes a block (16 every fourth).
* ``cnn`` — Inception-style CNN blocks in 5HD: NCHW feature maps stored as NC1HWC0, four convolution branches
  (1x1; 1x1-3x3; 1x1-3x3-3x3; pool-1x1) concatenated on the channel axis (zero-copy when every branch's
  channel count is a multiple of C0 = 16; every fifth block has a 24-channel pool branch and misses
  CheckDimAlignment). Weights are FRACTAL_Z constants. 16 nodes a block.

Engines and kernel libraries are left empty, so the engine-placement rule places every node, as in a real
compile. Every graph starts with a Data node and ends with a NetOutput; weights are added first, so they come
first in topological order (as the ONNX importer's initializers do).
"""

from __future__ import annotations

from collections.abc import Callable

from rulepass.compiler import formats
from rulepass.compiler.ir import ComputeGraph, Node, OpDesc, TensorDesc

WORKLOADS = ("llm", "split", "cnn")
F16 = "float16"


def nd(*shape: int) -> TensorDesc:
    """An ND fp16 desc."""
    return TensorDesc(tuple(shape), F16, "ND", tuple(shape), "ND")


def nc1hwc0(n: int, c: int, h: int, w: int) -> TensorDesc:
    """An NCHW feature map stored as NC1HWC0."""
    storage = formats.transfer_shape("NCHW", "NC1HWC0", (n, c, h, w), F16)
    assert storage is not None
    return TensorDesc(storage, F16, "NC1HWC0", (n, c, h, w), "NCHW")


def fractal_z(cout: int, cin: int, k: int) -> TensorDesc:
    """A convolution weight [cout, cin, k, k] stored as FRACTAL_Z."""
    storage = formats.transfer_shape("NCHW", "FRACTAL_Z", (cout, cin, k, k), F16)
    assert storage is not None
    return TensorDesc(storage, F16, "FRACTAL_Z", (cout, cin, k, k), "NCHW")


class _Builder:
    def __init__(self, name: str) -> None:
        self.g = ComputeGraph(name)

    def op(
        self,
        name: str,
        type_: str,
        inputs: list[tuple[Node, int]],
        outputs: list[TensorDesc],
        attrs: dict[str, object] | None = None,
    ) -> Node:
        node = self.g.add_node(
            OpDesc(
                name,
                type_,
                dict(attrs or {}),  # type: ignore[arg-type]
                [src.op.output_descs[k].copy() for src, k in inputs],
                outputs,
            )
        )
        for i, (src, k) in enumerate(inputs):
            self.g.add_data_edge(src, k, node, i)
        return node

    def const(self, name: str, desc: TensorDesc) -> Node:
        return self.op(name, "Const", [], [desc])


# ---- llm ------------------------------------------------------------------------------------------------------
LLM_S, LLM_H, LLM_TP = 1024, 4096, 2


def _llm_layer(b: _Builder, x: Node, i: int) -> Node:
    s, h, tp = LLM_S, LLM_H, LLM_TP
    p = f"l{i}_"
    g1, b1 = b.const(p + "ln1_gamma", nd(h)), b.const(p + "ln1_beta", nd(h))
    ln1 = b.op(p + "ln1", "LayerNorm", [(x, 0), (g1, 0), (b1, 0)], [nd(s, h)])
    gathered = []
    for part in ("q", "k", "v"):
        w = b.const(f"{p}w_{part}", nd(h, h // tp))
        mm = b.op(f"{p}{part}", "MatMulV2", [(ln1, 0), (w, 0)], [nd(s, h // tp)])
        ag = b.op(
            f"{p}allgather_{part}",
            "HcomAllGather",
            [(mm, 0)],
            [nd(tp * s, h // tp)],
            {"rank_size": tp, "group": "tp_group"},
        )
        gathered.append((ag, 0))
    qkv = b.op(p + "qkv", "ConcatD", gathered, [nd(3 * tp * s, h // tp)], {"concat_dim": 0, "N": 3})
    attn = b.op(p + "attn", "FlashAttentionScore", [(qkv, 0)], [nd(tp * s, h // tp)])
    wo = b.const(p + "w_o", nd(h // tp, h))
    o = b.op(p + "o", "MatMulV2", [(attn, 0), (wo, 0)], [nd(tp * s, h)])
    rs = b.op(p + "reducescatter", "HcomReduceScatter", [(o, 0)], [nd(s, h)], {"rank_size": tp, "group": "tp_group"})
    res1 = b.op(p + "res1", "Add", [(x, 0), (rs, 0)], [nd(s, h)])
    g2, b2 = b.const(p + "ln2_gamma", nd(h)), b.const(p + "ln2_beta", nd(h))
    ln2 = b.op(p + "ln2", "LayerNorm", [(res1, 0), (g2, 0), (b2, 0)], [nd(s, h)])
    w_up, w_gate = b.const(p + "w_up", nd(h, 4 * h // tp)), b.const(p + "w_gate", nd(h, 4 * h // tp))
    up = b.op(p + "up", "MatMulV2", [(ln2, 0), (w_up, 0)], [nd(s, 4 * h // tp)])
    gate = b.op(p + "gate", "MatMulV2", [(ln2, 0), (w_gate, 0)], [nd(s, 4 * h // tp)])
    gu = b.op(p + "gate_up", "ConcatD", [(gate, 0), (up, 0)], [nd(s, 8 * h // tp)], {"concat_dim": 1, "N": 2})
    act = b.op(p + "swiglu", "SwiGlu", [(gu, 0)], [nd(s, 4 * h // tp)])
    w_down = b.const(p + "w_down", nd(4 * h // tp, h))
    down = b.op(p + "down", "MatMulV2", [(act, 0), (w_down, 0)], [nd(s, h)])
    ar = b.op(p + "allreduce", "HcomAllReduce", [(down, 0)], [nd(s, h)], {"reduction": "sum", "group": "tp_group"})
    return b.op(p + "res2", "Add", [(res1, 0), (ar, 0)], [nd(s, h)])


def llm(nodes: int) -> ComputeGraph:
    """Transformer layers (32 nodes each) up to about `nodes` nodes."""
    b = _Builder(f"llm_{nodes}")
    x = b.op("tokens", "Data", [], [nd(LLM_S, LLM_H)], {"index": 0})
    for i in range(max(1, (nodes - 2) // 32)):
        x = _llm_layer(b, x, i)
    b.op("Node_Output", "NetOutput", [(x, 0)], [])
    return b.g


# ---- split -> compute -> concat -------------------------------------------------------------------------------
SPLIT_PARTS, SPLIT_ROWS, SPLIT_COLS = 4, 64, 1024


def _split_block(b: _Builder, x: Node, i: int) -> Node:
    p = f"b{i}_"
    rows = SPLIT_ROWS // SPLIT_PARTS
    sp = b.op(
        p + "split",
        "SplitD",
        [(x, 0)],
        [nd(rows, SPLIT_COLS) for _ in range(SPLIT_PARTS)],
        {"split_dim": 0, "num_split": SPLIT_PARTS},
    )
    parts = []
    for k in range(SPLIT_PARTS):
        r = b.op(f"{p}relu{k}", "ReLU", [(sp, k)], [nd(rows, SPLIT_COLS)])
        s = b.op(f"{p}sigmoid{k}", "Sigmoid", [(r, 0)], [nd(rows, SPLIT_COLS)])
        parts.append((b.op(f"{p}mul{k}", "Mul", [(r, 0), (s, 0)], [nd(rows, SPLIT_COLS)]), 0))
    if i % 4 == 3:  # concatenating the columns back: rows are not leading 1s -> CheckRealDim miss
        cat = b.op(
            p + "concat",
            "ConcatD",
            parts,
            [nd(rows, SPLIT_PARTS * SPLIT_COLS)],
            {"concat_dim": 1, "N": SPLIT_PARTS},
        )
        cat = b.op(p + "fold", "Reshape", [(cat, 0)], [nd(SPLIT_ROWS, SPLIT_COLS)])
    else:
        cat = b.op(p + "concat", "ConcatD", parts, [nd(SPLIT_ROWS, SPLIT_COLS)], {"concat_dim": 0, "N": SPLIT_PARTS})
    # a compute op between the concat and the next split: a split consumer that is already virtual would make
    # the concat miss OutputCheck (the split pass runs first)
    return b.op(p + "gelu", "Gelu", [(cat, 0)], [nd(SPLIT_ROWS, SPLIT_COLS)])


def split(nodes: int) -> ComputeGraph:
    """Split -> compute -> concat -> Gelu blocks (15 nodes each, 16 every fourth) up to about `nodes` nodes."""
    b = _Builder(f"split_{nodes}")
    x = b.op("input", "Data", [], [nd(SPLIT_ROWS, SPLIT_COLS)], {"index": 0})
    for i in range(max(1, (nodes - 2) * 4 // 61)):
        x = _split_block(b, x, i)
    b.op("Node_Output", "NetOutput", [(x, 0)], [])
    return b.g


# ---- CNN (5HD) -------------------------------------------------------------------------------------------------
CNN_C, CNN_HW = 256, 28


def _cnn_block(b: _Builder, x: Node, i: int) -> Node:
    p = f"m{i}_"
    c_in, hw = CNN_C, CNN_HW
    pool_c = 24 if i % 5 == 4 else 32  # a 24-channel branch is padded in C0: CheckDimAlignment miss
    rest = CNN_C - 64 - 96 - pool_c

    def conv(name: str, src: Node, cin: int, cout: int, k: int) -> Node:
        w = b.const(p + name + "_w", fractal_z(cout, cin, k))
        attrs = {"strides": [1, 1, 1, 1], "pads": [k // 2] * 4, "dilations": [1, 1, 1, 1], "groups": 1}
        return b.op(
            p + name, "Conv2D", [(src, 0), (w, 0)], [nc1hwc0(1, cout, hw, hw)], {**attrs, "data_format": "NCHW"}
        )

    b1 = conv("b1", x, c_in, 64, 1)
    b2 = conv("b2b", conv("b2a", x, c_in, 48, 1), 48, 96, 3)
    b3 = conv("b3c", conv("b3b", conv("b3a", x, c_in, 64, 1), 64, 96, 3), 96, rest, 3)
    pool = b.op(p + "pool", "AvgPool", [(x, 0)], [nc1hwc0(1, c_in, hw, hw)], {"ksize": [1, 1, 3, 3]})
    b4 = conv("b4", pool, c_in, pool_c, 1)
    return b.op(
        p + "concat",
        "ConcatD",
        [(b1, 0), (b2, 0), (b3, 0), (b4, 0)],
        [nc1hwc0(1, CNN_C, hw, hw)],
        {"concat_dim": 1, "N": 4},
    )


def cnn(nodes: int) -> ComputeGraph:
    """Inception-style 5HD blocks (16 nodes each) up to about `nodes` nodes."""
    b = _Builder(f"cnn_{nodes}")
    image = b.op(
        "image",
        "Data",
        [],
        [TensorDesc((1, CNN_C, CNN_HW, CNN_HW), F16, "NCHW", (1, CNN_C, CNN_HW, CNN_HW), "NCHW")],
        {"index": 0},
    )
    x = b.op(
        "to_5hd",
        "TransData",
        [(image, 0)],
        [nc1hwc0(1, CNN_C, CNN_HW, CNN_HW)],
        {"src_format": "NCHW", "dst_format": "NC1HWC0"},
    )
    for i in range(max(1, (nodes - 4) // 16)):
        x = _cnn_block(b, x, i)
    out = b.op(
        "from_5hd",
        "TransData",
        [(x, 0)],
        [TensorDesc((1, CNN_C, CNN_HW, CNN_HW), F16, "NCHW", (1, CNN_C, CNN_HW, CNN_HW), "NCHW")],
        {"src_format": "NC1HWC0", "dst_format": "NCHW"},
    )
    b.op("Node_Output", "NetOutput", [(out, 0)], [])
    return b.g


GENERATORS: dict[str, Callable[[int], ComputeGraph]] = {"llm": llm, "split": split, "cnn": cnn}
WEIGHT_TYPES = frozenset({"Const", "Constant", "Variable"})


def weights_first(g: ComputeGraph) -> ComputeGraph:
    """The same graph with its weights added first, so they come first in topological order (as ONNX import does).

    With weights interleaved (the order the generators build them in), every weight sits on stream 0 between the
    compute nodes of other streams, and the memory planner's lifetimes stretch to the last weight (see
    docs/benchmarks.md, "Findings"); `generate(..., weights="inline")` keeps that order to reproduce it.
    """
    out = ComputeGraph(g.name, attrs=dict(g.attrs), unknown_shape=g.unknown_shape)
    nodes = list(g.nodes_in_insertion_order())
    order = [n for n in nodes if n.op.type in WEIGHT_TYPES] + [n for n in nodes if n.op.type not in WEIGHT_TYPES]
    new: dict[int, Node] = {}
    for n in order:
        new[id(n)] = out.add_node(n.op)  # the op descs move over: `g` is not used afterwards
    for n in nodes:
        for k, peer in enumerate(n.in_peers):
            if peer is not None:
                out.add_data_edge(new[id(peer.node)], peer.index, new[id(n)], k)
    return out


def generate(workload: str, nodes: int, *, weights: str = "first") -> ComputeGraph:
    """A `workload` graph of about `nodes` nodes; weights `first` in topological order, or `inline`."""
    g = GENERATORS[workload](nodes)
    return weights_first(g) if weights == "first" else g
