"""Tests for rulepass.compiler.formats: every worked example of spec §3.6, dtype sizes and tensor sizes; the
worked examples also pin the CheckDim test oracle (tests/check_dim_oracle.py)."""

from __future__ import annotations

import pytest
from check_dim_oracle import check_dim_for_input
from rulepass.compiler.formats import (
    DTYPES,
    FORMATS,
    AxisMap,
    align_up,
    c0_of,
    canonical_dtype,
    canonical_format,
    default_reshape_type,
    dtype_size,
    get_aligned_shape,
    is_unknown_shape,
    m0_of,
    n0_of,
    primary_format,
    reshape_type_mask,
    shape_size,
    size_in_bytes,
    tensor_mem_size,
    tensor_raw_size,
    transfer_dims,
    transfer_shape,
)

P = pytest.param
FP16 = "float16"
I8 = "int8"
# Spec §3.4 / §3.6: NCHW with reshape type "CH" expands N and W (bits 0 and 3); full size 4 sits in bits 56+.
MASK_CH = 0b1001 | (4 << 56)
MASK_HW = 0b0011 | (4 << 56)  # NCHW "HW": N and C expanded
MASK_CHW = 0b0001 | (4 << 56)  # NCHW "CHW": only N expanded, three kept axes

# The two reason strings the brief quotes, kept literal so their wording is pinned.
N_NOT_1 = "CheckRealDim: storage axis 0 is 2, not 1"
C31 = "CheckDimAlignment: 31 % 16 != 0"
ALIGN_FAILED = "GetAlignedShape failed"
DIMS_FAILED = "TransferDims failed"


def front(axis: int, value: int) -> str:
    """Reason for a storage axis before the real axis that is not 1."""
    return f"CheckRealDim: storage axis {axis} is {value}, not 1"


def unaligned(value: int, align: int) -> str:
    """Reason for padding on the concat axis."""
    return f"CheckDimAlignment: {value} % {align} != 0"


def merged_not_1(axis: int, value: int) -> str:
    """Reason for a plain origin axis before d in the merged C1HW axis that is not 1."""
    return f"CheckRealDim: origin axis {axis} is {value}, not 1 (merged into storage axis 0)"


def merged_too_big(axis: int, value: int) -> str:
    """Reason for a split origin axis before d whose outer part is the merged axis but exceeds one block."""
    return f"CheckRealDim: origin axis {axis} is {value} > aligned 16 in merged storage axis 0"


# ---------------------------------------------------------------------------------------------------------
# §3.6 worked examples through CheckDimForInput
# ---------------------------------------------------------------------------------------------------------

