"""Which kernel runs a node: the hand-written one, or the ONNX op itself through `onnx.reference`.

An imported node carries its ONNX op type, domain and attributes (`_onnx_op_type`, `_onnx_domain`,
`_onnx_attrs`) and its root graph the model's opsets (`_onnx_opsets`). :func:`kernel_of` is the one dispatch:

- a node not from ONNX runs its hand-written kernel (by GE op type), or is an error naming it;
- an imported node keeps its hand-written kernel when that kernel is what matters (:data:`KEPT`: the virtual and
  data-movement ops the no-task rules act on, and the vectorised AI Core compute kernels, as long as the node
  uses only the attributes they implement);
- every other imported op is the ONNX op itself: a one-node ONNX model with the node's recorded attributes and
  the model's opset, evaluated by `onnx.reference`'s ReferenceEvaluator on the origin layouts (run_kernel's
  storage↔origin layer around it). The built evaluator is cached per (domain, op, opset, attributes, input
  types, output count), so it is built once, not per call;
- If and Loop (control flow) have no kernel: the executor evaluates their subgraphs (see executor.py).

An op that neither a hand-written kernel nor `onnx.reference` can run is a RulepassError from :func:`kernel_of`
naming the node, its op type and why, which the executor's pre-flight raises before any work.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from ...base.diagnostics import RulepassError, error
from ..ir import Node, OpDesc
from ..onnx_import import ONNX_DTYPES
from .kernels import Array, Inputs, Kernel, has_kernel, kernel_for, numpy_dtype

__all__ = [
    "CONTROL_FLOW",
    "KEPT",
    "cache_info",
    "clear_cache",
    "is_control_flow",
    "kernel_of",
    "onnx_op_types",
]

ONNX_OP, ONNX_DOMAIN, ONNX_ATTRS, ONNX_OPSETS = "_onnx_op_type", "_onnx_domain", "_onnx_attrs", "_onnx_opsets"
CONTROL_FLOW = frozenset({"If", "Loop"})  # ONNX ops whose subgraphs the executor evaluates

# GE type -> the ONNX attributes its hand-written kernel implements (None: any; the kernel reads only the output
# desc). Ops outside this table, or using another attribute, run as ONNX ops.
_CONV_POOL = frozenset({"auto_pad", "kernel_shape", "pads", "strides"})
KEPT: dict[str, frozenset[str] | None] = {
    "ConcatD": None,
    "SplitD": None,
    "SplitVD": None,
    "Reshape": None,
    "Squeeze": None,
    "Unsqueeze": None,
    "Flatten": None,
    "Conv2D": _CONV_POOL | {"dilations", "group"},
    "MaxPool": _CONV_POOL | {"ceil_mode"},
    "AvgPool": _CONV_POOL | {"ceil_mode", "count_include_pad"},
    "GlobalAveragePool": frozenset(),
    "GlobalMaxPool": frozenset(),
    "BatchNorm": frozenset({"epsilon", "momentum"}),
    "MatMulV2": frozenset(),
    "Gemm": frozenset({"alpha", "beta", "transA", "transB"}),
    "LRN": frozenset({"alpha", "beta", "bias", "size"}),
}
_SPATIAL_2D = frozenset({"Conv2D", "MaxPool", "AvgPool", "GlobalAveragePool", "GlobalMaxPool"})
_ONNX_TYPES = {v: k for k, v in ONNX_DTYPES.items()}


def _onnx() -> Any:
    try:
        import onnx
        import onnx.reference
    except ImportError:
        raise error(
            "onnx-missing",
            "running imported ONNX ops needs the 'onnx' package",
            hint="install it with: pip install 'rulepass[onnx]'",
        ) from None
    return onnx


def is_control_flow(node: Node) -> bool:
    """True for an imported If or Loop: the executor evaluates its subgraphs."""
    return node.op.attrs.get(ONNX_OP) in CONTROL_FLOW and node.op.attrs.get(ONNX_DOMAIN, "") == ""


def _keeps_handwritten(node: Node) -> bool:
    """Whether an imported node runs with its GE type's hand-written kernel (see KEPT)."""
    if node.type not in KEPT or not has_kernel(node.type):
        return False
    allowed = KEPT[node.type]
    attrs = node.op.attrs.get(ONNX_ATTRS)
    if allowed is None:
        return True
    if not isinstance(attrs, dict) or set(attrs) - allowed or len(node.op.output_descs) != 1:
        return False
    if node.type in _SPATIAL_2D:
        return bool(node.op.input_descs) and len(node.op.input_descs[0].origin_shape) == 4
    return True


def _opset(node: Node, domain: str) -> int | None:
    opsets = node.graph.root.attrs.get(ONNX_OPSETS)
    if not isinstance(opsets, Mapping):
        return None
    v = opsets.get(domain)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _elem_type(dtype: str) -> int:
    return _ONNX_TYPES.get(dtype, 0)


