"""The memory-quality benchmark: the synthetic graphs at several sizes, and how its summary reads them."""

from __future__ import annotations

from typing import Any

from sections.memory import render_memory


def _row(case: str, arena: int, lb: int, greedy: int) -> dict[str, Any]:
    plan = {"arena": arena, "lower_bound": lb, "buffers": 10, "strategy": "portfolio", "assign_s": 0.1}
    plan |= {"offsets_s": 0.05, "safe": True, "runs": 1}
    return {"case": case, "nodes": 100, "plan": plan, "greedy": {**plan, "arena": greedy}}


def test_the_summary_follows_each_synthetic_workload_across_sizes() -> None:
    rows = [
        _row("squeezenet (keep)", 100, 100, 100),
        _row("synthetic llm 10k", 100, 100, 100),
        _row("synthetic split 10k", 101, 100, 110),
        _row("synthetic llm 100k", 1000, 1000, 1000),
        _row("synthetic split 100k", 1020, 1000, 1100),
    ]
    text = render_memory({"rows": rows})
    assert "| synthetic split 100k | 100 | 10 |" in text
    assert (
        "as they grow: llm 1.0000 (10k; greedy 1.0000) → 1.0000 (100k; greedy 1.0000); "
        "split 1.0100 (10k; greedy 1.1000) → 1.0200 (100k; greedy 1.1000)."
    ) in text
    assert "on 3 of 5 graphs" in text  # at the lower bound: the model and both llm rows


def test_one_size_of_each_workload_needs_no_growth_summary() -> None:
    text = render_memory({"rows": [_row("synthetic llm 10k", 100, 100, 100), _row("vgg19 (keep)", 5, 4, 5)]})
    assert "as they grow" not in text and "on 1 of 2 graphs" in text
