"""ONNX models in: ops mapped to GE op types and attributes, shapes made static as Ascend's ATC makes them.

The steps, in order:
1. `onnx_load.load_model`: the file is read safely (a bad file is one clear error, no read outside its folder).
2. `onnx_fold`: input shapes from `--input-shape`/`--dim`, ONNX shape inference with data propagation, and
   constant folding of shape math and every other constant subgraph with the `onnx` reference evaluator, to a
   fixed point; a shape still unknown after that is an error naming the tensor (or input) and the flag to use.
3. Here: initializers (folded values included) become Const nodes, graph inputs Data nodes, outputs one
   NetOutput; each node gets its GE op type from OP_MAP (the names GE's ONNX parser plugins register) and
   keeps its ONNX identity in `_onnx_op_type`, `_onnx_domain` and `_onnx_attrs` (the ONNX attributes as
   JSON-able data: tensors as {"dtype", "dims", "values"} up to FOLD_LIMIT elements, a graph as {"graph":
   the subgraph's name}, non-finite floats as "inf"/"-inf"/"nan"), and the root graph the model's opsets in
   `_onnx_opsets`, so the runtime can run any op with ONNX's semantics. If/Loop bodies become subgraphs owned
   by their node (values captured from the outer scope become explicit inputs of the owner, read inside by
   Data nodes with `_parent_node_index`). An op with no mapping
   keeps its type, is placed on AI CPU and is listed in a warning: import never fails on an unknown op.
4. Formats: `keep` leaves the model's formats (NCHW for 4-D tensors, ND otherwise); `ascend` assigns them as GE
   does (see `onnx_formats`). The `onnx` package is an optional extra (`pip install 'rulepass[onnx]'`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.diagnostics import error
from . import formats, weights
from .ir import ComputeGraph, Node, OpDesc, TensorDesc
from .onnx_fold import FOLD_LIMIT, set_input_shapes, static_shapes, tensor_reads
from .onnx_formats import assign_ascend_formats
from .onnx_load import load_model

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
# ONNX op type -> GE op type, as GE's ONNX parser plugins register them (REGISTER_CUSTOM_OP(...).OriginOpType(
# "ai.onnx::N::Op")); a `D` suffix is GE's form with the constant inputs as attributes. Attributes are translated
# per op in `_Importer.translate`; a few ops depend on the opset or on attributes (see `_ge_type`).
OP_MAP = {
    "Concat": "ConcatD",
    "Split": "SplitD",  # SplitVD when the parts differ (GE: SplitV with a size_splits Const)
    "Relu": "Relu",
    "Conv": "Conv2D",
    "Gemm": "MatMulV2",  # GE's plugin maps transA/transB to transpose_x1/x2 (alpha = beta = 1 only)
    "MatMul": "BatchMatMulV2",
    "MaxPool": "MaxPool",
    "AveragePool": "AvgPoolV2",
    "GlobalAveragePool": "GlobalAveragePool",
    "GlobalMaxPool": "GlobalMaxPool",
    "BatchNormalization": "BatchNorm",
    "Reshape": "Reshape",
    "Transpose": "TransposeD",
    "Add": "Add",
    "Mul": "Mul",
    "Sub": "Sub",
    "Div": "Div",
    "Sum": "AccumulateNV2",
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
    "Pad": "PadV3",  # opset 11+ (pads as an input); PadD before
    "Slice": "StridedSliceV2",  # opset 10+ (bounds as inputs)
    "Resize": "Resize",
    "HardSigmoid": "HardSigmoid",
    "HardSwish": "HardSwish",
    "ConvTranspose": "Conv2DTransposeD",
    "LogSoftmax": "LogSoftmaxV2",
    "Shape": "Shape",
    "Gather": "GatherV2D",
    "If": "If",
    "Loop": "While",
}
SMALL_VALUE = 64  # elements of an initializer kept in its Const's `value` (larger ones: seeded placeholders)
_PLAIN_ATTRS = frozenset({1, 2, 3, 6, 7, 8})  # AttributeProto FLOAT, INT, STRING, FLOATS, INTS, STRINGS
_GRAPH_ATTRS = frozenset({5, 10})  # GRAPH, GRAPHS: imported as subgraphs
_NAME_OK = re.compile(r"[^A-Za-z0-9_./\-]")


@dataclass
class ImportResult:
    """The imported graph, and what the importer wants the user to know."""

    graph: ComputeGraph
    warnings: list[str] = field(default_factory=list)
    unmapped: dict[str, int] = field(default_factory=dict)


def need_onnx(what: str = "importing ONNX models") -> Any:
    """The `onnx` module, or one clear error saying `what` needs it and how to install it."""
    try:
        import onnx
    except ImportError:
        raise error(
            "onnx-missing",
            f"{what} needs the 'onnx' package",
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
    def __init__(self, onnx: Any, mode: str, opsets: Mapping[str, int], folded: set[str], weights: str) -> None:
        self.onnx = onnx
        self.mode = mode
        self.weights = weights
        self.opsets = opsets
        self.folded = folded  # initializers made by constant folding: their values are kept whole
        self.warnings: list[str] = []
        self.unmapped: dict[str, int] = {}
        self.info: dict[str, tuple[str, tuple[int, ...]]] = {}
        self.used_names: set[str] = set()
        self.read: set[str] = set()  # every tensor some node or graph output reads
        self.captures: dict[int, dict[str, int]] = {}  # owner node -> outer tensor -> its input index
        # graph -> what `source` resolves names in: (produced, outer scope, captured names, owner node)
        self.scopes: dict[
            int, tuple[dict[str, tuple[Node, int]], dict[str, tuple[Node, int]] | None, list[str], Node | None]
        ] = {}
        self.consts: dict[str, Any] = {}  # initializer name -> TensorProto (Split sizes are read from here)

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
            shape = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim)
            if not t.HasField("shape"):
                shape = (-2,)  # unknown rank
            old = self.info.get(vi.name)
            if old is None or sum(x < 0 for x in shape) < sum(x < 0 for x in old[1]):
                self.info[vi.name] = (ONNX_DTYPES.get(t.elem_type, "undefined"), shape)
        for init in g.initializer:
            self.info[init.name] = (ONNX_DTYPES.get(init.data_type, "undefined"), tuple(init.dims))
            self.consts[init.name] = init

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
        self.read |= tensor_reads(g)
        cg = ComputeGraph(name)
        if parent is not None:
            parent.graph.set_subgraph(parent, cg)
        produced: dict[str, tuple[Node, int]] = {}
        inits = {i.name for i in g.initializer}
        needed = _const_reads(g)
        for init in g.initializer:
            if init.name not in needed:
                continue  # never read, or only as the sizes of a Split (an attribute of GE's SplitD/SplitVD)
            d = self.desc(init.name)
            attrs: dict[str, Any] = self.const_attrs(init)
            n = cg.add_node(OpDesc(self.unique(init.name), "Const", attrs, output_descs=[d]))
            produced[init.name] = (n, 0)
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
        self.scopes[id(cg)] = (produced, outer, captured, parent)  # a nested subgraph may capture through it
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

    def const_attrs(self, init: Any) -> dict[str, Any]:
        """A Const's data attributes for an initializer (see compiler/weights.py): every initializer's data with
        weights='inline' (the default); with 'placeholder' only folded values and those of at most SMALL_VALUE
        elements, the others left for `run` to seed."""
        count = math.prod(init.dims)
        limit = FOLD_LIMIT if init.name in self.folded else SMALL_VALUE
        if self.weights != "inline" and not 0 < count <= limit:
            return {}
        return weights.onnx_tensor_attrs(self.onnx, init, f"initializer '{init.name}'")

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
            if src.graph is not parent.graph:  # from further out: the owner's own graph captures it first
                through = self.source(parent.graph, tensor, *self.scopes[id(parent.graph)])
                assert through is not None  # the owner's scope holds every name its subgraph's scope does
                src, idx = through
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
        attrs: dict[str, Any] = {}
        graphs: list[tuple[str, Any]] = []
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                graphs.append((a.name, a.g))
            elif a.type == onnx.AttributeProto.TENSOR:
                arr = onnx.numpy_helper.to_array(a.t).reshape(-1)
                if arr.size <= 64 and arr.dtype.kind in "biuf":
                    attrs[a.name] = (
                        [float(x) for x in arr.tolist()] if arr.dtype.kind == "f" else [int(x) for x in arr.tolist()]
                    )
            elif a.type in _PLAIN_ATTRS:
                attrs[a.name] = _attr(onnx, a)
        if n.op_type == "Constant":  # one folding left alone (e.g. a sparse value): its data as a Const carries it
            attrs = weights.onnx_constant_attrs(onnx, n)
        outputs = list(n.output)
        # optional outputs nothing reads and ONNX left without a shape (e.g. Dropout's mask) are dropped
        while len(outputs) > 1 and (not outputs[-1] or (outputs[-1] not in self.read and outputs[-1] not in self.info)):
            outputs.pop()
        inputs = list(n.input)
        ge_type, engine, kernel = self.ge_type(n, attrs)
        attrs = self.translate(n.op_type, attrs, inputs, outputs)
        if n.op_type == "Split":
            ge_type, inputs = self.split(n, attrs, inputs, outputs)
        attrs.update(self.identity(n))
        op = OpDesc(
            self.unique(n.name or f"{n.op_type}_{i}"),
            ge_type,
            attrs,
            input_descs=[
                self.desc(t) if t else TensorDesc((), "undefined", "RESERVED", (), "RESERVED") for t in inputs
            ],
            output_descs=[self.desc(o) for o in outputs],
            engine=engine,
            kernel_lib=kernel,
        )
        node = cg.add_node(op)
        for k, t in enumerate(inputs):
            self.connect(cg, node, k, t, produced, outer, captured, parent)
        scope = {**(outer or {}), **produced}
        for k, o in enumerate(outputs):
            if o:
                produced[o] = (node, k)
        for attr_name, body in graphs:
            sub = self.graph(body, self.unique(f"{op.name}_{attr_name}"), node, scope, None)
            recorded = op.attrs["_onnx_attrs"]
            assert isinstance(recorded, dict)
            recorded[attr_name] = {"graph": sub.name}  # the runtime runs a branch or body by this name

    def opset(self, domain: str) -> int:
        return self.opsets.get(domain or "", self.opsets.get("ai.onnx", 0) if not domain else 0)

    def ge_type(self, n: Any, attrs: dict[str, Any]) -> tuple[str, str, str]:
        """The GE op type, engine and kernel library of an ONNX node (an unmapped op: its own type, AI CPU)."""
        ge_type = OP_MAP.get(n.op_type) if n.domain in ("", "ai.onnx") else None
        version = self.opset(n.domain)
        if n.op_type == "Gemm" and (attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0):
            ge_type = "Gemm"  # scaled: GE's parser builds a subgraph around MatMulV2; kept as one op here
        elif n.op_type == "Pad" and version < 11:
            ge_type = "PadD"
        elif n.op_type == "Slice" and version < 10:
            ge_type = "StridedSliceD"
        if ge_type is not None:
            return ge_type, "", ""
        self.unmapped[n.op_type] = self.unmapped.get(n.op_type, 0) + 1
        attrs["_onnx_unmapped"] = True
        return n.op_type, "DNN_VM_AICPU_ASCEND", "aicpu_ascend_kernel"

    def identity(self, n: Any) -> dict[str, Any]:
        """The node's ONNX op type, domain and attributes (JSON-able data; a graph attribute is added as
        {"graph": subgraph name} once the subgraph exists), for the runtime to run it as ONNX; the opsets are
        the root graph's `_onnx_opsets`."""
        return {
            "_onnx_op_type": n.op_type,
            "_onnx_domain": n.domain or "",
            "_onnx_attrs": {a.name: _json_attr(self.onnx, a) for a in n.attribute if a.type not in _GRAPH_ATTRS},
        }

    def split(self, n: Any, attrs: dict[str, Any], inputs: list[str], outputs: list[str]) -> tuple[str, list[str]]:
        """SplitD for equal parts, SplitVD with `size_splits` for unequal ones; sizes given as an input (opset
        13+) become the attribute, as GE's D form takes them, and the input goes."""
        sizes = attrs.get("size_splits")
        if len(inputs) > 1 and inputs[1] and inputs[1] in self.consts:
            sizes = [int(x) for x in self.onnx.numpy_helper.to_array(self.consts[inputs[1]]).reshape(-1).tolist()]
        if sizes is None:  # from the parts' shapes (opset 18 num_outputs may leave a shorter last part)
            shape = self.info.get(inputs[0], ("", (-2,)))[1]
            axis = attrs["split_dim"] + len(shape) if attrs["split_dim"] < 0 else attrs["split_dim"]
            parts = [self.info.get(o, ("", (-2,)))[1] for o in outputs]
            if all(0 <= axis < len(p) and p[axis] >= 0 for p in parts):
                sizes = [p[axis] for p in parts]
        if len(inputs) > 1 and (inputs[1] in self.consts or not inputs[1]):
            inputs = inputs[:1]
        attrs.pop("num_outputs", None)
        if sizes is not None and len(set(sizes)) > 1:
            attrs["size_splits"] = sizes
            return "SplitVD", inputs
        attrs.pop("size_splits", None)
        return "SplitD", inputs

    def translate(self, onnx_type: str, a: dict[str, Any], inputs: list[str], outputs: list[str]) -> dict[str, Any]:
        """GE's attributes for an ONNX op's attributes (as GE's ONNX parser plugins set them)."""
        out = dict(a)
        if onnx_type == "Concat":
            out["concat_dim"] = out.pop("axis", 0)
            out["N"] = len(inputs)
        elif onnx_type == "Split":
            out["split_dim"] = out.pop("axis", 0)
            out["num_split"] = len(outputs)
            if "split" in out:
                out["size_splits"] = out.pop("split")
        elif onnx_type in ("Conv", "ConvTranspose", "MaxPool", "AveragePool"):
            strides = out.pop("strides", [1, 1])
            pads = out.pop("pads", [0, 0, 0, 0])
            out["strides"] = [1, 1, *strides]
            out["pads"] = [pads[0], pads[2], pads[1], pads[3]] if len(pads) == 4 else pads  # ONNX tlbr -> GE tblr
            out["data_format"] = "NCHW"
            if onnx_type in ("Conv", "ConvTranspose"):
                out["dilations"] = [1, 1, *out.pop("dilations", [1, 1])]
                out["groups"] = out.pop("group", 1)
                out.pop("kernel_shape", None)
            else:
                out["ksize"] = [1, 1, *out.pop("kernel_shape", [1, 1])]
            if onnx_type == "AveragePool":
                out["exclusive"] = not out.pop("count_include_pad", 0)
        elif onnx_type in ("Softmax", "LogSoftmax"):
            out["axes"] = [out.pop("axis", -1 if self.opset("") >= 13 else 1)]
        elif onnx_type == "Gemm":
            out["transpose_x1"] = bool(out.pop("transA", 0))
            out["transpose_x2"] = bool(out.pop("transB", 0))
        elif onnx_type == "MatMul":
            out["adj_x1"] = out["adj_x2"] = False
        elif onnx_type == "Pad":
            out["paddings_contiguous"] = False  # ONNX lists all begins, then all ends
        elif onnx_type == "Sum":
            out["N"] = len(inputs)
        elif onnx_type == "BatchNormalization":
            out.setdefault("epsilon", 1e-5)  # ONNX's default (GE's own BatchNorm defaults to TF's 1e-4)
        return out


