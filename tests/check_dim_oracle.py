"""The test oracle for the rules' CheckDim: GE's CheckDimForInput (spec §3.1-3.3) written in plain Python, and
GE's PackNotaskPass::CheckDim (Pack's own axis handling around it).

Not product code: the product's CheckDim is the rule (rules/notask_base.yaml, SplitNotaskPass's and
PackNotaskPass's), evaluated by the engine; this independent copy is what tests check it against
(tests/rules/test_concat_scenarios.py on random descs, tests/compiler/test_formats.py on the spec's worked
examples). It reads `rulepass.compiler.formats` for the shape-transfer maps both sides share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rulepass.compiler.formats import (
    AxisMap,
    canonical_dtype,
    canonical_format,
    get_aligned_shape,
    transfer_dims,
)


def _front_all_ones(storage: tuple[int, ...], real: int) -> str | None:
    # GE tells merged and plain storage axes apart here but tests both the same way: the dim must be 1.
    for axis in range(real):
        if storage[axis] != 1:
            return f"CheckRealDim: storage axis {axis} is {storage[axis]}, not 1"
    return None


def _front_all_ones_in_merged(
    origin: tuple[int, ...], align: tuple[int, ...], amap: AxisMap, real: int, dim: int
) -> str | None:
    merged = amap.dst_to_src[real]
    if dim not in merged:
        return f"CheckRealDim: origin axis {dim} is not in merged storage axis {real}"
    for from_axis in merged[: merged.index(dim)]:
        # [GE source] IsFromAxisOne asserts the origin axis exists; -1 (an expanded-away axis) fails it.
        if not 0 <= from_axis < len(amap.src_to_dst):
            return f"CheckRealDim: merged storage axis {real} lists invalid origin axis {from_axis}"
        parts = amap.src_to_dst[from_axis]
        if len(parts) > 1:  # from_axis is split over several storage axes
            if parts[0] == real:  # its outer part is this merged axis: it must fit in one inner block
                if origin[from_axis] > align[from_axis]:
                    return (
                        f"CheckRealDim: origin axis {from_axis} is {origin[from_axis]} > aligned "
                        f"{align[from_axis]} in merged storage axis {real}"
                    )
            elif align[from_axis] != 1:
                value = align[from_axis]
                return f"CheckRealDim: aligned value of split origin axis {from_axis} is {value}, not 1"
        elif origin[from_axis] != 1:
            return f"CheckRealDim: origin axis {from_axis} is {origin[from_axis]}, not 1 " + (
                f"(merged into storage axis {real})"
            )
    return None


def check_dim_for_input(
    origin_format: str,
    format: str,
    origin_shape: Sequence[int],
    storage_shape: Sequence[int],
    dtype: str,
    dim: int,
    reshape_type_mask: int = 0,
) -> str | None:
    """GE's CheckDimForInput for one input along origin axis `dim`: None when it passes, else the reason."""
    # `dim` must already be normalised by the caller (CheckDim adds the first input's origin rank to a
    # negative concat_dim once and asserts 0 <= dim < rank); the range is re-checked so a bad dim fails here.
    origin = tuple(origin_shape)
    storage = tuple(storage_shape)
    if canonical_format(origin_format) is None:
        return f"unknown origin format {origin_format!r}"
    if canonical_format(format) is None:
        return f"unknown format {format!r}"
    if canonical_dtype(dtype) is None:
        return f"unknown dtype {dtype!r}"
    if not 0 <= dim < len(origin):
        return f"CheckDim: dim {dim} out of range for origin rank {len(origin)}"

    align = get_aligned_shape(origin_format, format, origin, dtype, reshape_type_mask)
    if align is None:
        return "GetAlignedShape failed"
    if len(align) != len(origin):
        return f"GetAlignedShape: aligned rank {len(align)} != origin rank {len(origin)}"
    amap = transfer_dims(origin_format, format, origin, reshape_type_mask)
    if amap is None:
        return "TransferDims failed"
    if len(amap.src_to_dst) != len(origin):
        return f"TransferDims: src_to_dst has {len(amap.src_to_dst)} entries, origin rank is {len(origin)}"
    if len(amap.dst_to_src) != len(storage):
        return f"TransferDims: dst_to_src has {len(amap.dst_to_src)} entries, storage rank is {len(storage)}"

    # CheckRealDim: every storage axis before the first one the concat axis lands on must be 1.
    parts = amap.src_to_dst[dim]
    if not parts:
        return f"CheckRealDim: origin axis {dim} has no storage axis"
    real = parts[0]
    if not 0 <= real < len(storage):
        return f"CheckRealDim: storage axis {real} out of range for storage rank {len(storage)}"
    reason = _front_all_ones(storage, real)
    if reason is None and len(amap.dst_to_src[real]) > 1:
        reason = _front_all_ones_in_merged(origin, align, amap, real, dim)
    if reason is not None:
        return reason

    # CheckDimAlignment: no padding on the concat axis.
    if align[dim] <= 0:
        return f"CheckDimAlignment: aligned value {align[dim]} at dim {dim} is not positive"
    if origin[dim] % align[dim] != 0:
        return f"CheckDimAlignment: {origin[dim]} % {align[dim]} != 0"
    return None


@dataclass(frozen=True)
class InputDesc:
    """One input desc as the oracle reads it."""

    origin_format: str
    format: str
    origin_shape: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str
    reshape_type_mask: int = 0


def pack_check_dim(inputs: Sequence[InputDesc], axis: int) -> tuple[int, str] | None:
    """GE's PackNotaskPass::CheckDim over the inputs for the raw `axis` attribute: None when it passes, else the
    first failing input and the reason.

    Pack inserts a new axis, so its axis ranges over [0, rank]: a negative one is normalised (once: the variable
    is overwritten inside GE's loop, so only input 0's rank counts) as rank + 1 + axis; axis 0 needs nothing;
    axis == rank (the new axis last) needs every origin dim to be 1; any other axis is CheckDimForInput's.
    """
    dim = axis
    for k, d in enumerate(inputs):
        rank = len(d.origin_shape)
        if dim < 0:
            dim = rank + 1 + dim
        if not 0 <= dim <= rank:
            return k, f"CheckDim: pack axis {dim} out of range [0, {rank}]"
        if dim == 0:
            continue
        if dim == rank:
            if any(x != 1 for x in d.origin_shape):
                return k, f"CheckDim: axis {dim} == rank, origin shape {list(d.origin_shape)} is not all ones"
            continue
        reason = check_dim_for_input(
            d.origin_format, d.format, d.origin_shape, d.shape, d.dtype, dim, d.reshape_type_mask
        )
        if reason is not None:
            return k, reason
    return None
