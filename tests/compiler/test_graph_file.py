"""Graph files: the broken-file corpus, load/save round trips, IR navigation, desc defaults, the CLI, fuzzing.

The corpus in tests/corpus/graphs holds one mistake per file; each YAML file states its expected diagnostic
headlines in leading `# expect:` comments (and hints in `# help:` comments), the JSON ones in
expected_json.yaml. The headlines are compared exactly, without the file name.
"""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rulepass.compiler.graph_file import dump_graph, graph_to_data, load_graph, load_graph_text, save_graph
from rulepass.compiler.ir import (
    ATTR_DYNAMIC_SHAPE_PARTITIONED,
    ATTR_MEMORY_DISCONTIGUOUS_ALLOCATION,
    ATTR_PARENT_NODE_INDEX,
    ATTR_SINGLE_OP_SCENE,
    ComputeGraph,
    GraphError,
    OpDesc,
    TensorDesc,
)

from rulepass import __version__
from rulepass.base.diagnostics import RulepassError
from rulepass.cli import main

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "graphs"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
CORPUS_FILES = sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".yaml", ".json") and p.stem != "expected_json")
_HEADER = re.compile(r"# (expect|help): (.*)")


# ---- helpers ---------------------------------------------------------------------------------------------
def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def expectations(name: str) -> tuple[list[str], list[str]]:
    """(headlines, hints) a corpus file promises."""
    if name.endswith(".json"):
        table = yaml.safe_load((CORPUS / "expected_json.yaml").read_text(encoding="utf-8"))
        return list(table[name]), []
    heads: list[str] = []
    hints: list[str] = []
    for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
        m = _HEADER.fullmatch(line)
        if m is None:
            break
        (heads if m.group(1) == "expect" else hints).append(m.group(2))
    return heads, hints


def check_headlines(name: str, err: str) -> list[str]:
    """The diagnostic headlines of `name` in CLI stderr, without the file name; the summary line checked too."""
    prefix = f"{name}:"
    lines = err.splitlines()
    heads = [line[len(prefix) :] for line in lines if line.startswith(prefix) and not line.endswith("error(s))")]
    assert f"{name}: invalid ({len(heads)} error(s))" in lines
    return heads


def typed(attrs: dict[str, Any]) -> list[tuple[str, Any]]:
    """Attributes with their value types, so True and 1 (or 2 and 2.0) do not compare equal."""

    def one(v: Any) -> Any:
        return ("list", [one(x) for x in v]) if isinstance(v, list) else (type(v).__name__, v)

    return sorted((k, one(v)) for k, v in attrs.items())


def desc_key(d: TensorDesc) -> tuple[Any, ...]:
    return (d.shape, d.dtype, d.format, d.origin_shape, d.origin_format, typed(d.attrs))


def structure(g: ComputeGraph) -> dict[str, Any]:
    """Everything a graph file describes, as plain comparable data (subgraphs nested under their owners)."""
    nodes = []
    for n in g.nodes_in_insertion_order():
        op = n.op
        nodes.append(
            {
                "name": n.name,
                "type": n.type,
                "attrs": typed(op.attrs),
                "engine": op.engine,
                "kernel_lib": op.kernel_lib,
                "stream": op.stream_id,
                "workspace": op.workspace_bytes,
                "input_names": op.input_names,
                "output_names": op.output_names,
                "inputs": [desc_key(d) for d in op.input_descs],
                "outputs": [desc_key(d) for d in op.output_descs],
                "peers": [None if p is None else str(p) for p in n.in_peers],
                # An output's consumer order follows edge creation, which `edges:` entries can reorder on save.
                "consumers": [sorted(str(a) for a in peers) for peers in n.out_peers],
                "control_in": [c.name for c in n.control_in],
                "control_out": sorted(c.name for c in n.control_out),
                "subgraphs": [structure(s) for s in n.subgraphs()],
            }
        )
    return {
        "name": g.name,
        "unknown_shape": g.unknown_shape,
        "attrs": typed(g.attrs),
        "parent": None if g.parent_node is None else g.parent_node.name,
        "edges": g.edge_count(),
        "registered_subgraphs": sorted(g.subgraphs),
        "nodes": nodes,
    }


def loads_or_rulepass_error(text: str, name: str) -> ComputeGraph | None:
    try:
        return load_graph_text(text, name)
    except RulepassError as exc:
        for d in exc.diagnostics:
            assert d.span is not None or d.where is not None, d
        return None


