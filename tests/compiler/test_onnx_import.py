"""ONNX import: the light model zoo compiles end to end and verifies; unknown ops, subgraphs, symbolic dims."""

from __future__ import annotations

import builtins
import math
from pathlib import Path
from typing import Any

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from rulepass.compiler.graph_file import load_graph  # noqa: E402
from rulepass.compiler.memory.verify import verify_plan  # noqa: E402
from rulepass.compiler.onnx_import import import_onnx  # noqa: E402

from rulepass.api import compile_graph  # noqa: E402
from rulepass.base.diagnostics import RulepassError  # noqa: E402
from rulepass.cli import main  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = sorted(p.name for p in LIGHT.glob("*.onnx"))
SLOW = {"light_densenet121.onnx", "light_inception_v2.onnx"}
# concats per model and how many GE's rule makes zero-copy (DenseNet: every other one, because each dense block
# concat consumes the previous one, which is then virtual: IsPreNodeAttrValid, spec §2.3)
CONCATS = {
    "light_densenet121.onnx": (58, 29),
    "light_inception_v1.onnx": (9, 9),
    "light_inception_v2.onnx": (10, 10),
    "light_squeezenet.onnx": (8, 8),
    "light_shufflenet.onnx": (3, 3),
}


def test_the_light_models_are_there() -> None:
    assert len(MODELS) >= 9, MODELS


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in MODELS])
def test_light_model_imports_compiles_and_verifies(name: str) -> None:
    result = import_onnx(LIGHT / name)
    assert not result.unmapped, result.warnings
    c = compile_graph(result.graph)
    assert verify_plan(c.graph, c.memory.plan, events=c.streams.event_pairs()) == []
    decisions = [d for d in c.optimize.decisions if d.rule == "ConcatNotaskPass"]
    want = CONCATS.get(name, (0, 0))
    assert (len(decisions), sum(d.fired for d in decisions)) == want
    virtual = {d.node for d in decisions if d.fired}
    assert not virtual & {t.op_name for t in c.tasks.tasks}  # no task for a zero-copy concat


@pytest.mark.slow
def test_ascend_formats_put_activations_in_5hd_and_weights_in_fractal_z() -> None:
    g = import_onnx(LIGHT / "light_inception_v1.onnx", format_mode="ascend").graph
    convs = [n for n in g.all_nodes() if n.type == "Conv2D"]
    assert convs and all(n.op.output_descs[0].format == "NC1HWC0" for n in convs)
    assert all(n.op.input_descs[1].format == "FRACTAL_Z" for n in convs)
    assert any(n.type == "TransData" for n in g.all_nodes())
    for n in g.all_nodes():  # every edge agrees on the format after TransData insertion
        for k, peer in enumerate(n.in_peers):
            if peer is not None:
                assert peer.desc.format == n.op.input_descs[k].format, (n.name, k)
    c = compile_graph(g)
    concat = [d for d in c.optimize.decisions if d.rule == "ConcatNotaskPass"]
    assert len(concat) == 9 and all(d.fired for d in concat)  # C of every branch is a multiple of C0 = 16
    assert verify_plan(c.graph, c.memory.plan, events=c.streams.event_pairs()) == []


