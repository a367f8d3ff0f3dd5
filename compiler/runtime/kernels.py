"""Reference kernels in numpy, looked up by op type, and the layout layer between storage and origin layouts.

A kernel computes one op on *origin* layouts: the layer in :func:`run_kernel` converts every input from the
tensor's storage layout (what sits in memory: NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NDC1HWC0 or a permutation of
the origin format) to its origin layout, calls the kernel, casts each result to its output's dtype and converts
it back to the output's storage layout (padding C to C0 and N to N0 with zeros). So TransData is the identity
in origin space, and a concat along C of NC1HWC0 tensors is a concat along axis 1 of NCHW arrays.

Kernels register by op type with :func:`register_kernel` (per rank) or :func:`register_collective` (all ranks
at once: HCCL ops, called by the executor in lock-step); an unknown op type is a RulepassError naming it.
fp16 inputs are computed in fp32 and rounded once at the output, as Ascend's cube and vector units accumulate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...base.diagnostics import RulepassError, did_you_mean, error
from .. import formats
from ..ir import AttrValue, OpDesc, TensorDesc

Array = npt.NDArray[Any]
Inputs = list[Array | None]
KernelFn = Callable[[Inputs, OpDesc], list[Array]]
CollectiveFn = Callable[[list[Inputs], OpDesc], list[list[Array]]]

__all__ = [
    "Array",
    "Kernel",
    "has_kernel",
    "kernel_for",
    "numpy_dtype",
    "origin_shape",
    "origin_to_storage",
    "register_collective",
    "register_kernel",
    "registered_kernels",
    "run_collective",
    "run_kernel",
    "storage_to_origin",
]

# ---- dtypes ------------------------------------------------------------------------------------------------
_NP_DTYPES: dict[str, type[np.generic]] = {
    "float": np.float32,
    "float16": np.float16,
    "double": np.float64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "bool": np.bool_,
    "complex64": np.complex64,
    "complex128": np.complex128,
    "qint8": np.int8,
    "qint16": np.int16,
    "qint32": np.int32,
    "quint8": np.uint8,
    "quint16": np.uint16,
    "dual_sub_int8": np.int8,
    "dual_sub_uint8": np.uint8,
}


def numpy_dtype(dtype: str) -> np.dtype[Any]:
    """The numpy dtype of a GE dtype; a RulepassError for dtypes numpy cannot hold (bfloat16, int4, ...)."""
    canon = formats.canonical_dtype(dtype)
    t = _NP_DTYPES.get(canon or "")
    if t is None:
        raise error(
            "runtime-dtype",
            f"dtype '{dtype}' has no numpy equivalent in the reference runtime",
            hint="supported: " + ", ".join(sorted(_NP_DTYPES)),
        )
    return np.dtype(t)


# ---- layouts -----------------------------------------------------------------------------------------------


def _primary(fmt: str) -> str:
    try:
        return formats.primary_format(fmt)
    except ValueError:
        return fmt


def origin_shape(desc: TensorDesc) -> tuple[int, ...]:
    """The origin shape of a desc (its storage shape when no origin is recorded)."""
    return tuple(desc.origin_shape) if desc.origin_shape or not desc.shape else tuple(desc.shape)


def _letters(fmt: str, rank: int) -> str | None:
    """Axis letters of a plain origin format of `rank` dims (ND of rank 4/5 reads as NCHW/NCDHW)."""
    letters = formats.PLAIN_FORMAT_AXES.get(fmt)
    if letters is not None and len(letters) == rank:
        return letters
    if fmt == "ND":
        return {4: "NCHW", 5: "NCDHW"}.get(rank)
    return None


def _layout_error(desc: TensorDesc, what: str) -> RulepassError:
    return error(
        "runtime-layout",
        f"{what}: the reference runtime cannot convert storage {desc.format} {list(desc.shape)} to origin "
        f"{desc.origin_format} {list(origin_shape(desc))}",
        hint="supported: ND/NCHW/NHWC/HWCN permutations, NC1HWC0, NDC1HWC0, FRACTAL_Z (4-D and 2-D), FRACTAL_NZ",
    )


def _expanded(desc: TensorDesc, ofmt: str) -> tuple[tuple[int, ...], str] | None:
    """A rank-deficient origin padded to its format's full rank as GE's ExpandDimension does, with its letters."""
    oshape = origin_shape(desc)
    full = 5 if ofmt in ("NCDHW", "NDHWC", "DHWCN", "DHWNC") else 4
    letters = formats.PLAIN_FORMAT_AXES.get(ofmt)
    if letters is None:
        return None
    if len(oshape) == full:
        return oshape, letters
    rtype = formats.default_reshape_type(ofmt, len(oshape))
    if rtype is None or len(rtype) != len(oshape):
        return None
    shape = [1] * full
    for dim, letter in zip(oshape, rtype, strict=True):
        shape[letters.index(letter)] = dim
    return tuple(shape), letters


def _canonical_shape(shape: Sequence[int], letters: str) -> tuple[int, ...]:
    """A shape in `letters` order permuted to NCHW (or NCDHW)."""
    target = "NCHW" if len(letters) == 4 else "NCDHW"
    return tuple(shape[letters.index(ch)] for ch in target)


def _to_canonical(a: Array, letters: str) -> Array:
    """From an origin array in `letters` order to NCHW (or NCDHW)."""
    target = "NCHW" if len(letters) == 4 else "NCDHW"
    return a.transpose([letters.index(ch) for ch in target])


def _from_canonical(a: Array, letters: str) -> Array:
    target = "NCHW" if len(letters) == 4 else "NCDHW"
    return a.transpose([target.index(ch) for ch in letters])


def _pad_to(a: Array, shape: Sequence[int]) -> Array:
    if tuple(a.shape) == tuple(shape):
        return a
    out = np.zeros(tuple(shape), dtype=a.dtype)
    out[tuple(slice(0, d) for d in a.shape)] = a
    return out


def _unpadded(a: Array, desc: TensorDesc, what: str, to_storage: bool) -> Array | None:
    """What both directions share: the array as it is in the other layout when no padding is involved (the
    formats agree, either is ND, the shape is empty: a reshape; two plain formats: a transpose); None for the
    padded formats (5HD, fractal), which each direction converts its own way."""
    fmt, ofmt = _primary(desc.format), _primary(desc.origin_format)
    oshape = origin_shape(desc)
    target, src_fmt, dst_fmt = (tuple(desc.shape), ofmt, fmt) if to_storage else (oshape, fmt, ofmt)
    if (
        fmt == ofmt
        or (fmt in formats.PLAIN_FORMATS and ofmt in formats.PLAIN_FORMATS and "ND" in (fmt, ofmt))
        or not oshape
    ):
        if a.size != math.prod(target):
            raise _layout_error(desc, what)
        return a.reshape(target)
    if fmt in formats.PLAIN_FORMATS and ofmt in formats.PLAIN_FORMATS:
        src, dst = _letters(src_fmt, a.ndim), _letters(dst_fmt, len(target))
        if src is None or dst is None or sorted(src) != sorted(dst):
            raise _layout_error(desc, what)
        return a.transpose([src.index(ch) for ch in dst])
    return None


def _expanded_5hd(desc: TensorDesc, what: str) -> tuple[tuple[int, ...], str]:
    """A 5HD desc's origin shape expanded to its letters (NCHW for a 4-D ND origin), or a layout error."""
    ofmt, oshape = _primary(desc.origin_format), origin_shape(desc)
    ex = _expanded(desc, "NCHW" if ofmt == "ND" and len(oshape) == 4 else ofmt)
    if ex is None:
        raise _layout_error(desc, what)
    return ex


