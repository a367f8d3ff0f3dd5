"""Imported ONNX ops run as ONNX defines them: each model is imported, compiled (with and without the no-task
passes) and run, and must give onnx.reference's outputs on the same inputs; If and Loop run their subgraphs;
an op nothing can run is one error before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from rulepass.compiler.graph_file import copy_graph  # noqa: E402
from rulepass.compiler.onnx_import import import_onnx  # noqa: E402
from rulepass.compiler.runtime import evaluate_graph, kernels, onnx_ops  # noqa: E402

from rulepass.api import compile_graph, run_model  # noqa: E402
from rulepass.base.diagnostics import RulepassError  # noqa: E402

NO_TASK = ["ConcatNotaskPass", "PackNotaskPass", "SplitNotaskPass"]
RNG = np.random.default_rng(31)


def _vi(name: str, arr_or_type: Any, shape: list[int] | None = None) -> Any:
    if isinstance(arr_or_type, np.ndarray):
        return h.make_tensor_value_info(name, h.np_dtype_to_tensor_dtype(arr_or_type.dtype), list(arr_or_type.shape))
    return h.make_tensor_value_info(name, arr_or_type, shape)


def _model(
    nodes: list[Any],
    feeds: dict[str, np.ndarray],
    outputs: list[tuple[str, int, list[int]]],
    *,
    inits: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    domains: tuple[tuple[str, int], ...] = (),
) -> Any:
    graph = h.make_graph(
        nodes,
        "m",
        [_vi(k, v) for k, v in feeds.items()],
        [_vi(n, t, s) for n, t, s in outputs],
        initializer=[onnx.numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    ops = [h.make_opsetid("", opset), *(h.make_opsetid(d, v) for d, v in domains)]
    return h.make_model(graph, opset_imports=ops)


def _close(ours: np.ndarray, ref: np.ndarray, what: str) -> None:
    ref = np.asarray(ref)
    assert ours.shape == ref.shape, what
    if ref.dtype.kind == "f":
        assert ours.dtype == ref.dtype, what
        scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
        assert float(np.max(np.abs(ours.astype(np.float64) - ref), initial=0.0)) <= 1e-6 * scale, what
    else:
        assert np.array_equal(ours, ref.astype(ours.dtype)), what


def _check(
    model: Any,
    feeds: dict[str, np.ndarray],
    tmp_path: Path,
    mode: str = "keep",
    oracle: list[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Import, compile with and without the no-task passes, run both and the direct evaluation: bit-identical
    among themselves, and onnx.reference's outputs (within 1e-6 relative; `oracle` where it is wrong)."""
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    ref = oracle if oracle is not None else ReferenceEvaluator(model).run(None, feeds)
    graph = import_onnx(path, format_mode=mode).graph
    base, direct_graph = copy_graph(graph), copy_graph(graph)
    with_nt = run_model(compile_graph(graph), feeds)
    without = run_model(compile_graph(base, disabled=NO_TASK), feeds)
    direct = evaluate_graph(direct_graph, feeds)
    outs = [with_nt.outputs[f"output_{k}"] for k in range(len(ref))]
    for k, ours in enumerate(outs):
        for other in (without, direct):
            theirs = other.outputs[f"output_{k}"]
            assert ours.dtype == theirs.dtype and np.array_equal(
                ours.reshape(-1).view(np.uint8), theirs.reshape(-1).view(np.uint8)
            ), k
        _close(ours, ref[k], f"output {k}")
    return outs


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_erf_where_max_min_not_and_a_zero_copy_concat_of_their_results(tmp_path: Path) -> None:
    feeds = {"x": _f(2, 4), "y": _f(1, 4), "c": RNG.random((2, 4)) < 0.5}
    nodes = [
        h.make_node("Erf", ["x"], ["e"]),
        h.make_node("Where", ["c", "e", "y"], ["w"]),
        h.make_node("Max", ["x", "y", "w"], ["mx"]),
        h.make_node("Min", ["x", "y"], ["mn"]),
        h.make_node("Not", ["c"], ["nc"]),
        h.make_node("Concat", ["mx", "mn"], ["cat"], axis=0),
        h.make_node("Relu", ["cat"], ["r"]),
    ]
    outs = [("r", T.FLOAT, [4, 4]), ("nc", T.BOOL, [2, 4]), ("w", T.FLOAT, [2, 4])]
    model = _model(nodes, feeds, outs)
    _check(model, feeds, tmp_path)
    compiled = compile_graph(import_onnx(tmp_path / "m.onnx").graph)
    assert compiled.memory.no_task_nodes == ["Concat_5"]  # zero-copy: onnx.reference ops write into its parts