def _save(model: Any, tmp_path: Path, name: str = "m.onnx") -> Path:
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def _small(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any] | None = None) -> Any:
    graph = helper.make_graph(nodes, "small", inputs, outputs, initializer=inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _split_relu_concat() -> list[Any]:
    """x split along axis 0 by the sizes in `split`, each part through a Relu, concatenated back into y."""
    return [
        helper.make_node("Split", ["x", "split"], ["a", "b"], axis=0),
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("Relu", ["b"], ["rb"]),
        helper.make_node("Concat", ["ra", "rb"], ["y"], axis=0),
    ]


def test_unknown_op_keeps_its_type_goes_to_ai_cpu_and_is_warned_about(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    model = _small(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Celu", ["r"], ["y"], alpha=1.0)], [x], [y]
    )
    result = import_onnx(_save(model, tmp_path))
    celu = next(n for n in result.graph.all_nodes() if n.type == "Celu")
    assert celu.op.kernel_lib == "aicpu_ascend_kernel" and celu.op.attrs["_onnx_unmapped"] is True
    assert result.unmapped == {"Celu": 1}
    assert any("Celu x1" in w for w in result.warnings)
    compile_graph(result.graph)  # and it still compiles


def test_concat_and_split_map_to_ge_ops_with_their_attributes(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4, 16])
    split = helper.make_tensor("split", TensorProto.INT64, [2], [2, 2])
    model = _small(
        _split_relu_concat(),
        [x],
        [y],
        [split],
    )
    g = import_onnx(_save(model, tmp_path)).graph
    by_type = {n.type: n for n in g.all_nodes()}
    assert by_type["ConcatD"].op.attrs["concat_dim"] == 0
    assert by_type["SplitD"].op.attrs["split_dim"] == 0 and by_type["SplitD"].op.attrs["num_split"] == 2
    c = compile_graph(g)
    fired = {d.rule for d in c.optimize.decisions if d.fired}
    assert {"SplitNotaskPass", "ConcatNotaskPass"} <= fired  # split -> compute -> concat, zero-copy end to end


def test_if_branches_become_subgraphs_with_captured_values_as_parent_inputs(tmp_path: Path) -> None:
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
    then_out = helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 8])
    else_out = helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 8])
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [then_out])
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["e"])], "else", [], [else_out])
    model = _small([helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)], [cond, x], [y])
    g = import_onnx(_save(model, tmp_path)).graph
    node_if = next(n for n in g.all_nodes() if n.type == "If")
    subs = node_if.subgraphs()
    assert len(subs) == 2 and len(node_if.in_peers) == 2  # cond, and x captured from the outer scope
    data = [n for n in subs[0].nodes_in_insertion_order() if n.type == "Data"]
    assert data and data[0].op.attrs["_parent_node_index"] == 1
    compile_graph(g)


