"""The executor: compiled models run at their planned addresses, and zero-copy changes nothing, bit for bit."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rulepass.compiler.graph_file import copy_graph, load_graph_text
from rulepass.compiler.ir import ComputeGraph, OpDesc, TensorDesc
from rulepass.compiler.memory.assign import MemoryPlan
from rulepass.compiler.memory.verify import verify_plan
from rulepass.compiler.model import build_model
from rulepass.compiler.runtime import checksum, evaluate_graph, kernels, model_rank_size, run_model
from rulepass.compiler.runtime.executor import RunResult
from rulepass.examples import example_path

from rulepass.api import CompileResult, compile_graph, load_graph
from rulepass.base.diagnostics import RulepassError
from rulepass.cli import main

NO_TASK = ["ConcatNotaskPass", "PackNotaskPass", "SplitNotaskPass"]
EXAMPLES = sorted(p.name for p in example_path().parent.glob("*.yaml"))

# Concats along C of NC1HWC0 tensors (N = 1, every C a multiple of 16): a three-input one fed by a conv, a pool
# and an activation, and a second one after a batch norm; then back to NCHW, a classifier head and a softmax.
FIVE_HD = """
name: five_hd_concats
nodes:
  - {name: x, type: Data, attrs: {index: 0}, outputs: [{dtype: float16, shape: [1,16,8,8], format: NCHW}]}
  - name: to_5hd
    type: TransData
    attrs: {src_format: NCHW, dst_format: NC1HWC0}
    inputs: [x:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,16,8,8]}]
  - name: w1
    type: Const
    outputs: [{dtype: float16, format: FRACTAL_Z, origin_format: NCHW, origin_shape: [32,16,3,3]}]
  - name: w2
    type: Const
    outputs: [{dtype: float16, format: FRACTAL_Z, origin_format: NCHW, origin_shape: [32,32,1,1]}]
  - name: conv1
    type: Conv2D
    attrs: {strides: [1,1,1,1], pads: [1,1,1,1], dilations: [1,1,1,1], groups: 1, data_format: NCHW}
    inputs: [to_5hd:0, w1:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,32,8,8]}]
  - name: relu1
    type: ReLU
    inputs: [conv1:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,32,8,8]}]
  - name: pool
    type: MaxPool
    attrs: {ksize: [1,1,3,3], strides: [1,1,1,1], pads: [1,1,1,1], data_format: NCHW}
    inputs: [to_5hd:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,16,8,8]}]
  - name: sig
    type: Sigmoid
    inputs: [to_5hd:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,16,8,8]}]
  - name: cat1
    type: ConcatD
    attrs: {concat_dim: 1, N: 3}
    inputs: [relu1:0, pool:0, sig:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,64,8,8]}]
  - {name: scale, type: Const, outputs: ["float16[64]"]}
  - {name: offset, type: Const, outputs: ["float16[64]"]}
  - {name: mean, type: Const, outputs: ["float16[64]"]}
  - {name: var, type: Const, outputs: ["float16[64]"]}
  - name: bn
    type: BatchNorm
    attrs: {epsilon: 0.001}
    inputs: [cat1:0, scale:0, offset:0, mean:0, var:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,64,8,8]}]
  - name: conv2
    type: Conv2D
    attrs: {strides: [1,1,1,1], pads: [0,0,0,0], dilations: [1,1,1,1], groups: 1, data_format: NCHW}
    inputs: [relu1:0, w2:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,32,8,8]}]
  - name: cat2
    type: ConcatD
    attrs: {concat_dim: 1, N: 2}
    inputs: [bn:0, conv2:0]
    outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,96,8,8]}]
  - name: to_nchw
    type: TransData
    attrs: {src_format: NC1HWC0, dst_format: NCHW}
    inputs: [cat2:0]
    outputs: [{dtype: float16, shape: [1,96,8,8], format: NCHW}]
  - name: gap
    type: GlobalAveragePool
    inputs: [to_nchw:0]
    outputs: [{dtype: float16, shape: [1,96,1,1], format: NCHW}]
  - {name: flat, type: Reshape, inputs: [gap:0], outputs: ["float16[1,96]"]}
  - {name: fc_w, type: Const, outputs: ["float16[96,10]"]}
  - {name: fc, type: MatMulV2, inputs: [flat:0, fc_w:0], outputs: ["float16[1,10]"]}
  - {name: prob, type: SoftmaxV2, attrs: {axes: [-1]}, inputs: [fc:0], outputs: ["float16[1,10]"]}
  - {name: out, type: NetOutput, inputs: [prob:0, to_nchw:0]}