def _const_reads(g: Any) -> set[str]:
    """The tensors a graph's GE nodes read: all ONNX reads but a Split's sizes input."""
    out = {o.name for o in g.output}
    for n in g.node:
        out.update(t for k, t in enumerate(n.input) if not (n.op_type == "Split" and k == 1))
        for a in n.attribute:
            for sub in [a.g] if a.HasField("g") else list(a.graphs):
                out |= tensor_reads(sub)
    return out


def _json_attr(onnx: Any, a: Any) -> Any:
    """An ONNX attribute as JSON data: tensors as {"dtype", "dims", "values"} (values up to FOLD_LIMIT elements),
    non-finite floats as "inf"/"-inf"/"nan", bytes as text."""
    if a.type in (onnx.AttributeProto.TENSOR, onnx.AttributeProto.TENSORS):
        return (
            [_json_tensor(onnx, t) for t in a.tensors]
            if a.type == onnx.AttributeProto.TENSORS
            else (_json_tensor(onnx, a.t))
        )
    if a.type in _PLAIN_ATTRS:
        return _finite(_attr(onnx, a))
    return None  # sparse tensors, type protos: not carried


def _json_tensor(onnx: Any, t: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"dtype": ONNX_DTYPES.get(t.data_type, str(t.data_type)), "dims": list(t.dims)}
    if math.prod(t.dims) <= FOLD_LIMIT:
        arr = onnx.numpy_helper.to_array(t).reshape(-1)
        if arr.dtype.kind in "biuf":
            body["values"] = _finite(arr.tolist())
    return body


