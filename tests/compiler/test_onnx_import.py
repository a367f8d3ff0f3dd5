"""ONNX import: the light model zoo compiles end to end and verifies; unknown ops, subgraphs, symbolic dims."""

from __future__ import annotations

import builtins
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
        [
            helper.make_node("Split", ["x", "split"], ["a", "b"], axis=0),
            helper.make_node("Relu", ["a"], ["ra"]),
            helper.make_node("Relu", ["b"], ["rb"]),
            helper.make_node("Concat", ["ra", "rb"], ["y"], axis=0),
        ],
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
