"""Static shapes for an ONNX model, as Ascend's model converter (ATC) makes them before it builds a graph.

1. Input shapes: `--input-shape "x:1,3,224,224;y:..."` (ATC's spelling) sets whole input shapes, including
   unnamed ('') and literal -1 dims; `--dim NAME=N` sets a named symbolic dim wherever it appears. A named dim
   given by neither is 1 (with a warning); an unnamed or -1 dim given by neither is an error naming the input
   and the flag that would fix it.
2. ONNX shape inference with data propagation (`onnx.shape_inference`, `data_prop=True`), so shape values
   computed by Shape/Gather/Concat/... reach the ops that read them.
3. Constant folding to a fixed point: a node of the default domain whose inputs are all constants (initializers,
   or outputs folded before), or a Shape/Size of a tensor whose shape is static, is evaluated by the `onnx`
   package's reference evaluator (`onnx.reference.ReferenceEvaluator`) and replaced by initializers; shape
   inference runs again after each round, until a round folds nothing. Every op ONNX defines folds the same
   way, with ONNX's own semantics: no per-op rule is written here except Shape and Size, whose value is the
   static shape itself (evaluating them would need a tensor of that shape).
4. Inferred static shapes win over symbolic dims declared on graph outputs (a declared static dim is kept where
   inference finds none).

Folding is bounded: an output over `FOLD_LIMIT` elements is not folded, and a node reading a constant over
`EVAL_INPUT_LIMIT` elements is not evaluated. A folded tensor becomes a Const whose `value` attribute holds every
element (the runtime reads it from there), so each folded element costs model-file text; shape math needs a few
elements, and a large computed constant (a position table, an attention mask) is cheaper to compute at run time
than to store as JSON. Random ops, ops with subgraphs and ops of other domains are never folded; subgraph
bodies are not folded (their values depend on the iteration).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from ..base.diagnostics import did_you_mean, error

FOLD_LIMIT = 4096  # elements of one folded output
EVAL_INPUT_LIMIT = 1 << 22  # elements of one input of a node evaluated for folding
MAX_ROUNDS = 32  # fold rounds; each one that changes anything removes a node, so real models stop far sooner
_NOT_FOLDED = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", "If", "Loop"}
)


def parse_dims(items: Sequence[str]) -> dict[str, int]:
    """`--dim NAME=N` values (N a positive integer) as {name: size}."""
    dims: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit() or int(value) < 1:
            raise error("usage", f"--dim expects NAME=POSITIVE_INT, got {item!r}")
        dims[name.strip()] = int(value)
    return dims


def parse_input_shapes(text: str) -> dict[str, list[int]]:
    """ATC's `--input-shape` value "name:d0,d1,...;name2:..." as {name: dims} (dims >= 0; a scalar is "name:")."""
    out: dict[str, list[int]] = {}
    for item in text.split(";"):
        if not item.strip():
            continue
        name, sep, dims = item.rpartition(":")
        name = name.strip()
        if not sep or not name:
            raise error("usage", f"--input-shape expects NAME:D0,D1,... items separated by ';', got {item!r}")
        parts = [d.strip() for d in dims.split(",")] if dims.strip() else []
        if not all(d.isdigit() for d in parts):
            raise error("usage", f"--input-shape: dims of '{name}' must be non-negative integers, got {dims.strip()!r}")
        if name in out:
            raise error("usage", f"--input-shape gives input '{name}' twice")
        out[name] = [int(d) for d in parts]
    if not out:
        raise error("usage", f"--input-shape names no input, got {text!r}", hint='e.g. --input-shape "x:1,3,224,224"')
    return out


def _suggest(name: str, dims: list[int | str]) -> str:
    return f'--input-shape "{name}:' + ",".join(str(d) if isinstance(d, int) and d >= 0 else "1" for d in dims) + '"'


