"""GE's dtypes, storage formats and shape-transfer maps, computed the way GE computes them.

This module exists because the no-task checks (spec §2.4 CheckTensorAlign, §3 CheckDim) and the memory planner
(§5.1 tensor sizes) depend on GE's dtype size table, its Format enum, `TransferShapeUtils::GetAlignedShape` /
`TransferDims`. Rules reach these through the catalogue; the CheckRealDim / CheckDimAlignment walk itself is
the rules' (rules/notask_base.yaml CheckDim), cross-checked against the test oracle tests/check_dim_oracle.py.

Sources, in order of authority: `/work/shared/spec/ge_reference.md` (§2.4, §3, §5.1); where the spec is
silent, GE's public source (`hicann/ge`: transfer_shape_utils.cc, axis_util.cc, expand_dimension.cc,
notask_pass_base.cc, tensor_utils.cc, ge_tensor.cc, graph/types.h), marked "[GE source]" below; anything
that is reasoning rather than reading is marked "[inferred]".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "DTYPES",
    "FORMATS",
    "AxisMap",
    "align_up",
    "c0_of",
    "canonical_dtype",
    "canonical_format",
    "default_reshape_type",
    "dtype_size",
    "get_aligned_shape",
    "is_unknown_shape",
    "m0_of",
    "n0_of",
    "primary_format",
    "reshape_type_mask",
    "shape_size",
    "size_in_bytes",
    "tensor_mem_size",
    "tensor_raw_size",
    "transfer_dims",
    "transfer_shape",
]

_INT64_MAX = (1 << 63) - 1
_SUB_BYTE_OFFSET = 1000  # GE's kDataTypeSizeBitOffset: sizes above it are "1000 + bits"
_TENSOR_ALIGN = 32  # spec §5.1: DATA_MEMORY_ALIGN_SIZE and the default AICoreSpec.padding_size

# ----------------------------------------------------------------------------------------------------------
# DataTypes
# ----------------------------------------------------------------------------------------------------------

# GetSizeByDataType, in GE's DataType enum order (spec §2.4; the order and the three extra GE types
# dual_sub_int8, dual_sub_uint8 and hifloat4 are [GE source] graph/types.h).
_DTYPE_SIZES: dict[str, int] = {
    "float": 4,
    "float16": 2,
    "int8": 1,
    "int32": 4,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "bool": 1,
    "string": -1,
    "dual_sub_int8": 1,
    "dual_sub_uint8": 1,
    "complex64": 8,
    "complex128": 16,
    "qint8": 1,
    "qint16": 2,
    "qint32": 4,
    "quint8": 1,
    "quint16": 2,
    "resource": 8,
    "string_ref": -1,
    "dual": 5,
    "variant": 8,
    "bfloat16": 2,
    "undefined": -1,
    "int4": _SUB_BYTE_OFFSET + 4,
    "uint1": _SUB_BYTE_OFFSET + 1,
    "int2": _SUB_BYTE_OFFSET + 2,
    "uint2": _SUB_BYTE_OFFSET + 2,
    "complex32": 4,
    "hifloat8": 1,
    "float8_e5m2": 1,
    "float8_e4m3fn": 1,
    "float8_e8m0": 1,
    "float6_e3m2": _SUB_BYTE_OFFSET + 6,
    "float6_e2m3": _SUB_BYTE_OFFSET + 6,
    "float4_e2m1": _SUB_BYTE_OFFSET + 4,
    "float4_e1m2": _SUB_BYTE_OFFSET + 4,
    "hifloat4": _SUB_BYTE_OFFSET + 4,
}

_DTYPE_ALIASES: dict[str, str] = {
    "float32": "float",
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",  # also GE's own serial name DT_BF16
    "float64": "double",
}

DTYPES: tuple[str, ...] = tuple(_DTYPE_SIZES)

# k0 (= C0) per dtype from the platform label "DtypeMKN" (spec §3.5); every other dtype keeps the default 16.
_K0_BY_DTYPE: dict[str, int] = {"int8": 32, "uint8": 32, "int4": 64, "int2": 128, "uint2": 128, "uint1": 256}
_DEFAULT_MKN = 16


# the plain (unpadded, permuted) formats: each storage axis is one origin axis, named by these letters; ND and
# the 2-D/3-D names have none to permute
PLAIN_FORMAT_AXES: dict[str, str] = {
    "NCHW": "NCHW",
    "NHWC": "NHWC",
    "HWCN": "HWCN",
    "CHWN": "CHWN",
    "NCDHW": "NCDHW",
    "NDHWC": "NDHWC",
    "DHWCN": "DHWCN",
    "DHWNC": "DHWNC",
}
PLAIN_FORMATS = frozenset({"ND", "NC", "CN", "NCL", *PLAIN_FORMAT_AXES})


def keeps_origin_order(fmt: str, origin_fmt: str) -> bool:
    """Whether storage in `fmt` of a tensor whose origin format is `origin_fmt` holds its origin elements in
    origin order (a reshape at most): the same format, or two plain formats one of which is ND."""
    return fmt == origin_fmt or (fmt in PLAIN_FORMATS and origin_fmt in PLAIN_FORMATS and "ND" in (fmt, origin_fmt))


def _dtype_spellings() -> dict[str, str]:
    # the spellings graphs use (canonical, alias, GE's DT_*), so canonical_dtype is one lookup for them
    out: dict[str, str] = {}
    for key, canon in [*((k, k) for k in _DTYPE_SIZES), *_DTYPE_ALIASES.items()]:
        for spelling in (key, key.upper(), f"dt_{key}", f"DT_{key.upper()}"):
            out[spelling] = canon
    return out


_DTYPE_SPELLINGS = _dtype_spellings()
_SIZE_BY_SPELLING = {spelling: _DTYPE_SIZES[canon] for spelling, canon in _DTYPE_SPELLINGS.items()}


def canonical_dtype(name: str) -> str | None:
    """Return the canonical dtype name for `name` (alias or GE `DT_*` spelling, any case), or None."""
    canon = _DTYPE_SPELLINGS.get(name)
    if canon is not None:
        return canon
    key = name.strip().lower()
    if key.startswith("dt_"):
        key = key[3:]
    if key in _DTYPE_SIZES:
        return key
    return _DTYPE_ALIASES.get(key)


def _require_dtype(dtype: str) -> str:
    canon = canonical_dtype(dtype)
    if canon is None:
        raise ValueError(f"unknown dtype {dtype!r}")
    return canon


def dtype_size(dtype: str) -> int:
    """GE's GetSizeByDataType: bytes, 1000+bits for sub-byte types, -1 for invalid or unknown dtypes."""
    size = _SIZE_BY_SPELLING.get(dtype)  # the usual spellings, in one lookup
    if size is not None:
        return size
    canon = canonical_dtype(dtype)
    return -1 if canon is None else _DTYPE_SIZES[canon]