CHECK_DIM_ARGS = "origin_format, fmt, origin, storage, dtype, dim, mask, expected"
# fmt: off
CHECK_DIM_CASES = [
    # ND -> ND (same primary): A all 1, real = d, storage axes before d must be 1.
    P("ND", "ND", [2048, 12288], [2048, 12288], FP16, 0, 0, None, id="nd-nd-d0"),
    P("ND", "ND", [2, 12288], [2, 12288], FP16, 1, 0, N_NOT_1, id="nd-nd-d1-front"),
    # NCHW -> NC1HWC0 (full size).
    P("NCHW", "NC1HWC0", [2, 32, 16, 16], [2, 2, 16, 16, 16], FP16, 0, 0, None, id="nchw-5hd-dN"),
    P("NCHW", "NC1HWC0", [1, 32, 16, 16], [1, 2, 16, 16, 16], FP16, 1, 0, None, id="nchw-5hd-dC"),
    P("NCHW", "NC1HWC0", [1, 31, 16, 16], [1, 2, 16, 16, 16], FP16, 1, 0, C31, id="nchw-5hd-dC-31"),
    P("NCHW", "NC1HWC0", [2, 32, 16, 16], [2, 2, 16, 16, 16], FP16, 1, 0, N_NOT_1, id="nchw-5hd-dC-N"),
    P("NCHW", "NC1HWC0", [1, 64, 4, 4], [1, 2, 4, 4, 32], I8, 1, 0, None, id="nchw-5hd-int8-dC"),
    P("NCHW", "NC1HWC0", [1, 48, 4, 4], [1, 2, 4, 4, 32], I8, 1, 0, unaligned(48, 32), id="nchw-5hd-int8-48"),
    P("NCHW", "NC1HWC0", [1, 16, 4, 8], [1, 1, 4, 8, 16], FP16, 2, 0, None, id="nchw-5hd-dH-C-le-c0"),
    P("NCHW", "NC1HWC0", [1, 32, 4, 8], [1, 2, 4, 8, 16], FP16, 2, 0, front(1, 2), id="nchw-5hd-dH-C1"),
    P("NCHW", "NC1HWC0", [1, 16, 1, 8], [1, 1, 1, 8, 16], FP16, 3, 0, None, id="nchw-5hd-dW"),
    P("NCHW", "NC1HWC0", [1, 16, 2, 8], [1, 1, 2, 8, 16], FP16, 3, 0, front(2, 2), id="nchw-5hd-dW-H"),
    # NHWC -> NC1HWC0; the ST example has d=-1, which the caller normalises to -1 + 4 = 3.
    P("NHWC", "NC1HWC0", [1, 256, 256, 2], [1, 1, 256, 256, 16], FP16, -1 + 4, 0, unaligned(2, 16),
      id="nhwc-5hd-st-dC-2"),
    P("NHWC", "NC1HWC0", [1, 4, 4, 32], [1, 2, 4, 4, 16], FP16, 3, 0, None, id="nhwc-5hd-dC"),
    P("NHWC", "NC1HWC0", [2, 4, 4, 32], [2, 2, 4, 4, 16], FP16, 3, 0, N_NOT_1, id="nhwc-5hd-dC-N"),
    # NCHW -> HWCN: pure permutation; d=N lands on storage axis 3, so H, W, C must all be 1.
    P("NCHW", "HWCN", [4, 2, 3, 5], [3, 5, 2, 4], FP16, 0, 0, front(0, 3), id="nchw-hwcn-dN-H"),
    P("NCHW", "HWCN", [4, 1, 1, 1], [1, 1, 1, 4], FP16, 0, 0, None, id="nchw-hwcn-dN"),
    # NDHWC -> NDC1HWC0.
    P("NDHWC", "NDC1HWC0", [1, 1, 4, 4, 32], [1, 1, 2, 4, 4, 16], FP16, 4, 0, None, id="ndhwc-dC"),
    P("NDHWC", "NDC1HWC0", [1, 2, 4, 4, 32], [1, 2, 2, 4, 4, 16], FP16, 4, 0, front(1, 2), id="ndhwc-dC-D"),
    P("NDHWC", "NDC1HWC0", [1, 1, 4, 4, 24], [1, 1, 2, 4, 4, 16], FP16, 4, 0, unaligned(24, 16),
      id="ndhwc-dC-24"),
    P("NDHWC", "NDC1HWC0", [1, 3, 4, 4, 32], [1, 3, 2, 4, 4, 16], FP16, 1, 0, None, id="ndhwc-dD"),
    P("NDHWC", "NDC1HWC0", [2, 3, 4, 4, 32], [2, 3, 2, 4, 4, 16], FP16, 1, 0, N_NOT_1, id="ndhwc-dD-N"),
    P("NDHWC", "NDC1HWC0", [1, 1, 4, 4, 16], [1, 1, 1, 4, 4, 16], FP16, 2, 0, None, id="ndhwc-dH"),
    P("NDHWC", "NDC1HWC0", [1, 1, 4, 4, 32], [1, 1, 2, 4, 4, 16], FP16, 2, 0, front(2, 2), id="ndhwc-dH-C1"),
    # NCDHW -> NDC1HWC0: same rules by letter.
    P("NCDHW", "NDC1HWC0", [1, 32, 1, 4, 4], [1, 1, 2, 4, 4, 16], FP16, 1, 0, None, id="ncdhw-dC"),
    P("NCDHW", "NDC1HWC0", [1, 32, 2, 4, 4], [1, 2, 2, 4, 4, 16], FP16, 1, 0, front(1, 2), id="ncdhw-dC-D"),
    # HWCN -> FRACTAL_Z (weights): storage axis 0 is C1HW, merged from (C, H, W).
    P("HWCN", "FRACTAL_Z", [2, 2, 32, 16], [8, 1, 16, 16], FP16, 2, 0, None, id="hwcn-fz-dC"),
    P("HWCN", "FRACTAL_Z", [2, 2, 3, 16], [4, 1, 16, 16], FP16, 2, 0, unaligned(3, 16), id="hwcn-fz-dC-3"),
    P("HWCN", "FRACTAL_Z", [1, 2, 3, 16], [2, 1, 16, 16], FP16, 0, 0, None, id="hwcn-fz-dH-C-le-16"),
    P("HWCN", "FRACTAL_Z", [1, 2, 3, 16], [2, 1, 16, 16], FP16, 1, 0, None, id="hwcn-fz-dW"),
    P("HWCN", "FRACTAL_Z", [2, 2, 3, 16], [4, 1, 16, 16], FP16, 1, 0, merged_not_1(0, 2), id="hwcn-fz-dW-H"),
    P("HWCN", "FRACTAL_Z", [2, 1, 32, 32], [4, 2, 16, 16], FP16, 1, 0, merged_too_big(2, 32),
      id="hwcn-fz-dW-C-gt-16"),
    P("HWCN", "FRACTAL_Z", [1, 1, 16, 32], [1, 2, 16, 16], FP16, 3, 0, None, id="hwcn-fz-dN"),
    P("HWCN", "FRACTAL_Z", [1, 1, 32, 16], [2, 1, 16, 16], FP16, 3, 0, N_NOT_1, id="hwcn-fz-dN-C1HW"),
    P("HWCN", "FRACTAL_Z", [1, 1, 16, 8], [1, 1, 16, 16], FP16, 3, 0, unaligned(8, 16), id="hwcn-fz-dN-8"),
    # NCHW -> FRACTAL_Z: same rules by letter (UT CheckRealConcatDimTest).
    P("NCHW", "FRACTAL_Z", [16, 32, 1, 1], [2, 1, 16, 16], FP16, 1, 0, None, id="nchw-fz-dC"),
    P("NCHW", "FRACTAL_Z", [32, 16, 1, 1], [1, 2, 16, 16], FP16, 0, 0, None, id="nchw-fz-dN"),
    P("NCHW", "FRACTAL_Z", [32, 32, 1, 1], [2, 2, 16, 16], FP16, 0, 0, N_NOT_1, id="nchw-fz-dN-C1HW"),
    P("NCHW", "FRACTAL_Z", [16, 16, 2, 3], [6, 1, 16, 16], FP16, 2, 0, None, id="nchw-fz-dH-C-le-16"),
    P("NCHW", "FRACTAL_Z", [16, 32, 2, 3], [12, 1, 16, 16], FP16, 2, 0, merged_too_big(1, 32),
      id="nchw-fz-dH-C-gt-16"),
    # ND (or any origin) -> FRACTAL_NZ: (..., a, b) -> (..., ceil(b/c0), ceil(a/16), 16, c0).
    P("ND", "FRACTAL_NZ", [4, 32, 48], [4, 3, 2, 16, 16], FP16, 0, 0, None, id="nz-batch"),
    P("ND", "FRACTAL_NZ", [4, 32, 48], [4, 3, 2, 16, 16], FP16, 1, 0, front(0, 4), id="nz-rows-batch"),
    P("ND", "FRACTAL_NZ", [1, 32, 16], [1, 1, 2, 16, 16], FP16, 1, 0, None, id="nz-rows"),
    P("ND", "FRACTAL_NZ", [1, 32, 48], [1, 3, 2, 16, 16], FP16, 1, 0, front(1, 3), id="nz-rows-col-blocks"),
    P("ND", "FRACTAL_NZ", [1, 24, 16], [1, 1, 2, 16, 16], FP16, 1, 0, unaligned(24, 16), id="nz-rows-24"),
    P("ND", "FRACTAL_NZ", [1, 32, 48], [1, 3, 2, 16, 16], FP16, 2, 0, None, id="nz-cols"),
    P("ND", "FRACTAL_NZ", [1, 32, 40], [1, 3, 2, 16, 16], FP16, 2, 0, unaligned(40, 16), id="nz-cols-40"),
    P("ND", "FRACTAL_NZ", [2, 32, 48], [2, 3, 2, 16, 16], FP16, 2, 0, N_NOT_1, id="nz-cols-batch"),
    P("ND", "FRACTAL_NZ", [1, 32, 64], [1, 2, 2, 16, 32], I8, 2, 0, None, id="nz-int8-cols"),
    P("ND", "FRACTAL_NZ", [1, 32, 48], [1, 2, 2, 16, 32], I8, 2, 0, unaligned(48, 32), id="nz-int8-cols-48"),
    P("ND", "FRACTAL_NZ", [1, 30], [1, 2, 16, 16], FP16, 1, 0, unaligned(30, 16), id="nz-pack-ut-30"),
    P("NCHW", "FRACTAL_NZ", [1, 1, 32, 48], [1, 1, 3, 2, 16, 16], FP16, 3, 0, None, id="nchw-nz-nd-rules"),
    # NOT_FULL_SIZE: NCHW rank 2, reshape type "CH".
    P("NCHW", "NC1HWC0", [32, 16], [1, 2, 16, 1, 16], FP16, 0, MASK_CH, None, id="not-full-ch-dC"),
    P("NCHW", "NC1HWC0", [32, 16], [1, 2, 16, 1, 16], FP16, 1, MASK_CH, front(1, 2), id="not-full-ch-dH-C1"),
]
# fmt: on