def storage_to_origin(a: Array, desc: TensorDesc, what: str = "tensor") -> Array:
    """An array in `desc`'s storage layout as an array in its origin layout (padding dropped)."""
    fmt, ofmt = _primary(desc.format), _primary(desc.origin_format)
    oshape = origin_shape(desc)
    if tuple(a.shape) != tuple(desc.shape):
        raise error("runtime-layout", f"{what}: array of shape {list(a.shape)}, storage shape is {list(desc.shape)}")
    plain = _unpadded(a, desc, what, to_storage=False)
    if plain is not None:
        return plain
    if fmt in ("NC1HWC0", "NDC1HWC0"):
        full, letters = _expanded_5hd(desc, what)
        canon = _canonical_shape(full, letters)
        if fmt == "NC1HWC0" and a.ndim == 5 and len(canon) == 4:
            n, c1, h, w, c0 = a.shape
            nchw = a.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
        elif fmt == "NDC1HWC0" and a.ndim == 6 and len(canon) == 5:
            n, d, c1, h, w, c0 = a.shape
            nchw = a.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)
        else:
            raise _layout_error(desc, what)
        if any(x > y for x, y in zip(canon, nchw.shape, strict=True)):
            raise _layout_error(desc, what)
        cut = nchw[tuple(slice(0, d) for d in canon)]
        return _from_canonical(cut, letters).reshape(oshape)
    if fmt == "FRACTAL_Z" and a.ndim == 4:
        if len(oshape) == 2:
            k1, n1, n0, k0 = a.shape
            full2 = a.transpose(0, 3, 1, 2).reshape(k1 * k0, n1 * n0)
            if oshape[0] > full2.shape[0] or oshape[1] > full2.shape[1]:
                raise _layout_error(desc, what)
            return full2[: oshape[0], : oshape[1]]
        letters4 = _letters(ofmt, len(oshape))
        if letters4 is None or len(letters4) != 4:
            raise _layout_error(desc, what)
        n, c, h, w = _canonical_shape(oshape, letters4)
        c1hw, n1, n0, c0 = a.shape
        if h * w == 0 or c1hw % (h * w) or n > n1 * n0 or c > (c1hw // (h * w)) * c0:
            raise _layout_error(desc, what)
        c1 = c1hw // (h * w)
        nchw = a.reshape(c1, h, w, n1, n0, c0).transpose(3, 4, 0, 5, 1, 2).reshape(n1 * n0, c1 * c0, h, w)
        return _from_canonical(nchw[:n, :c], letters4)
    if fmt == "FRACTAL_NZ" and a.ndim >= 4:
        o2 = oshape if len(oshape) >= 2 else (oshape[0], 1)
        k = a.ndim - 4
        b1, a1, m0, c0 = a.shape[k:]
        if tuple(a.shape[:k]) != tuple(o2[:-2]) or o2[-2] > a1 * m0 or o2[-1] > b1 * c0:
            raise _layout_error(desc, what)
        perm = [*range(k), k + 1, k + 2, k, k + 3]
        full_nz = a.transpose(perm).reshape(*a.shape[:k], a1 * m0, b1 * c0)
        return full_nz[..., : o2[-2], : o2[-1]].reshape(oshape)
    raise _layout_error(desc, what)


def origin_to_storage(a: Array, desc: TensorDesc, what: str = "tensor") -> Array:
    """An array in `desc`'s origin layout as an array in its storage layout (padding filled with zeros)."""
    fmt, ofmt = _primary(desc.format), _primary(desc.origin_format)
    oshape = origin_shape(desc)
    shape = tuple(desc.shape)
    if tuple(a.shape) != oshape:
        raise error("runtime-layout", f"{what}: array of shape {list(a.shape)}, origin shape is {list(oshape)}")
    plain = _unpadded(a, desc, what, to_storage=True)
    if plain is not None:
        return plain
    if fmt in ("NC1HWC0", "NDC1HWC0"):
        full, letters = _expanded_5hd(desc, what)
        canon = _to_canonical(a.reshape(full), letters)
        if fmt == "NC1HWC0" and len(shape) == 5 and canon.ndim == 4:
            n, c1, h, w, c0 = shape
            if (canon.shape[0], canon.shape[2], canon.shape[3]) != (n, h, w) or canon.shape[1] > c1 * c0:
                raise _layout_error(desc, what)
            padded = _pad_to(canon, (n, c1 * c0, h, w))
            return padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2)
        if fmt == "NDC1HWC0" and len(shape) == 6 and canon.ndim == 5:
            n, d, c1, h, w, c0 = shape
            if (canon.shape[0], canon.shape[2], canon.shape[3], canon.shape[4]) != (n, d, h, w):
                raise _layout_error(desc, what)
            if canon.shape[1] > c1 * c0:
                raise _layout_error(desc, what)
            padded = _pad_to(canon, (n, c1 * c0, d, h, w))
            return padded.reshape(n, c1, c0, d, h, w).transpose(0, 3, 1, 4, 5, 2)
        raise _layout_error(desc, what)
    if fmt == "FRACTAL_Z" and len(shape) == 4:
        if len(oshape) == 2:
            k1, n1, n0, k0 = shape
            if oshape[0] > k1 * k0 or oshape[1] > n1 * n0:
                raise _layout_error(desc, what)
            return _pad_to(a, (k1 * k0, n1 * n0)).reshape(k1, k0, n1, n0).transpose(0, 2, 3, 1)
        letters4 = _letters(ofmt, len(oshape))
        if letters4 is None or len(letters4) != 4:
            raise _layout_error(desc, what)
        nchw = _to_canonical(a, letters4)
        n, c, h, w = nchw.shape
        c1hw, n1, n0, c0 = shape
        if h * w == 0 or c1hw % (h * w) or n > n1 * n0 or c > (c1hw // (h * w)) * c0:
            raise _layout_error(desc, what)
        c1 = c1hw // (h * w)
        padded = _pad_to(nchw, (n1 * n0, c1 * c0, h, w))
        return padded.reshape(n1, n0, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3).reshape(shape)
    if fmt == "FRACTAL_NZ" and len(shape) >= 4:
        o2 = oshape if len(oshape) >= 2 else (oshape[0], 1)
        k = len(shape) - 4
        b1, a1, m0, c0 = shape[k:]
        if tuple(shape[:k]) != tuple(o2[:-2]) or o2[-2] > a1 * m0 or o2[-1] > b1 * c0:
            raise _layout_error(desc, what)
        padded = _pad_to(a.reshape(o2), (*shape[:k], a1 * m0, b1 * c0)).reshape(*shape[:k], a1, m0, b1, c0)
        return padded.transpose([*range(k), k + 2, k, k + 1, k + 3])
    raise _layout_error(desc, what)


# ---- registry ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kernel:
    """A reference kernel: per rank (`fn`) or collective over every rank (`collective_fn`)."""

    op_type: str
    fn: KernelFn | None = None
    collective_fn: CollectiveFn | None = None

    @property
    def collective(self) -> bool:
        """True for kernels that run over all ranks at once (HCCL)."""
        return self.collective_fn is not None


_KERNELS: dict[str, Kernel] = {}


def register_kernel(*op_types: str) -> Callable[[KernelFn], KernelFn]:
    """Decorator: register a per-rank kernel (origin layouts in, origin layouts out) for op types."""

    def deco(fn: KernelFn) -> KernelFn:
        for t in op_types:
            _KERNELS[t] = Kernel(t, fn=fn)
        return fn

    return deco


def register_collective(*op_types: str) -> Callable[[CollectiveFn], CollectiveFn]:
    """Decorator: register a collective kernel: every rank's inputs in, every rank's outputs out."""

    def deco(fn: CollectiveFn) -> CollectiveFn:
        for t in op_types:
            _KERNELS[t] = Kernel(t, collective_fn=fn)
        return fn

    return deco


def registered_kernels() -> list[str]:
    """Every op type with a reference kernel."""
    return sorted(_KERNELS)


def has_kernel(op_type: str) -> bool:
    """True when `op_type` has a reference kernel."""
    return op_type in _KERNELS


def kernel_for(op_type: str, node: str | None = None) -> Kernel:
    """The kernel of `op_type`; a RulepassError naming the op type (and node) when there is none."""
    k = _KERNELS.get(op_type)
    if k is None:
        at = f" (node '{node}')" if node else ""
        raise error(
            "runtime-kernel",
            f"no reference kernel for op type '{op_type}'{at}",
            hint=did_you_mean(op_type, _KERNELS) or f"{len(_KERNELS)} op types have kernels; see registered_kernels()",
            where=node,
        )
    return k


def _kernel_failed(op: OpDesc, exc: Exception) -> RulepassError:
    return error(
        "runtime-kernel",
        f"node '{op.name}' ({op.type}): the reference kernel failed: {type(exc).__name__}: {exc}",
        where=op.name,
    )


def _inputs_to_origin(op: OpDesc, inputs: Sequence[Array | None]) -> Inputs:
    out: Inputs = []
    for i, a in enumerate(inputs):
        if a is None:
            out.append(None)
            continue
        desc = op.input_descs[i] if i < len(op.input_descs) else None
        out.append(a if desc is None else storage_to_origin(a, desc, f"node '{op.name}' input {i}"))
    return out


def _outputs_to_storage(op: OpDesc, outs: Sequence[Array]) -> list[Array]:
    if len(outs) < len(op.output_descs):
        raise error(
            "runtime-kernel",
            f"node '{op.name}' ({op.type}): the kernel gave {len(outs)} output(s) for {len(op.output_descs)}",
            where=op.name,
        )
    result: list[Array] = []
    for j, desc in enumerate(op.output_descs):
        what = f"node '{op.name}' ({op.type}) output {j}"
        arr = np.asarray(outs[j])
        want = origin_shape(desc)
        if tuple(arr.shape) != want:
            if arr.size != math.prod(want):
                raise error(
                    "runtime-kernel",
                    f"{what}: the kernel computed shape {list(arr.shape)}, the graph says {list(want)}",
                    where=op.name,
                )
            arr = arr.reshape(want)
        arr = arr.astype(numpy_dtype(desc.dtype), copy=False)
        result.append(np.asarray(origin_to_storage(arr, desc, what), order="C"))  # 0-d stays 0-d
    return result


def run_kernel(op: OpDesc, inputs: Sequence[Array | None], kernel: Kernel | None = None) -> list[Array]:
    """Run `kernel` (default: `op`'s hand-written kernel by op type) on `op`: inputs and outputs in storage
    layout (one array per input desc, None if unconnected)."""
    k = kernel or kernel_for(op.type, op.name)
    if k.fn is None:
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}) is a collective: run it on every rank")
    origin = _inputs_to_origin(op, inputs)
    try:
        with np.errstate(all="ignore"):
            return _outputs_to_storage(op, k.fn(origin, op))
    except RulepassError:
        raise
    except (ValueError, TypeError, IndexError, ZeroDivisionError, ArithmeticError) as exc:
        raise _kernel_failed(op, exc) from None


