"""The engine's generated decision functions (dsl/codegen) decide exactly as the closures they speed up.

Every bundled rule runs twice over every fixture graph of every rule folder, the bundled examples, the corpus
models of tests/data/models and synthetic graphs: once through its generated function, once on the closures
alone. The decision records (fired or not, failing check, path, elements, explanation, error) must be
identical, in the same order, and the graphs must carry the same attributes afterwards. Hostile rules (runtime
faults at every kind of node, a step budget exceeded inside a group) are compared the same way.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import synthetic
from rulepass.compiler.graph_file import graph_from_doc, load_graph_text
from rulepass.compiler.ir import ComputeGraph, OpDesc
from rulepass.compiler.passes import build_pass_manager
from rulepass.dsl.load import RuleSet
from rulepass.engine.decisions import Decision
from rulepass.examples import example_path
from rulepass.rules import bundled_rules_dir

from rulepass.api import load_graph, load_rules
from rulepass.base.yaml_source import load_file


def closures_only(rules: RuleSet) -> RuleSet:
    """The same rules without their generated functions."""
    return dataclasses.replace(rules, rules=[dataclasses.replace(r, fast=None) for r in rules.rules])


def assert_same(g: ComputeGraph, rules: RuleSet, **run: Any) -> int:
    """Run `rules` generated and on closures over copies of `g`; the records and the graphs must agree."""
    assert all(r.fast is not None for r in rules.rules)
    a, b = g.copy(), g.copy()
    fast_reports = build_pass_manager(rules).run(a, **run)
    slow_reports = build_pass_manager(closures_only(rules)).run(b, **run)
    fast = [d.to_json() for r in fast_reports for d in r.decisions]
    slow = [d.to_json() for r in slow_reports for d in r.decisions]
    assert fast == slow
    # the counters too (the generated path counts its records as it makes them)
    assert [r.stats.to_json() for r in fast_reports if r.stats] == [r.stats.to_json() for r in slow_reports if r.stats]
    assert a.attribute_state() == b.attribute_state()
    return len(fast)


def only_decision(g: ComputeGraph, rules: RuleSet) -> Decision:
    """The one decision `rules` make on `g` (a graph with one candidate), after checking both compilations agree."""
    assert assert_same(g, rules) == 1
    (d,) = [d for r in build_pass_manager(rules).run(g) for d in r.decisions]
    return d


def one_concat(inputs: list[str], attrs: dict[str, Any] | None = None, producers: int = 0) -> ComputeGraph:
    """One ConcatD `c` (with `attrs`) reading `inputs` from ReLU `r`, Split `b` (two outputs) and `producers`
    ReLUs `r0`, `r1`, ..."""
    nodes = [
        {"name": "r", "type": "ReLU", "outputs": ["float16[16,16]"]},
        {"name": "b", "type": "Split", "outputs": ["float16[16,16]", "float16[16,16]"]},
        *({"name": f"r{k}", "type": "ReLU", "outputs": ["float16[16,16]"]} for k in range(producers)),
        {"name": "c", "type": "ConcatD", "attrs": attrs or {}, "inputs": inputs, "outputs": ["float16[32,16]"]},
    ]
    return load_graph_text(json.dumps({"nodes": nodes}))


def generated(tmp_path: Path, name: str, text: str) -> tuple[RuleSet, str]:
    """The rules of `text` (written to `name`) and the source of its first rule's generated function."""
    path = tmp_path / name
    path.write_text(text)
    rules = load_rules([path])
    fast = rules.rules[0].fast
    assert fast is not None
    return rules, fast.source


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return load_rules()


def _fixtures() -> list[Path]:
    return sorted((bundled_rules_dir() / "fixtures").glob("*/*.yaml"))


