"""The fast schema check (fastjsonschema) and jsonschema agree on every corpus file and bundled file."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from rulepass.base.diagnostics import RulepassError
from rulepass.base.schema import is_valid, load_schema
from rulepass.base.yaml_source import load_file

ROOT = Path(__file__).parents[2]
CASES = [
    *((p, "rulepass.dsl", "rule.schema.json") for p in sorted((ROOT / "tests/corpus/rules").rglob("*.yaml"))),
    *((p, "rulepass.dsl", "rule.schema.json") for p in sorted((ROOT / "rules").glob("*.yaml"))),
    *(
        (p, "rulepass.compiler", "graph.schema.json")
        for p in sorted((ROOT / "tests/corpus/graphs").glob("*.*"))
        if p.name != "expected_json.yaml"
    ),
    *((p, "rulepass.compiler", "graph.schema.json") for p in sorted((ROOT / "examples").glob("*.yaml"))),
    *((p, "rulepass.compiler", "fixture.schema.json") for p in sorted((ROOT / "rules/fixtures").rglob("*.yaml"))),
]


def _loadable(path: Path) -> bool:
    try:
        load_file(path)
    except RulepassError:
        return False  # broken YAML/JSON: the schema is never consulted
    return True


CASES = [c for c in CASES if _loadable(c[0])]


@pytest.mark.parametrize(("path", "package", "schema"), CASES, ids=[str(c[0].relative_to(ROOT)) for c in CASES])
def test_fast_and_full_schema_checks_agree(path: Path, package: str, schema: str) -> None:
    data = load_file(path).data
    full = Draft202012Validator(load_schema(package, schema)).is_valid(data)
    assert is_valid(data, package, schema) == full