def test_resize_linear_and_nearest_with_constant_scales(tmp_path: Path) -> None:
    feeds = {"x": _f(1, 2, 4, 4)}
    inits = {"scales": np.array([1, 1, 2, 2], dtype=np.float32)}
    nodes = [
        h.make_node("Resize", ["x", "", "scales"], ["lin"], mode="linear"),
        h.make_node("Resize", ["x", "", "scales"], ["near"], mode="nearest", nearest_mode="floor"),
    ]
    outs = [("lin", T.FLOAT, [1, 2, 8, 8]), ("near", T.FLOAT, [1, 2, 8, 8])]
    _check(_model(nodes, feeds, outs, inits=inits, opset=13), feeds, tmp_path)


def test_conv_transpose_in_ascend_formats(tmp_path: Path) -> None:
    feeds = {"x": _f(1, 2, 3, 3)}
    inits = {"w": (_f(2, 3, 3, 3) * 0.3).astype(np.float32)}  # 54 values: the importer keeps them
    nodes = [h.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2]), h.make_node("Relu", ["y"], ["r"])]
    model = _model(nodes, feeds, [("r", T.FLOAT, [1, 3, 7, 7])], inits=inits)
    _check(model, feeds, tmp_path, mode="ascend")


def test_shape_math_expand_range_gather_size(tmp_path: Path) -> None:
    feeds = {"x": _f(3, 1), "d": _f(5, 4), "start": np.array(2, np.int64), "limit": np.array(12, np.int64)}
    inits = {"shape": _i64(3, 4), "idx": _i64(0, 4, 2, 2, 1, 3).reshape(2, 3), "delta": np.array(2, np.int64)}
    nodes = [
        h.make_node("Expand", ["x", "shape"], ["ex"]),
        h.make_node("Range", ["start", "limit", "delta"], ["rg"]),
        h.make_node("Gather", ["d", "idx"], ["g"], axis=0),
        h.make_node("Shape", ["g"], ["sh"]),
        h.make_node("Size", ["d"], ["sz"]),
    ]
    outs = [
        ("ex", T.FLOAT, [3, 4]),
        ("rg", T.INT64, [5]),
        ("g", T.FLOAT, [2, 3, 4]),
        ("sh", T.INT64, [3]),
        ("sz", T.INT64, []),
    ]
    got = _check(_model(nodes, feeds, outs, inits=inits), feeds, tmp_path)
    assert got[1].tolist() == [2, 4, 6, 8, 10] and got[3].tolist() == [2, 3, 4] and int(got[4]) == 20


def test_pad_constant_and_reflect_and_slice_with_bounds_as_inputs(tmp_path: Path) -> None:
    feeds = {"x": _f(4, 6), "starts": _i64(1, 5), "ends": _i64(4, 0), "axes": _i64(0, 1), "steps": _i64(1, -2)}
    inits = {"pads": _i64(1, 0, 0, 2), "cval": np.array(1.5, np.float32)}
    nodes = [
        h.make_node("Pad", ["x", "pads", "cval"], ["pc"], mode="constant"),
        h.make_node("Pad", ["x", "pads"], ["pr"], mode="reflect"),
        h.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"]),
    ]
    outs = [("pc", T.FLOAT, [5, 8]), ("pr", T.FLOAT, [5, 8]), ("s", T.FLOAT, [3, 3])]
    _check(_model(nodes, feeds, outs, inits=inits), feeds, tmp_path)