@pytest.mark.parametrize(CHECK_DIM_ARGS, CHECK_DIM_CASES)
def test_check_dim_for_input_worked_examples(
    origin_format: str,
    fmt: str,
    origin: list[int],
    storage: list[int],
    dtype: str,
    dim: int,
    mask: int,
    expected: str | None,
) -> None:
    assert check_dim_for_input(origin_format, fmt, origin, storage, dtype, dim, mask) == expected


# The Pack UT sets its NZ storage shape by hand; TransferShape gives (2, 1, 16, 16) for [1, 30] (see below).
HAND_SET_STORAGE = {"nz-pack-ut-30"}


STORAGE_CASES = [case for case in CHECK_DIM_CASES if case.id not in HAND_SET_STORAGE]


@pytest.mark.parametrize(CHECK_DIM_ARGS, STORAGE_CASES)
def test_worked_example_storage_shapes_are_ges(
    origin_format: str,
    fmt: str,
    origin: list[int],
    storage: list[int],
    dtype: str,
    dim: int,
    mask: int,
    expected: str | None,
) -> None:
    # The storage shapes of the worked examples are written by hand; they must be what TransferShape gives.
    assert transfer_shape(origin_format, fmt, origin, dtype) == tuple(storage)


# ---------------------------------------------------------------------------------------------------------
# Failure cases of the dispatch (§3.4) and of the asserts around it
# ---------------------------------------------------------------------------------------------------------

# fmt: off
FAILURE_CASES = [
    P("ND", "NC1HWC0", [1, 32, 16, 16], [1, 2, 16, 16, 16], 1, 0, ALIGN_FAILED, id="nd-to-5hd"),
    P("ND", "FRACTAL_Z", [32, 16, 1, 1], [1, 2, 16, 16], 0, 0, ALIGN_FAILED, id="nd-to-fz"),
    P("NCHW", "NC1HWC0", [1, 32, 1, 1, 1], [1, 2, 1, 1, 16], 1, 0, ALIGN_FAILED, id="rank-above-full-size"),
    P("NCHW", "NC1HWC0", [32, 16], [1, 2, 16, 1, 16], 0, 0, ALIGN_FAILED, id="not-full-size-no-mask"),
    P("NCHW", "NC1HWC0", [32, 16], [1, 2, 16, 1, 16], 0, MASK_CHW,
      "GetAlignedShape: aligned rank 3 != origin rank 2", id="mask-keeps-three-axes-for-rank-2"),
    P("NCHW", "FRACTAL_Z_3D", [16, 32, 1, 1], [2, 1, 16, 16], 1, 0, DIMS_FAILED, id="no-axis-vec-fz3d"),
    P("NCHW", "C1HWNCoC0", [16, 32, 1, 1], [2, 1, 1, 1, 16, 16], 1, 0, DIMS_FAILED, id="no-axis-c1hwncoc0"),
    P("NCHW", "NC1HWC0_C04", [1, 4, 4, 4], [1, 1, 4, 4, 4], 1, 0, DIMS_FAILED, id="no-axis-vec-5hd-c04"),
    P("NC1HWC0", "NCHW", [1, 2, 4, 4, 16], [1, 32, 4, 4], 0, 0, ALIGN_FAILED, id="origin-without-full-size"),
    P("ND", "FRACTAL_NZ", [32], [1, 2, 16, 16], 0, 0, ALIGN_FAILED, id="nz-rank-1"),
    P("NCHW", "NC1HWC0", [1, 32, 16, 16], [1, 2, 16, 16], 1, 0,
      "TransferDims: dst_to_src has 5 entries, storage rank is 4", id="storage-rank-mismatch"),
    P("ND", "ND", [2, 16], [32], 0, 0,
      "TransferDims: dst_to_src has 2 entries, storage rank is 1", id="nd-storage-rank-mismatch"),
    # [GE source] a merged axis listing an expanded-away origin axis (-1) before d fails IsFromAxisOne.
    P("NCHW", "FRACTAL_Z", [4, 4], [16, 1, 16, 16], 0, MASK_HW,
      "CheckRealDim: merged storage axis 0 lists invalid origin axis -1", id="merged-lists-expanded-axis"),
    P("NCHW", "NC1HWC0", [1, 32, 1, 1], [1, 2, 1, 1, 16], 4, 0,
      "CheckDim: dim 4 out of range for origin rank 4", id="dim-too-large"),
    P("NCHW", "NC1HWC0", [1, 32, 1, 1], [1, 2, 1, 1, 16], -1, 0,
      "CheckDim: dim -1 out of range for origin rank 4", id="dim-not-normalised"),
    P("NCHW", "BOGUS", [1, 32, 1, 1], [1, 32, 1, 1], 1, 0, "unknown format 'BOGUS'", id="unknown-format"),
]
# fmt: on


