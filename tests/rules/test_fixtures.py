"""The bundled rule fixtures as a test suite: one case per expectation, plus coverage of the concat rule's checks.

Every check of the concat rule (its own in `rules/concat_notask.yaml` and the shared ones of
`rules/notask_base.yaml` it uses) must have at least one fixture expectation that misses at it and passes, and
the rule must fire in at least one: a check added to the rule without fixtures fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from rulepass.compiler.fixtures import CaseResult, fixtures_of, run_fixtures
from rulepass.compiler.passes import load_ge_rules
from rulepass.dsl.rules import Check
from rulepass.rules import bundled_rules_dir

RULES_DIR = bundled_rules_dir()
CONCAT_RULE = RULES_DIR / "concat_notask.yaml"
PACK_RULE = RULES_DIR / "pack_notask.yaml"

# Run once at collection: each expectation becomes its own test case below.
RESULTS, DIAGNOSTICS = run_fixtures([RULES_DIR])


def _case_id(r: CaseResult) -> str:
    return f"{Path(r.fixture).parent.name}/{Path(r.fixture).stem}::{r.node}"


def test_fixtures_are_found() -> None:
    assert not DIAGNOSTICS, [d.render() for d in DIAGNOSTICS]
    assert fixtures_of(CONCAT_RULE), "no fixtures for concat_notask.yaml"
    assert fixtures_of(PACK_RULE), "no fixtures for pack_notask.yaml"
    assert RESULTS


@pytest.mark.parametrize("case", RESULTS, ids=[_case_id(r) for r in RESULTS])
def test_fixture_expectation(case: CaseResult) -> None:
    assert case.ok, f"{case.id}: {case.message}"


# ---- coverage of the rule files' checks ----------------------------------------------------------------------
# read from the loaded rules, where every `use: NAME` is the shared check itself
RULES = {r.name: r.rule for r in load_ge_rules([RULES_DIR]).raise_on_error().rules}


def _walk_checks(checks: tuple[Check, ...]) -> Iterator[tuple[str, bool]]:
    """(name, is_leaf) for every check, nested groups included."""
    for c in checks:
        yield c.name, not c.checks
        yield from _walk_checks(c.checks)


def _rule_check_names(rule: str) -> tuple[set[str], set[str]]:
    """(leaf check and skip_graph names, group names) of the rule (pass) `rule`."""
    leaves = {s.name for s in RULES[rule].skip_graph}
    groups: set[str] = set()
    for name, leaf in _walk_checks(RULES[rule].checks):
        (leaves if leaf else groups).add(name)
    return leaves, groups


def _passing_expectations(rule_file: Path) -> set[str]:
    """The expected outcome ('fired' or a check name) of every fixture case of `rule_file` that passes."""
    ok = {(Path(r.fixture).resolve(), r.node) for r in RESULTS if r.ok}
    seen: set[str] = set()
    for fixture in fixtures_of(rule_file):
        doc = yaml.safe_load(fixture.read_text(encoding="utf-8"))
        for node, want in doc["expect"].items():
            if (fixture.resolve(), node) in ok:
                seen.add(want if isinstance(want, str) else want["check"])
    return seen


def _check_names_of_groups(rule: str) -> dict[str, set[str]]:
    return {c.name: {name for name, leaf in _walk_checks(c.checks) if leaf} for c in RULES[rule].checks if c.checks}


def test_every_concat_check_has_a_missing_fixture() -> None:
    leaves, groups = _rule_check_names("ConcatNotaskPass")
    assert {"SingleOpScene", "IsUnknownShapeOp", "CheckDimAlignment", "LxFusionCheck"} <= leaves  # sanity
    covered = _passing_expectations(CONCAT_RULE)
    missing = sorted(leaves - covered)
    assert not missing, f"checks of {CONCAT_RULE.name} that no passing fixture misses at: {missing}"
    for group, members in _check_names_of_groups("ConcatNotaskPass").items():
        assert members & covered, f"no fixture misses inside check group {group}"
    assert groups  # InputCheck, CheckDim, OutputCheck


def test_concat_rule_fires_in_some_fixture() -> None:
    assert "fired" in _passing_expectations(CONCAT_RULE)


def test_pack_fixtures_cover_its_own_checks() -> None:
    covered = _passing_expectations(PACK_RULE)
    assert {"fired", "IsPreOutAnchorCanReuse", "InternalFormatIsNZ", "CheckDimAlignment", "CheckRealDim"} <= covered


@pytest.mark.parametrize("given", ["../../../outside.yaml", "/etc/passwd", "../../sub/x.yaml"])
def test_a_fixture_rule_file_outside_its_rule_folder_is_refused(tmp_path: Path, given: str) -> None:
    """A fixture could otherwise make `rulepass test` read (and quote) any file (issue 38)."""
    rules = tmp_path / "rules"
    (rules / "fixtures" / "concat_notask").mkdir(parents=True)
    (rules / "concat_notask.yaml").write_text(CONCAT_RULE.read_text())
    (tmp_path / "outside.yaml").write_text("secret: 1\n")
    fixture = rules / "fixtures" / "concat_notask" / "case.yaml"
    fixture.write_text(f"rule_file: {given}\ngraph: {{nodes: []}}\nexpect: {{x: fired}}\n")
    (result,) = run_fixtures([fixture])[0]
    assert not result.ok and "is outside the fixture's rule folder" in result.message and "secret" not in result.message


def _fixture_beside_bundled_rules(tmp: Path, stem: str, text: str) -> Path:
    """A fixture `text` for the rule file `stem`, in a copy of the bundled rules (all of them: the rules are ordered
    against one another)."""
    rules = tmp / "rules"
    (rules / "fixtures" / stem).mkdir(parents=True)
    for f in RULES_DIR.glob("*.yaml"):
        (rules / f.name).write_text(f.read_text())
    fixture = rules / "fixtures" / stem / "case.yaml"
    fixture.write_text(text)
    return fixture


def test_expect_fields_compares_node_fields_and_names_unknown_ones(tmp_path: Path) -> None:
    fixture = _fixture_beside_bundled_rules(
        tmp_path,
        "engine_placement",
        "graph: {nodes: [{name: x, type: Data, attrs: {index: 0}, outputs: ['float16[2]']},"
        " {name: r, type: ReLU, inputs: [x], outputs: ['float16[2]']}]}\n"
        "expect: {x: fired, r: fired}\n"
        "expect_fields:\n"
        "  x: {engine: DNN_VM_GE_LOCAL, kernel_lib: DNN_VM_GE_LOCAL_OP_STORE}\n"
        "  r: {engine: DNN_VM_AICPU, kernel_lib: AIcoreEngine, kernel: x}\n",
    )
    results = {r.node: r for r in run_fixtures([fixture])[0]}
    assert results["x fields"].ok
    bad = results["r fields"]
    assert not bad.ok
    assert "engine='AIcoreEngine' (expected 'DNN_VM_AICPU')" in bad.message
    assert "Node has no field 'kernel'" in bad.message and "kernel_lib" not in bad.message.split(";")[0]


def test_not_a_candidate_holds_only_for_a_node_no_rule_takes_up(tmp_path: Path) -> None:
    """`not-a-candidate`: passes for a node the file's rules never consider, fails (naming the decision) for a
    candidate, whether it fired or missed."""
    fixture = _fixture_beside_bundled_rules(
        tmp_path,
        "concat_notask",
        "graph: {nodes: [{name: a, type: ReLU, outputs: ['float16[1,32]']},"
        " {name: b, type: ReLU, outputs: ['float16[1,32]']},"
        " {name: c, type: ConcatD, attrs: {concat_dim: 0}, inputs: [a, b], outputs: ['float16[2,32]']},"
        " {name: e, type: ReLU, outputs: ['float16[1,8]']}, {name: f, type: ReLU, outputs: ['float16[1,8]']},"
        " {name: g, type: ConcatD, attrs: {concat_dim: 0}, inputs: [e, f], outputs: ['float16[2,8]']}]}\n"
        "expect: {a: not-a-candidate, c: not-a-candidate, g: not-a-candidate}\n",
    )
    results = {r.node: r for r in run_fixtures([fixture])[0]}
    assert results["a"].ok
    assert not results["c"].ok and "a candidate of ConcatNotaskPass (fired)" in results["c"].message
    assert not results["g"].ok and "(missed at CheckTensorAlign)" in results["g"].message
