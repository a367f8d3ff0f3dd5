"""benchmarks/onnx_backend_sweep.py measures models of the installed onnx package's backend test data, against its
stored outputs: three single-op cases pass, a wrong expected output is caught, an unreadable case is a row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx_backend_sweep as sweep
import pytest

NAMES = ("test_add", "test_relu", "test_concat_1d_axis_0")


@pytest.fixture(scope="module")
def node() -> dict[str, sweep.Case]:
    """The three node cases, as the installed onnx package generates them."""
    return {c.name: c for c in sweep.node_cases() if c.name in NAMES}


@pytest.mark.slow
def test_three_node_models_pass(node: dict[str, sweep.Case]) -> None:
    assert sorted(node) == sorted(NAMES)
    for name in NAMES:
        row = sweep.measure(node[name])
        assert (row.outcome, row.error) == ("passed", ""), row


@pytest.mark.slow
def test_a_wrong_expected_output_is_caught(node: dict[str, sweep.Case]) -> None:
    case = node["test_relu"]
    assert case.outputs is not None
    bad = sweep.Case(case.folder, case.name, case.model, case.inputs, [np.asarray(case.outputs[0]) + 1.0])
    row = sweep.measure(bad)
    assert row.outcome == "wrong" and "max abs error" in row.error, row
    short = sweep.Case(case.folder, case.name, case.model, case.inputs, [np.asarray(case.outputs[0])[:1]])
    assert "shape" in sweep.measure(short).error


def test_a_bad_model_path_is_a_failure_row(tmp_path: Path) -> None:
    row = sweep.measure(sweep.dir_case("simple", tmp_path / "no_such_model"))
    assert row.outcome == "import" and "cannot read the case" in row.error, row
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "model.onnx").write_bytes(b"not a model")
    row = sweep.measure(sweep.dir_case("simple", tmp_path / "junk"))
    assert row.outcome == "import" and row.error, row


def test_an_on_disk_case_reads_its_data_set() -> None:
    case = sweep.dir_case("pytorch-operator", sweep.DATA / "pytorch-operator" / "test_operator_view")
    assert case.problem == "" and case.inputs and case.outputs
    assert sweep.measure(case).outcome == "passed"