Key = tuple[str, str, int, str, tuple[int | None, ...], int]
# before opset 13 these ops coerce their input to 2-D at `axis` (default 1); onnx.reference implements only the
# opset-13 form, so the kernel flattens around the recorded axis and runs the op with axis 1
_COERCED_2D = frozenset({"Softmax", "LogSoftmax", "Hardmax"})
# random ops draw from numpy's global state unless seeded: an unseeded one gets a seed from its node's name
_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli"})


def _key(node: Node) -> tuple[Key, int | None] | str:
    """The cache key of a node's ONNX op and, for a 2-D-coercing op, its axis; or why the node has none."""
    op = node.op
    domain = op.attrs.get(ONNX_DOMAIN, "")
    attrs = op.attrs.get(ONNX_ATTRS, {})
    op_type = str(op.attrs[ONNX_OP])
    if not isinstance(domain, str) or not isinstance(attrs, dict):
        return f"its {ONNX_DOMAIN} or {ONNX_ATTRS} attribute is malformed"
    opset = _opset(node, domain)
    if opset is None:
        return f"its graph records no opset for domain '{domain or 'ai.onnx'}' ({ONNX_OPSETS}); import the model again"
    ins = tuple(
        None if p is None else _elem_type(op.input_descs[i].dtype) if i < len(op.input_descs) else 0
        for i, p in enumerate(node.in_peers)
    )
    axis: int | None = None
    if domain == "" and op_type in _COERCED_2D and opset < 13:
        v = attrs.get("axis", 1)
        axis = v if isinstance(v, int) else 1
        attrs = {**attrs, "axis": 1}
    if domain == "" and op_type in _RANDOM and "seed" not in attrs:  # same input, same output: a seed per node
        attrs = {**attrs, "seed": float(zlib.crc32(node.name.encode("utf-8")) % (1 << 24))}
    text = json.dumps(attrs, sort_keys=True, allow_nan=True)
    return (domain, op_type, opset, text, ins, len(op.output_descs)), axis


def _attribute(onnx: Any, name: str, value: Any, kind: int | None) -> Any:
    """An AttributeProto from recorded data, typed by the op's schema where it declares the attribute."""
    a = onnx.AttributeProto
    if isinstance(value, dict) and "values" in value:
        elem = value.get("dtype")
        etype = elem if isinstance(elem, int) else _ONNX_TYPES.get(str(elem), 0)
        if not etype and isinstance(elem, str):
            etype = onnx.TensorProto.DataType.Value(elem.upper())
        t = onnx.numpy_helper.from_array(
            np.asarray(value["values"]).astype(onnx.helper.tensor_dtype_to_np_dtype(etype)).reshape(value["dims"]),
            name,
        )
        return onnx.helper.make_attribute(name, t)
    casts = {a.FLOAT: float, a.INT: int, a.STRING: str}
    list_casts = {a.FLOATS: float, a.INTS: int, a.STRINGS: str}
    if kind in casts:
        return onnx.helper.make_attribute(name, casts[kind](value), attr_type=kind)
    if kind in list_casts and isinstance(value, list):
        return onnx.helper.make_attribute(name, [list_casts[kind](x) for x in value], attr_type=kind)
    return onnx.helper.make_attribute(name, value)


def _build(onnx: Any, key: Key, opset: int) -> Any:
    """The ReferenceEvaluator of a one-node model of `key`'s op at `opset` (raises when it cannot be built)."""
    domain, op_type, _, text, ins, n_out = key
    h = onnx.helper
    names = [f"x{i}" if t is not None else "" for i, t in enumerate(ins)]
    while names and not names[-1]:
        names.pop()
    outs = [f"y{j}" for j in range(n_out)]
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
        kinds = {n: int(s.type) for n, s in schema.attributes.items()}
    except Exception:
        kinds = {}
    node = h.make_node(op_type, names, outs, domain=domain)
    for name, value in sorted(json.loads(text).items()):
        if not (isinstance(value, dict) and "graph" in value):
            node.attribute.append(_attribute(onnx, name, value, kinds.get(name)))
    inputs = [h.make_tensor_value_info(n, ins[i] or 0, None) for i, n in enumerate(names) if n]
    graph = h.make_graph([node], f"{op_type}_op", inputs, [h.make_tensor_value_info(o, 0, None) for o in outs])
    opsets = [h.make_opsetid(domain, opset)] + ([h.make_opsetid("", onnx.defs.onnx_opset_version())] if domain else [])
    return onnx.reference.ReferenceEvaluator(h.make_model(graph, opset_imports=opsets))


