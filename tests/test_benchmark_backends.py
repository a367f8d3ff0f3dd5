"""The back-ends benchmark (benchmarks/backends.py): both back-ends run, agree, and the table reads as it says."""

from __future__ import annotations

import backends
from sections.common import count_bytecodes, geomean, table, warm
from sections.engine import fixture_graphs

from rulepass.api import load_rules


def test_both_back_ends_agree_on_the_fixtures_and_the_table_shows_their_ratio() -> None:
    logged: list[str] = []
    data = backends.bench(load_rules(), [("fixtures", fixture_graphs())], warm, count_bytecodes, logged.append, 1)
    (row,) = data["rows"]
    assert row["identical"] and row["ops_closures"] > row["ops_generated"] > 0
    assert logged and logged[0].startswith("  back-ends: fixtures: closures / generated ")
    row |= {"generated_s": 1e-3, "closures_s": 3e-3, "ops_generated": 100, "ops_closures": 250}
    text = backends.render(data, table, geomean)
    assert "| fixtures | 1 | 3 | **3.00** | 2.50 | yes |" in text
    assert "geometric mean **3.00** (min 3.00, max 3.00); bytecodes 2.50" in text
