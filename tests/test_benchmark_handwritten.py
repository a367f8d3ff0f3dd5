"""The engine-overhead benchmark compares like with like: benchmarks/handwritten_concat.py decides exactly as the rule.

On the bundled examples, every concat rule fixture, a few synthetic graphs and two light ONNX models, the
hand-written ConcatNotaskPass and the engine running rules/concat_notask.yaml (the other passes disabled) must
produce the same decision for every candidate, in the same order (fired, or the same failing check and path),
and leave the same attributes on every node and output desc.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import handwritten_concat as hand
import pytest
import synthetic
from rulepass.compiler.graph_file import graph_from_doc
from rulepass.compiler.ir import ComputeGraph
from rulepass.compiler.passes import PassManager, build_pass_manager
from rulepass.examples import example_path
from rulepass.rules import bundled_rules_dir

from rulepass.api import load_graph, load_rules
from rulepass.base.yaml_source import load_file

CONCAT = "ConcatNotaskPass"


@pytest.fixture(scope="module")
def rules() -> Any:
    return load_rules()


def _concat_only(rules: Any) -> PassManager:
    others = [p.name for p in build_pass_manager(rules).passes if p.kind != "placeholder" and p.name != CONCAT]
    return build_pass_manager(rules, disabled=others)


def _compare(g: ComputeGraph, pm: PassManager) -> int:
    """The engine (`pm`), the bare hand-written function and the hand-written pass in the rule's place in the
    same pass manager decide alike and leave the same attributes."""
    hosted = hand.hosted(pm)
    assert [p.kind for p in hosted.passes if p.name == CONCAT] == ["python"]  # the hand-written pass, not the rule
    a, b, c = g.copy(), g.copy(), g.copy()
    engine = [hand.decision_key(d) for r in pm.run(a) for d in r.decisions if d.rule == CONCAT]
    written = [hand.decision_key(d) for d in hand.concat_notask_pass(b)]
    as_pass = [hand.decision_key(d) for r in hosted.run(c) for d in r.decisions if d.rule == CONCAT]
    assert written == engine == as_pass
    assert b.attribute_state() == a.attribute_state() == c.attribute_state()
    return len(engine)


def _prepared(g: ComputeGraph, rules: Any) -> ComputeGraph:
    """The graph as the concat pass sees it in the pipeline: placement and the split pass have run."""
    keep = {"EnginePlacementPass", "SplitNotaskPass"}
    pm = build_pass_manager(
        rules,
        disabled=[p.name for p in build_pass_manager(rules).passes if p.kind != "placeholder" and p.name not in keep],
    )
    pm.run(g)
    return g


def _fixtures() -> list[Path]:
    return sorted((bundled_rules_dir() / "fixtures" / "concat_notask").glob("*.yaml"))


@pytest.mark.parametrize("fixture", _fixtures(), ids=lambda p: p.stem)
def test_same_decisions_on_every_concat_fixture(fixture: Path, rules: Any) -> None:
    g = graph_from_doc(load_file(fixture, what="fixture").sub(["graph"]), fixture.stem)
    assert _compare(g, _concat_only(rules)) > 0


@pytest.mark.parametrize(
    "name", ["allgather_concat", "conv_nc1hwc0_concat", "split_relu_concat", "tutorial_misaligned"]
)
def test_same_decisions_on_the_bundled_examples(name: str, rules: Any) -> None:
    pm = _concat_only(rules)
    g = load_graph(example_path(f"{name}.yaml"))
    _compare(g, pm)
    _compare(_prepared(load_graph(example_path(f"{name}.yaml")), rules), pm)  # after the split pass


@pytest.mark.parametrize("workload", synthetic.WORKLOADS)
def test_same_decisions_on_synthetic_graphs(workload: str, rules: Any) -> None:
    pm = _concat_only(rules)
    assert _compare(synthetic.generate(workload, 600), pm) > 0
    assert _compare(_prepared(synthetic.generate(workload, 600), rules), pm) > 0


@pytest.mark.parametrize(("model", "formats"), [("densenet121", "keep"), ("shufflenet", "ascend")])
def test_same_decisions_on_light_models(model: str, formats: str, rules: Any) -> None:
    onnx = pytest.importorskip("onnx")
    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{model}.onnx"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this onnx wheel")
    assert _compare(load_graph(path, onnx_formats=formats), _concat_only(rules)) > 0


def test_graph_level_skips_and_subgraphs(rules: Any) -> None:
    pm = _concat_only(rules)
    g = synthetic.generate("split", 200)
    g.attrs["_memory_discontiguous_allocation"] = True
    _compare(g, pm)
    g = synthetic.generate("cnn", 200)
    g.attrs["_single_op_scene"] = False
    next(iter(g.nodes_in_insertion_order())).op.attrs["_single_op_scene"] = True  # the graph attr wins
    _compare(g, pm)
    del g.attrs["_single_op_scene"]
    _compare(g, pm)  # now the node's attr decides
