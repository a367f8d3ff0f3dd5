"""The short fixed-seed fuzzing run of CI (issue 38): every entry point, byte-mutated seeds and hypothesis
strategies, never an internal error. `scripts/fuzz.py` runs the same harness for as long as asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_harness import (
    ENTRY_POINTS,
    REPO,
    Result,
    argv_for,
    expression_strategy,
    graph_strategy,
    inputs_for,
    memplan_strategy,
    rule_text,
    run_argv,
    run_entry,
)
from hypothesis import HealthCheck, given, settings

COUNT = 12  # mutated inputs per entry point in CI; the long run takes thousands
CI = settings(max_examples=25, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip


def _clean(r: Result, what: object) -> None:
    assert r.outcome in ("error", "accepted"), f"{r.outcome} on {what!r}: {r.headline}"


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_mutated_inputs_give_clean_errors(entry: str, tmp_path: Path) -> None:
    for k, data in enumerate(inputs_for(entry, 0, COUNT)):
        _clean(run_entry(entry, data, tmp_path), f"{entry} input {k} of seed 0")


def test_command_lines_give_clean_errors() -> None:
    examples = [str(REPO / "examples" / "split_relu_concat.yaml")]
    for argv in argv_for(0, 30, examples):
        _clean(run_argv(argv), argv)


@CI
@given(graph_strategy())
def test_generated_graphs(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _clean(run_entry("graph-json", data, tmp_path_factory.mktemp("g")), data)


@CI
@given(expression_strategy())
def test_generated_expressions(tmp_path_factory: pytest.TempPathFactory, expr: str) -> None:
    _clean(run_entry("rules", rule_text(expr), tmp_path_factory.mktemp("r")), expr)


@CI
@given(memplan_strategy())
def test_generated_buffer_csvs(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _clean(run_entry("memplan", data, tmp_path_factory.mktemp("m")), data)


def test_chains_of_lets_stop_at_the_limit(tmp_path: Path) -> None:
    r = run_entry("rules", rule_text("v149 > 0", lets=150), tmp_path)
    assert r.outcome == "error" and "counting the lets it reads; the limit is 64" in r.headline


def test_an_oversized_rule_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:
        f.truncate(16 * 1024 * 1024 + 1)  # sparse: nothing to read, the size alone refuses it
    r = run_argv(["validate", str(path)])
    assert r.code == 1 and "over the 16777216-byte limit" in r.headline