def run_collective(
    op: OpDesc, per_rank: Sequence[Sequence[Array | None]], kernel: Kernel | None = None
) -> list[list[Array]]:
    """Run a collective op on every rank's inputs (storage layouts) at once; every rank's outputs."""
    k = kernel or kernel_for(op.type, op.name)
    if k.collective_fn is None:
        return [run_kernel(op, inputs, k) for inputs in per_rank]
    origin = [_inputs_to_origin(op, inputs) for inputs in per_rank]
    try:
        with np.errstate(all="ignore"):
            return [_outputs_to_storage(op, o) for o in k.collective_fn(origin, op)]
    except RulepassError:
        raise
    except (ValueError, TypeError, IndexError, ZeroDivisionError, ArithmeticError) as exc:
        raise _kernel_failed(op, exc) from None


# ---- attribute reads ---------------------------------------------------------------------------------------
def _attr(op: OpDesc, *names: str) -> AttrValue | None:
    for n in names:
        if n in op.attrs:
            return op.attrs[n]
    return None


def _int(op: OpDesc, default: int, *names: str) -> int:
    v = _attr(op, *names)
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, int) else default


def _float(op: OpDesc, default: float, *names: str) -> float:
    v = _attr(op, *names)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def _bool(op: OpDesc, default: bool, *names: str) -> bool:
    v = _attr(op, *names)
    if isinstance(v, bool):
        return v
    return bool(v) if isinstance(v, int) else default


