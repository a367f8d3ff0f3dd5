"""The pipeline (`compiler.pipeline`): stages in order, the compile report, and the opt-in baseline."""

from __future__ import annotations

from rulepass.compiler.pipeline import compile_graph
from rulepass.examples import example_path

from rulepass.api import load_graph


def test_a_compile_plans_the_graph_without_the_no_task_passes_only_when_asked() -> None:
    plain = compile_graph(load_graph(example_path("split_relu_concat.yaml")))
    assert plain.memory.baseline is None and plain.memory.bytes_saved is None
    assert "baseline memory" not in plain.seconds  # no silent second compile
    assert plain.memory.no_task_nodes == ["split", "concat"] and plain.memory.copy_bytes_saved == 12288
    both = compile_graph(load_graph(example_path("split_relu_concat.yaml")), baseline=True)
    assert both.memory.baseline is not None and "baseline memory" in both.seconds
    assert both.memory.bytes_saved == both.memory.baseline.total("feature_map") - both.memory.plan.total("feature_map")
    assert both.memory.bytes_saved == 1024  # offline by default: the Identity GE puts after the input costs its copy
    assert plain.model_text() == both.model_text()  # the baseline changes nothing of the model


def test_the_report_carries_what_the_cli_formats() -> None:
    r = compile_graph(load_graph(example_path("split_relu_concat.yaml")))
    rep = r.report()
    assert rep["graph"] == "split_relu_concat" and rep["nodes"] == 8  # with GE's offline Identity after the input
    quiet = {p["pass"]: p["quiet"] for p in rep["passes"]}
    assert quiet["EnginePlacementPass"] is True and quiet["ConcatNotaskPass"] is False  # by tag, not by name
    assert rep["memory"]["feature_map_without_no_task"] is None and rep["memory"]["copy_bytes_saved"] == 12288
    assert rep["tasks"]["total"] == len(r.tasks.tasks) and set(rep["seconds"]) >= {"passes", "memory", "tasks"}
