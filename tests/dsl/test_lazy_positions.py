"""Positions found on demand: JSON read by the json module, YAML graph files read without positions first.

Both must report every mistake exactly as the eager loader (the YAML event reader with positions) does: same
codes, messages, spans and hints, and documents read from either path must hold the same data and ranges.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from rulepass.compiler.graph_file import graph_from_doc, load_graph_text

from rulepass.base.diagnostics import RulepassError
from rulepass.base.json_positions import JsonRanges
from rulepass.base.yaml_source import MAX_ALIAS_EXPANSION, MAX_DEPTH, YamlDoc, _load_yaml, load_text

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "graphs"
YAML_FILES = sorted(p.name for p in CORPUS.iterdir() if p.suffix == ".yaml" and p.stem != "expected_json")


def eager(text: str, name: str) -> YamlDoc:
    """The reference: the YAML event reader with positions, as every file was read before."""
    return _load_yaml(text, name, max_depth=MAX_DEPTH, max_alias_expansion=MAX_ALIAS_EXPANSION)


def outcome(make: Any, name: str) -> list[tuple[Any, ...]] | str:
    """Every diagnostic (code, message, position, hint) of loading and building a graph, or 'ok'."""
    try:
        graph_from_doc(make(), Path(name).stem)
    except RulepassError as exc:
        return [
            (d.code, d.message, d.span and (d.span.line, d.span.col, d.span.end_line, d.span.end_col), d.hint)
            for d in exc.diagnostics
        ]
    return "ok"


@pytest.mark.parametrize("name", YAML_FILES)
def test_lazy_yaml_reports_as_eager(name: str) -> None:
    text = (CORPUS / name).read_text(encoding="utf-8")
    assert outcome(lambda: load_text(text, name, lazy_positions=True), name) == outcome(lambda: eager(text, name), name)


def _as_json(name: str) -> str | None:
    """The corpus file as JSON text, or None when it has no JSON form (a YAML syntax error, a tag, NaN...)."""
    try:
        data = yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))
        return json.dumps(data, indent=1, allow_nan=False)
    except (yaml.YAMLError, ValueError, TypeError):
        return None


JSON_FILES = [n for n in YAML_FILES if _as_json(n) is not None]


@pytest.mark.parametrize("name", JSON_FILES)
def test_json_reports_as_eager(name: str) -> None:
    """Every corpus mistake that survives as JSON is reported at the same place as by the YAML reader."""
    text = _as_json(name)
    assert text is not None
    json_name = name.replace(".yaml", ".json")
    assert outcome(lambda: load_text(text, json_name), json_name) == outcome(lambda: eager(text, json_name), json_name)


def test_json_positions_are_found_only_when_asked() -> None:
    text = json.dumps({"name": "g", "nodes": [{"name": "x", "type": "Data", "outputs": ["float[2]"]}]}, indent=1)
    doc = load_text(text, "g.json")
    assert isinstance(doc.ranges, JsonRanges)  # found from the text when asked, not read again as YAML
    load_graph_text(text, "g.json")
    ref = eager(text, "g.json")
    assert doc.data == ref.data
    assert (doc.ranges, doc.key_ranges, doc.styles) == (ref.ranges, ref.key_ranges, ref.styles)


def test_lazy_yaml_equals_eager() -> None:
    text = (ROOT / "examples" / "allgather_concat.yaml").read_text(encoding="utf-8")
    lazy = load_text(text, "a.yaml", lazy_positions=True)
    assert lazy._locate is not None
    ref = eager(text, "a.yaml")
    assert lazy.data == ref.data
    assert (lazy.ranges, lazy.key_ranges, lazy.styles) == (ref.ranges, ref.key_ranges, ref.styles)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"name": "g",\n "nodes": [],\n "name": "h"}', "duplicate-key"),  # JSON keeps the last; YAML refuses
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "yaml-depth"),
        ('{"name": "x\ud800"}', "encoding"),  # a lone surrogate (text, not a file)
    ],
)
def test_json_refused_by_the_yaml_reader_is_reported_as_before(text: str, code: str) -> None:
    with pytest.raises(RulepassError) as got:
        load_text(text, "bad.json")
    with pytest.raises(RulepassError) as ref:
        eager(text, "bad.json")
    assert got.value.diagnostics[0].code == code
    assert got.value.diagnostics == ref.value.diagnostics


def test_json_nested_to_the_limit_loads() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert load_text(text, "deep.json").data == eager(text, "deep.json").data


def test_json_duplicate_key_in_lazy_yaml_names_the_first() -> None:
    text = "name: g\nnodes: []\nname: h\n"
    with pytest.raises(RulepassError, match=r"duplicate key 'name' \(first defined on line 1\)"):
        load_text(text, "dup.yaml", lazy_positions=True)


@pytest.mark.parametrize("indent", [None, 0, 1, 3, "\t"])
def test_json_ranges_equal_the_yaml_readers(indent: int | str | None) -> None:
    """The ranges found on demand from JSON text are the YAML reader's, whatever the layout and escapes."""
    data = {
        "name": 'g\u00e9 "q" \\',  # (not U+2028: YAML counts it a line break, the diagnostics do not)
        "k\u00e9y": [[], {}, [1, -2.5e-3, True, None, {"a": [{"b": "c"}]}]],
        "nodes": [{"name": "x", "type": "Data", "outputs": ["float[2]"], "attrs": {"n": 10**30}}],
    }
    for ascii_only in (True, False):
        text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
        doc, ref = load_text(text, "g.json"), eager(text, "g.json")
        assert (doc.ranges, doc.key_ranges, doc.styles) == (ref.ranges, ref.key_ranges, ref.styles)


def test_json_error_reads_only_the_containers_on_its_path() -> None:
    """Reporting a problem deep in a large JSON document scans the containers on the problem's path, not the whole
    document (which held hundreds of megabytes of ranges for a few megabytes of text)."""
    nodes = [{"name": f"n{i}", "type": "Relu", "outputs": ["float16[4]"]} for i in range(2000)]
    nodes[1500]["type"] = 5  # type: ignore[assignment]
    text = json.dumps({"nodes": nodes})
    doc = load_text(text, "big.json")
    with pytest.raises(RulepassError) as got:
        graph_from_doc(doc, "big")
    assert "node 'n1500' field 'type': expected a string" in str(got.value)
    positions = doc.ranges.positions  # type: ignore[attr-defined]
    assert positions.containers_scanned() <= 6