@pytest.mark.parametrize("origin_format, fmt, origin, storage, dim, mask, expected", FAILURE_CASES)
def test_check_dim_for_input_failures(
    origin_format: str,
    fmt: str,
    origin: list[int],
    storage: list[int],
    dim: int,
    mask: int,
    expected: str,
) -> None:
    assert check_dim_for_input(origin_format, fmt, origin, storage, FP16, dim, mask) == expected


def test_check_dim_for_input_unknown_dtype() -> None:
    assert check_dim_for_input("ND", "ND", [2], [2], "float33", 0) == "unknown dtype 'float33'"


# ---------------------------------------------------------------------------------------------------------
# Aligned shapes and axis maps the spec lists
# ---------------------------------------------------------------------------------------------------------

# fmt: off
ALIGN_CASES = [
    P("ND", "ND", [2048, 12288], FP16, 0, (1, 1), id="nd-nd"),
    P("NCHW", "NC1HWC0", [1, 16, 1, 1], FP16, 0, (1, 16, 1, 1), id="nchw-5hd"),
    P("NCHW", "NC1HWC0", [1, 16, 1, 1], I8, 0, (1, 32, 1, 1), id="nchw-5hd-int8"),
    P("NCHW", "NC1HWC0", [1, 16, 1, 1], "int4", 0, (1, 64, 1, 1), id="nchw-5hd-int4"),
    P("NCHW", "NC1HWC0", [1, 16, 1, 1], "float", 0, (1, 16, 1, 1), id="nchw-5hd-fp32-uses-16"),
    P("NHWC", "NC1HWC0", [1, 4, 4, 16], FP16, 0, (1, 1, 1, 16), id="nhwc-5hd"),
    P("NCHW", "HWCN", [1, 2, 3, 4], FP16, 0, (1, 1, 1, 1), id="nchw-hwcn"),
    P("NDHWC", "NDC1HWC0", [1, 2, 3, 4, 5], FP16, 0, (1, 1, 1, 1, 16), id="ndhwc-6hd"),
    P("NCDHW", "NDC1HWC0", [1, 2, 3, 4, 5], FP16, 0, (1, 16, 1, 1, 1), id="ncdhw-6hd"),
    P("HWCN", "FRACTAL_Z", [1, 2, 3, 16], FP16, 0, (1, 1, 16, 16), id="hwcn-fz"),
    P("NCHW", "FRACTAL_Z", [16, 3, 2, 1], FP16, 0, (16, 16, 1, 1), id="nchw-fz"),
    P("ND", "FRACTAL_NZ", [4, 32, 48], FP16, 0, (1, 16, 16), id="nd-nz"),
    P("ND", "FRACTAL_NZ", [4, 32, 48], I8, 0, (1, 16, 32), id="nd-nz-int8"),
    P("ND", "FRACTAL_NZ_C0_32", [32, 48], FP16, 0, (16, 16), id="nz-c0-bits-ignored"),
    P("NCHW", "NC1HWC0", [32, 16], FP16, MASK_CH, (16, 1), id="not-full-ch"),
    P("NCHW", "FRACTAL_Z_3D", [1, 2, 3, 4], FP16, 0, (1, 1, 1, 1), id="no-split-map-all-ones"),
]
# fmt: on


@pytest.mark.parametrize("origin_format, fmt, origin, dtype, mask, expected", ALIGN_CASES)
def test_get_aligned_shape(
    origin_format: str,
    fmt: str,
    origin: list[int],
    dtype: str,
    mask: int,
    expected: tuple[int, ...],
) -> None:
    assert get_aligned_shape(origin_format, fmt, origin, dtype, mask) == expected


# fmt: off
DISPATCH_FAILURES = [
    P("ND", "NC1HWC0", [1, 2, 3, 4], 0, id="nd-to-5hd"),
    P("NCHW", "NC1HWC0", [1, 2, 3, 4, 5], 0, id="rank-above-full-size"),
    P("NCHW", "NC1HWC0", [32, 16], 0, id="not-full-size-no-mask"),
    P("NC1HWC0", "NCHW", [1, 2, 3, 4, 16], 0, id="origin-without-full-size"),
    P("ND", "FRACTAL_NZ", [7], 0, id="nz-rank-1"),
    P("NCHW", "NC1HWC0", [32, 16], -MASK_CH, id="negative-mask"),
    P("NOPE", "ND", [1], 0, id="unknown-format"),
]
# fmt: on


@pytest.mark.parametrize("origin_format, fmt, origin, mask", DISPATCH_FAILURES)
def test_get_aligned_shape_and_transfer_dims_fail(
    origin_format: str,
    fmt: str,
    origin: list[int],
    mask: int,
) -> None:
    assert get_aligned_shape(origin_format, fmt, origin, FP16, mask) is None
    assert transfer_dims(origin_format, fmt, origin, mask) is None


