"""Proof that every zero-copy (virtual, `_no_task`) op is sound, independently of the rules that made it.

A virtual op runs no kernel: its consumers read its output where the memory plan puts it. That is only right
if, element for element, the output's storage bytes *are* the inputs' storage bytes at their planned offsets
(a concat or pack), or each output *is* a byte range of the input (a split or unpack). This module proves it
from first principles, sharing nothing with the rules, the engine or the facts they read:

- **Layouts.** For every tensor desc it derives, from the storage format, storage shape, origin format,
  origin shape and dtype alone, the bit offset in storage of every origin element. Every format modelled here
  (plain permutations of N/C/H/W/D, ND, NC1HWC0, NDC1HWC0, FRACTAL_Z, FRACTAL_NZ) places an element at a sum of
  one term per origin axis (`Layout.terms[axis][coordinate]`), e.g. NC1HWC0 puts channel c at
  `(c // C0) * stride(C1) + (c % C0) * stride(C0)`. Block sizes (C0, N0, M0) are read from the storage shape
  and checked against the origin shape, so padding is whatever the storage shape holds.
- **Meaning.** What a virtual op means comes from its op type family (concat, pack, split, unpack) and its
  axis attribute, as the reference kernels read them; an op of another type cannot be proved and is refused.
- **Proof.** Part `p` of a whole `w` (a concat input of its output, a split output of its input) sits right
  iff `base(w) + offset_w(e) == base(p) + offset_p(e')` for every element. Both sides are sums of one term
  per axis over a product of index ranges, so the equation holds everywhere iff the difference of each
  axis's terms is constant and the constants add up: an exact check in O(sum of dims), not O(elements), and
  O(1) per axis where both sides share one formula from a block boundary (the usual, sound case).
  Then the parts must tile the whole's bytes exactly (no byte of the output that no input holds, no two
  inputs on one byte), so every reader of the output, whatever desc it reads it through, sees the bytes the
  copy would have written (padding included, as the producers wrote it).

What it does not prove: that nothing overwrites the shared bytes while they are read (lifetimes and streams),
which the plan verifier (`verify.py`) proves independently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...base.diagnostics import error
from .. import formats
from ..ir import ComputeGraph, Node, TensorDesc
from .assign import MemoryPlan

__all__ = ["SKIP_WARNING", "Layout", "SoundnessWarning", "Unsound", "check_soundness", "layout_of", "prove_sound"]

SKIP_WARNING = (
    "soundness check OFF: zero-copy (no-task) ops are NOT proved to read and write the bytes their copies "
    "would; an unsound rule edit can silently change the model's outputs (use only for experiments)"
)


class SoundnessWarning(UserWarning):
    """Warned when a compile skips the soundness proof (experiments only)."""


# op type families by what the op means (the reference kernels' reading of the same types)
CONCAT_TYPES = frozenset({"ConcatD", "ConcatV2D", "Concat", "ConcatV2", "PhonyConcat"})
PACK_TYPES = frozenset({"Pack", "Stack"})
SPLIT_TYPES = frozenset({"SplitD", "SplitVD", "Split", "SplitV"})
UNPACK_TYPES = frozenset({"Unpack", "Unstack"})


@dataclass(frozen=True)
class Layout:
    """Where a tensor's origin elements sit in its storage: `terms[a][x]` bits for coordinate x of axis a."""

    format: str
    origin: tuple[int, ...]
    letters: tuple[str, ...]  # a name per origin axis (N, C, ... or "dim k")
    blocks: tuple[tuple[int, str] | None, ...]  # per origin axis: (block size, block name) where storage splits it
    terms: tuple[Term, ...]
    raw_bits: int

    @property
    def raw_bytes(self) -> int:
        """The storage size in bytes (sub-byte dtypes rounded up)."""
        return (self.raw_bits + 7) // 8

    def bit_offset(self, index: Sequence[int]) -> int:
        """The bit offset of one origin element."""
        return sum(t[x] for t, x in zip(self.terms, index, strict=True))


