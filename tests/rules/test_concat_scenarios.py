"""ConcatNotaskPass through the library API and the command line: marks, locks, explanations, gating, rule edits.

The decisions themselves are pinned by the fixtures (test_fixtures.py); this file checks what fixtures cannot:
the producer output-desc locks (spec §2.4 step 8), what `explain` reports, dry runs, pass gating (§2.1), that a
rule is changed by editing YAML alone, and that the rule's CheckDim agrees with the Python reference
the test oracle `check_dim_oracle.check_dim_for_input` (spec §3) on random descs.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from check_dim_oracle import InputDesc, check_dim_for_input, pack_check_dim
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rulepass.compiler import formats
from rulepass.compiler.graph_file import dump_graph, load_graph_text
from rulepass.compiler.ir import ComputeGraph, Node, OpDesc, TensorDesc
from rulepass.rules import bundled_rules_dir

from rulepass import api
from rulepass.cli import main

RULES_DIR = bundled_rules_dir()
CONCAT_RULE = RULES_DIR / "concat_notask.yaml"
PACK_RULE = RULES_DIR / "pack_notask.yaml"
BASE_RULE = RULES_DIR / "notask_base.yaml"  # the checks both use (GE's NotaskPassBase)
NOTASK_RULES = [BASE_RULE, CONCAT_RULE, PACK_RULE]
PASS = "ConcatNotaskPass"
LOCK = "can_reused_for_concat_optimize"
FIRED_ATTRS = {
    "_no_task": True,
    "_no_padding_continuous_input": True,
    "_output_reuse_input": True,
    "_reuse_input_on_dim_index": 0,
}

ALLGATHER = """
name: allgather_concat
nodes:
  - {name: shard_0, type: Data, attrs: {index: 0}, outputs: ["float16[1024,12288]"]}
  - {name: shard_1, type: Data, attrs: {index: 1}, outputs: ["float16[1024,12288]"]}
  - {name: allgather_0, type: HcomAllGather, inputs: [shard_0], outputs: ["float16[2048,12288]"]}
  - {name: allgather_1, type: HcomAllGather, inputs: [shard_1], outputs: ["float16[2048,12288]"]}
  - {name: concat, type: ConcatD, attrs: {concat_dim: 0}, inputs: [allgather_0, allgather_1],
     outputs: ["float16[4096,12288]"]}
  - {name: relu, type: ReLU, inputs: [concat], outputs: ["float16[4096,12288]"]}
  - {name: Node_Output, type: NetOutput, inputs: [relu]}
"""

ALLGATHER_RESHAPE = """
name: allgather_reshape_concat
nodes:
  - {name: shard_0, type: Data, attrs: {index: 0}, outputs: ["float16[8,256]"]}
  - {name: shard_1, type: Data, attrs: {index: 1}, outputs: ["float16[8,256]"]}
  - {name: allgather_0, type: HcomAllGather, inputs: [shard_0], outputs: ["float16[16,256]"]}
  - {name: allgather_1, type: HcomAllGather, inputs: [shard_1], outputs: ["float16[16,256]"]}
  - {name: reshape_0, type: Reshape, inputs: [allgather_0], outputs: ["float16[4096]"]}
  - {name: concat, type: ConcatD, attrs: {concat_dim: 0}, inputs: [reshape_0, allgather_1], outputs: ["float16[8192]"]}
  - {name: Node_Output, type: NetOutput, inputs: [concat]}