RICH = """\
$schema: ../compiler/graph.schema.json
name: rich
description: every feature of the format at once
unknown_shape: true
attrs: {_single_op_scene: false, _memory_discontiguous_allocation: true, _dynamic_shape_partitioned: true, note: '1e3'}
nodes:
  - name: concat_first
    type: ConcatD
    attrs: {concat_dim: 0, N: 2}
    inputs: [split:0, null]
    outputs: ["float16[4,8]"]
  - {name: x, type: Data, attrs: {index: 0}, outputs: ["float16[4,8]"]}
  - {name: pred, type: Data, attrs: {index: 1}, outputs: ["bool[]"]}
  - name: split
    type: SplitD
    attrs: {split_dim: 0, num_split: 2, sizes: [2, 2], ratios: [0.5, 0.5], flags: [true, false], tags: [a, b]}
    inputs: [x]
    outputs: ["float16[2,8]", "float16[2,8]"]
    output_names: [y_a, y_b]
  - {name: init, type: NoOp}
  - name: relu
    type: ReLU
    engine: AIcoreEngine
    kernel_lib: AIcoreEngine
    stream: 1
    workspace: [64, 0]
    inputs: [{from: "split:1", desc: {dtype: float16, shape: [2, 8], attrs: {memory_type: 1}}, name: features}]
    control_inputs: [init]
    outputs: ["float16[2,8]"]
  - name: pad
    type: Add
    inputs: [x:0, null, {desc: "float16[1]"}]
    outputs: ["float16[4,8]"]
  - name: cond
    type: If
    inputs: [pred:0, concat_first:0]
    outputs: ["float16[4,8]"]
    subgraphs:
      - name: then_branch
        nodes:
          - {name: then_x, type: Data, attrs: {_parent_node_index: 1}, outputs: ["float16[4,8]"]}
          - {name: then_out, type: NetOutput, inputs: [then_x:0]}
      - name: else_branch
        nodes:
          - {name: else_x, type: Data, attrs: {_parent_node_index: 1}, outputs: ["float16[4,8]"]}
          - name: else_call
            type: PartitionedCall
            inputs: [else_x:0]
            outputs: ["float16[4,8]"]
            subgraphs:
              - name: inner
                unknown_shape: true
                attrs: {_dynamic_shape_partitioned: true}
                nodes:
                  - {name: inner_x, type: Data, attrs: {_parent_node_index: 0}, outputs: ["float16[4,8]"]}
                  - {name: inner_relu, type: ReLU, inputs: [null], outputs: ["float16[4,8]"]}
                  - {name: inner_out, type: NetOutput, inputs: [inner_relu:0]}
                edges: ["inner_x:0 -> inner_relu:0"]
          - {name: else_out, type: NetOutput, inputs: [else_call:0]}
  - name: image
    type: Data
    outputs: [{dtype: int8, format: NC1HWC0, origin_format: NCHW, origin_shape: [1, 32, 7, 7]}]
  - {name: out, type: NetOutput, inputs: [cond:0, relu:0, pad:0, image:0], control_inputs: [init]}
edges:
  - relu:0 -> concat_first:1
"""


@pytest.fixture(scope="module")
def rich() -> ComputeGraph:
    return load_graph_text(RICH, "rich.yaml")


