"""Writing a file whole or not at all: `atomic_output`, under every writer of rulepass's output files."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from rulepass.base.diagnostics import RulepassError
from rulepass.base.files import atomic_output, check_writable, read_text


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


# ---- outputs that never damage (issue 38) ---------------------------------------------------------------
def test_a_character_device_is_refused_untouched() -> None:
    before = os.stat("/dev/null")
    with pytest.raises(RulepassError, match="it is a character device"), atomic_output("/dev/null") as f:
        f.write("must not be written")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_dev) == (before.st_ino, before.st_dev)
    with pytest.raises(RulepassError, match="character device"):
        check_writable("/dev/null", what="model file")


def test_a_fifo_is_refused_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(RulepassError, match=r"cannot write file '.*pipe': it is a FIFO"), atomic_output(fifo):
        pass
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_a_symlink_is_written_through_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "real.yaml"
    target.write_text("old")
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    with atomic_output(link) as f:
        f.write("new")
    assert link.is_symlink() and os.readlink(link) == str(target) and target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.yaml", "real.yaml"]


def test_a_symlink_to_a_special_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "out"
    link.symlink_to(fifo)
    with pytest.raises(RulepassError, match="FIFO"), atomic_output(link):
        pass
    assert link.is_symlink() and stat.S_ISFIFO(os.stat(link).st_mode)


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "secret.json"
    path.write_text("old")
    path.chmod(0o600)
    with atomic_output(path) as f:
        f.write("new")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and path.read_text() == "new"


def test_dash_and_dev_stdout_write_to_standard_output(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    for name in ("-", "/dev/stdout"):
        with atomic_output(name, binary=True) as f:
            f.write(b"bytes ")
        with atomic_output(name) as f:
            f.write("text\n")
    assert capfdbinary.readouterr().out == b"bytes text\nbytes text\n"


def test_reads_refuse_devices_fifos_and_oversized_files(tmp_path: Path) -> None:
    with pytest.raises(RulepassError, match="'/dev/zero' is a character device: only regular files are read"):
        read_text("/dev/zero", what="rule file")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(RulepassError, match="is a FIFO"):
        read_text(fifo)  # refused before open: opening a FIFO with no writer would block
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(RulepassError, match="over the 100-byte limit"):
        read_text(big, max_bytes=100)
