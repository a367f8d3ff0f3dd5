"""Reporting N errors in a graph file is linear in N (issue 38: 8,000 bad descriptors took 179 s, because each
diagnostic scanned every range of the document to find its path again). Counted, not timed."""

from __future__ import annotations

import json
from collections.abc import ItemsView
from typing import Any

import pytest
from rulepass.compiler.graph_file import load_graph_text

from rulepass.base import yaml_source
from rulepass.base.diagnostics import RulepassError

SCANS = [0]


class _Counted(dict[Any, Any]):
    def items(self) -> ItemsView[Any, Any]:
        SCANS[0] += 1
        return super().items()


def test_the_range_tables_are_scanned_a_fixed_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ranges", "key_ranges"):
        prop = getattr(yaml_source.YamlDoc, name)
        monkeypatch.setattr(yaml_source.YamlDoc, name, property(lambda self, _p=prop: _Counted(_p.fget(self))))
    nodes = [{"name": f"n{i}", "type": "Data", "outputs": [{"dtype": "float16", "shape": "x"}]} for i in range(300)]
    with pytest.raises(RulepassError) as exc:
        load_graph_text(json.dumps({"nodes": nodes}), "bad.json")
    assert len(exc.value.diagnostics) == 300
    assert "node 'n299' field 'outputs[0].shape'" in exc.value.diagnostics[-1].message
    assert SCANS[0] <= 4  # once per table, not once per error