# ---- the corpus ------------------------------------------------------------------------------------------
def test_corpus_is_complete() -> None:
    assert len(CORPUS_FILES) >= 24
    for name in CORPUS_FILES:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.(yaml|json)", name), name
        heads, _ = expectations(name)
        assert heads, f"{name} states no expected headline"
        if name.endswith(".yaml"):
            assert (CORPUS / name).read_text(encoding="utf-8").startswith("# expect: ")
    numbers = [int(n[:2]) for n in CORPUS_FILES]
    assert len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_file(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS)
    heads, hints = expectations(name)
    code, out, err = run_cli("graph", "check", name)
    assert code == 1
    assert "Traceback" not in err and "Traceback" not in out
    assert check_headlines(name, err) == heads
    for hint in hints:
        assert f"= help: {hint}" in err
    # The library raises the same diagnostics.
    with pytest.raises(RulepassError) as info:
        load_graph(name)
    assert [d.headline()[len(name) + 1 :] for d in info.value.diagnostics] == heads


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
            "1:1: error[encoding]: graph file is not a text file (it contains NUL bytes)",
        ),
        (b"name: g\nnodes: [\xff\xfe]\n", "2:9: error[encoding]: graph file is not valid UTF-8 (byte 0xff)"),
        (
            b"name: g\nnodes: [\x07]\n",
            "2:9: error[yaml-syntax]: YAML syntax error: unacceptable character U+0007"
            " (control characters are not allowed)",
        ),
    ],
    ids=["binary", "latin1", "control-character"],
)
def test_binary_files(data: bytes, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("blob.yaml").write_bytes(data)
    code, _, err = run_cli("graph", "check", "blob.yaml")
    assert code == 1
    assert "Traceback" not in err
    assert check_headlines("blob.yaml", err) == [expected]


def test_missing_file_and_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("sub").mkdir()
    code, _, err = run_cli("graph", "check", "nope.yaml", "sub")
    assert code == 1
    assert "nope.yaml: error[io]: graph file 'nope.yaml' does not exist" in err
    assert "sub: error[io]: graph file 'sub' is a directory" in err


def test_every_mistake_is_reported(tmp_path: Path) -> None:
    """Independent mistakes are all reported, in file order, not just the first."""
    path = tmp_path / "many.yaml"
    path.write_text(
        "nodes:\n"
        "  - {name: x, type: Data, outputs: ['flaot[2]']}\n"
        "  - {name: y, type: ReLU, inputs: [q:0], control_inputs: [z]}\n",
        encoding="utf-8",
    )
    with pytest.raises(RulepassError) as info:
        load_graph(path)
    assert [d.message for d in info.value.diagnostics] == [
        "node 'x' output 0: unknown dtype 'flaot'",
        "node 'y': unknown producer 'q'",
        "node 'y': unknown control input 'z'",
    ]


def test_json_surrogate_pair_escapes_load() -> None:
    text = json.dumps({"name": "g", "nodes": [{"name": "x\U0001f600", "type": "Data"}]})
    assert load_graph_text(text, "emoji.json").node("x\U0001f600") is not None


# ---- round trips -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", [*EXAMPLES, "rich"], ids=[*(p.name for p in EXAMPLES), "rich"])
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_round_trip(source: Path | str, fmt: str, tmp_path: Path) -> None:
    g1 = load_graph(source) if isinstance(source, Path) else load_graph_text(RICH, "rich.yaml")
    saved = tmp_path / f"{g1.name}.{fmt}"
    save_graph(g1, saved)
    text = saved.read_text(encoding="utf-8")
    assert text == dump_graph(g1, fmt)
    if fmt == "json":
        assert json.loads(text) == graph_to_data(g1)
    g2 = load_graph(saved)
    assert structure(g2) == structure(g1)
    assert dump_graph(g2, fmt) == text
    assert dump_graph(g2, "yaml" if fmt == "json" else "json") == dump_graph(g1, "yaml" if fmt == "json" else "json")
    assert not list(tmp_path.glob("*.tmp"))


def test_round_trip_keeps_awkward_strings() -> None:
    names = ["1e3", "null", "yes", "0x1F", "~", "x\U0001f600", "tab\there", "nel\x85", "ls\u2028", "quote'\"", ""]
    g = ComputeGraph("awkward", attrs={f"k{i}": n for i, n in enumerate(names)})
    g.attrs["inf"] = math.inf
    g2 = load_graph_text(dump_graph(g, "yaml"), "awkward.yaml")
    assert g2.attrs == g.attrs
    del g.attrs["inf"]
    g3 = load_graph_text(dump_graph(g, "json"), "awkward.json")
    assert g3.attrs == g.attrs


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_non_finite_floats_round_trip_as_strings(fmt: str) -> None:
    # JSON has no inf/nan: they are written "inf", "-inf", "nan", and strings that look like them get a backslash
    attrs = {"clip": -math.inf, "big": math.inf, "v": [1.0, -math.inf, math.nan], "s": "inf", "e": "\\-inf"}
    g = ComputeGraph("inf", attrs=dict(attrs))
    text = dump_graph(g, fmt)
    if fmt == "json":
        assert json.loads(text)["attrs"] == {
            "big": "inf", "clip": "-inf", "e": "\\\\-inf", "s": "\\inf", "v": [1.0, "-inf", "nan"]
        }  # fmt: skip
    back = load_graph_text(text, f"inf.{fmt}").attrs
    assert {k: v for k, v in back.items() if k != "v"} == {k: v for k, v in attrs.items() if k != "v"}
    v = back["v"]
    assert isinstance(v, list) and v[:2] == [1.0, -math.inf] and math.isnan(v[2])
    assert dump_graph(load_graph_text(text, f"inf.{fmt}"), fmt) == text


def test_integral_float_dims_become_ints() -> None:
    g = load_graph_text("nodes: [{name: x, type: Data, workspace: [8.0], outputs: [{shape: [2.0, 3]}]}]", "f.yaml")
    desc = g.node("x").op.output_descs[0]  # type: ignore[union-attr]
    assert desc.shape == (2, 3) and all(type(d) is int for d in desc.shape)
    assert "float[2,3]" in dump_graph(g)


# ---- IR navigation ---------------------------------------------------------------------------------------
def test_navigation(rich: ComputeGraph) -> None:
    split, relu, concat, out = (rich.node(n) for n in ("split", "relu", "concat_first", "out"))
    assert split is not None and relu is not None and concat is not None and out is not None
    peer = relu.in_anchor(0).peer
    assert peer is not None and (peer.node, peer.index) == (split, 1) and str(peer) == "split:1"
    assert [str(a) for a in split.out_anchor(0).consumers] == ["concat_first:in0"]
    assert [str(a) for a in relu.out_anchor(0).consumers] == ["out:in1", "concat_first:in1"]
    assert [n.name for n in split.out_data_nodes()] == ["concat_first", "relu"]
    assert [c.name for c in relu.control_in] == ["init"]
    assert [c.name for c in rich.node("init").control_out] == ["relu", "out"]  # type: ignore[union-attr]
    assert rich.edge_count() == (11, 2)


def test_removing_a_data_edge_disconnects_both_ends(rich: ComputeGraph) -> None:
    g = rich.copy()  # the fixture is shared
    relu, out, concat = (g.node(n) for n in ("relu", "out", "concat_first"))
    assert relu is not None and out is not None and concat is not None
    before = g.topological_order()
    peer = g.remove_data_edge(out, 1)
    assert (peer.node, peer.index) == (relu, 0)
    assert out.in_anchor(1).peer is None
    assert [str(a) for a in relu.out_anchor(0).consumers] == ["concat_first:in1"]  # the other consumer stays
    assert g.edge_count() == (10, 2)
    assert g.topological_order() is not before  # the order is worked out again
    g.add_data_edge(relu, 0, out, 1)  # the input is free again
    assert g.edge_count() == (11, 2)
    with pytest.raises(GraphError, match="input 7 does not exist"):
        g.remove_data_edge(out, 7)
    pad = g.node("pad")
    assert pad is not None
    with pytest.raises(GraphError, match="input 1 of node 'pad' has no producer"):
        g.remove_data_edge(pad, 1)


@pytest.mark.parametrize("bad", ["1", None, 1.0, True])
def test_an_anchor_index_that_is_not_an_integer_is_a_graph_error(rich: ComputeGraph, bad: Any) -> None:
    g = rich.copy()  # the fixture is shared
    relu, out = g.node("relu"), g.node("out")
    assert relu is not None and out is not None
    g.remove_data_edge(out, 1)
    with pytest.raises(GraphError, match=rf"node 'out' has 4 input\(s\); an input index is an integer, not {bad!r}"):
        g.remove_data_edge(out, bad)
    with pytest.raises(GraphError, match="an input index is an integer"):
        g.add_data_edge(relu, 0, out, bad)
    with pytest.raises(GraphError, match=r"node 'relu' has 1 output\(s\); an output index is an integer"):
        g.add_data_edge(relu, bad, out, 1)
    assert out.in_anchor(1).peer is None  # nothing was half-connected


def test_a_cycle_is_named_through_data_and_control_edges() -> None:
    g = ComputeGraph("g")
    a, b, c = (
        g.add_node(OpDesc(n, "ReLU", input_descs=[TensorDesc((1,))], output_descs=[TensorDesc((1,))])) for n in "abc"
    )
    g.add_data_edge(a, 0, b, 0)
    g.add_data_edge(b, 0, c, 0)
    assert g.find_cycle() is None
    g.add_control_edge(c, a)
    assert g.find_cycle() == ["a", "b", "c", "a"]
    with pytest.raises(GraphError, match="graph 'g' has a cycle: a -> b -> c -> a"):
        g.topological_order()


def test_unconnected_inputs(rich: ComputeGraph) -> None:
    pad = rich.node("pad")
    assert pad is not None
    assert [a.peer is None for a in pad.in_anchors] == [False, True, True]
    assert not pad.in_anchor(1).desc.is_valid  # no producer, no desc: GE's invalid desc
    assert pad.in_anchor(1).desc.dtype == "undefined" and pad.in_anchor(1).desc.format == "RESERVED"
    given = pad.in_anchor(2).desc  # no producer but a desc of its own
    assert given.is_valid and desc_key(given)[:3] == ((1,), "float16", "ND")
    assert pad.op.input_names == ["x0", "x1", "x2"]


def test_topological_order_prefers_file_order() -> None:
    g = load_graph_text(
        "nodes:\n"
        "  - {name: c, type: ReLU, inputs: [b:0]}\n"
        "  - {name: a, type: Data, outputs: ['float[1]']}\n"
        "  - {name: b, type: ReLU, inputs: [a:0], outputs: ['float[1]']}\n"
        "  - {name: d, type: Data, outputs: ['float[1]']}\n",
        "topo.yaml",
    )
    assert [n.name for n in g.nodes_in_insertion_order()] == ["c", "a", "b", "d"]
    assert [n.name for n in g.topological_order()] == ["a", "b", "c", "d"]
    assert g.topological_order() == g.direct_nodes()


def test_rich_topological_order(rich: ComputeGraph) -> None:
    names = [n.name for n in rich.topological_order()]
    assert names == ["x", "pred", "split", "init", "relu", "concat_first", "pad", "cond", "image", "out"]


def test_subgraph_ownership(rich: ComputeGraph) -> None:
    assert sorted(rich.subgraphs) == ["else_branch", "inner", "then_branch"]  # the root keeps them all
    cond = rich.node("cond")
    assert cond is not None
    then_b, else_b, inner = (rich.subgraphs[n] for n in ("then_branch", "else_branch", "inner"))
    assert cond.op.subgraph_names == ["then_branch", "else_branch"]
    assert cond.subgraphs() == [then_b, else_b]
    assert then_b.parent_node is cond and then_b.parent_graph is rich
    call = else_b.node("else_call")
    assert call is not None and inner.parent_node is call and inner.parent_graph is else_b
    assert inner.root is rich and not inner.is_root and rich.is_root
    assert inner.subgraphs == {} and else_b.subgraphs == {}
    assert inner.unknown_shape and inner.attrs == {ATTR_DYNAMIC_SHAPE_PARTITIONED: True}
    assert [s.name for s in rich.all_subgraphs()] == ["then_branch", "else_branch", "inner"]
    assert [n.name for n in rich.all_nodes()] == [
        "x",
        "pred",
        "split",
        "init",
        "relu",
        "concat_first",
        "pad",
        "cond",
        "then_x",
        "then_out",
        "else_x",
        "else_call",
        "inner_x",
        "inner_relu",
        "inner_out",
        "else_out",
        "image",
        "out",
    ]
    inner_x = inner.node("inner_x")
    assert inner_x is not None and inner_x.op.attrs[ATTR_PARENT_NODE_INDEX] == 0
    assert "x" not in then_b and "then_x" not in rich  # each graph holds only its own nodes


def test_graph_attributes(rich: ComputeGraph) -> None:
    assert rich.name == "rich" and rich.unknown_shape
    assert rich.attrs[ATTR_SINGLE_OP_SCENE] is False
    assert rich.attrs[ATTR_MEMORY_DISCONTIGUOUS_ALLOCATION] is True
    assert rich.attrs[ATTR_DYNAMIC_SHAPE_PARTITIONED] is True
    assert rich.attrs["note"] == "1e3"  # YAML 1.2: a quoted number stays a string
    split = rich.node("split")
    assert split is not None
    assert split.op.attrs["sizes"] == [2, 2] and split.op.attrs["flags"] == [True, False]
    assert split.op.output_names == ["y_a", "y_b"]


def test_graph_name_defaults_to_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "my_graph.yaml"
    path.write_text("nodes: []\n", encoding="utf-8")
    assert load_graph(path).name == "my_graph"


# ---- descs -----------------------------------------------------------------------------------------------
def test_input_desc_defaults_to_producer_output(rich: ComputeGraph) -> None:
    concat, split = rich.node("concat_first"), rich.node("split")
    assert concat is not None and split is not None
    produced = split.out_anchor(0).desc
    consumed = concat.in_anchor(0).desc
    assert consumed.same_as(produced) and consumed is not produced  # a copy, as GE copies the desc
    consumed.attrs["changed"] = 1
    assert "changed" not in produced.attrs


def test_input_desc_override(rich: ComputeGraph) -> None:
    relu = rich.node("relu")
    assert relu is not None
    consumed = relu.in_anchor(0).desc
    produced = relu.in_anchor(0).peer.desc  # type: ignore[union-attr]
    assert not consumed.same_as(produced)
    assert consumed.attrs == {"memory_type": 1} and produced.attrs == {}
    assert consumed.shape == produced.shape == (2, 8)
    assert relu.op.input_names == ["features"]
    data = graph_to_data(rich)
    (saved,) = [n for n in data["nodes"] if n["name"] == "relu"]
    assert saved["inputs"] == [
        {
            "from": "split:1",
            "desc": {"dtype": "float16", "shape": [2, 8], "format": "ND", "attrs": {"memory_type": 1}},
            "name": "features",
        }
    ]


def test_desc_shorthand_and_defaults() -> None:
    g = load_graph_text(
        "nodes:\n"
        "  - {name: a, type: Data, outputs: ['fp16[1,32,16,16] nchw', 'DT_FLOAT[]', 'int8[-1,-2]', {shape: [3]}]}\n",
        "short.yaml",
    )
    a = g.node("a")
    assert a is not None
    keys = [desc_key(d) for d in a.op.output_descs]
    assert keys == [
        ((1, 32, 16, 16), "float16", "NCHW", (1, 32, 16, 16), "NCHW", []),
        ((), "float", "ND", (), "ND", []),
        ((-1, -2), "int8", "ND", (-1, -2), "ND", []),
        ((3,), "float", "ND", (3,), "ND", []),  # dtype defaults to float, format to ND
    ]
    assert a.op.output_names == ["y0", "y1", "y2", "y3"]


@pytest.mark.parametrize(
    ("dtype", "origin", "storage_format", "storage"),
    [
        ("float16", [1, 32, 56, 56], "NC1HWC0", (1, 2, 56, 56, 16)),
        ("float16", [1, 3, 56, 56], "NC1HWC0", (1, 1, 56, 56, 16)),
        ("int8", [1, 32, 7, 7], "NC1HWC0", (1, 1, 7, 7, 32)),
        ("float16", [32, 3, 3, 3], "FRACTAL_Z", (9, 2, 16, 16)),
        ("float16", [1, 32, 56, 56], "NHWC", (1, 56, 56, 32)),
    ],
)
def test_storage_shape_derived_from_origin(
    dtype: str, origin: list[int], storage_format: str, storage: tuple[int, ...]
) -> None:
    desc = {"dtype": dtype, "format": storage_format, "origin_format": "NCHW", "origin_shape": origin}
    g = load_graph_text(json.dumps({"nodes": [{"name": "t", "type": "Data", "outputs": [desc]}]}), "derive.json")
    d = g.node("t").op.output_descs[0]  # type: ignore[union-attr]
    assert (d.shape, d.format, d.origin_shape, d.origin_format) == (storage, storage_format, tuple(origin), "NCHW")


def test_conv_example_storage_shapes() -> None:
    g = load_graph(ROOT / "examples" / "conv_nc1hwc0_concat.yaml")
    shapes = {n.name: n.op.output_descs[0].shape for n in g.nodes_in_insertion_order() if n.op.output_descs}
    assert shapes["trans_image"] == (1, 1, 56, 56, 16)
    assert shapes["weight_a"] == (9, 2, 16, 16)
    assert shapes["conv_a"] == shapes["conv_b"] == (1, 2, 56, 56, 16)
    assert shapes["concat_c"] == (1, 4, 56, 56, 16)
    concat = g.node("concat_c")
    assert concat is not None and concat.in_anchor(1).desc.origin_shape == (1, 32, 56, 56)


def test_origin_defaults_to_storage() -> None:
    g = load_graph_text(
        "nodes: [{name: a, type: Data, outputs: [{dtype: float16, shape: [2, 3], format: NHWC}]}]", "o.yaml"
    )
    d = g.node("a").op.output_descs[0]  # type: ignore[union-attr]
    assert (d.origin_shape, d.origin_format) == ((2, 3), "NHWC")


# ---- the command line ------------------------------------------------------------------------------------
def test_cli_graph_check_examples() -> None:
    paths = [str(p) for p in EXAMPLES]
    code, out, err = run_cli("graph", "check", *paths)
    assert code == 0 and err == ""
    for p in paths:
        assert f"{p}: ok: graph '{load_graph(p).name}', " in out
    split = str(ROOT / "examples" / "split_relu_concat.yaml")
    assert (
        f"{split}: ok: graph 'split_relu_concat', 7 nodes, 8 data edges, 0 control edges, 0 subgraphs\n"
        "    op types: ReLU x3, ConcatD x1, Data x1, NetOutput x1, SplitD x1\n"
    ) in out


def test_cli_graph_check_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - {name: y, type: ReLU, inputs: [q:0]}\n", encoding="utf-8")
    split = str(ROOT / "examples" / "split_relu_concat.yaml")
    code, out, err = run_cli("graph", "check", "--format", "json", split, str(bad))
    assert code == 1 and err == ""
    ok, invalid = json.loads(out)
    assert ok == {
        "file": split,
        "valid": True,
        "graph": "split_relu_concat",
        "nodes": 7,
        "data_edges": 8,
        "control_edges": 0,
        "subgraphs": 0,
        "op_types": {"ReLU": 3, "ConcatD": 1, "Data": 1, "NetOutput": 1, "SplitD": 1},
    }
    assert invalid["file"] == str(bad) and invalid["valid"] is False
    (diag,) = invalid["diagnostics"]
    assert diag["code"] == "graph" and diag["message"] == "node 'y': unknown producer 'q'"
    assert diag["span"] == {"file": str(bad), "line": 2, "col": 36, "end_line": 2, "end_col": 38}


def test_cli_graph_check_counts_subgraphs(tmp_path: Path) -> None:
    path = tmp_path / "rich.yaml"
    path.write_text(RICH, encoding="utf-8")
    code, out, _ = run_cli("graph", "check", str(path))
    assert code == 0
    assert "ok: graph 'rich', 18 nodes, 16 data edges, 2 control edges, 3 subgraphs" in out


def test_cli_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"rulepass {__version__}"
    assert main(["--help"]) == 0
    assert "usage: rulepass" in capsys.readouterr().out
    assert main(["graph", "check", "--help"]) == 0
    assert "--format {text,json}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [[], ["graph"], ["graph", "check"], ["graph", "check", "--format", "xml", "f.yaml"], ["nonsense"], ["--bogus"]],
    ids=["nothing", "graph", "no-files", "bad-format", "bad-command", "bad-option"],
)
def test_cli_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "usage:" in captured.err and "error:" in captured.err
    assert "Traceback" not in captured.err


