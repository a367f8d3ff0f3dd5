"""Streams, task builders and the generator: GE's GenerateTask facts, determinism, and the model file."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import jsonschema
import pytest
from rulepass.compiler import task_registry as tasks_mod
from rulepass.compiler.graph_file import load_graph_text
from rulepass.compiler.ir import ComputeGraph, OpDesc, TensorDesc
from rulepass.compiler.model import write_model
from rulepass.compiler.streams import assign_streams
from rulepass.compiler.tasks import (
    BuildContext,
    ModelTaskType,
    TaskBuilder,
    TaskDef,
    builder_for,
    generate_tasks,
    register,
    thread_count,
)
from rulepass.examples import example_path

from rulepass.api import compile_graph, load_graph, optimize
from rulepass.base.diagnostics import RulepassError
from rulepass.cli import main

SCHEMA = json.loads((Path(__file__).parents[2] / "compiler" / "model.schema.json").read_text())


def test_no_task_for_virtual_ops_and_first_last_marks_skip_them() -> None:
    r = compile_graph(load_graph(example_path("split_relu_concat.yaml")))
    virtual = {"split", "concat"}
    assert all(r.graph.node(n).op.attrs["_no_task"] for n in virtual)  # type: ignore[union-attr]
    kernel_ops = {t.op_name for t in r.tasks.tasks if t.type == ModelTaskType.KERNEL}
    assert kernel_ops == {"input_0_split_Identity", "relu_0", "relu_1", "relu_2"}  # GE's offline Identity is one
    first = [n.name for n in r.graph.all_nodes() if n.op.attrs.get("is_first_node")]
    last = [n.name for n in r.graph.all_nodes() if n.op.attrs.get("is_last_node")]
    assert "split" not in first + last and "concat" not in first + last
    assert "input_0_split_Identity" in first and "relu_0" not in first and "relu_2" in last  # same library


def test_every_task_address_is_the_memory_plans() -> None:
    r = compile_graph(load_graph(example_path("conv_nc1hwc0_concat.yaml")))
    plan = r.memory.plan
    bound = r.model["addresses"]
    for t in r.tasks.tasks:
        for a in t.addresses():
            b = bound[a.key()]
            if a.kind == "workspace":
                continue
            p = plan.tensors[f"{a.node}:{0 if a.kind == 'model_input' else a.index}"]
            assert (b["region"], b["mem_type"], b["offset"], b["size"]) == (p.region, p.mem_type, p.offset, p.size)
    # the concat is virtual: its consumer reads the concat output, which is conv_a's memory
    trans_out = next(t for t in r.tasks.tasks if t.op_name == "trans_out")
    assert trans_out.kernel is not None
    arg0 = trans_out.kernel["args"][0]
    assert bound[arg0.key()]["offset"] == plan.tensors["conv_a:0"].offset


def test_cross_stream_edges_get_events_and_single_stream_needs_none() -> None:
    g = load_graph(example_path("allgather_concat.yaml"))
    r = compile_graph(g)
    assert r.streams.stream_count == 3
    kinds = [(t.type, t.stream_id, t.event_id) for t in r.tasks.tasks if t.event_id is not None]
    records = {e for k, _, e in kinds if k == ModelTaskType.EVENT_RECORD}
    waits = {e for k, _, e in kinds if k == ModelTaskType.EVENT_WAIT}
    assert records == waits == set(range(len(r.streams.events)))
    order = [(t.type, t.event_id) for t in r.tasks.tasks]
    for e in records:  # recorded before it is waited for, in model order
        assert order.index((ModelTaskType.EVENT_RECORD, e)) < order.index((ModelTaskType.EVENT_WAIT, e))
    single = compile_graph(load_graph(example_path("allgather_concat.yaml")), single_stream=True)
    assert single.streams.stream_count == 1 and not single.streams.events
    assert {t.stream_id for t in single.tasks.tasks} == {0}


def _chain(n: int) -> ComputeGraph:
    g = ComputeGraph("chain")
    d = TensorDesc((1, 256), "float16", "ND", (1, 256), "ND")
    prev = g.add_node(OpDesc("x", "Data", output_descs=[d.copy()]))
    for i in range(n):
        kind = i % 4
        if kind == 3:  # every fourth node: a concat of the last two tensors (zero-copy when it can be)
            d2 = TensorDesc((2, 256), "float16", "ND", (2, 256), "ND")
            a = g.add_node(OpDesc(f"a{i}", "ReLU", input_descs=[d.copy()], output_descs=[d.copy()]))
            b = g.add_node(OpDesc(f"b{i}", "HcomAllGather", input_descs=[d.copy()], output_descs=[d.copy()]))
            g.add_data_edge(prev, 0, a, 0)
            g.add_data_edge(prev, 0, b, 0)
            c = g.add_node(OpDesc(f"c{i}", "ConcatD", {"concat_dim": 0}, [d.copy(), d.copy()], [d2]))
            g.add_data_edge(a, 0, c, 0)
            g.add_data_edge(b, 0, c, 1)
            prev = g.add_node(
                OpDesc(f"r{i}", "ReduceSumD", input_descs=[d2.copy()], output_descs=[d.copy()], workspace_bytes=[1024])
            )
            g.add_data_edge(c, 0, prev, 0)
        else:
            nxt = g.add_node(OpDesc(f"n{i}", "ReLU", input_descs=[d.copy()], output_descs=[d.copy()]))
            g.add_data_edge(prev, 0, nxt, 0)
            prev = nxt
    out = g.add_node(OpDesc("out", "NetOutput", input_descs=[d.copy()]))
    g.add_data_edge(prev, 0, out, 0)
    return g


def test_model_is_byte_identical_with_1_and_8_threads_on_thousands_of_nodes() -> None:
    one = compile_graph(_chain(1500), threads=1)
    eight = compile_graph(_chain(1500), threads=8)
    assert len(one.graph.all_nodes()) > 2000
    assert one.model_text() == eight.model_text()


def test_thread_count_reads_max_compile_core_number() -> None:
    assert thread_count("") == 1 and thread_count("0") == 1 and thread_count("-3") == 1
    assert thread_count("8") == 8 and thread_count(" 256 ") == 256


@pytest.mark.parametrize(
    ("value", "message"),
    [("x", "expected a decimal number of threads"), ("4.5", "expected a decimal"), ("100000", "the limit is 256")],
)
def test_a_bad_max_compile_core_number_is_an_error_not_one_thread(value: str, message: str) -> None:
    with pytest.raises(RulepassError, match=message):
        thread_count(value)
    with pytest.raises(RulepassError, match="threads asks for 100000 threads; the limit is 256"):
        generate_tasks(ComputeGraph("g"), threads=100000)


FUSION = """
nodes:
  - {name: x, type: Data, outputs: ["float16[16,16]"]}
  - {name: a, type: ReLU, attrs: {_l1_fusion_group_id: 7}, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: m, type: Sigmoid, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: b, type: Add, attrs: {_l1_fusion_group_id: 7}, inputs: [a:0, a:0], outputs: ["float16[16,16]"]}
  - {name: out, type: NetOutput, inputs: [b:0, m:0]}
