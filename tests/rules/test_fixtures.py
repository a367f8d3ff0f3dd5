"""The bundled rule fixtures as a test suite: one case per expectation, plus coverage of the concat rule's checks.

Every check of `rules/concat_notask.yaml` must have at least one fixture expectation that misses at it and
passes, and the rule must fire in at least one: a check added to the rule file without fixtures fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from rulepass.compiler.fixtures import CaseResult, fixtures_of, run_fixtures
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
def _walk_checks(checks: list[dict[str, Any]]) -> Iterator[tuple[str, bool]]:
    """(name, is_leaf) for every check, nested groups included."""
    for c in checks:
        subs = c.get("checks")
        yield c["name"], not subs
        if subs:
            yield from _walk_checks(subs)


def _rule_check_names(rule_file: Path) -> tuple[set[str], set[str]]:
    """(leaf check and skip_graph names, group names) of the single rule in `rule_file`."""
    doc = yaml.safe_load(rule_file.read_text(encoding="utf-8"))
    (rule,) = doc["rules"]
    leaves = {s["name"] for s in rule.get("skip_graph", [])}
    groups: set[str] = set()
    for name, leaf in _walk_checks(rule["checks"]):
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


def _check_names_of_groups(rule_file: Path) -> dict[str, set[str]]:
    doc = yaml.safe_load(rule_file.read_text(encoding="utf-8"))
    (rule,) = doc["rules"]
    out: dict[str, set[str]] = {}
    for c in rule["checks"]:
        if c.get("checks"):
            out[c["name"]] = {name for name, leaf in _walk_checks(c["checks"]) if leaf}
    return out


def test_every_concat_check_has_a_missing_fixture() -> None:
    leaves, groups = _rule_check_names(CONCAT_RULE)
    assert {"SingleOpScene", "IsUnknownShapeOp", "CheckDimAlignment", "LxFusionCheck"} <= leaves  # sanity
    covered = _passing_expectations(CONCAT_RULE)
    missing = sorted(leaves - covered)
    assert not missing, f"checks of {CONCAT_RULE.name} that no passing fixture misses at: {missing}"
    for group, members in _check_names_of_groups(CONCAT_RULE).items():
        assert members & covered, f"no fixture misses inside check group {group}"
    assert groups  # InputCheck, CheckDim, OutputCheck


def test_concat_rule_fires_in_some_fixture() -> None:
    assert "fired" in _passing_expectations(CONCAT_RULE)


def test_pack_fixtures_cover_its_own_checks() -> None:
    covered = _passing_expectations(PACK_RULE)
    assert {"fired", "IsPreOutAnchorCanReuse", "InternalFormatIsNZ", "CheckDimAlignment", "CheckRealDim"} <= covered
