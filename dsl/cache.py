"""A cache of what loading rule files costs, shared by every process of the user, never trusted blindly.

Loading the bundled rules costs far more than most commands' work: importing and building the expression
parser (lark), parsing every expression, compiling the rule schema. This module keeps, in the user's cache
folder, plain JSON data only (no pickles, no code):

- per rule file, under the digest of its bytes: the ASTs of its expressions (by text) and whether it satisfied
  the schema; a file read again is then parsed without lark and not schema-checked again;
- per rule set, under the digest of every file's name and bytes, the catalogue's declaration and the code of
  the rule language: what `validate` prints (the files, the rule names, every diagnostic).

Every key also holds the digest of the rule language's own code (the `rulepass.dsl` and `rulepass.base` files),
rulepass's version and Python's, so an entry is never read for other rules, another catalogue or other code:
any change misses. Entries are content-addressed, written to a unique temporary file and renamed into place,
so processes sharing the folder never see half an entry, and two writing the same entry write the same bytes.

The folder (`$RULEPASS_CACHE_DIR`, else `$XDG_CACHE_HOME/rulepass`, else `~/.cache/rulepass`) must belong to
the user and be writable by nobody else, and every entry carries an HMAC-SHA256 tag under a random key kept in
the folder (a file only the user can read): an entry that fails the tag, or does not decode to what is
expected, is ignored and rebuilt. `RULEPASS_NO_CACHE=1` (the command line's `--no-cache`) turns it all off.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__

FORMAT = 1  # the layout of the entries; a change of it misses every old entry
KEY_FILE = "key"
KEY_BYTES = 32
MAX_ENTRIES = 1000  # beyond this many entries, writing one removes the least recently written down to KEEP_ENTRIES
KEEP_ENTRIES = 800
_disabled = False


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Within the block, nothing is read from or written to the cache (the command line's `--no-cache`)."""
    global _disabled
    before, _disabled = _disabled, True
    try:
        yield
    finally:
        _disabled = before


def cache_dir() -> Path | None:
    """The cache folder the environment names, or None when the cache is turned off."""
    if _disabled or os.environ.get("RULEPASS_NO_CACHE", "") not in ("", "0"):
        return None
    named = os.environ.get("RULEPASS_CACHE_DIR")
    if named:
        return Path(named)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "rulepass"
    try:
        return Path.home() / ".cache" / "rulepass"
    except RuntimeError:  # no home folder to be found: no cache
        return None


def digest(*parts: str | bytes) -> str:
    """The SHA-256 of `parts` (each length-prefixed, so no two sequences share one), in hex."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8", "surrogatepass") if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


@cache
def code_digest() -> str:
    """The digest of what a cached entry's meaning depends on besides the inputs: the rule language's code
    (every file of `rulepass.dsl` and `rulepass.base`), the cache's format, rulepass's and Python's versions."""
    parts: list[str | bytes] = [str(FORMAT), __version__, sys.version]
    from ..base import diagnostics

    for folder in (Path(__file__).parent, Path(diagnostics.__file__).parent):
        for f in sorted(folder.iterdir()):
            if f.suffix in (".py", ".lark", ".json") and f.is_file():
                parts += [f.name, f.read_bytes()]
    return digest(*parts)


def _private(st: os.stat_result, forbidden: int) -> bool:
    """Whether a file or folder belongs to the user and has none of the `forbidden` mode bits."""
    if not hasattr(os, "getuid"):  # no POSIX owners (Windows): the folder's ACLs are the user profile's
        return True
    return st.st_uid == os.getuid() and not st.st_mode & forbidden


class Store:
    """A checked cache folder: entries by name, each JSON data under an HMAC tag."""

    def __init__(self, folder: Path, key: bytes, max_entries: int | None = None) -> None:
        self.folder = folder
        self.key = key
        self.max_entries = max_entries

    @staticmethod
    def open(folder: Path | None = None, *, max_entries: int | None = None) -> Store | None:
        """The user's cache (or the cache in `folder`), or None when it is off or its folder or key is not safe to
        use. Past `max_entries` entries (default MAX_ENTRIES), writing one removes the oldest fifth."""
        folder = folder if folder is not None else cache_dir()
        if folder is None:
            return None
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _private(folder.stat(), 0o022):  # others could replace entries (the tag would catch it)
                return None
            key = _read_key(folder / KEY_FILE)
        except OSError:
            return None
        return Store(folder, key, max_entries) if key is not None else None

    def _tag(self, body: bytes) -> bytes:
        return hmac.new(self.key, body, hashlib.sha256).hexdigest().encode("ascii")

    def get(self, name: str) -> Any:
        """The data of entry `name`, or None when there is none or it is not whole and ours."""
        try:
            with open(self.folder / f"{name}.json", "rb") as f:
                if not _private(os.fstat(f.fileno()), 0o022):
                    return None
                raw = f.read()
        except OSError:
            return None
        tag, _, body = raw.partition(b"\n")
        if not hmac.compare_digest(tag, self._tag(body)):
            return None
        try:
            return json.loads(body)
        except ValueError:  # pragma: no cover - a tagged entry was written by json.dumps
            return None

    def put(self, name: str, data: Any, *, prune: bool = True) -> None:
        """Store `data` (JSON data) as entry `name`: written whole to a unique file, then renamed into place.
        A folder that cannot be written is no error: the cache only saves time. `prune`: keep the folder within
        its limit now (a writer of many entries calls `prune` once at the end instead)."""
        body = json.dumps(data, separators=(",", ":")).encode("utf-8")
        tmp = self.folder / f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(self._tag(body) + b"\n" + body)
            os.replace(tmp, self.folder / f"{name}.json")
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        if prune:
            self.prune()

    def prune(self) -> None:
        """Keep the folder bounded: past its limit of entries, remove the oldest (another process may be doing
        the same, or reading one: it then finds no entry and rebuilds it)."""
        with contextlib.suppress(OSError):
            found = [e for e in os.scandir(self.folder) if e.name.endswith(".json")]
            limit = MAX_ENTRIES if self.max_entries is None else self.max_entries
            keep = KEEP_ENTRIES if self.max_entries is None else self.max_entries * 4 // 5
            if len(found) <= limit:
                return
            found.sort(key=lambda e: (e.stat().st_mtime_ns, e.name))
            for e in found[: len(found) - keep]:
                with contextlib.suppress(OSError):
                    os.unlink(e.path)


def _read_key(path: Path) -> bytes | None:
    """The folder's HMAC key, made when missing: written whole to a temporary file, then linked into place (the
    first process's key is everyone's); None when it is not the user's alone or not whole."""
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(KEY_BYTES))
            with contextlib.suppress(FileExistsError):  # another process's key came first: that one is used
                os.link(tmp, path)
        finally:
            tmp.unlink()
    with open(path, "rb") as f:
        if not _private(os.fstat(f.fileno()), 0o077):
            return None
        key = f.read(KEY_BYTES + 1)
    return key if len(key) == KEY_BYTES else None