"""

# One graph, one miss per concat (each explained below).
MISSES = """
name: misses
nodes:
  - {name: a1, type: ReLU, outputs: ["float16[1,16]"]}
  - {name: b1, type: ReLU, outputs: ["float16[1,8]"]}
  - {name: unaligned, type: ConcatD, attrs: {concat_dim: 0}, inputs: [a1, b1], outputs: ["float16[1,24]"]}
  - {name: a2, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: data2, type: Data, attrs: {index: 0}, outputs: ["float16[16,16]"]}
  - {name: from_data, type: ConcatD, attrs: {concat_dim: 0}, inputs: [a2, data2], outputs: ["float16[32,16]"]}
  - {name: a3, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: b3, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: first, type: ConcatD, attrs: {concat_dim: 0}, inputs: [a3, b3], outputs: ["float16[32,16]"]}
  - {name: c3, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: second, type: ConcatD, attrs: {concat_dim: 0}, inputs: [c3, b3], outputs: ["float16[32,16]"]}
  - {name: a4, type: Conv2D,
     outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,31,16,16]}]}
  - {name: b4, type: Conv2D,
     outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,32,16,16]}]}
  - {name: c_31, type: ConcatD, attrs: {concat_dim: 1}, inputs: [b4, a4],
     outputs: [{dtype: float16, format: NC1HWC0, origin_format: NCHW, origin_shape: [1,63,16,16]}]}
  - {name: a5, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: b5, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: concat_lxslice, type: ConcatD, attrs: {concat_dim: 0}, inputs: [a5, b5], outputs: ["float16[32,16]"]}
  - {name: a6, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: b6, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: into_virtual, type: ConcatD, attrs: {concat_dim: 0}, inputs: [a6, b6], outputs: ["float16[32,16]"]}
  - {name: reshape6, type: Reshape, inputs: [into_virtual], outputs: ["float16[512]"]}
  - {name: virtual6, type: Identity, attrs: {_no_task: true}, inputs: [reshape6], outputs: ["float16[512]"]}