"""

# ND ops: a zero-copy split, a zero-copy pack, elementwise ops, transpose, reduction, cast, fill, AddN, Gemm.
ND_MIX = """
name: nd_mix
nodes:
  - {name: x, type: Data, attrs: {index: 0}, outputs: ["float[4,256]"]}
  - {name: y, type: Data, attrs: {index: 1}, outputs: ["float[2,256]"]}
  - name: split
    type: SplitD
    attrs: {split_dim: 0, num_split: 2}
    inputs: [x:0]
    outputs: ["float[2,256]", "float[2,256]"]
  - {name: t0, type: Tanh, inputs: [split:0], outputs: ["float[2,256]"]}
  - {name: s1, type: Sub, inputs: [split:1, y:0], outputs: ["float[2,256]"]}
  - {name: pk, type: Pack, attrs: {axis: 0, N: 2}, inputs: [t0:0, s1:0], outputs: ["float[2,2,256]"]}
  - {name: sq, type: Mul, inputs: [pk:0, pk:0], outputs: ["float[2,2,256]"]}
  - {name: half, type: Cast, attrs: {dst_type: 1}, inputs: [sq:0], outputs: ["float16[2,2,256]"]}
  - {name: tr, type: TransposeD, attrs: {perm: [2,0,1]}, inputs: [half:0], outputs: ["float16[256,2,2]"]}
  - {name: rs, type: ReduceSumD, attrs: {axes: [0], keep_dims: false}, inputs: [tr:0], outputs: ["float16[2,2]"]}
  - {name: ones, type: FillD, attrs: {value: 1.5, dims: [2,2]}, outputs: ["float16[2,2]"]}
  - {name: acc, type: AddN, attrs: {N: 3}, inputs: [rs:0, ones:0, rs:0], outputs: ["float16[2,2]"]}
  - {name: w, type: Const, outputs: ["float16[2,3]"]}
  - {name: gemm, type: Gemm, attrs: {alpha: 0.5}, inputs: [acc:0, w:0], outputs: ["float16[2,3]"]}
  - {name: act, type: Relu6, inputs: [gemm:0], outputs: ["float16[2,3]"]}
  - {name: out, type: NetOutput, inputs: [act:0, pk:0]}