def _newer_compatible(onnx: Any, op_type: str, opset: int) -> list[int]:
    """Later opsets whose version of `op_type` only extends the one at `opset` (same inputs and outputs, every
    attribute kept): onnx.reference implements some ops only from a later version (DequantizeLinear from 19)."""
    try:
        old = onnx.defs.get_schema(op_type, opset, "")
    except Exception:
        return []

    def shape(sc: Any) -> tuple[list[str], list[str]]:
        return [i.name for i in sc.inputs], [o.name for o in sc.outputs]

    out: list[int] = []
    seen = old.since_version
    for v in range(opset + 1, onnx.defs.onnx_opset_version() + 1):
        new = onnx.defs.get_schema(op_type, v, "")
        if new.since_version == seen:
            continue
        seen = new.since_version
        if shape(new) != shape(old) or not set(old.attributes) <= set(new.attributes):
            break
        out.append(v)
    return out


@lru_cache(maxsize=4096)
def _evaluator(key: Key) -> tuple[Any, str]:
    """(ReferenceEvaluator of the one-node model, "") or (None, why it cannot be built); built once per key. When
    onnx.reference has no implementation at the model's opset, the first later compatible version is used."""
    onnx = _onnx()
    try:
        return _build(onnx, key, key[2]), ""
    except Exception as exc:
        text = str(exc).strip()
        why = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
    for v in _newer_compatible(onnx, key[1], key[2]) if key[0] == "" else []:
        try:
            return _build(onnx, key, v), ""
        except Exception:
            continue
    return None, why


def cache_info() -> Any:
    """The built-op cache's statistics (functools' CacheInfo: hits, misses, size)."""
    return _evaluator.cache_info()


def clear_cache() -> None:
    """Forget every built op."""
    _evaluator.cache_clear()


def _onnx_kernel(node: Node, key: Key, ev: Any, axis: int | None) -> Kernel:
    feeds_of = [f"x{i}" for i in range(len(key[4]))]

    def run(inputs: Inputs, op: OpDesc) -> list[Array]:
        feeds = {feeds_of[i]: a for i, a in enumerate(inputs) if a is not None}
        shape: tuple[int, ...] | None = None
        if axis is not None and inputs and inputs[0] is not None:  # coerced to 2-D at `axis`
            shape = inputs[0].shape
            cut = axis % max(len(shape), 1)
            feeds[feeds_of[0]] = inputs[0].reshape(int(np.prod(shape[:cut])), -1)
        try:
            outs = ev.run(None, feeds)
            if shape is not None:
                outs = [np.asarray(outs[0]).reshape(shape), *outs[1:]]
        except RulepassError:
            raise
        except Exception as exc:
            raise error(
                "runtime-kernel",
                f"node '{op.name}' ({op.type}, ONNX {key[1]}): onnx.reference failed: {type(exc).__name__}: {exc}",
                where=op.name,
            ) from None
        return [np.asarray(o) for o in outs]

    return Kernel(node.type, fn=run)


def kernel_of(node: Node) -> Kernel:
    """The kernel that runs `node` (the one dispatch; see the module doc); a RulepassError naming the node, its
    op type and why when none can."""
    op_type = node.op.attrs.get(ONNX_OP)
    if not isinstance(op_type, str):
        return kernel_for(node.type, node.name)
    if is_control_flow(node):
        raise error("runtime-kernel", f"node '{node.name}' ({op_type}) is control flow: the executor runs it")
    if _keeps_handwritten(node):
        return kernel_for(node.type, node.name)
    found = _key(node)
    if isinstance(found, str):
        why = found
    else:
        key, axis = found
        for d in [*node.op.input_descs, *node.op.output_descs]:
            if d.is_valid:
                numpy_dtype(d.dtype)  # a dtype numpy cannot hold is its own error
        ev, why = _evaluator(key)
        if ev is not None:
            return _onnx_kernel(node, key, ev, axis)
    if has_kernel(node.type):
        return kernel_for(node.type, node.name)
    domain = node.op.attrs.get(ONNX_DOMAIN) or "ai.onnx"
    raise error(
        "runtime-kernel",
        f"node '{node.name}' (ONNX {domain}::{op_type}, GE type {node.type}) cannot run: no hand-written kernel, "
        f"and onnx.reference cannot run it ({why})",
        where=node.name,
    )


def onnx_op_types(opset: int | None = None) -> list[str]:
    """The op types of the default ONNX domain that `onnx.reference` can run at `opset` (default: the newest), as
    the runtime uses it: its own implementations (or a later compatible one) and the ops ONNX defines as
    functions."""
    onnx = _onnx()
    from onnx.reference.ops import load_op

    version = opset or onnx.defs.onnx_opset_version()
    out: set[str] = set()
    for name in sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx")}):
        try:
            schema = onnx.defs.get_schema(name, version, "")
        except Exception:
            continue  # not defined yet at this opset
        if schema.deprecated:
            continue
        if schema.has_function or schema.has_context_dependent_function:
            out.add(name)
            continue
        for v in [version, *_newer_compatible(onnx, name, version)]:
            try:
                load_op("", name, v)
            except Exception:
                continue
            out.add(name)
            break
    return sorted(out)
