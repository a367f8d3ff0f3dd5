"""The scale benchmark's work count: calls are counted per stage, and their growth is read as the tables say."""

from __future__ import annotations

import gc
from typing import Any

import pytest
import run as bench


def _calls(n: int) -> int:
    total = 0
    for i in range(n):
        total += abs(i)  # one builtin call each
    return total


def _meter(count_calls: bool) -> Any:
    meter = bench._StageMeter(count_calls)
    try:
        meter.start("many")
        _calls(5000)
        meter.start("few")
        _calls(10)
        meter.stop()
    finally:
        gc.callbacks.remove(meter._gc)
    return meter


def test_each_stage_counts_its_own_calls(capsys: pytest.CaptureFixture[str]) -> None:
    stages = _meter(True).stages
    assert 5000 < stages["many"]["calls"] < 5100  # the abs calls, _calls itself, and the meter's own few
    assert 10 < stages["few"]["calls"] < 100
    assert "calls" not in _meter(False).stages["many"]  # timed runs are not profiled
    capsys.readouterr()


def test_the_work_table_reads_growth_per_node_beside_time_and_the_machine() -> None:
    work = {
        "sizes": [1000, 10000],
        "runs": [
            {"workload": "llm", "size": 1000, "nodes": 100, "calls": {"load": 5000, "passes": 2000, "write": 3}},
            {"workload": "llm", "size": 10000, "nodes": 1000, "calls": {"load": 40000, "passes": 22000, "write": 3}},
            {"workload": "cnn", "size": 1000, "nodes": 90, "error": "exit code 1: MemoryError"},
        ],
    }
    scale = {
        "runs": [
            {"workload": "llm", "size": 1000, "nodes": 100, "stages": {"load": {"cpu": 0.01}}},
            {"workload": "llm", "size": 10000, "nodes": 1000, "stages": {"load": {"cpu": 0.13}}},
        ],
        "reference": [{"size": 1000, "walk": 0.2}, {"size": 10000, "walk": 0.3}],
    }
    text = bench.render_work(work, scale)
    assert "| llm 1k | 100 | 50 | 20 | 0.0 | **70** |" in text  # calls per node by stage, then in total
    # load 40 / 50 a node, passes 22 / 20, write (under a call a node) none, in all 62 / 70; CPU 130 / 100 µs a
    # node; the walk 0.3 / 0.2
    assert "| llm 10k vs 1k | 0.80 | 1.10 | — | **0.89** | 1.30 | 1.50 |" in text
    assert "Failed: cnn 1k: exit code 1: MemoryError" in text
    alone = bench.render_work(work)  # no timed run to compare with
    assert "| llm 10k vs 1k | 0.80 | 1.10 | — | **0.89** | — | — |" in alone


def _stages(cpu: float) -> dict[str, dict[str, float]]:
    return {"load": {"wall": cpu, "cpu": cpu, "gc": 0.0, "peak_mib": 100.0, "rss_mib": 90.0}}


def test_huge_pages_runs_are_compared_with_their_own_mode_only() -> None:
    def run(size: int, nodes: int, cpu: float, huge: bool) -> dict[str, Any]:
        mode = {"pages": "huge", "huge_mib": 42.0} if huge else {}
        return {"workload": "llm", "size": size, "nodes": nodes, "stages": _stages(cpu), "rss_before_mib": 50, **mode}

    scale = {
        "sizes": [1000, 10000],
        "runs": [
            run(1000, 100, 0.01, False),
            run(1000, 100, 0.02, True),
            run(10000, 1000, 0.13, False),
            run(10000, 1000, 0.21, True),
        ],
        "reference": [
            {"size": 1000, "build": 1.0, "walk": 0.2, "copy": 1.0},
            {"size": 10000, "build": 1.0, "walk": 0.3, "copy": 1.0},
            {"size": 1000, "pages": "huge", "build": 1.0, "walk": 0.4, "copy": 1.0},
            {"size": 10000, "pages": "huge", "build": 1.0, "walk": 0.4, "copy": 2.0},
        ],
    }
    text = bench.render_scale(scale)
    assert "| llm 10k vs 1k | 1.30 | **1.30** |" in text  # 130 / 100 µs a node
    assert "| llm 10k vs 1k (huge pages) | 1.05 | **1.05** |" in text  # 210 / 200
    assert "| 10k vs 1k | 1.00 | 1.50 | 1.00 | 0.30 |" in text
    assert "| 10k vs 1k (huge pages) | 1.00 | 1.00 | 2.00 | 0.40 |" in text
    assert "| llm 1k (huge pages) | 100 |" in text and "| **100** | 51.2 | 42 |" in text  # AnonHugePages column
    assert "PYTHONMALLOC=malloc" in text
    # the work table's CPU and walk columns read the default runs
    work = {
        "sizes": [1000, 10000],
        "runs": [
            {"workload": "llm", "size": 1000, "nodes": 100, "calls": {"load": 5000}},
            {"workload": "llm", "size": 10000, "nodes": 1000, "calls": {"load": 50000}},
        ],
    }
    assert "| llm 10k vs 1k | 1.00 | **1.00** | 1.30 | 1.50 |" in bench.render_work(work, scale)


def test_huge_pages_need_transparent_huge_pages_and_glibc_2_35(monkeypatch: pytest.MonkeyPatch) -> None:
    modes = {"enabled": "always [madvise] never\n"}

    def read_text(self: Any, *args: Any, **kwargs: Any) -> str:
        if "transparent_hugepage" not in str(self):
            raise AssertionError(str(self))
        if "enabled" not in modes:
            raise FileNotFoundError(str(self))
        return modes["enabled"]

    monkeypatch.setattr(bench.Path, "read_text", read_text)
    monkeypatch.setattr(bench.platform, "libc_ver", lambda: ("glibc", "2.36"))
    assert bench.huge_pages_unavailable() is None
    monkeypatch.setattr(bench.platform, "libc_ver", lambda: ("glibc", "2.31"))
    assert "glibc 2.35 or later" in (bench.huge_pages_unavailable() or "")
    modes["enabled"] = "always madvise [never]\n"
    assert "disabled" in (bench.huge_pages_unavailable() or "")
    del modes["enabled"]
    assert "no transparent huge pages" in (bench.huge_pages_unavailable() or "")
    data = {"sizes": [1000], "runs": [], "reference": [], "huge_pages_unavailable": "no transparent huge pages"}
    assert "No huge-pages runs: no transparent huge pages." in bench.render_scale(data)


def test_a_huge_pages_worker_gets_the_allocator_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    class Done:
        returncode = 0
        stdout = '{"result": {"walk": 1.0}}\n'
        stderr = ""

    def fake_run(cmd: list[str], **kwargs: Any) -> Done:
        seen.append(kwargs.get("env"))
        return Done()

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    for huge in (False, True):
        assert bench._run_worker(["reference", "10"], print, huge_pages=huge)[0] == {"walk": 1.0}
    assert seen[0] is None  # the default mode inherits the environment as it is
    assert seen[1]["PYTHONMALLOC"] == "malloc" and seen[1]["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"
    assert seen[1]["PATH"] == bench.os.environ["PATH"]
