"""Writing a file whole or not at all: `atomic_output`, under every writer of rulepass's output files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rulepass.base.diagnostics import RulepassError
from rulepass.base.files import atomic_output


def test_writers_of_one_path_at_once_never_share_a_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    with atomic_output(path) as outer:
        outer.write("outer " * 1000)
        with atomic_output(path) as inner:
            inner.write("inner")
        assert path.read_text() == "inner"
    assert path.read_text() == "outer " * 1000  # the last rename wins, and each writer's file is whole
    assert [p.name for p in tmp_path.iterdir()] == ["model.json"]


def test_many_threads_writing_one_path_leave_one_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "graph.yaml"
    texts = [f"{i}\n" * 5000 for i in range(8)]
    errors: list[BaseException] = []

    def write(text: str) -> None:
        try:
            with atomic_output(path) as f:
                for line in text.splitlines(keepends=True):
                    f.write(line)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and path.read_text() in texts
    assert [p.name for p in tmp_path.iterdir()] == ["graph.yaml"]


def test_the_file_gets_the_permissions_a_plain_open_would_give(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("x")
    with atomic_output(tmp_path / "atomic", binary=True) as f:
        f.write(b"x")
    assert os.stat(tmp_path / "atomic").st_mode == os.stat(plain).st_mode  # the umask's, not a private 0600


def test_a_failed_block_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.yaml"
    path.write_text("old")
    with pytest.raises(KeyError), atomic_output(path) as f:
        f.write("new")
        raise KeyError("stop")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.yaml"]
    with pytest.raises(RulepassError, match="its folder does not exist"), atomic_output(tmp_path / "no" / "x"):
        pass
