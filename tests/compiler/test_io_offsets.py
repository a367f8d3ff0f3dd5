"""GE's SetInputOutputOffsetPass on the plan: the zero-copy offsets of model outputs, one graph per case, checked by
the verifier and the soundness proof (each breaks when a recorded offset is wrong)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rulepass.compiler.memory.io_offsets import BASIC, RELATIVE, connections
from rulepass.compiler.memory.soundness import check_soundness
from rulepass.compiler.memory.verify import verify_plan
from rulepass.compiler.runtime.differential import check_model

from rulepass.api import compile_graph, load_graph

DATA = Path(__file__).parents[1] / "data" / "io_offsets"

# graph -> the (tensor, relative offset) parts its model output records (basic: the output's offset)
CASES = {
    "buffer_fusion_concat": [("a:0", 0), ("b:0", 1024)],
    "continuous_input_concat": [("a:0", 0), ("b:0", 1024), ("c:0", 1536)],
    "plain_concat": [],
    "continuous_output_hcom": [],  # GE's Identity before the NetOutput comes first: nothing is connected
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_recorded_offsets_per_case(name: str) -> None:
    result = compile_graph(load_graph(DATA / f"{name}.yaml"))  # verified and proved sound, or it raises
    plan = result.memory.plan
    got = [(r.tensor, r.relative) for r in plan.zero_copy]
    assert got == CASES[name]
    out = result.graph.node("out")
    assert out is not None
    if got:
        basic = plan.tensors["concat:0"].offset
        assert {r.basic for r in plan.zero_copy} == {basic} and {r.holder for r in plan.zero_copy} == {"out"}
        assert out.op.attrs[BASIC] == [basic] * len(got) and out.op.attrs[RELATIVE] == [rel for _, rel in got]
        assert plan.to_json()["zero_copy_offsets"][0] == {  # type: ignore[index]
            "holder": "out",
            "basic": basic,
            "relative": 0,
            "tensor": "a:0",
            "by": "concat",
        }
        report = check_model(result.model)  # the model runs and computes what its graph does
        assert report.difference is None
    else:
        assert BASIC not in out.op.attrs and "zero_copy_offsets" not in plan.to_json()


def test_connections_follow_shared_memory() -> None:
    g = load_graph(DATA / "buffer_fusion_concat.yaml")
    compile_graph(g)
    ins, outs = connections(g)
    # the concat's output reuses input 0 (one symbol with a:0) and is the model output; x is a user input
    assert outs["concat"] == [0] and outs["a"] == [0] and outs["x"] == [0] and "b" not in outs
    assert ins["out"] == [0] and ins["concat"] == [0] and ins["a"] == [0] and ins["b"] == [0]


def test_a_wrong_offset_is_caught_by_the_verifier_and_the_proof() -> None:
    result = compile_graph(load_graph(DATA / "continuous_input_concat.yaml"))
    graph, plan = result.graph, result.memory.plan
    assert not verify_plan(graph, plan) and not check_soundness(graph, plan)
    plan.zero_copy[1] = replace(plan.zero_copy[1], relative=512)
    [v] = verify_plan(graph, plan)  # the model would carry other offsets than the plan records
    assert v.kind == "zero-copy-offset" and "the plan records" in v.message
    [bad] = check_soundness(graph, plan)
    assert bad.node == "concat" and "its layout gives" in bad.reason
    out = graph.node("out")
    assert out is not None
    out.op.attrs[RELATIVE] = [0, 512, 1536]  # what a model file tampered with says: no part lies at 512
    [v] = verify_plan(graph, replace(plan, zero_copy=[]))
    assert "no planned tensor lies at relative offset 512" in v.message


def test_the_verifier_refuses_a_part_outside_the_output_buffer() -> None:
    # without GE's Identity, a continuous-output collective's output 1 is recorded beyond model output 0's buffer
    result = compile_graph(
        load_graph(DATA / "continuous_output_hcom.yaml"), disabled=["UserOutputLayoutConflictPass"], verify=False
    )
    assert [(r.tensor, r.relative) for r in result.memory.plan.zero_copy] == [("rs:0", 0), ("rs:1", 1024)]
    [v] = verify_plan(result.graph, result.memory.plan, events=result.streams.event_pairs())
    assert v.kind == "zero-copy-offset" and "relative offset 1024 inside the output buffer rs:0" in v.message
