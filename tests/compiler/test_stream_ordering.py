"""Happens-before is what the runtime enforces: stream order and events, never a graph edge on its own."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rulepass.compiler.graph_file import copy_graph, load_graph_text
from rulepass.compiler.memory.assign import assign_memory
from rulepass.compiler.memory.verify import verify_plan
from rulepass.compiler.runtime import evaluate_graph, run_model
from rulepass.compiler.streams import assign_streams

from rulepass.api import compile_graph

# a and b on stream 0, c on stream 1; only a control edge b -> c orders c after b, the last reader of a's output.
CROSS = """
name: cross
nodes:
  - {name: x, type: Data, attrs: {index: 0}, outputs: ["float[64,64]"]}
  - {name: a, type: Relu, stream: 0, inputs: [x:0], outputs: ["float[64,64]"]}
  - {name: b, type: Tanh, stream: 0, inputs: [a:0], outputs: ["float[64,64]"]}
  - {name: c, type: Neg, stream: 1, inputs: [x:0], control_inputs: [b], outputs: ["float[64,64]"]}
  - {name: out, type: NetOutput, inputs: [b:0, c:0]}
"""


def test_a_control_edge_across_streams_gets_an_event() -> None:
    g = load_graph_text(CROSS)
    plan = assign_streams(g)
    # b -> c is a control edge only; c -> out is the data edge back to stream 0
    assert [(e.producer.name, e.consumer.name) for e in plan.events] == [("b", "c"), ("c", "out")]


def test_a_plan_relying_on_an_ordering_without_event_is_reported() -> None:
    g = load_graph_text(CROSS)
    events = assign_streams(g).event_pairs()
    plan = assign_memory(g, events=events)
    t = plan.tensors
    assert t["c:0"].offset == t["a:0"].offset  # c reuses a's bytes: safe only because the event orders b -> c
    assert verify_plan(g, plan, events=events) == []
    found = verify_plan(g, plan, events=[])  # the control edge alone orders nothing at run time
    assert any(v.kind == "overlap" and "no event orders them" in v.message for v in found), found
    # and the planner, without the event, does not reuse
    unordered = assign_memory(g, events=[])
    assert unordered.tensors["c:0"].offset != unordered.tensors["a:0"].offset


def test_the_compiled_cross_stream_model_runs_as_the_direct_evaluation() -> None:
    g = load_graph_text(CROSS)
    direct = evaluate_graph(copy_graph(g), seed=3)
    result = compile_graph(g)
    ran = run_model(result.model, seed=3)
    for name, arr in direct.outputs.items():
        assert np.array_equal(arr.view(np.uint8), ran.outputs[name].view(np.uint8)), name


@st.composite
def multi_stream_graphs(draw: st.DrawFn) -> str:
    """Random graphs of elementwise ops on three streams, with random control edges between them."""
    n = draw(st.integers(3, 9))
    lines = [
        "name: random_streams",
        "nodes:",
        '  - {name: x, type: Data, attrs: {index: 0}, outputs: ["float[16,16]"]}',
    ]
    names = ["x"]
    for i in range(n):
        kind = draw(st.sampled_from(["Relu", "Tanh", "Neg", "Add"]))
        ins = [draw(st.sampled_from(names)) for _ in range(2 if kind == "Add" else 1)]
        ctrl = sorted(set(draw(st.lists(st.sampled_from(names[1:] or ["x"]), max_size=2))) - {"x"})
        stream = draw(st.integers(0, 2))
        extra = f", control_inputs: [{', '.join(ctrl)}]" if ctrl else ""
        inputs = ", ".join(f"{p}:0" for p in ins)
        lines.append(
            f'  - {{name: n{i}, type: {kind}, stream: {stream}, inputs: [{inputs}]{extra}, outputs: ["float[16,16]"]}}'
        )
        names.append(f"n{i}")
    outs = sorted({names[-1], draw(st.sampled_from(names[1:]))})
    lines.append(f"  - {{name: out, type: NetOutput, inputs: [{', '.join(o + ':0' for o in outs)}]}}")
    return "\n".join(lines) + "\n"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(multi_stream_graphs())
def test_property_random_multi_stream_graphs_with_control_edges_run_as_the_direct_evaluation(text: str) -> None:
    g = load_graph_text(text)
    direct = evaluate_graph(copy_graph(g), seed=5)
    ran = run_model(compile_graph(g).model, seed=5)
    for name, arr in direct.outputs.items():
        assert np.array_equal(arr.view(np.uint8), ran.outputs[name].view(np.uint8)), name