def size_in_bytes(count: int, dtype: str) -> int:
    """GE's GetSizeInBytes: `count` elements of `dtype` in bytes (sub-byte rounded up), -1 when invalid."""
    if count < 0:
        return -1
    size = dtype_size(dtype)
    if size < 0:
        return -1
    if size > _SUB_BYTE_OFFSET:
        bits = count * (size - _SUB_BYTE_OFFSET)
        return -1 if bits > _INT64_MAX else (bits + 7) // 8
    total = count * size
    return -1 if total > _INT64_MAX else total  # GE's int64 overflow check


def shape_size(shape: Sequence[int]) -> int:
    """GE's GeShape::GetShapeSize: 0 for no dims, first 0 → 0, first negative → -1, else the product."""
    if not shape:
        return 0
    product = 1
    # GE walks the dims in order and returns at the first 0 or negative dim: [0, -1] is 0, [-1, 0] is -1.
    for dim in shape:
        if dim < 0:
            return -1
        if dim == 0:
            return 0
        product *= dim
        if product > _INT64_MAX:
            return -1
    return product


def is_unknown_shape(shape: Sequence[int]) -> bool:
    """GE's IsUnknownShape: any dim is negative (-1 UNKNOWN_DIM, -2 UNKNOWN_DIM_NUM, ...)."""
    for dim in shape:  # a plain loop: about twice as fast as any() over a generator on short shapes  # noqa: SIM110
        if dim < 0:
            return True
    return False


