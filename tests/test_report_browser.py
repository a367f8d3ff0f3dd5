"""The report page in a real browser: headless Chromium loads it from disk, with no error in its console, and its
DOM shows every part (summary, decisions, zero-copy groups, memory, timeline, graph); a corpus's page likewise
(its summary, and each graph's parts in a section that opens).

Chromium comes from the system's package manager (`.ci/run` installs it where it runs as root with apt); where
there is none, these tests skip and say so. The browser runs with its background networking off and a private
profile; the page itself references nothing outside it (checked in the loaded DOM).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rulepass.compiler.corpus.inputs import RuleSource, expand
from rulepass.compiler.render.corpus_report import corpus_report
from rulepass.compiler.render.dot import graph_dot
from rulepass.compiler.render.graphviz import dot_program, layout
from rulepass.compiler.render.report import report_html
from rulepass.compiler.render.view import view_of_graph
from rulepass.examples import example_path

from rulepass.api import load_graph

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
BROWSER = next((b for b in map(shutil.which, BROWSERS) if b is not None), None)
pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason="no Chromium on this machine: install it (Debian: apt-get install chromium; .ci/run does so as root) "
    "to run the report's browser test",
)
PARTS = ("summary", "decisions", "zero-copy", "memory", "timeline", "graph")


def load(page: Path, profile: Path) -> tuple[str, list[str]]:
    """The DOM of `page` after headless Chromium loaded it, and its console's lines."""
    assert BROWSER is not None
    done = subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def sections(dom: str) -> dict[str, str]:
    """Each `<section id=...>` of a page's DOM, by id."""
    return dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', dom, re.S))


def test_the_harness_sees_a_script_error(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><p>x</p><script>notDefined();</script></body></html>")
    dom, console = load(page, tmp_path / "profile")
    assert "<p>x</p>" in dom and any("Uncaught ReferenceError" in line for line in console)


def _report(tmp_path: Path) -> Path:
    view = view_of_graph(load_graph(example_path("tutorial_misaligned.yaml")))
    dot = graph_dot(view)
    svg = layout(dot, "svg").decode() if dot_program() is not None else None
    page = tmp_path / "report.html"
    page.write_text(report_html(view, dot, svg), encoding="utf-8")
    return page


@pytest.mark.parametrize("which", ["fresh", "committed"])
def test_the_report_loads_without_errors_and_shows_its_parts(which: str, tmp_path: Path) -> None:
    page = _report(tmp_path) if which == "fresh" else ROOT / "docs" / "report_allgather_concat.html"
    dom, console = load(page, tmp_path / "profile")
    assert console == []
    found = sections(dom)
    assert list(found) == list(PARTS)
    assert found["memory"].count("<svg") == 1 and found["memory"].count('class="panel"') >= 2
    assert found["timeline"].count('class="task"') >= 1
    assert "<table" in found["summary"] and '<table class="decision-table">' in found["decisions"]
    if which == "fresh":
        assert "CheckTensorAlign" in found["decisions"] and 'class="missed"' in found["decisions"]
    else:  # the AllGather+Concat example: its concat is zero-copy
        assert 'class="zero-copy"' in found["memory"] and "+50331648" in found["zero-copy"]
    graph = found["graph"]
    assert "<svg" in graph or "<pre>digraph" in graph
    if which == "committed" or dot_program() is not None:
        assert 'class="node"' in graph  # Graphviz's picture, parsed into the page
    assert re.findall(r'(?:src|href)="(?!#)', dom) == []  # nothing outside the page


def test_the_corpus_report_loads_without_errors_and_shows_each_graph(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("nodes: [\n", encoding="utf-8")
    entries = expand([str(Path(example_path()).parent), str(broken)])
    page = tmp_path / "corpus.html"
    page.write_text(corpus_report(entries, RuleSource.read(None), RuleSource.read(None)).html, encoding="utf-8")
    dom, console = load(page, tmp_path / "profile")
    assert console == []
    found = sections(dom)
    graphs = [f"g-{k}-{part}" for k in range(1, 5) for part in PARTS]
    assert list(found) == ["summary", "corpus-diff", *graphs]
    assert found["summary"].count('<a href="#g-') == 5 and found["summary"].count('<tr class="failed">') == 1
    assert "0 changed, 4 unchanged, 1 unreadable" in found["corpus-diff"]
    assert dom.count("<details id=") == 5 and "broken.yaml" in dom
    for k in range(1, 5):
        assert found[f"g-{k}-memory"].count("<svg") == 1 and 'class="decision-table"' in found[f"g-{k}-decisions"]
    assert re.findall(r'(?:src|href)="(?!#)', dom) == []  # nothing outside the page
