"""The soundness checker on hand-built layouts, sound and unsound, for every format it models; no rule involved."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import numpy as np
import pytest
from rulepass.compiler import formats
from rulepass.compiler.ir import ComputeGraph, OpDesc, TensorDesc
from rulepass.compiler.memory.assign import MemoryPlan, TensorPlacement
from rulepass.compiler.memory.soundness import SoundnessWarning, Unsound, check_soundness, layout_of
from rulepass.compiler.runtime.kernels import origin_to_storage

from rulepass.api import compile_graph, load_graph
from rulepass.base.diagnostics import RulepassError
from rulepass.cli import main

ZERO_COPY = {"_no_task": True, "_no_padding_continuous_input": True, "_output_reuse_input": True}
SPLIT_ZERO_COPY = {"_no_task": True, "_no_padding_continuous_output": True, "_output_reuse_input": True}


def desc(fmt: str, origin: list[int], ofmt: str = "NCHW", dtype: str = "float16") -> TensorDesc:
    """A desc whose storage shape is what `fmt` makes of `origin` (formats.transfer_shape)."""
    shape = formats.transfer_shape(ofmt, fmt, origin, dtype)
    assert shape is not None, (fmt, ofmt, origin)
    return TensorDesc(tuple(shape), dtype, fmt, tuple(origin), ofmt)


def _place(plan: MemoryPlan, tid: str, d: TensorDesc, offset: int) -> None:
    raw = formats.tensor_raw_size(d.shape, d.dtype)
    plan.tensors[tid] = TensorPlacement(tid, "feature_map", 2, offset, raw, raw, tid, 0, 0)


def joined(
    parts: list[TensorDesc],
    whole: TensorDesc,
    *,
    op: str = "ConcatD",
    attrs: dict[str, object] | None = None,
    offsets: list[int] | None = None,
    base: int = 1024,
) -> list[Unsound]:
    """A zero-copy concat/pack of `parts` into `whole`, inputs back to back from `base` (or at `offsets`)."""
    g = ComputeGraph("g")
    plan = MemoryPlan()
    producers = []
    at = base
    for k, d in enumerate(parts):
        p = g.add_node(OpDesc(f"p{k}", "ReLU", output_descs=[d]))
        producers.append(p)
        _place(plan, f"p{k}:0", d, offsets[k] if offsets else at)
        at += formats.tensor_raw_size(d.shape, d.dtype)
    node = g.add_node(OpDesc("v", op, {**ZERO_COPY, **(attrs or {})}, [*parts], [whole]))
    for k, p in enumerate(producers):
        g.add_data_edge(p, 0, node, k)
    _place(plan, "v:0", whole, base)
    return check_soundness(g, plan)


def split(
    whole: TensorDesc, parts: list[TensorDesc], *, op: str = "SplitD", attrs: dict[str, object] | None = None
) -> list[Unsound]:
    """A zero-copy split of `whole` into `parts`, back to back from the input's offset."""
    g = ComputeGraph("g")
    plan = MemoryPlan()
    x = g.add_node(OpDesc("x", "ReLU", output_descs=[whole]))
    _place(plan, "x:0", whole, 512)
    node = g.add_node(OpDesc("v", op, {**SPLIT_ZERO_COPY, **(attrs or {})}, [whole], [*parts]))
    g.add_data_edge(x, 0, node, 0)
    at = 512
    for j, d in enumerate(parts):
        _place(plan, f"v:{j}", d, at)
        at += formats.tensor_raw_size(d.shape, d.dtype)
    return check_soundness(g, plan)


def reasons(found: list[Unsound]) -> str:
    return " | ".join(str(u) for u in found)


# ---- every format: one sound and at least one unsound layout -------------------------------------------------
def test_nd() -> None:
    nd = lambda s: desc("ND", s, "ND")  # noqa: E731
    assert joined([nd([16, 16]), nd([8, 16])], nd([24, 16])) == []
    bad = joined([nd([16, 8]), nd([16, 8])], nd([16, 16]), attrs={"concat_dim": 1})
    assert "dim 0 = 16 lies outside the concat axis dim 1 in ND" in reasons(bad) and bad[0].operand == "input 0"