"""


def test_fusion_group_tasks_are_contiguous_under_buffer_optimize() -> None:
    plain = compile_graph(load_graph_text(FUSION, "f.yaml"), single_stream=True)
    assert [t.op_name for t in plain.tasks.tasks] == ["a", "m", "b"]
    fused = compile_graph(
        load_graph_text(FUSION, "f.yaml"), single_stream=True, options={"ge.bufferOptimize": "l1_optimize"}
    )
    assert [t.op_name for t in fused.tasks.tasks] == ["a", "b", "m"]
    assert fused.graph.node("a").op.attrs["_fusion_group_key"] == 7  # type: ignore[union-attr]


FFTS = """
nodes:
  - {name: x, type: Data, outputs: ["float16[16,16]"]}
  - name: ffts
    type: PartitionedCall
    engine: ffts_plus
    kernel_lib: ffts_plus
    attrs: {_ffts_plus_sub_graph: sub, _composite_engine_kernel_lib_name: ffts_plus}
    inputs: [x:0]
    outputs: ["float16[16,16]"]
    subgraphs:
      - name: sub
        nodes:
          - {name: sx, type: Data, attrs: {_parent_node_index: 0}, outputs: ["float16[16,16]"]}
          - {name: s1, type: ReLU, inputs: [sx:0], outputs: ["float16[16,16]"]}
          - {name: s2, type: Sigmoid, inputs: [s1:0], outputs: ["float16[16,16]"]}
          - name: sout
            type: NetOutput
            inputs: [{from: "s2:0", desc: {dtype: float16, shape: [16, 16], attrs: {_parent_node_index: 0}}}]
  - {name: out, type: NetOutput, inputs: [ffts:0]}