@pytest.mark.parametrize("fixture", _fixtures(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_same_decisions_on_every_fixture(fixture: Path, rules: RuleSet) -> None:
    g = graph_from_doc(load_file(fixture, what="fixture").sub(["graph"]), fixture.stem)
    assert_same(g, rules)


@pytest.mark.parametrize("name", ["allgather_concat", "conv_nc1hwc0_concat", "split_relu_concat"])
def test_same_decisions_on_the_examples(name: str, rules: RuleSet) -> None:
    assert assert_same(load_graph(example_path(f"{name}.yaml")), rules) > 0


@pytest.mark.parametrize("workload", ["llm", "split", "cnn"])
def test_same_decisions_on_synthetic_graphs(workload: str, rules: RuleSet) -> None:
    assert assert_same(synthetic.generate(workload, 1500), rules) > 100


MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def _corpus() -> list[dict[str, Any]]:
    models: list[dict[str, Any]] = json.loads((MODELS / "manifest.json").read_text(encoding="utf-8"))["models"]
    return models


@pytest.mark.slow
@pytest.mark.parametrize("formats", ["keep", "ascend"])
@pytest.mark.parametrize("entry", _corpus(), ids=lambda e: e["name"])
def test_same_decisions_on_the_corpus_models(entry: dict[str, Any], formats: str, rules: RuleSet) -> None:
    """The real models of tests/data/models, imported as the models benchmark imports them, in both format modes."""
    from rulepass.compiler.onnx_import import import_onnx

    graph = import_onnx(MODELS / entry["file"], format_mode=formats, dims=entry["dims"], weights="inline").graph
    assert assert_same(graph, rules) > 0


@pytest.mark.parametrize("dry_run", [False, True], ids=["applied", "dry-run"])
def test_same_records_without_explanations(dry_run: bool, rules: RuleSet) -> None:
    """As `compile` runs the passes (no explanation: the engine's shortest path for a miss)."""
    for fixture in _fixtures():
        g = graph_from_doc(load_file(fixture, what="fixture").sub(["graph"]), fixture.stem)
        assert_same(g, rules, explain=False, dry_run=dry_run)
    assert assert_same(synthetic.generate("llm", 1500), rules, explain=False, dry_run=dry_run) > 100


HOSTILE = """
rules:
  - name: Hostile
    match: [ConcatD, ConcatV2D]
    let:
      first: node.input_descs[0]
    checks:
      - name: Indexing
        for_each: i in node.inputs
        where: i.connected
        let:
          dims: i.desc.shape
        checks:
          - name: OutOfRange
            require: len(dims) < 2 or dims[{index}] >= 0
          - name: NullField
            require: "i.index < {nul} or (if i.index > 100 then i.desc else null).rank >= 0"
          - name: Division
            require: first.origin_rank // (len(dims) - {zero}) >= -1000
      - name: Budget
        for_each: a in range({size})
        checks:
          - name: Inner
            require: "count(b in range({size}): b >= 0) > 0"
"""


@pytest.mark.parametrize(
    "index,nul,zero,size,check,error",
    [
        (9, 99, 99, 3, "OutOfRange", "index 9 is out of range for a length of 2"),
        (1, 0, 99, 3, "NullField", "cannot read 'rank' of null"),
        (1, 99, 2, 3, "Division", "division by zero"),
        (1, 99, 99, 5000, "Inner", "evaluation exceeded its budget of 1000000 steps"),
        (1, 99, 99, 3, None, None),
    ],
    ids=["index-out-of-range", "null-field", "division-by-zero", "over-budget", "all-pass"],
)
def test_same_decisions_on_faulting_rules(
    index: int, nul: int, zero: int, size: int, check: str | None, error: str | None, tmp_path: Path
) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(HOSTILE.format(index=index, nul=nul, zero=zero, size=size))
    rules = load_rules([path])
    g = load_graph(example_path("allgather_concat.yaml"))
    assert assert_same(g, rules) > 0
    (d,) = [d for r in build_pass_manager(rules).run(g) for d in r.decisions]
    assert d.check == check and (error is None) == (d.error is None)
    assert error is None or error in (d.error or "")


TWO_RULES = """
rules:
  - name: First
    match: [ConcatD]
    checks:
      - name: Any
        require: "true"
  - name: Second
    after: [First]
    match: [ConcatD]
    checks:
      - name: Any
        require: "true"
"""


def test_a_python_pass_that_changes_op_types_is_seen_by_later_rule_passes(tmp_path: Path) -> None:
    """Rule passes share one candidate index per graph; a Python pass between them may change op types."""
    from rulepass.compiler.passes import PassManager, PythonPass

    def unhide(graph: ComputeGraph, ctx: Any, out: Any) -> None:
        for n in graph.nodes_in_insertion_order():
            if n.op.type == "HiddenConcat":
                n.op.type = "ConcatD"

    path = tmp_path / "two.yaml"
    path.write_text(TWO_RULES)
    g = load_graph(example_path("allgather_concat.yaml"))
    for n in g.nodes_in_insertion_order():
        if n.op.type == "ConcatD":
            n.op.type = "HiddenConcat"  # no candidate of First; the Python pass makes it one for Second
    passes = [*build_pass_manager(load_rules([path])).passes]
    passes.append(PythonPass("Unhide", unhide, after=("First",), before=("Second",)))
    decided = [(d.rule, d.node) for r in PassManager(passes).run(g) for d in r.decisions]
    assert decided == [("Second", "concat")]


@pytest.mark.parametrize("depth", [25, 60])
def test_a_rule_python_cannot_compile_runs_on_the_closures(depth: int, tmp_path: Path) -> None:
    """More than 20 nested loops is beyond Python's compiler: the rule loads and runs on the closures, which
    stop it at the step budget (2 inputs ** 25 nested loops) like any runaway rule."""
    quants = "".join(f"all(x{i} in node.inputs: " for i in range(depth)) + "true" + ")" * depth
    path = tmp_path / "deep.yaml"
    path.write_text(
        "rules:\n  - name: Deep\n    match: [ConcatD]\n    checks:\n      - name: C\n"
        f"        require: >\n          {quants} and len(node.inputs) < 3\n"
    )
    rules = load_rules([path])
    assert rules.rules[0].fast is None
    g = load_graph(example_path("allgather_concat.yaml"))
    (d,) = [d for r in build_pass_manager(rules).run(g) for d in r.decisions]
    assert (d.node, d.fired, d.check) == ("concat", False, "C")
    assert d.error is not None and "exceeded its budget" in d.error


MEMO = """
rules:
  - name: Memo
    match: [ConcatD, ConcatV2D]
    let:
      conn: "count(i in node.inputs: i.connected)"
      skipped: "count(i in node.inputs: i.index >= 0)"
      nested: "count(i in node.outputs: i.index >= 0)"
    checks:
      - name: Late
        require: "len(node.inputs) > {a} and conn >= 0 and node.input_count + conn >= 0"
      - name: Again
        reject_if: "conn < 0 or node.input_count + conn < 0"
      - name: NotReached
        reject_if: "len(node.inputs) > 99 and skipped > 0"
      - name: Inside
        require: "(len(node.inputs) > 99 and nested > 0) or true"
      - name: Later
        require: "skipped + nested >= 0"
      - name: Each
        for_each: i in node.inputs
        let:
          peers: "count(j in node.inputs: j.connected and j.index <= i.index)"
        checks:
          - name: Branches
            let:
              r: i.desc.rank
            require: >
              (if r > {b} then peers + conn else conn) >= 0
              and all(k in range(r): peers >= 0 and r + conn >= 0)
              and (r < 0 or peers + r >= 0)
          - name: After
            reject_if: >
              peers < 0 or conn + peers < 0
              or any(k in node.inputs: count(m in node.inputs[:k.index]: m.connected) < 0)
"""


@pytest.mark.parametrize("a,b", [(0, 0), (0, 9), (9, 0)])
def test_lets_are_computed_once_and_charged_once(a: int, b: int, tmp_path: Path) -> None:
    """`let`s and repeated sub-expressions, first computed in a branch, a chain or a loop and used again after
    it: the generated code computes each once, as the closures do. A value computed twice would charge its
    loop twice, so every step budget from 1 up to what the candidate needs must stop both at the same place."""
    from rulepass.compiler.facts import ge_catalogue
    from rulepass.dsl.load import load_rules as load_with

    path = tmp_path / "memo.yaml"
    path.write_text(MEMO.format(a=a, b=b))
    g = load_graph(example_path("allgather_concat.yaml"))
    outcomes = set()
    for limit in range(1, 80):
        rules = load_with([path], ge_catalogue(), step_limit=limit).raise_on_error()
        assert_same(g, rules)
        (d,) = [d for r in build_pass_manager(rules).run(g.copy()) for d in r.decisions]
        outcomes.add((d.check, d.fired))
    assert len(outcomes) >= (1 if a else 4)  # the budget stops it at several different checks, then it decides


# ---- earlier(x): the values of a group's variable or `let` for the elements visited before this one ---------
EARLIER_GRAPH = {
    "nodes": [
        {"name": "r1", "type": "ReLU", "outputs": ["float16[16,16]"]},
        {"name": "r2", "type": "ReLU", "outputs": ["float16[16,16]"]},
        {"name": "c", "type": "ConcatD", "attrs": {"concat_dim": 0}, "inputs": ["r1", "r2", "r1", "r2"],
         "outputs": ["float16[64,16]"]},
        {"name": "d", "type": "ConcatD", "attrs": {"concat_dim": 0}, "inputs": ["r1", "r2"],
         "outputs": ["float16[32,16]"]},
    ]
}  # fmt: skip

EARLIER = """
rules:
  - name: Earlier
    match: [ConcatD]
    checks:
      - name: Inputs
        for_each: i in node.inputs
        where: i.connected
        let:
          src: ref_source(i.peer)
          rank: i.desc.rank
          risky: "[7][i.index - {shift}]"    # faults once the index is past the list; only Risky reads it
        checks:
          - name: Count
            require: len(earlier(i)) == i.index
          - name: Risky
            require: "i.index < {risky_from} or all(r in earlier(risky): r == 7)"
          - name: Distinct
            reject_if: src in earlier(src)
          - name: PerDesc
            for_each: d in node.input_descs
            checks:
              - name: OuterValues
                require: "all(r in earlier(rank): r == d.rank) and len(earlier(d)) <= 3"
"""


@pytest.mark.parametrize(
    "shift,risky_from,want",
    [
        # every input's `risky` is [7][0]: the second use of r1 misses at Distinct, `d` fires
        (None, 99, [("c", "Distinct", "input 2 of c"), ("d", None, None)]),
        # `risky` faults from input 1 on (index 1 - 0 = 1 is past [7]): computed at the end of input 1, it
        # faults where Risky reads it, at input 2, in both compilations
        (0, 2, [("c", "Risky", "input 2 of c"), ("d", None, None)]),
    ],
    ids=["distinct", "faulting-earlier-value"],
)
def test_earlier_agrees_with_the_closures(
    shift: int | None, risky_from: int, want: list[tuple[str, str | None, str | None]], tmp_path: Path
) -> None:
    path = tmp_path / "earlier.yaml"
    text = EARLIER.replace("{risky_from}", str(risky_from))
    path.write_text(text.replace("i.index - {shift}", "0" if shift is None else f"i.index - {shift}"))
    rules = load_rules([path])
    g = load_graph_text(json.dumps(EARLIER_GRAPH))
    assert assert_same(g, rules) == 2
    got = [(d.node, d.check, d.elements[0].split(" (")[0].split("= ")[-1] if d.elements else None)
           for r in build_pass_manager(rules).run(g.copy()) for d in r.decisions]  # fmt: skip
    assert got == want
    (miss,) = [d for r in build_pass_manager(rules).run(g.copy()) for d in r.decisions if d.check]
    if miss.check == "Distinct":  # the explanation shows the earlier sources, as the closures compute them
        assert miss.reason is not None and "earlier(src)" in json.dumps(miss.to_json())
        assert "r1:0" in json.dumps(miss.to_json())
    else:
        assert miss.error is not None and "out of range" in miss.error


@pytest.mark.parametrize("explain", [False, True])
def test_a_miss_in_a_nested_group_names_both_elements(explain: bool, tmp_path: Path) -> None:
    """A check two groups deep misses at the second desc of the first input: its record names the input and the
    desc, as the closures' record does (the generated path describes both groups' elements)."""
    path = tmp_path / "nested.yaml"
    path.write_text(EARLIER.replace("{risky_from}", "99").replace("i.index - {shift}", "0").replace("<= 3", "< 1"))
    rules = load_rules([path])
    assert rules.rules[0].fast is not None
    g = load_graph_text(json.dumps(EARLIER_GRAPH))
    assert assert_same(g, rules, explain=explain) == 2
    miss = next(d for r in build_pass_manager(rules).run(g.copy(), explain=explain) for d in r.decisions)
    assert miss.check == "OuterValues"
    assert [e.split(" (")[0] for e in miss.elements] == ["i = input 0 of c", "d = float16[16,16] ND"]


def test_earlier_of_a_let_with_a_loop_runs_on_the_closures(tmp_path: Path) -> None:
    path = tmp_path / "earlier.yaml"
    path.write_text(
        EARLIER.replace("{risky_from}", "99")
        .replace("i.index - {shift}", "0")
        .replace("rank: i.desc.rank", 'rank: "count(x in i.desc.shape: x > 0)"')
        .replace("r == d.rank", "r >= 0")
    )
    rules = load_rules([path])
    assert rules.rules[0].fast is None  # its value at the end of an element would charge steps
    got = [
        (d.node, d.check)
        for r in build_pass_manager(rules).run(load_graph_text(json.dumps(EARLIER_GRAPH)))
        for d in r.decisions
    ]
    assert got == [("c", "Distinct"), ("d", None)]


VIEWS = """
rules:
  - name: Views
    match: [ConcatD]
    checks:
      - name: PerInput
        for_each: d in node.input_descs
        checks:
          - name: Copies
            description: "compared, joined, kept in a list literal, a member: the list copy"
            require: >
              d.shape == [2048, 12288] and d.shape + [] == d.origin_shape and [d.shape] == [[2048, 12288]]
              and d.shape in [[2048, 12288]] and index_of([[1], [2048, 12288]], d.shape) == 1
          - name: Views
            description: "measured, indexed, sliced, iterated, read by helpers: the IR's tuple"
            require: >
              len(d.shape) == 2 and d.shape[0] == 2048 and d.shape[1:] == [12288] and d.origin_shape[:1] == [2048]
              and all(x in d.shape: x > 0) and 12288 in d.shape and shape_size(d.shape) == 25165824
              and not is_unknown_shape(d.origin_shape) and index_of(d.shape, 12288) == 1
              and max(d.shape) == 12288 and sum(d.origin_shape) == 14336
"""


def test_list_fields_are_read_without_a_copy_only_where_no_list_is_needed(tmp_path: Path) -> None:
    rules, source = generated(tmp_path, "views.yaml", VIEWS)
    copies, views = source.rsplit("return (1, 0", 1)  # the code up to the Copies check's last miss, and after it
    assert re.search(r"list\(v\d+\.shape\)", copies) and re.search(r"list\(v\d+\.origin_shape\)", copies)
    assert re.search(r":= v\d+\.shape\)", views) and not re.search(r"list\(v\d+\.", views)
    d = only_decision(load_graph(example_path("allgather_concat.yaml")), rules)
    assert d.fired, (d.check, d.error)  # a tuple where a list is compared would miss at Copies


CONSUMERS = """
rules:
  - name: Consumers
    match: [SplitD, ConcatD]
    checks:
      - name: Counted
        require: "len(node.consumers) >= node.output_count and count(c in node.consumers: c.connected) > 0"
      - name: Each
        for_each: c in node.consumers
        checks:
          - name: Listed
            require: c in node.consumers and index_of(node.consumers, c) >= 0
          - name: FirstOutputOnly
            reject_if: "index_of(node.consumers, c) > {later} and c.node.type == 'ReLU'"
"""


@pytest.mark.parametrize("later", [0, 2], ids=["miss-at-second", "miss-at-fourth"])
@pytest.mark.parametrize("explain", [True, False], ids=["explained", "compile"])
def test_the_consumers_of_a_node_with_several_outputs_agree_with_the_closures(
    later: int, explain: bool, tmp_path: Path
) -> None:
    """`node.consumers` is read as the stored list of a one-output node's consumers (the view), else built by
    the getter: a SplitD's consumers over its four outputs, missed at a later output's, agree with the closures."""
    rules, source = generated(tmp_path, "consumers.yaml", CONSUMERS.format(later=later))
    assert re.search(r"\.out_peers\[0\] if len\(r\d+\.out_peers\) == 1 else k\d+\(r\d+\)", source)
    g = synthetic.generate("split", 300)
    assert assert_same(g, rules, explain=explain) > 10
    decisions = [d for r in build_pass_manager(rules).run(g.copy(), explain=explain) for d in r.decisions]
    missed = [d for d in decisions if not d.fired]
    assert missed and all(d.check == "FirstOutputOnly" and d.op_type == "SplitD" for d in missed)
    assert {d.elements for d in missed} == {
        (f"c = input 0 of {d.node[:-5]}relu{later + 1} (from {d.node}:{later + 1})",) for d in missed
    }
    assert any(d.fired and d.op_type == "ConcatD" for d in decisions)


STRINGS = """
rules:
  - name: Strings
    match: [ConcatD]
    checks:
      - name: Starts
        reject_if: starts_with(node.name, 'b1_')
      - name: Ends
        reject_if: ends_with(node.name, '2_concat')
      - name: Contains
        reject_if: contains(node.name, '3_con')
"""


def test_the_string_tests_written_inline_agree_with_the_closures(tmp_path: Path) -> None:
    """`contains`, `starts_with` and `ends_with` are written as Python's operators: each misses where its
    closure does, with the arguments in their order (a string is not in its own prefix)."""
    rules, source = generated(tmp_path, "strings.yaml", STRINGS)
    assert ".startswith(" in source and ".endswith(" in source and re.search(r"\bk\d+ in [a-z]\d+\b", source)
    g = synthetic.generate("split", 1500)
    assert assert_same(g, rules, explain=False) > 20
    decisions = [d for r in build_pass_manager(rules).run(g.copy(), explain=False) for d in r.decisions]

    def expected(name: str) -> str | None:
        if name.startswith("b1_"):
            return "Starts"
        if name.endswith("2_concat"):
            return "Ends"
        return "Contains" if "3_con" in name else None

    assert {d.node: d.check for d in decisions} == {d.node: expected(d.node) for d in decisions}
    assert {d.check for d in decisions} == {"Starts", "Ends", "Contains", None}


COUNTED = """
rules:
  - name: Counted
    match: [ConcatD]
    checks:
      - name: Inputs
        for_each: i in node.inputs
        where: i.connected
        let:
          src: ref_source(i.peer)
        checks:
          - name: Itself
            require: "i == node.inputs[i.index] and i.node.name == node.name and i in node.inputs"
          - name: Quantified
            require: "count(j in node.inputs: j.connected and j.index <= i.index) == i.index + 1"
          - name: Distinct
            reject_if: src in earlier(src)
    actions:
      - "for i in node.inputs where i.connected and i.index > 0: set i.peer.desc.seen_by_counted = true"
"""


def test_a_nodes_inputs_are_counted_not_built_and_made_where_needed(tmp_path: Path) -> None:
    rules, source = generated(tmp_path, "counted.yaml", COUNTED)
    assert len(re.findall(r"for p\d+ in range\(", source)) == 2  # group, quantifier
    concat = next(r for r in load_rules().rules if r.name == "ConcatNotaskPass").fast
    assert concat is not None and "in_anchors" not in concat.source  # its inputs are never built
    g = load_graph_text(json.dumps(EARLIER_GRAPH))
    assert assert_same(g, rules) == 2  # the records (elements, explanations) and the graphs agree
    c, d = [d for r in build_pass_manager(rules).run(g) for d in r.decisions]
    assert (c.check, c.elements) == ("Distinct", ("i = input 2 of c (from r1:0)",))
    assert c.reason is not None and "r1:0" in json.dumps(c.to_json())  # the visited inputs, made for the record
    assert d.fired
    r1, r2 = (g.node(n).op.output_descs[0].attrs for n in ("r1", "r2"))
    assert "seen_by_counted" not in r1 and r2["seen_by_counted"] is True  # input 0 of d (r1) is left out


INVALID_DESC_GRAPH = {
    "nodes": [
        {"name": "r1", "type": "ReLU", "outputs": ["float16[16,16]"]},
        {"name": "r2", "type": "ReLU", "outputs": ["float16[16,16]"]},
        # an absent optional input whose invalid desc carries an unknown dim: GE skips invalid descs
        {"name": "skipped", "type": "ConcatD", "attrs": {"concat_dim": 0},
         "inputs": ["r1", "r2", {"desc": "undefined[-1] RESERVED"}], "outputs": ["float16[32,16]"]},
        # the same dim on a valid desc makes the op unknown-shaped
        {"name": "unknown", "type": "ConcatD", "attrs": {"concat_dim": 0},
         "inputs": ["r1", "r2", {"desc": "float16[-1] RESERVED"}], "outputs": ["float16[32,16]"]},
    ]
}  # fmt: skip


def test_an_invalid_desc_is_skipped_by_is_unknown_shape_op_in_both_compilations(rules: RuleSet) -> None:
    g = load_graph_text(json.dumps(INVALID_DESC_GRAPH))
    assert assert_same(g, rules) >= 2
    got = {
        d.node: d.check for r in build_pass_manager(rules).run(g) for d in r.decisions if d.rule == "ConcatNotaskPass"
    }
    assert got["unknown"] == "IsUnknownShapeOp" and got["skipped"] != "IsUnknownShapeOp"


ATTRS = """
rules:
  - name: Attrs
    match: [ConcatD]
    checks:
      - name: Producers
        for_each: i in node.inputs
        where: i.connected
        let:
          p: i.peer.node
        checks:
          - name: Flags
            reject_if: >
              p.attr_bool('a') or p.attr_bool('b', false) or p.attr_int('n', 0) > 2
              or len(p.attr_ints('list')) > 1 or p.attr_bool('c')
          - name: Once
            require: i.peer.desc.attr_bool('ok', true)
    actions:
      - set node.marked = true
      - set node.count = 2
      - "for i in node.inputs where i.connected: set i.peer.node.fed = true"
"""

ATTRS_GRAPH = {
    "nodes": [
        {"name": "plain", "type": "ReLU", "outputs": ["float16[16,16]"]},
        {"name": "wrong_types", "type": "ReLU", "attrs": {"a": 1, "b": "yes", "n": True, "list": [1.5, 2.5]},
         "outputs": ["float16[16,16]"]},
        {"name": "flag_b", "type": "ReLU", "attrs": {"b": True}, "outputs": ["float16[16,16]"]},
        {"name": "big_n", "type": "ReLU", "attrs": {"n": 3}, "outputs": ["float16[16,16]"]},
        {"name": "flag_c", "type": "ReLU", "attrs": {"c": True}, "outputs": ["float16[16,16]"]},
        {"name": "two", "type": "ReLU", "attrs": {"list": [1, 2]}, "outputs": ["float16[16,16]"]},
        {"name": "c1", "type": "ConcatD", "inputs": ["plain", "wrong_types"], "outputs": ["float16[32,16]"]},
        {"name": "c2", "type": "ConcatD", "inputs": ["plain", "flag_b"], "outputs": ["float16[32,16]"]},
        {"name": "c3", "type": "ConcatD", "inputs": ["big_n", "plain"], "outputs": ["float16[32,16]"]},
        {"name": "c4", "type": "ConcatD", "inputs": ["plain", "flag_c"], "outputs": ["float16[32,16]"]},
        {"name": "c5", "type": "ConcatD", "inputs": ["two", "plain"], "outputs": ["float16[32,16]"]},
    ]
}  # fmt: skip


def test_attribute_reads_of_one_holder_share_its_dict(tmp_path: Path) -> None:
    rules, source = generated(tmp_path, "attrs.yaml", ATTRS)
    # the producer's dict is read once for its five reads; the desc's one read keeps its own form
    assert len(re.findall(r"\.op\.attrs\b", source)) == 1, source
    assert re.search(r"\]\.attrs\.get\(k\d+\) is not False", source)  # the desc read, in its own form
    g = load_graph_text(json.dumps(ATTRS_GRAPH))
    assert assert_same(g, rules) == 5
    got = {d.node: d.check for r in build_pass_manager(rules).run(g) for d in r.decisions}
    assert got == {"c1": None, "c2": "Flags", "c3": "Flags", "c4": "Flags", "c5": "Flags"}
    c1, plain = g.node("c1").op.attrs, g.node("plain").op.attrs
    assert (c1["marked"], c1["count"], plain["fed"]) == (True, 2, True)  # writes to one dict, shared too


GUARDED_ATTRS = """
rules:
  - name: Guarded
    match: [ConcatD]
    checks:
      - name: Each
        for_each: i in node.inputs
        checks:
          - name: Flags
            require: "i.peer == null or not (i.peer.node.attr_bool('a') or i.peer.node.attr_bool('b'))"
"""


def test_a_shared_attribute_dict_is_read_only_where_the_reads_are_reached(tmp_path: Path) -> None:
    # input 1 is unconnected: its producer's dict must not be read (that faults) where `i.peer == null` decides
    rules, source = generated(tmp_path, "guarded.yaml", GUARDED_ATTRS)
    assert len(re.findall(r"\.op\.attrs\b", source)) == 1
    graph = {
        "nodes": [
            {"name": "r1", "type": "ReLU", "outputs": ["float16[16,16]"]},
            {
                "name": "c",
                "type": "ConcatD",
                "inputs": ["r1", {"desc": "float16[16,16]"}],
                "outputs": ["float16[32,16]"],
            },
        ]
    }
    d = only_decision(load_graph_text(json.dumps(graph)), rules)
    assert d.fired and d.error is None


FLAG_RUNS = """
rules:
  - name: FlagRuns
    match: [ConcatD]
    checks:
      - name: Producers
        for_each: i in node.inputs
        where: i.connected
        checks:
          - name: Flags
            reject_if: >
              i.peer.node.attr_bool('a') or i.peer.node.attr_bool('b') or i.peer.node.attr_bool('c')
              or i.peer.node.attr_int('n', 0) > 2 or len(i.peer.node.attr_ints('list')) > 1
  - name: ListRuns
    match: [ConcatD]
    checks:
      - name: Producers
        for_each: i in node.inputs
        where: i.connected
        checks:
          - name: Flags
            reject_if: i.peer.node.attr_bool('b') or len(i.peer.node.attr_ints('list')) > 0
"""


def test_a_run_of_flag_reads_is_skipped_on_an_empty_attribute_dict(tmp_path: Path) -> None:
    """`attr_bool(a) or attr_bool(b) or attr_bool(c)` on one holder reads nothing when its dict is empty (the
    usual op); values that are not `true` stay false, and reads outside the run keep their own place."""
    rules, source = generated(tmp_path, "flags.yaml", FLAG_RUNS)
    run = re.search(r"\((?:c\d+\.get\(k\d+\) is True(?: or )?){3} if (c\d+) else False\)", source)
    assert run is not None, source
    assert source.count(f"if {run.group(1)} else False") == 1  # the reads after attr_int keep their place
    g = load_graph_text(json.dumps(ATTRS_GRAPH))  # c1's producers: no attribute, and a, b not bools
    assert assert_same(g, rules) == 10
    got = {d.node: d.check for r in build_pass_manager(rules).run(g) for d in r.decisions if d.rule == "FlagRuns"}
    assert got == {"c1": None, "c2": "Flags", "c3": "Flags", "c4": "Flags", "c5": "Flags"}


def test_an_int_list_attribute_tested_non_empty_joins_the_run_of_flag_reads(tmp_path: Path) -> None:
    """`len(attr_ints(x)) > 0` is false on an empty attribute dict as the flags are: it joins their run, and the
    whole run is skipped there; an ill-typed list still reads as empty, a list of ints as not."""
    rules, _ = generated(tmp_path, "flags.yaml", FLAG_RUNS)
    source = rules.rules[1].fast.source  # type: ignore[union-attr]
    run = re.search(r"c\d+\.get\(k\d+\) is True or not not \(\[\] if (c\d+)\.get.*\) if \1 else False", source)
    assert run is not None, source
    g = load_graph_text(json.dumps(ATTRS_GRAPH))  # wrong_types' list holds floats; two's holds ints
    assert assert_same(g, rules) == 10
    got = {d.node: d.check for r in build_pass_manager(rules).run(g) for d in r.decisions if d.rule == "ListRuns"}
    assert got == {"c1": None, "c2": "Flags", "c3": None, "c4": None, "c5": "Flags"}


MEMBERSHIP = """
rules:
  - name: Membership
    match: [ConcatD]
    checks:
      - name: Type
        require: node.type in ['ConcatD', 'ConcatV2D']
      - name: Number
        reject_if: node.attr_int('n', 0) in [3, 4.0]
      - name: Flag
        reject_if: node.attr_bool('f') in [true]
      - name: Text
        reject_if: node.attr_str('s', '') not in ['', 'ok']
      - name: Lists
        reject_if: node.attr_ints('l') in [[7]]
"""


@pytest.mark.parametrize(
    "attrs,check",
    [
        ({}, None),
        ({"n": 3}, "Number"),
        ({"n": 4}, "Number"),  # 4 == 4.0, and they hash alike
        ({"n": 5}, None),
        ({"f": True}, "Flag"),
        ({"f": 1}, None),  # not a bool: attr_bool reads false
        ({"s": "ok"}, None),
        ({"s": "no"}, "Text"),
        ({"l": [7]}, "Lists"),
    ],
)
def test_membership_in_a_list_of_literals_answers_as_the_list(
    attrs: dict[str, Any], check: str | None, tmp_path: Path
) -> None:
    """A scalar's `in [literals]` is a set lookup in the generated code (a list on the left keeps the list's
    scan), with the list's answer: numbers that compare equal match."""
    rules, _ = generated(tmp_path, "membership.yaml", MEMBERSHIP)
    fast = rules.rules[0].fast
    assert fast is not None
    assert sum(isinstance(v, frozenset) for v in fast.fn.__defaults__ or ()) == 4  # Lists keeps its list
    assert only_decision(one_concat(["r", "r"], attrs), rules).check == check


DEFAULTS = """
rules:
  - name: Defaults
    match: [ConcatD]
    checks:
      - name: Producers
        for_each: i in node.inputs
        where: i.connected
        checks:
          - name: Lock
            require: i.peer.desc.attr_bool('ok', true)
          - name: Flag
            reject_if: i.peer.node.attr_bool('f', false)
          - name: Either
            require: i.peer.node.attr_bool('g', i.index <= 1)
"""


@pytest.mark.parametrize(
    "desc_attrs,node_attrs,check",
    [
        ({}, {}, None),
        ({"ok": False}, {}, "Lock"),
        ({"ok": True}, {}, None),
        ({"ok": 0}, {}, None),  # not a bool: the default
        ({"ok": "false"}, {}, None),
        ({}, {"f": True}, "Flag"),
        ({}, {"f": 1}, None),
        ({}, {"f": False}, None),
        ({}, {"g": False}, "Either"),  # a default that is not a literal keeps the general form
        ({}, {"g": "yes"}, None),
    ],
)
def test_a_bool_attribute_with_a_literal_default_reads_as_the_helper(
    desc_attrs: dict[str, Any], node_attrs: dict[str, Any], check: str | None, tmp_path: Path
) -> None:
    """`attr_bool(name, true)` and `attr_bool(name, false)` have forms of their own (only the other bool
    decides); a default computed at run time keeps the general one. All agree with the closures."""
    rules, source = generated(tmp_path, "defaults.yaml", DEFAULTS)
    assert re.search(r"\.attrs\.get\(k\d+\) is not False", source) and ":= " in source
    graph = {
        "nodes": [
            {"name": "p", "type": "ReLU", "attrs": node_attrs,
             "outputs": [{"dtype": "float16", "shape": [16, 16], "attrs": desc_attrs}]},
            {"name": "c", "type": "ConcatD", "inputs": ["p", "p:0"], "outputs": ["float16[32,16]"]},
        ]
    }  # fmt: skip
    assert only_decision(load_graph_text(json.dumps(graph)), rules).check == check


INDEXES = """
rules:
  - name: Indexes
    match: [ConcatD]
    let:
      k: node.attr_int('k', 0)
      l: node.attr_ints('l')
    checks:
      - name: Proved
        require: 0 <= k and k < len(l) and l[k] >= 0
      - name: After
        require: l[k] < 9 and (if l[k] > -1 then l[l[k]] >= 0 else true)
  - name: Unproved
    match: [ConcatD]
    let:
      k: node.attr_int('k', 0)
      j: node.attr_int('j', 0)
      l: node.attr_ints('l')
    checks:
      - name: Otherwise
        reject_if: if j >= 0 then false else l[j] == 2
      - name: Either
        reject_if: k >= 0 or l[k] == 1
"""


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 2, 7])
@pytest.mark.parametrize("values", [[], [1], [0, 2], [1, 0, 2], [3, 3, 3]])
def test_an_index_proved_non_negative_reads_without_the_guard(k: int, values: list[int], tmp_path: Path) -> None:
    """An index that a passed `require`, an earlier operand of an `and` or the condition of the branch taken
    proves non-negative is read as it is; where nothing proves it (an `or`'s later operand, the other branch) a
    negative index keeps its guard and faults as the closures' does."""
    rules, proved = generated(tmp_path, "indexes.yaml", INDEXES)
    unproved = rules.rules[1].fast.source  # type: ignore[union-attr]
    guard = re.compile(r"\[(\w+) if \1 >= 0 else None\]")
    assert not guard.search(proved) and "[c" in proved
    assert len(guard.findall(unproved)) == 2  # Otherwise's and Either's
    assert assert_same(one_concat(["r", "r"], {"k": k, "j": -k, "l": values}), rules) == 2