def test_nd_misplaced_input_names_where_it_must_be() -> None:
    nd = lambda s: desc("ND", s, "ND")  # noqa: E731
    bad = joined([nd([16, 16]), nd([16, 16])], nd([32, 16]), offsets=[1024, 2048])
    assert "input 1 is placed at feature_map@2048, but the elements it holds are at feature_map@1536" in reasons(bad)


def test_nchw() -> None:
    assert joined([desc("NCHW", [1, 8, 4, 4])] * 2, desc("NCHW", [1, 16, 4, 4]), attrs={"concat_dim": 1}) == []
    bad = joined([desc("NCHW", [2, 8, 4, 4])] * 2, desc("NCHW", [2, 16, 4, 4]), attrs={"concat_dim": 1})
    assert "N = 2 lies outside the concat axis C in NCHW" in reasons(bad)


def test_nhwc_storage_of_nchw_origin() -> None:
    # C is the innermost storage axis of NHWC: concatenating along it interleaves unless H = W = 1
    assert joined([desc("NHWC", [1, 8, 1, 1])] * 2, desc("NHWC", [1, 16, 1, 1]), attrs={"concat_dim": 1}) == []
    bad = joined([desc("NHWC", [1, 8, 2, 2])] * 2, desc("NHWC", [1, 16, 2, 2]), attrs={"concat_dim": 1})
    assert "H = 2 lies outside the concat axis C in NHWC" in reasons(bad)
    assert joined([desc("NHWC", [1, 8, 2, 2])] * 2, desc("NHWC", [2, 8, 2, 2])) == []  # along N


def test_nc1hwc0_padding_and_batch() -> None:
    five = lambda s: desc("NC1HWC0", s)  # noqa: E731
    assert joined([five([1, 32, 4, 4]), five([1, 16, 4, 4])], five([1, 48, 4, 4]), attrs={"concat_dim": 1}) == []
    bad = joined([five([1, 24, 4, 4])] * 2, five([1, 48, 4, 4]), attrs={"concat_dim": 1})
    assert reasons(bad) == (
        "zero-copy ConcatD 'v' input 1: C = 24 is not a multiple of C0 = 16 in NC1HWC0: "
        "input 1 starts inside input 0's padding"
    )
    bad = joined([five([2, 32, 4, 4])] * 2, five([2, 64, 4, 4]), attrs={"concat_dim": 1})
    assert "N = 2 lies outside the concat axis C in NC1HWC0" in reasons(bad)
    # along N, channel padding is each input's own: sound even with C = 24; so is a padded *last* input along C
    assert joined([five([1, 24, 4, 4])] * 2, five([2, 24, 4, 4])) == []
    assert joined([five([1, 32, 4, 4]), five([1, 24, 4, 4])], five([1, 56, 4, 4]), attrs={"concat_dim": 1}) == []


def test_nc1hwc0_int8_c0_is_32() -> None:
    five = lambda s: desc("NC1HWC0", s, dtype="int8")  # noqa: E731
    assert joined([five([1, 32, 2, 2])] * 2, five([1, 64, 2, 2]), attrs={"concat_dim": 1}) == []
    bad = joined([five([1, 16, 2, 2])] * 2, five([1, 32, 2, 2]), attrs={"concat_dim": 1})
    assert "C = 16 is not a multiple of C0 = 32 in NC1HWC0" in reasons(bad)


def test_ndc1hwc0() -> None:
    six = lambda s: desc("NDC1HWC0", s, "NCDHW")  # noqa: E731
    assert joined([six([1, 16, 1, 2, 2])] * 2, six([1, 32, 1, 2, 2]), attrs={"concat_dim": 1}) == []
    bad = joined([six([1, 16, 2, 2, 2])] * 2, six([1, 32, 2, 2, 2]), attrs={"concat_dim": 1})
    assert "D = 2 lies outside the concat axis C in NDC1HWC0" in reasons(bad)
    bad = joined([six([1, 8, 1, 2, 2])] * 2, six([1, 16, 1, 2, 2]), attrs={"concat_dim": 1})
    assert "C = 8 is not a multiple of C0 = 16 in NDC1HWC0" in reasons(bad)