def tensor_raw_size(shape: Sequence[int], dtype: str) -> int:
    """GE's CalcTensorMemSize: element count × dtype size (sub-byte rounded up); -1 if unknown or invalid."""
    # [GE source] tensor_utils.cc: the element count of no dims is 1 (a scalar), unlike GetShapeSize; the
    # first negative dim means unknown shape (-1), the first 0 dim means 0 elements. The format-specific rank
    # check GE also makes (NCHW needs 4 dims, ...) is not modelled: this function has no format.
    count = 1
    for dim in shape:
        if dim < 0:
            return -1
        if dim == 0:
            count = 0
            break
        count *= dim
        if count > _INT64_MAX:
            return -1
    canon = canonical_dtype(dtype)
    # GE sizes strings by a type-length table of its own; strings have no fixed byte size here, so they are
    # invalid like undefined [inferred, as the brief asks].
    if canon is None or canon in ("string", "string_ref"):
        return -1
    return size_in_bytes(count, canon)


def align_up(value: int, align: int) -> int:
    """Round a non-negative `value` up to a multiple of `align` (> 0)."""
    if align <= 0:
        raise ValueError(f"alignment must be positive, got {align}")
    return (value + align - 1) // align * align


def tensor_mem_size(shape: Sequence[int], dtype: str) -> int:
    """GE's allocation size (spec §5.1): align_up(raw, 32) + 32, 32 for a zero result, -1 when raw < 0."""
    return mem_size_of_raw(tensor_raw_size(shape, dtype))


def mem_size_of_raw(raw: int) -> int:
    """The allocation size of a tensor of `raw` bytes (see tensor_mem_size); -1 when raw < 0."""
    if raw < 0:
        return -1
    size = align_up(raw, _TENSOR_ALIGN) + _TENSOR_ALIGN
    return size if size != 0 else _TENSOR_ALIGN


# ----------------------------------------------------------------------------------------------------------
# Formats
# ----------------------------------------------------------------------------------------------------------

# GE's Format enum (graph/types.h). Values 0–49 are not from memory: they were checked against stored copies
# of GE's public headers (the C `C_FORMAT_*` enum and its Python mirrors), which agree.
_FORMAT_VALUES: dict[str, int] = {
    "NCHW": 0,
    "NHWC": 1,
    "ND": 2,
    "NC1HWC0": 3,
    "FRACTAL_Z": 4,
    "NC1C0HWPAD": 5,
    "NHWC1C0": 6,
    "FSR_NCHW": 7,
    "FRACTAL_DECONV": 8,
    "C1HWNC0": 9,
    "FRACTAL_DECONV_TRANSPOSE": 10,
    "FRACTAL_DECONV_SP_STRIDE_TRANS": 11,
    "NC1HWC0_C04": 12,
    "FRACTAL_Z_C04": 13,
    "CHWN": 14,
    "FRACTAL_DECONV_SP_STRIDE8_TRANS": 15,
    "HWCN": 16,
    "NC1KHKWHWC0": 17,
    "BN_WEIGHT": 18,
    "FILTER_HWCK": 19,
    "HASHTABLE_LOOKUP_LOOKUPS": 20,
    "HASHTABLE_LOOKUP_KEYS": 21,
    "HASHTABLE_LOOKUP_VALUE": 22,
    "HASHTABLE_LOOKUP_OUTPUT": 23,
    "HASHTABLE_LOOKUP_HITS": 24,
    "C1HWNCoC0": 25,
    "MD": 26,
    "NDHWC": 27,
    "FRACTAL_ZZ": 28,
    "FRACTAL_NZ": 29,
    "NCDHW": 30,
    "DHWCN": 31,
    "NDC1HWC0": 32,
    "FRACTAL_Z_3D": 33,
    "CN": 34,
    "NC": 35,
    "DHWNC": 36,
    "FRACTAL_Z_3D_TRANSPOSE": 37,
    "FRACTAL_ZN_LSTM": 38,
    "FRACTAL_Z_G": 39,
    "RESERVED": 40,
    "ALL": 41,
    "NULL": 42,
    "ND_RNN_BIAS": 43,
    "FRACTAL_ZN_RNN": 44,
    "NYUV": 45,
    "NYUV_A": 46,
    "NCL": 47,
    "FRACTAL_Z_WINO": 48,
    "C1HWC0": 49,
}