def test_lstm_and_gru(tmp_path: Path) -> None:
    hidden = 5
    feeds = {
        "X": _f(3, 2, 4),
        "W": _f(1, 4 * hidden, 4) * 0.5,
        "R": _f(1, 4 * hidden, hidden) * 0.5,
        "B": _f(1, 8 * hidden) * 0.1,
        "Wg": _f(1, 3 * hidden, 4) * 0.5,
        "Rg": _f(1, 3 * hidden, hidden) * 0.5,
    }
    nodes = [
        h.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Y_h", "Y_c"], hidden_size=hidden),
        h.make_node("GRU", ["X", "Wg", "Rg"], ["G", "G_h"], hidden_size=hidden, linear_before_reset=1),
    ]
    outs = [
        ("Y", T.FLOAT, [3, 1, 2, hidden]),
        ("Y_h", T.FLOAT, [1, 2, hidden]),
        ("Y_c", T.FLOAT, [1, 2, hidden]),
        ("G", T.FLOAT, [3, 1, 2, hidden]),
    ]
    _check(_model(nodes, feeds, outs), feeds, tmp_path)


def test_layer_normalization_einsum_cumsum_trilu(tmp_path: Path) -> None:
    feeds = {"x": _f(2, 3, 4), "a": _f(3, 4), "b": _f(4, 5)}
    inits = {"scale": _f(4), "bias": _f(4), "axis": np.array(1, np.int64)}
    nodes = [
        h.make_node("LayerNormalization", ["x", "scale", "bias"], ["ln"], axis=-1, epsilon=1e-5),
        h.make_node("Einsum", ["a", "b"], ["es"], equation="ij,jk->ik"),
        h.make_node("CumSum", ["a", "axis"], ["cs"], reverse=1),
        h.make_node("Trilu", ["a"], ["tr"], upper=0),
    ]
    outs = [("ln", T.FLOAT, [2, 3, 4]), ("es", T.FLOAT, [3, 5]), ("cs", T.FLOAT, [3, 4]), ("tr", T.FLOAT, [3, 4])]
    _check(_model(nodes, feeds, outs, inits=inits), feeds, tmp_path)


def test_topk_nonzero_scatternd_gatherelements(tmp_path: Path) -> None:
    x = _f(2, 5)
    x[0, 1] = x[1, 3] = 0.0
    feeds = {"x": x, "upd": _f(2, 5), "gi": _i64(0, 4, 1, 2, 3, 0).reshape(2, 3)}
    inits = {"k": _i64(3), "ind": _i64(1, 0).reshape(2, 1)}
    nodes = [
        h.make_node("TopK", ["x", "k"], ["tv", "ti"], axis=1),
        h.make_node("NonZero", ["x"], ["nz"]),
        h.make_node("ScatterND", ["x", "ind", "upd"], ["sc"]),
        h.make_node("GatherElements", ["x", "gi"], ["ge"], axis=1),
    ]
    outs = [
        ("tv", T.FLOAT, [2, 3]),
        ("ti", T.INT64, [2, 3]),
        ("nz", T.INT64, [2, 8]),
        ("sc", T.FLOAT, [2, 5]),
        ("ge", T.FLOAT, [2, 3]),
    ]
    _check(_model(nodes, feeds, outs, inits=inits), feeds, tmp_path)