@dataclass(frozen=True)
class Unsound:
    """One virtual op that cannot be proved sound: the node, the input or output concerned, and why."""

    node: str
    op_type: str
    operand: str  # e.g. "input 1", "output 0", "" for the whole op
    reason: str

    def __str__(self) -> str:
        where = f" {self.operand}" if self.operand else ""
        return f"zero-copy {self.op_type} '{self.node}'{where}: {self.reason}"


def _prod(dims: Sequence[int]) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def _strides(shape: Sequence[int]) -> list[int]:
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * shape[i + 1]
    return out


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _element_bits(dtype: str) -> int | None:
    size = formats.dtype_size(dtype)
    if size < 0:
        return None
    return size - 1000 if size > 1000 else size * 8


def _origin_letters(fmt: str, rank: int) -> str | None:
    letters = formats.PLAIN_FORMAT_AXES.get(fmt)
    if letters is not None and len(letters) == rank:
        return letters
    return {4: "NCHW", 5: "NCDHW"}.get(rank) if fmt == "ND" else None


def _names(fmt: str, rank: int) -> tuple[str, ...]:
    letters = _origin_letters(fmt, rank)
    return tuple(letters) if letters else tuple(f"dim {i}" for i in range(rank))


def _primary(fmt: str) -> str | None:
    try:
        return formats.primary_format(fmt)
    except (ValueError, KeyError):
        return None