# fmt: off
MAP_CASES = [
    P("ND", "ND", 2, 0, ((0,), (1,)), ((0,), (1,)), id="nd-nd-identity"),
    P("NCHW", "NC1HWC0", 4, 0, ((0,), (1, 4), (2,), (3,)), ((0,), (1,), (2,), (3,), (1,)), id="nchw-5hd"),
    P("NHWC", "NC1HWC0", 4, 0, ((0,), (2,), (3,), (1, 4)), ((0,), (3,), (1,), (2,), (3,)), id="nhwc-5hd"),
    P("NCHW", "HWCN", 4, 0, ((3,), (2,), (0,), (1,)), ((2,), (3,), (1,), (0,)), id="nchw-hwcn"),
    P("NDHWC", "NDC1HWC0", 5, 0, ((0,), (1,), (3,), (4,), (2, 5)), ((0,), (1,), (4,), (2,), (3,), (4,)),
      id="ndhwc-6hd"),
    P("NCDHW", "NDC1HWC0", 5, 0, ((0,), (2, 5), (1,), (3,), (4,)), ((0,), (2,), (1,), (3,), (4,), (1,)),
      id="ncdhw-6hd"),
    P("HWCN", "FRACTAL_Z", 4, 0, ((0,), (0,), (0, 3), (1, 2)), ((2, 0, 1), (3,), (3,), (2,)), id="hwcn-fz"),
    P("NCHW", "FRACTAL_Z", 4, 0, ((1, 2), (0, 3), (0,), (0,)), ((1, 2, 3), (0,), (0,), (1,)), id="nchw-fz"),
    P("ND", "FRACTAL_NZ", 3, 0, ((0,), (2,), (1,)), ((0,), (2,), (1,), (-1,), (-1,)), id="nd-nz-rank-3"),
    P("ND", "FRACTAL_NZ", 2, 0, ((1,), (0,)), ((1,), (0,), (-1,), (-1,)), id="nd-nz-rank-2"),
    P("NCHW", "NC1HWC0", 2, MASK_CH, ((1, 4), (2,)), ((-1,), (0,), (1,), (-1,), (0,)), id="not-full-ch"),
    P("NCHW", "FRACTAL_Z", 2, MASK_HW, ((0,), (0,)), ((-1, 0, 1), (-1,), (-1,), (-1,)), id="not-full-hw-fz"),
]
# fmt: on


@pytest.mark.parametrize("origin_format, fmt, rank, mask, src_to_dst, dst_to_src", MAP_CASES)
def test_transfer_dims(
    origin_format: str,
    fmt: str,
    rank: int,
    mask: int,
    src_to_dst: tuple[tuple[int, ...], ...],
    dst_to_src: tuple[tuple[int, ...], ...],
) -> None:
    assert transfer_dims(origin_format, fmt, [2] * rank, mask) == AxisMap(src_to_dst, dst_to_src)


def test_transfer_dims_full_size_fails_without_dst_axis_vector() -> None:
    assert transfer_dims("NCHW", "FRACTAL_Z_3D", [1, 2, 3, 4]) is None


def test_nz_c0_variant_shares_primary_with_fractal_nz() -> None:
    # The brief models FRACTAL_NZ_C0_x as FRACTAL_NZ with C0 bits, so the pair is ND_TO_ND (identity map).
    assert transfer_dims("FRACTAL_NZ", "FRACTAL_NZ_C0_16", [3, 4]) == AxisMap(((0,), (1,)), ((0,), (1,)))


# ---------------------------------------------------------------------------------------------------------
# Reshape types
# ---------------------------------------------------------------------------------------------------------

# fmt: off
RESHAPE_MASK_CASES = [
    P("NCHW", "CH", None, None, MASK_CH, id="nchw-ch-spec-example"),
    P("FORMAT_NCHW", "CH", None, None, MASK_CH, id="format-prefix"),
    P("NCHW", "C", None, None, 0b1101 | (4 << 56), id="nchw-c"),
    P("NCHW", "HC", None, None, MASK_CH, id="out-of-order-falls-back-to-default"),
    P("NCHW", "ch", None, None, MASK_CH, id="lower-case-invalid-falls-back"),
    P("NHWC", "HW", None, None, 0b1001 | (4 << 56), id="nhwc-hw"),
    P("NDHWC", "WC", None, None, 0b00111 | (5 << 56), id="ndhwc-wc"),
    P("NCHW", "NCHW", None, None, 0, id="full-rank-needs-no-expand"),
    P("NCHW", "FORBIDDEN", None, 2, 0, id="forbidden"),
    P("NCHW", "CH", "FRACTAL_NZ", None, 0, id="no-expand-to-nz"),
    P("NCHW", "CH", "NC1HWC0", None, MASK_CH, id="expand-to-5hd"),
    P("ND", "CH", None, None, 0, id="nd-has-no-letters-or-default"),
    P("NCHW", "CH", None, 1, 0b1101 | (4 << 56), id="rank-1-uses-first-letter"),
    P("NC1HWC0", "C", None, None, 0, id="no-full-size"),
]
# fmt: on


@pytest.mark.parametrize("origin_format, reshape_type, fmt, rank, expected", RESHAPE_MASK_CASES)
def test_reshape_type_mask(
    origin_format: str, reshape_type: str, fmt: str | None, rank: int | None, expected: int
) -> None:
    assert reshape_type_mask(origin_format, reshape_type, format=fmt, rank=rank) == expected


# fmt: off
DEFAULT_RESHAPE_CASES = [
    P("NCHW", 1, "C", id="nchw-1"), P("NCHW", 2, "CH", id="nchw-2"), P("NCHW", 3, "CHW", id="nchw-3"),
    P("NHWC", 2, "HW", id="nhwc-2"), P("NHWC", 3, "HWC", id="nhwc-3"),
    P("HWCN", 2, "CN", id="hwcn-2"), P("HWCN", 3, "WCN", id="hwcn-3"),
    P("CHWN", 2, "WN", id="chwn-2"), P("CHWN", 3, "HWN", id="chwn-3"),
    P("NDHWC", 2, "WC", id="ndhwc-2"), P("NDHWC", 4, "DHWC", id="ndhwc-4"),
    P("NCHW", 0, "", id="nchw-0"), P("NCHW", 4, None, id="nchw-full"), P("ND", 2, None, id="nd"),
]
# fmt: on