def _str(op: OpDesc, default: str, *names: str) -> str:
    v = _attr(op, *names)
    return v if isinstance(v, str) else default


def _ints(op: OpDesc, *names: str) -> list[int] | None:
    v = _attr(op, *names)
    if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return [int(x) for x in v]  # type: ignore[arg-type]
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    return None


def _need(inputs: Inputs, k: int, op: OpDesc) -> Array:
    if k >= len(inputs) or inputs[k] is None:
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}): input {k} is not connected", where=op.name)
    a = inputs[k]
    assert a is not None
    return a


def _present(inputs: Inputs) -> list[Array]:
    return [a for a in inputs if a is not None]


def _axis(axis: int, rank: int, op: OpDesc) -> int:
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}): axis {axis} out of range for rank {rank}")
    return axis % max(rank, 1)


def _compute(a: Array) -> Array:
    """fp16 (and smaller) floats computed in fp32; everything else in its own type."""
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _out_desc(op: OpDesc, j: int = 0) -> TensorDesc:
    if j >= len(op.output_descs):
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}) has no output {j}", where=op.name)
    return op.output_descs[j]


def _data_format(op: OpDesc, inputs: Inputs) -> str:
    fmt = _str(op, "", "data_format")
    if fmt:
        return fmt.upper()
    if op.input_descs:
        return _primary(op.input_descs[0].origin_format)
    return "NCHW"


# ---- elementwise -------------------------------------------------------------------------------------------
def _unary(fn: Callable[[Array, OpDesc], Array]) -> KernelFn:
    def kernel(inputs: Inputs, op: OpDesc) -> list[Array]:
        return [fn(_compute(_need(inputs, 0, op)), op)]

    return kernel


def _sigmoid(x: Array) -> Array:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


_UNARY: dict[str, Callable[[Array, OpDesc], Array]] = {
    "Relu": lambda x, op: np.maximum(x, x.dtype.type(0)),
    "Relu6": lambda x, op: np.minimum(np.maximum(x, x.dtype.type(0)), x.dtype.type(6)),
    "LeakyRelu": lambda x, op: np.where(x >= 0, x, x * _float(op, 0.0, "negative_slope", "alpha")),
    "Elu": lambda x, op: np.where(x > 0, x, _float(op, 1.0, "alpha") * np.expm1(x)),
    "Sigmoid": lambda x, op: _sigmoid(x),
    "Tanh": lambda x, op: np.tanh(x),
    "Exp": lambda x, op: np.exp(x),
    "Log": lambda x, op: np.log(x),
    "Sqrt": lambda x, op: np.sqrt(x),
    "Rsqrt": lambda x, op: 1.0 / np.sqrt(x),
    "Abs": lambda x, op: np.abs(x),
    "Neg": lambda x, op: np.negative(x),
    "Square": lambda x, op: np.square(x),
    "Reciprocal": lambda x, op: 1.0 / x,
    "Softplus": lambda x, op: np.logaddexp(x, 0),
    "Swish": lambda x, op: x * _sigmoid(x * _float(op, 1.0, "scale")),
    "HardSigmoid": lambda x, op: np.clip(_float(op, 0.2, "alpha") * x + _float(op, 0.5, "beta"), 0, 1),
    "Gelu": lambda x, op: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    "Floor": lambda x, op: np.floor(x),
    "Ceil": lambda x, op: np.ceil(x),
    "Sign": lambda x, op: np.sign(x),
}
# exact in any float type: computed in the input's own dtype (no fp32 round trip)
_EXACT_UNARY = frozenset({"Relu", "Relu6", "Abs", "Neg", "Floor", "Ceil", "Sign"})


def _exact_unary(fn: Callable[[Array, OpDesc], Array]) -> KernelFn:
    def kernel(inputs: Inputs, op: OpDesc) -> list[Array]:
        return [fn(_need(inputs, 0, op), op)]

    return kernel


for _name, _fn in _UNARY.items():
    register_kernel(_name)((_exact_unary if _name in _EXACT_UNARY else _unary)(_fn))
