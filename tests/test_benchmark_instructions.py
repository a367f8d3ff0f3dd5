"""The instruction-count benchmark: its arguments are checked before any count starts, and its worker runs both
contenders on the same graphs (and refuses to count when they disagree)."""

from __future__ import annotations

import gc

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


@pytest.mark.parametrize("mode", ["engine", "hand"])
def test_worker_runs_each_mode(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[int] = []
    real = instructions.functools.reduce

    def counted(fn, batches, start):  # type: ignore[no-untyped-def]
        runs.append(len(batches))
        return real(fn, batches, start)

    monkeypatch.setattr(instructions.functools, "reduce", counted)
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