def test_quantize_dequantize_pair_and_the_integer_ops(tmp_path: Path) -> None:
    feeds = {
        "x": _f(2, 4),
        "a8": RNG.integers(0, 255, (2, 3), dtype=np.uint8),
        "b8": RNG.integers(0, 255, (3, 4), dtype=np.uint8),
        "img": RNG.integers(0, 255, (1, 1, 4, 4), dtype=np.uint8),
        "ker": RNG.integers(0, 255, (2, 1, 2, 2), dtype=np.uint8),
    }
    zp = h.make_tensor("zpv", T.UINT8, [], [128])
    nodes = [
        h.make_node("Constant", [], ["zp"], value=zp),
        h.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
        h.make_node("DequantizeLinear", ["q", "s", "zp"], ["dq"]),
        h.make_node("MatMulInteger", ["a8", "b8", "zp", "zp"], ["mi"]),
        h.make_node("ConvInteger", ["img", "ker", "zp", "zp"], ["ci"]),
        h.make_node("QLinearMatMul", ["a8", "s", "zp", "b8", "s", "zp", "s2", "zp"], ["qm"]),
        h.make_node("QLinearConv", ["img", "s", "zp", "ker", "s", "zp", "s2", "zp"], ["qc"]),
    ]
    inits = {"s": np.array(0.05, np.float32), "s2": np.array(0.5, np.float32)}
    outs = [
        ("q", T.UINT8, [2, 4]),
        ("dq", T.FLOAT, [2, 4]),
        ("mi", T.INT32, [2, 4]),
        ("ci", T.INT32, [1, 2, 3, 3]),
        ("qm", T.UINT8, [2, 4]),
        ("qc", T.UINT8, [1, 2, 3, 3]),
    ]
    model = _model(nodes, feeds, outs, inits=inits, opset=13)
    # onnx.reference implements DequantizeLinear from opset 19 (which only adds types): the oracle runs the same
    # model stamped 19, the runtime the opset-13 model (through the same later implementation)
    later = _model(nodes, feeds, outs, inits=inits, opset=19)
    got = _check(model, feeds, tmp_path, oracle=ReferenceEvaluator(later).run(None, feeds))
    assert np.max(np.abs(got[1] - feeds["x"])) <= 0.025 + 1e-6  # the pair round-trips within half a step


def test_softmax_runs_with_the_models_opset(tmp_path: Path) -> None:
    """Opset 11's Softmax normalises over every axis from `axis` on (13's over `axis` alone)."""
    feeds = {"x": _f(2, 3, 4)}
    model = _model([h.make_node("Softmax", ["x"], ["y"], axis=1)], feeds, [("y", T.FLOAT, [2, 3, 4])], opset=11)
    # onnx.reference has only the opset-13 Softmax, so the oracle is the opset-11 definition itself
    flat = feeds["x"].reshape(2, 12)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).reshape(2, 3, 4)
    got = _check(model, feeds, tmp_path, oracle=[want])
    assert abs(float(got[0][0].sum()) - 1.0) < 1e-5  # one distribution over axes 1 and 2