EMPTINESS = """
rules:
  - name: Empties
    match: [ConcatD]
    let:
      l: node.attr_ints('l')
      n: node.attr_str('n', '')
    checks:
      - name: Lengths
        reject_if: len(l) == 0 and 0 < len(n)
      - name: Flipped
        reject_if: 1 <= len(node.attr_ints('m')) and len(node.attr_str('o', '')) < 1
      - name: Ranks
        for_each: i in node.inputs
        checks:
          - name: Scalar
            reject_if: i.desc.origin_rank == 0 and i.desc.rank != 0 or len(node.attr_ints('p')) > 0
  - name: Nullable
    match: [ConcatD]
    checks:
      - name: Aligned
        for_each: i in node.inputs
        checks:
          - name: Empty
            reject_if: len(aligned_shape(i.desc)) == 0
  - name: Shared
    match: [ConcatD]
    let:
      l: node.attr_ints('l')
    checks:
      - name: Twice
        reject_if: len(l) == 0 or len(l) > 2 or len(l) == 1
"""


def scalar_concat(attrs: dict[str, Any], shape: str) -> ComputeGraph:
    """One ConcatD `c` (with `attrs`) reading two inputs of `shape` (`float16[]`: scalars) from ReLU `r`."""
    nodes = [
        {"name": "r", "type": "ReLU", "outputs": [shape]},
        {"name": "x", "type": "ReLU", "outputs": ["float16[16,16]"]},
        {"name": "c", "type": "ConcatD", "attrs": attrs, "inputs": ["x", "r"], "outputs": ["float16[32,16]"]},
    ]
    return load_graph_text(json.dumps({"nodes": nodes}))