def set_input_shapes(
    onnx: Any, model: Any, dims: Mapping[str, int], shapes: Mapping[str, list[int]], where: str
) -> list[str]:
    """Make every graph input's shape static from `shapes` and `dims` (see the module doc); returns warnings."""
    g = model.graph
    inits = {i.name for i in g.initializer} if model.ir_version >= 4 else set()
    inputs = [vi for vi in g.input if vi.name not in inits]
    unknown = sorted(set(shapes) - {vi.name for vi in inputs})
    if unknown:
        names = ", ".join(vi.name for vi in inputs) or "none"
        raise error("usage", f"--input-shape names '{unknown[0]}', which is not an input of {where} (inputs: {names})")
    _check_dim_names(inputs, dims, where)
    defaulted: set[str] = set()
    for vi in inputs:
        t = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            continue  # sequences, maps: left as they are
        declared: list[int | str] = [
            d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim
        ]
        if vi.name in shapes:
            given = shapes[vi.name]
            if t.HasField("shape") and len(declared) != len(given):
                raise error(
                    "usage",
                    f"--input-shape gives input '{vi.name}' {len(given)} dims; {where} declares {len(declared)}: "
                    f"{declared}",
                )
            for k, (d, v) in enumerate(zip(declared, given, strict=False)):
                if isinstance(d, int) and d >= 0 and d != v:
                    raise error(
                        "usage", f"--input-shape sets dim {k} of input '{vi.name}' to {v}; the model fixes it at {d}"
                    )
            _set_dims(t, given)
            continue
        if not t.HasField("shape"):
            raise error(
                "onnx-shape",
                f"input '{vi.name}' of {where} has no declared shape",
                hint=f'give it with {_suggest(vi.name, [])[:-1]}D0,D1,..."',
                where=vi.name,
            )
        values: list[int] = []
        for d in declared:
            if isinstance(d, int) and d >= 0:
                values.append(d)
            elif isinstance(d, str) and d != "?" and d in dims:
                values.append(dims[d])
            elif isinstance(d, str) and d != "?":
                defaulted.add(d)
                values.append(1)
            else:
                raise error(
                    "onnx-shape",
                    f"input '{vi.name}' of {where} has an unknown dim (unnamed or -1) in {declared}",
                    hint=f"give its shape with rulepass import ... {_suggest(vi.name, declared)}",
                    where=vi.name,
                )
        _set_dims(t, values)
    if defaulted:
        return [
            f"symbolic input dims set to 1: {', '.join(sorted(defaulted))} "
            "(set them with --dim NAME=N or --input-shape)"
        ]
    return []


def _check_dim_names(inputs: list[Any], dims: Mapping[str, int], where: str) -> None:
    """A `--dim NAME=N` whose NAME no input declares is an error (it would otherwise set nothing, silently)."""
    declared = sorted(
        {d.dim_param for vi in inputs if vi.type.HasField("tensor_type") for d in vi.type.tensor_type.shape.dim} - {""}
    )
    for name in sorted(set(dims) - set(declared)):
        raise error(
            "usage",
            f"--dim names '{name}', which no input of {where} declares as a symbolic dim "
            f"(symbolic dims: {', '.join(declared) or 'none'})",
            hint=did_you_mean(name, declared) or "to give an input's whole shape, use --input-shape NAME:D0,D1,...",
        )


def _set_dims(t: Any, values: list[int]) -> None:
    t.shape.ClearField("dim")
    for v in values:
        t.shape.dim.add().dim_value = v


def infer(onnx: Any, model: Any, where: str) -> Any:
    """ONNX shape inference with data propagation (lenient: an op it cannot infer keeps unknown outputs).

    Value infos that are not fully static are dropped first: one inferred before folding (or written by the
    exporter with symbolic dims) would otherwise be merged with, and keep unknown, what inference now finds."""
    g = model.graph
    static = [vi for vi in g.value_info if _is_static(vi)]
    if len(static) != len(g.value_info):
        del g.value_info[:]
        g.value_info.extend(static)
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:
        raise error("onnx", f"ONNX shape inference failed for {where}: {exc}", where=where) from None


def static_shapes(onnx: Any, model: Any, where: str) -> tuple[Any, set[str]]:
    """Infer, fold to a fixed point, infer again (see the module doc): the model, and the names of the
    initializers folding made (those still read)."""
    g = model.graph
    declared = {}
    for vi in g.output:  # outputs are inferred afresh; a declared static dim fills a dim inference leaves unknown
        declared[vi.name] = [d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim]
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
    folded: set[str] = set()
    for _ in range(MAX_ROUNDS):
        model = infer(onnx, model, where)
        if not _fold_round(onnx, model, folded):
            break
    else:
        model = infer(onnx, model, where)
    for vi in model.graph.output:
        t = vi.type.tensor_type
        want = declared.get(vi.name, [])
        if not t.HasField("shape") and want:
            _set_dims(t, want)
        elif len(t.shape.dim) == len(want):
            for d, w in zip(t.shape.dim, want, strict=True):
                if not d.HasField("dim_value") and w >= 0:
                    d.Clear()
                    d.dim_value = w
    folded &= {i.name for i in model.graph.initializer}
    return model, folded


def _is_static(vi: Any) -> bool:
    t = vi.type.tensor_type
    return bool(
        vi.type.HasField("tensor_type")
        and t.HasField("shape")
        and all(d.HasField("dim_value") and d.dim_value >= 0 for d in t.shape.dim)
    )


def _static_shapes_of(g: Any) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        if _is_static(vi):
            out[vi.name] = tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
    for init in g.initializer:
        out[init.name] = tuple(init.dims)
    return out


def tensor_reads(g: Any) -> set[str]:
    """Every tensor name a graph's nodes, its subgraphs' nodes and its outputs read."""
    out = {o.name for o in g.output}
    for n in g.node:
        out.update(n.input)
        for a in n.attribute:
            for sub in [a.g] if a.HasField("g") else list(a.graphs):
                out |= tensor_reads(sub)
    return out