"""


@pytest.fixture(scope="module")
def rules() -> api.RuleSet:
    """The two no-task rule files and their shared checks (other bundled rules play no part in these scenarios)."""
    return api.load_rules(NOTASK_RULES)


def graph(text: str) -> ComputeGraph:
    """A graph from graph-file text."""
    return load_graph_text(text, "scenario.yaml")


def node(g: ComputeGraph, name: str) -> Node:
    """The node `name` of `g` (root graph)."""
    n = g.node(name)
    assert n is not None, name
    return n


def concat_decision(result: api.OptimizeResult, name: str) -> api.Decision:
    """The ConcatNotaskPass decision for `name`."""
    (d,) = [d for d in result.decisions if d.rule == PASS and d.node == name]
    return d


def rule_line(rule_file: Path, check: str) -> int:
    """1-based line of `- name: <check>` in a rule file."""
    lines = rule_file.read_text(encoding="utf-8").splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if re.fullmatch(rf"\s*- name: {check}\s*", line)]
    assert len(hits) == 1, (check, hits)
    return hits[0]


# ---- what a fired concat sets (spec §2.4 step 8) ---------------------------------------------------------------
def test_fired_concat_attrs_and_allgather_locks(rules: api.RuleSet) -> None:
    g = graph(ALLGATHER)
    result = api.optimize(g, rules)
    assert concat_decision(result, "concat").fired
    concat = node(g, "concat")
    for k, v in FIRED_ATTRS.items():
        assert concat.op.attrs[k] == v and type(concat.op.attrs[k]) is type(v), k
    for producer in ("allgather_0", "allgather_1"):
        desc = node(g, producer).op.output_descs[0]
        assert desc.attrs[LOCK] is False
        assert "can_reused_for_pack_optimize" not in desc.attrs  # the Pack lock is a different attribute
    # Only the producers' output descs carry the lock: not the concat's input copies, not its output.
    assert all(LOCK not in d.attrs for d in concat.op.input_descs + concat.op.output_descs)
    # Nothing else changes: the shards and the ReLU are untouched.
    assert all(not n.op.attrs.get("_no_task") for n in g.nodes_in_insertion_order() if n.name != "concat")


def test_reshape_case_locks_the_reshape_output_not_the_allgather(rules: api.RuleSet) -> None:
    g = graph(ALLGATHER_RESHAPE)
    assert concat_decision(api.optimize(g, rules), "concat").fired
    assert node(g, "reshape_0").op.output_descs[0].attrs[LOCK] is False
    assert LOCK not in node(g, "allgather_0").op.output_descs[0].attrs
    assert node(g, "allgather_1").op.output_descs[0].attrs[LOCK] is False  # a direct producer


def test_lock_blocks_a_second_concat_on_the_same_output(rules: api.RuleSet) -> None:
    g = graph(MISSES)
    result = api.optimize(g, rules)
    assert concat_decision(result, "first").fired
    second = concat_decision(result, "second")
    assert second.check == "IsPreOutAnchorCanReuse"
    assert "input 1 of second (from b3:0)" in second.elements[0]


# ---- explain ---------------------------------------------------------------------------------------------------
EXPLAINED = [
    ("unaligned", ("InputCheck", "CheckTensorAlign"), "input 1 of unaligned (from b1:0)"),
    ("from_data", ("InputCheck", "IsPreNodeTypeValid"), "input 1 of from_data (from data2:0)"),
    ("second", ("InputCheck", "IsPreOutAnchorCanReuse"), "input 1 of second (from b3:0)"),
    ("c_31", ("CheckDim", "CheckDimAlignment"), "input 1 of c_31"),
    ("into_virtual", ("OutputCheck", "NextNodeNotVirtual"), "input 0 of reshape6 (from into_virtual:0)"),
    ("concat_lxslice", ("LxFusionCheck",), None),
]


@pytest.mark.parametrize(("name", "path", "element"), EXPLAINED, ids=[e[0] for e in EXPLAINED])
def test_explain_names_check_element_and_rule_line(
    rules: api.RuleSet, name: str, path: tuple[str, ...], element: str | None
) -> None:
    (d,) = [d for d in api.explain(graph(MISSES), name, rules) if d.rule == PASS]
    assert not d.fired
    assert d.check == path[-1] and d.check_path == path
    if element is None:
        assert d.elements == ()
    else:
        assert len(d.elements) == 1 and element in d.elements[0]
    assert d.check_span is not None
    assert Path(d.check_span.file).resolve() == BASE_RULE.resolve()  # every candidate check is a shared one
    assert d.check_span.line == rule_line(BASE_RULE, path[-1])
    assert d.reason is not None and d.reason.leaf().message
    # The trace lists every check evaluated, in rule order, and ends at the failing one.
    assert d.trace and d.trace[-1].path == path and not d.trace[-1].passed
    assert all(t.passed for t in d.trace[:-1])
    assert d.summary().startswith(f"missed at {'/'.join(path)}")


def test_explain_c_31_shows_the_values(rules: api.RuleSet) -> None:
    (d,) = [d for d in api.explain(graph(MISSES), "c_31", rules) if d.rule == PASS]
    assert d.reason is not None
    values = dict(d.reason.leaf().values)
    assert values.get("d.origin_shape[dim]") == "31" and values.get("align[dim]") == "16"
    # Input 0 (C = 32) passed CheckDim; input 1 failed.
    checked = [t.elements[0] for t in d.trace if t.path == ("CheckDim", "CheckDimAlignment")]
    assert len(checked) == 2 and "input 0 of c_31" in checked[0] and "input 1 of c_31" in checked[1]
    assert values.get("d.origin_shape") == "[1, 31, 16, 16]"


def test_explain_graph_exclusion(rules: api.RuleSet) -> None:
    g = graph(ALLGATHER.replace("name: allgather_concat", "name: single_op\nattrs: {_single_op_scene: true}"))
    (d,) = [d for d in api.explain(g, "concat", rules) if d.rule == PASS]
    assert (d.check, d.check_kind) == ("SingleOpScene", "skip_graph")
    # the skip is the NotaskPass template's, in the base file
    assert d.check_span is not None and d.check_span.line == rule_line(BASE_RULE, "SingleOpScene")
    assert d.reason is not None and "_single_op_scene" in d.reason.text + repr(d.reason.values)
    # a compile asks for no explanation: the skipped graph's record is the same, without its reason
    (c,) = [d for r in api.optimize(g, rules, explain=False).reports for d in r.decisions if d.rule == PASS]
    assert c.reason is None and dataclasses.replace(d, reason=None, trace=()) == c


def test_cli_explain_text(tmp_path: Path) -> None:
    path = tmp_path / "misses.yaml"
    path.write_text(MISSES, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [
            "explain",
            str(path),
            "--node",
            "c_31",
            "--rule",
            PASS,
            *(a for f in NOTASK_RULES for a in ("--rules", str(f))),
        ],
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert f"{PASS} on c_31 (ConcatD) in graph 'misses': MISSED at CheckDim/CheckDimAlignment" in text
    assert "FAIL  CheckDim/CheckDimAlignment  [i = input 1 of c_31 (from" in text
    line = rule_line(BASE_RULE, "CheckDimAlignment")
    assert re.search(rf"decided by check 'CheckDimAlignment' defined at \S*notask_base\.yaml:{line}:\d+", text)


# ---- dry run and gating ----------------------------------------------------------------------------------------
def test_dry_run_changes_nothing(rules: api.RuleSet) -> None:
    g = graph(ALLGATHER)
    before = dump_graph(g)
    result = api.optimize(g, rules, dry_run=True)
    d = concat_decision(result, "concat")
    assert d.fired and d.dry_run
    assert dump_graph(g) == before
    assert "_no_task" not in node(g, "concat").op.attrs
    assert LOCK not in node(g, "allgather_0").op.output_descs[0].attrs


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [({"disabled": [PASS]}, "disabled by option"), ({"level": "O2"}, "not registered at level O2")],
    ids=["disabled", "O2"],
)
def test_gating_skips_the_pass(rules: api.RuleSet, kwargs: dict[str, Any], why: str) -> None:
    g = graph(ALLGATHER)
    before = dump_graph(g)
    result = api.optimize(g, rules, **kwargs)
    (report,) = [r for r in result.reports if r.name == PASS]
    assert not report.ran and why in report.skipped_reason
    assert not [d for d in result.decisions if d.rule == PASS]
    assert dump_graph(g) == before


def test_reports_are_values_and_follow_the_gates(rules: api.RuleSet) -> None:
    """A pass manager keeps the report of a pass that does not run and returns it on every run: reports are
    immutable, a running pass's report is new each run, and a change of level or of the disabled set is seen."""
    from rulepass.compiler.passes import build_pass_manager

    pm = build_pass_manager(rules, disabled=[PASS])
    first, second = pm.run(graph(ALLGATHER)), pm.run(graph(ALLGATHER))
    assert [r.name for r in first] == [p.name for p in pm.passes]
    for a, b in zip(first, second, strict=True):
        assert a == b
        assert (a is b) == (not a.ran or a.kind == "placeholder")
    with pytest.raises(AttributeError):
        first[0].ran = False  # type: ignore[misc]
    (concat,) = [r for r in first if r.name == PASS]
    assert not concat.ran and concat.decisions == ()
    pm.disabled = set()
    (concat,) = [r for r in pm.run(graph(ALLGATHER)) if r.name == PASS]
    assert concat.ran and [d.fired for d in concat.decisions] == [True]
    (concat,) = [r for r in pm.run(ComputeGraph("empty")) if r.name == PASS]  # no candidate: counters of none
    assert concat.ran and concat.decisions == () and concat.stats is not None
    assert concat.stats.to_json() == {"pass": PASS, "candidates": 0, "fired": 0, "graphs_skipped": 0, "misses": {}}
    pm.level = "O2"
    (concat,) = [r for r in pm.run(graph(ALLGATHER)) if r.name == PASS]
    assert not concat.ran and "not registered at level O2" in concat.skipped_reason


