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


def _result(load: float, passes: float, peak: float) -> dict[str, Any]:
    stage = {"wall": 0.0, "gc": 0.0, "rss_mib": 90.0}
    return {
        "nodes": 1000,
        "rss_before_mib": 50.0,
        "huge_mib": None,
        "stages": {
            "load": {**stage, "cpu": load, "wall": load + 0.5, "peak_mib": peak},
            "passes": {**stage, "cpu": passes, "wall": passes + 0.5, "peak_mib": 100.0},
        },
    }


def test_repeated_compiles_keep_each_stages_least_cpu_and_highest_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = [_result(0.30, 0.10, 120.0), _result(0.20, 0.40, 110.0), _result(0.25, 0.15, 130.0)]
    calls: list[list[str]] = []

    def fake_worker(args: list[str], log: Any, *, huge_pages: bool = False) -> tuple[Any, Any, str]:
        calls.append(args)
        return attempts[len(calls) - 1], {}, ""

    monkeypatch.setattr(bench, "_run_worker", fake_worker)
    runs: list[dict[str, Any]] = []
    gen = {"nodes": 1000, "file_mib": 1.0}
    res = bench._compile_scaled("llm", 1000, "g.json", "m.json", gen, False, runs, lambda _: None, 3)
    assert res is not None and len(calls) == 3 and calls[0] == calls[2] == ["compile", "g.json", "m.json"]
    st = runs[0]["stages"]
    assert st["load"]["cpu"] == 0.20 and st["load"]["wall"] == 0.70  # the second repeat's load stage, whole
    assert st["passes"]["cpu"] == 0.10 and st["passes"]["wall"] == 0.60  # the first repeat's passes
    assert st["load"]["peak_mib"] == 130.0  # but the highest peak any repeat reached
    assert runs[0]["cpu_repeats"] == pytest.approx([0.40, 0.60, 0.40])
    text = bench.render_scale({"sizes": [1000], "runs": runs, "reference": [], "repeat": 3})
    assert "compiled 3 times" in text and "| 300 | 50% |" in text  # 0.30 CPU s a 1000 nodes; (0.6 - 0.4) / 0.4
    once = bench.render_scale({"sizes": [1000], "runs": [{**runs[0], "cpu_repeats": [0.3]}], "reference": []})
    assert "spread" not in once and "compiled" not in once


def test_a_repeat_that_fails_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = [(_result(0.3, 0.1, 100.0), {}, ""), (None, {"load": {}}, "exit code 1: MemoryError")]

    def fake_worker(args: list[str], log: Any, *, huge_pages: bool = False) -> tuple[Any, Any, str]:
        return outcomes.pop(0)

    monkeypatch.setattr(bench, "_run_worker", fake_worker)
    runs: list[dict[str, Any]] = []
    gen = {"nodes": 1000, "file_mib": 1.0}
    assert bench._compile_scaled("cnn", 1000, "g", "m", gen, False, runs, lambda _: None, 2) is None
    assert runs == [
        {
            "workload": "cnn",
            "size": 1000,
            "generate": gen,
            "verify": True,
            "error": "failed in copy: exit code 1: MemoryError",  # the stage after load
            "stages": {"load": {}},
            "nodes": 1000,
        }
    ]


def test_the_reference_walk_repeated_keeps_its_least_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    walks = [{"build": 2.0, "walk": 0.5, "copy": 1.0, "huge_mib": None}, {"build": 1.0, "walk": 0.4, "copy": 3.0}]

    def fake_worker(args: list[str], log: Any, *, huge_pages: bool = False) -> tuple[Any, Any, str]:
        assert args[0] == "reference"
        return walks.pop(0), {}, ""

    monkeypatch.setattr(bench, "_run_worker", fake_worker)
    best, err = bench._best_reference(1000, False, 2, lambda _: None)
    assert err == "" and best == {"build": 1.0, "walk": 0.4, "copy": 1.0, "huge_mib": None, "walk_repeats": [0.5, 0.4]}
    ref = [{"size": 1000, **best}, {"size": 10000, **best, "walk": 0.5, "walk_repeats": [0.5, 0.6]}]
    assert "| 10k vs 1k | 1.00 | 1.25 | 1.00 | 0.50 | 20% |" in bench.render_scale({"runs": [], "reference": ref})


def test_repeat_must_be_at_least_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["--repeat", "0", "--only", "scale"])
    assert exc.value.code == 2 and "--repeat must be at least 1, not 0" in capsys.readouterr().err
