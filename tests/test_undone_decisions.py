"""A decision a later pass undoes reads as undone, by which pass and why, in text and JSON of every command.

GE resolves this graph's conflict with an Identity (rules/mem_layout_conflict.yaml); the undo is the last resort
for a conflict no Identity rule resolved, shown here with that rule disabled."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rulepass.api import compile_graph, load_graph, optimize
from rulepass.cli import main

GRAPH = str(Path(__file__).parent / "data" / "zero_copy_conflict.yaml")
WHY = "xa:0 and concat:0 would share bytes though neither contains the other"
IDENTITY_PASS = "NoPaddingInputOnNoPaddingOutputPass"
OFF = ("--disable", IDENTITY_PASS)


def _cli(*args: str) -> str:
    out = io.StringIO()
    assert main(list(args), out=out, err=io.StringIO()) == 0
    return out.getvalue()


def test_the_api_says_which_decision_was_undone_and_the_graph_agrees() -> None:
    g = load_graph(GRAPH)
    result = optimize(g, disabled=[IDENTITY_PASS])
    undone = result.undone()
    [(i, undo)] = undone.items()
    d = result.decisions[i]
    assert (d.rule, d.node, undo.by) == ("ConcatNotaskPass", "concat", "MemLayoutConflictPass")
    assert WHY in undo.reason
    assert "_no_task" not in g.node("concat").op.attrs  # type: ignore[union-attr]
    assert compile_graph(load_graph(GRAPH), disabled=[IDENTITY_PASS]).memory.no_task_nodes == ["split"]


def test_by_default_an_identity_keeps_both_zero_copy_ops() -> None:
    g = load_graph(GRAPH)
    assert not optimize(g).undone()
    assert [str(p) for p in g.node("concat").in_peers] == ["r0_0_concat_Identity:0", "y2:0"]  # type: ignore[union-attr]
    assert compile_graph(load_graph(GRAPH)).memory.no_task_nodes == ["split", "concat"]


def test_optimize_text_and_json() -> None:
    text = _cli("optimize", GRAPH, *OFF)
    row = next(line for line in text.splitlines() if line.startswith("ConcatNotaskPass ") and "concat" in line)
    assert "fired, then UNDONE by MemLayoutConflictPass: " + WHY in row
    assert "ConcatNotaskPass: 1 candidate(s), 1 fired, 0 missed, 1 undone later by MemLayoutConflictPass" in text
    doc = json.loads(_cli("optimize", GRAPH, *OFF, "--format", "json"))
    concat = [d for d in doc["decisions"] if d["node"] == "concat" and d["pass"] == "ConcatNotaskPass"]
    assert concat[0]["undone"]["by"] == "MemLayoutConflictPass" and WHY in concat[0]["undone"]["reason"]
    split = [d for d in doc["decisions"] if d["node"] == "split"]
    assert split[0]["undone"] is None


def test_explain_text_and_json() -> None:
    text = _cli("explain", GRAPH, *OFF, "--node", "concat")
    assert (
        "ConcatNotaskPass on concat (ConcatD) in graph 'conflict': FIRED, then UNDONE by MemLayoutConflictPass" in text
    )
    assert "MemLayoutConflictPass on concat (ConcatD) in graph 'conflict': UNDID the earlier zero-copy decision" in text
    doc = json.loads(_cli("explain", GRAPH, *OFF, "--node", "concat", "--format", "json"))
    assert [d["undone"]["by"] if d["undone"] else None for d in doc] == ["MemLayoutConflictPass", None]


def test_compile_text_and_json() -> None:
    text = _cli("compile", GRAPH, *OFF, "--quiet")
    assert "ConcatNotaskPass: 1 candidate(s), 1 fired, 1 undone later by MemLayoutConflictPass" in text
    assert "undone: ConcatNotaskPass on concat (ConcatD), by MemLayoutConflictPass: " + WHY in text
    doc = json.loads(_cli("compile", GRAPH, *OFF, "--quiet", "--format", "json"))
    assert [(u["pass"], u["node"], u["by"]) for u in doc["undone"]] == [
        ("ConcatNotaskPass", "concat", "MemLayoutConflictPass")
    ]
