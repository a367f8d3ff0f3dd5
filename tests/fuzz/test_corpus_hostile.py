"""The regression corpus of hostile inputs (issue 38), replayed: each case is one file under
tests/corpus/hostile/<entry point>/ and its expected one-line error in `<file>.expected`; the case must end in
that error (exit 1 or 2), never an internal error, and must damage nothing."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from rulepass.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "hostile"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "split_relu_concat.yaml"

# how each entry point's file is run; FILE is the case
COMMANDS = {
    "graph": ["graph", "check", "FILE"],
    "rules": ["validate", "FILE"],
    "memplan": ["memplan", "FILE"],
    "inputs": ["run", str(EXAMPLE), "--inputs", "FILE", "--max-memory", "1G"],
    "model": ["run", "FILE", "--max-memory", "256M"],
    "onnx": ["import", "FILE", "-o", "-"],
}
CASES = sorted(p for p in CORPUS.glob("*/*") if p.suffix != ".expected")


def _argv(case: Path) -> list[str]:
    if case.parent.name == "cli":  # the command line itself, one argument a line
        return [a.replace("{example}", str(EXAMPLE)) for a in case.read_text().splitlines()]
    return [str(case) if a == "FILE" else a for a in COMMANDS[case.parent.name]]


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_case_ends_in_its_error(case: Path) -> None:
    expected = Path(f"{case}.expected").read_text().strip()
    devices = {p: os.stat(p) for p in ("/dev/null", "/dev/zero", "/dev/urandom")}
    out, err = io.StringIO(), io.StringIO()
    code = main(_argv(case), out=out, err=err)
    assert code in (1, 2), f"exit {code}: {err.getvalue()[:500]}"
    assert expected in err.getvalue(), err.getvalue()[:1000]
    for p, before in devices.items():  # refused, never replaced
        after = os.stat(p)
        assert (after.st_ino, after.st_mode, after.st_rdev) == (before.st_ino, before.st_mode, before.st_rdev)


def test_every_case_has_its_expected_error() -> None:
    assert len(CASES) >= 20
    assert all(Path(f"{c}.expected").is_file() and c.parent.name in (*COMMANDS, "cli") for c in CASES)