def _if_model() -> Any:
    x, k = _vi("x", T.FLOAT, [2, 3]), _vi("k", T.FLOAT, [2, 3])
    then = h.make_graph(
        [h.make_node("Erf", ["x"], ["t0"]), h.make_node("Mul", ["t0", "k"], ["t"])],
        "then",
        [],
        [_vi("t", T.FLOAT, [2, 3])],
    )
    other = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", T.FLOAT, [2, 3])])
    nodes = [
        h.make_node("Relu", ["x0"], ["x"]),
        h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
        h.make_node("Add", ["y", "k"], ["z"]),
    ]
    graph = h.make_graph(
        nodes, "ifm", [_vi("x0", T.FLOAT, [2, 3]), _vi("c", T.BOOL, []), k], [_vi("z", T.FLOAT, [2, 3])], value_info=[x]
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


@pytest.mark.parametrize("cond", [True, False])
def test_if_runs_the_branch_its_condition_picks_with_outer_values(tmp_path: Path, cond: bool) -> None:
    feeds = {"x0": _f(2, 3), "c": np.array(cond), "k": _f(2, 3)}
    _check(_if_model(), feeds, tmp_path)


def test_loop_feeds_its_carried_values_back_and_stacks_its_scan_outputs(tmp_path: Path) -> None:
    s, v = _vi("s", T.FLOAT, [2, 3]), _vi("x", T.FLOAT, [2, 3])
    body = h.make_graph(
        [
            h.make_node("Identity", ["cin"], ["cout"]),
            h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
            h.make_node("Mul", ["x", "fi"], ["xi"]),
            h.make_node("Add", ["s", "xi"], ["s2"]),
            h.make_node("Erf", ["s2"], ["scan"]),
        ],
        "body",
        [_vi("i", T.INT64, []), _vi("cin", T.BOOL, []), s],
        [_vi("cout", T.BOOL, []), _vi("s2", T.FLOAT, [2, 3]), _vi("scan", T.FLOAT, [2, 3])],
    )
    nodes = [h.make_node("Loop", ["n", "c", "s0"], ["final", "scans"], body=body)]
    inputs = [_vi("n", T.INT64, []), _vi("c", T.BOOL, []), _vi("s0", T.FLOAT, [2, 3]), v]
    graph = h.make_graph(nodes, "loopm", inputs, [_vi("final", T.FLOAT, [2, 3]), _vi("scans", T.FLOAT, [4, 2, 3])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    feeds = {"n": np.array(4, np.int64), "c": np.array(True), "s0": _f(2, 3), "x": _f(2, 3)}
    # scan outputs gain a leading iteration axis (ONNX shape inference, onnxruntime); onnx.reference's Loop
    # concatenates them along axis 0 instead (np.vstack), so its scan output is compared reshaped
    final, scans = ReferenceEvaluator(model).run(None, feeds)
    got = _check(model, feeds, tmp_path, oracle=[final, scans.reshape(4, 2, 3)])
    assert np.allclose(got[0], feeds["s0"] + 6 * feeds["x"], atol=1e-5)  # 0 + 1 + 2 + 3 times x


def test_an_op_nothing_can_run_is_one_error_naming_it_before_any_work(tmp_path: Path) -> None:
    feeds = {"x": _f(2, 3)}
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("Frobnicate", ["r"], ["y"], domain="com.example")]
    model = _model(nodes, feeds, [("y", T.FLOAT, [2, 3])], domains=(("com.example", 1),))
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    graph = import_onnx(path).graph
    for run in (lambda: evaluate_graph(copy_graph(graph), feeds), lambda: run_model(compile_graph(graph), feeds)):
        with pytest.raises(RulepassError, match=r"Frobnicate_1.*com\.example::Frobnicate.*onnx\.reference") as exc:
            run()
        assert exc.value.diagnostics[0].where == "Frobnicate_1"


def test_the_built_op_is_cached_not_rebuilt_per_call(tmp_path: Path) -> None:
    feeds = {"x": _f(2, 3)}
    nodes = [h.make_node("Erf", ["x"], ["a"]), h.make_node("Erf", ["a"], ["b"]), h.make_node("Erf", ["b"], ["y"])]
    model = _model(nodes, feeds, [("y", T.FLOAT, [2, 3])], opset=15)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    compiled = compile_graph(import_onnx(path).graph)
    onnx_ops.clear_cache()
    run_model(compiled, feeds)
    assert onnx_ops.cache_info().misses == 1  # three Erf nodes of one signature: one op built
    run_model(compiled, feeds)
    assert onnx_ops.cache_info().misses == 1


def test_every_op_the_issue_names_is_runnable_by_onnx_reference() -> None:
    runnable = set(onnx_ops.onnx_op_types())
    named = {"Resize", "ConvTranspose", "Erf", "Expand", "Range", "Gather", "Shape", "Pad", "Where", "Max", "Min"}
    named |= {"LSTM", "GRU", "Size", "Not", "LayerNormalization", "Slice", "QuantizeLinear", "DequantizeLinear"}
    named |= {"QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "Einsum", "CumSum", "TopK", "NonZero"}
    named |= {"ScatterND", "GatherElements", "Trilu"}
    assert named <= runnable


def test_hand_written_kernels_stay_where_they_matter_and_onnx_runs_the_rest(tmp_path: Path) -> None:
    feeds = {"x": _f(1, 2, 6, 6)}
    inits = {"w": (_f(2, 2, 3, 3) * 0.3).astype(np.float32)}
    nodes = [
        h.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        h.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], dilations=[2, 2]),  # dilations: ONNX's to run
        h.make_node("Relu", ["p"], ["r"]),
    ]
    model = _model(nodes, feeds, [("r", T.FLOAT, [1, 2, 4, 4])], inits=inits)
    _check(model, feeds, tmp_path)
    graph = import_onnx(tmp_path / "m.onnx").graph
    by_type = {n.op.attrs.get("_onnx_op_type"): n for n in graph.all_nodes()}
    assert onnx_ops.kernel_of(by_type["Conv"]) is kernels.kernel_for("Conv2D")
    assert onnx_ops.kernel_of(by_type["MaxPool"]) is not kernels.kernel_for("MaxPool")
    assert onnx_ops.kernel_of(by_type["Relu"]) is not kernels.kernel_for(by_type["Relu"].type)  # ONNX runs it
    by_type["Relu"].op.attrs.pop("_onnx_op_type")  # a node not from ONNX runs its GE type's kernel
    assert onnx_ops.kernel_of(by_type["Relu"]) is kernels.kernel_for(by_type["Relu"].type)


def test_several_unrunnable_ops_are_one_error_naming_the_first_and_counting_the_rest(tmp_path: Path) -> None:
    feeds = {"x": _f(2, 3)}
    nodes = [
        h.make_node("Frobnicate", ["x"], ["y"], domain="com.example"),
        h.make_node("Frobnicate", ["x"], ["z"], domain="com.example"),
    ]
    model = _model(nodes, feeds, [("y", T.FLOAT, [2, 3]), ("z", T.FLOAT, [2, 3])], domains=(("com.example", 1),))
    onnx.save(model, str(tmp_path / "m.onnx"))
    with pytest.raises(RulepassError, match=r"'Frobnicate_0'.*\(and 1 more node\(s\): Frobnicate_1\)") as exc:
        evaluate_graph(import_onnx(tmp_path / "m.onnx").graph, feeds)
    assert len(exc.value.diagnostics) == 1


def test_a_loop_without_a_trip_count_stops_on_its_condition_and_runs_a_nested_if(tmp_path: Path) -> None:
    s = _vi("s", T.FLOAT, [2, 3])
    add = h.make_graph([h.make_node("Add", ["s", "s"], ["t"])], "then", [], [_vi("t", T.FLOAT, [2, 3])])
    keep = h.make_graph([h.make_node("Identity", ["s"], ["e"])], "else", [], [_vi("e", T.FLOAT, [2, 3])])
    body = h.make_graph(
        [
            h.make_node("Constant", [], ["three"], value=h.make_tensor("v", T.INT64, [], [3])),
            h.make_node("Less", ["i", "three"], ["cout"]),
            h.make_node("If", ["cout"], ["s2"], then_branch=add, else_branch=keep),
        ],
        "body",
        [_vi("i", T.INT64, []), _vi("cin", T.BOOL, []), s],
        [_vi("cout", T.BOOL, []), _vi("s2", T.FLOAT, [2, 3])],
    )
    nodes = [h.make_node("Loop", ["", "c", "s0"], ["final"], body=body)]
    graph = h.make_graph(
        nodes, "loopm", [_vi("c", T.BOOL, []), _vi("s0", T.FLOAT, [2, 3])], [_vi("final", T.FLOAT, [2, 3])]
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    feeds = {"c": np.array(True), "s0": _f(2, 3)}
    got = _check(model, feeds, tmp_path)
    assert np.array_equal(got[0], feeds["s0"] * 8)  # doubled while i < 3, then kept once as the condition fails


def test_an_unseeded_random_op_gives_the_same_values_every_run(tmp_path: Path) -> None:
    feeds = {"x": _f(2, 3)}
    nodes = [h.make_node("RandomNormalLike", ["x"], ["r"]), h.make_node("Add", ["x", "r"], ["y"])]
    onnx.save(_model(nodes, feeds, [("y", T.FLOAT, [2, 3])]), str(tmp_path / "m.onnx"))
    graph = import_onnx(tmp_path / "m.onnx").graph
    direct = evaluate_graph(copy_graph(graph), feeds).outputs["output_0"]
    compiled = compile_graph(graph)
    runs = [run_model(compiled, feeds).outputs["output_0"] for _ in range(2)]
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], direct)
    assert not np.array_equal(runs[0], feeds["x"])  # it did draw


