"""Constant data on Const nodes (compiler/weights.py): encoded per dtype bit-exactly, carried by graph and model
files, read back by the runtime; bad data is one clear error; an imported model's real weights run."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rulepass.compiler.graph_file import dump_graph, load_graph_text
from rulepass.compiler.ir import ComputeGraph, OpDesc, TensorDesc
from rulepass.compiler.weights import RAW_ATTR, VALUE_ATTR, carries_data, const_array, const_attrs

from rulepass.api import compile_graph, load_graph, load_rules, run_model
from rulepass.base.diagnostics import RulepassError
from rulepass.cli import main

DTYPES = {  # numpy dtype -> GE dtype name
    "float16": "float16",
    "float32": "float",
    "float64": "double",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "bool",
}


def _values(dtype: str, count: int) -> np.ndarray[Any, Any]:
    """`count` values of a dtype, its extremes and (for floats) -inf, inf, nan, a NaN payload and -0.0 among them."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.arange(count) % 3 == 0
    if dt.kind == "f":
        a = np.linspace(-3, 3, count).astype(dt)
        a[:4] = [-np.inf, np.inf, np.nan, -0.0]
        a.view(np.dtype(f"u{dt.itemsize}"))[4] = a.view(np.dtype(f"u{dt.itemsize}"))[2] | 1  # another NaN's bits
        a[5] = np.finfo(dt).max
        return a
    info = np.iinfo(dt)
    a = (np.arange(count) * 37).astype(dt)
    a[:2] = [info.min, info.max]
    return a


def _const(array: np.ndarray[Any, Any], ge_dtype: str, name: str = "w") -> OpDesc:
    shape = tuple(array.shape)
    return OpDesc(name, "Const", const_attrs(array), output_descs=[TensorDesc(shape, ge_dtype, "ND", shape, "ND")])


def _same_bits(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_dtype_round_trips_bit_exactly_through_graph_files(dtype: str) -> None:
    array = _values(dtype, 3 * 5 * 7).reshape(3, 5, 7)
    op = _const(array, DTYPES[dtype])
    assert set(op.attrs) == {RAW_ATTR} and carries_data(op)
    assert _same_bits(const_array(op), array)  # type: ignore[arg-type]
    g = ComputeGraph("g")
    g.add_node(op)
    for fmt in ("yaml", "json"):
        back = load_graph_text(dump_graph(g, fmt), f"g.{fmt}").node("w")
        assert back is not None and _same_bits(const_array(back.op), array), fmt  # type: ignore[arg-type]


def test_small_finite_tensors_stay_readable_and_non_finite_ones_are_raw() -> None:
    small = np.array([[1.5, -0.0], [2.0, 3.0]], np.float32)
    assert const_attrs(small) == {VALUE_ATTR: [1.5, -0.0, 2.0, 3.0]}
    assert const_attrs(np.array([3, -4], np.int64)) == {VALUE_ATTR: [3, -4]}
    assert _same_bits(const_array(_const(small, "float")), small)  # type: ignore[arg-type]
    for odd in (np.array([1.0, -np.inf], np.float32), np.arange(65, dtype=np.int64), np.ones(3, np.float16)):
        assert set(const_attrs(odd)) == {RAW_ATTR}
    big_endian = np.arange(100, dtype=">i4")
    assert base64.b64decode(str(const_attrs(big_endian)[RAW_ATTR])) == np.arange(100, dtype="<i4").tobytes()
    assert const_attrs(np.zeros((0, 3), np.float32)) == {RAW_ATTR: ""}
    assert const_array(OpDesc("c", "Const", {}, output_descs=[TensorDesc((2,), "float", "ND", (2,), "ND")])) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (base64.b64encode(bytes(23)).decode(), "holds 23 bytes; its output float[2, 3] needs 24 (6 elements of 4"),
        ("AAAA*AAA", "is not valid base64"),
        ("AAAAA", "is not valid base64"),
        (12, "must be base64 text, not int"),
    ],
)
def test_bad_raw_data_is_one_error_naming_the_node_and_the_field(raw: Any, expected: str) -> None:
    op = OpDesc("conv_w", "Const", {RAW_ATTR: raw}, output_descs=[TensorDesc((2, 3), "float", "ND", (2, 3), "ND")])
    with pytest.raises(RulepassError) as info:
        const_array(op)
    text = str(info.value)
    assert "Const 'conv_w'" in text and f"'{RAW_ATTR}'" in text and expected in text, text


def test_truncated_raw_data_in_a_graph_file_stops_run_with_that_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = base64.b64encode(np.arange(12, dtype=np.float32).tobytes()[:-4]).decode()
    graph = f"""name: g
nodes:
  - {{name: x, type: Data, attrs: {{index: 0}}, outputs: ['float[3,4]']}}
  - {{name: w, type: Const, attrs: {{{RAW_ATTR}: '{data}'}}, outputs: ['float[3,4]']}}
  - {{name: add, type: Add, inputs: [x, w], outputs: ['float[3,4]']}}
  - {{name: out, type: NetOutput, inputs: [add]}}
"""
    (tmp_path / "g.yaml").write_text(graph)
    assert main(["run", str(tmp_path / "g.yaml")]) == 1
    err = capsys.readouterr().err
    assert "Const 'w'" in err and "holds 44 bytes" in err and "Traceback" not in err, err


# ---- an ONNX model with real weights, end to end -------------------------------------------------------------
onnx = pytest.importorskip("onnx")