@pytest.mark.parametrize(
    ("change", "message", "hint"),
    [
        ({"level": "O9"}, "unknown optimisation level 'O9'; expected one of O0, O1, O2, O3", None),
        ({"level": None}, "unknown optimisation level None", None),
        ({"disabled": {"ConcatNotaskPas"}}, "cannot disable unknown pass 'ConcatNotaskPas'", PASS),
        ({"disabled": PASS}, "must be a collection of pass names, not str 'ConcatNotaskPass'", f"['{PASS}']"),
        ({"disabled": [PASS, 3]}, "a pass to disable must be named by a string, not int 3", None),
        ({"disabled": 3}, "must be a collection of pass names, not int 3", None),
    ],
    ids=["level", "no-level", "misspelt-pass", "one-string", "not-a-name", "not-a-collection"],
)
def test_a_wrong_level_or_disabled_pass_is_refused_when_set(
    rules: api.RuleSet, change: dict[str, Any], message: str, hint: str | None
) -> None:
    """The pass manager checks its level and disabled passes whenever they are set, not only when built: one
    clear error, and the settings it had stay in force."""
    from rulepass.compiler.passes import build_pass_manager

    pm = build_pass_manager(rules, level="O3", disabled=["PackNotaskPass"])
    ((name, value),) = change.items()
    with pytest.raises(api.RulepassError) as got:
        setattr(pm, name, value)
    (diag,) = got.value.diagnostics
    assert diag.code == "usage" and message in diag.message
    assert hint is None or (diag.hint is not None and hint in diag.hint)
    assert (pm.level, pm.disabled) == ("O3", frozenset({"PackNotaskPass"}))
    (concat,) = [r for r in pm.run(graph(ALLGATHER)) if r.name == PASS]
    assert concat.ran and [d.fired for d in concat.decisions] == [True]
    with pytest.raises(api.RulepassError) as again:  # the library calls refuse it alike
        api.optimize(graph(ALLGATHER), rules, **change)
    assert message in again.value.diagnostics[0].message


