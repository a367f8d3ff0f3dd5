"""Shared test setup: the benchmark harness's modules (`benchmarks/`: the hand-written pass, the synthetic graphs,
the runner) are importable by name, as the runner itself imports them."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
