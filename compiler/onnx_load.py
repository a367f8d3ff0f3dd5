"""Reading an ONNX model file safely: one clear error for a bad file, never a read outside the model's folder.

`load_model` parses the file without its external data, then checks, before anything else reads a byte:
- the file exists, is not empty and parses (a truncated file fails to parse, or parses to a model with no graph);
- every tensor with external data names a file inside the model's folder: a relative location without '..',
  which (symlinks resolved) stays in the folder, exists, and holds the bytes its offset and length name;
- after the external data is read, every tensor's payload (raw_data or the typed fields) holds exactly
  product(dims) elements of its type: a payload shorter or longer, or raw bytes that are not a whole number of
  elements, is an error naming the tensor;
- every node of the default ONNX domain carries the attributes its schema marks as required, and as many
  inputs and outputs as its schema admits; every tensor has an element type.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..base.diagnostics import error

_SUB_BYTE = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2}  # INT4, UINT4, FLOAT4E2M1, UINT2, INT2: bits per element


def load_model(onnx: Any, p: Path) -> Any:
    """The model of file `p`, external data read and every tensor's payload and every op's attributes checked."""
    where = str(p)
    if not p.exists():
        raise error("io", f"ONNX model '{p}' does not exist", where=where)
    if not p.is_file():
        raise error("io", f"ONNX model '{p}' is not a file", where=where)
    if p.stat().st_size == 0:
        raise error("onnx", f"'{p}' is empty (0 bytes): not an ONNX model", where=where)
    try:
        model = onnx.load(str(p), load_external_data=False)
    except Exception as exc:
        raise error("onnx", f"'{p}' is not a readable ONNX model: {type(exc).__name__}: {exc}", where=where) from None
    if not model.HasField("graph") or not (model.graph.node or model.graph.output):
        raise error("onnx", f"'{p}' holds no graph (a truncated or foreign file?)", where=where)
    _check_text(model.graph, where)
    tensors = list(_all_tensors(model.graph))
    base = p.absolute().parent.resolve()  # the folder the path names (the file may be a link)
    external = [t for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL]
    for t in external:
        _check_external(onnx, t, base, where)
    if external:
        try:
            onnx.external_data_helper.load_external_data_for_model(model, str(base))
        except Exception as exc:
            raise error("onnx", f"'{p}': its external data cannot be read: {exc}", where=where) from None
    for t in tensors:
        _check_payload(onnx, t, where)
    _check_attributes(onnx, model, where)
    return model


def _check_text(g: Any, where: str) -> None:
    """Every name of the graph and its subgraphs is UTF-8 text (protobuf hands invalid UTF-8 back as bytes)."""
    names: list[Any] = [g.name]
    for vi in [*g.input, *g.output, *g.value_info]:
        names.append(vi.name)
    names.extend(t.name for t in g.initializer)
    for n in g.node:
        names.extend([n.name, n.op_type, n.domain, *n.input, *n.output])
        for a in n.attribute:
            names.append(a.name)
            if a.HasField("g"):
                _check_text(a.g, where)
            for sub in a.graphs:
                _check_text(sub, where)
    bad = next((x for x in names if not isinstance(x, str)), None)
    if bad is not None:
        raise error("onnx", f"{where}: a name in the model is not UTF-8 text: {bad!r}", where=where)


def _all_tensors(g: Any) -> Iterator[Any]:
    """Every TensorProto of a graph and its subgraphs: initializers and tensor-valued attributes."""
    yield from g.initializer
    for s in g.sparse_initializer:
        yield s.values
        yield s.indices
    for n in g.node:
        for a in n.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("g"):
                yield from _all_tensors(a.g)
            for sub in a.graphs:
                yield from _all_tensors(sub)


def _element_bits(onnx: Any, dtype: int) -> int:
    if dtype in _SUB_BYTE:
        return _SUB_BYTE[dtype]
    try:
        return int(onnx.helper.tensor_dtype_to_np_dtype(dtype).itemsize) * 8
    except Exception:
        return -1  # strings, undefined, types numpy cannot hold: not checked


def _expected_bytes(onnx: Any, t: Any) -> int:
    bits = _element_bits(onnx, t.data_type)
    return -1 if bits < 0 else (math.prod(t.dims) * bits + 7) // 8


def _check_external(onnx: Any, t: Any, base: Path, where: str) -> None:
    info = {e.key: e.value for e in t.external_data}
    loc = info.get("location", "")
    what = f"tensor '{t.name}'"
    if not loc:
        raise error("onnx", f"{where}: {what} has external data with no location", where=where)
    lp = Path(loc)
    if lp.is_absolute() or loc.startswith(("/", "\\")) or (len(loc) > 1 and loc[1] == ":"):
        raise error("onnx", f"{where}: {what} names external data by an absolute path '{loc}'", where=where)
    if ".." in lp.parts or ".." in loc.replace("\\", "/").split("/"):
        raise error("onnx", f"{where}: {what} names external data '{loc}' outside the model's folder", where=where)
    full = (base / lp).resolve()
    if full != base and base not in full.parents:
        raise error("onnx", f"{where}: {what}'s external data '{loc}' resolves outside the model's folder", where=where)
    if not full.is_file():
        raise error("onnx", f"{where}: {what}'s external data file '{loc}' does not exist", where=where)
    size = full.stat().st_size
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else size - offset
    except ValueError:
        raise error("onnx", f"{where}: {what} has a non-integer external data offset or length", where=where) from None
    if offset < 0 or length < 0 or offset + length > size:
        raise error(
            "onnx",
            f"{where}: {what} wants bytes {offset}..{offset + length} of '{loc}', which holds {size}",
            where=where,
        )


def _typed_count(onnx: Any, t: Any) -> int | None:
    """How many elements the typed fields of `t` hold, or None when its type keeps no typed field."""
    tp = onnx.TensorProto
    fields = {
        tp.FLOAT: t.float_data,
        tp.COMPLEX64: t.float_data,
        tp.DOUBLE: t.double_data,
        tp.COMPLEX128: t.double_data,
        tp.INT64: t.int64_data,
        tp.UINT32: t.uint64_data,
        tp.UINT64: t.uint64_data,
        tp.STRING: t.string_data,
    }
    data = fields.get(t.data_type, t.int32_data)
    n = len(data)
    if t.data_type in (tp.COMPLEX64, tp.COMPLEX128):
        return n // 2
    if t.data_type in _SUB_BYTE:
        return None  # packed several to an int32: checked through raw data only
    return n


def _check_payload(onnx: Any, t: Any, where: str) -> None:
    what = f"tensor '{t.name}'"
    if t.data_type == onnx.TensorProto.UNDEFINED:
        raise error("onnx", f"{where}: {what} has no element type (UNDEFINED)", where=where)
    if any(d < 0 for d in t.dims):
        raise error("onnx", f"{where}: {what} has a negative dim in {list(t.dims)}", where=where)
    count = math.prod(t.dims)
    if t.HasField("raw_data"):
        want = _expected_bytes(onnx, t)
        have = len(t.raw_data)
        if want >= 0 and have != want:
            bits = _element_bits(onnx, t.data_type)
            kind = "shorter than" if have < want else "longer than"
            if bits >= 8 and have % (bits // 8):
                kind = f"not a whole number of {bits // 8}-byte elements, and {kind}"
            raise error(
                "onnx",
                f"{where}: {what} has {have} bytes of raw data, {kind} its dims {list(t.dims)} need ({want} bytes)",
                where=where,
            )
        return
    n = _typed_count(onnx, t)
    if n is not None and n != count and not (n == 0 and count == 0):
        raise error("onnx", f"{where}: {what} holds {n} values, but its dims {list(t.dims)} need {count}", where=where)


def _check_node(n: Any, schema: Any, where: str) -> None:
    """`n` carries its schema's required attributes, and as many inputs and outputs as the schema admits."""
    what = f"{where}: node '{n.name or n.op_type}' ({n.op_type})"
    have = {a.name for a in n.attribute}
    for name, attr in sorted(schema.attributes.items()):
        if attr.required and name not in have:
            raise error("onnx", f"{what} lacks its required attribute '{name}'", where=n.name or where)
    for kind, count, low, high in (
        ("inputs", len(n.input), schema.min_input, schema.max_input),
        ("outputs", len(n.output), schema.min_output, schema.max_output),
    ):
        if not low <= count <= high:
            expected = f"{low}" if low == high else f"{low} to {high}" if high < 1 << 30 else f"at least {low}"
            raise error("onnx", f"{what} has {count} {kind}; its schema expects {expected}", where=n.name or where)