@pytest.mark.parametrize(
    "attrs",
    [{}, {"l": [1]}, {"n": "x"}, {"l": [1], "n": "x"}, {"l": [1, 2, 3]}, {"m": [0]}, {"m": [0], "o": "y"}, {"p": [1]}],
)
@pytest.mark.parametrize("shape", ["float16[]", "float16[16,16]", "float16[0]"])
def test_a_length_compared_with_zero_reads_as_the_sequences_truth(
    attrs: dict[str, Any], shape: str, tmp_path: Path
) -> None:
    """`len(x) == 0`, `0 < len(x)`, `1 <= len(x)`, `len(x) < 1` and a field that is the length of another
    (`origin_rank`, `rank`) test the list or string itself when it is never null; a nullable list keeps `len`,
    which faults on null as the closures' does."""
    rules, source = generated(tmp_path, "emptiness.yaml", EMPTINESS)
    compared = [line for line in source.splitlines() if "len(" in line and re.search(r" (==|!=|<|>|<=|>=) ", line)]
    assert not compared  # the loop's count keeps its `len`
    assert "not not " in source and ".origin_shape and " in source
    nullable, shared = (r.fast.source for r in rules.rules[1:])  # type: ignore[union-attr]
    assert re.search(r"len\(\(?\w+\(", nullable)  # len of the helper's value
    assert "not (m" in shared and re.search(r"\(c\d+ := len\(m\d+\)\) > ", shared)  # the others share one len
    assert assert_same(scalar_concat(attrs, shape), rules) == 3