# The NZ C0 variants are modelled, as the project brief asks, as FRACTAL_NZ with the C0-format bits 24–27
# set (c0 = 2^(c0_format-1), spec §3.4), so their primary format is FRACTAL_NZ. Current GE instead declares
# them as enum values of their own (FRACTAL_NZ_C0_16=50, _C0_32=51, _C0_2=52, _C0_4=53, _C0_8=54) listed
# beside FRACTAL_NZ in kFormatNZSet; the only observable difference is a FRACTAL_NZ ↔ FRACTAL_NZ_C0_x pair,
# which is ND_TO_ND here and ND_TO_NZ in GE.
_NZ_C0_VARIANTS: dict[str, int] = {f"FRACTAL_NZ_C0_{c0}": c0 for c0 in (2, 4, 8, 16, 32)}
for _name, _c0 in _NZ_C0_VARIANTS.items():
    _FORMAT_VALUES[_name] = _FORMAT_VALUES["FRACTAL_NZ"] | ((_c0.bit_length()) << 24)

FORMATS: tuple[str, ...] = tuple(_FORMAT_VALUES)

_FORMAT_BY_KEY: dict[str, str] = {name.upper(): name for name in FORMATS}
# the spellings graphs use (canonical, FORMAT_*), so canonical_format is one lookup for them
_FORMAT_SPELLINGS: dict[str, str] = {**{name: name for name in FORMATS}, **{f"FORMAT_{name}": name for name in FORMATS}}
_FORMAT_BY_VALUE: dict[int, str] = {value: name for name, value in _FORMAT_VALUES.items() if value <= 0xFF}


def canonical_format(name: str) -> str | None:
    """Return the canonical Format name for `name` (any case, optional `FORMAT_` prefix), or None."""
    canon = _FORMAT_SPELLINGS.get(name)
    if canon is not None:
        return canon
    key = name.strip().upper()
    if key.startswith("FORMAT_"):
        key = key[len("FORMAT_") :]
    return _FORMAT_BY_KEY.get(key)


def _require_format(fmt: str) -> str:
    canon = canonical_format(fmt)
    if canon is None:
        raise ValueError(f"unknown format {fmt!r}")
    return canon


def primary_format(fmt: str) -> str:
    """GE's GetPrimaryFormat (`format & 0xff`) by name; raises ValueError for an unknown format."""
    return _FORMAT_BY_VALUE[_FORMAT_VALUES[_require_format(fmt)] & 0xFF]


def _c0_bits_value(fmt: str) -> int | None:
    c0_format = (_FORMAT_VALUES[fmt] >> 24) & 0xF
    return None if c0_format == 0 else 1 << (c0_format - 1)


def c0_of(dtype: str) -> int:
    """The k0 (C0) GetAlignedShape uses for `dtype` (spec §3.5); raises ValueError for an unknown dtype."""
    return _K0_BY_DTYPE.get(_require_dtype(dtype), _DEFAULT_MKN)


def m0_of(dtype: str) -> int:
    """The M0 GetAlignedShape uses for `dtype`: 16 for every dtype (spec §3.5)."""
    _require_dtype(dtype)
    return _DEFAULT_MKN


def n0_of(dtype: str) -> int:
    """The N0 GetAlignedShape uses for `dtype`: 16 for every dtype (spec §3.5)."""
    _require_dtype(dtype)
    return _DEFAULT_MKN


# ----------------------------------------------------------------------------------------------------------
# Axis tables of the transformer library (spec §3.4). All lookups are by primary format, as in GE.
# ----------------------------------------------------------------------------------------------------------

_FULL_SIZE: dict[str, int] = {
    "NCHW": 4,
    "NHWC": 4,
    "HWCN": 4,
    "CHWN": 4,
    "ND": 4,
    "NDHWC": 5,
    "NCDHW": 5,
    "DHWCN": 5,
    "DHWNC": 5,
}

_AXIS_VEC: dict[str, tuple[str, ...]] = {
    "NCHW": ("N", "C", "H", "W"),
    "HWCN": ("H", "W", "C", "N"),
    "NHWC": ("N", "H", "W", "C"),
    "CHWN": ("C", "H", "W", "N"),
    "NDHWC": ("N", "D", "H", "W", "C"),
    "NCDHW": ("N", "C", "D", "H", "W"),
    "DHWCN": ("D", "H", "W", "C", "N"),
    "DHWNC": ("D", "H", "W", "N", "C"),
    "NC1HWC0": ("N", "C1", "H", "W", "C0"),
    "NDC1HWC0": ("N", "D", "C1", "H", "W", "C0"),
    "FRACTAL_Z": ("C1HW", "N1", "N0", "C0"),
}
# [GE source] kFormatAxisIndexMap covers exactly the formats of kFormatAxisVec, with the same positions.
_AXIS_INDEX: dict[str, dict[str, int]] = {
    fmt: {axis: i for i, axis in enumerate(axes)} for fmt, axes in _AXIS_VEC.items()
}

