"""Near misses: candidates of the no-task rules failing only a few checks, going on past the first failing one.

The passes run as a compile runs them (same decisions, the caller's graph untouched); a candidate is listed when
between 1 and `max_failed` of its checks fail, each with its site and values, ranked by the copy bytes saved."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from rulepass.compiler.graph_file import load_graph_text
from rulepass.compiler.ir import ComputeGraph
from rulepass.compiler.nearmiss import near_misses
from rulepass.compiler.onnx_fold import parse_input_shapes
from rulepass.compiler.onnx_import import import_onnx
from rulepass.compiler.passes import build_pass_manager
from rulepass.engine.run import NearMisses

from rulepass.api import load_rules
from rulepass.base.diagnostics import RulepassError
from rulepass.cli import main

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"

RULES = """
rules:
  - name: Virtual
    match: [ConcatD]
    tags: [no-task]
    checks:
      - name: TwoInputs
        require: len(node.inputs) == 2
      - name: Each
        for_each: i in node.inputs
        checks:
          - name: Half
            require: i.desc.dtype == "float16"
      - name: Named
        reject_if: node.name == "c2"
"""


def _graph() -> ComputeGraph:
    """Concat c1 passes every check; c2 (two float32 inputs, 128 bytes out) fails Each/Half (once) and Named;
    c3 (three float16 inputs, 96 bytes out) fails TwoInputs only."""
    nodes = [
        {"name": "a", "type": "ReLU", "outputs": ["float16[4,4]"]},
        {"name": "b", "type": "ReLU", "outputs": ["float16[4,4]"]},
        {"name": "f", "type": "ReLU", "outputs": ["float32[4,4]"]},
        {"name": "g", "type": "ReLU", "outputs": ["float32[4,4]"]},
        {
            "name": "c1",
            "type": "ConcatD",
            "attrs": {"concat_dim": 0},
            "inputs": ["a", "b"],
            "outputs": ["float16[8,4]"],
        },
        {
            "name": "c2",
            "type": "ConcatD",
            "attrs": {"concat_dim": 0},
            "inputs": ["f", "g"],
            "outputs": ["float32[8,4]"],
        },
        {
            "name": "c3",
            "type": "ConcatD",
            "attrs": {"concat_dim": 0},
            "inputs": ["a", "b", "a"],
            "outputs": ["float16[12,4]"],
        },
    ]
    return load_graph_text(json.dumps({"nodes": nodes}))


@pytest.fixture()
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "virtual.yaml"
    path.write_text(RULES)
    return path


def test_one_failing_check_is_listed_with_its_site_and_values(rules_file: Path) -> None:
    g = _graph()
    before = g.attribute_state()
    (m,) = near_misses(g, load_rules([rules_file]))
    assert (m.decision.node, m.copy_bytes, m.tasks) == ("c3", 12 * 4 * 2, 1)
    (f,) = m.failed
    assert f.check_path == ("TwoInputs",) and f.check_span is not None and f.check_span.line == 7
    assert f.reason is not None and "3 == 2" in f.reason.summary()
    assert g.attribute_state() == before  # the passes ran on a copy


def test_evaluation_goes_on_past_the_first_failing_check(rules_file: Path) -> None:
    got = near_misses(_graph(), load_rules([rules_file]), max_failed=2)
    assert [m.decision.node for m in got] == ["c2", "c3"]  # most bytes saved first (c2's float32 output)
    c2 = got[0]
    assert c2.decision.check_path == ("Each", "Half")  # the compile's decision: its first failing check
    # each failing check once (Half fails on both inputs: listed at the first), in the rule's order
    assert [f.check_path for f in c2.failed] == [("Each", "Half"), ("Named",)]
    assert c2.failed[0].elements == ("i = input 0 of c2 (from f:0)",)
    assert c2.to_json()["failed"][1]["check_kind"] == "reject_if"


def test_the_decisions_are_those_of_a_plain_run(rules_file: Path) -> None:
    rules = load_rules([rules_file])
    near = NearMisses(5)
    with_near = build_pass_manager(rules).run(_graph(), near=near)
    plain = build_pass_manager(rules).run(_graph())
    assert [d.to_json() for r in with_near for d in r.decisions] == [d.to_json() for r in plain for d in r.decisions]
    assert [r.stats.to_json() for r in with_near if r.stats] == [r.stats.to_json() for r in plain if r.stats]
    assert len(near.found) == 2


def test_a_bad_limit_is_refused() -> None:
    with pytest.raises(RulepassError, match="max_failed must be a positive integer"):
        near_misses(_graph(), max_failed=0)


def test_a_real_model_lists_its_concat_near_misses() -> None:
    """yolo_head: a Concat and a Split whose only failing check is the real-dim check of the bundled rules."""
    graph = import_onnx(MODELS / "yolo_head.onnx", input_shapes=parse_input_shapes("images:1,3,64,64")).graph
    got = near_misses(graph)
    assert [(m.decision.node, m.decision.rule) for m in got[:2]] == [
        ("/Concat_2", "ConcatNotaskPass"),
        ("/Split", "SplitNotaskPass"),
    ]
    assert all(len(m.failed) == 1 and m.failed[0].check == "CheckRealDim" for m in got)
    assert [m.copy_bytes for m in got] == sorted((m.copy_bytes for m in got), reverse=True)


def test_the_command_in_text_and_json(rules_file: Path, tmp_path: Path) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(json.loads(_graph_doc())))
    out, err = StringIO(), StringIO()
    assert main(["nearmiss", str(graph), "--rules", str(rules_file), "--max-failed", "2"], out=out, err=err) == 0
    text = out.getvalue()
    assert text.splitlines()[0] == f"{graph}: 2 candidate(s) failing at most 2 checks"
    assert "Virtual on c2 (ConcatD) in graph '<graph>': would save 128 copy bytes and 1 task(s); fails 2 checks" in text
    assert "    Named at " in text
    out = StringIO()
    assert main(["nearmiss", str(graph), "--rules", str(rules_file), "--format", "json"], out=out, err=err) == 0
    (doc,) = json.loads(out.getvalue())
    assert [m["node"] for m in doc["near_misses"]] == ["c3"] and doc["near_misses"][0]["copy_bytes"] == 96
    assert main(["nearmiss", str(graph), "--max-failed", "0"], out=StringIO(), err=err) == 2


def _graph_doc() -> str:
    from rulepass.compiler.graph_file import dump_graph

    return dump_graph(_graph(), "json")


FAULTY = """
rules:
  - name: Faulty
    match: [ConcatD]
    tags: [no-task]
    checks:
      - name: Third
        require: node.inputs[2].connected
      - name: Named
        reject_if: node.name == "c1"
"""


def test_a_check_that_faults_is_a_failing_check_with_its_error(tmp_path: Path) -> None:
    """Indexing past the inputs is an evaluation error: the check fails (as GE's asserts do) and the near miss
    carries the closures' error text; evaluation goes on to the next check."""
    path = tmp_path / "faulty.yaml"
    path.write_text(FAULTY)
    got = {m.decision.node: m for m in near_misses(_graph(), load_rules([path]), max_failed=2)}
    assert sorted(got) == ["c1", "c2"]  # c3 has a third input and is not named c1: it fires
    c1 = got["c1"]
    assert [f.check for f in c1.failed] == ["Third", "Named"]
    assert c1.failed[0].error == "evaluation error: index 2 is out of range for a length of 2"
    assert c1.decision.error == c1.failed[0].error  # the compile's own record says the same
