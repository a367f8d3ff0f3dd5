"""ONNX models in: ops mapped to GE op types and attributes, shapes from ONNX shape inference.

Initializers become Const nodes, graph inputs Data nodes, outputs one NetOutput; If/Loop bodies become
subgraphs owned by their node (values captured from the outer scope become explicit inputs of the owner, read
inside by Data nodes with `_parent_node_index`). An op with no mapping keeps its type, is placed on AI CPU and
is listed in a warning: import never fails on an unknown op.

Two format modes: `keep` leaves the model's formats (NCHW for 4-D tensors, ND otherwise); `ascend` assigns
storage formats as Ascend's AI Core engine would: 4-D activations of AI Core ops in NC1HWC0, convolution
weights in FRACTAL_Z, and a TransData wherever a producer's and a consumer's formats differ, so the 5HD rules
meet real graphs. The `onnx` package is an optional extra (`pip install 'rulepass[onnx]'`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.diagnostics import error
from . import formats, weights
from .ir import ComputeGraph, Node, OpDesc, TensorDesc

ONNX_DTYPES = {
    1: "float",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "double",
    12: "uint32",
    13: "uint64",
    16: "bfloat16",
}
# ONNX op type -> GE op type (attributes are translated per op below)
OP_MAP = {
    "Concat": "ConcatD",
    "Split": "SplitD",
    "Relu": "ReLU",
    "Conv": "Conv2D",
    "Gemm": "Gemm",
    "MatMul": "MatMulV2",
    "MaxPool": "MaxPool",
    "AveragePool": "AvgPool",
    "GlobalAveragePool": "GlobalAveragePool",
    "GlobalMaxPool": "GlobalMaxPool",
    "BatchNormalization": "BatchNorm",
    "Reshape": "Reshape",
    "Transpose": "TransposeD",
    "Add": "Add",
    "Mul": "Mul",
    "Sub": "Sub",
    "Div": "Div",
    "Sum": "AddN",
    "Softmax": "SoftmaxV2",
    "Sigmoid": "Sigmoid",
    "Tanh": "Tanh",
    "LRN": "LRN",
    "Dropout": "Dropout",
    "Flatten": "Flatten",
    "Unsqueeze": "Unsqueeze",
    "Squeeze": "Squeeze",
    "Identity": "Identity",
    "ConstantOfShape": "Fill",
    "Constant": "Const",
    "Cast": "Cast",
    "LeakyRelu": "LeakyRelu",
    "Clip": "ClipByValue",
    "ReduceMean": "ReduceMeanD",
    "ReduceSum": "ReduceSumD",
    "Pad": "PadD",
    "Shape": "Shape",
    "Gather": "GatherV2",
    "If": "If",
    "Loop": "While",
}
AI_CORE_5HD = frozenset(
    {
        "Conv2D",
        "ReLU",
        "MaxPool",
        "AvgPool",
        "BatchNorm",
        "LRN",
        "ConcatD",
        "Sigmoid",
        "Tanh",
        "LeakyRelu",
        "Add",
        "Mul",
        "Sub",
        "AddN",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "Dropout",
    }
)
_NAME_OK = re.compile(r"[^A-Za-z0-9_./\-]")


@dataclass
class ImportResult:
    """The imported graph, and what the importer wants the user to know."""

    graph: ComputeGraph
    warnings: list[str] = field(default_factory=list)
    unmapped: dict[str, int] = field(default_factory=dict)


def _need_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise error(
            "onnx-missing",
            "importing ONNX models needs the 'onnx' package",
            hint="install it with: pip install 'rulepass[onnx]'",
        ) from None
    return onnx


def _attr(onnx: Any, a: Any) -> Any:
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
    return v


class _Importer:
    def __init__(self, onnx: Any, mode: str, dims: Mapping[str, int]) -> None:
        self.onnx = onnx
        self.mode = mode
        self.dims = dims
        self.warnings: list[str] = []
        self.unmapped: dict[str, int] = {}
        self.info: dict[str, tuple[str, tuple[int, ...]]] = {}
        self.used_names: set[str] = set()
        self.read: set[str] = set()  # every tensor some node or graph output reads
        self.captures: dict[int, dict[str, int]] = {}  # owner node -> outer tensor -> its input index
        self.transdata = 0

    def unique(self, name: str) -> str:
        base = _NAME_OK.sub("_", name) or "node"
        out, k = base, 1
        while out in self.used_names:
            k += 1
            out = f"{base}_{k}"
        self.used_names.add(out)
        return out

    def value_info(self, g: Any) -> None:
        for vi in [*g.input, *g.output, *g.value_info]:
            t = vi.type.tensor_type
            if not t.elem_type:
                continue
            shape = tuple(
                d.dim_value if d.HasField("dim_value") else self.dims.get(d.dim_param, -1) for d in t.shape.dim
            )
            self.info[vi.name] = (ONNX_DTYPES.get(t.elem_type, "undefined"), shape)
        for init in g.initializer:
            self.info[init.name] = (ONNX_DTYPES.get(init.data_type, "undefined"), tuple(init.dims))

    def desc(self, tensor: str) -> TensorDesc:
        dtype, shape = self.info.get(tensor, ("float", (-2,)))
        fmt = "NCHW" if len(shape) == 4 else "ND"
        return TensorDesc(shape, dtype, fmt, shape, fmt)

    def graph(
        self,
        g: Any,
        name: str,
        parent: Node | None,
        outer: dict[str, tuple[Node, int]] | None,
        root: ComputeGraph | None,
    ) -> ComputeGraph:
        self.value_info(g)
        self.read.update(t for n in g.node for t in n.input)
        self.read.update(o.name for o in g.output)
        cg = ComputeGraph(name)
        if parent is not None:
            parent.graph.set_subgraph(parent, cg)
        produced: dict[str, tuple[Node, int]] = {}
        inits = {i.name for i in g.initializer}
        for k, init in enumerate(g.initializer):
            d = self.desc(init.name)
            attrs: dict[str, Any] = weights.onnx_tensor_attrs(self.onnx, init, f"initializer '{init.name}'")
            n = cg.add_node(OpDesc(self.unique(init.name), "Const", attrs, output_descs=[d]))
            produced[init.name] = (n, 0)
            del k
        data_index = 0
        for vi in g.input:
            if vi.name in inits:
                continue
            attrs = {"index": data_index}
            if parent is not None:
                attrs["_parent_node_index"] = data_index  # body inputs follow the owner's inputs, in order
            n = cg.add_node(OpDesc(self.unique(vi.name), "Data", attrs, output_descs=[self.desc(vi.name)]))
            produced[vi.name] = (n, 0)
            data_index += 1
        captured: list[str] = []
        for i, node in enumerate(g.node):
            self.node(cg, node, i, produced, outer, captured, parent)
        outs = [o.name for o in g.output]
        net = cg.add_node(
            OpDesc(
                self.unique("Node_Output" if parent is None else f"{name}_output"),
                "NetOutput",
                input_descs=[self.desc(o) for o in outs],
            )
        )
        for k, o in enumerate(outs):
            if parent is not None:
                net.op.input_descs[k].attrs["_parent_node_index"] = k
            self.connect(cg, net, k, o, produced, outer, captured, parent)
        return cg

    def source(
        self,
        cg: ComputeGraph,
        tensor: str,
        produced: dict[str, tuple[Node, int]],
        outer: dict[str, tuple[Node, int]] | None,
        captured: list[str],
        parent: Node | None,
    ) -> tuple[Node, int] | None:
        if tensor in produced:
            return produced[tensor]
        if outer is not None and tensor in outer and parent is not None:
            # an outer-scope value: an input of the owner (one per value, shared by its subgraphs), read here
            # by a Data node
            taken = self.captures.setdefault(id(parent), {})
            k = taken.get(tensor, -1)
            src, idx = outer[tensor]
            if k < 0:
                k = taken[tensor] = len(parent.in_peers)
                parent.op.input_descs.append(src.op.output_descs[idx].copy())
                parent.op.input_names.append(f"captured_{k}")
                parent.in_peers.append(None)
                parent.graph.add_data_edge(src, idx, parent, k)
            n = cg.add_node(
                OpDesc(
                    self.unique(f"{cg.name}_{tensor}"),
                    "Data",
                    {"_parent_node_index": k},
                    output_descs=[src.op.output_descs[idx].copy()],
                )
            )
            produced[tensor] = (n, 0)
            captured.append(tensor)
            return produced[tensor]
        return None

    def connect(
        self,
        cg: ComputeGraph,
        node: Node,
        k: int,
        tensor: str,
        produced: dict[str, tuple[Node, int]],
        outer: dict[str, tuple[Node, int]] | None,
        captured: list[str],
        parent: Node | None,
    ) -> None:
        if not tensor:
            return
        src = self.source(cg, tensor, produced, outer, captured, parent)
        if src is None:
            raise error("onnx", f"ONNX node '{node.name}' reads '{tensor}', which nothing produces", where=node.name)
        cg.add_data_edge(src[0], src[1], node, k)

    def node(
        self,
        cg: ComputeGraph,
        n: Any,
        i: int,
        produced: dict[str, tuple[Node, int]],
        outer: dict[str, tuple[Node, int]] | None,
        captured: list[str],
        parent: Node | None,
    ) -> None:
        onnx = self.onnx
        ge_type = OP_MAP.get(n.op_type)
        attrs: dict[str, Any] = {}
        graphs: list[tuple[str, Any]] = []
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                graphs.append((a.name, a.g))
            elif a.type == onnx.AttributeProto.TENSOR:
                arr = onnx.numpy_helper.to_array(a.t).reshape(-1)
                if arr.size <= 64:
                    attrs[a.name] = (
                        [float(x) for x in arr.tolist()] if arr.dtype.kind == "f" else [int(x) for x in arr.tolist()]
                    )
            elif a.type in (
                onnx.AttributeProto.INT,
                onnx.AttributeProto.FLOAT,
                onnx.AttributeProto.STRING,
                onnx.AttributeProto.INTS,
                onnx.AttributeProto.FLOATS,
                onnx.AttributeProto.STRINGS,
            ):
                attrs[a.name] = _attr(onnx, a)
        if n.op_type == "Constant":  # its data as every Const carries it (see compiler/weights.py)
            attrs = weights.onnx_constant_attrs(onnx, n)
        engine = kernel = ""
        if ge_type is None:
            ge_type = n.op_type
            self.unmapped[n.op_type] = self.unmapped.get(n.op_type, 0) + 1
            attrs["_onnx_unmapped"] = True
            engine, kernel = "DNN_VM_AICPU_ASCEND", "aicpu_ascend_kernel"
        outputs = list(n.output)
        # optional outputs nothing reads and ONNX left without a shape (e.g. Dropout's mask) are dropped
        while len(outputs) > 1 and (not outputs[-1] or (outputs[-1] not in self.read and outputs[-1] not in self.info)):
            outputs.pop()
        attrs = self.translate(n.op_type, ge_type, attrs, list(n.input), outputs)
        if n.op_type == "Split":
            sizes = attrs.get("size_splits")
            ge_type = "SplitD" if not sizes or len(set(sizes)) == 1 else "SplitVD"
        op = OpDesc(
            self.unique(n.name or f"{n.op_type}_{i}"),
            ge_type,
            attrs,
            input_descs=[
                self.desc(t) if t else TensorDesc((), "undefined", "RESERVED", (), "RESERVED") for t in n.input
            ],
            output_descs=[self.desc(o) for o in outputs],
            engine=engine,
            kernel_lib=kernel,
        )
        node = cg.add_node(op)
        for k, t in enumerate(n.input):
            self.connect(cg, node, k, t, produced, outer, captured, parent)
        scope = {**(outer or {}), **produced}
        for k, o in enumerate(outputs):
            if o:
                produced[o] = (node, k)
        for attr_name, body in graphs:
            self.graph(body, self.unique(f"{op.name}_{attr_name}"), node, scope, None)

    def translate(
        self, onnx_type: str, ge_type: str, a: dict[str, Any], inputs: list[str], outputs: list[str]
    ) -> dict[str, Any]:
        out = dict(a)
        if onnx_type == "Concat":
            out["concat_dim"] = out.pop("axis", 0)
            out["N"] = len(inputs)
        elif onnx_type == "Split":
            out["split_dim"] = out.pop("axis", 0)
            out["num_split"] = len(outputs)
            if "split" in out:
                out["size_splits"] = out.pop("split")
        elif onnx_type in ("Conv", "MaxPool", "AveragePool"):
            strides = out.pop("strides", [1, 1])
            pads = out.pop("pads", [0, 0, 0, 0])
            out["strides"] = [1, 1, *strides]
            out["pads"] = [pads[0], pads[2], pads[1], pads[3]] if len(pads) == 4 else pads  # ONNX tlbr -> GE tblr
            out["data_format"] = "NCHW"
            if onnx_type == "Conv":
                out["dilations"] = [1, 1, *out.pop("dilations", [1, 1])]
                out["groups"] = out.pop("group", 1)
                out.pop("kernel_shape", None)
            else:
                out["ksize"] = [1, 1, *out.pop("kernel_shape", [1, 1])]
        elif onnx_type == "Softmax":
            out["axes"] = [out.pop("axis", -1)]
        elif onnx_type == "Transpose":
            pass  # keeps `perm`
        elif onnx_type == "Sum":
            out["N"] = len(inputs)
        return out


def _assign_ascend_formats(g: ComputeGraph, imp: _Importer) -> None:
    """Storage formats as AI Core places them, with TransData where producer and consumer disagree."""
    for sub in [g, *g.all_subgraphs()]:
        nodes = list(sub.topological_order())
        fivehd: set[int] = set()
        for n in nodes:
            ins = [d for d in n.op.input_descs if d.is_valid]
            outs = n.op.output_descs
            if n.op.type not in AI_CORE_5HD or not outs or any(len(d.origin_shape) != 4 for d in outs):
                continue
            data_ins = ins[:1] if n.op.type == "Conv2D" else ins
            if n.op.type in ("Add", "Mul", "Sub", "AddN") and any(
                d.origin_shape != outs[0].origin_shape for d in data_ins
            ):
                continue  # broadcasting elementwise stays in NCHW
            fivehd.add(id(n))
            for d in outs:
                _to_format(d, "NC1HWC0")
            for k, d in enumerate(n.op.input_descs):
                if not d.is_valid:
                    continue
                if n.op.type == "Conv2D" and k == 1:
                    _to_format(d, "FRACTAL_Z")
                elif n.op.type != "Conv2D" or k == 0:
                    _to_format(d, "NC1HWC0")
            if n.op.type == "Conv2D" and len(n.in_peers) > 1 and n.in_peers[1] is not None:
                w = n.in_peers[1]
                if w.node.op.type == "Const" and len(w.node.out_peers[w.index]) == 1:
                    _to_format(w.desc, "FRACTAL_Z")
        # a TransData wherever a consumer's input format differs from its producer's output format
        for n in nodes:
            for k, peer in enumerate(list(n.in_peers)):
                if peer is None:
                    continue
                want = n.op.input_descs[k]
                have = peer.desc
                if want.format == have.format or not want.is_valid:
                    continue
                imp.transdata += 1
                td = sub.add_node(
                    OpDesc(
                        imp.unique(f"trans_{peer.node.name}_{n.name}_{k}"),
                        "TransData",
                        {"src_format": have.format, "dst_format": want.format},
                        [have.copy()],
                        [want.copy()],
                    )
                )
                sub.remove_data_edge(n, k)
                sub.add_data_edge(peer.node, peer.index, td, 0)
                sub.add_data_edge(td, 0, n, k)


def _to_format(d: TensorDesc, fmt: str) -> None:
    shape = formats.transfer_shape(d.origin_format, fmt, d.origin_shape, d.dtype)
    if shape is not None:
        d.format = fmt
        d.shape = shape


def import_onnx(path: str | Path, *, format_mode: str = "keep", dims: Mapping[str, int] | None = None) -> ImportResult:
    """Import an ONNX model file as a ComputeGraph (`format_mode` 'keep' or 'ascend'; `dims` for symbolic dims)."""
    if format_mode not in ("keep", "ascend"):
        raise error("usage", f"unknown format mode '{format_mode}'; expected 'keep' or 'ascend'")
    onnx = _need_onnx()
    p = Path(path)
    try:
        model = onnx.load(str(p))
    except FileNotFoundError:
        raise error("io", f"ONNX model '{p}' does not exist", where=str(p)) from None
    except Exception as exc:
        raise error("onnx", f"'{p}' is not a readable ONNX model: {type(exc).__name__}: {exc}", where=str(p)) from None
    dim_values = dict(dims or {})
    g = model.graph
    for vi in g.input:  # symbolic input dims take sizes from the option (1 by default)
        for d in vi.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                value = dim_values.get(d.dim_param, 1)
                d.Clear()
                d.dim_value = value
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception as exc:
        raise error("onnx", f"ONNX shape inference failed for '{p}': {exc}", where=str(p)) from None
    imp = _Importer(onnx, format_mode, dim_values)
    graph = imp.graph(model.graph, _NAME_OK.sub("_", model.graph.name or p.stem) or p.stem, None, None, None)
    unknown = [n.name for n in graph.all_nodes() for d in n.op.output_descs if formats.is_unknown_shape(d.shape)]
    if unknown:
        imp.warnings.append(
            f"{len(unknown)} output(s) have unknown shapes after ONNX shape inference "
            f"(first: {unknown[0]}); memory cannot be planned for them"
        )
    if format_mode == "ascend":
        _assign_ascend_formats(graph, imp)
    if imp.unmapped:
        listed = ", ".join(f"{t} x{c}" for t, c in sorted(imp.unmapped.items()))
        imp.warnings.append(f"ops with no GE mapping kept their type and were placed on AI CPU: {listed}")
    return ImportResult(graph, imp.warnings, imp.unmapped)