register_kernel("ReLU")(_exact_unary(_UNARY["Relu"]))


def _binary(fn: Callable[[Array, Array], Array]) -> KernelFn:
    def kernel(inputs: Inputs, op: OpDesc) -> list[Array]:
        return [fn(_compute(_need(inputs, 0, op)), _compute(_need(inputs, 1, op)))]

    return kernel


def _div(a: Array, b: Array) -> Array:
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return np.floor_divide(a, b)
    return np.asarray(a / b)


_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "Add": np.add,
    "AddV2": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": _div,
    "RealDiv": _div,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
    "Pow": np.power,
    "SquaredDifference": lambda a, b: np.square(a - b),
    "Equal": np.equal,
    "Greater": np.greater,
    "Less": np.less,
}
for _name, _bfn in _BINARY.items():
    register_kernel(_name)(_binary(_bfn))


@register_kernel("AddN", "Sum", "AccumulateNV2")
def _add_n(inputs: Inputs, op: OpDesc) -> list[Array]:
    xs = [_compute(a) for a in _present(inputs)]
    if not xs:
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}) has no inputs", where=op.name)
    acc = xs[0].copy()
    for x in xs[1:]:
        acc = acc + x
    return [acc]


@register_kernel("ClipByValue", "Clip")
def _clip(inputs: Inputs, op: OpDesc) -> list[Array]:
    x = _compute(_need(inputs, 0, op))
    lo = inputs[1] if len(inputs) > 1 and inputs[1] is not None else _float(op, -math.inf, "min")
    hi = inputs[2] if len(inputs) > 2 and inputs[2] is not None else _float(op, math.inf, "max")
    return [np.clip(x, lo, hi)]


# ---- data movement -----------------------------------------------------------------------------------------
@register_kernel("Identity", "Snapshot", "StopGradient", "TransData", "Cast", "MemcpyAsync", "Dropout", "Enter")
def _identity(inputs: Inputs, op: OpDesc) -> list[Array]:
    """Identity in origin space: TransData only changes the storage layout, Cast only the dtype (at the output);
    inference Dropout passes its input through, with an all-true mask as a second output."""
    x = _need(inputs, 0, op)
    if op.type == "TransData" and op.output_descs and tuple(x.shape) != origin_shape(op.output_descs[0]):
        raise error(
            "runtime-kernel",
            f"node '{op.name}' (TransData): input origin shape {list(x.shape)} differs from the output's "
            f"{list(origin_shape(op.output_descs[0]))}",
            where=op.name,
        )
    outs: list[Array] = [x]
    for j in range(1, len(op.output_descs)):
        outs.append(np.ones(origin_shape(op.output_descs[j]), dtype=numpy_dtype(op.output_descs[j].dtype)))
    return outs


@register_kernel("Reshape", "Squeeze", "Unsqueeze", "ExpandDims", "Flatten", "FlattenV2", "SqueezeV2", "UnsqueezeV2")
def _reshape(inputs: Inputs, op: OpDesc) -> list[Array]:
    """Reshape-like ops: the input's elements in the output's origin shape."""
    return [_need(inputs, 0, op).reshape(origin_shape(_out_desc(op)))]


@register_kernel("ConcatD", "ConcatV2D", "Concat")
def _concat(inputs: Inputs, op: OpDesc) -> list[Array]:
    xs = _present(inputs)
    if not xs:
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}) has no inputs", where=op.name)
    axis = _axis(_int(op, 0, "concat_dim", "axis"), xs[0].ndim, op)
    return [np.concatenate(xs, axis=axis)]


@register_kernel("Pack", "Stack")
def _pack(inputs: Inputs, op: OpDesc) -> list[Array]:
    xs = _present(inputs)
    if not xs:
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}) has no inputs", where=op.name)
    return [np.stack(xs, axis=_axis(_int(op, 0, "axis"), xs[0].ndim + 1, op))]


@register_kernel("Unpack", "Unstack")
def _unpack(inputs: Inputs, op: OpDesc) -> list[Array]:
    x = _need(inputs, 0, op)
    axis = _axis(_int(op, 0, "axis"), x.ndim, op)
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


@register_kernel("SplitD", "SplitVD", "Split", "SplitV")
def _split(inputs: Inputs, op: OpDesc) -> list[Array]:
    """Split along `split_dim` (or `axis`) into the outputs' sizes along it."""
    x = _need(inputs, 0, op)
    axis = _axis(_int(op, 0, "split_dim", "axis"), x.ndim, op)
    sizes = [origin_shape(d)[axis] if len(origin_shape(d)) == x.ndim else -1 for d in op.output_descs]
    if any(s < 0 for s in sizes) or sum(sizes) != x.shape[axis]:
        raise error(
            "runtime-kernel",
            f"node '{op.name}' ({op.type}): outputs of sizes {sizes} along axis {axis} do not split {list(x.shape)}",
            where=op.name,
        )
    return list(np.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis))


@register_kernel("TransposeD", "Transpose")
def _transpose(inputs: Inputs, op: OpDesc) -> list[Array]:
    x = _need(inputs, 0, op)
    perm = _ints(op, "perm") or list(range(x.ndim))[::-1]
    return [x.transpose([_axis(p, x.ndim, op) for p in perm])]


@register_kernel("SliceD", "Slice")
def _slice(inputs: Inputs, op: OpDesc) -> list[Array]:
    x = _need(inputs, 0, op)
    offsets = _ints(op, "offsets", "begin") or [0] * x.ndim
    size = _ints(op, "size") or [-1] * x.ndim
    index = tuple(slice(o, x.shape[i] if s < 0 else o + s) for i, (o, s) in enumerate(zip(offsets, size, strict=False)))
    return [x[index]]


@register_kernel("Fill", "FillD", "ConstantOfShape", "Fills")
def _fill(inputs: Inputs, op: OpDesc) -> list[Array]:
    """The output's shape filled with the `value` attribute, else with the value input (Fill's input 1)."""
    desc = _out_desc(op)
    raw = _attr(op, "value")
    value: Any
    if isinstance(raw, list) and raw:
        value = raw[0]
    elif isinstance(raw, (int, float)):
        value = raw
    elif op.type == "Fills":
        value = _float(op, 0.0, "value")
    elif len(inputs) > 1 and inputs[1] is not None and inputs[1].size:
        value = inputs[1].reshape(-1)[0]
    else:
        value = 0
    return [np.full(origin_shape(desc), value, dtype=numpy_dtype(desc.dtype))]