def test_symbolic_dims_take_sizes_from_the_option(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    model = _small([helper.make_node("Relu", ["x"], ["y"])], [x], [y])
    g = import_onnx(_save(model, tmp_path), dims={"batch": 32}).graph
    relu = next(n for n in g.all_nodes() if n.type == "Relu")
    assert relu.op.output_descs[0].shape == (32, 8)
    with pytest.raises(RulepassError) as info:  # a name no input declares would set nothing: it is an error
        import_onnx(_save(model, tmp_path), dims={"bach": 32})
    assert "no input of" in str(info.value) and "did you mean 'batch'" in str(info.value.diagnostics[0].hint)


def test_an_empty_input_shape_is_an_error() -> None:
    from rulepass.compiler.onnx_fold import parse_input_shapes

    assert parse_input_shapes("x:1,2;") == {"x": [1, 2]}
    with pytest.raises(RulepassError, match="names no input"):
        parse_input_shapes(" ; ")


def test_import_command_writes_a_graph_file_and_other_commands_take_onnx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "squeezenet.yaml"
    assert main(["import", str(LIGHT / "light_squeezenet.onnx"), "-o", str(out), "--formats", "ascend"]) == 0
    assert load_graph(out).name == "squeezenet_old"
    assert main(["optimize", str(LIGHT / "light_squeezenet.onnx")]) == 0
    assert "ConcatNotaskPass: 8 candidate(s), 8 fired" in capsys.readouterr().out
    assert main(["import", str(LIGHT / "light_squeezenet.onnx"), "-o", str(out), "--dim", "batch"]) == 2


def test_a_file_that_is_not_onnx_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01not a model")
    with pytest.raises(RulepassError) as info:
        import_onnx(bad)
    assert "is not a readable ONNX model" in str(info.value)


def test_without_onnx_the_command_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_import = builtins.__import__

    def no_onnx(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "onnx" or name.startswith("onnx."):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    with pytest.raises(RulepassError) as info:
        import_onnx(tmp_path / "m.onnx")
    assert "pip install 'rulepass[onnx]'" in info.value.render()


# ---- static shapes: inference with data propagation, folding, input shapes ---------------------------------


def _opset(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any] | None = None, v: int = 17) -> Any:
    graph = helper.make_graph(nodes, "small", inputs, outputs, initializer=inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", v)])


def _i64(name: str, values: list[int]) -> Any:
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def test_shape_math_folds_and_a_dynamic_batch_becomes_static(tmp_path: Path) -> None:
    # Shape -> Gather -> Concat -> Reshape, the batch read from the input's shape (torch's flatten export)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "flat"])
    model = _opset(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
            helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
            helper.make_node("Concat", ["b1", "minus1"], ["shape"], axis=0),
            helper.make_node("Reshape", ["x", "shape"], ["y"]),
        ],
        [x],
        [y],
        [helper.make_tensor("zero", TensorProto.INT64, [], [0]), _i64("axes", [0]), _i64("minus1", [-1])],
    )
    result = import_onnx(_save(model, tmp_path), input_shapes={"x": [2, 3, 4, 4]})
    g = result.graph
    types = sorted(n.type for n in g.all_nodes())
    assert types == ["Const", "Data", "NetOutput", "Reshape"], types  # the shape math is one Const
    shape = next(n for n in g.all_nodes() if n.type == "Const")
    assert shape.op.attrs["value"] == [2, -1]
    reshape = next(n for n in g.all_nodes() if n.type == "Reshape")
    assert reshape.op.output_descs[0].shape == (2, 48)  # inferred static dims win over the declared symbolic ones
    net = next(n for n in g.all_nodes() if n.type == "NetOutput")
    assert net.op.input_descs[0].shape == (2, 48)
    compile_graph(g)


def test_range_constant_of_shape_and_expand_fold(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])
    model = _opset(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node(
                "ConstantOfShape", ["s"], ["ones"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])
            ),
            helper.make_node("Size", ["x"], ["n"]),
            helper.make_node("Div", ["n", "two"], ["half"]),
            helper.make_node("Range", ["zero", "half", "one"], ["r"]),  # [0..5)
            helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
            helper.make_node("Expand", ["rf", "s"], ["e"]),
            helper.make_node("Mul", ["e", "ones"], ["c"]),
            helper.make_node("Add", ["x", "c"], ["y"]),
        ],
        [x],
        [y],
        [helper.make_tensor(k, TensorProto.INT64, [], [v]) for k, v in (("two", 2), ("zero", 0), ("one", 1))],
    )
    g = import_onnx(_save(model, tmp_path)).graph
    assert sorted(n.type for n in g.all_nodes()) == ["Add", "Const", "Data", "NetOutput"]
    const = next(n for n in g.all_nodes() if n.type == "Const")
    assert const.op.attrs["value"] == [0.0, 1.0, 2.0, 3.0, 4.0] * 2
    assert const.op.output_descs[0].shape == (2, 5)
    compile_graph(g)


