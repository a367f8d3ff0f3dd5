"""Reading and writing the user's files: one clear error for every I/O or encoding problem, and outputs that
hold either their whole new content or their old one.

Every layer reads rule files, graph files, models and inputs, and writes graphs, models and outputs, through
these functions; they know nothing of what the files mean.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from .diagnostics import Span, error

MAX_FILE_BYTES = 512 * 1024 * 1024

STDOUT_PATHS = ("-", "/dev/stdout")  # written through to standard output, never replaced


def _kind(mode: int) -> str:
    """What a file of this mode is, in words, for errors about files that are not regular."""
    for test, word in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return word
    return "not a regular file"


def read_text(path: str | Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a UTF-8 text file, turning every I/O or encoding problem into one clear error. Only regular files
    are read (a device, FIFO or socket could be endless or block), and never more than `max_bytes`."""
    return decode_text(read_bytes(path, what=what, max_bytes=max_bytes), str(path), what=what)


def decode_text(raw: bytes, name: str, *, what: str = "file") -> str:
    """The text of a UTF-8 file's bytes `raw` (read from `name`), or one clear error naming the first bad byte."""
    if b"\x00" in raw:
        raise error("encoding", f"{what} is not a text file (it contains NUL bytes)", Span(name, 1, 1, 1, 1, None))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(
            "encoding",
            f"{what} is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            Span(name, line, col, line, col, None),
        ) from None


def check_readable(path: str | Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> int:
    """The size of `path`, a regular file of at most `max_bytes`; else the one error reading it would give."""
    name = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error("io", f"{what} '{name}' does not exist", where=name) from None
    except PermissionError:
        raise error("io", f"{what} '{name}' cannot be read (permission denied)", where=name) from None
    except (OSError, ValueError) as exc:
        raise error(
            "io", f"{what} '{name}' cannot be read: {getattr(exc, 'strerror', None) or exc}", where=name
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise error("io", f"{what} '{name}' is {_kind(st.st_mode)}: only regular files are read", where=name)
    if st.st_size > max_bytes:
        raise error("io", f"{what} is {st.st_size} bytes, over the {max_bytes}-byte limit", where=name)
    return st.st_size


def read_bytes(path: str | Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes` (checked before and while reading: a file that grows
    meanwhile is still cut off at the limit), or one clear error."""
    name = str(path)
    check_readable(path, what=what, max_bytes=max_bytes)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())  # the file opened, not the one stat'ed: it may have been swapped
            if not stat.S_ISREG(st.st_mode):
                raise error("io", f"{what} '{name}' is {_kind(st.st_mode)}: only regular files are read", where=name)
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise error("io", f"{what} '{name}' does not exist", where=name) from None
    except PermissionError:
        raise error("io", f"{what} '{name}' cannot be read (permission denied)", where=name) from None
    except OSError as exc:
        raise error("io", f"{what} '{name}' cannot be read: {exc.strerror or exc}", where=name) from None
    if len(raw) > max_bytes:
        raise error("io", f"{what} is over the {max_bytes}-byte limit", where=name)
    return raw


def _write_target(path: str | Path, what: str) -> Path | None:
    """The file an output to `path` replaces: `path` itself, or a symlink's final target (written through, the
    link kept); None for standard output. Raises when that is not a regular file or absent, or when its folder
    does not exist or cannot be written."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise error("usage", f"the {what}'s path must be a non-empty str or path, got {path!r}")
    name = str(path)
    if name in STDOUT_PATHS:
        return None
    p = Path(path)
    if p.is_symlink():
        p = Path(os.path.realpath(p))
    try:
        st: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise error("io", f"cannot write {what} '{name}': {exc.strerror or exc}", where=name) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        hint = "write to a regular file, or to '-' for standard output"
        raise error("io", f"cannot write {what} '{name}': it is {_kind(st.st_mode)}", hint=hint, where=name)
    if not p.parent.is_dir():
        raise error("io", f"cannot write {what} '{name}': its folder does not exist", where=name)
    if not os.access(p.parent, os.W_OK):
        raise error("io", f"cannot write {what} '{name}' (permission denied)", where=name)
    return p


def check_writable(path: str | Path, *, what: str = "file") -> None:
    """Raise the error writing `path` would, before any work is done: it is a directory, a device, a FIFO or a
    socket, or its folder does not exist or cannot be written. '-' and '/dev/stdout' are standard output."""
    _write_target(path, what)


class _Unclosed(io.RawIOBase):
    """Standard output's bytes as a file that `with` blocks and writers may close without closing it."""

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        sys.stdout.buffer.write(bytes(b))
        return len(b)

    def flush(self) -> None:
        sys.stdout.buffer.flush()


class _UnclosedText(io.TextIOBase):
    """Standard output's text (UTF-8) as a file that may be closed without closing it."""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        sys.stdout.buffer.write(s.encode("utf-8"))
        return len(s)

    def flush(self) -> None:
        sys.stdout.buffer.flush()


@contextlib.contextmanager
def _stdout(binary: bool) -> Iterator[IO[Any]]:
    sys.stdout.flush()  # what was printed before comes first
    f = _Unclosed() if binary else _UnclosedText()
    yield cast(IO[Any], f)
    f.flush()


@contextlib.contextmanager
def atomic_output(path: str | Path, *, what: str = "file", binary: bool = False) -> Iterator[IO[Any]]:
    """A file to write `path` through: a temporary file beside it, renamed over it when the block ends, removed
    when the block raises, so `path` holds the whole new content or its old one. The temporary file's name is
    unique (created exclusively), so writers of the same path at once never share one: the last rename wins
    and each is whole. Only regular files are replaced, keeping their permission mode; a symlink is written
    through (its final target is replaced, the link kept); a device, FIFO or socket is refused; '-' and
    '/dev/stdout' write to standard output. Every I/O problem becomes one clear error naming the file."""
    target = _write_target(path, what)
    if target is None:
        with _stdout(binary) as out:
            yield out
        return
    name = str(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        try:
            with open(tmp, "xb") if binary else open(tmp, "x", encoding="utf-8") as f:
                yield f
            with contextlib.suppress(FileNotFoundError):
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))  # keep an existing file's mode
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        check_writable(path, what=what)  # names the cause when it is one of those
        raise error("io", f"cannot write {what} '{name}': {exc.strerror or exc}", where=name) from None