def test_an_if_fed_from_two_streams_waits_for_both_before_it_runs(tmp_path: Path) -> None:
    v = [_vi(n, T.FLOAT, [2, 16]) for n in ("t", "e", "x", "a", "b", "z", "w")]
    then = h.make_graph([h.make_node("Mul", ["a", "b"], ["t"])], "then", [], [v[0]])
    other = h.make_graph([h.make_node("Sub", ["a", "b"], ["e"])], "else", [], [v[1]])
    nodes = [
        h.make_node("Erf", ["x"], ["a0"]),
        h.make_node("Relu", ["a0"], ["a"]),
        h.make_node("Tanh", ["x"], ["b0"]),
        h.make_node("Sigmoid", ["b0"], ["b"]),
        h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
        h.make_node("Erf", ["y"], ["z"]),
        h.make_node("Tanh", ["a"], ["w"]),
    ]
    graph = h.make_graph(nodes, "m", [v[2], _vi("c", T.BOOL, [])], [v[5], v[6]], value_info=[v[3], v[4]])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    feeds = {"x": _f(2, 16), "c": np.array(True)}
    _check(model, feeds, tmp_path)
    compiled = compile_graph(import_onnx(tmp_path / "m.onnx").graph)
    assert len(compiled.tasks_by_stream()) > 1 and compiled.model["events"]
    trace = [(t.type, t.op) for t in run_model(compiled, feeds).trace]
    step = trace.index(("CONTROL_FLOW", "If_4"))
    waits = [k for k, t in enumerate(trace) if t == ("EVENT_WAIT", "If_4")]
    assert waits and max(waits) < step
    assert all(k > step for k, t in enumerate(trace) if t == ("EVENT_RECORD", "If_4"))


