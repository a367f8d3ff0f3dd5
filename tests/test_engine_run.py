"""The engine's bookkeeping around a rule's checks: actions as one unit, dry runs, traces, counters, records.

The engine decides the common case on a fast path (the generated function, a record per candidate, effects
applied through the domain's setters); these tests pin what it must keep doing there and on the closures: a
failing action changes nothing, a dry run applies nothing, a traced node gets its trace, the counters match the
records, and the IR pieces it leans on (cached anchor lists, the access's bulk type filter, the setter) behave
as values.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
from pathlib import Path

import pytest
from rulepass.compiler.facts import GeGraphAccess, is_single_op_scene, set_attr
from rulepass.compiler.graph_file import dump_graph, load_graph_text
from rulepass.compiler.ir import ComputeGraph, InAnchor, OpDesc, OutAnchor, TensorDesc
from rulepass.compiler.passes import build_pass_manager
from rulepass.dsl.load import RuleSet
from rulepass.engine.decisions import Decision, RuleStats
from rulepass.examples import example_path

from rulepass.api import load_graph, load_rules
from rulepass.cli import main

MARK = """
rules:
  - name: Mark
    match: [ConcatD]
    checks:
      - name: Inputs
        require: len(node.inputs) >= 2
    actions:
      - set node._marked = true
      - set node._dims = if len(node.inputs) > 8 then [] else [len(node.inputs)]
      - set node._cleared = []
      - "for i in node.inputs where i.connected: set i.peer.desc._locked = true"
      - set node.inputs[{index}].desc._last = 1