"""


def _same(a: RunResult, b: RunResult) -> None:
    assert a.ranks == b.ranks and len(a.per_rank) == len(b.per_rank)
    for mine, theirs in zip(a.per_rank, b.per_rank, strict=True):
        assert list(mine) == list(theirs)
        for name, arr in mine.items():
            other = theirs[name]
            assert arr.dtype == other.dtype and arr.shape == other.shape, name
            assert np.array_equal(arr.view(np.uint8), other.view(np.uint8)), f"{name} differs"


def _compile_both(graph: ComputeGraph) -> tuple[CompileResult, CompileResult]:
    base = copy_graph(graph)
    return compile_graph(graph), compile_graph(base, disabled=NO_TASK)


def _prove_equivalent(graph: ComputeGraph, *, ranks: int | None = None) -> tuple[CompileResult, RunResult]:
    original = copy_graph(graph)
    nt, base = _compile_both(graph)
    ranks = ranks or model_rank_size(nt.model)
    with_nt = run_model(nt.model, ranks=ranks, seed=7)
    without = run_model(base.model, ranks=ranks, seed=7)
    direct = evaluate_graph(original, ranks=ranks, seed=7)
    _same(with_nt, without)
    _same(with_nt, direct)
    for outs in with_nt.per_rank:  # nothing read memory that no one wrote (arenas start as NaN)
        assert not any(np.isnan(a).any() for a in outs.values() if a.dtype.kind == "f")
    assert not set(with_nt.virtual) & set(with_nt.initialised)
    assert not set(with_nt.virtual) & set(with_nt.launched)
    assert set(with_nt.virtual) == set(nt.memory.no_task_nodes)
    assert not without.virtual
    return nt, with_nt


@pytest.fixture(scope="module")
def allgather() -> tuple[CompileResult, RunResult]:
    return _prove_equivalent(load_graph(example_path("allgather_concat.yaml")), ranks=2)


@pytest.mark.parametrize("name", [n for n in EXAMPLES if n != "allgather_concat.yaml"])
def test_example_is_the_same_with_and_without_zero_copy_and_as_the_direct_evaluation(name: str) -> None:
    _prove_equivalent(load_graph(example_path(name)))


def test_allgather_concat_runs_on_two_ranks_and_every_rank_gets_the_full_gathered_batch(
    allgather: tuple[CompileResult, RunResult],
) -> None:
    compiled, result = allgather
    assert result.virtual == ["concat"] and "concat" not in result.initialised
    assert result.launched == ["allgather_0", "allgather_1", "relu"]
    shards = [[r["grad_shard_0"], r["grad_shard_1"]] for r in result.inputs]
    assert not np.array_equal(shards[0][0], shards[1][0])  # the ranks hold different shards
    gathered = [np.concatenate([shards[0][k], shards[1][k]], axis=0) for k in (0, 1)]
    expected = np.maximum(np.concatenate(gathered, axis=0), np.float16(0))
    assert expected.shape == (4096, 12288)
    for rank in (0, 1):
        assert np.array_equal(result.per_rank[rank]["output_0"].view(np.uint16), expected.view(np.uint16))
    # events are honoured: every wait comes after its record on the rank's trace
    order = [(t.type, t.op) for t in result.trace]
    for e in compiled.model["events"]:
        assert order.index(("EVENT_RECORD", e["producer"])) < order.index(("EVENT_WAIT", e["consumer"]))
    with pytest.raises(RulepassError, match="collectives over 2 ranks"):
        run_model(compiled.model, ranks=1)


def test_concats_in_nc1hwc0_along_c_are_zero_copy_and_change_nothing() -> None:
    compiled, result = _prove_equivalent(load_graph_text(FIVE_HD, "five_hd.yaml"))
    assert {"cat1", "cat2"} <= set(result.virtual)
    plan = compiled.memory.plan.tensors
    assert plan["pool:0"].offset == plan["relu1:0"].offset + plan["relu1:0"].raw_size  # laid back to back
    assert result.outputs["output_0"].shape == (1, 10) and result.outputs["output_1"].shape == (1, 96, 8, 8)
    assert abs(float(result.outputs["output_0"].astype(np.float32).sum()) - 1.0) < 1e-2


def test_nd_split_pack_and_friends_change_nothing() -> None:
    _, result = _prove_equivalent(load_graph_text(ND_MIX, "nd_mix.yaml"))
    assert {"split", "pk"} <= set(result.virtual)


def test_an_imported_onnx_model_in_ascend_formats_changes_nothing() -> None:
    onnx = pytest.importorskip("onnx")
    from rulepass.compiler.onnx_import import import_onnx

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_squeezenet.onnx"
    if not path.exists():
        pytest.skip("onnx's light model zoo is not installed")
    _, result = _prove_equivalent(import_onnx(path, format_mode="ascend").graph)
    assert len(result.virtual) == 8


LIGHT_MODELS = [
    "light_bvlc_alexnet",
    "light_densenet121",
    "light_inception_v1",
    "light_inception_v2",
    "light_resnet50",
    "light_shufflenet",
    "light_squeezenet",
    "light_vgg19",
    "light_zfnet512",
]
SLOW_MODELS = {"light_densenet121", "light_inception_v2", "light_vgg19", "light_bvlc_alexnet", "light_zfnet512"}


@pytest.mark.parametrize(
    "name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW_MODELS else m for m in LIGHT_MODELS]
)
def test_every_light_model_is_the_same_with_and_without_zero_copy_and_as_the_direct_evaluation(name: str) -> None:
    onnx = pytest.importorskip("onnx")
    from rulepass.compiler.onnx_import import import_onnx

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{name}.onnx"
    if not path.exists():
        pytest.skip("onnx's light model zoo is not installed")
    _prove_equivalent(import_onnx(path).graph)  # seeded random weights replace the placeholder ones


def test_virtual_ops_are_neither_initialised_nor_launched_and_their_consumers_read_through_the_address() -> None:
    nt, base = _compile_both(load_graph(example_path("split_relu_concat.yaml")))
    a, b = run_model(nt.model), run_model(base.model)
    assert a.virtual == ["split", "concat"]
    kernels = ["input_0_split_Identity", "relu_0", "relu_1", "relu_2"]  # the first: GE's offline layout Identity
    assert a.initialised == a.launched == kernels
    assert {t.op for t in a.trace} == set(kernels)
    assert b.initialised == ["split", "relu_0", "relu_1", "relu_2", "concat"] and b.launched == b.initialised
    args = {t["op"]: t["kernel"]["args"] for t in nt.model["model_def"]["task"] if "kernel" in t}
    assert args["relu_1"][0] == "output:split:1"  # a consumer of the virtual split reads its output address
    split_in = nt.memory.plan.tensors["input_0_split_Identity:0"]
    assert nt.model["addresses"]["output:split:1"]["offset"] == split_in.offset + 2048


def _corrupt(r: CompileResult, anchor: str, offset: int, grow: int = 0) -> tuple[dict[str, Any], MemoryPlan]:
    plan = r.memory.plan
    tensors = dict(plan.tensors)
    tensors[anchor] = dataclasses.replace(tensors[anchor], offset=offset)
    arenas = [dataclasses.replace(a, size=a.size + grow) if a.region == "feature_map" else a for a in plan.arenas]
    bad = MemoryPlan(tensors, list(plan.workspaces), arenas, plan.schedule)
    return build_model(r.graph, bad, r.streams, r.tasks), bad


def test_a_corrupted_plan_changes_the_outputs_and_the_verifier_catches_it_first() -> None:
    r = compile_graph(load_graph(example_path("conv_nc1hwc0_concat.yaml")))
    good = run_model(r.model).outputs["output_0"]
    events = r.streams.event_pairs()
    arena = r.memory.plan.arena("feature_map")
    size = r.memory.plan.tensors["conv_b:0"].size
    cases = {
        # a zero-copy input moved away from its place after input 0: the concat output's second half is unwritten
        "conv_b:0": (arena, (size + 511) // 512 * 512, "layout"),
        # two live tensors overlapping: conv_a overwrites the image conv_b still has to read
        "trans_image:0": (r.memory.plan.tensors["conv_a:0"].offset, 0, "overlap"),
    }
    for anchor, (offset, grow, kind) in cases.items():
        model, bad = _corrupt(r, anchor, offset, grow)
        violations = verify_plan(r.graph, bad, events=events)
        assert any(v.kind == kind and anchor in v.tensors for v in violations), violations
        with pytest.raises(RulepassError, match=r"memory plan .* is unsafe"):
            run_model(model)
        wrong = run_model(model, verify=False).outputs["output_0"]
        assert wrong.tobytes() != good.tobytes(), anchor


def test_a_missing_kernel_names_the_op_type() -> None:
    text = """