def test_fractal_z() -> None:
    fz = lambda s: desc("FRACTAL_Z", s)  # noqa: E731
    assert joined([fz([16, 16, 1, 1])] * 2, fz([32, 16, 1, 1])) == []  # along N: C1HW = 1 before N1
    bad = joined([fz([16, 32, 1, 1])] * 2, fz([32, 32, 1, 1]))
    assert "C = 32 lies outside the concat axis N in FRACTAL_Z" in reasons(bad)
    assert joined([fz([16, 32, 1, 1])] * 2, fz([16, 64, 1, 1]), attrs={"concat_dim": 1}) == []  # along C
    bad = joined([fz([16, 24, 1, 1])] * 2, fz([16, 48, 1, 1]), attrs={"concat_dim": 1})
    assert "C = 24 is not a multiple of C0 = 16 in FRACTAL_Z" in reasons(bad)
    bad = joined([fz([8, 16, 1, 1])] * 2, fz([16, 16, 1, 1]))
    assert "N = 8 is not a multiple of N0 = 16 in FRACTAL_Z" in reasons(bad)


def test_fractal_nz() -> None:
    nz = lambda s: desc("FRACTAL_NZ", s, "ND")  # noqa: E731
    assert joined([nz([32, 16])] * 2, nz([64, 16])) == []  # rows, one column block
    bad = joined([nz([32, 32])] * 2, nz([64, 32]))
    assert "dim 1 = 32 lies outside the concat axis dim 0 in FRACTAL_NZ" in reasons(bad)
    assert joined([nz([32, 32])] * 2, nz([32, 64]), attrs={"concat_dim": 1}) == []  # columns: outermost blocks
    bad = joined([nz([32, 24])] * 2, nz([32, 48]), attrs={"concat_dim": 1})
    assert "dim 1 = 24 is not a multiple of C0 = 16 in FRACTAL_NZ" in reasons(bad)
    bad = joined([nz([24, 16])] * 2, nz([48, 16]))
    assert "dim 0 = 24 is not a multiple of M0 = 16 in FRACTAL_NZ" in reasons(bad)


def test_sub_byte_dtype_counts_bits() -> None:
    i4 = lambda s: desc("ND", s, "ND", "int4")  # noqa: E731
    assert joined([i4([4]), i4([4])], i4([8])) == []
    bad = joined([i4([3]), i4([3])], i4([6]))  # input 1 would start at bit 12, the plan puts it at byte 2
    assert "input 1 is placed at feature_map@1026, but the elements it holds are at feature_map@1025.5" in reasons(bad)


# ---- pack, split, unpack, and ops the checker cannot prove --------------------------------------------------
def test_pack() -> None:
    nd = lambda s: desc("ND", s, "ND")  # noqa: E731
    assert joined([nd([2, 256])] * 3, nd([3, 2, 256]), op="Pack") == []
    bad = joined([nd([2, 256])] * 3, nd([2, 3, 256]), op="Pack", attrs={"axis": 1})
    assert "dim 0 = 2 lies outside the pack axis dim 1" in reasons(bad)


def test_split_and_unpack() -> None:
    nd = lambda s: desc("ND", s, "ND")  # noqa: E731
    assert split(nd([4, 256]), [nd([1, 256]), nd([3, 256])], op="SplitVD") == []
    bad = split(nd([4, 256]), [nd([4, 128])] * 2, attrs={"split_dim": 1})
    assert bad and bad[0].operand == "output 0" and "lies outside the split axis" in reasons(bad)
    five = lambda s: desc("NC1HWC0", s)  # noqa: E731
    bad = split(five([1, 48, 2, 2]), [five([1, 24, 2, 2])] * 2, attrs={"split_dim": 1})
    assert "C = 24 is not a multiple of C0 = 16 in NC1HWC0: output 1 starts inside output 0's padding" in reasons(bad)
    assert split(nd([3, 8]), [nd([8])] * 3, op="Unpack") == []
    assert split(nd([3, 8]), [nd([3])] * 8, op="Unpack", attrs={"axis": 1}) != []


def test_an_unknown_virtual_op_or_an_unfed_input_cannot_be_proved() -> None:
    nd = lambda s: desc("ND", s, "ND")  # noqa: E731
    bad = joined([nd([16])], nd([16]), op="Identity")
    assert "a virtual op of type Identity has no meaning this checker knows" in reasons(bad)
    g = ComputeGraph("g")
    plan = MemoryPlan()
    p = g.add_node(OpDesc("p", "ReLU", output_descs=[nd([16])]))
    v = g.add_node(OpDesc("v", "ConcatD", dict(ZERO_COPY), [nd([16]), nd([16])], [nd([32])]))
    g.add_data_edge(p, 0, v, 0)
    _place(plan, "p:0", nd([16]), 0)
    _place(plan, "v:0", nd([32]), 0)
    assert "input 1 is not connected" in reasons(check_soundness(g, plan))