"""


def _rules(tmp_path: Path, index: int) -> RuleSet:
    path = tmp_path / "mark.yaml"
    path.write_text(MARK.format(index=index))
    return load_rules([path])


def _closures_only(rules: RuleSet) -> RuleSet:
    return dataclasses.replace(rules, rules=[dataclasses.replace(r, fast=None) for r in rules.rules])


def _run(rules: RuleSet, **kw: object) -> tuple[list[Decision], ComputeGraph, list[tuple[str, str, str]]]:
    g = load_graph(example_path("allgather_concat.yaml"))
    before = g.attribute_state()
    decisions = [d for r in build_pass_manager(rules).run(g, **kw) for d in r.decisions]  # type: ignore[arg-type]
    return decisions, g, before


@pytest.mark.parametrize("closures", [False, True], ids=["generated", "closures"])
@pytest.mark.parametrize("trace", [None, "concat"], ids=["untraced", "traced"])
def test_a_failing_action_changes_nothing(closures: bool, trace: str | None, tmp_path: Path) -> None:
    rules = _rules(tmp_path, 9)  # the third action indexes past the inputs: the first two must not apply
    assert rules.rules[0].fast is not None and rules.rules[0].fast.actions is not None
    (d,), g, before = _run(_closures_only(rules) if closures else rules, trace_node=trace)
    assert (d.fired, d.check, d.check_path, d.check_kind) == (False, "actions", ("actions",), "action")
    assert d.error == "an action failed, nothing was changed: index 9 is out of range for a length of 2"
    assert g.attribute_state() == before
    assert bool(d.trace) == (trace is not None)


@pytest.mark.parametrize("closures", [False, True], ids=["generated", "closures"])
def test_actions_apply_as_one_unit_unless_dry_run(closures: bool, tmp_path: Path) -> None:
    rules = _rules(tmp_path, 1)
    if closures:
        rules = _closures_only(rules)
    (d,), g, before = _run(rules)
    assert d == Decision("Mark", "allgather_concat", "concat", "ConcatD", True)
    concat = g.node("concat")
    assert concat is not None and concat.op.attrs["_marked"] is True
    assert concat.op.attrs["_dims"] == [2] and concat.op.attrs["_cleared"] == []  # `[]` joins a list[int]
    assert dump_graph(load_graph_text(dump_graph(g, "yaml"), "g.yaml"), "yaml") == dump_graph(g, "yaml")
    assert concat.op.input_descs[1].attrs["_last"] == 1
    for name in ("allgather_0", "allgather_1"):
        node = g.node(name)
        assert node is not None and node.op.output_descs[0].attrs["_locked"] is True
    (d,), g, before = _run(rules, dry_run=True)
    assert d.fired and d.dry_run and g.attribute_state() == before


def test_a_traced_node_gets_its_trace_and_the_same_record(tmp_path: Path) -> None:
    rules = load_rules()
    plain, _, _ = _run(rules, explain=False)
    traced, _, _ = _run(rules, explain=False, trace_node="concat")
    assert plain == [dataclasses.replace(d, reason=None) for d in traced]  # nor does the trace in equality
    concat = [d for d in traced if d.node == "concat"]
    assert concat and all(d.trace and (d.fired or d.reason) for d in concat)  # a traced miss is explained
    assert all(not d.trace for d in traced if d.node != "concat")


def test_counters_match_the_records() -> None:
    g = load_graph(example_path("split_relu_concat.yaml"))
    for report in build_pass_manager(load_rules()).run(g, explain=False):
        if report.kind != "rule" or not report.decisions:
            continue
        one_by_one = RuleStats(report.name)
        for d in report.decisions:
            one_by_one.add(d)
        bulk = RuleStats(report.name)
        bulk.add_all(report.decisions)
        assert report.stats is not None
        for stats in (one_by_one, bulk):
            assert stats.to_json() == report.stats.to_json()


def test_decision_init_is_the_dataclass_one() -> None:
    """Decision writes its fields itself (cheaper than a frozen dataclass's __init__): same fields, same order,
    same defaults, still frozen."""
    params = list(inspect.signature(Decision.__init__).parameters.values())[1:]
    fields = dataclasses.fields(Decision)
    assert [p.name for p in params] == [f.name for f in fields]
    assert [p.default for p in params] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default for f in fields
    ]
    d = Decision("r", "g", "n", "t", False, "c", ("c",), "require", None, ("e",), None, "err", True, (), ("x",))
    values = ["r", "g", "n", "t", False, "c", ("c",), "require", None, ("e",), None, "err", True, (), ("x",)]
    assert [getattr(d, f.name) for f in fields] == values
    assert d == Decision("r", "g", "n", "t", False, "c", ("c",), "require", None, ("e",), None, "err", True, (), ("x",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.fired = True  # type: ignore[misc]


def test_anchor_lists_are_kept_while_the_counts_stay() -> None:
    g = ComputeGraph("g")
    a = g.add_node(OpDesc("a", "Data", output_descs=[TensorDesc((1,))]))
    b = g.add_node(OpDesc("b", "Add", input_descs=[TensorDesc((1,)), TensorDesc((1,))]))
    g.add_data_edge(a, 0, b, 1)
    ins = b.in_anchors
    assert ins is b.in_anchors and ins == [InAnchor(b, 0), InAnchor(b, 1)]
    assert [x.connected for x in ins] == [False, True] and ins[1].peer == OutAnchor(a, 0)
    g.add_data_edge(a, 0, b, 0)  # connections are read live
    assert [x.connected for x in b.in_anchors] == [True, True]
    assert a.out_anchors is a.out_anchors and a.out_anchors == [OutAnchor(a, 0)]
    b.op.input_descs.append(TensorDesc((1,)))  # an input added after the fact (as the ONNX importer does)
    b.in_peers.append(None)
    assert b.in_anchors == [InAnchor(b, 0), InAnchor(b, 1), InAnchor(b, 2)]
    c = g.copy()
    cb = c.node("b")
    assert cb is not None and all(x.node is cb for x in cb.in_anchors)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ins[0].index = 5  # type: ignore[misc]


def test_ge_access_and_setter() -> None:
    g = load_graph(example_path("allgather_concat.yaml"))
    access = GeGraphAccess()
    order = access.nodes(g)
    want = frozenset({"HcomAllGather", "ReLU"})
    assert access.of_types(order, want) == [n for n in order if access.op_type(n) in want]
    concat = g.node("concat")
    assert concat is not None
    set_attr(concat, "_x", 1)
    set_attr(concat.op.output_descs[0], "_y", True)
    set_attr(g, "_z", "v")
    set_attr(concat, "kernel_lib", "lib")
    assert (concat.op.attrs["_x"], concat.op.output_descs[0].attrs["_y"], g.attrs["_z"]) == (1, True, "v")
    assert concat.op.kernel_lib == "lib" and "kernel_lib" not in concat.op.attrs
    with pytest.raises(TypeError):
        set_attr(concat, "engine", 3)
    with pytest.raises(TypeError):
        set_attr(concat.op, "_x", 1)


def test_pass_context_candidates_follow_the_graph() -> None:
    """The candidates a pass run finds are kept per graph and op types, and found again once an edit changed
    the graph's order (a new node of a matched type is a candidate of the next pass)."""
    from rulepass.compiler.passes import PassContext

    g = load_graph(example_path("allgather_concat.yaml"))
    ctx = PassContext(build_pass_manager(load_rules()).engine)
    concats = frozenset({"ConcatD"})
    first = ctx.candidates(g, concats)
    assert [n.name for n in first] == [n.name for n in g.topological_order() if n.type == "ConcatD"]
    assert ctx.candidates(g, concats) is first  # one scan, then kept
    assert ctx.candidates(g, None) is g.topological_order()
    other = g.copy()
    assert [n.name for n in ctx.candidates(other, concats)] == [n.name for n in first]  # per graph
    g.add_node(OpDesc("late", "ConcatD"))
    again = ctx.candidates(g, concats)
    assert again is not first and "late" in [n.name for n in again]
    ctx.forget_indexes()
    assert ctx.candidates(g, concats) is not again


def test_single_op_scene_reads_the_first_bool() -> None:
    g = load_graph(example_path("allgather_concat.yaml"))
    assert not is_single_op_scene(g)
    first, second, *_ = g.topological_order()
    first.op.attrs["_single_op_scene"] = 1  # not a bool: ignored
    second.op.attrs["_single_op_scene"] = True
    assert is_single_op_scene(g)
    first.op.attrs["_single_op_scene"] = False  # the first bool decides
    assert not is_single_op_scene(g)
    g.attrs["_single_op_scene"] = True  # the graph attr wins
    assert is_single_op_scene(g)


def _decisions_of(path: Path, rules: str, graph: Path) -> list[Decision]:
    """The decisions of the rule file text `rules`, written to `path`, over the graph file `graph`."""
    path.write_text(rules)
    g = load_graph(graph)
    return [d for r in build_pass_manager(load_rules([path])).run(g) for d in r.decisions]


QUANTIFIED_SIDE = """
rules:
  - name: Quantified
    match: [ConcatD]
    checks:
      - name: ManyConnected
        require: "count(i in node.inputs: i.connected and i.index >= 0) > 40"
"""


def test_a_miss_on_a_comparison_with_a_quantifier_side_is_explained(tmp_path: Path) -> None:
    # the explainer showed the named parts inside each side, and read the quantifier's own (unbound) variable
    (d,) = _decisions_of(tmp_path / "quantified.yaml", QUANTIFIED_SIDE, example_path())
    assert (d.fired, d.check) == (False, "ManyConnected")
    assert d.reason is not None and d.error is None
    assert d.reason.message.startswith("`count(i in node.inputs: i.connected and i.index >= 0) > 40` is false: ")
    assert "i.connected" not in dict(d.reason.values)


EVERY_OPERAND = """
rules:
  - name: Alternatives
    match: [ConcatD]
    checks:
      - name: OneWayOrAnother
        require: "len(node.inputs) > 5 or all(i in node.inputs: i.index > 0) or none(i in node.inputs: i.connected)"
  - name: Conditions
    match: [ConcatD]
    checks:
      - name: NotBoth
        reject_if: "node.input_count == 2 and not (node.type != 'ConcatD')"
"""


def test_every_operand_to_blame_is_explained_not_only_the_last(tmp_path: Path) -> None:
    path = tmp_path / "every.yaml"
    alt, cond = _decisions_of(path, EVERY_OPERAND, example_path("allgather_concat.yaml"))
    first = "i = input 0 of concat (from allgather_0:0)"
    assert alt.reason is not None and alt.reason.sub is None and len(alt.reason.alternatives) == 3
    assert alt.summary() == (
        "missed at OneWayOrAnother: none of the 3 alternatives held: `len(node.inputs) > 5` is false: 2 > 5; "
        f"`i.index > 0` is false: 0 > 0 (at {first}); `i.connected` is true (at {first})"
    )
    assert alt.reason.elements() == [first] and alt.reason.elements(within=False) == []
    doc = alt.to_json()["reason"]
    assert [a["message"] for a in doc["alternatives"]] == [
        "`len(node.inputs) > 5` is false: 2 > 5",
        "`i.index > 0` is false: 0 > 0",
        "`i.connected` is true",
    ]
    assert doc["alternatives"][1]["element"] == first and doc["alternatives"][1]["sub"]["alternatives"] == []
    # an `and` that had to be false: every condition held, and each says so (through the `not`)
    assert cond.summary() == (
        "missed at NotBoth: all 2 conditions held: `node.input_count == 2` is true: 2 == 2; "
        "`(node.type != 'ConcatD')` is false: 'ConcatD' != 'ConcatD'"
    )
    # the explain command prints each alternative, one level deeper, with its own values and place
    out, err = io.StringIO(), io.StringIO()
    graph_path = str(example_path("allgather_concat.yaml"))
    assert main(["explain", graph_path, "--node", "concat", "--rules", str(path)], out=out, err=err) == 0
    text = out.getvalue()
    block = text[text.index("    none of the 3 alternatives held\n") :]
    assert block.startswith(
        "    none of the 3 alternatives held\n"
        "      `len(node.inputs) > 5` is false: 2 > 5\n"
        "        len(node.inputs) = 2\n"
    )
    assert f"      at {first}\n      `i.index > 0` is false: 0 > 0\n" in block
    assert block.count(f"{path}:7:") == 3  # each alternative's own place in the rule file


SHARED = """
shared_checks:
  - name: EnoughInputs
    params: {least: int}
    for_each: i in node.inputs
    checks:
      - name: Counted
        require: node.input_count >= least and i.index < least + 1
"""

USERS = """
rules:
  - name: NeedsTwo
    match: [ConcatD]
    let:
      least: "2"
    checks:
      - {use: EnoughInputs, with: {least: least}}
  - name: NeedsThree
    match: [ConcatD]
    let:
      least: "3"
    checks:
      - {use: EnoughInputs, with: {least: least}}
"""


@pytest.mark.parametrize("closures", [False, True], ids=["generated", "closures"])
def test_a_shared_check_runs_in_each_using_rules_scope(closures: bool, tmp_path: Path) -> None:
    (tmp_path / "shared.yaml").write_text(SHARED)
    (tmp_path / "users.yaml").write_text(USERS)
    rules = load_rules([tmp_path])
    assert not rules.diagnostics  # `least` is passed to the shared check only, and counts as used
    if closures:
        rules = _closures_only(rules)
    g = load_graph(example_path("allgather_concat.yaml"))  # a concat of two inputs
    two, three = [d for r in build_pass_manager(rules).run(g) for d in r.decisions]
    assert (two.rule, two.fired) == ("NeedsTwo", True)
    assert (three.rule, three.fired, three.check_path) == ("NeedsThree", False, ("EnoughInputs", "Counted"))
    assert three.check_span is not None and three.check_span.file.endswith("shared.yaml")  # where it is written
    assert three.summary().endswith("`node.input_count >= least` is false: 2 >= 3")


SHARED_LIST = """
shared_checks:
  - name: RankFits
    params: {least: int, d: TensorDesc}
    let:
      r: d.origin_rank
    checks:
      - name: RankKnown
        require: r >= 0
      - name: RankAtLeast
        require: r >= least
"""

LIST_USERS = """
rules:
  - name: InputsRanked
    match: [ConcatD]
    let:
      least: "2"
    checks:
      - name: Inputs
        for_each: i in node.inputs
        let: {d: i.desc}
        checks:
          - {use: RankFits, with: {least: least, d: d}}
  - name: OutputRanked
    match: [ConcatD]
    let:
      least: "3"
      out: node.output_descs[0]
    checks:
      - {use: RankFits, with: {least: least, d: out}}
"""


@pytest.mark.parametrize("closures", [False, True], ids=["generated", "closures"])
def test_a_shared_list_of_checks_is_spliced_into_each_users_list(closures: bool, tmp_path: Path) -> None:
    (tmp_path / "shared.yaml").write_text(SHARED_LIST)
    (tmp_path / "users.yaml").write_text(LIST_USERS)
    rules = load_rules([tmp_path])
    assert not rules.diagnostics
    by_name = {r.name: r.rule for r in rules.rules}
    group = by_name["InputsRanked"].checks[0]
    assert [c.name for c in group.checks] == ["RankKnown", "RankAtLeast"]  # no level of the list's own
    assert [b.name for b in group.lets] == ["d", "r"]  # its let joins the group's, after the group's own
    assert [b.name for b in by_name["OutputRanked"].lets] == ["least", "out", "r"]
    if closures:
        rules = _closures_only(rules)
    g = load_graph(example_path("allgather_concat.yaml"))  # a concat of two rank-2 inputs, a rank-2 output
    inputs, output = [d for r in build_pass_manager(rules).run(g) for d in r.decisions]
    assert (inputs.rule, inputs.fired) == ("InputsRanked", True)
    assert (output.rule, output.fired, output.check_path) == ("OutputRanked", False, ("RankAtLeast",))
    assert output.check_span is not None and output.check_span.file.endswith("shared.yaml")
    assert output.summary().endswith("`r >= least` is false: 2 >= 3")


def test_a_templates_order_constraints_join_each_rules_own(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(
        """
templates:
  - name: Late
    after: [Early]
    before: [Last]
rules:
  - {name: Early, match: [ConcatD], checks: [{name: Any, require: 'true'}]}
  - {name: Last, match: [ConcatD], checks: [{name: Any, require: 'true'}]}
  - {name: Middle, template: Late, after: [Last2], match: [ConcatD], checks: [{name: Any, require: 'true'}]}
  - {name: Last2, match: [ConcatD], checks: [{name: Any, require: 'true'}]}
"""
    )
    rules = load_rules([tmp_path])
    assert not rules.diagnostics
    middle = rules.by_name()["Middle"].rule
    assert (middle.after, middle.before) == (("Early", "Last2"), ("Last",))
    assert [s.line for s in middle.after_spans] == [4, 9]  # each where it is written
    order = [p.name for p in build_pass_manager(rules).passes if p.name in ("Early", "Middle", "Last", "Last2")]
    assert order.index("Early") < order.index("Middle") < order.index("Last")
