"""SplitNotaskPass and EnginePlacementPass beyond what their fixtures can say.

Fixtures (rules/fixtures/split_notask/, rules/fixtures/engine_placement/) pin each candidate's decision, the
attributes set and the engine and kernel library of every node (`expect_fields`); this file checks that every
placement fixture pins every node, the memory layout of a fired split (spec §5.3: output k at the input's offset +
the raw sizes of the outputs before it), and the concat decisions the split fixtures describe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rulepass.compiler import formats
from rulepass.compiler.graph_file import graph_from_doc, load_graph_text
from rulepass.compiler.ir import ComputeGraph, Node
from rulepass.compiler.memory.assign import anchor_id, assign_memory
from rulepass.rules import bundled_rules_dir

from rulepass import api
from rulepass.base.yaml_source import load_file

RULES_DIR = bundled_rules_dir()
SPLIT_FIXTURES = RULES_DIR / "fixtures" / "split_notask"
PLACEMENT_FIXTURES = RULES_DIR / "fixtures" / "engine_placement"


def _fixture(path: Path) -> tuple[ComputeGraph, dict[str, Any]]:
    doc = load_file(path, what="fixture file")
    return graph_from_doc(doc.sub(["graph"]), path.stem), doc.data


def _optimized(path: Path) -> ComputeGraph:
    graph, data = _fixture(path)
    api.optimize(graph, level=data.get("level", "O3"))
    return graph


def _all_nodes(graph: ComputeGraph) -> list[Node]:
    return [n for g in [graph, *graph.all_subgraphs()] for n in g.nodes_in_insertion_order()]


def _node(graph: ComputeGraph, name: str) -> Node:
    n = next((n for n in _all_nodes(graph) if n.name == name), None)
    assert n is not None, f"no node {name!r}"
    return n


# ---- engine placement -------------------------------------------------------------------------------------------
def test_every_placement_fixture_pins_every_node() -> None:
    # the expectations themselves are the fixtures' `expect_fields` (rulepass test runs them); none is left out
    stems = sorted(p.stem for p in PLACEMENT_FIXTURES.glob("*.yaml"))
    assert stems
    for stem in stems:
        graph, data = _fixture(PLACEMENT_FIXTURES / f"{stem}.yaml")
        pinned = data["expect_fields"]
        assert sorted(n.name for n in _all_nodes(graph)) == sorted(pinned), stem
        assert all(set(fields) == {"engine", "kernel_lib"} for fields in pinned.values()), stem


def test_placement_runs_below_o3_and_before_the_split() -> None:
    graph, _ = _fixture(PLACEMENT_FIXTURES / "aicore_default.yaml")
    result = api.optimize(graph, level="O0")
    # placement is the only pass that changes anything (GE's layout-conflict rules run at every level too)
    assert {r.name for r in result.reports if any(d.fired for d in r.decisions)} == {"EnginePlacementPass"}
    assert {r.name for r in result.reports if r.decisions} - {"EnginePlacementPass"} <= {
        r.name for r in result.reports if "layout-conflict" in r.tags
    }
    assert _node(graph, "split").op.kernel_lib == "AIcoreEngine"
    order = [r.name for r in api.optimize(_fixture(PLACEMENT_FIXTURES / "aicore_default.yaml")[0]).reports]
    assert order.index("EnginePlacementPass") < order.index("SplitNotaskPass")


# ---- memory layout of a fired split ------------------------------------------------------------------------------
def _check_split_layout(graph: ComputeGraph, split: str) -> list[int]:
    """Assert output k sits at the input's offset + the raw sizes of outputs 0..k-1; return the offsets."""
    plan = assign_memory(graph)
    node = _node(graph, split)
    src = node.in_peers[0]
    assert src is not None
    base = plan.tensors[anchor_id(src)]
    offsets, running = [], 0
    for out in node.out_anchors:
        t = plan.tensors[anchor_id(out)]
        raw = formats.tensor_raw_size(out.desc.shape, out.desc.dtype)
        assert t.raw_size == raw
        assert (t.region, t.offset) == (base.region, base.offset + running), anchor_id(out)
        offsets.append(t.offset - base.offset)
        running += raw
    assert running <= base.raw_size  # the parts lie inside the input
    return offsets


def test_splitvd_unequal_parts_layout() -> None:
    graph = _optimized(SPLIT_FIXTURES / "splitvd_unequal.yaml")
    # ND [3,16] fp16 into [1,16] (32 B) + [2,16] (64 B).
    assert _check_split_layout(graph, "nd_1_2") == [0, 32]
    # NC1HWC0 [1,64,4,4] fp16 along C into 48 + 16: part 0 is storage [1,3,4,4,16] = 1536 B.
    assert _check_split_layout(graph, "c_48_16") == [0, 1536]
    # The split that missed is not a view: each part is its own tensor.
    plan = assign_memory(graph)
    assert plan.tensors["c_40_24:0"].unit != plan.tensors["x3:0"].unit


