"""The static analysis `validate` runs (dsl/analyse.py). Each warning kind has its snippet in the broken-rule
corpus (tests/corpus/rules/analysis_*.yaml, checked headline by headline there); this file checks what a
headline cannot: that a declared order silences the cross-rule warnings, that loading (as `optimize` does)
does not analyse, and that the bundled rules raise no warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from rulepass.compiler.facts import ge_catalogue
from rulepass.compiler.passes import validate_ge_rules
from rulepass.dsl.load import load_rules, validate_rules

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "rules"


def _codes(path: Path) -> list[str]:
    return [d.code for d in validate_rules([path], ge_catalogue()).diagnostics]


@pytest.mark.parametrize(
    ("snippet", "code", "order"),
    [
        ("analysis_order_hazard.yaml", "order-hazard", "    after: [MarkProducers]\n"),
        ("analysis_order_hazard.yaml", "order-hazard", "    before: [MarkProducers]\n"),
        ("analysis_write_conflict.yaml", "write-conflict", "    after: [ConcatMark]\n"),
    ],
)
def test_a_declared_order_makes_the_dependence_intended(tmp_path: Path, snippet: str, code: str, order: str) -> None:
    text = (CORPUS / snippet).read_text(encoding="utf-8")
    assert code in _codes(CORPUS / snippet)
    second = text.index("  - name:", text.index("  - name:") + 1)  # the second rule
    head = text.index("\n", second) + 1
    ordered = tmp_path / snippet
    ordered.write_text(text[:head] + order + text[head:], encoding="utf-8")
    assert code not in _codes(ordered)


def test_order_through_other_passes_counts(tmp_path: Path) -> None:
    # MarkProducers runs before Middle, Middle before ReluFusion: ordered, though neither names the other
    text = (CORPUS / "analysis_order_hazard.yaml").read_text(encoding="utf-8")
    text = text.replace("    match: [ConcatD]\n", "    match: [ConcatD]\n    before: [Middle]\n")
    text = text.replace("    match: [ReLU]\n", "    match: [ReLU]\n    after: [Middle]\n")
    (tmp_path / "r.yaml").write_text(text, encoding="utf-8")
    assert _codes(tmp_path / "r.yaml") == ["unknown-pass", "unknown-pass"]  # an error: no analysis
    found = validate_rules([tmp_path / "r.yaml"], ge_catalogue(), known_passes=["Middle"]).diagnostics
    assert [d.code for d in found] == []


def test_loading_does_not_analyse() -> None:
    rs = load_rules([CORPUS / "analysis_unreachable_check.yaml"], ge_catalogue(), generate=False)
    assert rs.rules and not rs.diagnostics


def test_the_bundled_rules_raise_no_warning() -> None:
    found = validate_ge_rules()
    assert found.diagnostics == [], [d.render() for d in found.diagnostics]


def test_a_rule_read_in_a_shared_check_is_analysed_once(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(
        """
shared_checks:
  - name: Ranked
    require: node.input_descs[0].rank >= 0
rules:
  - {name: A, match: [ConcatD], checks: [{use: Ranked}]}
  - {name: B, match: [Pack], checks: [{use: Ranked}]}
""",
        encoding="utf-8",
    )
    assert _codes(tmp_path / "r.yaml") == ["constant-condition"]
