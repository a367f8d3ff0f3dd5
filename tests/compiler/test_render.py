"""Pictures (`compiler.render`): the graph DOT, the memory and timeline SVGs, the ONNX export, the report page."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET

import pytest
from rulepass.compiler.render.dot import focus_nodes, graph_dot
from rulepass.compiler.render.graphviz import dot_digest, layout
from rulepass.compiler.render.memory_svg import memory_svg
from rulepass.compiler.render.report import GRAPH_SVG_END, ReportSection, report_html
from rulepass.compiler.render.timeline_svg import timeline_svg
from rulepass.compiler.render.view import CompileView, view_of_graph, view_of_model
from rulepass.examples import example_path

from rulepass.api import compile_graph, load_graph
from rulepass.base.diagnostics import RulepassError

SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


def _view(name: str = "allgather_concat.yaml") -> CompileView:
    return view_of_graph(load_graph(example_path(name)))


def test_the_zero_copy_group_gives_each_input_its_offset_in_the_output() -> None:
    view = _view()
    (group,) = view.zero_copy_groups()
    assert group.node == "concat"
    placed = {m.role: (m.tensor, m.offset) for m in group.members}
    assert placed == {"in 0": ("allgather_0:0", 0), "in 1": ("allgather_1:0", 50331648), "out 0": ("concat:0", 0)}
    assert [m.role for m in group.parts()] == ["in 0", "in 1"]  # a concat's pieces are its inputs
    (split,) = [g for g in _view("split_relu_concat.yaml").zero_copy_groups() if g.op_type.startswith("Split")]
    assert all(m.role.startswith("out ") for m in split.parts())  # a split's are its outputs


def test_the_dot_shows_virtual_ops_offsets_streams_events_and_decisions() -> None:
    view = _view()
    dot = graph_dot(view)
    assert dot == graph_dot(_view())  # the same bytes for the same graph
    assert "ConcatD (virtual)" in dot and "\\u2713 ConcatNotaskPass" not in dot and "✓ ConcatNotaskPass" in dot
    assert '@ +50331648", tooltip=' in dot and '@ +0", tooltip=' in dot
    assert dot.count('label="event ') == 2 and "stream 1" in dot and "stream 2" in dot
    assert dot.count("@ +") == 2  # the output of the concat is the whole, not a piece: no offset on it


def test_a_miss_tooltip_holds_the_failing_check_its_values_and_where_it_is_defined() -> None:
    dot = graph_dot(_view("tutorial_misaligned.yaml"))
    line = next(x for x in dot.splitlines() if x.strip().startswith("n") and 'label="concat\\n' in x)
    assert "\\u2717" not in line and "✗ ConcatNotaskPass @ CheckTensorAlign" in line
    tooltip = line.split("tooltip=", 1)[1]
    assert "missed at InputCheck/CheckTensorAlign" in tooltip and "16 % 32" in tooltip
    assert "i.desc.shape = [1, 8]" in tooltip and "notask_base.yaml:" in tooltip
    assert 'color="#d4700a"' in line  # orange border: missed


def test_dot_quotes_names_that_would_break_it() -> None:
    from rulepass.compiler.render.dot import quote

    assert quote('a"b\\n\nc') == '"a\\"b\\\\n\\nc"'


def test_focus_keeps_the_neighbourhood_and_says_what_it_hides() -> None:
    view = _view("split_relu_concat.yaml")
    assert focus_nodes(view, "concat", 0) == {"concat"}
    one = focus_nodes(view, "concat", 1)
    assert "concat" in one and len(one) > 1 and one <= focus_nodes(view, "concat", 2)
    dot = graph_dot(view, focus="concat", depth=1)
    assert "not shown)" in dot and "within 1 edge(s) of concat" in dot
    with pytest.raises(RulepassError, match="no node 'concta'") as info:
        graph_dot(view, focus="concta")
    assert "concat" in (info.value.diagnostics[0].hint or "")
    with pytest.raises(RulepassError, match="--depth must be 0 or more"):
        graph_dot(view, focus="concat", depth=-1)


def test_a_model_file_gives_the_same_picture_less_the_decisions() -> None:
    graph = load_graph(example_path())
    model = json.loads(compile_graph(graph).model_text())
    from_model = view_of_model(model, "allgather_concat")
    from_graph = _view()
    assert from_model.from_model and not from_graph.from_model and from_model.decisions == []
    assert from_model.zero_copy_groups() == from_graph.zero_copy_groups()
    assert from_model.events == from_graph.events and from_model.tasks == from_graph.tasks
    assert memory_svg([("m", from_model.plan)], "t") == memory_svg([("m", from_graph.plan)], "t")
    assert "holds no decisions" in graph_dot(from_model)
    with pytest.raises(RulepassError, match="lacks what a picture needs"):
        view_of_model({"model_def": {"task": []}}, "broken")


def test_the_memory_picture_outlines_groups_and_marks_peak_and_lower_bound() -> None:
    view = _view()
    assert view.compared is not None and view.compared_label == "without the no-task passes"
    svg = memory_svg([("with", view.plan), (view.compared_label, view.compared)], "memory")
    assert svg == memory_svg([("with", view.plan), (view.compared_label, view.compared)], "memory")
    root = ET.fromstring(svg)  # well-formed, self-contained XML
    panels = [g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"]
    assert [p.get("data-region") for p in panels] == ["feature_map", "feature_map", "input", "input"]
    groups = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "zero-copy"]
    assert len(groups) == 1 and "allgather_1:0 at +50331648" in (groups[0].findtext(f"{SVG}title") or "")
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert sum(t.startswith("peak ") for t in texts) == 4 and sum(t.startswith("lower bound ") for t in texts) == 4
    tips = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any(t.startswith("relu:0: offset 100663808") for t in tips)
    assert "href" not in svg and "<image" not in svg


def test_before_rules_compares_with_the_plan_under_the_old_rules() -> None:
    from rulepass.rules import bundled_rules_dir

    from rulepass.api import load_rules

    old = load_rules([bundled_rules_dir()])
    view = view_of_graph(load_graph(example_path()), before_rules=old)
    assert view.compared_label == "before the rule edit" and view.compared is not None
    assert view.compared.total("feature_map") == view.plan.total("feature_map")  # the same rules: the same plan


def test_the_timeline_has_a_row_per_stream_and_joins_each_event() -> None:
    view = _view()
    root = ET.fromstring(timeline_svg(view.tasks, "tasks"))
    tasks = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "task"]
    assert len(tasks) == len(view.tasks) == 7
    assert len([x for x in root.iter(f"{SVG}line") if x.get("class") == "event"]) == 2
    rows = [t.text for t in root.iter(f"{SVG}text") if (t.text or "").startswith("stream ")]
    assert rows == ["stream 1", "stream 2"]
    assert "no task" in timeline_svg([], "none")


def test_the_onnx_export_carries_the_decisions_as_attributes() -> None:
    onnx = pytest.importorskip("onnx")
    from rulepass.compiler.render.onnx_export import onnx_bytes

    data = onnx_bytes(_view("tutorial_misaligned.yaml"))
    assert data == onnx_bytes(_view("tutorial_misaligned.yaml"))
    model = onnx.load_from_string(data)
    concat = next(n for n in model.graph.node if n.name == "concat")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in concat.attribute}
    (decision,) = attrs["rulepass_decisions"]
    assert b"CheckTensorAlign" in decision and attrs["rulepass_type"] == b"ConcatD" and concat.domain == "ge"
    fired = onnx.load_from_string(onnx_bytes(_view()))
    virtual = next(n for n in fired.graph.node if n.name == "concat")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in virtual.attribute}
    assert attrs["rulepass_virtual"] == 1 and b"in 1: allgather_1:0 at +50331648" in attrs["rulepass_zero_copy"][1]
    assert any(b"waits for event 0" in e for e in attrs["rulepass_events"])


def test_without_graphviz_one_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(RulepassError, match="needs Graphviz's `dot`, which is not installed") as info:
        layout("digraph g {}", "svg")
    assert "apt-get install graphviz" in (info.value.diagnostics[0].hint or "")
    with pytest.raises(RulepassError, match="must be one of svg, png"):
        layout("digraph g {}", "pdf")


@needs_dot
def test_graphviz_svg_names_its_dot_and_not_graphviz_version() -> None:
    dot = graph_dot(_view())
    svg = layout(dot, "svg").decode()
    assert f"DOT sha256:{dot_digest(dot)}" in svg and "Generated by graphviz" not in svg
    assert svg == layout(dot, "svg").decode()
    assert layout(dot, "png").startswith(b"\x89PNG")
    with pytest.raises(RulepassError, match="Graphviz's dot failed"):
        layout("digraph {", "svg")


def test_the_report_has_every_part_and_no_external_reference() -> None:
    view = _view("tutorial_misaligned.yaml")
    dot = graph_dot(view)
    extra = ReportSection("corpus-diff", "Corpus diff", "<p>3 graphs changed</p>")
    page = report_html(view, dot, None, [extra])
    assert page == report_html(_view("tutorial_misaligned.yaml"), dot, None, [extra])
    for part in ("summary", "decisions", "zero-copy", "memory", "timeline", "graph", "corpus-diff"):
        assert f'<section id="{part}">' in page and f'href="#{part}"' in page
    assert page.index('id="graph"') < page.index('id="corpus-diff"')  # extra parts come last
    assert "Graphviz is not installed" in page and "digraph &quot;misaligned&quot;" in page
    assert "CheckTensorAlign" in page and 'class="missed"' in page
    assert re.findall(r'(?:src|href)="(?!#)', page) == [] and "<link" not in page and "url(" not in page
    laid = report_html(view, dot, '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>')
    assert f"dot-sha256:{dot_digest(dot)} -->" in laid and GRAPH_SVG_END in laid and "<?xml" not in laid