def _fold_round(onnx: Any, model: Any, folded_names: set[str]) -> int:
    """Fold every node whose value is known (one pass in node order), adding the names of the initializers made
    to `folded_names`; returns how many nodes were folded."""
    g = model.graph
    opsets = {o.domain or "": o.version for o in model.opset_import}
    overridable = {vi.name for vi in g.input} if model.ir_version >= 4 else set()
    protos = {i.name: i for i in g.initializer if i.name not in overridable}
    values: dict[str, Any] = {}
    shapes = _static_shapes_of(g)
    before = tensor_reads(g)
    keep: list[Any] = []
    added: list[Any] = []
    for node in g.node:
        outs = _evaluate(onnx, node, opsets, protos, values, shapes)
        if outs is None:
            keep.append(node)
            continue
        for name, arr in zip(node.output, outs, strict=True):
            if name:
                values[name] = arr
                added.append(onnx.numpy_helper.from_array(arr, name))
                folded_names.add(name)
    if not added and len(keep) == len(g.node):
        return 0
    folded = len(g.node) - len(keep)
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(added)
    after = tensor_reads(g)
    dead = (before | {t.name for t in added}) - after - overridable
    kept_inits = [i for i in g.initializer if i.name not in dead]
    del g.initializer[:]
    g.initializer.extend(kept_inits)
    return folded


def _value(onnx: Any, name: str, protos: Mapping[str, Any], values: dict[str, Any]) -> Any:
    if name not in values and name in protos:
        p = protos[name]
        if math.prod(p.dims) > EVAL_INPUT_LIMIT:
            return None
        values[name] = onnx.numpy_helper.to_array(p)
    return values.get(name)


def _evaluate(
    onnx: Any,
    node: Any,
    opsets: Mapping[str, int],
    protos: Mapping[str, Any],
    values: dict[str, Any],
    shapes: Mapping[str, tuple[int, ...]],
) -> list[Any] | None:
    """The node's output values when it can be folded, else None."""
    import numpy as np

    if node.domain not in ("", "ai.onnx") or node.op_type in _NOT_FOLDED or not node.output:
        return None
    if any(a.HasField("g") or a.graphs for a in node.attribute):
        return None
    if node.op_type in ("Shape", "Size"):
        shape = shapes.get(node.input[0]) if node.input else None
        if shape is None:
            return None
        if node.op_type == "Size":
            return [np.array(math.prod(shape), dtype=np.int64)]
        attrs = {a.name: a.i for a in node.attribute}
        start, end = attrs.get("start", 0), attrs.get("end", len(shape))
        return [np.array(shape[slice(start, end)], dtype=np.int64)]
    if node.op_type != "Constant" and any(math.prod(shapes.get(o, ())) > FOLD_LIMIT for o in node.output):
        return None  # inference already says an output is too large: not evaluated at all
    if not all(not name or name in values or name in protos for name in node.input):
        return None  # a non-constant input: checked before any constant is converted
    feeds: dict[str, Any] = {}
    for name in node.input:
        if not name:
            continue
        v = _value(onnx, name, protos, values)
        if v is None:
            return None
        feeds[name] = v
    if not feeds and node.op_type != "Constant":
        return None  # no inputs (and not a Constant): nothing makes it a constant
    try:
        from onnx.reference import ReferenceEvaluator

        with np.errstate(all="ignore"):
            outs = ReferenceEvaluator(node, opsets=dict(opsets), new_ops=reference_fixes()).run(None, feeds)
    except Exception:
        return None  # left for the runtime, which reports what it cannot run
    arrays = [np.asarray(o) for o in outs]
    limit = math.inf if node.op_type == "Constant" else FOLD_LIMIT  # a Constant's value is in the file already
    if any(a.dtype.kind in "OUS" or a.size > limit for a in arrays):
        return None
    return arrays


@lru_cache(maxsize=1)
def reference_fixes() -> list[Any]:
    """Op implementations that replace `onnx.reference`'s where it is wrong (pass as `new_ops`).

    GatherElements (onnx 1.23): `np.choose` takes at most 64 choices, and the fallback it then uses returns one
    element instead of the gathered tensor, so a gather along an axis longer than 64 fails; it is
    `np.take_along_axis` with negative indices wrapped once, as the ONNX spec says."""
    import numpy as np
    from onnx.reference.op_run import OpRun

    def run(self: Any, data: Any, indices: Any, axis: int | None = None) -> tuple[Any]:
        ax = 0 if axis is None else int(axis)
        ax = ax + data.ndim if ax < 0 else ax
        idx = np.where(indices < 0, indices + data.shape[ax], indices)
        return (np.take_along_axis(data, idx.astype(np.int64), axis=ax),)

    return [type("GatherElements", (OpRun,), {"op_domain": "", "_run": run})]