@pytest.mark.parametrize(
    ("args", "why"),
    [(["--disable", PASS], "disabled by option"), (["--level", "O2"], "not registered at level O2")],
    ids=["disabled", "O2"],
)
def test_cli_gating_skips_the_pass(tmp_path: Path, args: list[str], why: str) -> None:
    path = tmp_path / "allgather.yaml"
    path.write_text(ALLGATHER, encoding="utf-8")
    marked = tmp_path / "out.yaml"
    rule_args = [a for f in NOTASK_RULES for a in ("--rules", str(f))]
    out, err = io.StringIO(), io.StringIO()
    assert main(["optimize", str(path), "-o", str(marked), *rule_args, *args], out=out, err=err) == 0, err.getvalue()
    assert f"{PASS}: skipped ({why}" in out.getvalue()
    assert "_no_task" not in marked.read_text(encoding="utf-8")
    # Without the option the same command marks the concat.
    out = io.StringIO()
    assert main(["optimize", str(path), "-o", str(marked), *rule_args], out=out, err=err) == 0
    assert f"{PASS}: 1 candidate(s), 1 fired" in out.getvalue()
    assert "_no_task: true" in marked.read_text(encoding="utf-8")


# ---- a rule changed by editing its YAML only ------------------------------------------------------------------
# `sixteen_bytes` has two 1x8 fp16 inputs: 16 bytes each.
DATA_AND_UNALIGNED = """
name: edit_me
nodes:
  - {name: a1, type: ReLU, outputs: ["float16[1,8]"]}
  - {name: b1, type: ReLU, outputs: ["float16[1,8]"]}
  - {name: sixteen_bytes, type: ConcatD, attrs: {concat_dim: 1}, inputs: [a1, b1], outputs: ["float16[1,16]"]}
  - {name: data, type: Data, attrs: {index: 0}, outputs: ["float16[16,16]"]}
  - {name: a2, type: ReLU, outputs: ["float16[16,16]"]}
  - {name: from_data, type: ConcatD, attrs: {concat_dim: 0}, inputs: [a2, data], outputs: ["float16[32,16]"]}
"""

EDITS = [
    # CheckTensorAlign: relax the 32-byte block to 16 bytes.
    ("% 32 == 0", "% 16 == 0", "sixteen_bytes", "CheckTensorAlign"),
    # IsPreNodeTypeValid: let Data producers through.
    ("['Data', 'RefData',", "['RefData',", "from_data", "IsPreNodeTypeValid"),
]