_C_SPLIT: dict[str, tuple[str, ...]] = {"C": ("C1", "C0"), "C1": ("C",), "C0": ("C",)}
_SPLIT_MAP: dict[str, dict[str, tuple[str, ...]]] = {
    "NC1HWC0": _C_SPLIT,
    "NDC1HWC0": _C_SPLIT,
    "FRACTAL_Z": {
        "N": ("N1", "N0"),
        "C": ("C1HW", "C0"),
        "H": ("C1HW",),
        "W": ("C1HW",),
        "C1HW": ("C", "H", "W"),
        "N1": ("N",),
        "N0": ("N",),
        "C0": ("C",),
    },
}

_NZ_PRIMARIES = frozenset({"FRACTAL_NZ"})  # kFormatNZSet after primary reduction (see _NZ_C0_VARIANTS)

# [GE source] expand_dimension.cc DEFAULT_RESHAPE_TYPE (spec §3.4 lists a subset).
_DEFAULT_RESHAPE_TYPE: dict[tuple[str, int], str] = {
    **{(fmt, 0): "" for fmt in ("NCHW", "NHWC", "HWCN", "CHWN", "NDHWC", "NCDHW", "DHWCN", "DHWNC")},
    **{(fmt, 1): "C" for fmt in ("NCHW", "NHWC", "HWCN", "CHWN", "NDHWC", "NCDHW", "DHWCN", "DHWNC")},
    ("NCHW", 2): "CH",
    ("NHWC", 2): "HW",
    ("HWCN", 2): "CN",
    ("CHWN", 2): "WN",
    ("NDHWC", 2): "WC",
    ("NCDHW", 2): "HW",
    ("DHWCN", 2): "CN",
    ("DHWNC", 2): "NC",
    ("NCHW", 3): "CHW",
    ("NHWC", 3): "HWC",
    ("HWCN", 3): "WCN",
    ("CHWN", 3): "HWN",
    ("NDHWC", 3): "HWC",
    ("NCDHW", 3): "DHW",
    ("DHWCN", 3): "WCN",
    ("DHWNC", 3): "WNC",
    ("NDHWC", 4): "DHWC",
    ("NCDHW", 4): "CDHW",
    ("DHWCN", 4): "HWCN",
    ("DHWNC", 4): "HWNC",
}
# [GE source] dst formats for which ExpandDimension never expands (kSupportedTransFormat, by primary).
_NO_EXPAND_DST = frozenset({"ND", "FRACTAL_NZ", "ND_RNN_BIAS", "FRACTAL_ZN_RNN"})
_RESHAPE_FORBIDDEN = "FORBIDDEN"
_RESHAPE_FULL_SIZE_SHIFT = 56


def _split(fmt: str, axis: str) -> tuple[str, ...]:
    return _SPLIT_MAP.get(fmt, {}).get(axis, ())


def _axis_index(fmt: str, axis: str) -> int:
    return _AXIS_INDEX.get(fmt, {}).get(axis, -1)


def _as_int64(value: int) -> int:
    # The mask is an int64 tensor attribute in GE; bit 63 makes it negative.
    value &= (1 << 64) - 1
    return value - (1 << 64) if value > _INT64_MAX else value


def _kept_axes(src: str, mask: int) -> tuple[str, ...]:
    # GetReshapeTypeAxisVec: the full-format axes whose mask bit is 0.
    return tuple(axis for i, axis in enumerate(_AXIS_VEC.get(src, ())) if not (mask >> i) & 1)


def _transfer_type(src: str, dst: str, rank: int) -> str:
    # GetTransferShapeType on primary formats (spec §3.4).
    if src == dst:
        return "ND_TO_ND"
    if src == "ND" or dst in _NZ_PRIMARIES:
        return "ND_TO_NZ"
    full = _FULL_SIZE.get(src)
    if full is None:
        return "INVALID"
    if rank == full:
        return "FULL_SIZE"
    if rank < full:
        return "NOT_FULL_SIZE"
    return "INVALID"