@pytest.mark.parametrize("origin_format, rank, expected", DEFAULT_RESHAPE_CASES)
def test_default_reshape_type(origin_format: str, rank: int, expected: str | None) -> None:
    assert default_reshape_type(origin_format, rank) == expected


# ---------------------------------------------------------------------------------------------------------
# TransferShape
# ---------------------------------------------------------------------------------------------------------

# fmt: off
TRANSFER_SHAPE_CASES = [
    P("ND", "ND", [3, 5], FP16, (3, 5), id="same-primary"),
    P("ND", "NCHW", [3, 5], FP16, (3, 5), id="nd-to-origin-format-unchanged"),
    P("NCHW", "NC1HWC0", [2, 33, 4, 5], FP16, (2, 3, 4, 5, 16), id="nchw-5hd-ceil"),
    P("HWCN", "NC1HWC0", [4, 5, 33, 2], FP16, (2, 3, 4, 5, 16), id="hwcn-5hd"),
    P("CHWN", "NC1HWC0", [33, 4, 5, 2], I8, (2, 2, 4, 5, 32), id="chwn-5hd-int8"),
    P("ND", "NC1HWC0", [2, 33, 4, 5], FP16, (2, 3, 4, 5, 16), id="nd-4d-reads-as-nchw"),
    P("NCHW", "NC1HWC0_C04", [1, 3, 4, 5], FP16, (1, 1, 4, 5, 4), id="5hd-c04-uses-c0-4"),
    P("NCHW", "NDC1HWC0", [2, 33, 4, 5], FP16, (2, 1, 3, 4, 5, 16), id="nchw-6hd-d-is-1"),
    P("DHWCN", "NDC1HWC0", [3, 4, 5, 33, 2], FP16, (2, 3, 3, 4, 5, 16), id="dhwcn-6hd"),
    P("NCHW", "FRACTAL_Z", [33, 17, 3, 3], FP16, (18, 3, 16, 16), id="nchw-fz"),
    P("NHWC", "FRACTAL_Z", [33, 3, 3, 17], FP16, (18, 3, 16, 16), id="nhwc-fz"),
    P("ND", "FRACTAL_Z", [33, 17], FP16, (3, 2, 16, 16), id="nd-2d-fz"),
    P("NCHW", "HWCN", [1, 2, 3, 4], FP16, (3, 4, 2, 1), id="nchw-hwcn"),
    P("NDHWC", "NCDHW", [1, 2, 3, 4, 5], FP16, (1, 5, 2, 3, 4), id="ndhwc-ncdhw"),
    P("ND", "FRACTAL_NZ", [2, 33, 17], FP16, (2, 2, 3, 16, 16), id="nd-nz"),
    P("ND", "FRACTAL_NZ", [30], FP16, (1, 2, 16, 16), id="nd-nz-rank-1"),
    P("ND", "FRACTAL_NZ", [1, 30], FP16, (2, 1, 16, 16), id="nd-nz-pack-ut-origin"),
    P("ND", "FRACTAL_NZ_C0_32", [32, 48], FP16, (2, 2, 16, 32), id="nz-c0-32-bits"),
    P("NCHW", "NC1HWC0", [32, 16], FP16, (1, 2, 16, 1, 16), id="expand-default-ch"),
    P("NCHW", "NC1HWC0", [-1, 32, 4, 4], FP16, (-1, 2, 4, 4, 16), id="unknown-n-kept"),
    P("NCHW", "FRACTAL_Z", [16, -1, 3, 3], FP16, (-1, 1, 16, 16), id="unknown-c-unknown-c1hw"),
    P("ND", "NC1HWC0", [2, 33, 4], FP16, None, id="nd-rank-3-not-modelled"),
    P("NCDHW", "NCHW", [1, 2, 3, 4, 5], FP16, None, id="5d-to-4d-not-modelled"),
    P("NCHW", "FRACTAL_Z_3D", [1, 2, 3, 4], FP16, None, id="fz3d-not-modelled"),
    P("NCHW", "NC1HWC0", [1, 2, 3, 4], "undefined", None, id="undefined-dtype"),
    P("NCHW", "NC1HWC0", [1, 2, 3, 4], "nope", None, id="unknown-dtype"),
]
# fmt: on


@pytest.mark.parametrize("origin_format, fmt, origin, dtype, expected", TRANSFER_SHAPE_CASES)
def test_transfer_shape(
    origin_format: str, fmt: str, origin: list[int], dtype: str, expected: tuple[int, ...] | None
) -> None:
    assert transfer_shape(origin_format, fmt, origin, dtype) == expected


def test_transfer_shape_with_explicit_reshape_type() -> None:
    assert transfer_shape("NCHW", "FRACTAL_Z", [4, 4], FP16, reshape_type="HW") == (16, 1, 16, 16)
    assert transfer_shape("NCHW", "NC1HWC0", [32], FP16, reshape_type="N") == (32, 1, 1, 1, 16)


# ---------------------------------------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------------------------------------

# fmt: off
CANONICAL_FORMAT_CASES = [
    P("NCHW", "NCHW", id="plain"),
    P("format_nc1hwc0", "NC1HWC0", id="prefix-lower"),
    P(" FORMAT_FRACTAL_NZ ", "FRACTAL_NZ", id="prefix-spaces"),
    P("c1hwncoc0", "C1HWNCoC0", id="ge-mixed-case-name"),
    P("fractal_nz_c0_16", "FRACTAL_NZ_C0_16", id="nz-c0-variant"),
    P("NCHWX", None, id="unknown"),
]
# fmt: on