REREAD = """
rules:
  - name: Reread
    match: [ConcatD]
    checks:
      - name: Dims
        for_each: i in node.inputs
        let:
          d: i.desc
        checks:
          - name: Either
            require: (if len(i.desc.origin_shape) > 1 then d.shape[1] > 0 else true) and len(d.shape) >= 0
          - name: Typed
            require: d.dtype == 'float16' or d.dtype == 'float32'
"""


@pytest.mark.parametrize("shape", ["float16[]", "float16[16,16]", "float16[16,0]", "float32[4,4]", "int8[4]"])
def test_one_attribute_read_on_some_paths_is_read_again_not_memoised(shape: str, tmp_path: Path) -> None:
    """A field read as one attribute of its object (`d.shape`) that only some paths have read is read again
    where it is needed, not kept behind a memo's `is _U` test, which costs as much as the read."""
    rules, source = generated(tmp_path, "reread.yaml", REREAD)
    assert source.count(".shape)") == 2 and not re.search(r"is not _U else \(\w+ := \(\w+\.shape\)\)", source)
    assert assert_same(scalar_concat({}, shape), rules) == 1


TRUTHS = """
rules:
  - name: Truths
    match: [ConcatD]
    let:
      l: node.attr_ints('l')
      k: node.attr_int('k', 0)
    checks:
      - name: First
        require: len(l) > 1 and k >= 0 and k < len(l)
      - name: Again
        reject_if: len(l) > 1 and (if k >= 0 and k < len(l) then l[k] == 3 else false)
      - name: Either
        reject_if: k > 5 or (if k > 5 then l[0] == 9 else false)
"""