def _aligned_value(dst: str, axis: str, c0: int, n0: int) -> int:
    if len(_split(dst, axis)) > 1:
        return n0 if axis == "N" else c0 if axis == "C" else 1
    return 1


@lru_cache(maxsize=4096)
def _aligned_shape(src: str, dst: str, rank: int, dtype: str, mask: int) -> tuple[int, ...] | None:
    # Depends on the origin shape only through its rank, hence cached on it.
    kind = _transfer_type(src, dst, rank)
    if kind == "ND_TO_ND":
        return (1,) * rank
    c0, n0 = c0_of(dtype), n0_of(dtype)
    if kind == "ND_TO_NZ":
        if rank < 2 or dst not in _NZ_PRIMARIES:
            return None
        return (1,) * (rank - 2) + (m0_of(dtype), c0)
    if kind == "FULL_SIZE":
        axes = _AXIS_VEC.get(src, ())
    elif kind == "NOT_FULL_SIZE":
        if mask <= 0:
            return None
        axes = _kept_axes(src, mask)
    else:
        return None
    if not axes:
        return None
    return tuple(_aligned_value(dst, axis, c0, n0) for axis in axes)


def get_aligned_shape(
    origin_format: str, format: str, origin_shape: Sequence[int], dtype: str, reshape_type_mask: int = 0
) -> tuple[int, ...] | None:
    """TransferShapeUtils::GetAlignedShape: per-origin-axis alignment, or None where GE fails."""
    src, dst, canon_dtype = canonical_format(origin_format), canonical_format(format), canonical_dtype(dtype)
    if src is None or dst is None or canon_dtype is None:
        return None
    return _aligned_shape(
        primary_format(src), primary_format(dst), len(origin_shape), canon_dtype, _as_int64(reshape_type_mask)
    )


@dataclass(frozen=True)
class AxisMap:
    """GE's AxisIndexMapping: storage axes per origin axis and origin axes per storage axis (-1: none)."""

    src_to_dst: tuple[tuple[int, ...], ...]
    dst_to_src: tuple[tuple[int, ...], ...]


@lru_cache(maxsize=4096)
def _transfer_dims(src: str, dst: str, rank: int, mask: int) -> AxisMap | None:
    kind = _transfer_type(src, dst, rank)
    if kind == "ND_TO_ND":
        identity = tuple((i,) for i in range(rank))
        return AxisMap(identity, identity)
    if kind == "ND_TO_NZ":
        if rank < 2 or dst not in _NZ_PRIMARIES:
            return None
        # The last two origin axes swap places; the two trailing storage axes (m0, c0) have no origin axis.
        src_to_dst: tuple[tuple[int, ...], ...] = (*((i,) for i in range(rank - 2)), (rank - 1,), (rank - 2,))
        return AxisMap(src_to_dst, (*src_to_dst, (-1,), (-1,)))
    if kind == "FULL_SIZE":
        src_axes = _AXIS_VEC.get(src, ())
        shift: dict[str, int] = dict.fromkeys(src_axes, 0)
    elif kind == "NOT_FULL_SIZE":
        if mask <= 0:
            return None
        src_axes = _kept_axes(src, mask)
        # GetReshapeTypeAxisMap: a kept axis's origin index is its full-format index minus the expanded
        # (bit = 1) axes before it; expanded axes are absent and map to -1.
        shift = {}
        expanded = 0
        for i, axis in enumerate(_AXIS_VEC.get(src, ())):
            if (mask >> i) & 1:
                expanded += 1
            else:
                shift[axis] = expanded
    else:
        return None
    dst_axes = _AXIS_VEC.get(dst, ())
    if not src_axes or not dst_axes:
        return None
    src_to_dst = tuple(tuple(_axis_index(dst, part) for part in _split(dst, a) or (a,)) for a in src_axes)

    def origin_index(axis: str) -> int:
        index = _axis_index(src, axis)
        return -1 if index < 0 or axis not in shift else index - shift[axis]

    dst_to_src = tuple(tuple(origin_index(part) for part in _split(dst, a) or (a,)) for a in dst_axes)
    return AxisMap(src_to_dst, dst_to_src)