@pytest.mark.parametrize("name, expected", CANONICAL_FORMAT_CASES)
def test_canonical_format(name: str, expected: str | None) -> None:
    assert canonical_format(name) == expected


# fmt: off
PRIMARY_FORMAT_CASES = [
    P("hwcn", "HWCN", id="plain"),
    P("FRACTAL_NZ_C0_2", "FRACTAL_NZ", id="nz-c0-2"),
    P("FRACTAL_NZ_C0_32", "FRACTAL_NZ", id="nz-c0-32"),
    P("RESERVED", "RESERVED", id="reserved"),
]
# fmt: on


@pytest.mark.parametrize("fmt, expected", PRIMARY_FORMAT_CASES)
def test_primary_format(fmt: str, expected: str) -> None:
    assert primary_format(fmt) == expected


def test_primary_format_unknown_raises() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        primary_format("NOPE")


# fmt: off
BRIEF_FORMATS = (
    "NCHW", "NHWC", "ND", "NC1HWC0", "FRACTAL_Z", "NC1C0HWPAD", "NHWC1C0", "FSR_NCHW", "FRACTAL_DECONV",
    "C1HWNC0", "FRACTAL_DECONV_TRANSPOSE", "FRACTAL_DECONV_SP_STRIDE_TRANS", "NC1HWC0_C04", "FRACTAL_Z_C04",
    "CHWN", "FRACTAL_DECONV_SP_STRIDE8_TRANS", "HWCN", "NC1KHKWHWC0", "BN_WEIGHT", "FILTER_HWCK",
    "HASHTABLE_LOOKUP_LOOKUPS", "HASHTABLE_LOOKUP_KEYS", "HASHTABLE_LOOKUP_VALUE", "HASHTABLE_LOOKUP_OUTPUT",
    "HASHTABLE_LOOKUP_HITS", "FRACTAL_NZ", "NCDHW", "DHWCN", "NDC1HWC0", "FRACTAL_Z_3D", "CN", "NC", "DHWNC",
    "FRACTAL_Z_3D_TRANSPOSE", "FRACTAL_ZN_LSTM", "FRACTAL_Z_G", "RESERVED", "ALL", "NULL", "ND_RNN_BIAS",
    "FRACTAL_ZN_RNN", "NYUV", "NYUV_A", "NCL", "FRACTAL_NZ_C0_2", "FRACTAL_NZ_C0_4", "FRACTAL_NZ_C0_8",
    "FRACTAL_NZ_C0_16", "FRACTAL_NZ_C0_32",
)
# fmt: on


def test_formats_cover_the_brief() -> None:
    assert set(BRIEF_FORMATS) <= set(FORMATS)
    assert len(set(FORMATS)) == len(FORMATS)


# fmt: off
C0_CASES = [
    P(FP16, 16, id="fp16"), P("float", 16, id="fp32"), P("bf16", 16, id="bf16"), P("int32", 16, id="int32"),
    P(I8, 32, id="int8"), P("uint8", 32, id="uint8"), P("int4", 64, id="int4"), P("int2", 128, id="int2"),
    P("uint2", 128, id="uint2"), P("uint1", 256, id="uint1"),
]
# fmt: on


@pytest.mark.parametrize("dtype, c0", C0_CASES)
def test_c0_m0_n0(dtype: str, c0: int) -> None:
    assert (c0_of(dtype), m0_of(dtype), n0_of(dtype)) == (c0, 16, 16)


def test_c0_unknown_dtype_raises() -> None:
    with pytest.raises(ValueError, match="unknown dtype"):
        c0_of("float33")


# ---------------------------------------------------------------------------------------------------------
# DataTypes and sizes
# ---------------------------------------------------------------------------------------------------------

# fmt: off
EXPECTED_DTYPE_SIZES = {
    "float": 4, "float16": 2, "bfloat16": 2, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1,
    "uint16": 2, "uint32": 4, "uint64": 8, "double": 8, "bool": 1, "string": -1, "string_ref": -1,
    "complex32": 4, "complex64": 8, "complex128": 16, "qint8": 1, "qint16": 2, "qint32": 4, "quint8": 1,
    "quint16": 2, "resource": 8, "dual": 5, "variant": 8, "hifloat8": 1, "float8_e5m2": 1, "float8_e4m3fn": 1,
    "float8_e8m0": 1, "int4": 1004, "uint1": 1001, "int2": 1002, "uint2": 1002, "float6_e3m2": 1006,
    "float6_e2m3": 1006, "float4_e2m1": 1004, "float4_e1m2": 1004, "undefined": -1,
}
# fmt: on


@pytest.mark.parametrize("dtype, size", list(EXPECTED_DTYPE_SIZES.items()), ids=list(EXPECTED_DTYPE_SIZES))
def test_dtype_size_table(dtype: str, size: int) -> None:
    assert dtype in DTYPES
    assert dtype_size(dtype) == size


# fmt: off
CANONICAL_DTYPE_CASES = [
    P("float32", "float", id="float32"), P("fp16", FP16, id="fp16"), P("half", FP16, id="half"),
    P("bf16", "bfloat16", id="bf16"), P("float64", "double", id="float64"),
    P("DT_FLOAT16", FP16, id="ge-float16"), P("DT_BF16", "bfloat16", id="ge-bf16"),
    P("dt_float", "float", id="ge-lower"), P("DT_STRING_REF", "string_ref", id="ge-string-ref"),
    P(" Int8 ", I8, id="case-and-spaces"), P("float33", None, id="unknown"), P("DT_", None, id="bare-prefix"),
]
# fmt: on


@pytest.mark.parametrize("name, expected", CANONICAL_DTYPE_CASES)
def test_canonical_dtype(name: str, expected: str | None) -> None:
    assert canonical_dtype(name) == expected


