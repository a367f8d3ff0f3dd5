"""Structural actions: `insert OP before i`, `insert OP after o`, `bypass n`: parsed, checked (located errors),
evaluated before anything changes (a refused edit changes nothing), applied, and reported by `explain`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rulepass.compiler.facts import ge_catalogue
from rulepass.compiler.graph_file import load_graph
from rulepass.dsl import ast
from rulepass.dsl.builtins import builtin_catalogue
from rulepass.dsl.load import load_rules as load_rules_with
from rulepass.dsl.parse import parse_action, parse_expr

from rulepass.api import load_rules, optimize
from rulepass.cli import main

GRAPH = """\
name: g
nodes:
  - {name: x, type: Data, attrs: {index: 0}, outputs: ["float16[16,16]"]}
  - {name: keep, type: Identity, inputs: [x], outputs: ["float16[16,16]"]}
  - {name: a, type: ReLU, inputs: [keep], outputs: ["float16[16,16]"]}
  - {name: b, type: Tanh, inputs: [keep], outputs: ["float16[16,16]"]}
  - {name: free, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: out, type: NetOutput, inputs: [a, b]}
"""


def _rule(tmp_path: Path, match: str, action: str, check: str = "node.name != ''") -> Path:
    path = tmp_path / "edit.yaml"
    path.write_text(
        f'rules:\n  - name: EditPass\n    match: [{match}]\n    checks:\n      - name: Ok\n        require: "{check}"\n'
        f"    actions:\n      - {action}\n",
        encoding="utf-8",
    )
    return path


def _graph(tmp_path: Path) -> Path:
    path = tmp_path / "g.yaml"
    path.write_text(GRAPH, encoding="utf-8")
    return path


def test_parse_and_keywords_stay_names() -> None:
    n = parse_action("for i in node.inputs where i.connected: insert Identity before i", None)
    assert isinstance(n, ast.ForAction) and isinstance(n.body, ast.EditAction)
    assert (n.body.kind, n.body.op_type) == ("insert_before", "Identity")
    b = parse_action("bypass node", None)
    assert isinstance(b, ast.EditAction) and (b.kind, b.op_type) == ("bypass", "")
    assert ast.from_data(ast.to_data(b)).kind == "bypass"  # the rule cache's round trip
    assert isinstance(parse_expr("before + after - bypass - insert", None), ast.Arith)


def test_insert_after_puts_one_node_before_all_consumers(tmp_path: Path) -> None:
    g = load_graph(_graph(tmp_path))
    result = optimize(g, load_rules([_rule(tmp_path, "ReLU", "insert Identity after node.outputs[0]")]))
    [fired] = [d for d in result.decisions if d.fired]
    assert fired.node == "a" and fired.changes == (
        "inserted Identity 'a_0_out_Identity' between a:0 and its 1 consumer(s)",
    )
    [miss] = [d for d in result.decisions if not d.fired]  # `free` feeds nothing: refused, nothing changed
    assert miss.node == "free" and "output free:0 feeds nothing" in (miss.error or "")
    out = g.node("out")
    assert out is not None and [str(p) for p in out.in_peers] == ["a_0_out_Identity:0", "b:0"]


def test_bypass_reconnects_and_removes(tmp_path: Path) -> None:
    g = load_graph(_graph(tmp_path))
    result = optimize(g, load_rules([_rule(tmp_path, "Identity", "bypass node")]))
    assert [d.changes for d in result.decisions] == [("bypassed keep (Identity): x:0 now feeds its 2 consumer(s)",)]
    assert g.node("keep") is None
    assert [str(g.node(n).in_peers[0]) for n in ("a", "b")] == ["x:0", "x:0"]  # type: ignore[union-attr]


def test_a_refused_edit_changes_nothing(tmp_path: Path) -> None:
    g = load_graph(_graph(tmp_path))
    _rule(tmp_path, "NetOutput", "insert Identity before node.inputs[0]")
    # two edits of one candidate: the second (input 3 does not exist) faults, so the first is not made either
    path = tmp_path / "edit.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "      - insert Identity before node.inputs[3]\n", "utf-8")
    result = optimize(g, load_rules([path]))
    [d] = result.decisions
    assert not d.fired and "nothing was changed" in (d.error or "")
    assert len(g) == 6


@pytest.mark.parametrize(
    ("action", "code", "where"),
    [
        ("insert Identty before node.inputs[0]", "unknown-op-type", "Identty"),
        ("insert Identity before node", "type-mismatch", "node"),
        ("insert Identity after node.inputs[0]", "type-mismatch", "node.inputs[0]"),
        ("bypass node.outputs[0]", "type-mismatch", "node.outputs[0]"),
    ],
)
def test_check_errors_are_located(tmp_path: Path, action: str, code: str, where: str) -> None:
    rs = load_rules_with([_rule(tmp_path, "ReLU", action)], ge_catalogue())
    [d] = rs.errors
    assert d.code == code and d.span is not None
    line = d.span.source.text.splitlines()[d.span.line - 1] if d.span.source else ""
    assert line[d.span.col - 1 : d.span.col - 1 + len(where)] == where


def test_a_catalogue_without_edits_refuses_them(tmp_path: Path) -> None:
    cat = builtin_catalogue()
    cat.add_entity("Node", "n", [("name", "str", "its name", "name")])
    cat.add_root("node", "Node", "the candidate")
    rs = load_rules_with([_rule(tmp_path, "ReLU", "bypass node")], cat)
    assert [d.code for d in rs.errors] == ["unknown-edit"]


def test_the_generated_code_leaves_structural_actions_to_the_closures(tmp_path: Path) -> None:
    [rule] = load_rules([_rule(tmp_path, "Identity", "bypass node")]).rules
    assert rule.fast is not None and rule.fast.actions is None


def test_explain_shows_the_change(tmp_path: Path) -> None:
    out = io.StringIO()
    rules = str(_rule(tmp_path, "Identity", "bypass node"))
    assert main(["explain", str(_graph(tmp_path)), "--node", "keep", "--rules", rules], out=out, err=io.StringIO()) == 0
    assert "changed: bypassed keep (Identity): x:0 now feeds its 2 consumer(s)" in out.getvalue()