def test_a_large_onnx_constant_keeps_its_values(tmp_path: Path) -> None:
    feeds = {"x": _f(10, 10)}
    big = _f(10, 10)
    nodes = [
        h.make_node("Constant", [], ["k"], value=onnx.numpy_helper.from_array(big, "k")),  # 100 values
        h.make_node("Constant", [], ["two"], value_float=2.0),
        h.make_node("Mul", ["k", "two"], ["k2"]),
        h.make_node("Add", ["x", "k2"], ["y"]),
    ]
    got = _check(_model(nodes, feeds, [("y", T.FLOAT, [10, 10])]), feeds, tmp_path)
    assert np.array_equal(got[0], feeds["x"] + big * 2)


def test_gemm_with_every_attribute_and_batch_norm_with_onnx_default_epsilon(tmp_path: Path) -> None:
    # both run on hand-written kernels: Gemm's transposes arrive under GE's names (transpose_x1/x2), and an ONNX
    # BatchNormalization without epsilon means ONNX's 1e-5, not GE's own 1e-4 (found by the onnx backend sweep)
    feeds = {"a": _f(4, 3), "x": _f(2, 3, 2, 2)}
    inits = {
        "b": _f(5, 4),
        "c": _f(1, 5),
        "s": np.abs(_f(3)),
        "o": _f(3),
        "m": _f(3),
        "v": np.abs(_f(3)) * 1e-3,  # small variances: the epsilon matters
    }
    nodes = [
        h.make_node("Gemm", ["a", "b", "c"], ["g"], alpha=0.25, beta=0.35, transA=1, transB=1),
        h.make_node("BatchNormalization", ["x", "s", "o", "m", "v"], ["y"]),
    ]
    model = _model(nodes, feeds, [("g", T.FLOAT, [3, 5]), ("y", T.FLOAT, [2, 3, 2, 2])], inits=inits)
    _check(model, feeds, tmp_path)