"""


def test_ffts_plus_node_wraps_its_subgraph_tasks() -> None:
    r = compile_graph(load_graph_text(FFTS, "ffts.yaml"))
    top = [t for t in r.tasks.tasks if t.type != ModelTaskType.EVENT_RECORD and t.type != ModelTaskType.EVENT_WAIT]
    assert [t.op_name for t in top] == ["ffts"]
    ffts = top[0]
    assert ffts.type == ModelTaskType.FFTS_PLUS and ffts.ffts_plus_task is not None
    assert [s.op_name for s in ffts.ffts_plus_task["sub_tasks"]] == ["s1", "s2"]
    assert r.memory.plan.tensors["ffts:0"].offset == r.memory.plan.tensors["s2:0"].offset  # subgraph output


def test_partially_supported_falls_back_to_ai_cpu_and_alias_engine_adds_tasks() -> None:
    g = load_graph_text(
        """
nodes:
  - {name: x, type: Data, outputs: ["float16[16,16]"]}
  - {name: p, type: Foo, attrs: {partially_supported: true}, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: q, type: Bar, attrs: {_alias_engine_name: aicpu_tf_kernel}, inputs: [p:0], outputs: ["float16[16,16]"]}
  - {name: out, type: NetOutput, inputs: [q:0]}
""",
        "p.yaml",
    )
    r = compile_graph(g)
    assert [t.type for t in r.tasks.per_node["p"]] == [ModelTaskType.KERNEL, ModelTaskType.KERNEL]
    assert r.graph.node("p").op.attrs["aicpu_kernel_lib_name"] == "aicpu_ascend_kernel"  # type: ignore[union-attr]
    assert [t.type for t in r.tasks.per_node["q"]] == [ModelTaskType.KERNEL, ModelTaskType.KERNEL_EX]


def test_a_builder_can_be_tested_alone_on_one_node() -> None:
    g = load_graph(example_path("allgather_concat.yaml"))
    node = g.node("allgather_0")
    assert node is not None
    builder = builder_for("ops_kernel_info_hccl")
    assert builder is not None
    (task,) = builder.build(node, BuildContext())
    assert task.type == ModelTaskType.HCCL and task.kernel_hccl is not None
    assert task.kernel_hccl["hccl_type"] == "HcomAllGather"
    assert [str(a) for a in task.addresses()] == ["input 0 of the model (grad_shard_0)", "output 0 of node allgather_0"]


def test_duplicate_registration_warns_and_keeps_the_first() -> None:
    first = builder_for("AIcoreEngine")

    class Other(TaskBuilder):
        def build(self, node, ctx):  # type: ignore[no-untyped-def]
            return []

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert register("AIcoreEngine", Other()) is False
    assert caught and "already registered" in str(caught[0].message)
    assert builder_for("AIcoreEngine") is first


def test_third_party_builders_register_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    class NpuX(TaskBuilder):
        lib_names = ("npu_x_kernel",)

        def build(self, node, ctx):  # type: ignore[no-untyped-def]
            return [TaskDef(ModelTaskType.CUSTOM_KERNEL, node.name)]

    class EP:
        name = "npu_x"

        def load(self) -> type[TaskBuilder]:
            return NpuX

    monkeypatch.setattr(tasks_mod, "_ENTRY_POINTS_LOADED", False)
    monkeypatch.setattr(
        tasks_mod.metadata, "entry_points", lambda group: [EP()] if group == "rulepass.task_builders" else []
    )
    assert tasks_mod.load_entry_point_builders() == ["npu_x_kernel"]
    g = load_graph_text(
        """
nodes:
  - {name: x, type: Data, outputs: ["float16[16,16]"]}
  - {name: k, type: XOp, kernel_lib: npu_x_kernel, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: out, type: NetOutput, inputs: [k:0]}
""",
        "x.yaml",
    )
    r = compile_graph(g)
    assert [t.type for t in r.tasks.per_node["k"]] == [ModelTaskType.CUSTOM_KERNEL]
    monkeypatch.delitem(tasks_mod._REGISTRY, "npu_x_kernel")


def test_a_library_without_a_builder_is_an_error_naming_node_and_library() -> None:
    g = load_graph_text(
        """
nodes:
  - {name: x, type: Data, outputs: ["float16[16,16]"]}
  - {name: k, type: XOp, kernel_lib: no_such_lib, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: out, type: NetOutput, inputs: [k:0]}
