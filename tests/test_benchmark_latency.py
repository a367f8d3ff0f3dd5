"""The command-latency benchmark's table (benchmarks/cli_latency.py): targets read as the issue states them."""

from __future__ import annotations

import cli_latency


def test_render_marks_each_target() -> None:
    rows = [
        {"command": "python -c pass", "cpu": 0.03, "ratio": 1.0, "target_s": None, "target_ratio": None, "met": True},
        {
            "command": "rulepass --version",
            "cpu": 0.07,
            "ratio": 2.33,
            "target_s": None,
            "target_ratio": 2.0,
            "met": False,
        },
        {
            "command": "validate rules/ (warm)",
            "cpu": 0.2,
            "ratio": 6.67,
            "target_s": 0.25,
            "target_ratio": None,
            "met": True,
        },
    ]
    text = cli_latency.render({"rounds": 3, "python": "3.11.7", "rows": rows})
    assert "| python -c pass | 0.030 | 1.00 |  |  |" in text
    assert "| rulepass --version | 0.070 | 2.33 | <= 2x | **no** |" in text
    assert "| validate rules/ (warm) | 0.200 | 6.67 | <= 0.25 s | yes |" in text