def test_folding_is_bounded_by_the_output_size(tmp_path: Path) -> None:
    from rulepass.compiler.onnx_fold import FOLD_LIMIT

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [FOLD_LIMIT + 1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [FOLD_LIMIT + 1])
    model = _opset(
        [helper.make_node("ConstantOfShape", ["s"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
        [x],
        [y],
        [_i64("s", [FOLD_LIMIT + 1])],
    )
    g = import_onnx(_save(model, tmp_path)).graph
    fill = next(n for n in g.all_nodes() if n.type == "Fill")  # too large to fold: computed at run time
    assert fill.op.output_descs[0].shape == (FOLD_LIMIT + 1,)


def test_input_shape_sets_unnamed_and_minus_one_dims(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, -1, 8])
    x.type.tensor_type.shape.dim[2].dim_value = -1  # a literal -1, as some exporters write
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = _opset([helper.make_node("Relu", ["x"], ["y"])], [x], [y])
    path = _save(model, tmp_path)
    with pytest.raises(RulepassError) as info:
        import_onnx(path)
    text = info.value.render()
    assert "input 'x'" in text and '--input-shape "x:1,3,1,8"' in text
    g = import_onnx(path, input_shapes={"x": [4, 3, 6, 8]}).graph
    relu = next(n for n in g.all_nodes() if n.type == "Relu")
    assert relu.op.output_descs[0].shape == (4, 3, 6, 8)
    for bad, words in (({"x": [4, 3, 6]}, "gives input 'x' 3 dims"), ({"z": [1]}, "not an input")):
        with pytest.raises(RulepassError, match=words):
            import_onnx(path, input_shapes=bad)
    with pytest.raises(RulepassError, match="the model fixes it at 3"):
        import_onnx(path, input_shapes={"x": [4, 5, 6, 8]})


def test_input_shape_flag_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])
    path = _save(_opset([helper.make_node("Relu", ["x"], ["y"])], [x], [y]), tmp_path)
    out = tmp_path / "g.yaml"
    assert main(["import", str(path), "-o", str(out)]) == 1
    assert '--input-shape "x:1,8"' in capsys.readouterr().err
    assert main(["import", str(path), "-o", str(out), "--input-shape", "x:5,8"]) == 0
    assert load_graph(out).node("Relu_0").op.output_descs[0].shape == (5, 8)  # type: ignore[union-attr]
    assert main(["import", str(path), "-o", str(out), "--input-shape", "x:5,a"]) == 2
    assert "non-negative integers" in capsys.readouterr().err


def test_a_shape_that_depends_on_data_is_one_clear_error(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, None)
    path = _save(_opset([helper.make_node("NonZero", ["x"], ["y"])], [x], [y]), tmp_path)
    with pytest.raises(RulepassError) as info:
        import_onnx(path)
    assert "NonZero" in str(info.value) and "unknown shape" in str(info.value)


# ---- Split, op names and the ONNX identity of every node ---------------------------------------------------


@pytest.mark.parametrize(("sizes", "ge_type"), [([2, 6], "SplitVD"), ([4, 4], "SplitD")])
def test_split_with_sizes_as_an_input(tmp_path: Path, sizes: list[int], ge_type: str) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [8, 16])
    model = _opset(
        _split_relu_concat(),
        [x],
        [y],
        [_i64("split", sizes)],
        v=13,
    )
    g = import_onnx(_save(model, tmp_path)).graph
    split = next(n for n in g.all_nodes() if n.op.attrs.get("_onnx_op_type") == "Split")
    assert split.type == ge_type and len(split.in_peers) == 1  # the sizes are an attribute of GE's D form
    assert split.op.attrs["split_dim"] == 0 and split.op.attrs["num_split"] == 2
    assert split.op.attrs.get("size_splits") == (sizes if ge_type == "SplitVD" else None)
    assert [d.shape for d in split.op.output_descs] == [(s, 16) for s in sizes]
    assert not any(n.type == "Const" for n in g.all_nodes())
    c = compile_graph(g)
    assert any(d.rule == "SplitNotaskPass" and d.fired for d in c.optimize.decisions)


def test_every_node_keeps_its_onnx_type_domain_and_attributes(tmp_path: Path) -> None:

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    model = _opset(
        [
            helper.make_node("LeakyRelu", ["x"], ["l"], alpha=0.25),
            helper.make_node("Celu", ["l"], ["c"], alpha=2.0),
            helper.make_node("Clip", ["c", "lo", ""], ["y"]),
        ],
        [x],
        [y],
        [helper.make_tensor("lo", TensorProto.FLOAT, [], [-math.inf])],
    )
    g = import_onnx(_save(model, tmp_path)).graph
    by = {n.op.attrs.get("_onnx_op_type"): n for n in g.all_nodes()}
    assert by["LeakyRelu"].type == "LeakyRelu" and by["Clip"].type == "ClipByValue" and by["Celu"].type == "Celu"
    for n in by.values() if None not in by else [v for k, v in by.items() if k]:
        assert n.op.attrs["_onnx_domain"] == "" and g.attrs["_onnx_opsets"] == {"": 17}
    assert by["Celu"].op.attrs["_onnx_attrs"] == {"alpha": 2.0}
    assert by["LeakyRelu"].op.attrs["_onnx_attrs"] == {"alpha": 0.25}
    assert by["Clip"].op.attrs["_onnx_attrs"] == {}