def transfer_dims(
    origin_format: str, format: str, origin_shape: Sequence[int], reshape_type_mask: int = 0
) -> AxisMap | None:
    """TransferShapeUtils::TransferDims: the origin ↔ storage axis map, or None where GE fails."""
    src, dst = canonical_format(origin_format), canonical_format(format)
    if src is None or dst is None:
        return None
    mask = _as_int64(reshape_type_mask)
    return _transfer_dims(primary_format(src), primary_format(dst), len(origin_shape), mask)


# ----------------------------------------------------------------------------------------------------------
# Reshape types (ExpandDimension)
# ----------------------------------------------------------------------------------------------------------


def default_reshape_type(origin_format: str, rank: int) -> str | None:
    """ExpandDimension's default reshape type for an origin format and rank (e.g. NCHW, 2 → "CH"), or None."""
    src = canonical_format(origin_format)
    return None if src is None else _DEFAULT_RESHAPE_TYPE.get((src, rank))


def _reshape_type_valid(src: str, rank: int, reshape_type: str) -> bool:
    # IsReshapeTypeValid: letters of the origin format (case-sensitive), strictly in the format's axis order.
    # ND has no axis letters, so every non-empty reshape type is invalid for it.
    if not reshape_type:
        return rank == 0
    last = -1
    for letter in reshape_type:
        index = _axis_index(src, letter)
        if index <= last:
            return False
        last = index
    return True


def _expand_needed(src: str, dst_primary: str | None, rank: int, full: int, reshape_type: str) -> bool:
    # ExpandDimension::IsNeedExpand.
    if rank >= full or reshape_type == _RESHAPE_FORBIDDEN:
        return False
    if dst_primary is None:
        return True
    return dst_primary not in _NO_EXPAND_DST and not (src == "ND" and dst_primary == "FRACTAL_Z")


def _effective_reshape_type(src: str, rank: int, reshape_type: str) -> str | None:
    valid = reshape_type if _reshape_type_valid(src, rank, reshape_type) else default_reshape_type(src, rank)
    if valid is None or rank > len(valid):
        return None
    return valid[:rank]


def reshape_type_mask(
    origin_format: str, reshape_type: str, *, format: str | None = None, rank: int | None = None
) -> int:
    """ExpandDimension::GenerateReshapeType: bits of absent full-format axes | full_size << 56; 0 if none."""
    # `rank` defaults to the number of axes the reshape type names; `format` (the storage format), when given,
    # applies GE's "no expansion towards ND / NZ / RNN formats" rule. Invalid reshape types fall back to the
    # default one for the rank, as in GE.
    src = canonical_format(origin_format)
    if src is None or src not in _FULL_SIZE:
        return 0
    full = _FULL_SIZE[src]
    origin_rank = len(reshape_type) if rank is None else rank
    dst_primary = None if format is None else canonical_format(format)
    if format is not None and dst_primary is None:
        return 0
    if dst_primary is not None:
        dst_primary = primary_format(dst_primary)
    if origin_rank < 0 or not _expand_needed(src, dst_primary, origin_rank, full, reshape_type):
        return 0
    valid = _effective_reshape_type(src, origin_rank, reshape_type)
    if valid is None:
        return 0
    present = {_axis_index(src, letter) for letter in valid}
    mask = 0
    for i in range(full):
        if i not in present:
            mask |= 1 << i
    return mask | (full << _RESHAPE_FULL_SIZE_SHIFT)


# ----------------------------------------------------------------------------------------------------------
# TransferShape: the storage shape of an origin shape
# ----------------------------------------------------------------------------------------------------------

# [GE source] kFormatIndexMap: where N, C, H, W, D sit in an origin shape (ND reads as NCHW / NCDHW order).
_NCHWD_INDEX: dict[str, tuple[int, int, int, int, int]] = {
    "NCHW": (0, 1, 2, 3, 4),
    "NHWC": (0, 3, 1, 2, 4),
    "HWCN": (3, 2, 0, 1, 4),
    "CHWN": (3, 0, 1, 2, 4),
    "ND": (0, 1, 2, 3, 4),
    "NCDHW": (0, 1, 3, 4, 2),
    "NDHWC": (0, 4, 2, 3, 1),
    "DHWCN": (4, 3, 1, 2, 0),
    "DHWNC": (3, 4, 1, 2, 0),
}
_ORIGIN_FORMATS = frozenset(_NCHWD_INDEX)
_PERMUTATION_FORMATS = frozenset(_FULL_SIZE) - {"ND"}