def _optimize_json(graph_path: Path, *extra: str) -> dict[str, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["optimize", str(graph_path), "--format", "json", *extra], out=out, err=err)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    return {d["node"]: d for d in doc["decisions"] if d["pass"] == PASS}


@pytest.mark.parametrize(("old", "new", "target", "check"), EDITS, ids=["tensor-align-16", "allow-data"])
def test_editing_a_copy_of_the_rule_file_changes_decisions(
    tmp_path: Path, old: str, new: str, target: str, check: str
) -> None:
    original_text = BASE_RULE.read_text(encoding="utf-8")
    copy = tmp_path / "rules"
    shutil.copytree(RULES_DIR, copy, ignore=shutil.ignore_patterns("fixtures", "__pycache__", "*.py"))
    base_copy = copy / BASE_RULE.name  # the concat rule's checks are the shared ones
    text = base_copy.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"expected exactly one `{old}` in {BASE_RULE.name}"
    base_copy.write_text(text.replace(old, new), encoding="utf-8")
    graph_path = tmp_path / "edit_me.yaml"
    graph_path.write_text(DATA_AND_UNALIGNED, encoding="utf-8")

    before = _optimize_json(graph_path, "--rules", str(RULES_DIR))
    after = _optimize_json(graph_path, "--rules", str(copy))
    assert before[target]["check"] == check and not before[target]["fired"]
    assert after[target]["fired"], after[target]
    # The other concat of the graph keeps its decision.
    for other in set(before) - {target}:
        assert (after[other]["fired"], after[other]["check"]) == (before[other]["fired"], before[other]["check"])
    assert BASE_RULE.read_text(encoding="utf-8") == original_text  # the bundled file is untouched


# ---- the rule's CheckDim against the Python reference (spec §3) -------------------------------------------------
ORIGIN_FORMATS = ["ND", "NCHW", "NHWC", "HWCN", "CHWN", "NDHWC", "NCDHW", "DHWCN", "DHWNC"]
STORAGE_FORMATS = [
    *ORIGIN_FORMATS,
    "NC1HWC0",
    "NDC1HWC0",
    "FRACTAL_Z",
    "FRACTAL_NZ",
    "FRACTAL_NZ_C0_32",
    "NC1HWC0_C04",
    "FRACTAL_Z_3D",
    "C1HWNCoC0",
]
DTYPES = ["float16", "float", "bfloat16", "int32", "int8", "uint8", "int4", "uint1"]
DIMS = st.sampled_from([1, 1, 1, 1, 2, 3, 15, 16, 17, 30, 32, 48, 64])
CHECKDIM_CHECKS = {"ConcatDimInRange", "GetAlignedShape", "TransferDims", "CheckRealDim", "CheckDimAlignment"}


def _expected_check(reason: str) -> str:
    """The rule check a `check_dim_for_input` (or `pack_check_dim`) reason corresponds to."""
    for prefix, check in [
        ("CheckDim: dim", "ConcatDimInRange"),
        ("CheckDim: pack axis", "PackDimInRange"),
        ("CheckDim: axis", "LastAxisAllOnes"),
        ("GetAlignedShape", "GetAlignedShape"),
        ("TransferDims", "TransferDims"),
        ("CheckRealDim", "CheckRealDim"),
        ("CheckDimAlignment", "CheckDimAlignment"),
    ]:
        if reason.startswith(prefix):
            return check
    raise AssertionError(f"unexpected reference reason {reason!r}")