# ---- reductions and normalisation --------------------------------------------------------------------------
def _reduce(fn: Callable[..., Array]) -> KernelFn:
    def kernel(inputs: Inputs, op: OpDesc) -> list[Array]:
        x = _compute(_need(inputs, 0, op))
        axes = _ints(op, "axes", "axis")
        keep = _bool(op, False, "keep_dims", "keepdims")
        ax = tuple(range(x.ndim)) if not axes else tuple(sorted({_axis(a, x.ndim, op) for a in axes}))
        return [fn(x, axis=ax, keepdims=keep)]

    return kernel


register_kernel("ReduceSumD", "ReduceSum")(_reduce(np.sum))
register_kernel("ReduceMeanD", "ReduceMean")(_reduce(np.mean))
register_kernel("ReduceMaxD", "ReduceMax")(_reduce(np.max))
register_kernel("ReduceMinD", "ReduceMin")(_reduce(np.min))
register_kernel("ReduceProdD", "ReduceProd")(_reduce(np.prod))


def _softmax_axes(op: OpDesc, rank: int) -> tuple[int, ...]:
    axes = _ints(op, "axes", "axis") or [-1]
    return tuple(sorted({_axis(a, rank, op) for a in axes}))


@register_kernel("SoftmaxV2", "Softmax")
def _softmax(inputs: Inputs, op: OpDesc) -> list[Array]:
    x = _compute(_need(inputs, 0, op))
    ax = _softmax_axes(op, x.ndim)
    e = np.exp(x - np.max(x, axis=ax, keepdims=True))
    return [e / np.sum(e, axis=ax, keepdims=True)]


@register_kernel("LogSoftmaxV2", "LogSoftmax")
def _log_softmax(inputs: Inputs, op: OpDesc) -> list[Array]:
    x = _compute(_need(inputs, 0, op))
    ax = _softmax_axes(op, x.ndim)
    shifted = x - np.max(x, axis=ax, keepdims=True)
    return [shifted - np.log(np.sum(np.exp(shifted), axis=ax, keepdims=True))]


def _channel_axis(op: OpDesc, inputs: Inputs, rank: int) -> int:
    fmt = _data_format(op, inputs)
    if rank >= 3 and fmt in ("NHWC", "NDHWC"):
        return rank - 1
    return 1 if rank >= 2 else 0


def _per_channel(v: Array, axis: int, rank: int) -> Array:
    shape = [1] * rank
    shape[axis] = -1
    return v.reshape(shape)


@register_kernel("BatchNorm", "BatchNormalization", "FusedBatchNorm", "FusedBatchNormV3")
def _batch_norm(inputs: Inputs, op: OpDesc) -> list[Array]:
    """Inference batch norm: x, scale, offset, mean, variance -> y (+ the mean and variance passed through)."""
    x = _compute(_need(inputs, 0, op))
    axis = _channel_axis(op, inputs, x.ndim)
    scale, offset, mean, var = (_compute(_need(inputs, k, op)).reshape(-1) for k in (1, 2, 3, 4))
    eps = _float(op, 1e-4, "epsilon")
    inv = scale / np.sqrt(var + eps)
    y = (x - _per_channel(mean, axis, x.ndim)) * _per_channel(inv, axis, x.ndim) + _per_channel(offset, axis, x.ndim)
    outs: list[Array] = [y]
    extras = [mean, var, mean, var, np.zeros(0, dtype=np.float32)]
    for j in range(1, len(op.output_descs)):
        want = origin_shape(op.output_descs[j])
        e = extras[j - 1] if j - 1 < len(extras) else extras[-1]
        outs.append(e.reshape(want) if e.size == math.prod(want) else np.zeros(want, dtype=np.float32))
    return outs


@register_kernel("LRN")
def _lrn(inputs: Inputs, op: OpDesc) -> list[Array]:
    """Local response normalisation across channels: TF's (depth_radius) or ONNX's (size) parameters."""
    x = _compute(_need(inputs, 0, op))
    axis = _channel_axis(op, inputs, x.ndim)
    if "size" in op.attrs:
        size = _int(op, 5, "size")
        lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
        alpha = _float(op, 1e-4, "alpha") / size
        beta, bias = _float(op, 0.75, "beta"), _float(op, 1.0, "bias")
    else:
        r = _int(op, 5, "depth_radius")
        lo = hi = r
        alpha, beta, bias = _float(op, 1.0, "alpha"), _float(op, 0.5, "beta"), _float(op, 1.0, "bias")
    sq = np.moveaxis(np.square(x), axis, 0)
    c = sq.shape[0]
    csum = np.concatenate([np.zeros((1, *sq.shape[1:]), dtype=sq.dtype), np.cumsum(sq, axis=0)], axis=0)
    idx = np.arange(c)
    window = csum[np.minimum(idx + hi, c - 1) + 1] - csum[np.maximum(idx - lo, 0)]
    window = np.moveaxis(window, 0, axis)
    return [x / np.power(bias + alpha * window, beta)]


# ---- convolution and pooling -------------------------------------------------------------------------------
def _hw(op: OpDesc, names: tuple[str, ...], fmt: str, default: int) -> tuple[int, int]:
    """A 2-D spatial parameter from a 4-element list in data-format order, or a 2-element (H, W) list."""
    v = _ints(op, *names)
    if v is None:
        return default, default
    if len(v) == 4:
        hi, wi = ("NHWC".index("H"), "NHWC".index("W")) if fmt == "NHWC" else (2, 3)
        return v[hi], v[wi]
    if len(v) == 2:
        return v[0], v[1]
    if len(v) == 1:
        return v[0], v[0]
    raise error("runtime-kernel", f"node '{op.name}' ({op.type}): attribute {names[0]} {v} is not 1, 2 or 4 values")