# ---- fuzzing ---------------------------------------------------------------------------------------------
_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=8),
    st.sampled_from(["x:0", "a", "float16[2]", "float16[1,,2]", "NCHW", "Data", "a:0 -> b:0", "_parent_node_index"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(st.text(max_size=6), st.sampled_from(["name", "type", "nodes", "inputs", "outputs"])),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=20,
)
_node_names = st.sampled_from(["a", "b", "c", "d"])
_refs = st.one_of(
    st.none(),
    st.builds(lambda n, i: f"{n}:{i}", _node_names, st.integers(0, 2)),
    _node_names,
    st.fixed_dictionaries({}, optional={"from": _node_names, "desc": st.sampled_from(["float16[2]", "x", "int8[-3]"])}),
)
_descs = st.one_of(
    st.sampled_from(["float16[2]", "int8[1,32,4,4] NCHW", "bogus[1]", "float[2,,3]", "float16[-3]", "float[]"]),
    st.fixed_dictionaries(
        {},
        optional={
            "dtype": st.sampled_from(["float16", "int8", "undefined", "nope"]),
            "shape": st.lists(st.integers(-3, 40), max_size=5),
            "origin_shape": st.lists(st.integers(-3, 40), max_size=5),
            "format": st.sampled_from(["ND", "NCHW", "NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ", "NHWC", "RESERVED", "bad"]),
            "origin_format": st.sampled_from(["ND", "NCHW", "NHWC", "NCDHW", "bad"]),
        },
    ),
)


def _node(sub: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": _node_names, "type": st.sampled_from(["Data", "If", ""])},
        optional={
            "inputs": st.lists(_refs, max_size=3),
            "outputs": st.lists(_descs, max_size=3),
            "control_inputs": st.lists(_node_names, max_size=2),
            "attrs": st.dictionaries(st.sampled_from(["_parent_node_index", "k"]), _scalars, max_size=2),
            "stream": st.integers(-2, 2),
            "subgraphs": st.lists(sub, max_size=2),
        },
    )


_graphs = st.recursive(
    st.fixed_dictionaries({"name": _node_names, "nodes": st.just([])}),
    lambda sub: st.fixed_dictionaries(
        {"name": _node_names, "nodes": st.lists(_node(sub), max_size=4)},
        optional={"edges": st.lists(st.sampled_from(["a:0 -> b:0", "b:1 -> c:2", "q:0 -> a:0", "bad"]), max_size=2)},
    ),
    max_leaves=6,
)


@_FUZZ
@given(st.text(max_size=200))
def test_fuzz_random_text(text: str) -> None:
    loads_or_rulepass_error(text, "fuzz.yaml")


@_FUZZ
@given(_values)
def test_fuzz_random_structures(value: Any) -> None:
    loads_or_rulepass_error(yaml.safe_dump(value), "fuzz.yaml")
    loads_or_rulepass_error(json.dumps(value), "fuzz.json")


@_FUZZ
@given(_graphs)
def test_fuzz_graph_like_documents(doc: dict[str, Any]) -> None:
    for text in (yaml.safe_dump(doc, sort_keys=False), json.dumps(doc)):
        g = loads_or_rulepass_error(text, "fuzz.yaml")
        if g is None:
            continue
        again = load_graph_text(dump_graph(g, "yaml"), "again.yaml")
        assert structure(again) == structure(g)


# ---- the user documentation ------------------------------------------------------------------------------
def test_docs_examples_load() -> None:
    """Every complete graph file shown in docs/graph_files.md loads and survives a round trip."""
    text = (ROOT / "docs" / "graph_files.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    files = [b for b in blocks if re.match(r"(#[^\n]*\n)*(name|nodes):", b)]
    assert len(files) >= 3
    for block in files:
        g = load_graph_text(block, "doc.yaml")
        assert structure(load_graph_text(dump_graph(g, "json"), "doc.json")) == structure(g)


def test_an_edge_between_nodes_of_another_graph_is_a_graph_error(rich: ComputeGraph) -> None:
    g = rich.copy()  # the fixture is shared; a copy has new nodes, under the same names
    relu, out = g.node("relu"), g.node("out")
    old_relu, old_out = rich.node("relu"), rich.node("out")
    assert relu is not None and out is not None and old_relu is not None and old_out is not None
    g.remove_data_edge(out, 1)

    def state() -> Any:
        return (
            g.edge_count(),
            list(relu.out_peers[0]),
            list(out.in_peers),
            list(out.control_in),
            list(old_relu.control_out),
        )

    before = state()
    same_name = r"node 'relu' \(source\) belongs to another graph of the same name \(a copy\?\), not to graph 'rich'"
    with pytest.raises(GraphError, match=same_name):
        g.add_data_edge(old_relu, 0, out, 1)
    with pytest.raises(GraphError, match=r"node 'out' \(destination\) belongs to another graph"):
        g.add_data_edge(relu, 0, old_out, 1)
    with pytest.raises(GraphError, match=r"node 'out' \(destination\) belongs to another graph"):
        g.remove_data_edge(old_out, 0)
    with pytest.raises(GraphError, match=r"node 'relu' \(source\) belongs to another graph"):
        g.add_control_edge(old_relu, out)
    other = ComputeGraph("other")
    with pytest.raises(GraphError, match=r"node 'relu' \(source\) belongs to graph 'rich', not to graph 'other'"):
        other.add_data_edge(relu, 0, out, 1)
    with pytest.raises(GraphError, match="the destination of an edge in graph 'rich' must be a Node, not str"):
        g.add_data_edge(relu, 0, "out", 1)  # type: ignore[arg-type]
    assert state() == before  # nothing half-made