def test_tensor_attributes_are_carried_as_json(tmp_path: Path) -> None:
    import json

    x = helper.make_tensor_value_info("x", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    v = helper.make_tensor("v", TensorProto.FLOAT, [1], [-math.inf])
    model = _opset([helper.make_node("ConstantOfShape", ["x"], ["y"], value=v)], [x], [y])
    with pytest.raises(RulepassError, match="unknown shape"):  # its shape is the input's value: unknown here
        import_onnx(_save(model, tmp_path))
    attrs_of = json.loads
    node = helper.make_node("ConstantOfShape", ["x"], ["y"], value=v)
    from rulepass.compiler.onnx_import import _json_attr

    assert attrs_of(json.dumps(_json_attr(onnx, node.attribute[0]))) == {
        "dtype": "float",
        "dims": [1],
        "values": ["-inf"],
    }


# ---- ascend formats ------------------------------------------------------------------------------------------


def _conv(name: str, x: str, y: str, c_in: int, c_out: int) -> tuple[Any, Any]:
    w = helper.make_tensor(f"{name}_w", TensorProto.FLOAT, [c_out, c_in, 1, 1], [0.5] * (c_out * c_in))
    return helper.make_node("Conv", [x, w.name], [y], name=name, kernel_shape=[1, 1]), w


def test_ascend_a_split_between_two_convs_needs_no_transdata(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 8, 8])
    c1, w1 = _conv("c1", "x", "a", 32, 64)
    c2, w2 = _conv("c2", "p0", "b0", 32, 16)
    c3, w3 = _conv("c3", "p1", "b1", 32, 16)
    model = _opset(
        [
            c1,
            helper.make_node("Split", ["a", "sizes"], ["p0", "p1"], axis=1, name="split"),
            c2,
            c3,
            helper.make_node("Relu", ["b0"], ["r0"], name="relu"),
            helper.make_node("Concat", ["r0", "b1"], ["y"], axis=1, name="concat"),
        ],
        [x],
        [y],
        [w1, w2, w3, _i64("sizes", [32, 32])],
    )
    g = import_onnx(_save(model, tmp_path), format_mode="ascend").graph
    for name in ("split", "relu", "concat"):
        n = g.node(name)
        assert n is not None
        assert {d.format for d in [*n.op.input_descs, *n.op.output_descs]} == {"NC1HWC0"}, name
        for peer in n.in_peers:
            assert peer is not None and peer.node.type != "TransData", (name, peer.node.name)
    trans = sorted((n.op.attrs["src_format"], n.op.attrs["dst_format"]) for n in g.all_nodes() if n.type == "TransData")
    assert trans == [("NC1HWC0", "NCHW"), ("NCHW", "NC1HWC0")]  # only at the model's input and output
    compile_graph(g)


def test_ascend_a_kv_cache_tensor_through_matmul_and_concat_stays_nd(tmp_path: Path) -> None:
    past = helper.make_tensor_value_info("past_k", TensorProto.FLOAT16, [1, 4, 16, 32])
    k = helper.make_tensor_value_info("k", TensorProto.FLOAT16, [1, 4, 1, 32])
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT16, [1, 4, 1, 32])
    present = helper.make_tensor_value_info("present_k", TensorProto.FLOAT16, [1, 4, 17, 32])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT16, [1, 4, 1, 17])
    model = _opset(
        [
            helper.make_node("Concat", ["past_k", "k"], ["present_k"], axis=2, name="cache"),
            helper.make_node("Transpose", ["present_k"], ["kt"], perm=[0, 1, 3, 2]),
            helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        ],
        [past, k, q],
        [present, scores],
    )
    g = import_onnx(_save(model, tmp_path), format_mode="ascend").graph
    assert not any(n.type == "TransData" for n in g.all_nodes())
    for n in g.all_nodes():
        for d in [*n.op.input_descs, *n.op.output_descs]:
            assert d.format == d.origin_format == "ND", (n.name, d)
    assert g.node("qk").type == "BatchMatMulV2"  # type: ignore[union-attr]
    compile_graph(g)