def _finite(v: Any) -> Any:
    if isinstance(v, list):
        return [_finite(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    return v


def import_onnx(
    path: str | Path,
    *,
    format_mode: str = "keep",
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    weights: str = "inline",
) -> ImportResult:
    """Import an ONNX model file as a ComputeGraph (`format_mode` 'keep' or 'ascend'; `dims` for named symbolic
    dims, `input_shapes` for whole input shapes, as ATC's --input_shape; `weights` 'inline' keeps every
    initializer's elements in its Const, 'placeholder' only those of small ones, the runtime seeding the rest)."""
    if format_mode not in ("keep", "ascend"):
        raise error("usage", f"unknown format mode '{format_mode}'; expected 'keep' or 'ascend'")
    if weights not in ("placeholder", "inline"):
        raise error("usage", f"unknown weights mode '{weights}'; expected 'placeholder' or 'inline'")
    onnx = need_onnx()
    p = Path(path)
    model = load_model(onnx, p)
    where = f"'{p}'"
    shapes = {k: list(v) for k, v in (input_shapes or {}).items()}
    warnings = set_input_shapes(onnx, model, dict(dims or {}), shapes, where)
    model, folded = static_shapes(onnx, model, where)
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    imp = _Importer(onnx, format_mode, opsets, folded, weights)
    imp.warnings.extend(warnings)
    graph = imp.graph(model.graph, _NAME_OK.sub("_", model.graph.name or p.stem) or p.stem, None, None, None)
    graph.attrs["_onnx_opsets"] = dict(opsets)  # the runtime runs imported ops with these versions' semantics
    _check_static(graph, imp, bool(shapes or dims))
    if format_mode == "ascend":
        assign_ascend_formats(graph, imp.unique)
    if imp.unmapped:
        listed = ", ".join(f"{t} x{c}" for t, c in sorted(imp.unmapped.items()))
        imp.warnings.append(f"ops with no GE mapping kept their type and were placed on AI CPU: {listed}")
    return ImportResult(graph, imp.warnings, imp.unmapped)


def _check_static(graph: ComputeGraph, imp: _Importer, shapes_given: bool) -> None:
    """An error for the first tensor of the root graph whose shape is still unknown; a warning for subgraphs'."""
    for n in graph.topological_order():
        for k, d in enumerate(n.op.output_descs):
            if not formats.is_unknown_shape(d.shape):
                continue
            op = n.op.attrs.get("_onnx_op_type", n.op.type)
            raise error(
                "onnx-shape",
                f"output {k} of node '{n.name}' ({op}) has an unknown shape {list(d.shape)} after ONNX shape "
                "inference and constant folding",
                hint=(
                    "its shape depends on input data or on an op ONNX cannot infer; "
                    + ("check the shapes given" if shapes_given else "if the model's inputs are dynamic, fix them ")
                    + 'with --input-shape "NAME:D0,D1,..." (or --dim NAME=N)'
                ),
                where=n.name,
            )
    unknown = [
        n.name
        for s in graph.all_subgraphs()
        for n in s.all_nodes()
        if any(formats.is_unknown_shape(d.shape) for d in n.op.output_descs)
    ]
    if unknown:
        imp.warnings.append(
            f"{len(unknown)} subgraph node(s) have outputs of unknown shape (first: {unknown[0]}); memory cannot be "
            "planned for them"
        )