def test_split_relu_concat_layout() -> None:
    graph = _optimized(SPLIT_FIXTURES / "split_relu_concat.yaml")
    assert _check_split_layout(graph, "split") == [0, 2048, 4096]  # 3 x [1,1024] fp16, in the graph input
    plan = assign_memory(graph)
    assert plan.tensors["input:0"].region == "input"
    # The concat at the other end: relu k at relu_0 + k x 2048, the concat output on relu_0.
    r0 = plan.tensors["relu_0:0"].offset
    assert [plan.tensors[f"relu_{k}:0"].offset - r0 for k in range(3)] == [0, 2048, 4096]
    assert plan.tensors["concat:0"].offset == r0


# ---- decisions the split fixtures describe ----------------------------------------------------------------------
def _decisions(graph: ComputeGraph, rule: str) -> dict[str, Any]:
    return {d.node: d for d in api.optimize(graph).decisions if d.rule == rule}


def test_split_into_concat_what_the_concat_decides() -> None:
    graph, _ = _fixture(SPLIT_FIXTURES / "split_into_concat.yaml")
    concat = _decisions(graph, "ConcatNotaskPass")
    direct, via_reshape = concat["concat"], concat["concat_r"]
    assert (direct.fired, direct.check) == (False, "IsPreNodeAttrValid")
    assert any("input 0 of concat" in e for e in direct.elements)
    assert (via_reshape.fired, via_reshape.check) == (False, "HasSameSourceAnchor")
    assert any("input 1 of concat_r" in e for e in via_reshape.elements)
    assert "x2:0" in via_reshape.summary()  # both inputs trace through the split to its input


def test_concat_feeding_a_split_misses_next_node_not_virtual() -> None:
    graph, _ = _fixture(SPLIT_FIXTURES / "split_cascade.yaml")
    d = _decisions(graph, "ConcatNotaskPass")["concat"]
    assert (d.fired, d.check) == (False, "NextNodeNotVirtual")


def test_split_without_input_anchor_does_not_break_memory() -> None:
    graph = load_graph_text(
        """
nodes:
  - {name: split, type: SplitD, attrs: {split_dim: 0, num_split: 2}, outputs: ["float16[1,16]", "float16[1,16]"]}
  - {name: r0, type: ReLU, inputs: [split:0], outputs: ["float16[1,16]"]}
  - {name: o, type: NetOutput, inputs: [r0]}
"""
    )
    d = _decisions(graph, "SplitNotaskPass")["split"]
    assert (d.fired, d.check) == (False, "InputCheck")
    assign_memory(graph)  # raised "no-padding split 'split' has no input 0" while the split fired


# ---- known defects ------------------------------------------------------------------------------------------------
SPLIT_RESHAPE_CONCAT = """
nodes:
  - {name: x, type: ReLU, outputs: ["float16[2,16]"]}
  - name: split
    type: SplitD
    attrs: {split_dim: 0, num_split: 2}
    inputs: [x]
    outputs: ["float16[1,16]", "float16[1,16]"]
  - {name: reshape, type: Reshape, inputs: [split:0], outputs: ["float16[16]"]}
  - {name: b, type: ReLU, outputs: ["float16[16]"]}
  - {name: concat, type: ConcatD, attrs: {concat_dim: 0, N: 2}, inputs: [reshape, b], outputs: ["float16[32]"]}
  - {name: r1, type: ReLU, inputs: [split:1], outputs: ["float16[1,16]"]}
  - {name: o, type: NetOutput, inputs: [concat, r1]}
"""


def test_split_part_through_reshape_into_concat_keeps_its_bytes() -> None:
    graph = load_graph_text(SPLIT_RESHAPE_CONCAT)
    api.optimize(graph)
    plan = assign_memory(graph)
    a, b = plan.tensors["split:1"], plan.tensors["b:0"]
    bytes_overlap = a.offset < b.offset + b.raw_size and b.offset < a.offset + a.raw_size
    lives_overlap = a.first <= b.last and b.first <= a.last
    assert not (a.region == b.region and bytes_overlap and lives_overlap)


def test_reshape_like_ge_local_ops_alias_their_input_in_the_memory_plan() -> None:
    graph = _optimized(PLACEMENT_FIXTURES / "reshape_like.yaml")
    for name in ("squeeze", "unsqueeze", "expand", "flatten"):
        desc = _node(graph, name).op.output_descs[0]
        assert (desc.attrs.get("reuse_input"), desc.attrs.get("reuse_input_index")) == (True, 0)
    assert "reuse_input" not in _node(graph, "pinned").op.output_descs[0].attrs
    plan = assign_memory(graph)
    x = plan.tensors["x:0"]
    assert all(
        plan.tensors[f"{n}:0"].offset == x.offset and plan.tensors[f"{n}:0"].region == x.region
        for n in ("squeeze", "unsqueeze", "expand", "flatten")
    )
    assert plan.tensors["pinned:0"].region == "feature_map"  # computed by AI Core into its own memory