# the rule against the oracle: 400 random cases, the same ones on every run
CROSS_CHECK = settings(
    max_examples=400, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def input_descs(draw: st.DrawFn, ofmt: str, fmt: str, dtype: str, rank: int) -> TensorDesc:
    """A desc with a storage shape GE would give it (or a random one where none is modelled), 32-byte sized."""
    oshape = tuple(draw(st.lists(DIMS, min_size=rank, max_size=rank)))
    attrs: dict[str, Any] = {}
    reshape_type: str | None = None
    if draw(st.integers(0, 3)):  # mostly: a rank-deficient origin with ExpandDimension's mask (spec §3.4 NOT_FULL_SIZE)
        reshape_type = formats.default_reshape_type(ofmt, rank)
        mask = formats.reshape_type_mask(ofmt, reshape_type or "", format=fmt, rank=rank)
        if mask:
            attrs["_reshape_type_mask"] = mask
    shape = formats.transfer_shape(ofmt, fmt, oshape, dtype, reshape_type=reshape_type)
    if shape is None or not shape or min(shape) <= 0:
        shape = tuple(draw(st.lists(DIMS, min_size=1, max_size=6)))
    # CheckTensorAlign must pass: scaling the last storage axis never changes CheckDim's verdict (CheckRealDim
    # only reads the axes before the real one, which is never the last), and the reference gets the same shape.
    if formats.size_in_bytes(formats.shape_size(shape), dtype) % 32:
        shape = (*shape[:-1], shape[-1] * 256)
    return TensorDesc(tuple(shape), dtype, fmt, oshape, ofmt, attrs)


# Storage formats GE pairs with each origin family (drawn more often than arbitrary pairs, so cases get past
# GetAlignedShape / TransferDims and reach CheckRealDim / CheckDimAlignment).
FAMILY = {
    4: ["NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ", "NCHW", "NHWC", "HWCN"],
    5: ["NDC1HWC0", "FRACTAL_NZ", "NDHWC", "NCDHW"],
}
FULL_RANK = {"ND": 4, "NCHW": 4, "NHWC": 4, "HWCN": 4, "CHWN": 4, "NDHWC": 5, "NCDHW": 5, "DHWCN": 5, "DHWNC": 5}


@st.composite
def concat_cases(draw: st.DrawFn) -> tuple[list[TensorDesc], int]:
    """Two input descs (same formats and dtype, independent shapes) and a raw concat_dim."""
    ofmt = draw(st.sampled_from(ORIGIN_FORMATS))
    full = FULL_RANK[ofmt]
    rank = draw(st.sampled_from([full, full, full, 1, 2, 3, 4, 5]))
    fmt = draw(
        st.one_of(st.sampled_from(FAMILY[full] + (["ND"] if ofmt == "ND" else [])), st.sampled_from(STORAGE_FORMATS))
    )
    dtype = draw(st.sampled_from(DTYPES))
    rank1 = rank if draw(st.integers(0, 4)) else draw(st.integers(1, 5))
    descs = [draw(input_descs(ofmt, fmt, dtype, rank)), draw(input_descs(ofmt, fmt, dtype, rank1))]
    dim = draw(st.one_of(st.integers(-rank, rank - 1), st.integers(-rank - 1, rank)))
    return descs, dim


def concat_graph(descs: list[TensorDesc], dim: int) -> ComputeGraph:
    """ReLU producers (one per desc) into a ConcatD whose input descs are those descs."""
    g = ComputeGraph("xcheck")
    producers = [
        g.add_node(OpDesc(name=f"p{k}", type="ReLU", output_descs=[d.copy()], output_names=["y"]))
        for k, d in enumerate(descs)
    ]
    concat = g.add_node(
        OpDesc(
            name="concat",
            type="ConcatD",
            attrs={"concat_dim": dim},
            input_descs=[d.copy() for d in descs],
            output_descs=[descs[0].copy()],
            input_names=[f"x{k}" for k in range(len(descs))],
            output_names=["y"],
        )
    )
    for k, p in enumerate(producers):
        g.add_data_edge(p, 0, concat, k)
    return g


@CROSS_CHECK
@given(concat_cases())
def test_rule_checkdim_matches_python_reference(rules: api.RuleSet, case: tuple[list[TensorDesc], int]) -> None:
    descs, dim = case
    norm = dim + len(descs[0].origin_shape) if dim < 0 else dim
    expected: tuple[int, str] | None = None
    for k, d in enumerate(descs):
        reason = check_dim_for_input(
            d.origin_format,
            d.format,
            d.origin_shape,
            d.shape,
            d.dtype,
            norm,
            int(d.attrs.get("_reshape_type_mask", 0)),  # type: ignore[arg-type]
        )
        if reason is not None:
            expected = (k, _expected_check(reason))
            break
    g = concat_graph(descs, dim)
    d = concat_decision(api.optimize(g, rules), "concat")
    if expected is None:
        assert d.fired, d.summary()
        return
    k, check = expected
    assert not d.fired, f"the reference rejects input {k} ({check}) but the rule fired"
    assert d.check in CHECKDIM_CHECKS, f"setup should pass every other check: {d.summary()}"
    assert d.check == check, d.summary()
    assert f"input {k} of concat" in d.elements[0]


# Pack's CheckFormat rejects internal formats other than FRACTAL_NZ before CheckDim: Pack cases use the formats
# it lets through, so every miss is CheckDim's.
PACK_FORMATS = ["ND", "NCHW", "NHWC", "HWCN", "NDHWC", "NCDHW", "FRACTAL_NZ", "FRACTAL_NZ_C0_16"]
PACK_CHECKDIM_CHECKS = (CHECKDIM_CHECKS - {"ConcatDimInRange"}) | {"PackDimInRange", "LastAxisAllOnes"}


@st.composite
def pack_cases(draw: st.DrawFn) -> tuple[list[TensorDesc], int]:
    """Two input descs in formats Pack's CheckFormat accepts (ranks may differ) and a raw axis, often at the
    edges Pack treats apart: 0, rank (the new last axis), negatives, and one past either end."""
    ofmt = draw(st.sampled_from(ORIGIN_FORMATS))
    full = FULL_RANK[ofmt]
    rank = draw(st.sampled_from([full, full, 1, 2, 3, 4, 5]))
    fmt = draw(st.sampled_from(PACK_FORMATS))
    dtype = draw(st.sampled_from(DTYPES))
    ones = draw(st.integers(0, 3)) == 0  # often all-ones inputs, so axis == rank can pass
    descs = []
    for r in (rank, rank if draw(st.integers(0, 4)) else draw(st.integers(1, 5))):
        d = draw(input_descs(ofmt, fmt, dtype, r))
        if ones:
            d = dataclasses.replace(d, origin_shape=(1,) * r)
        descs.append(d)
    axis = draw(st.one_of(st.sampled_from([0, rank, -1, -rank - 1]), st.integers(-rank - 2, rank + 1)))
    return descs, axis


def pack_graph(descs: list[TensorDesc], axis: int) -> ComputeGraph:
    """ReLU producers (one per desc) into a Pack whose input descs are those descs."""
    g = concat_graph(descs, 0)
    pack = g.node("concat")
    assert pack is not None
    pack.op.type = "Pack"
    pack.op.attrs = {"axis": axis}
    return g


@CROSS_CHECK
@given(pack_cases())
def test_pack_checkdim_matches_python_reference(rules: api.RuleSet, case: tuple[list[TensorDesc], int]) -> None:
    descs, axis = case
    expected = pack_check_dim(
        [
            InputDesc(
                d.origin_format,
                d.format,
                d.origin_shape,
                d.shape,
                d.dtype,
                int(d.attrs.get("_reshape_type_mask", 0)),  # type: ignore[arg-type]
            )
            for d in descs
        ],
        axis,
    )
    (d,) = [d for d in api.optimize(pack_graph(descs, axis), rules).decisions if d.rule == "PackNotaskPass"]
    event("fired" if d.fired else str(d.check))
    if expected is None:
        assert d.fired, d.summary()
        return
    k, reason = expected
    check = _expected_check(reason)
    assert not d.fired, f"the reference rejects input {k} ({reason}) but the rule fired"
    assert d.check in PACK_CHECKDIM_CHECKS, f"setup should pass every other check: {d.summary()}"
    assert d.check == check, d.summary()
    assert f"input {k} of concat" in d.elements[0]
