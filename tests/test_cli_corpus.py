"""`rulepass corpus`: the command's reports, files and exit codes (the work itself: tests/compiler/test_corpus.py)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
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


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_progress_line() -> None:
    out, err = io.StringIO(), _Terminal()
    assert main(["corpus", "optimize", EXAMPLES, "--no-cache", "-j", "1"], out=out, err=err) == 0
    line = err.getvalue().split("\n")[0]
    assert line.startswith("\rrulepass corpus: 0/4 graphs\r") and line.endswith("\rrulepass corpus: 4/4 graphs")


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


def _children(pid: int) -> set[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text(encoding="utf-8")
    except OSError:
        return set()
    return {int(x) for x in text.split()}


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the worker processes from /proc")
def test_ctrl_c_stops_the_workers_and_writes_nothing(tmp_path: Path) -> None:
    graph = Path(example_path()).read_text(encoding="utf-8")
    for i in range(300):
        (tmp_path / "g" / f"g{i:03}.yaml").parent.mkdir(exist_ok=True)
        (tmp_path / "g" / f"g{i:03}.yaml").write_text(graph, encoding="utf-8")
    report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "rulepass", "corpus", "compile", str(tmp_path / "g"), "-j", "2", "--no-cache"]
    proc = subprocess.Popen([*argv, "-o", str(report)], stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(workers := _children(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(workers) >= 2, "the workers never started"
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err
    assert not report.exists() and not list(tmp_path.glob(".report.json*"))
    time.sleep(0.2)
    assert not [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in _state(w)]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text(encoding="utf-8").split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


def test_nearmiss_ranks_the_corpus_candidates_by_bytes(tmp_path: Path) -> None:
    """`corpus nearmiss`: every candidate failing one check, over the examples and the strict-alignment rules, most
    copy bytes first, each with its graph file and failing check; a file that cannot be read is one line."""
    (tmp_path / "broken.yaml").write_text("nodes: [\n", encoding="utf-8")
    args = ["corpus", "nearmiss", "--rules", strict_rules(tmp_path), EXAMPLES, str(tmp_path / "broken.yaml")]
    code, out, err = run(*args, "--format", "json", "--no-cache", "-j", "1")
    assert code == 1, err  # the broken file
    report = json.loads(out)
    misses = report["near_misses"]
    assert report["kind"] == "nearmiss" and report["max_failed"] == 1 and misses
    assert [m["copy_bytes"] for m in misses] == sorted((m["copy_bytes"] for m in misses), reverse=True)
    assert all(len(m["failed"]) == 1 and m["graph"].startswith(EXAMPLES) for m in misses)
    assert {f["check"] for m in misses for f in m["failed"]} == {"CheckTensorAlign"}  # 8192-byte alignment
    assert report["summary"]["copy_bytes"] == sum(m["copy_bytes"] for m in misses)
    assert [e["graph"].rsplit("/", 1)[1] for e in report["errors"]] == ["broken.yaml"]
    code, text, _ = run(*args, "--no-cache", "-j", "1")
    assert "InputCheck/CheckTensorAlign:" in text and "broken.yaml" in text


def test_nearmiss_results_come_from_the_cache_the_second_time(tmp_path: Path) -> None:
    """A second `corpus nearmiss` over the same graphs and rules reads every result from the cache, unchanged."""
    args = ["corpus", "nearmiss", "--rules", strict_rules(tmp_path), EXAMPLES, "--cache", str(tmp_path / "c")]
    code, first, err = run(*args, "--format", "json", "-j", "1")
    assert code == 0 and " 0 of " in err, err
    code, again, err = run(*args, "--format", "json", "-j", "1")
    assert again == first and "from the cache" in err and " 0 of " not in err, err