# ---- model files with any float ------------------------------------------------------------------------------


def test_a_minus_inf_constant_round_trips_through_compile_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np = pytest.importorskip("numpy")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    mask = helper.make_tensor("mask", TensorProto.FLOAT, [1, 4], [0.0, -math.inf, math.inf, 0.0])
    model = _opset([helper.make_node("Add", ["x", "mask"], ["y"])], [x], [y], [mask])
    graph_file, model_file, outs = tmp_path / "g.json", tmp_path / "m.json", tmp_path / "o.npz"
    assert main(["import", str(_save(model, tmp_path)), "-o", str(graph_file)]) == 0
    assert main(["compile", str(graph_file), "-o", str(model_file), "--quiet"]) == 0
    import json

    json.loads(model_file.read_text(), parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((1, 4), np.float32))
    capsys.readouterr()
    assert main(["run", str(model_file), "--inputs", str(inputs), "-o", str(outs)]) == 0, capsys.readouterr().err
    got = np.load(outs)
    (arr,) = [got[k] for k in got.files]
    assert arr.tolist() == [[1.0, -math.inf, math.inf, 1.0]]


# ---- bad files -------------------------------------------------------------------------------------------------


def _one_init_model(t: Any) -> Any:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    return _opset([helper.make_node("Add", ["x", t.name], ["y"])], [x], [y], [t])


def _bad(path: Path, words: str) -> None:
    with pytest.raises(RulepassError) as info:
        import_onnx(path)
    assert words in str(info.value), str(info.value)


