"""The instruction-count benchmark: its arguments are checked before any count starts, and its worker runs both
contenders on the same graphs (and refuses to count when they disagree)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import instructions
import pytest


def test_unknown_case_is_one_error() -> None:
    with pytest.raises(SystemExit, match="unknown case 'nosuch'"):
        instructions.main(["nosuch"])


def test_negative_copies_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert instructions.main(["fixtures", "--copies", "-1"]) == 2
    assert "--copies must be a positive count" in capsys.readouterr().err


def test_missing_valgrind_is_one_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.main(["fixtures"]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err


def _reduces(monkeypatch: pytest.MonkeyPatch, seen: Callable[[list[Any]], int]) -> list[int]:
    """Every `functools.reduce` call the worker makes, as `seen(its items)`; the calls still run."""
    calls: list[int] = []
    real = instructions.functools.reduce

    def counted(fn, items, start):  # type: ignore[no-untyped-def]
        calls.append(seen(items))
        return real(fn, items, start)

    monkeypatch.setattr(instructions.functools, "reduce", counted)
    return calls


@pytest.mark.parametrize("mode", ["engine", "hand"])
def test_worker_runs_each_mode(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _reduces(monkeypatch, len)
    try:
        instructions.main(["--worker", mode, "fixtures", "2"])
    finally:
        gc.enable()  # the worker turns the collector off for the counted runs
    assert runs == [2]  # every counted run is made inside the one reduce callgrind counts


def test_worker_refuses_an_unknown_mode() -> None:
    with pytest.raises(SystemExit, match="unknown mode 'none'"):
        instructions.worker("none", "fixtures", 1)


def test_worker_refuses_disagreeing_contenders(monkeypatch: pytest.MonkeyPatch) -> None:
    import handwritten_concat as hand

    monkeypatch.setattr(hand, "decide", lambda node, graph: "IsUnknownShapeOp")
    with pytest.raises(SystemExit, match="disagree on fixtures"):
        instructions.worker("engine", "fixtures", 1)


def test_scale_arguments_are_checked_before_any_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="unknown scale case 'gpt:10'"):
        instructions.main(["--scale", "gpt:10"])
    with pytest.raises(SystemExit, match="unknown scale case 'split'"):
        instructions.main(["--scale", "split:10000", "split"])
    assert instructions.main(["--scale"]) == 2
    assert instructions.main(["split:1000", "--cache-sim"]) == 2
    err = capsys.readouterr().err
    assert "--scale needs WORKLOAD:SIZE cases" in err and "--cache-sim goes with --scale" in err


def test_the_scale_worker_marks_every_stage_inside_one_reduce(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    marks: list[int] = []
    reduces = _reduces(monkeypatch, lambda _: len(marks))  # the marks made before each reduce
    monkeypatch.setattr(instructions.os, "getppid", lambda: marks.append(1))
    out = tmp_path / "stages.txt"
    instructions.scale_worker("llm:300", str(out))
    *stages, end, nodes = out.read_text().split("\n")
    assert reduces == [0] and len(marks) == len(stages) + 1  # no mark before the counted reduce; one a stage, end
    assert stages[:2] == ["load", "copy"] and stages[-1] == "write" and "verify" in stages and end == "end"
    assert int(nodes) > 250 and (tmp_path / "model.json").stat().st_size > 0


def _dump(path: Path, events: str, totals: str) -> None:
    path.write_text(f"version: 1\ncreator: callgrind-3.19.0\nevents: {events}\nfn=main\n0 1\nsummary: {totals}\n")


def test_each_stage_gets_the_dump_after_its_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    class Done:
        returncode = 0
        stderr = ""

    def fake_callgrind(cmd: list[str], **kwargs: object) -> Done:
        out = Path(next(a for a in cmd if a.startswith("--callgrind-out-file=")).split("=", 1)[1])
        assert "--dump-before=os_getppid" in cmd and "--cache-sim=yes" in cmd
        Path(cmd[-1]).write_text("load\ncopy\nend\n1000")
        for k, totals in enumerate(["5 0", "7000 10", "3000 2", "9 0"], start=1):  # before load, load, copy, after
            _dump(out.parent / f"{out.name}.{k}", "Ir DLmr", totals)
        return Done()

    monkeypatch.setattr(instructions.subprocess, "run", fake_callgrind)
    nodes, stages = instructions.count_stages("split:1000", cache_sim=True)
    assert nodes == 1000 and stages == {"load": {"Ir": 7000, "DLmr": 10}, "copy": {"Ir": 3000, "DLmr": 2}}
    assert instructions._per_node(stages, "total", "Ir", nodes) == 10.0