@pytest.mark.parametrize("attrs", [{}, {"l": [1, 3]}, {"l": [3, 1], "k": 1}, {"l": [9, 3, 3, 3, 3, 3, 3], "k": 6}])
def test_a_condition_known_true_is_neither_tested_again_nor_branched_on(attrs: dict[str, Any], tmp_path: Path) -> None:
    """Past a passed `require`, what its `and` chain kept in locals is known true: a later `and` leaves those
    operands out and a conditional on them takes its `then` branch without a test; an `or`'s later operand
    learns nothing from the operands before it (they were false), so its conditional keeps the test."""
    rules, source = generated(tmp_path, "truths.yaml", TRUTHS)
    again, either = source.split("return (0, 0, s, ())")[1].split("return (1, 0, s, ())")
    assert re.search(r"if m\d+\[m\d+\] == k\d+:", again) and " and " not in again  # l[k] == 3 alone
    assert re.search(r"\n +if c\d+:\n", either)
    assert assert_same(one_concat(["r", "r"], attrs), rules) == 1


KEPT_WHERE = """
  - name: Kept
    match: [ConcatD]
    let:
      skip: node.attr_int('skip', -1)
    checks:
      - name: Inputs
        for_each: i in node.inputs
        where: i.connected and i.index != skip
        let:
          src: ref_source(i.peer)
        checks:
          - name: Repeated
            reject_if: src in earlier(src) or len(earlier(src)) > 40
"""