""",
        "x.yaml",
    )
    with pytest.raises(RulepassError) as info:
        compile_graph(g)
    assert "node 'k' (XOp) uses kernel library 'no_such_lib', which has no registered task builder" in str(info.value)


def test_worker_errors_name_their_node(monkeypatch: pytest.MonkeyPatch) -> None:
    g = _chain(20)
    optimize(g)  # engine placement gives every node its kernel library
    assign_streams(g)
    builder = builder_for("AIcoreEngine")
    assert builder is not None
    real = builder.build

    def broken(node, ctx):  # type: ignore[no-untyped-def]
        if node.name == "n5":
            raise ValueError("tiling failed")
        return real(node, ctx)

    monkeypatch.setattr(builder, "build", broken)
    with pytest.raises(RulepassError) as info:
        generate_tasks(g, None, None, threads=4)
    assert "node 'n5' (ReLU) failed: ValueError: tiling failed" in str(info.value)


def test_readme_first_command_compiles_the_allgather_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_path = tmp_path / "model.json"
    assert main(["compile", "-o", str(model_path)]) == 0
    text = model_path.read_text()
    model = json.loads(text)
    jsonschema.validate(model, SCHEMA)
    assert model["model_def"]["name"] == "allgather_concat"
    ops = {
        t["op"]: t["type_name"]
        for t in model["model_def"]["task"]
        if t["type_name"] != "MODEL_TASK_EVENT_WAIT" and t["type_name"] != "MODEL_TASK_EVENT_RECORD"
    }
    assert ops == {"allgather_0": "MODEL_TASK_HCCL", "allgather_1": "MODEL_TASK_HCCL", "relu": "MODEL_TASK_KERNEL"}
    out = capsys.readouterr().out
    assert "ConcatNotaskPass: 1 candidate(s), 1 fired" in out and "plan verified safe" in out
    assert main(["compile", "-o", str(model_path)]) == 0
    assert model_path.read_text() == text  # deterministic


def test_the_model_file_is_streamed_in_slices_with_the_bytes_of_the_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rulepass.compiler import model as model_mod

    result = compile_graph(_chain(300))
    text = result.model_text()
    # slices of ten values: above the key counts of the model's own maps (model_def has 8), which are written key
    # by key, and below its long lists and maps (tasks, addresses, streams, the graph's nodes), which are cut
    monkeypatch.setattr(model_mod, "CHUNK", 10)
    pieces = list(model_mod.model_chunks(result.model))
    assert len(pieces) > 200 and max(len(p) for p in pieces) < len(text) // 20
    assert "".join(pieces) == text
    path = tmp_path / "model.json"
    result.write_model(path)
    assert path.read_text(encoding="utf-8") == text
    # keys that are not strings, empty containers, nesting below the split depth: the encoder's own text
    odd = {"a": list(range(20)), "b": {str(i): [i] * 9 for i in range(15)}, "c": [[], {}], 1: None, None: [[[[1] * 9]]]}
    assert "".join(model_mod.model_chunks(odd)) == json.dumps(odd, separators=(",", ":")) + "\n"


def test_a_model_that_cannot_be_written_leaves_nothing_and_names_the_file(tmp_path: Path) -> None:
    result = compile_graph(_chain(5))
    path = tmp_path / "model.json"
    path.write_text("old")
    broken = dict(result.model, bad=object())  # fails half-way through the stream
    with pytest.raises(TypeError):
        write_model(broken, path)
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]
    for target, expected in ((tmp_path / "no" / "m.json", "its folder does not exist"), (tmp_path, "is a directory")):
        with pytest.raises(RulepassError) as exc:
            result.write_model(target)
        assert str(target) in str(exc.value) and expected in str(exc.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]
    for bad in (3, None, ""):
        with pytest.raises(RulepassError, match="non-empty str or path"):
            result.write_model(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "argv",
    [
        ["compile", "GRAPH", "-o", "OUT"],
        ["optimize", "GRAPH", "-o", "OUT"],
        ["import", "MODEL", "-o", "OUT"],  # the model is not even read
        ["run", "MODEL", "-o", "OUT"],
    ],
)
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rulepass.api as api

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled before checking the output path")

    monkeypatch.setattr(api, "compile_graph", never)
    monkeypatch.setattr(api, "optimize", never)
    graph = str(example_path("allgather_concat"))
    out = str(tmp_path / "missing" / "model.json")
    named = {"GRAPH": graph, "OUT": out, "MODEL": str(tmp_path / "absent.onnx")}
    assert main([named.get(a, a) for a in argv]) == 1
    err = capsys.readouterr().err
    assert "cannot write" in err and out in err and "its folder does not exist" in err and "internal error" not in err