def _model_with_weights(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """Conv (108 weights) -> Relu -> Reshape -> MatMul (256x10, from a Constant node) -> Add of a bias holding
    -inf; returns the input it is checked on."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    conv_w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    conv_b = rng.standard_normal(4).astype(np.float32)
    fc_w = rng.standard_normal((256, 10)).astype(np.float32)
    bias = rng.standard_normal((1, 10)).astype(np.float32)
    bias[0, 3] = -np.inf
    nodes = [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["f"]),
        helper.make_node("Constant", [], ["fc_w"], value=numpy_helper.from_array(fc_w, "fc_w")),
        helper.make_node("MatMul", ["f", "fc_w"], ["m"]),
        helper.make_node("Add", ["m", "bias"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(conv_w, "conv_w"),
        numpy_helper.from_array(conv_b, "conv_b"),
        numpy_helper.from_array(np.array([1, 256], np.int64), "shape"),
        numpy_helper.from_array(bias, "bias"),
    ]
    graph = helper.make_graph(
        nodes,
        "weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}


def _reference(path: Path, inputs: dict[str, np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    from onnx.reference import ReferenceEvaluator

    (y,) = ReferenceEvaluator(str(path)).run(None, inputs)
    return np.asarray(y)


def _check(out: np.ndarray[Any, Any], ref: np.ndarray[Any, Any]) -> None:
    assert np.isneginf(ref[0, 3]) and np.isneginf(out[0, 3])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("formats", ["keep", "ascend"])
def test_an_onnx_model_with_real_weights_runs_as_onnx_reference_in_memory(tmp_path: Path, formats: str) -> None:
    inputs = _model_with_weights(tmp_path / "m.onnx")
    graph = load_graph(tmp_path / "m.onnx", onnx_formats=formats)
    consts = [n for n in graph.all_nodes() if n.type == "Const"]
    assert len(consts) == 5 and all(carries_data(n.op) for n in consts)
    result = run_model(compile_graph(graph, load_rules()), {"x": inputs["x"]})
    (out,) = result.outputs.values()
    _check(out, _reference(tmp_path / "m.onnx", inputs))


def test_an_onnx_model_with_real_weights_runs_as_onnx_reference_through_files(tmp_path: Path) -> None:
    inputs = _model_with_weights(tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **inputs)
    g, model, out = (str(tmp_path / n) for n in ("g.yaml", "model.json", "out.npz"))
    assert main(["import", str(tmp_path / "m.onnx"), "-o", g]) == 0
    assert main(["compile", g, "-o", model]) == 0
    text = Path(model).read_text()
    assert "Infinity" not in text and RAW_ATTR in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"the model file holds {c}"))
    assert main(["run", model, "--inputs", str(tmp_path / "in.npz"), "-o", out]) == 0
    (y,) = np.load(out).values()
    _check(y, _reference(tmp_path / "m.onnx", inputs))


def test_constant_nodes_carry_every_form_of_their_value(tmp_path: Path) -> None:
    from onnx import TensorProto, helper, numpy_helper
    from rulepass.compiler.onnx_import import import_onnx

    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([5.0, -1.0], np.float32), "v"),
        numpy_helper.from_array(np.array([1, 6], np.int64), "i"),
        [2, 4],
    )
    forms = {
        "floats": ({"value_floats": [1.0, 2.5]}, np.array([1.0, 2.5], np.float32)),
        "int": ({"value_int": 7}, np.array(7, np.int64)),
        "sparse": ({"sparse_value": sparse}, np.array([[0, 5, 0, 0], [0, 0, -1, 0]], np.float32)),
    }
    nodes = [helper.make_node("Constant", [], [name], name=name, **attrs) for name, (attrs, _) in forms.items()]
    outs = [
        helper.make_tensor_value_info("floats", TensorProto.FLOAT, [2]),
        helper.make_tensor_value_info("int", TensorProto.INT64, []),
        helper.make_tensor_value_info("sparse", TensorProto.FLOAT, [2, 4]),
    ]
    onnx.save(helper.make_model(helper.make_graph(nodes, "c", [], outs)), str(tmp_path / "c.onnx"))
    graph = import_onnx(tmp_path / "c.onnx").graph
    for name, (_, want) in forms.items():
        node = graph.node(name)
        assert node is not None and _same_bits(const_array(node.op), want), name  # type: ignore[arg-type]


def test_an_initializer_shorter_than_its_dims_is_one_clear_error(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4], raw_data=bytes(40))  # 10 floats for 16
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "short",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])],
        [w],
    )
    onnx.save(helper.make_model(graph), str(tmp_path / "short.onnx"))
    with pytest.raises(RulepassError) as info:
        load_graph(tmp_path / "short.onnx")
    assert "tensor 'w' has 40 bytes of raw data, shorter than its dims [4, 4] need (64 bytes)" in str(info.value)


def test_long_raw_data_is_written_to_yaml_as_pyyaml_would_write_it() -> None:
    """The graph writer's fast path for long base64 text gives the bytes of PyYAML's own emitter."""
    import yaml
    from rulepass.compiler import graph_file

    g = ComputeGraph("g")
    g.add_node(_const(_values("float32", 3000), "float"))
    g.add_node(OpDesc("z", "Const", {"note": "A" * 300 + " b", "names": ["+/=" * 100, "b", "c"]}))  # in a flow list
    d = ComputeGraph("d")
    d.add_node(OpDesc("w", "Const", {RAW_ATTR: "AAAA"}, output_descs=[TensorDesc((1,), "float", "ND", (1,), "ND")]))

    class Plain(yaml.SafeDumper):
        pass

    Plain.add_representer(str, graph_file._represent_str)
    for graph in (g, d):
        data = graph_file.graph_to_data(graph)
        plain = yaml.dump(data, Dumper=Plain, sort_keys=False, default_flow_style=None, width=110, allow_unicode=True)
        assert dump_graph(graph, "yaml") == plain