def _check_attributes(onnx: Any, model: Any, where: str) -> None:
    opsets = {o.domain or "": o.version for o in model.opset_import}
    default = opsets.get("", opsets.get("ai.onnx", 0))

    newest = onnx.defs.onnx_opset_version()
    if default < 1 and any(n.domain in ("", "ai.onnx") for n in model.graph.node):
        raise error(
            "onnx",
            f"{where}: the model imports no ONNX opset (opset_import has no version >= 1 for the default domain), "
            "so its ops have no meaning",
            where=where,
        )
    if default > newest:
        raise error(
            "onnx",
            f"{where}: the model asks for ONNX opset {default}; the installed onnx knows opsets up to {newest}",
            where=where,
        )
    fields = {onnx.AttributeProto.TENSOR: "t", onnx.AttributeProto.GRAPH: "g"}

    def walk(g: Any) -> None:
        for n in g.node:
            for a in n.attribute:
                if a.type in fields and not a.HasField(fields[a.type]):
                    raise error(
                        "onnx",
                        f"{where}: node '{n.name or n.op_type}' attribute '{a.name}' is declared a "
                        f"{onnx.AttributeProto.AttributeType.Name(a.type).lower()} but holds none",
                        where=n.name or where,
                    )
            if n.domain in ("", "ai.onnx") and default:
                try:
                    schema = onnx.defs.get_schema(n.op_type, default, "")
                except Exception:
                    schema = None  # an op ONNX does not know at this opset: kept, placed on AI CPU
                if schema is not None:
                    _check_node(n, schema, where)
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)
                for sub in a.graphs:
                    walk(sub)

    walk(model.graph)