def _to_nchw(x: Array, fmt: str) -> Array:
    return x.transpose(0, 3, 1, 2) if fmt == "NHWC" else x


def _from_nchw(x: Array, fmt: str) -> Array:
    return x.transpose(0, 2, 3, 1) if fmt == "NHWC" else x


def _same_pads(size: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def _pads(op: OpDesc, h: int, w: int, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int) -> list[int]:
    """[top, bottom, left, right] from `padding` (SAME/VALID), else `pads`."""
    mode = _str(op, "", "padding", "auto_pad").upper()
    if mode in ("SAME", "SAME_UPPER", "SAME_LOWER"):
        t, b = _same_pads(h, kh, sh, dh)
        left, r = _same_pads(w, kw, sw, dw)
        return [b, t, r, left] if mode == "SAME_LOWER" else [t, b, left, r]
    if mode == "VALID":
        return [0, 0, 0, 0]
    p = _ints(op, "pads") or [0, 0, 0, 0]
    if len(p) == 2:
        return [p[0], p[0], p[1], p[1]]
    if len(p) != 4:
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}): pads {p} is not 2 or 4 values")
    return p


@register_kernel("Conv2D")
def _conv2d(inputs: Inputs, op: OpDesc) -> list[Array]:
    """GE's Conv2D: x in data_format, filter in its origin format (NCHW = OIHW, HWCN, NHWC), optional bias;
    strides/dilations in data-format order, pads [top, bottom, left, right] (or padding SAME/VALID), groups."""
    fmt = _data_format(op, inputs)
    x = _to_nchw(_compute(_need(inputs, 0, op)).astype(np.float32, copy=False), fmt)
    wdesc = op.input_descs[1] if len(op.input_descs) > 1 else None
    w = _compute(_need(inputs, 1, op)).astype(np.float32, copy=False)
    wfmt = _primary(wdesc.origin_format) if wdesc is not None else "NCHW"
    letters = _letters(wfmt, w.ndim) or "NCHW"
    w = _to_canonical(w, letters)  # OIHW
    groups = max(_int(op, 1, "groups", "group"), 1)
    sh, sw = _hw(op, ("strides",), fmt, 1)
    dh, dw = _hw(op, ("dilations",), fmt, 1)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if c != cg * groups or o % groups:
        raise error(
            "runtime-kernel",
            f"node '{op.name}' (Conv2D): input channels {c} do not match filter {list(w.shape)} with {groups} group(s)",
            where=op.name,
        )
    t, b, left, r = _pads(op, h, wd, kh, kw, sh, sw, dh, dw)
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)))
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    ho, wo = (xp.shape[2] - ekh) // sh + 1, (xp.shape[3] - ekw) // sw + 1
    if ho <= 0 or wo <= 0:
        raise error("runtime-kernel", f"node '{op.name}' (Conv2D): the output would be empty", where=op.name)
    win = np.lib.stride_tricks.sliding_window_view(xp, (ekh, ekw), axis=(2, 3))
    cols = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :ho, :wo]  # N, C, Ho, Wo, kh, kw
    og = o // groups
    out = np.empty((n, o, ho, wo), dtype=np.float32)
    for g in range(groups):
        part = cols[:, g * cg : (g + 1) * cg].transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, cg * kh * kw)
        wg = w[g * og : (g + 1) * og].reshape(og, cg * kh * kw)
        res = np.ascontiguousarray(part) @ np.ascontiguousarray(wg.T)
        out[:, g * og : (g + 1) * og] = res.reshape(n, ho, wo, og).transpose(0, 3, 1, 2)
    if len(inputs) > 2 and inputs[2] is not None:
        out = out + _compute(inputs[2]).astype(np.float32).reshape(1, -1, 1, 1)
    return [_from_nchw(out, fmt)]


def _pool(inputs: Inputs, op: OpDesc, kind: str) -> list[Array]:
    fmt = _data_format(op, inputs)
    x = _to_nchw(_compute(_need(inputs, 0, op)), fmt)
    h, w = x.shape[2], x.shape[3]
    if kind.startswith("global") or _bool(op, False, "global_pooling"):
        red = np.max if kind.endswith("max") else np.mean
        return [_from_nchw(red(x, axis=(2, 3), keepdims=True), fmt)]
    kh, kw = _hw(op, ("ksize", "kernel_shape", "window"), fmt, 1)
    sh, sw = _hw(op, ("strides",), fmt, 1)
    t, b, left, r = _pads(op, h, w, kh, kw, sh, sw, 1, 1)
    ceil = _bool(op, False, "ceil_mode")
    ho = (h + t + b - kh + (sh - 1 if ceil else 0)) // sh + 1
    wo = (w + left + r - kw + (sw - 1 if ceil else 0)) // sw + 1
    if ho <= 0 or wo <= 0:
        raise error("runtime-kernel", f"node '{op.name}' ({op.type}): the output would be empty", where=op.name)
    eb = max((ho - 1) * sh + kh - (h + t + b), 0)
    er = max((wo - 1) * sw + kw - (w + left + r), 0)
    pad = ((0, 0), (0, 0), (t, b + eb), (left, r + er))
    if kind == "max":
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        xp = np.pad(x, pad, constant_values=fill)
        win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw][:, :, :ho, :wo]
        return [_from_nchw(win.max(axis=(4, 5)), fmt)]
    xp = np.pad(x.astype(np.float32 if x.dtype.kind != "f" else x.dtype), pad)
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw][:, :, :ho, :wo]
    total = win.sum(axis=(4, 5))
    exclusive = _bool(op, True, "exclusive") and not _bool(op, False, "count_include_pad")
    if exclusive:
        ones = np.pad(np.ones((1, 1, h, w), dtype=xp.dtype), pad)
        cwin = np.lib.stride_tricks.sliding_window_view(ones, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw][:, :, :ho, :wo]
        count = np.maximum(cwin.sum(axis=(4, 5)), 1)
    else:
        count = np.full((1, 1, ho, wo), kh * kw, dtype=xp.dtype)
    return [_from_nchw(total / count, fmt)]


