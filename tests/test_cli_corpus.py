"""`rulepass corpus`: the command's reports, files and exit codes (the work itself: tests/compiler/test_corpus.py)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from rulepass.examples import example_path
from rulepass.rules import bundled_rules_dir

from rulepass.cli import main

EXAMPLES = str(Path(example_path()).parent)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def strict_rules(tmp: Path) -> str:
    folder = tmp / "rules"
    shutil.copytree(bundled_rules_dir(), folder, ignore=shutil.ignore_patterns("fixtures", "*.py"))
    base = folder / "notask_base.yaml"
    base.write_text(base.read_text(encoding="utf-8").replace("% 32 == 0", "% 8192 == 0"), encoding="utf-8")
    return str(folder)


def test_diff_writes_each_format_and_caches(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    args = ["corpus", "diff", "--rules", strict_rules(tmp_path), EXAMPLES, "--cache", cache, "-j", "1"]
    code, out, err = run(*args, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["summary"]["changed"] == 2 and "0 of 8 result(s) from the cache" in err
    code, again, err = run(*args, "--format", "json")
    assert again == out and "8 of 8 result(s) from the cache" in err
    page = tmp_path / "report.html"
    assert run(*args, "--format", "html", "-o", str(page), "--quiet") == (0, "", "")
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    code, md, _ = run(*args, "--format", "markdown", "--no-cache")
    assert md.startswith("# rulepass corpus diff") and "| conv_nc1hwc0_concat/concat_c |" in md


def test_an_unreadable_graph_is_one_line_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("nodes: 3\n", encoding="utf-8")
    code, out, _ = run("corpus", "compile", str(example_path()), str(tmp_path / "bad.yaml"), "--no-cache", "--quiet")
    assert code == 1
    assert "1 ok, 1 failed" in out and sum("bad.yaml" in line for line in out.splitlines()) == 1


def test_usage_errors(tmp_path: Path) -> None:
    assert run("corpus", "optimize", "--no-cache")[0] == 2  # no graphs
    code, _, err = run("corpus", "optimize", EXAMPLES, "--input-shape", "x:a")
    assert code == 2 and "--input-shape" in err
    code, _, err = run(
        "corpus", "optimize", EXAMPLES, "--no-cache", "--cluster", "tcp://127.0.0.1:9", "--connect-timeout", "1"
    )
    assert code == 1 and "cannot reach the Dask scheduler" in err