def test_an_empty_or_truncated_file_is_one_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    _bad(empty, "is empty (0 bytes)")
    t = helper.make_tensor("w", TensorProto.FLOAT, [2, 2], [1.0, 2.0, 3.0, 4.0])
    whole = _save(_one_init_model(t), tmp_path).read_bytes()
    for cut in (len(whole) // 3, len(whole) // 2, len(whole) - 3):
        (tmp_path / "cut.onnx").write_bytes(whole[:cut])
        with pytest.raises(RulepassError):
            import_onnx(tmp_path / "cut.onnx")


@pytest.mark.parametrize(("raw", "words"), [(b"\0" * 12, "shorter than"), (b"\0" * 14, "not a whole number")])
def test_raw_data_that_does_not_match_its_dims_is_an_error(tmp_path: Path, raw: bytes, words: str) -> None:
    t = helper.make_tensor("w", TensorProto.FLOAT, [2, 2], b"\0" * 16, raw=True)
    t.raw_data = raw  # onnx.helper refuses to make such a tensor; a file can hold one
    _bad(_save(_one_init_model(t), tmp_path), words)


def test_typed_data_that_does_not_match_its_dims_is_an_error(tmp_path: Path) -> None:
    t = helper.make_tensor("w", TensorProto.FLOAT, [2, 2], [1.0, 2.0, 3.0, 4.0])
    del t.float_data[3]
    _bad(_save(_one_init_model(t), tmp_path), "holds 3 values")


def _external(t: Any, location: str) -> Any:
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink", "missing", "short"])
def test_external_data_outside_the_models_folder_is_refused(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\1" * 16)
    location = {"absolute": str(secret), "dotdot": "../secret.bin", "symlink": "link.bin"}.get(kind, "w.bin")
    if kind == "symlink":
        (folder / "link.bin").symlink_to(secret)
    if kind == "short":
        (folder / "w.bin").write_bytes(b"\0" * 8)
    t = _external(helper.make_tensor("w", TensorProto.FLOAT, [2, 2], b"\0" * 16, raw=True), location)
    path = folder / "m.onnx"
    path.write_bytes(_one_init_model(t).SerializeToString())
    words = {
        "absolute": "absolute path",
        "dotdot": "outside the model's folder",
        "symlink": "resolves outside the model's folder",
        "missing": "does not exist",
        "short": "which holds 8",
    }[kind]
    _bad(path, words)


def test_external_data_inside_the_folder_is_read(tmp_path: Path) -> None:
    import numpy as np

    (tmp_path / "w.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    t = _external(helper.make_tensor("w", TensorProto.FLOAT, [2, 2], b"\0" * 16, raw=True), "w.bin")
    path = tmp_path / "m.onnx"
    path.write_bytes(_one_init_model(t).SerializeToString())
    g = import_onnx(path).graph
    assert next(n for n in g.all_nodes() if n.type == "Const").op.attrs["value"] == [0.0, 1.0, 2.0, 3.0]


def test_an_op_missing_a_required_attribute_is_an_error(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    model = _opset([helper.make_node("Cast", ["x"], ["y"], name="cast")], [x], [y])  # Cast needs `to`
    _bad(_save(model, tmp_path), "lacks its required attribute 'to'")


def test_weights_inline_keeps_every_value_and_placeholder_only_small_ones(tmp_path: Path) -> None:
    from rulepass.compiler.onnx_import import SMALL_VALUE

    n = SMALL_VALUE + 1
    t = helper.make_tensor("w", TensorProto.FLOAT, [n], [float(k) for k in range(n)])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])
    path = _save(_opset([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y], [t]), tmp_path)
    import numpy as np
    from rulepass.compiler.weights import const_array

    for weights, want in (("placeholder", None), ("inline", np.arange(n, dtype=np.float32))):
        g = import_onnx(path, weights=weights).graph
        got = const_array(next(m for m in g.all_nodes() if m.type == "Const").op)
        assert (got is None) if want is None else (got is not None and got.tobytes() == want.tobytes())
    assert import_onnx(path).graph.node("w") is not None  # inline is the default: the data is carried
    assert const_array(import_onnx(path).graph.node("w").op) is not None  # type: ignore[union-attr]


def test_gather_elements_along_a_long_axis_folds(tmp_path: Path) -> None:
    # onnx.reference's GatherElements fails beyond 64 choices (np.choose); the importer's fix folds it
    data = helper.make_tensor("d", TensorProto.INT64, [1, 70], list(range(70)))
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [1, 3])
    model = _opset(
        [helper.make_node("GatherElements", ["d", "i"], ["g"], axis=1), helper.make_node("Add", ["x", "g"], ["y"])],
        [x],
        [y],
        [data, helper.make_tensor("i", TensorProto.INT64, [1, 3], [0, 69, -2])],
    )
    g = import_onnx(_save(model, tmp_path)).graph
    assert [n.op.attrs["value"] for n in g.all_nodes() if n.type == "Const"] == [[0, 69, 68]]


def test_a_shape_known_only_after_folding_wins_over_a_symbolic_value_info(tmp_path: Path) -> None:
    # Range is not data-propagated: the Gather's shape is known only once Range is folded, and the exporter's
    # symbolic value_info for it must not keep it unknown
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = _opset(
        [
            helper.make_node("Size", ["x"], ["n"]),
            helper.make_node("Div", ["n", "four"], ["m"]),
            helper.make_node("Range", ["zero", "m", "one"], ["idx"]),
            helper.make_node("Gather", ["x", "idx"], ["y"], axis=0),
        ],
        [x],
        [y],
        [helper.make_tensor(k, TensorProto.INT64, [], [v]) for k, v in (("four", 4), ("zero", 0), ("one", 1))],
    )
    model.graph.value_info.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, ["k", "two"]))
    g = import_onnx(_save(model, tmp_path)).graph
    gather = next(n for n in g.all_nodes() if n.type == "GatherV2D")
    assert gather.op.output_descs[0].shape == (3, 2)
    compile_graph(g)