@dataclass(frozen=True)
class Term:
    """The bits one origin axis adds to an element's offset: the sum over `parts` of ((x // div) % mod) * stride
    (mod 0: no modulo), for coordinates x < dim. Computed per coordinate, never stored element by element."""

    dim: int
    parts: tuple[tuple[int, int, int], ...]

    def __getitem__(self, x: int) -> int:
        total = 0
        for div, mod, stride in self.parts:
            q = x // div
            total += (q % mod if mod else q) * stride
        return total

    def shifts_by(self, start: int) -> bool:
        """Whether term(start + x) == term(start) + term(x) for every x (start lands on a block boundary)."""
        return all(start % div == 0 and (mod == 0 or (start // div) % mod == 0) for div, mod, _ in self.parts)


def _axis_term(dim: int, parts: Sequence[tuple[int, int, int]]) -> Term:
    return Term(dim, tuple(parts))


def layout_of(desc: TensorDesc) -> Layout | str:
    """The element layout of a desc, or why it cannot be derived (unknown format pair, inconsistent shape)."""
    shape = tuple(desc.shape)
    origin = tuple(desc.origin_shape) if desc.origin_shape or not desc.shape else shape
    bits = _element_bits(desc.dtype)
    fmt, ofmt = _primary(desc.format), _primary(desc.origin_format)
    if bits is None:
        return f"dtype {desc.dtype} has no fixed element size"
    if fmt is None or ofmt is None:
        return f"unknown format {desc.format if fmt is None else desc.origin_format}"
    if any(d < 0 for d in (*shape, *origin)):
        return f"shape {list(shape)} is not static"
    raw = _prod(shape) * bits
    if (
        fmt == ofmt
        or not origin
        or (fmt in formats.PLAIN_FORMATS and ofmt in formats.PLAIN_FORMATS and "ND" in (fmt, ofmt))
    ):
        if _prod(origin) != _prod(shape):
            return f"origin shape {list(origin)} and storage shape {list(shape)} hold different element counts"
        st = _strides(origin)
        terms = tuple(_axis_term(d, [(1, 0, s * bits)]) for d, s in zip(origin, st, strict=True))
        return Layout(desc.format, origin, _names(ofmt, len(origin)), (None,) * len(origin), terms, raw)
    builder = _BUILDERS.get(fmt) if fmt not in formats.PLAIN_FORMATS else _permuted
    if builder is None:
        return f"storage format {desc.format} (from origin {desc.origin_format}) is not modelled"
    got = builder(desc, fmt, ofmt, shape, origin, bits)
    if isinstance(got, str):
        return got
    terms, letters, blocks = got
    return Layout(desc.format, origin, letters, blocks, terms, raw)


_Built = tuple[tuple[Term, ...], tuple[str, ...], tuple[tuple[int, str] | None, ...]] | str


def _mismatch(desc: TensorDesc, shape: Sequence[int], want: Sequence[int]) -> str:
    return (
        f"storage shape {list(shape)} is not what {desc.format} makes of {desc.origin_format} "
        f"{list(desc.origin_shape)} ({list(want)})"
    )


def _permuted(
    desc: TensorDesc, fmt: str, ofmt: str, shape: tuple[int, ...], origin: tuple[int, ...], bits: int
) -> _Built:
    src, dst = _origin_letters(ofmt, len(origin)), _origin_letters(fmt, len(shape))
    if src is None or dst is None or sorted(src) != sorted(dst):
        return f"{desc.origin_format} {list(origin)} cannot be stored as {desc.format} {list(shape)}"
    want = [origin[src.index(ch)] for ch in dst]
    if list(shape) != want:
        return _mismatch(desc, shape, want)
    st = _strides(shape)
    terms = tuple(_axis_term(origin[i], [(1, 0, st[dst.index(ch)] * bits)]) for i, ch in enumerate(src))
    return terms, tuple(src), (None,) * len(origin)


def _expanded_letters(desc: TensorDesc, ofmt: str, origin: tuple[int, ...]) -> str | None:
    """The origin letters of each origin axis, rank-deficient origins expanded as GE's ExpandDimension does."""
    full = _origin_letters(ofmt, len(origin))
    if full is not None:
        return full
    letters = formats.PLAIN_FORMAT_AXES.get(ofmt)
    if letters is None:
        return None
    mask = desc.attrs.get("_reshape_type_mask")
    if isinstance(mask, int) and not isinstance(mask, bool) and mask & ((1 << 56) - 1):
        kept = "".join(ch for i, ch in enumerate(letters) if not (mask >> i) & 1)
        return kept if len(kept) == len(origin) else None
    rtype = formats.default_reshape_type(ofmt, len(origin))
    return rtype if rtype is not None and len(rtype) == len(origin) else None


def _five_hd(
    desc: TensorDesc, fmt: str, ofmt: str, shape: tuple[int, ...], origin: tuple[int, ...], bits: int
) -> _Built:
    letters = _expanded_letters(desc, ofmt, origin)
    if letters is None or ("D" in letters) != (fmt == "NDC1HWC0"):
        return f"{desc.origin_format} {list(origin)} cannot be stored as {desc.format} {list(shape)}"
    dim = {ch: 1 for ch in "NCDHW"}
    dim.update(zip(letters, origin, strict=True))
    axes = ["N", "D", "C1", "H", "W", "C0"] if fmt == "NDC1HWC0" else ["N", "C1", "H", "W", "C0"]
    if len(shape) != len(axes):
        return f"{desc.format} needs {len(axes)} storage dims, not {list(shape)}"
    c0 = shape[-1]
    if c0 <= 0:
        return f"C0 = {c0} in storage shape {list(shape)}"
    want = [_ceil(dim["C"], c0) if a == "C1" else c0 if a == "C0" else dim[a] for a in axes]
    if list(shape) != want:
        return _mismatch(desc, shape, want)
    st = {a: s * bits for a, s in zip(axes, _strides(shape), strict=True)}
    terms = tuple(
        _axis_term(dim[ch], [(c0, 0, st["C1"]), (1, c0, st["C0"])] if ch == "C" else [(1, 0, st[ch])]) for ch in letters
    )
    return terms, tuple(letters), tuple((c0, "C0") if ch == "C" else None for ch in letters)


def _fractal_z(
    desc: TensorDesc, fmt: str, ofmt: str, shape: tuple[int, ...], origin: tuple[int, ...], bits: int
) -> _Built:
    if len(shape) != 4 or min(shape) <= 0:
        return f"{desc.format} needs 4 positive storage dims, not {list(shape)}"
    s = [x * bits for x in _strides(shape)]
    k0, n0 = shape[3], shape[2]
    if len(origin) == 2:  # (K, N) -> (K1, N1, N0, K0)
        want = [_ceil(origin[0], k0), _ceil(origin[1], n0), n0, k0]
        if list(shape) != want:
            return _mismatch(desc, shape, want)
        pair = (
            _axis_term(origin[0], [(k0, 0, s[0]), (1, k0, s[3])]),
            _axis_term(origin[1], [(n0, 0, s[1]), (1, n0, s[2])]),
        )
        return pair, _names(ofmt, 2), ((k0, "C0"), (n0, "N0"))
    letters = _origin_letters(ofmt, len(origin))
    if letters is None or len(letters) != 4:
        return f"{desc.origin_format} {list(origin)} cannot be stored as {desc.format} {list(shape)}"
    dim = dict(zip(letters, origin, strict=True))
    hw = dim["H"] * dim["W"]
    want = [_ceil(dim["C"], k0) * hw, _ceil(dim["N"], n0), n0, k0]
    if list(shape) != want:
        return _mismatch(desc, shape, want)
    parts = {
        "C": [(k0, 0, hw * s[0]), (1, k0, s[3])],
        "H": [(1, 0, dim["W"] * s[0])],
        "W": [(1, 0, s[0])],
        "N": [(n0, 0, s[1]), (1, n0, s[2])],
    }
    terms = tuple(_axis_term(dim[ch], parts[ch]) for ch in letters)
    blocks = tuple((k0, "C0") if ch == "C" else (n0, "N0") if ch == "N" else None for ch in letters)
    return terms, tuple(letters), blocks


def _fractal_nz(
    desc: TensorDesc, fmt: str, ofmt: str, shape: tuple[int, ...], origin: tuple[int, ...], bits: int
) -> _Built:
    k = len(shape) - 4
    rows, cols = (origin[-2], origin[-1]) if len(origin) >= 2 else (origin[0], 1)
    if k < 0 or min(shape) <= 0 or list(shape[:k]) != list(origin[:-2]):
        return f"{desc.origin_format} {list(origin)} cannot be stored as {desc.format} {list(shape)}"
    m0, c0 = shape[k + 2], shape[k + 3]
    want = [*origin[:-2], _ceil(cols, c0), _ceil(rows, m0), m0, c0]
    if list(shape) != want:
        return _mismatch(desc, shape, want)
    s = [x * bits for x in _strides(shape)]
    terms = [_axis_term(origin[i], [(1, 0, s[i])]) for i in range(k)]
    terms.append(_axis_term(rows, [(m0, 0, s[k + 1]), (1, m0, s[k + 2])]))
    blocks: list[tuple[int, str] | None] = [None] * k + [(m0, "M0")]
    if len(origin) >= 2:
        terms.append(_axis_term(cols, [(c0, 0, s[k]), (1, c0, s[k + 3])]))
        blocks.append((c0, "C0"))
    return tuple(terms), _names(ofmt, len(origin)), tuple(blocks)


_BUILDERS: dict[str, Callable[[TensorDesc, str, str, tuple[int, ...], tuple[int, ...], int], _Built]] = {
    "NC1HWC0": _five_hd,
    "NDC1HWC0": _five_hd,
    "FRACTAL_Z": _fractal_z,
    "FRACTAL_NZ": _fractal_nz,
}


# ---- the proof ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Tensor:
    """One side of the relation, in the user's terms: its name ("input 1", "the output"), layout and placement."""

    name: str
    layout: Layout
    region: tuple[str, int]
    base: int  # bytes


def _fmt_bytes(bits: int) -> str:
    return f"{bits // 8}" if bits % 8 == 0 else f"{bits / 8:g}"


def _shape_failure(whole: _Tensor, part: _Tensor, axis: int, start: int, stacked: bool) -> str | None:
    w, p = whole.layout.origin, part.layout.origin
    if stacked:
        want = (*w[:axis], *w[axis + 1 :])
        if p != want or start >= w[axis]:
            return (
                f"{part.name} has origin shape {list(p)}; {whole.name} {list(w)} holds parts of shape "
                f"{list(want)} along axis {axis}"
            )
        return None
    if len(p) != len(w) or any(a != b for i, (a, b) in enumerate(zip(p, w, strict=True)) if i != axis):
        return (
            f"{part.name} has origin shape {list(p)}, which is not a slice of {whole.name} {list(w)} along axis {axis}"
        )
    if start + p[axis] > w[axis]:
        return f"{part.name} ends at {start + p[axis]} along axis {axis}, past {whole.name}'s {w[axis]}"
    return None


def _padding_failure(part: _Tensor, prev: _Tensor | None, axis: int) -> str | None:
    """The explanation when the part before `part` ends in padding along the axis (None when it does not)."""
    block = prev.layout.blocks[axis] if prev is not None and axis < len(prev.layout.blocks) else None
    if prev is None or block is None or prev.layout.origin[axis] % block[0] == 0:
        return None
    return (
        f"{prev.layout.letters[axis]} = {prev.layout.origin[axis]} is not a multiple of {block[1]} = {block[0]} in "
        f"{prev.layout.format}: {part.name} starts inside {prev.name}'s padding"
    )


def _axis_failure(
    whole: _Tensor, part: _Tensor, prev: _Tensor | None, i: int, axis: int, x: int, role: str, kind: str
) -> str:
    """Why the terms of whole axis `i` do not differ by a constant (first differing coordinate `x`)."""
    wl, pl = whole.layout, part.layout
    letter = wl.letters[i]
    if i == axis:
        padded = _padding_failure(part, prev, axis)
        if padded is not None:
            return padded
        return (
            f"along {letter}, element {x} of {part.name} is {_fmt_bytes(pl.terms[i][x] - pl.terms[i][0])} bytes "
            f"after its element 0, but in {whole.name} it is {_fmt_bytes(wl.terms[i][x] - wl.terms[i][0])} bytes "
            f"after ({role} ↔ {whole.name} layouts differ along the {kind} axis)"
        )
    j = i - 1 if role == "index" and i > axis else i
    return (
        f"{letter} = {wl.origin[i]} lies outside the {kind} axis {wl.letters[axis]} in {wl.format}: "
        f"element {x} along {letter} is {_fmt_bytes(pl.terms[j][x] - pl.terms[j][0])} bytes after element 0 in "
        f"{part.name} but {_fmt_bytes(wl.terms[i][x] - wl.terms[i][0])} in {whole.name}, so {part.name} is not "
        f"one block of {whole.name}'s bytes (the parts interleave)"
    )


def _part_failure(
    whole: _Tensor, part: _Tensor, prev: _Tensor | None, axis: int, start: int, stacked: bool, kind: str
) -> str | None:
    """Why `part` is not, element for element, `whole` at `start` along `axis` (None: it is)."""
    bad = _shape_failure(whole, part, axis, start, stacked)
    if bad is not None:
        return bad
    if part.region != whole.region:
        return (
            f"{part.name} is in {part.region[0]} memory type {part.region[1]}, {whole.name} in "
            f"{whole.region[0]} memory type {whole.region[1]}"
        )
    if _prod(part.layout.origin) == 0:
        return None  # no element: nothing to prove
    wl, pl = whole.layout, part.layout
    const = (whole.base - part.base) * 8
    for i, dim in enumerate(wl.origin):
        wt = wl.terms[i]
        if i == axis and stacked:
            const += wt[start]
            continue
        pt = pl.terms[i if i == axis or not stacked or i < axis else i - 1]
        shift = start if i == axis else 0
        if wt.parts == pt.parts and wt.shifts_by(shift):
            const += wt[shift]  # the same formula from a block boundary: the difference is constant (O(1))
            continue
        diffs = [wt[shift + x] - pt[x] for x in range(pl.origin[i] if i == axis else dim)]
        off = next((x for x, d in enumerate(diffs) if d != diffs[0]), None)
        if off is not None:
            return _axis_failure(whole, part, prev, i, axis, off, "index" if stacked else "slice", kind)
        const += diffs[0]
    if const:
        return _padding_failure(part, prev, axis) or (
            f"{part.name} is placed at {part.region[0]}@{part.base}, but the elements it holds are at "
            f"{part.region[0]}@{part.base + const / 8:g} in {whole.name} ({whole.name} at "
            f"{whole.region[0]}@{whole.base})"
        )
    return None


def _tiling_failure(whole: _Tensor, parts: Sequence[_Tensor]) -> str | None:
    """Whether the parts' bytes make up the whole's exactly (no byte of it unwritten, none written twice)."""
    spans = sorted((p.base, p.base + p.layout.raw_bytes, p.name) for p in parts if p.layout.raw_bytes > 0)
    cursor = whole.base
    for lo, hi, name in spans:
        if lo > cursor:
            return f"bytes [{cursor}, {lo}) of {whole.name} belong to no part: a reader would see bytes nothing wrote"
        if lo < cursor:
            return f"{name} overlaps the part before it at bytes [{lo}, {min(cursor, hi)})"
        cursor = hi
    end = whole.base + whole.layout.raw_bytes
    if cursor != end:
        what = "belong to no part" if cursor < end else "lie past its end"
        return f"bytes [{min(cursor, end)}, {max(cursor, end)}) of {whole.name} {what}"
    return None


def _int_attr(node: Node, names: Sequence[str], default: int) -> int:
    for name in names:
        v = node.op.attrs.get(name)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return default


def _family(op_type: str) -> tuple[str, bool, bool, tuple[str, ...]] | None:
    """(kind, the whole is the output, parts are indices not slices, axis attributes) of a virtual op type."""
    if op_type in CONCAT_TYPES:
        return "concat", True, False, ("concat_dim", "axis")
    if op_type in PACK_TYPES:
        return "pack", True, True, ("axis",)
    if op_type in SPLIT_TYPES:
        return "split", False, False, ("split_dim", "axis")
    if op_type in UNPACK_TYPES:
        return "unpack", False, True, ("axis",)
    return None


def _side(name: str, desc: TensorDesc, tid: str | None, plan: MemoryPlan) -> _Tensor | str:
    if tid is None:
        return f"{name} is not connected: nothing writes its part"
    layout = layout_of(desc)
    if isinstance(layout, str):
        return f"the layout of {name} cannot be derived: {layout}"
    placed = plan.tensors.get(tid)
    if placed is None:
        return f"{name} ({tid}) has no place in the memory plan"
    return _Tensor(name, layout, (placed.region, placed.mem_type), placed.offset)


def _node_failures(node: Node, plan: MemoryPlan) -> list[Unsound]:
    """Every way one virtual op is not what its copy would be (empty: proved sound)."""

    def fail(operand: str, reason: str) -> list[Unsound]:
        return [Unsound(node.name, node.type, operand, reason)]

    fam = _family(node.type)
    if fam is None:
        return fail(
            "",
            f"a virtual op of type {node.type} has no meaning this checker knows (concat, pack, split, unpack): "
            "its output cannot be proved to be its inputs' bytes",
        )
    kind, whole_is_output, stacked, axis_attrs = fam
    peers = [None if p is None else f"{p.node.name}:{p.index}" for p in node.in_peers]
    if not node.op.output_descs or not node.op.input_descs:
        return fail("", "it has no input or no output to relate")
    if whole_is_output:
        whole_side = _side("the output", node.op.output_descs[0], f"{node.name}:0", plan)
        part_sides = [
            _side(f"input {k}", d, peers[k] if k < len(peers) else None, plan)
            for k, d in enumerate(node.op.input_descs)
        ]
    else:
        whole_side = _side("the input", node.op.input_descs[0], peers[0] if peers else None, plan)
        part_sides = [_side(f"output {j}", d, f"{node.name}:{j}", plan) for j, d in enumerate(node.op.output_descs)]
    if isinstance(whole_side, str):
        return fail("", whole_side)
    rank = len(whole_side.layout.origin)
    axis = _int_attr(node, axis_attrs, 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        return fail(
            "", f"its axis {_int_attr(node, axis_attrs, 0)} is out of range for {whole_side.name}'s rank {rank}"
        )
    out: list[Unsound] = []
    parts: list[_Tensor] = []
    start, prev = 0, None
    for k, side in enumerate(part_sides):
        operand = f"{'input' if whole_is_output else 'output'} {k}"
        if isinstance(side, str):
            out += fail(operand, side)
            break
        reason = _part_failure(whole_side, side, prev, axis, start, stacked, kind)
        if reason is not None:
            out += fail(operand, reason)
            break
        parts.append(side)
        start += 1 if stacked else side.layout.origin[axis]
        prev = side
    if not out:
        covered = whole_side.layout.origin[axis]
        if start != covered:
            out += fail("", f"the parts cover {start} of {whole_side.name}'s {covered} along axis {axis}")
        else:
            reason = _tiling_failure(whole_side, parts)
            if reason is not None:
                out += fail("", reason)
    return out


def check_soundness(graph: ComputeGraph, plan: MemoryPlan) -> list[Unsound]:
    """Every virtual (`_no_task`) op of `graph` (subgraphs included) whose zero-copy layout `plan` does not make
    sound; empty when all are proved."""
    out: list[Unsound] = []
    for node in graph.all_nodes():
        if node.op.attrs.get("_no_task") is True:
            out.extend(_node_failures(node, plan))
    out.extend(_offset_failures(graph, plan))
    return out


def _offset_failures(graph: ComputeGraph, plan: MemoryPlan) -> list[Unsound]:
    """The zero-copy offsets a virtual op's model output records (SetInputOutputOffsetPass) must name its inputs,
    in order, relative to its own output: the parts the proof above placed in the whole, where it placed them, so
    a runtime refreshing the output's address moves each part with the bytes proved to be it."""
    out: list[Unsound] = []
    by_op: dict[str, list[tuple[str, int, int]]] = {}
    for r in plan.zero_copy:
        by_op.setdefault(r.by, []).append((r.tensor, r.basic, r.relative))
    for name, got in sorted(by_op.items()):
        node = next((n for n in graph.all_nodes() if n.name == name), None)
        if node is None or node.op.attrs.get("_no_task") is not True:
            continue  # not a virtual op (e.g. a continuous-output collective): the plan verifier checks it
        whole = plan.tensors.get(f"{name}:0")
        want = [
            (f"{p.node.name}:{p.index}", whole.offset, plan.tensors[f"{p.node.name}:{p.index}"].offset - whole.offset)
            for p in node.in_peers
            if p is not None and whole is not None and f"{p.node.name}:{p.index}" in plan.tensors
        ]
        if got != want:
            out.append(Unsound(name, node.type, "", f"its model output records parts {got}, its layout gives {want}"))
    return out


def prove_sound(graph: ComputeGraph, plan: MemoryPlan) -> None:
    """Raise a RulepassError naming the first virtual op `plan` does not make sound (and how many more)."""
    bad = check_soundness(graph, plan)
    if not bad:
        return
    first = bad[0]
    more = f" (and {len(bad) - 1} more virtual op(s) unsound)" if len(bad) > 1 else ""
    raise error(
        "zero-copy-unsound",
        f"{first}{more}",
        where=first.node,
        hint=(
            f"the rule that made '{first.node}' a no-task op let through a layout it cannot have; "
            f"see `rulepass explain GRAPH --node {first.node}`, fix the rule, or pass --no-soundness-check "
            "(API: soundness=False) to experiment"
        ),
    )