name: fancy
nodes:
  - {name: x, type: Data, attrs: {index: 0}, outputs: ["float[2,32]"]}
  - {name: f, type: FancyOp, inputs: [x:0], outputs: ["float[2,32]"]}
  - {name: out, type: NetOutput, inputs: [f:0]}
"""
    g = load_graph_text(text, "fancy.yaml")
    with pytest.raises(RulepassError, match="no reference kernel for op type 'FancyOp'"):
        evaluate_graph(copy_graph(g))
    with pytest.raises(RulepassError, match="'FancyOp'") as exc:
        run_model(compile_graph(g).model)
    assert exc.value.diagnostics[0].where == "f"


def test_a_deadlock_and_a_broken_model_are_clear_errors() -> None:
    r = compile_graph(load_graph(example_path("split_relu_concat.yaml")))
    model = json.loads(r.model_text())
    wait = {"id": 99, "type": 2, "type_name": "MODEL_TASK_EVENT_WAIT", "stream_id": 0, "op": "relu_0", "event_id": 42}
    model["model_def"]["task"].insert(0, wait)
    with pytest.raises(RulepassError, match=r"deadlock.*event 42"):
        run_model(model)
    broken = json.loads(r.model_text())
    broken["addresses"]["output:relu_1:0"]["offset"] += 512
    with pytest.raises(RulepassError, match="memory plan puts it"):
        run_model(broken)
    del broken["memory_plan"]
    with pytest.raises(RulepassError, match="memory_plan"):
        run_model(broken)
    with pytest.raises(RulepassError, match="mapping"):
        run_model([])  # type: ignore[arg-type]


def test_inputs_are_bound_by_name_or_index_in_origin_or_storage_shape() -> None:
    r = compile_graph(load_graph(example_path("conv_nc1hwc0_concat.yaml")))
    image = np.random.default_rng(3).standard_normal((1, 3, 56, 56)).astype(np.float16)
    a = run_model(r.model, {"image": image})
    b = run_model(r.model, {"0": image.astype(np.float32)})  # same_kind cast
    assert np.array_equal(a.inputs[0]["image"], image)
    _same(a, b)
    with pytest.raises(RulepassError, match="not an input"):
        run_model(r.model, {"imgae": image})
    with pytest.raises(RulepassError, match="shape"):
        run_model(r.model, {"image": image[:, :2]})


def test_cli_run_prints_shapes_and_checksums_of_the_compiled_bundled_example(
    tmp_path: Path, allgather: tuple[CompileResult, RunResult]
) -> None:
    model = tmp_path / "model.json"
    out, err = io.StringIO(), io.StringIO()
    assert main(["compile", "-o", str(model)], out=out, err=err) == 0
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", str(model), "--seed", "7"], out=out, err=err) == 0, err.getvalue()
    text = out.getvalue()
    _, result = allgather
    for rank in (0, 1):
        digest = checksum(result.per_rank[rank]["output_0"])
        want = f"rank {rank} output_0 (relu:0): float16[4096,12288] sha256:{digest}"
        assert want in text, text
    assert "virtual op(s) neither initialised nor launched: concat" in text


def test_cli_run_compiles_a_graph_file_takes_inputs_and_reports_bad_files(tmp_path: Path) -> None:
    graph = str(example_path("split_relu_concat.yaml"))
    x = np.linspace(-1, 1, 3 * 1024, dtype=np.float16).reshape(3, 1024)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input=x)
    out, err = io.StringIO(), io.StringIO()
    outputs = tmp_path / "out.npz"
    argv = ["run", graph, "--inputs", str(inputs), "--format", "json", "-o", str(outputs), "--ranks", "2"]
    assert main(argv, out=out, err=err) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    row = doc["outputs"][0]
    assert (row["shape"], row["dtype"], doc["virtual"]) == ([3, 1024], "float16", ["split", "concat"])
    assert row["sha256"] == checksum(np.maximum(x, 0)) == doc["outputs"][1]["sha256"]
    with np.load(outputs) as z:
        assert sorted(z.files) == ["rank0.output_0", "rank1.output_0"]
        assert np.array_equal(z["rank1.output_0"], np.maximum(x, 0))
    bad_model = tmp_path / "bad.json"
    bad_model.write_text('{"model_def": {"name": "m"}, "addresses": {}}')
    bad_npz = tmp_path / "bad.npz"
    bad_npz.write_bytes(b"not a zip")
    for argv in (
        ["run", str(bad_model)],
        ["run", str(tmp_path / "missing.json")],
        ["run", graph, "--inputs", str(bad_npz)],
        ["run", graph, "--inputs", str(tmp_path / "nope.npz")],
    ):
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, out=out, err=err) == 1, (argv, err.getvalue())
        assert "error" in err.getvalue() and "Traceback" not in err.getvalue()


# ---- kernels --------------------------------------------------------------------------------------------------
def _desc(shape: tuple[int, ...], fmt: str = "NCHW", dtype: str = "float") -> TensorDesc:
    return TensorDesc(shape, dtype, fmt, shape, fmt)


def test_layouts_round_trip_and_place_elements_where_ge_does() -> None:
    from rulepass.compiler import formats

    rng = np.random.default_rng(0)
    for oshape, ofmt, fmt in [
        ((2, 3, 4, 5), "NCHW", "NC1HWC0"),
        ((2, 4, 5, 3), "NHWC", "NC1HWC0"),
        ((20, 3, 3, 3), "NCHW", "FRACTAL_Z"),
        ((3, 3, 3, 20), "HWCN", "FRACTAL_Z"),
        ((33, 17), "ND", "FRACTAL_Z"),
        ((2, 33, 17), "ND", "FRACTAL_NZ"),
        ((2, 3, 4, 5, 6), "NCDHW", "NDC1HWC0"),
        ((2, 3, 4, 5), "NCHW", "NHWC"),
        ((3,), "NCHW", "NC1HWC0"),
    ]:
        storage = formats.transfer_shape(ofmt, fmt, oshape, "float")
        assert storage is not None
        d = TensorDesc(storage, "float", fmt, oshape, ofmt)
        x = rng.standard_normal(oshape).astype(np.float32)
        s = kernels.origin_to_storage(x, d)
        assert s.shape == storage
        assert np.array_equal(kernels.storage_to_origin(s, d), x), (oshape, fmt)
    x = rng.standard_normal((1, 3, 2, 2)).astype(np.float32)
    s = kernels.origin_to_storage(x, TensorDesc((1, 1, 2, 2, 16), "float", "NC1HWC0", (1, 3, 2, 2), "NCHW"))
    assert s[0, 0, 1, 0, 2] == x[0, 2, 1, 0] and s[0, 0, 1, 0, 5] == 0  # C padded to C0 with zeros
    w = rng.standard_normal((20, 18, 3, 2)).astype(np.float32)
    fz = kernels.origin_to_storage(w, TensorDesc((12, 2, 16, 16), "float", "FRACTAL_Z", (20, 18, 3, 2), "NCHW"))
    for n, c, h, ww in [(17, 17, 2, 1), (3, 5, 0, 1), (19, 2, 1, 0)]:  # (C1 H W, N1, N0, C0)
        assert fz[(c // 16) * 6 + h * 2 + ww, n // 16, n % 16, c % 16] == w[n, c, h, ww]


def _naive_conv(
    x: np.ndarray[Any, Any], w: np.ndarray[Any, Any], stride: int, pads: list[int], dil: int, groups: int
) -> np.ndarray[Any, Any]:
    t, b, left, r = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, b), (left, r)))
    n, _, hp, wp = xp.shape
    o, cg, kh, kw = w.shape
    ho, wo = (hp - (kh - 1) * dil - 1) // stride + 1, (wp - (kw - 1) * dil - 1) // stride + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(ho):
            for j in range(wo):
                patch = xp[:, g * cg : (g + 1) * cg, i * stride : i * stride + (kh - 1) * dil + 1 : dil]
                patch = patch[..., j * stride : j * stride + (kw - 1) * dil + 1 : dil]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out


def test_conv2d_matches_a_naive_convolution_in_nchw_and_nhwc() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    ref = _naive_conv(x, w, 2, [1, 0, 2, 1], 2, 2) + bias.reshape(1, -1, 1, 1)
    attrs: dict[str, Any] = {"strides": [1, 1, 2, 2], "pads": [1, 0, 2, 1], "dilations": [1, 1, 2, 2], "groups": 2}
    op = OpDesc(
        "c", "Conv2D", {**attrs, "data_format": "NCHW"}, [_desc(x.shape), _desc(w.shape), _desc((6,), "ND")],
        [_desc(ref.shape)],
    )  # fmt: skip
    assert np.abs(kernels.run_kernel(op, [x, w, bias])[0] - ref).max() < 1e-4
    xn, wn, refn = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), ref.transpose(0, 2, 3, 1)
    nhwc = {**attrs, "strides": [1, 2, 2, 1], "dilations": [1, 2, 2, 1], "data_format": "NHWC"}
    op = OpDesc(
        "c", "Conv2D", nhwc, [_desc(xn.shape, "NHWC"), _desc(wn.shape, "HWCN"), _desc((6,), "ND")],
        [_desc(refn.shape, "NHWC")],
    )  # fmt: skip
    assert np.abs(kernels.run_kernel(op, [xn.copy(), wn.copy(), bias])[0] - refn).max() < 1e-4


def test_pooling_softmax_lrn_matmul_and_batch_norm() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 7, 7)).astype(np.float32)

    def run(op_type: str, attrs: dict[str, Any], out_shape: tuple[int, ...], *extra: Any) -> Any:
        ins = [x, *extra]
        op = OpDesc("k", op_type, attrs, [_desc(a.shape) for a in ins], [_desc(out_shape)])
        return kernels.run_kernel(op, ins)[0]

    mp = run("MaxPool", {"ksize": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "padding": "VALID"}, (1, 2, 3, 3))
    assert mp[0, 1, 1, 2] == x[0, 1, 2:5, 4:7].max()
    ap = run("AvgPool", {"ksize": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "padding": "SAME"}, (1, 2, 4, 4))
    assert np.isclose(ap[0, 0, 0, 0], x[0, 0, 0:2, 0:2].mean())  # padding excluded from the count
    ceil = run("MaxPool", {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "ceil_mode": True}, (1, 2, 4, 4))
    assert ceil[0, 0, 3, 3] == x[0, 0, 6, 6]
    assert np.allclose(run("GlobalAveragePool", {}, (1, 2, 1, 1))[..., 0, 0], x.mean(axis=(2, 3)))
    assert np.allclose(run("SoftmaxV2", {"axes": [1]}, x.shape).sum(axis=1), 1)
    lrn = run("LRN", {"size": 3, "alpha": 0.1, "beta": 0.75, "bias": 1.0}, x.shape)
    assert np.isclose(lrn[0, 1, 0, 0], x[0, 1, 0, 0] / (1 + 0.1 / 3 * (x[0, 0:2, 0, 0] ** 2).sum()) ** 0.75)
    a, b = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    op = OpDesc("m", "MatMulV2", {"transpose_x2": True}, [_desc(a.shape, "ND"), _desc(b.shape, "ND")], [_desc((3, 4))])
    assert np.allclose(kernels.run_kernel(op, [a, b])[0], a @ b.T, atol=1e-5)
    ones = np.ones(2, dtype=np.float32)
    bn_in = [x, ones * 2, ones * 0.5, ones * 0.25, ones * 4]  # scale, offset, mean, variance
    op = OpDesc("bn", "BatchNorm", {"epsilon": 0.0}, [_desc(v.shape) for v in bn_in], [_desc(x.shape)])
    assert np.allclose(kernels.run_kernel(op, bn_in)[0], (x - 0.25) / 2 * 2 + 0.5)


def test_the_registry_covers_the_brief_and_reports_unknown_types() -> None:
    wanted = [
        *("ReLU", "Sigmoid", "Tanh", "Add", "Sub", "Mul", "Div", "AddN", "Sum", "ConcatD", "ConcatV2D", "Pack"),
        *("SplitD", "SplitVD", "Reshape", "Squeeze", "Unsqueeze", "ExpandDims", "Flatten", "TransposeD", "Identity"),
        *("Dropout", "Conv2D", "MaxPool", "AvgPool", "GlobalAveragePool", "BatchNorm", "LRN", "MatMul", "MatMulV2"),
        *("Gemm", "Softmax", "SoftmaxV2", "TransData", "HcomAllGather", "ReduceSumD", "Cast", "Fill"),
        "ConstantOfShape",
    ]
    assert [t for t in wanted if not kernels.has_kernel(t)] == []
    assert kernels.kernel_for("HcomAllGather").collective
    with pytest.raises(RulepassError, match="op type 'Conv2d'") as exc:
        kernels.kernel_for("Conv2d", "n")
    assert exc.value.diagnostics[0].hint == "did you mean 'Conv2D'?"


def test_a_task_less_op_without_a_kernel_that_aliases_its_input_still_runs() -> None:
    """The pre-flight asks a kernel only of what the model computes: a GE_LOCAL Bitcast has no task and no
    kernel, and its consumers read its input's memory."""
    g = load_graph_text(
        """
name: bc
nodes:
  - {name: x, type: Data, attrs: {index: 0}, outputs: ['float[4,8]']}
  - {name: r0, type: Relu, inputs: [x:0], outputs: ['float[4,8]']}
  - {name: bc, type: Bitcast, inputs: [r0:0], outputs: ['int32[4,8]']}
  - {name: out, type: NetOutput, inputs: [bc:0]}
""",
        "bc.yaml",
    )
    assert not kernels.has_kernel("Bitcast")
    x = np.arange(-16, 16, dtype=np.float32).reshape(4, 8)
    out = run_model(compile_graph(g).model, {"x": x}).outputs["output_0"]
    assert np.array_equal(out, np.maximum(x, 0).view(np.int32))
    with pytest.raises(RulepassError, match="Bitcast"):
        evaluate_graph(g, {"x": x})  # the direct evaluation computes every op
