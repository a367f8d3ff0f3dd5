"""The scale benchmark's work count: calls are counted per stage, and their growth is read as the tables say."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import memplan_bench
import pytest
import run as driver
from sections import engine, memplan, scale, workers
from sections.scale_render import render_scale
from sections.work import render_work


def _calls(n: int) -> int:
    total = 0
    for i in range(n):
        total += abs(i)  # one builtin call each
    return total


def _meter(count_calls: bool) -> Any:
    meter = workers._StageMeter(count_calls)
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
    text = render_work(work, scale)
    assert "| llm 1k | 100 | 50 | 20 | 0.0 | **70** |" in text  # calls per node by stage, then in total
    # load 40 / 50 a node, passes 22 / 20, write (under a call a node) none, in all 62 / 70; CPU 130 / 100 µs a
    # node; the walk 0.3 / 0.2
    assert "| llm 10k vs 1k | 0.80 | 1.10 | — | **0.89** | 1.30 | 1.50 |" in text
    assert "Failed: cnn 1k: exit code 1: MemoryError" in text
    alone = render_work(work)  # no timed run to compare with
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
    text = render_scale(scale)
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
    assert "| llm 10k vs 1k | 1.00 | **1.00** | 1.30 | 1.50 |" in render_work(work, scale)


def test_huge_pages_need_transparent_huge_pages_and_glibc_2_35(monkeypatch: pytest.MonkeyPatch) -> None:
    modes = {"enabled": "always [madvise] never\n"}

    def read_text(self: Any, *args: Any, **kwargs: Any) -> str:
        if "transparent_hugepage" not in str(self):
            raise AssertionError(str(self))
        if "enabled" not in modes:
            raise FileNotFoundError(str(self))
        return modes["enabled"]

    monkeypatch.setattr(scale.Path, "read_text", read_text)
    monkeypatch.setattr(scale.platform, "libc_ver", lambda: ("glibc", "2.36"))
    assert scale.huge_pages_unavailable() is None
    monkeypatch.setattr(scale.platform, "libc_ver", lambda: ("glibc", "2.31"))
    assert "glibc 2.35 or later" in (scale.huge_pages_unavailable() or "")
    modes["enabled"] = "always madvise [never]\n"
    assert "disabled" in (scale.huge_pages_unavailable() or "")
    del modes["enabled"]
    assert "no transparent huge pages" in (scale.huge_pages_unavailable() or "")
    data = {"sizes": [1000], "runs": [], "reference": [], "huge_pages_unavailable": "no transparent huge pages"}
    assert "No huge-pages runs: no transparent huge pages." in render_scale(data)


def test_a_huge_pages_worker_gets_the_allocator_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    class Done:
        returncode = 0
        stdout = '{"result": {"walk": 1.0}}\n'
        stderr = ""

    def fake_run(cmd: list[str], **kwargs: Any) -> Done:
        seen.append(kwargs.get("env"))
        return Done()

    monkeypatch.setattr(scale.subprocess, "run", fake_run)
    for huge in (False, True):
        assert scale.run_worker(["reference", "10"], print, huge_pages=huge)[0] == {"walk": 1.0}
    assert seen[0] is None  # the default mode inherits the environment as it is
    assert seen[1]["PYTHONMALLOC"] == "malloc" and seen[1]["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"
    assert seen[1]["PATH"] == scale.os.environ["PATH"]


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


def test_a_round_measures_each_smaller_size_before_and_after_each_larger_one() -> None:
    assert scale.round_order([10_000, 1_000_000, 100_000]) == [10_000, 100_000, 1_000_000, 100_000, 10_000]
    assert scale.round_order([1000]) == [1000]


def test_compiles_run_in_rounds_and_each_stage_keeps_its_mean_and_highest_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    costs = {"1000": [(0.30, 0.10, 120.0), (0.20, 0.40, 110.0), (0.25, 0.15, 130.0), (0.25, 0.15, 100.0)]}
    costs["2000"] = [(0.80, 0.40, 150.0), (1.00, 0.60, 160.0)]

    def fake_worker(args: list[str], log: Any, *, huge_pages: bool = False) -> tuple[Any, Any, str]:
        calls.append(args)
        if args[0] == "generate":
            return {"nodes": int(args[2]), "edges": 1, "file_mib": 1.0}, {}, ""
        if args[0] == "reference":
            return {"build": 1.0, "walk": float(args[1]) / 1000, "copy": 1.0, "huge_mib": None}, {}, ""
        size = Path(args[1]).name.split("_")[1].split(".")[0]
        res = _result(*costs[size].pop(0))
        res["nodes"] = int(size)
        return res, {}, ""

    monkeypatch.setattr(scale, "run_worker", fake_worker)
    monkeypatch.setattr(scale.synthetic, "WORKLOADS", ("llm",))
    data = scale.bench_scale([1000, 2000], False, lambda _: None, repeat=2)
    kinds = [(c[0], Path(c[1]).name if c[0] == "compile" else c[-1]) for c in calls if c[0] != "generate"]
    one_round = [("reference", "1000"), ("reference", "2000"), ("reference", "1000")]
    one_round += [("compile", "llm_1000.json"), ("compile", "llm_2000.json"), ("compile", "llm_1000.json")]
    assert kinds == one_round * 2  # the graphs generated once, then two rounds of 1k, 2k, 1k
    small, _ = data["runs"]
    st = small["stages"]
    assert st["load"]["cpu"] == pytest.approx(0.25) and st["load"]["wall"] == pytest.approx(0.75)  # the mean of 4
    assert st["passes"]["cpu"] == pytest.approx(0.20) and st["load"]["peak_mib"] == 130.0  # the highest peak
    assert [s["round"] for s in small["samples"]] == [0, 0, 1, 1] and small["cpu_least"] == pytest.approx(0.40)
    assert data["reference"][0]["samples"] == [{"round": 0, "walk": 1.0}] * 2 + [{"round": 1, "walk": 1.0}] * 2
    text = render_scale(data)
    assert "compiled in 2 rounds" in text and "order 1k, 2k, 1k" in text
    assert "| llm 1k | 1000 |" in text and "| 450 | 50% |" in text  # 0.45 CPU s a 1000 nodes; (0.6 - 0.4) / 0.4
    # 2k: mean 1.4 CPU s, 700 µs a node, against 450; round by round 600 against (400 + 600) / 2 and 800
    # against 400; the least: 600 against 400
    assert "| **1.56** | 1.20–2.00 | 1.50 |" in text
    assert (
        "**not met**, 0 of 1 pairs of sizes within it (highest 1.56, llm 2k vs 1k; the machine's reference walk 2.00)"
        in text
    )
    assert "| 2k vs 1k | 1.00 | 2.00 | 1.00 | 2.00–2.00 | 2.00 | 0% |" in text  # the walk, paired by round too


def test_a_compile_that_fails_fails_the_graph_and_the_verifier_alone_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outcomes = [
        (_result(0.3, 0.1, 100.0), {}, ""),  # round 1: fine, with the verifier
        (None, {"load": {}, "copy": {}}, "exit code 1: MemoryError"),  # round 2: out of memory in passes
    ]

    def fake_worker(args: list[str], log: Any, *, huge_pages: bool = False) -> tuple[Any, Any, str]:
        return outcomes.pop(0)

    monkeypatch.setattr(scale, "run_worker", fake_worker)
    gen = {"nodes": 1000, "file_mib": 1.0}
    g = scale._ScaledGraph("cnn", 1000, "g", "m", gen, False)
    g.compile(0, lambda _: None)
    g.compile(1, lambda _: None)
    g.compile(2, lambda _: None)  # a failed graph is not compiled again
    failed = {"workload": "cnn", "size": 1000, "generate": gen, "verify": True, "nodes": 1000}
    failed.update(error="failed in passes: exit code 1: MemoryError", stages={"load": {}, "copy": {}})
    assert g.records() == [failed]  # and no figure of the compile that went through
    outcomes[:] = [
        (None, {s: {} for s in scale.STAGES[:5]}, "exit code 1: MemoryError"),  # the verifier ran out
        (_result(0.3, 0.1, 100.0), {}, ""),
    ]
    seen: list[list[str]] = []
    monkeypatch.setattr(
        scale, "run_worker", lambda args, log, huge_pages=False: (seen.append(args), outcomes.pop(0))[1]
    )
    g = scale._ScaledGraph("cnn", 1000, "g", "m", gen, False)
    g.compile(0, lambda _: None)
    assert seen == [["compile", "g", "m"], ["compile", "g", "m", "--no-verify"]]
    first, done = g.records()
    assert first["error"].startswith("failed in verify") and first["verify"] is True
    assert done["verify"] is False and [s["round"] for s in done["samples"]] == [0]


def test_repeat_must_be_at_least_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        driver.main(["--repeat", "0", "--only", "scale"])
    assert exc.value.code == 2 and "--repeat must be at least 1, not 0" in capsys.readouterr().err


def test_the_memplan_section_needs_the_shared_instances_before_any_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(memplan_bench, "DATA", tmp_path / "nowhere")
    ran: list[str] = []
    monkeypatch.setattr(engine, "bench_engine", lambda *a: ran.append("engine"))
    with pytest.raises(SystemExit) as exc:
        driver.main(["--only", "engine,memplan", "--no-write"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "nowhere: no such folder" in err and "leave it out with --only" in err
    assert ran == []  # refused before the engine section ran
    (tmp_path / "nowhere").mkdir()
    assert "no CSV instance" in (memplan_bench.missing_data() or "")


def test_a_failed_memplan_run_is_not_stored_and_fails_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.csv").write_text("id,lower,upper,size\nx,0,1,8\n")
    monkeypatch.setattr(memplan_bench, "DATA", tmp_path)

    class Proc:
        returncode = 1
        stdout = ""
        stderr = "Traceback ...\nValueError: bad row\n"

    monkeypatch.setattr(memplan.subprocess, "run", lambda *a, **k: Proc())
    assert driver.main(["--only", "memplan", "--no-write"]) == 1
    assert "error: memplan: memplan_bench.py exited with 1: ValueError: bad row" in capsys.readouterr().err
    row = {"instance": "a.csv", "buffers": 1, "lower_bound": 8, "baseline_arena": 8, "baseline_ratio": 1.0}
    row.update(planner_arena=16, planner_ratio=2.0, planner_s=0.1, baseline_s=0.1, time_ratio=1.0, valid=False)
    Proc.returncode, Proc.stdout = (
        2,
        json.dumps(
            {
                "machine": {"platform": "p", "cpus": 2, "implementation": "CPython", "python": "3", "budget_work": 1},
                "instances": [row],
            }
        ),
    )
    assert driver.main(["--only", "memplan", "--no-write"]) == 1  # shown, with the invalid row, and failing
    out, err = capsys.readouterr()
    assert "| a.csv | 1 | 8 | 8 | 1.0000 | 16 | 2.0000 |" in out and "| NO |" in out
    assert "error: memplan: a placement is not valid" in err


def test_the_benchmarks_page_is_what_its_sources_render() -> None:
    """docs/benchmarks.md is generated from benchmarks/results.json and the hand-run tables' files: a table edited
    on the page alone would be lost at the next run."""
    from sections.document import load_results, render_doc

    page = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
    assert render_doc(load_results()) == page.read_text(encoding="utf-8"), (
        "docs/benchmarks.md differs from its sources; edit benchmarks/*.md or results.json, then run: "
        "python benchmarks/run.py --render"
    )