@register_kernel("MaxPool", "MaxPoolV3", "MaxPoolV2")
def _max_pool(inputs: Inputs, op: OpDesc) -> list[Array]:
    return _pool(inputs, op, "max")


@register_kernel("AvgPool", "AvgPoolV2", "AveragePool")
def _avg_pool(inputs: Inputs, op: OpDesc) -> list[Array]:
    return _pool(inputs, op, "avg")


@register_kernel("GlobalAveragePool", "GlobalAvgPool")
def _global_avg_pool(inputs: Inputs, op: OpDesc) -> list[Array]:
    return _pool(inputs, op, "global_avg")


@register_kernel("GlobalMaxPool")
def _global_max_pool(inputs: Inputs, op: OpDesc) -> list[Array]:
    return _pool(inputs, op, "global_max")


# ---- matrix products ---------------------------------------------------------------------------------------
def _t(a: Array) -> Array:
    return a if a.ndim < 2 else np.swapaxes(a, -1, -2)


@register_kernel("MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2")
def _matmul(inputs: Inputs, op: OpDesc) -> list[Array]:
    """x1 @ x2 (+ bias), with transpose_x1/transpose_x2 (adj_x1/adj_x2 for the batched forms)."""
    a = _compute(_need(inputs, 0, op)).astype(np.float32, copy=False)
    b = _compute(_need(inputs, 1, op)).astype(np.float32, copy=False)
    if _bool(op, False, "transpose_x1", "adj_x1", "transpose_a"):
        a = _t(a)
    if _bool(op, False, "transpose_x2", "adj_x2", "transpose_b"):
        b = _t(b)
    out = np.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b))
    if len(inputs) > 2 and inputs[2] is not None:
        out = out + _compute(inputs[2]).astype(np.float32)
    return [out]


@register_kernel("Gemm")
def _gemm(inputs: Inputs, op: OpDesc) -> list[Array]:
    """ONNX Gemm: alpha * op(A) @ op(B) + beta * C."""
    a = _compute(_need(inputs, 0, op)).astype(np.float32, copy=False)
    b = _compute(_need(inputs, 1, op)).astype(np.float32, copy=False)
    if _bool(op, False, "transA", "transpose_a", "transpose_x1"):  # ONNX's, TF's and GE's names
        a = _t(a)
    if _bool(op, False, "transB", "transpose_b", "transpose_x2"):
        b = _t(b)
    out = _float(op, 1.0, "alpha") * np.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b))
    if len(inputs) > 2 and inputs[2] is not None:
        out = out + _float(op, 1.0, "beta") * _compute(inputs[2]).astype(np.float32)
    return [out]


# ---- collectives -------------------------------------------------------------------------------------------
def _rank_inputs(per_rank: list[Inputs], op: OpDesc) -> list[list[Array]]:
    return [[_need(inputs, k, op) for k in range(len(inputs))] for inputs in per_rank]


@register_collective("HcomAllGather")
def _all_gather(per_rank: list[Inputs], op: OpDesc) -> list[list[Array]]:
    """Every rank's input concatenated along axis 0, in rank order, into every rank's output."""
    xs = _rank_inputs(per_rank, op)
    gathered = np.concatenate([r[0] for r in xs], axis=0)
    want = origin_shape(_out_desc(op))
    if tuple(gathered.shape) != want:
        raise error(
            "runtime-collective",
            f"node '{op.name}' (HcomAllGather): gathering {len(xs)} rank(s) of {list(xs[0][0].shape)} gives "
            f"{list(gathered.shape)}, but the output is {list(want)} (rank_size {_int(op, 1, 'rank_size')})",
            hint="run with as many ranks as the op's rank_size (--ranks)",
            where=op.name,
        )
    return [[gathered.copy()] for _ in xs]


def _reduce_ranks(arrays: list[Array], how: str, op: OpDesc) -> Array:
    acc = _compute(arrays[0]).copy()
    for a in arrays[1:]:
        b = _compute(a)
        if how == "sum":
            acc = acc + b
        elif how == "prod":
            acc = acc * b
        elif how == "max":
            acc = np.maximum(acc, b)
        elif how == "min":
            acc = np.minimum(acc, b)
        else:
            raise error("runtime-collective", f"node '{op.name}' ({op.type}): unknown reduction '{how}'", where=op.name)
    return acc


@register_collective("HcomAllReduce")
def _all_reduce(per_rank: list[Inputs], op: OpDesc) -> list[list[Array]]:
    """Every rank's inputs reduced (sum, prod, max, min) in rank order; the result on every rank."""
    xs = _rank_inputs(per_rank, op)
    how = _str(op, "sum", "reduction").lower()
    res = [_reduce_ranks([r[k] for r in xs], how, op) for k in range(len(xs[0]))]
    return [[a.copy() for a in res] for _ in xs]


@register_collective("HcomBroadcast")
def _broadcast(per_rank: list[Inputs], op: OpDesc) -> list[list[Array]]:
    """The root rank's inputs (root_rank, default 0) on every rank."""
    xs = _rank_inputs(per_rank, op)
    root = _int(op, 0, "root_rank")
    if not 0 <= root < len(xs):
        raise error("runtime-collective", f"node '{op.name}': root_rank {root} with {len(xs)} rank(s)", where=op.name)
    return [[a.copy() for a in xs[root]] for _ in xs]


@register_collective("HcomReduceScatter")
def _reduce_scatter(per_rank: list[Inputs], op: OpDesc) -> list[list[Array]]:
    """Every rank's input reduced, then split along axis 0: rank r gets part r."""
    xs = _rank_inputs(per_rank, op)
    total = _reduce_ranks([r[0] for r in xs], _str(op, "sum", "reduction").lower(), op)
    if total.shape[0] % len(xs):
        raise error(
            "runtime-collective",
            f"node '{op.name}' (HcomReduceScatter): axis 0 of {list(total.shape)} does not split over {len(xs)} ranks",
            where=op.name,
        )
    return [[part] for part in np.split(total, len(xs), axis=0)]