def test_dtype_size_unknown_is_invalid() -> None:
    assert dtype_size("float33") == -1


# fmt: off
SIZE_IN_BYTES_CASES = [
    P(10, FP16, 20, id="fp16"), P(3, "float", 12, id="fp32"), P(0, "float", 0, id="zero"),
    P(3, "int4", 2, id="int4-rounds-up"), P(5, "uint1", 1, id="uint1"), P(9, "uint1", 2, id="uint1-round-up"),
    P(4, "float6_e3m2", 3, id="fp6"), P(-1, "float", -1, id="negative-count"),
    P(4, "string", -1, id="string-invalid"), P(4, "undefined", -1, id="undefined-invalid"),
    P(1 << 62, "int64", -1, id="int64-overflow"),
]
# fmt: on


@pytest.mark.parametrize("count, dtype, expected", SIZE_IN_BYTES_CASES)
def test_size_in_bytes(count: int, dtype: str, expected: int) -> None:
    assert size_in_bytes(count, dtype) == expected


# fmt: off
SHAPE_SIZE_CASES = [
    P([], 0, id="empty"), P([2, 3, 4], 24, id="product"), P([2, 0, 3], 0, id="zero"),
    P([2, -1], -1, id="unknown"), P([-2], -1, id="unknown-rank"),
    P([0, -1], 0, id="zero-before-unknown"), P([-1, 0], -1, id="unknown-before-zero"),
    P([1 << 32, 1 << 32], -1, id="overflow"),
]
# fmt: on


@pytest.mark.parametrize("shape, expected", SHAPE_SIZE_CASES)
def test_shape_size(shape: list[int], expected: int) -> None:
    assert shape_size(shape) == expected


# fmt: off
UNKNOWN_SHAPE_CASES = [
    P([2, 3], False, id="known"), P([], False, id="scalar"),
    P([2, -1], True, id="unknown-dim"), P([-2], True, id="unknown-rank"),
]
# fmt: on


@pytest.mark.parametrize("shape, expected", UNKNOWN_SHAPE_CASES)
def test_is_unknown_shape(shape: list[int], expected: bool) -> None:
    assert is_unknown_shape(shape) is expected


# fmt: off
TENSOR_SIZE_CASES = [
    # Spec §5.5: two fp16 [2048, 12288] producers and their concat output.
    P([2048, 12288], FP16, 50_331_648, 50_331_680, id="spec-5.5-input"),
    P([4096, 12288], FP16, 100_663_296, 100_663_328, id="spec-5.5-output"),
    P([1, 256], FP16, 512, 544, id="pack-st-input"),
    P([3, 5], "float", 60, 96, id="unaligned"),
    P([], "float", 4, 64, id="scalar-is-one-element"),
    P([0, 4], "float", 0, 32, id="empty-tensor"),
    P([3], "int4", 2, 64, id="sub-byte"),
    P([2, -1], "float", -1, -1, id="unknown"),
    P([2, 2], "string", -1, -1, id="string"),
    P([2, 2], "nope", -1, -1, id="unknown-dtype"),
]
# fmt: on


@pytest.mark.parametrize("shape, dtype, raw, mem", TENSOR_SIZE_CASES)
def test_tensor_sizes(shape: list[int], dtype: str, raw: int, mem: int) -> None:
    assert tensor_raw_size(shape, dtype) == raw
    assert tensor_mem_size(shape, dtype) == mem


# fmt: off
ALIGN_UP_CASES = [
    P(0, 32, 0, id="zero"), P(1, 32, 32, id="up"), P(32, 32, 32, id="exact"),
    P(100_663_328, 512, 100_663_808, id="spec-5.5-block"),
]
# fmt: on


@pytest.mark.parametrize("value, align, expected", ALIGN_UP_CASES)
def test_align_up(value: int, align: int, expected: int) -> None:
    assert align_up(value, align) == expected


def test_align_up_rejects_non_positive_alignment() -> None:
    with pytest.raises(ValueError, match="alignment must be positive"):
        align_up(5, 0)


@pytest.mark.parametrize(
    "origin_format,fmt,origin,dtype,attrs",
    [
        ("NCHW", "NC1HWC0", (1, 32, 4, 4), FP16, {}),
        ("NCHW", "NC1HWC0", (1, 32, 4, 4), "int8", {}),  # another dtype, another aligned shape
        ("NHWC", "FRACTAL_Z", (3, 3, 16, 32), FP16, {}),
        ("ND", "FRACTAL_NZ", (64, 48), FP16, {}),
        ("ND", "FRACTAL_NZ", (64,), FP16, {}),
        ("NCHW", "NC1HWC0", (32, 4), FP16, {"_reshape_type_mask": 0b1100}),
        ("NCHW", "NC1HWC0", (32, 4), FP16, {"_reshape_type_mask": True}),  # not an int: no mask
        ("NCHW", "FRACTAL_NZ", (1, 32, 4, 4), FP16, {}),  # GE fails both ways: nulls
        ("ND", "ND", (5, 7), "float", {}),
    ],
)
def test_shape_transfer_answers_as_the_two_facts(
    origin_format: str, fmt: str, origin: tuple[int, ...], dtype: str, attrs: dict[str, object]
) -> None:
    """`shape_transfer(d)` holds the very entries `aligned_shape(d)` and `axis_map(d)` give, for every desc."""
    from rulepass.compiler.facts import aligned_shape, axis_map, shape_transfer
    from rulepass.compiler.ir import TensorDesc

    d = TensorDesc(origin, dtype, fmt, origin, origin_format, dict(attrs))  # type: ignore[arg-type]
    t = shape_transfer(d)
    assert t.aligned_shape is aligned_shape(d) and t.axis_map is axis_map(d)
    assert shape_transfer(TensorDesc(origin, dtype, fmt, origin, origin_format, dict(attrs))) is t  # type: ignore[arg-type]