def _ceil_div(value: int, divisor: int) -> int:
    # An unknown dim stays unknown [inferred: GE's DivisionCeiling of -1 is not a meaningful size].
    return -1 if value < 0 else -(-value // divisor)


def _product(*dims: int) -> int:
    result = 1
    for dim in dims:
        if dim < 0:
            return -1
        result *= dim
    return result


def _expand_dims(src: str, dst: str, shape: tuple[int, ...], reshape_type: str | None) -> tuple[int, ...]:
    # ExpandDimension runs before TransferShape in GE: a rank-deficient origin shape is padded with 1s to the
    # origin format's full size, each dim placed at the axis its reshape-type letter names.
    full = _FULL_SIZE.get(src)
    rank = len(shape)
    given = "" if reshape_type is None else reshape_type
    if full is None or not _expand_needed(src, dst, rank, full, given):
        return shape
    valid = _effective_reshape_type(src, rank, given)
    if valid is None:
        return shape
    expanded = [1] * full
    for dim, letter in zip(shape, valid, strict=True):
        expanded[_axis_index(src, letter)] = dim
    return tuple(expanded)


def transfer_shape(
    origin_format: str,
    format: str,
    origin_shape: Sequence[int],
    dtype: str,
    *,
    reshape_type: str | None = None,
) -> tuple[int, ...] | None:
    """The storage shape GE gives `origin_shape` in `format` (TransferShape), or None where not modelled."""
    src_name, dst_name, canon_dtype = (
        canonical_format(origin_format),
        canonical_format(format),
        canonical_dtype(dtype),
    )
    if src_name is None or dst_name is None or canon_dtype is None or canon_dtype == "undefined":
        return None
    src, dst = primary_format(src_name), primary_format(dst_name)
    shape = tuple(int(dim) for dim in origin_shape)
    if src == dst or (src == "ND" and dst in _ORIGIN_FORMATS) or not shape:
        return shape  # IsNeedTransferShape: nothing to transfer
    if "RESERVED" in (src, dst):
        return None  # CheckInputParam
    # GetC0Value: the C0 of a C04 / NZ-C0 format wins over the dtype's k0.
    c0 = 4 if dst == "NC1HWC0_C04" else _c0_bits_value(dst_name) or c0_of(canon_dtype)
    if dst in _NZ_PRIMARIES:
        # (..., a, b) -> (..., ceil(b/c0), ceil(a/m0), m0, c0); GE reads a 1-D shape (b,) as (b, 1).
        a, b = (shape[0], 1) if len(shape) == 1 else (shape[-2], shape[-1])
        m0 = m0_of(canon_dtype)
        return (*shape[:-2], _ceil_div(b, c0), _ceil_div(a, m0), m0, c0)
    shape = _expand_dims(src, dst, shape, reshape_type)
    rank = len(shape)
    if dst == "FRACTAL_Z" and rank == 2:
        return (_ceil_div(shape[0], c0), _ceil_div(shape[1], 16), 16, c0)
    index = _NCHWD_INDEX.get(src)
    origin_full = 4 if src == "ND" and rank == 4 else _FULL_SIZE.get(src)
    if index is None or origin_full is None or rank != origin_full:
        return None
    # GE also "transfers" a 5-D origin into 4-D formats by dropping D; that does not describe the same tensor,
    # so only origins of the matching family are modelled (ND counts as NCHW when it has 4 dims).
    n, c, h, w = (shape[index[k]] for k in range(4))
    d = shape[index[4]] if rank == 5 else 1
    if dst in _PERMUTATION_FORMATS:
        if _FULL_SIZE[dst] != rank:
            return None
        by_axis = {"N": n, "C": c, "H": h, "W": w, "D": d}
        return tuple(by_axis[axis] for axis in _AXIS_VEC[dst])
    if dst in ("NC1HWC0", "NC1HWC0_C04") and rank == 4:
        return (n, _ceil_div(c, c0), h, w, c0)
    if dst == "NDC1HWC0":
        return (n, d, _ceil_div(c, c0), h, w, c0)
    if dst == "FRACTAL_Z" and rank == 4:
        c1hw = -1 if min(c, h, w) < 0 else _product(_ceil_div(c, c0), h, w)
        n0 = n0_of(canon_dtype)
        return (c1hw, _ceil_div(n, n0), n0, c0)
    return None
