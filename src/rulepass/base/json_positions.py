"""Source ranges of a JSON document's values and keys, found on demand from the text.

A large JSON graph file is read by the json module, which keeps no positions. When a problem is reported, its
position used to come from reading the whole text again with the YAML reader, which records a range for every
value of the document (hundreds of megabytes for a few megabytes of JSON, to report six errors). Here a range is
found by walking the text along the one path asked for: each container on the path is scanned once for where
its members start and end (the json module's own scanner skips a member), and those offsets are kept, so
reporting N problems costs the text's size once plus N path lengths.

The ranges are those the YAML reader gives for the same text (1-based line and column of the first character;
the end is the column just after the last one, on its line), so a diagnostic reads the same either way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .diagnostics import Source

PathKey = tuple[str | int, ...]
Range = tuple[int, int, int, int]

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_constant=lambda word: None, parse_int=lambda text: 0)
_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009 (the C scanner, not in the stubs)

# A member of a container: (key or index, key start, key end, value start, value end); key offsets -1 in a list.
_Member = tuple[str | int, int, int, int, int]


class JsonPositions:
    """The offsets of the values on the paths asked for in one JSON text (see the module's docstring)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._members: dict[int, dict[str | int, _Member]] = {}
        self._root = self._space(0)

    def _skip(self, pos: int) -> int:
        """The offset just after the value starting at `pos` (the json module's C scanner reads it)."""
        return int(_DECODER.raw_decode(self.source.text, pos)[1])

    def _scan(self, pos: int) -> dict[str | int, _Member]:
        """The members of the container starting at `pos`, found once and kept."""
        found = self._members.get(pos)
        if found is not None:
            return found
        text = self.source.text
        members: dict[str | int, _Member] = {}
        is_map = text[pos] == "{"
        close = "}" if is_map else "]"
        i = self._space(pos + 1)
        index = 0
        while text[i] != close:
            key: str | int = index
            k_start = k_end = -1
            if is_map:
                k_start = i
                key, k_end = _scanstring(text, i + 1)
                i = self._space(self._space(k_end) + 1)  # past the ':'
            end = self._skip(i)
            members.setdefault(key, (key, k_start, k_end, i, end))  # the first of duplicate keys, as YAML reports
            i = self._space(end)
            if text[i] == ",":
                i = self._space(i + 1)
            index += 1
        self._members[pos] = members
        return members

    def _space(self, pos: int) -> int:
        match = _SPACE.match(self.source.text, pos)
        return match.end() if match else pos

    def member(self, path: PathKey) -> _Member | None:
        """Where the value at `path` (and its key) stands, or None when there is no such value."""
        text = self.source.text
        if self._root >= len(text):
            return None
        key_start = key_end = end = -1
        start = self._root
        for key in path:
            opening = text[start]
            if opening not in "[{" or isinstance(key, bool) or (opening == "{") != isinstance(key, str):
                return None
            found = self._scan(start).get(key)
            if found is None:
                return None
            _, key_start, key_end, start, end = found
        return (path[-1] if path else "", key_start, key_end, start, end if path else self._skip(start))

    def containers_scanned(self) -> int:
        """How many containers have had their members located (the work done so far)."""
        return len(self._members)

    def range_of(self, start: int, end: int) -> Range:
        """The YAML-style range of characters [start, end)."""
        line, col = self.source.position(start)
        end_line, end_col = self.source.position(end - 1)
        return line, col, end_line, end_col


class JsonRanges(Mapping[PathKey, Range]):
    """A read-only mapping path -> range, computed on demand (keys: the ranges of mapping keys instead)."""

    def __init__(self, positions: JsonPositions, data: Any, *, keys: bool) -> None:
        self.positions = positions
        self._data = data
        self._keys = keys

    def __getitem__(self, path: PathKey) -> Range:
        m = self.positions.member(tuple(path))
        if m is None or (self._keys and m[1] < 0):
            raise KeyError(path)
        return self.positions.range_of(m[1], m[2]) if self._keys else self.positions.range_of(m[3], m[4])

    def __iter__(self) -> Iterator[PathKey]:
        todo: list[tuple[PathKey, Any]] = [((), self._data)]
        while todo:
            path, value = todo.pop()
            if not self._keys or (path and isinstance(path[-1], str)):
                yield path
            items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
            todo.extend(((*path, k), v) for k, v in reversed(list(items)))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Styles(Mapping[PathKey, "str | None"]):
    """JSON's scalar styles: a string is double-quoted, anything else plain (None)."""

    def __init__(self, ranges: JsonRanges, data: Any) -> None:
        self._ranges = ranges
        self._data = data

    def __getitem__(self, path: PathKey) -> str | None:
        value = self._ranges.positions.member(tuple(path))
        if value is None:
            raise KeyError(path)
        return '"' if self._ranges.positions.source.text[value[3]] == '"' else None

    def __iter__(self) -> Iterator[PathKey]:
        return iter(self._ranges)

    def __len__(self) -> int:
        return len(self._ranges)


def json_ranges(source: Source, data: Any) -> tuple[Mapping[PathKey, Range], Mapping[PathKey, Range], Any]:
    """(value ranges, key ranges, styles) of the JSON text of `source`, whose parsed value is `data`."""
    positions = JsonPositions(source)
    values = JsonRanges(positions, data, keys=False)
    return values, JsonRanges(positions, data, keys=True), _Styles(values, data)
