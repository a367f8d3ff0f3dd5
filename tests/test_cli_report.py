"""`rulepass report CORPUS... -o report.html`: one page for a corpus of graphs and models (the single-graph
report: tests/test_cli_render.py; in a browser: tests/test_report_browser.py)."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

from rulepass.examples import example_path
from rulepass.rules import bundled_rules_dir

from rulepass.cli import main

EXAMPLES = str(Path(example_path()).parent)
PARTS = ("summary", "decisions", "zero-copy", "memory", "timeline", "graph")


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _sections(page: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', page, re.S))


def test_a_folder_of_graphs_is_one_page_the_same_at_any_worker_count(tmp_path: Path) -> None:
    one, two, cached = tmp_path / "one.html", tmp_path / "two.html", tmp_path / "cached.html"
    code, out, err = _run("report", EXAMPLES, "-o", str(one), "-j", "1", "--no-cache")
    assert code == 0 and out == f"wrote {one}\n", err
    assert "4 graph(s), 0 could not be read or reported" in err
    page = one.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "rulepass corpus report (4 graphs, level O3)" in page
    found = _sections(page)
    summary = found["summary"]
    assert "4 fired, 1 missed, 0 undone" in summary and "copy bytes avoided" in summary
    assert all(f'<a href="#g-{k}">' in summary for k in range(1, 5))
    assert list(found) == ["summary", *(f"g-{k}-{p}" for k in range(1, 5) for p in PARTS)]
    assert page.count("<details id=") == 4 and "CheckTensorAlign" in found["g-4-decisions"]
    assert "corpus-diff" not in found
    assert _run("report", EXAMPLES, "-o", str(two), "-j", "2", "--no-cache")[0] == 0
    cache = str(tmp_path / "cache")
    for _ in range(2):  # computed, then from the cache
        code, _, err = _run("report", EXAMPLES, "-o", str(cached), "-j", "2", "--cache", cache)
        assert code == 0
    assert "4 of 4 result(s) from the cache" in err
    assert two.read_bytes() == page.encode() == cached.read_bytes()


def test_with_the_rules_before_an_edit_the_page_has_the_corpus_diff(tmp_path: Path) -> None:
    strict = tmp_path / "rules"
    shutil.copytree(bundled_rules_dir(), strict, ignore=shutil.ignore_patterns("fixtures", "*.py"))
    base = strict / "notask_base.yaml"
    base.write_text(base.read_text(encoding="utf-8").replace("% 32 == 0", "% 8192 == 0"), encoding="utf-8")
    page, single = tmp_path / "r.html", tmp_path / "single.html"
    edit = ["--rules", str(strict), "--before-rules", str(bundled_rules_dir())]
    assert _run("report", EXAMPLES, "-o", str(page), "-j", "1", "--no-cache", *edit)[0] == 0
    found = _sections(page.read_text(encoding="utf-8"))
    diff = found["corpus-diff"]
    assert "2 changed, 2 unchanged" in diff and "Decisions flipped, by pass" in diff
    assert "fired -&gt; missed at InputCheck/CheckTensorAlign" in diff
    # each graph's memory beside the plan before the edit, as the report of that graph alone has it
    assert _run("report", str(example_path("split_relu_concat.yaml")), "-o", str(single), *edit)[0] == 0
    assert "before the rule edit" in found["g-3-memory"]
    assert (
        found["g-3-memory"].split("</h3>")[1]
        == _sections(single.read_text(encoding="utf-8"))["memory"].split("</h2>")[1]
    )
    again = tmp_path / "again.html"
    assert _run("report", EXAMPLES, "-o", str(again), "-j", "2", "--no-cache", *edit)[0] == 0
    assert again.read_bytes() == page.read_bytes()


def test_bad_graphs_are_rows_and_a_model_file_is_reported(tmp_path: Path) -> None:
    model, broken, page = tmp_path / "model.json", tmp_path / "broken.yaml", tmp_path / "r.html"
    assert _run("compile", "-o", str(model))[0] == 0
    broken.write_text("nodes: [\n", encoding="utf-8")
    missing = tmp_path / "missing.yaml"
    code, _, err = _run("report", str(model), str(broken), str(missing), "-o", str(page), "-j", "1", "--no-cache")
    assert code == 1 and "3 graph(s), 2 could not be read or reported" in err and "Traceback" not in err
    text = page.read_text(encoding="utf-8")
    rows = re.findall(r'<tr class="failed">(.*?)</tr>', text)
    assert len(rows) == 2 and "broken.yaml:2:1" in rows[0] and "does not exist" in rows[1]
    assert "A model file holds no decisions" in _sections(text)["g-1-decisions"]
    assert text.count('<details id="g-2" class="failed">') == 1


def test_big_graphs_leave_their_pictures_out(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    argv = ["report", EXAMPLES, "-o", str(page), "-j", "1", "--no-cache", "--max-nodes", "6", "--quiet"]
    assert _run(*argv) == (0, f"wrote {page}\n", "")
    found = _sections(page.read_text(encoding="utf-8"))
    assert "<svg" in found["g-4-memory"] and "<svg" not in found["g-1-memory"]  # 5 nodes drawn, 7 not
    assert "more than the 6 the report lays out" in found["g-1-graph"] and "digraph" not in found["g-1-graph"]


def test_usage_errors_write_nothing(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = _run("report", EXAMPLES, "--focus", "concat", "-o", str(page))
    assert code == 2 and "--focus and --depth pick part of one graph" in err
    code, _, err = _run("report", str(empty), "-o", str(page))
    assert code == 2 and "no graphs" in err
    code, _, err = _run("report", EXAMPLES, "--rules", str(tmp_path / "nope"), "-o", str(page), "--no-cache")
    assert code != 0 and "nope" in err and "Traceback" not in err
    code, _, err = _run("report", EXAMPLES, "-o", str(tmp_path / "no" / "dir" / "r.html"))
    assert code != 0 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == [empty]