@pytest.mark.parametrize("explain", [False, True])
@pytest.mark.parametrize("skip", [-1, 1, 2])
def test_visited_inputs_are_kept_as_positions_for_a_miss(explain: bool, skip: int, tmp_path: Path) -> None:
    """A loop over a node's inputs keeps the positions it visited (those that passed the `where` and every
    check), made into elements for a miss's record: it explains the miss, with the earlier sources, as the
    closures do. The `where`'s `i.connected` and the `let`'s `i.peer` read the peer once."""
    rules, _ = generated(tmp_path, "refiltered.yaml", EARLIER_SETS + KEPT_WHERE)  # Sources, Indexes, Listed, Kept
    source, kept = (r.fast.source for r in rules.rules[2:])  # type: ignore[union-attr]
    # `i.connected` reads `i.peer` (the catalogue's form of one tests the other's for null), kept for `src`
    peer = re.search(r"if not \(c(\d+) := \w+\.in_peers\[p\d+\]\) is not None:\n +continue", source)
    assert peer is not None and f"(c{peer.group(1)})" in source and source.count(".in_peers[p") == 1
    for text in (source, kept):
        assert re.search(r"h\d+ = \[\]", text) and re.search(r"h\d+\.append\(p\d+\)", text)
    graph = {
        "nodes": [
            {"name": "r", "type": "ReLU", "outputs": ["float16[16,16]"]},
            {"name": "q", "type": "ReLU", "outputs": ["float16[16,16]"]},
            {
                "name": "c",
                "type": "ConcatD",
                "attrs": {"skip": skip},
                "inputs": ["q", {"desc": "float16[16,16]"}, "r", {"desc": "float16[16,16]"}, "q"],
                "outputs": ["float16[80,16]"],
            },
        ]
    }
    assert assert_same(load_graph_text(json.dumps(graph)), rules, explain=explain) == 4
    g = load_graph_text(json.dumps(graph))
    runs = build_pass_manager(rules).run(g, explain=True)
    misses = [d for r in runs for d in r.decisions if d.rule in ("Listed", "Kept")]
    assert [d.check for d in misses] == ["Repeated", "Repeated"]
    shown = [dict(d.reason.values)["earlier(src)"] for d in misses if d.reason is not None]
    both = "[q:0 (ReLU), r:0 (ReLU)]"
    assert shown == [both, "[q:0 (ReLU)]" if skip == 2 else both]  # input 2 (r) skipped by Kept's where


IN_TURN = """
rules:
  - name: InTurn
    match: [ConcatD]
    let:
      l: node.attr_ints('l')
    checks:
      - name: Require
        require: "len(l) > 0 and l[0] >= 0 and all(x in l: x < 5) and len(l) < 4"
      - name: Reject
        reject_if: "len(l) > 3 or any(x in l: x == 3) or l[0] == 9"
      - name: Either
        require: "len(l) == 1 or all(x in l: x > 0)"
"""


@pytest.mark.parametrize("values", [[], [1], [-1], [0, 7], [1, 2, 3], [9, 1], [0, 1], [1, 2, 4, 4], [2]])
def test_a_checks_chain_is_tested_run_by_run_in_turn_or_nested(values: list[int], tmp_path: Path) -> None:
    """A `require`'s `and` and a `reject_if`'s `or` miss at the first operand that decides: the operands before
    one that needs statements are tested (fused) before those statements, each once. A `require`'s `or` misses
    only where no operand holds: the operands after a run are evaluated in the block where it did not hold, and
    the miss is the innermost block's. No local holds a chain's value."""
    rules, source = generated(tmp_path, "in_turn.yaml", IN_TURN)
    require, reject, either = source.split("try:")[1:]
    for text in (require, reject):
        assert text.count(", 0, s, ())") == 2 and not re.search(r"\bt\d+ = t\d+", text)
    assert either.count(", 0, s, ())") == 1 and not re.search(r"\bt\d+ = t\d+", either)
    assert re.search(r"\n( +)if not c\d+ == k\d+:\n(.*\n)*\1    if not t\d+:\n", either)  # nested
    assert assert_same(one_concat(["r", "r"], {"l": values}), rules) == 1


@pytest.mark.parametrize("operands", [8, 120])
def test_a_long_chain_of_quantifiers_is_still_generated(operands: int, tmp_path: Path) -> None:
    """A `require`'s `or` and a `reject_if`'s `and` of quantifiers are nested one block per operand up to eight
    operands; a longer chain keeps its local (flat), so Python's indentation limit never sends the rule to the
    closures. Both agree with them."""
    ops = " or ".join(f"all(x in node.attr_ints('l{k}'): x > {k})" for k in range(operands))
    text = f"""
rules:
  - name: Deep
    match: [ConcatD]
    checks:
      - name: Either
        require: "{ops}"
      - name: Both
        reject_if: "{ops.replace(" or ", " and ")}"
"""
    rules, source = generated(tmp_path, "deep.yaml", text)
    assert bool(re.search(r"\bt\d+ = t\d+", source)) == (operands > 8)  # the chain's local, flat
    for attrs in ({}, {"l5": [9]}, {"l0": [0], "l1": [0]}):
        assert assert_same(one_concat(["r"], attrs), rules) == 1


EARLIER_SETS = """
rules:
  - name: Sources
    match: [ConcatD]
    checks:
      - name: Inputs
        for_each: i in node.inputs
        where: i.connected
        let:
          src: ref_source(i.peer)
        checks:
          - name: Repeated
            reject_if: src in earlier(src)
  - name: Indexes
    match: [ConcatD]
    checks:
      - name: Inputs
        for_each: i in node.inputs
        where: i.connected
        let:
          k: i.peer.index
        checks:
          - name: Repeated
            reject_if: k not in earlier(k) and k > 0
  - name: Listed
    match: [ConcatD]
    checks:
      - name: Inputs
        for_each: i in node.inputs
        where: i.connected
        let:
          src: ref_source(i.peer)
        checks:
          - name: Repeated
            reject_if: src in earlier(src) or len(earlier(src)) > 40
"""


