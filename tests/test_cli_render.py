"""`rulepass render` and `rulepass report`: formats, model files, and one clear error for each bad input."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rulepass.examples import example_path

from rulepass.cli import main

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_render_prints_dot_by_default_and_writes_what_the_suffix_names(tmp_path: Path) -> None:
    code, dot, err = _run("render")
    assert code == 0 and dot.startswith('digraph "allgather_concat" {') and "bundled example" in err
    assert _run("render", str(example_path()))[1] == dot
    target = tmp_path / "g.gv"
    assert _run("render", "-o", str(target))[0] == 0 and target.read_text() == dot
    memory = tmp_path / "m.svg"
    code, out, _ = _run("render", "--memory", "-o", str(memory))
    assert code == 0 and out == f"wrote {memory}\n" and memory.read_text().startswith("<svg")


def test_render_reads_a_model_file(tmp_path: Path) -> None:
    model = tmp_path / "m.json"
    assert _run("compile", "-o", str(model))[0] == 0
    code, dot, _ = _run("render", str(model))
    assert code == 0 and "ConcatD (virtual)" in dot and "holds no decisions" in dot
    code, svg, _ = _run("render", str(model), "--memory")  # a model holds no baseline plan: only its own panel
    assert code == 0 and "without the no-task passes" not in svg and "with these rules" in svg


def test_render_onnx_needs_a_file(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    code, _, err = _run("render", "--format", "onnx")
    assert code == 2 and "ONNX output is binary: give the file to write with -o FILE.onnx" in err
    target = tmp_path / "g.onnx"
    assert _run("render", "-o", str(target))[0] == 0 and b"rulepass_decisions" in target.read_bytes()


@needs_dot
def test_render_svg_and_png_through_graphviz(tmp_path: Path) -> None:
    code, svg, _ = _run("render", "--format", "svg", "--focus", "concat", "--depth", "1")
    assert code == 0 and "DOT sha256:" in svg and "within 1 edge(s) of concat" in svg
    png = tmp_path / "g.png"
    assert _run("render", "-o", str(png))[0] == 0 and png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["render", "--depth", "2"], 2, "--depth needs --focus NODE"),
        (["render", "--focus", "nope"], 2, "no node 'nope' in graph 'allgather_concat'"),
        (["render", "--format", "png"], 2, "PNG output is binary"),
        (["render", "--memory", "--format", "dot"], 2, "--memory draws SVG, not dot"),
        (["render", "--memory", "--focus", "concat"], 2, "--focus picks part of the graph picture"),
        (["render", "missing.yaml"], 1, "missing.yaml"),
        (["render", "--format", "pdf"], 2, "invalid choice: 'pdf'"),
        (["report"], 2, "the following arguments are required: -o/--output"),
        (["render", "--rules", "no/such/rules"], 1, "no/such/rules"),
    ],
)
def test_bad_input_gets_one_clear_error(argv: list[str], code: int, message: str) -> None:
    got, out, err = _run(*argv)
    assert got == code and message in err and "internal error" not in err and out == ""


def test_render_without_graphviz_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    target = tmp_path / "g.svg"
    code, _, err = _run("render", "-o", str(target))
    assert code == 1 and "needs Graphviz's `dot`, which is not installed" in err and "apt-get install graphviz" in err
    assert not target.exists()  # nothing half-written
    report = tmp_path / "r.html"
    code, _, err = _run("report", "-o", str(report))
    assert code == 0 and "Graphviz is not installed, so the report gives the graph as DOT" in err
    assert "<pre>digraph" in report.read_text()


def test_report_writes_one_page(tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    code, out, _ = _run("report", str(example_path("split_relu_concat.yaml")), "-o", str(report))
    page = report.read_text()
    assert code == 0 and out == f"wrote {report}\n" and page.startswith("<!DOCTYPE html>")
    assert '<section id="decisions">' in page and "SplitNotaskPass" in page


@pytest.mark.parametrize("command", ["render", "report"])
def test_help(command: str) -> None:
    code, out, _ = _run(command, "--help")
    assert code == 0 and "--focus NODE" in out and "--before-rules PATH" in out


def test_a_report_of_a_graph_too_large_to_lay_out_says_how_to_see_a_part(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import rulepass.compiler.render.report as report

    monkeypatch.setattr(report, "MAX_LAID_OUT", 3)
    page = tmp_path / "r.html"
    code, _, err = _run("report", "-o", str(page))
    assert code == 0 and "more than the 3 the report lays out" in err
    assert "--focus NODE --depth K" in page.read_text() and "<pre>digraph" not in page.read_text()
    code, _, err = _run("report", "-o", str(page), "--focus", "concat", "--depth", "0")
    assert code == 0 and "lays out" not in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{}\n", "is neither a model file (it has no 'model_def') nor a graph file (it has no 'nodes')"),
        ("", "holds nothing: expected a model"),
        ("graph: {nodes: []}\nexpect: []\n", "this is a rule fixture"),
    ],
)
def test_a_file_that_is_neither_graph_nor_model_is_one_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    code, _, err = _run("render", str(path))
    assert code == 1 and message in err and err.count("error[") == 1