def test_a_part_in_another_memory_type_or_not_covering_the_whole() -> None:
    nd = lambda s: desc("ND", s, "ND")  # noqa: E731
    assert "the parts cover 32 of the output's 48" in reasons(joined([nd([16, 4])] * 2, nd([48, 4])))


# ---- the layouts are where the runtime stores every element ---------------------------------------------------
LAYOUTS = [
    ("ND", "ND", [3, 5]),
    ("NCHW", "NCHW", [2, 3, 2, 2]),
    ("NHWC", "NCHW", [2, 3, 2, 2]),
    ("HWCN", "NCHW", [2, 3, 2, 2]),
    ("NC1HWC0", "NCHW", [2, 20, 2, 3]),
    ("NC1HWC0", "NHWC", [2, 2, 3, 20]),
    ("NDC1HWC0", "NCDHW", [1, 20, 2, 2, 3]),
    ("FRACTAL_Z", "NCHW", [18, 20, 2, 3]),
    ("FRACTAL_Z", "ND", [20, 18]),
    ("FRACTAL_NZ", "ND", [2, 20, 35]),
    ("FRACTAL_NZ", "ND", [20]),
]


@pytest.mark.parametrize(("fmt", "ofmt", "origin"), LAYOUTS)
def test_layout_puts_every_element_where_the_runtime_stores_it(fmt: str, ofmt: str, origin: list[int]) -> None:
    d = desc(fmt, origin, ofmt)
    layout = layout_of(d)
    assert not isinstance(layout, str), layout
    values = np.arange(1, 1 + int(np.prod(origin)), dtype=np.float16).reshape(origin)
    stored = origin_to_storage(values, d).reshape(-1)
    for index in itertools.product(*(range(n) for n in origin)):
        bit = layout.bit_offset(index)
        assert bit % 16 == 0 and stored[bit // 16] == values[index], (index, bit)
    assert layout.raw_bytes == formats.tensor_raw_size(d.shape, d.dtype)


def test_a_storage_shape_the_format_does_not_make_is_not_a_layout() -> None:
    d = TensorDesc((1, 2, 4, 4, 8), "float16", "NC1HWC0", (1, 24, 4, 4), "NCHW")
    assert "is not what NC1HWC0 makes of NCHW [1, 24, 4, 4] ([1, 3, 4, 4, 8])" in str(layout_of(d))


# ---- in the compile: an unsound decision stops it, and no model is written --------------------------------------
C24 = (Path(__file__).parents[1] / "data" / "unsound_c24_concat.yaml").read_text(encoding="utf-8")


def test_compile_refuses_an_unsound_zero_copy_and_writes_no_model(tmp_path: Path) -> None:
    path = tmp_path / "c24.yaml"
    path.write_text(C24, encoding="utf-8")
    with pytest.raises(RulepassError) as exc:
        compile_graph(load_graph(path))
    d = exc.value.diagnostics[0]
    assert d.code == "zero-copy-unsound" and d.where == "cat" and "input 1 starts inside input 0's padding" in d.message
    model = tmp_path / "model.json"
    err = _Buf()
    assert main(["compile", str(path), "-o", str(model)], out=_Buf(), err=err) == 1
    assert "input 1 starts inside input 0's padding" in err.getvalue() and not model.exists()
    err = _Buf()
    assert main(["memory", str(path)], out=_Buf(), err=err) == 1 and "zero-copy-unsound" in err.getvalue()


def test_the_opt_out_says_loudly_what_it_skips(tmp_path: Path) -> None:
    path = tmp_path / "c24.yaml"
    path.write_text(C24, encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile_graph(load_graph(path), soundness=False)
    assert [w.category for w in caught] == [SoundnessWarning]
    err = _Buf()
    assert main(["compile", str(path), "--no-soundness-check", "--quiet"], out=_Buf(), err=err) == 0
    assert err.getvalue().count("WARNING: soundness check OFF") == 1


class _Buf:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, s: str) -> int:
        self.parts.append(s)
        return len(s)

    def getvalue(self) -> str:
        return "".join(self.parts)

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        pass
