"""GE's memory layout conflicts resolved as GE resolves them (rules/mem_layout_conflict.yaml): an Identity inserted,
the zero-copy op kept; the model it compiles to is proved sound and verified, runs, and computes what the graph
compiled without any of the passes computes, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from rulepass.compiler.graph_file import graph_from_doc
from rulepass.compiler.ir import ComputeGraph
from rulepass.compiler.passes import default_rules
from rulepass.compiler.runtime.differential import check_model
from rulepass.rules import bundled_rules_dir

from rulepass.api import compile_graph, run_model
from rulepass.base.yaml_source import load_file

FIXTURES = bundled_rules_dir() / "fixtures" / "mem_layout_conflict"

# runnable fixture graphs (the reference kernels run them): fixture -> (inserted Identity, the zero-copy ops kept)
CASES = {
    "user_input_split": ("x_0_split_Identity", ["split"]),
    "const_split": ("w_0_split_Identity", ["split"]),
    "split_reshape_concat": ("r0_0_concat_Identity", ["split", "concat"]),
}


def _graph(stem: str) -> ComputeGraph:
    doc = load_file(FIXTURES / f"{stem}.yaml", what="fixture")
    return graph_from_doc(doc.sub(["graph"]), stem)


def _all_passes_off() -> list[str]:
    return [r.name for r in default_rules().rules if {"no-task", "layout-conflict"} & set(r.rule.tags)]


@pytest.mark.parametrize("stem", sorted(CASES))
def test_identity_inserted_zero_copy_kept_and_outputs_equal(stem: str) -> None:
    identity, kept = CASES[stem]
    result = compile_graph(_graph(stem))  # soundness proof and plan verification on (they raise)
    graph = result.graph
    node = graph.node(identity)
    assert node is not None and node.type == "Identity"
    assert result.memory.no_task_nodes == kept
    assert not result.optimize.undone()
    assert result.tasks.per_node.get(identity)  # the Identity runs as a kernel task
    report = check_model(result.model)  # the model against its graph evaluated directly
    assert report.difference is None and report.compared > 0
    plain = compile_graph(_graph(stem), disabled=_all_passes_off())
    assert plain.graph.node(identity) is None and plain.memory.no_task_nodes == []
    ran, ref = run_model(result), run_model(plain)
    assert ran.outputs.keys() == ref.outputs.keys()
    for name, arr in ran.outputs.items():
        np.testing.assert_array_equal(arr, ref.outputs[name])


def test_identity_desc_is_the_producers_output_desc() -> None:
    result = compile_graph(_graph("user_input_split"))
    x, ident = result.graph.node("x"), result.graph.node("x_0_split_Identity")
    assert x is not None and ident is not None
    src = x.op.output_descs[0]
    for d in (ident.op.input_descs[0], ident.op.output_descs[0]):
        assert (d.shape, d.dtype, d.format, d.origin_shape) == (src.shape, src.dtype, src.format, src.origin_shape)
    assert (ident.op.engine, ident.op.kernel_lib) == ("AIcoreEngine", "AIcoreEngine")
    # the user input is no longer part of the split's layout: the split's parts lie in the feature map
    plan = result.memory.plan
    assert plan.tensors["split:1"].region == "feature_map" and plan.tensors["x:0"].region == "input"


def test_without_the_identity_the_user_input_holds_the_split_parts() -> None:
    off = compile_graph(_graph("user_input_split"), disabled=["UserInputLayoutConflictPass"])
    assert off.memory.plan.tensors["split:1"].region == "input"  # what GE offline cannot refresh at load