@pytest.mark.parametrize(("start", "end", "transdata"), [(16, 32, 0), (8, 24, 2)])
def test_ascend_a_slice_on_c0_boundaries_follows_its_convs(
    tmp_path: Path, start: int, end: int, transdata: int
) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])
    c1, w1 = _conv("c1", "x", "a", 8, 32)
    c2, w2 = _conv("c2", "s", "m", 16, 8)
    model = _opset(
        [
            c1,
            helper.make_node("Slice", ["a", "st", "en", "ax"], ["s"], name="slice"),
            c2,
            helper.make_node("Relu", ["m"], ["y"]),
        ],
        [x],
        [y],
        [w1, w2, _i64("st", [start]), _i64("en", [end]), _i64("ax", [1])],
    )
    g = import_onnx(_save(model, tmp_path), format_mode="ascend").graph
    around = [p.node for p in g.node("slice").in_peers if p is not None] + [  # type: ignore[union-attr]
        q.node
        for q in g.node("slice").out_peers[0]  # type: ignore[union-attr]
    ]
    assert sum(n.type == "TransData" for n in around) == transdata
    compile_graph(g)


@pytest.mark.parametrize(("scale_shape", "transdata"), [([1, 16, 1, 1], 0), ([], 0), ([1, 1, 4, 4], 2)])
def test_ascend_a_mul_broadcasting_over_c_leaves_5hd(tmp_path: Path, scale_shape: list[int], transdata: int) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])
    c1, w1 = _conv("c1", "x", "a", 8, 16)
    c2, w2 = _conv("c2", "m", "y", 16, 8)
    scale = helper.make_tensor("scale", TensorProto.FLOAT, scale_shape, [0.5] * math.prod(scale_shape))
    mul = helper.make_node("Mul", ["a", "scale"], ["m"], name="mul")  # an SE block's channel scale
    g = import_onnx(_save(_opset([c1, mul, c2], [x], [y], [w1, w2, scale]), tmp_path), format_mode="ascend").graph
    n = g.node("mul")
    assert n is not None
    around = [p.node for p in n.in_peers if p is not None] + [q.node for q in n.out_peers[0]]
    assert sum(m.type == "TransData" for m in around) == transdata
    compile_graph(g)


def test_a_value_from_two_scopes_out_reaches_an_if_inside_a_loop(tmp_path: Path) -> None:
    # the main graph's `bias` is read by an If's branch inside a Loop's body: the Loop captures it first, then
    # the If captures it from the body (it used to be an internal error: an edge across graphs)
    import numpy as np
    from onnx import numpy_helper

    from rulepass.api import compile_graph, run_model

    f32 = TensorProto.FLOAT
    then_g = helper.make_graph(
        [helper.make_node("Add", ["acc", "bias"], ["t"])], "then", [], [helper.make_tensor_value_info("t", f32, [2])]
    )
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["acc", "bias"], ["e"])], "else", [], [helper.make_tensor_value_info("e", f32, [2])]
    )
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("If", ["cond_in"], ["next"], then_branch=then_g, else_branch=else_g),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc", f32, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("next", f32, [2]),
        ],
    )
    inits = [
        numpy_helper.from_array(np.array(3, np.int64), "trips"),
        numpy_helper.from_array(np.array(True), "cond"),
        numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "bias"),
    ]
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)],
        "nested",
        [helper.make_tensor_value_info("x", f32, [2])],
        [helper.make_tensor_value_info("y", f32, [2])],
        inits,
    )
    path = tmp_path / "nested.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = np.array([0.5, -1.0], np.float32)
    got = run_model(compile_graph(import_onnx(path).graph), {"x": x}).outputs
    assert np.array_equal(next(iter(got.values())), x + 3 * np.array([1.0, 2.0], np.float32))
