"""Constant data on the IR: how a Const node carries the values of its tensor (weights, folded shapes, ...).

One definition, used by the ONNX importer (to store), the graph and model files (which only copy attributes) and
the runtime (to read):

- a small tensor (at most `MAX_LISTED` elements of int32, int64 or float, all finite) keeps the readable
  attribute `value`: the elements as a flat list, in origin (row-major) order;
- any other tensor (any dtype numpy holds: float16/32/64, int8..int64, uint8..uint64, bool; any size;
  `-inf`, `inf`, `nan` and every NaN payload) carries `_raw_data`: its little-endian bytes in row-major origin
  order, as base64 text (safe in YAML and JSON, and bit-exact). Dtype and shape are the node's output desc's
  (`dtype`, origin shape): the bytes carry no header.

A Const with neither carries no data; the runtime then seeds its values (the light models' weights are
placeholders). Decoding checks the base64 and that the byte count is the element count times the item size, and
raises one RulepassError naming the node and the field otherwise. numpy (the optional `run` extra) is imported
only when values are encoded or decoded.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from ..base.diagnostics import error
from .ir import AttrValue, OpDesc

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MAX_LISTED", "RAW_ATTR", "VALUE_ATTR", "carries_data", "const_array", "const_attrs", "raw_attrs"]

VALUE_ATTR = "value"
RAW_ATTR = "_raw_data"
MAX_LISTED = 64  # elements a readable `value` list may hold
_LISTED_DTYPES = ("int32", "int64", "float32")  # numpy names of the dtypes a `value` list may hold


def carries_data(op: OpDesc) -> bool:
    """Whether a Const's op desc carries its tensor's data (`value` or `_raw_data`)."""
    return VALUE_ATTR in op.attrs or RAW_ATTR in op.attrs


def raw_attrs(data: bytes) -> dict[str, AttrValue]:
    """The attributes carrying a tensor given as its raw little-endian bytes (row-major, origin layout)."""
    return {RAW_ATTR: base64.b64encode(data).decode("ascii")}


def const_attrs(array: Any) -> dict[str, AttrValue]:
    """The attributes carrying an array's data: a readable `value` list when small and finite, else `_raw_data`.

    The caller's output desc must give the array's dtype and shape (the attributes hold only the elements)."""
    import numpy as np

    a = np.asarray(array)
    if 0 < a.size <= MAX_LISTED and a.dtype.name in _LISTED_DTYPES and (a.dtype.kind != "f" or np.isfinite(a).all()):
        flat = a.reshape(-1).tolist()
        return {VALUE_ATTR: [float(x) for x in flat] if a.dtype.kind == "f" else [int(x) for x in flat]}
    little = a.astype(a.dtype.newbyteorder("<"), copy=False) if a.dtype.byteorder == ">" else a
    return raw_attrs(np.ascontiguousarray(little).tobytes())


def const_array(op: OpDesc) -> np.ndarray[Any, Any] | None:
    """The data a Const carries, in its output desc's dtype and origin shape; None when it carries none.

    A `value` list whose length is not the element count is no data (a placeholder, as before `_raw_data`);
    `_raw_data` that is not base64 or whose byte count disagrees with the desc is a RulepassError."""
    import numpy as np

    from .runtime.kernels import numpy_dtype, origin_shape

    if not op.output_descs:
        return None
    desc = op.output_descs[0]
    shape = origin_shape(desc)
    count = int(np.prod(shape)) if shape else 1
    raw = op.attrs.get(RAW_ATTR)
    if raw is not None:
        dt = numpy_dtype(desc.dtype).newbyteorder("<")
        data = _raw_bytes(op, raw)
        if len(data) != count * dt.itemsize:
            raise error(
                "weights",
                f"Const '{op.name}': attribute '{RAW_ATTR}' holds {len(data)} bytes; its output "
                f"{desc.dtype}{list(shape)} needs {count * dt.itemsize} ({count} elements of {dt.itemsize} bytes)",
                hint="the data and the output desc must describe the same tensor (was the file truncated or edited?)",
                where=op.name,
            )
        return np.frombuffer(data, dtype=dt).astype(dt.newbyteorder("="), copy=True).reshape(shape)
    v = op.attrs.get(VALUE_ATTR)
    if isinstance(v, bool) or v is None:
        return None
    flat = v if isinstance(v, list) else [v]
    if len(flat) != count or not all(isinstance(x, (int, float)) for x in flat):
        return None
    return np.asarray(flat).astype(numpy_dtype(desc.dtype)).reshape(shape)


def _raw_bytes(op: OpDesc, raw: AttrValue) -> bytes:
    if not isinstance(raw, str):
        raise error(
            "weights",
            f"Const '{op.name}': attribute '{RAW_ATTR}' must be base64 text, not {type(raw).__name__}",
            where=op.name,
        )
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise error(
            "weights",
            f"Const '{op.name}': attribute '{RAW_ATTR}' is not valid base64 ({exc})",
            hint="it holds the tensor's little-endian bytes as base64 (A-Z a-z 0-9 + /, padded with '=')",
            where=op.name,
        ) from None


# ---- from ONNX (the importer's side: the `onnx` package, hence numpy, is there) ---------------------------------
def onnx_tensor_attrs(onnx: Any, tensor: Any, where: str) -> dict[str, AttrValue]:
    """The attributes carrying an ONNX TensorProto's data (raw_data or typed fields, as `onnx.numpy_helper` reads
    them); a tensor that cannot be read (data shorter than its dims, ...) is a RulepassError naming it."""
    if tensor.data_type == onnx.TensorProto.STRING:
        return {}  # strings have no numpy layout in the IR: no data (the runtime cannot hold them either)
    try:
        array = onnx.numpy_helper.to_array(tensor)
    except Exception as exc:
        raise error(
            "onnx",
            f"the data of {where} cannot be read: {type(exc).__name__}: {exc}",
            hint="the file may be truncated, or its data may disagree with its dims",
            where=tensor.name or where,
        ) from None
    return const_attrs(array)


def onnx_constant_attrs(onnx: Any, node: Any) -> dict[str, AttrValue]:
    """The attributes of an ONNX Constant node's data, whichever of its forms it uses (`value`, `sparse_value`,
    `value_float(s)`, `value_int(s)`); empty for strings."""
    import numpy as np

    where = f"Constant '{node.name or node.output[0]}'"
    for a in node.attribute:
        if a.name == "value":
            return onnx_tensor_attrs(onnx, a.t, where)
        if a.name == "sparse_value":
            return const_attrs(_dense(onnx, a.sparse_tensor, where))
        if a.name in ("value_float", "value_floats"):
            return const_attrs(np.asarray(onnx.helper.get_attribute_value(a), dtype=np.float32))
        if a.name in ("value_int", "value_ints"):
            return const_attrs(np.asarray(onnx.helper.get_attribute_value(a), dtype=np.int64))
    return {}


def _dense(onnx: Any, sparse: Any, where: str) -> Any:
    """A SparseTensorProto as a dense array (indices linear [NNZ] or per dim [NNZ, rank])."""
    import numpy as np

    try:
        values = onnx.numpy_helper.to_array(sparse.values).reshape(-1)
        indices = onnx.numpy_helper.to_array(sparse.indices).astype(np.int64)
        dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
        flat = indices if indices.ndim == 1 else np.ravel_multi_index(tuple(indices.T), dense.shape)
        dense.reshape(-1)[flat] = values
    except Exception as exc:
        raise error(
            "onnx",
            f"the sparse value of {where} cannot be read: {type(exc).__name__}: {exc}",
            hint="its indices must lie inside its dims, one per value",
            where=where,
        ) from None
    return dense
