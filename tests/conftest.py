"""Shared test setup: the benchmark harness's modules (`benchmarks/`: the hand-written pass, the synthetic graphs,
the runner) are importable by name, as the runner itself imports them."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _private_rule_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test (and every process a test starts) uses a cache folder of the session's, never the user's."""
    import os

    os.environ["RULEPASS_CACHE_DIR"] = str(tmp_path_factory.mktemp("rulepass-cache"))
    os.environ.pop("RULEPASS_NO_CACHE", None)