@pytest.mark.parametrize("inputs", [["r", "b"], ["r", "b", "r"], ["r", "b:1", "b"], [f"r{k}" for k in range(30)]])
def test_membership_in_earlier_values_is_a_set_lookup_with_the_lists_answer(inputs: list[str], tmp_path: Path) -> None:
    """`x in earlier(x)` keeps x's values as a set of keys (an anchor's is its node and index, a scalar's itself)
    when every read of `earlier(x)` is such a test, and a list otherwise; both answer as the closures' list. An
    element's key is made once, where it is tested, and added to the set as it is."""
    rules, source = generated(tmp_path, "earlier_sets.yaml", EARLIER_SETS)
    assert re.search(r"hv\d+ = set\(\)", source)  # an anchor's key, nullable: made once, at the test, kept after
    assert re.search(r"\(c\d+ := \(None if \w+ is None else", source) and re.search(r"hv\d+\.add\(c\d+\)", source)
    indexes, listed = (r.fast.source for r in rules.rules[1:])  # type: ignore[union-attr]
    assert re.search(r"hv\d+ = set\(\)", indexes) and re.search(r"hv\d+\.add\([a-z]\d+\)", indexes)
    assert "set()" not in listed and ".append(" in listed
    assert assert_same(one_concat(inputs, producers=30), rules) == 3


WRITES = """
rules:
  - name: Writes
    match: [ConcatD]
    checks:
      - name: Any
        require: node.input_count >= 1
    actions:
      - set node.z_first = node.input_count
      - set node.engine = 'AIcoreEngine'
      - "for i in node.inputs where i.connected: set i.peer.desc.fed_at = i.index"
      - "for i in node.inputs where i.connected: for c in i.peer.consumers: set c.node.sibling_of = i.index + 10"
      - "for i in node.inputs where i.connected: set i.peer.node.kernel_lib = 'AIcoreEngine'"
      - set node.a_last = true
"""


def _full_state(g: ComputeGraph) -> list[tuple[str, str, str, list[tuple[str, Any]], list[list[tuple[str, Any]]]]]:
    """Every node's engine, kernel library and attributes in insertion order, and its output descs' attributes."""
    return [
        (
            n.name,
            n.op.engine,
            n.op.kernel_lib,
            list(n.op.attrs.items()),
            [list(d.attrs.items()) for d in n.op.output_descs],
        )
        for n in g.nodes_in_insertion_order()
    ]


@pytest.mark.parametrize("dry_run", [False, True], ids=["applied", "dry-run"])
def test_generated_actions_evaluate_everything_then_write_in_the_closures_order(dry_run: bool, tmp_path: Path) -> None:
    """Writes of constants and computed values, through attribute dicts and through setters (fields), in loops and
    nested loops: the generated actions write what the closures' write, in the same order (attribute dicts keep
    insertion order), and nothing in a dry run; a null target faults, and the closures give the error."""
    rules, _ = generated(tmp_path, "writes.yaml", WRITES)
    fast = rules.rules[0].fast
    assert fast is not None and fast.actions is not None
    # a write's dict read from its target faults on a null target by itself: only the setter's target is tested;
    # each loop's element is a scope of its own, so `i.connected` and `i.peer` read the peer once
    assert (
        len(re.findall(r"is None:\n +raise _F", fast.actions_source)) == 1
        and fast.actions_source.count(".in_peers[p") == 3
    )
    g = synthetic.generate("split", 300)
    a, b, before = g.copy(), g.copy(), _full_state(g)
    fast_run = [d.to_json() for r in build_pass_manager(rules).run(a, dry_run=dry_run) for d in r.decisions]
    slow_run = [
        d.to_json() for r in build_pass_manager(closures_only(rules)).run(b, dry_run=dry_run) for d in r.decisions
    ]
    assert fast_run == slow_run and len(fast_run) > 5
    assert _full_state(a) == _full_state(b)
    assert (_full_state(a) == before) == dry_run
    if not dry_run:
        concat = next(n for n in a.nodes_in_insertion_order() if n.op.type == "ConcatD")
        assert list(concat.op.attrs)[-3:] == ["z_first", "sibling_of", "a_last"] and concat.op.engine == "AIcoreEngine"
        producer = concat.in_peers[1]
        assert producer is not None and producer.node.op.output_descs[producer.index].attrs["fed_at"] == 1


NULL_TARGET = """
rules:
  - name: NullTarget
    match: [ConcatD]
    checks:
      - name: Any
        require: node.input_count >= 1
    actions:
      - set node.first = 1
      - "for i in node.inputs: set ref_source(i.peer).node.z = 2"
"""


def test_an_action_faulting_on_a_null_writes_nothing_in_both_compilations(tmp_path: Path) -> None:
    """The second input is unconnected: its write's target faults (reading `node` of null), so the generated
    actions, which test no target their dict read dereferences, leave it to the closures: one error, no write."""
    rules, _ = generated(tmp_path, "null_target.yaml", NULL_TARGET)
    g = one_concat(["r", {"desc": "float16[16,16]"}])  # type: ignore[list-item]
    assert assert_same(g, rules) == 1
    (d,) = [d for r in build_pass_manager(rules).run(g) for d in r.decisions]
    assert not d.fired and d.error == "an action failed, nothing was changed: cannot read 'node' of null"
    assert "first" not in next(n for n in g.nodes_in_insertion_order() if n.op.name == "c").op.attrs


SKIPPING = """
rules:
  - name: Skipping
    match: [ConcatD]
    skip_graph:
      - name: Hinted
        when: graph.attr_int('hint', 0) > 2
      - name: Indexed
        when: graph.attr_ints('dims')[1] > 0
      - name: Counted
        when: "count(n in graph.nodes: n.type == 'Relu') > 1"
    checks:
      - name: Any
        require: len(node.inputs) > 0
"""


@pytest.mark.parametrize(
    ("attrs", "expected", "error"),
    [
        ({"dims": [0, 0]}, None, None),  # no skip holds
        ({"hint": 3}, "Hinted", None),
        ({"dims": [0, 1]}, "Indexed", None),
        ({"dims": [4]}, "Indexed", "index"),  # a fault: the graph is left alone, with the closures' error
        ({"dims": [0, 0], "relus": 2}, "Counted", None),
    ],
)
def test_a_graph_skip_is_decided_by_generated_code_as_by_the_closures(
    attrs: dict[str, Any], expected: str | None, error: str | None, tmp_path: Path
) -> None:
    rules, _ = generated(tmp_path, "skipping.yaml", SKIPPING)
    skips = rules.rules[0].fast.skips  # type: ignore[union-attr]
    assert skips is not None
    g = load_graph(example_path())
    g.attrs.update({k: v for k, v in attrs.items() if k != "relus"})
    for k in range(attrs.get("relus", 0)):
        g.add_node(OpDesc(f"extra_relu{k}", "Relu"))
    for explain in (False, True):
        assert assert_same(g, rules, explain=explain) >= 1
        records = [d for r in build_pass_manager(rules).run(g.copy(), explain=explain) for d in r.decisions]
        assert {d.check if d.check_kind == "skip_graph" else None for d in records} == {expected}
        errors = [d.error for d in records]
        assert errors == [None] * len(records) if error is None else all(error in (e or "") for e in errors)
        assert all((d.reason is not None) == (explain and expected is not None and error is None) for d in records)
