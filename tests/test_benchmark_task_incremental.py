"""benchmarks/task_incremental.py: both modes of the streaming table write the same model, and an incremental
compile row says whether its model is the full compile's."""

from __future__ import annotations

import pytest
import task_incremental as ti
from rulepass.compiler.graph_file import load_graph
from rulepass.examples import example_path


@pytest.mark.slow  # two processes, each compiling
def test_the_streaming_rows_compare_the_same_bytes_in_two_processes() -> None:
    rows = ti.stream_rows("split", 300)
    assert [r[1] for r in rows] == ["held", "streamed"] and all(r[-1] == "yes" for r in rows)


def test_an_incremental_row_counts_the_rebuilt_nodes_and_compares_the_bytes() -> None:
    g = load_graph(example_path("conv_nc1hwc0_concat.yaml"))
    node_row = [r for r in ti.incremental_rows([("conv", g)], repeat=1, tries=2) if r[1].startswith("one node")]
    (row,) = node_row
    assert row[2] == "1" and row[-1] == "yes"  # one node rebuilt, the same model as the full compile
