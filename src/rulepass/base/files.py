"""Reading and writing the user's files: one clear error for every I/O or encoding problem, and outputs that
hold either their whole new content or their old one.

Every layer reads rule files, graph files, models and inputs, and writes graphs, models and outputs, through
these functions; they know nothing of what the files mean.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .diagnostics import Span, error

MAX_FILE_BYTES = 512 * 1024 * 1024


def read_text(path: str | Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a UTF-8 text file, turning every I/O or encoding problem into one clear error."""
    return decode_text(read_bytes(path, what=what, max_bytes=max_bytes), str(path), what=what)


def read_bytes(path: str | Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """Read a file's bytes, turning every I/O problem into one clear error."""
    p = Path(path)
    name = str(path)
    try:
        if p.is_dir():
            raise error("io", f"{what} '{name}' is a directory", where=name)
        size = p.stat().st_size
        if size > max_bytes:
            raise error("io", f"{what} is {size} bytes, over the {max_bytes}-byte limit", where=name)
        return p.read_bytes()
    except FileNotFoundError:
        raise error("io", f"{what} '{name}' does not exist", where=name) from None
    except PermissionError:
        raise error("io", f"{what} '{name}' cannot be read (permission denied)", where=name) from None
    except OSError as exc:
        raise error("io", f"{what} '{name}' cannot be read: {exc.strerror or exc}", where=name) from None


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


def check_writable(path: str | Path, *, what: str = "file") -> None:
    """Raise the error writing `path` would, before any work is done: it is a directory, or its folder does not
    exist or cannot be written."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise error("usage", f"the {what}'s path must be a non-empty str or path, got {path!r}")
    p, name = Path(path), str(path)
    if p.is_dir():
        raise error("io", f"cannot write {what} '{name}': it is a directory", where=name)
    if not p.parent.is_dir():
        raise error("io", f"cannot write {what} '{name}': its folder does not exist", where=name)
    if not os.access(p.parent, os.W_OK):
        raise error("io", f"cannot write {what} '{name}' (permission denied)", where=name)


@contextlib.contextmanager
def atomic_output(path: str | Path, *, what: str = "file", binary: bool = False) -> Iterator[IO[Any]]:
    """A file to write `path` through: a temporary file beside it, renamed over it when the block ends, removed
    when the block raises, so `path` holds the whole new content or its old one. The temporary file's name is
    unique (created exclusively), so writers of the same path at once never share one: the last rename wins
    and each is whole. Every I/O problem becomes one clear error naming the file."""
    check_writable(path, what=what)
    name = str(path)
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        try:
            with open(tmp, "xb") if binary else open(tmp, "x", encoding="utf-8") as f:
                yield f
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        check_writable(path, what=what)  # names the cause when it is one of those
        raise error("io", f"cannot write {what} '{name}': {exc.strerror or exc}", where=name) from None
