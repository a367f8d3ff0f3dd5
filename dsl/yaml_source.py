"""A safe YAML (and JSON) loader that remembers where every value came from.

Rule files and graph files are data written by people, so every error must point at a line and column, also
inside an expression string in a block scalar. PyYAML's composer recurses (and libyaml's segfaults on deep
nesting), so this module builds the tree itself from the event stream with an explicit stack, and enforces:
a depth limit, a bound on alias expansion (alias bombs), no duplicate keys, no tags beyond plain data, and the
YAML 1.2 core schema for scalars (``yes``/``no``/``on`` stay strings).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .diagnostics import Diagnostic, RulepassError, Source, Span, error

PathKey = tuple[str | int, ...]

MAX_DEPTH = 64
MAX_ALIAS_EXPANSION = 100_000
MAX_FILE_BYTES = 512 * 1024 * 1024

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STD_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
    "!",
}
_INT = re.compile(r"[-+]?[0-9]+")
_INT_OCT = re.compile(r"0o[0-7]+")
_INT_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_NULLS = {"", "~", "null", "Null", "NULL"}
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_INF = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"}
_NINF = {"-.inf", "-.Inf", "-.INF"}
_NAN = {".nan", ".NaN", ".NAN"}


def plain_scalar(text: str) -> object:
    """The value of a plain (unquoted) scalar by the YAML 1.2 core schema."""
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.fullmatch(text):
        return int(text)
    if _INT_OCT.fullmatch(text):
        return int(text[2:], 8)
    if _INT_HEX.fullmatch(text):
        return int(text[2:], 16)
    if _FLOAT.fullmatch(text):
        return float(text)
    if text in _INF:
        return math.inf
    if text in _NINF:
        return -math.inf
    if text in _NAN:
        return math.nan
    return text


def _tagged_scalar(tag: str, text: str, span: Span) -> object:
    value = plain_scalar(text)
    kind = tag.rsplit(":", 1)[-1]
    if kind == "str":
        return text
    expected: dict[str, tuple[type, ...]] = {
        "int": (int,),
        "float": (int, float),
        "bool": (bool,),
        "null": (type(None),),
    }
    if (isinstance(value, bool) and kind != "bool") or not isinstance(value, expected[kind]):
        raise error("yaml-tag", f"'{text}' is not a valid !!{kind}", span)
    return float(value) if kind == "float" else value  # type: ignore[arg-type]


@dataclass
class YamlDoc:
    """A loaded document: plain data plus the source range of every value and mapping key."""

    source: Source
    data: Any
    ranges: dict[PathKey, tuple[int, int, int, int]] = field(default_factory=dict)
    key_ranges: dict[PathKey, tuple[int, int, int, int]] = field(default_factory=dict)
    styles: dict[PathKey, str | None] = field(default_factory=dict)

    def span(self, path: Sequence[str | int], *, key: bool = False) -> Span:
        """The span of the value (or, with key=True, of the key) at `path`, or of its nearest recorded parent."""
        p = tuple(path)
        if key and p in self.key_ranges:
            return self._make(self.key_ranges[p])
        while p not in self.ranges and p:
            p = p[:-1]
        if p in self.ranges:
            return self._make(self.ranges[p])
        return Span(self.source.name, 1, 1, 1, 1, self.source)

    def _make(self, r: tuple[int, int, int, int]) -> Span:
        line, col, end_line, end_col = r
        return Span(self.source.name, line, col, end_line, end_col, self.source)

    def span_in_scalar(self, path: Sequence[str | int], offset: int, length: int = 1) -> Span:
        """The file span of characters [offset, offset+length) of the string scalar at `path`.

        Aligns the scalar's value with its source text (quotes, escapes, block indentation and folding are
        skipped), so positions inside expressions in block scalars point at the right line and column.
        """
        p = tuple(path)
        value = self._get(p)
        if p not in self.ranges or not isinstance(value, str):
            return self.span(p)
        line0, col0, _, _ = self.ranges[p]
        text = self.source.text
        start = _index_of(self.source, line0, col0)
        style = self.styles.get(p)
        j = start
        if style in ("|", ">"):
            nl = text.find("\n", start)
            j = nl + 1 if nl >= 0 else len(text)
        elif style in ("'", '"'):
            j = start + 1
        first = last = None
        n = len(text)
        for i, c in enumerate(value):
            if i >= offset + max(length, 1):
                break
            while j < n and text[j] != c and not (c in " \n" and text[j] in " \n\r\t"):
                j += 1
            if i == offset:
                first = j
            last = j
            j += 1
        if first is None or last is None or first >= n:
            return self.span(p)
        line, col = self.source.position(first)
        end_line, end_col = self.source.position(min(last, n - 1))
        if end_line != line:
            end_line, end_col = line, col + max(length, 1) - 1
        return Span(self.source.name, line, col, end_line, end_col, self.source)

    def sub(self, path: Sequence[str | int]) -> YamlDoc:
        """The document rooted at the value at `path` (same source, re-keyed spans)."""
        p = tuple(path)
        n = len(p)
        out = YamlDoc(self.source, self.value_at(p))
        out.ranges = {k[n:]: v for k, v in self.ranges.items() if k[:n] == p}
        out.key_ranges = {k[n:]: v for k, v in self.key_ranges.items() if k[:n] == p}
        out.styles = {k[n:]: v for k, v in self.styles.items() if k[:n] == p}
        return out

    def value_at(self, path: Sequence[str | int]) -> Any:
        """The value at `path`, or None."""
        return self._get(tuple(path))

    def _get(self, path: PathKey) -> Any:
        node = self.data
        for k in path:
            try:
                node = node[k]
            except (KeyError, IndexError, TypeError):
                return None
        return node


def _index_of(source: Source, line: int, col: int) -> int:
    # Inverse of Source.position for a 1-based (line, col).
    starts = source._starts()
    return starts[line - 1] + col - 1 if 0 < line <= len(starts) else 0


@dataclass
class _Frame:
    kind: str  # "map" | "seq"
    container: Any
    path: PathKey
    start_mark: Any
    anchor: str | None
    nodes: int = 1
    key: object = None
    key_pending: bool = False
    key_range: tuple[int, int, int, int] | None = None


def _mark_range(start: Any, end: Any) -> tuple[int, int, int, int]:
    end_line, end_col = end.line + 1, max(end.column, 1)
    if end.column == 0 and end.line > start.line:  # a block ends at the start of the next line
        end_line, end_col = end.line, 10_000
    return start.line + 1, start.column + 1, end_line, end_col


def _strict_json(text: str, name: str) -> Any:
    """JSON's own rules for a .json file (YAML would accept trailing commas, comments, 'Infinity' as a string).

    None when the text is nested too deeply for Python's parser: the YAML pass then reports that with a position.
    """
    source = Source(name, text)

    def constant(word: str) -> Any:
        raise ValueError(f"{word} is not a JSON value")

    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise error(
            "json-syntax",
            f"JSON syntax error: {exc.msg}",
            Span(name, exc.lineno, exc.colno, exc.lineno, exc.colno, source),
        ) from None
    except RecursionError:
        return None
    except ValueError as exc:
        raise error("json-syntax", f"invalid JSON: {exc}", Span(name, 1, 1, 1, 1, source)) from None


def load_text(
    text: str, name: str, *, max_depth: int = MAX_DEPTH, max_alias_expansion: int = MAX_ALIAS_EXPANSION
) -> YamlDoc:
    """Parse YAML or JSON text into a :class:`YamlDoc`; every problem is a RulepassError with a span.

    A name ending in `.json` is held to JSON's rules first; the YAML pass then adds positions (and catches
    duplicate keys). Valid JSON that libyaml cannot read (surrogate-pair escapes) loads without positions.
    """
    data = _strict_json(text, name) if name.lower().endswith(".json") else None
    try:
        return _load_yaml(text, name, max_depth=max_depth, max_alias_expansion=max_alias_expansion)
    except RulepassError as exc:
        if data is None or exc.diagnostics[0].code != "yaml-syntax":
            raise
        return YamlDoc(Source(name, text), data)


def _load_yaml(text: str, name: str, *, max_depth: int, max_alias_expansion: int) -> YamlDoc:
    """The event-stream loader behind load_text."""
    source = Source(name, text)
    doc = YamlDoc(source, None)
    anchors: dict[str, tuple[Any, int]] = {}
    stack: list[_Frame] = []
    expanded = 0
    documents = 0
    root_set = False

    def sp(start: Any, end: Any | None = None) -> Span:
        r = _mark_range(start, end if end is not None else start)
        return Span(name, r[0], r[1], r[2], r[3] if end is not None else r[1], source)

    def attach(value: Any, rng: tuple[int, int, int, int], nodes: int, style: str | None, at: Any) -> None:
        nonlocal root_set
        if not stack:
            doc.data = value
            doc.ranges[()] = rng
            doc.styles[()] = style
            root_set = True
            return
        parent = stack[-1]
        parent.nodes += nodes
        if parent.kind == "seq":
            path = (*parent.path, len(parent.container))
            parent.container.append(value)
            doc.ranges[path] = rng
            doc.styles[path] = style
            return
        if not parent.key_pending:
            if isinstance(value, (dict, list)):
                raise error("yaml-key", "a mapping key must be a plain scalar, not a mapping or list", sp(at))
            key = (
                value
                if isinstance(value, str)
                else ("null" if value is None else str(value).lower() if isinstance(value, bool) else str(value))
            )
            if key in parent.container:
                first = doc.key_ranges.get((*parent.path, key))
                where = f" (first defined on line {first[0]})" if first else ""
                raise error(
                    "duplicate-key",
                    f"duplicate key '{key}'{where}",
                    sp(at),
                    hint="each key may appear once in a mapping",
                )
            parent.key, parent.key_pending, parent.key_range = key, True, rng
            return
        path = (*parent.path, str(parent.key))
        parent.container[parent.key] = value
        doc.ranges[path] = rng
        doc.styles[path] = style
        if parent.key_range is not None:
            doc.key_ranges[path] = parent.key_range
        parent.key_pending = False

    def next_path() -> PathKey:
        if not stack:
            return ()
        parent = stack[-1]
        if parent.kind == "seq":
            return (*parent.path, len(parent.container))
        return (*parent.path, str(parent.key)) if parent.key_pending else (*parent.path, "<key>")

    def check_tag(tag: str | None, at: Any) -> None:
        if tag is not None and tag not in _STD_TAGS:
            shown = "!!" + tag[len("tag:yaml.org,2002:") :] if tag.startswith("tag:yaml.org,2002:") else tag
            raise error(
                "yaml-tag",
                f"tag '{shown}' is not allowed: these files hold plain data only",
                sp(at),
                hint="remove the tag",
            )

    try:
        for ev in yaml.parse(text, Loader=_Loader):
            if isinstance(ev, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise error(
                        "yaml-documents",
                        "expected a single YAML document, found another one",
                        sp(ev.start_mark),
                        hint="split the file or remove the '---' separator",
                    )
            elif isinstance(ev, yaml.ScalarEvent):
                check_tag(ev.tag, ev.start_mark)
                rng = _mark_range(ev.start_mark, ev.end_mark)
                if ev.tag is not None and ev.tag != "!":
                    value = _tagged_scalar(ev.tag, ev.value, sp(ev.start_mark, ev.end_mark))
                elif ev.implicit[0] and not ev.style:
                    value = plain_scalar(ev.value)
                else:
                    value = ev.value
                if ev.anchor:
                    anchors[ev.anchor] = (value, 1)
                attach(value, rng, 1, ev.style or None, ev.start_mark)
            elif isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                check_tag(ev.tag, ev.start_mark)
                if len(stack) >= max_depth:
                    raise error(
                        "yaml-depth",
                        f"nesting deeper than {max_depth} levels",
                        sp(ev.start_mark),
                        hint="these files never need such depth; is the file generated wrongly?",
                    )
                is_map = isinstance(ev, yaml.MappingStartEvent)
                path = next_path()
                stack.append(_Frame("map" if is_map else "seq", {} if is_map else [], path, ev.start_mark, ev.anchor))
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                frame = stack.pop()
                if frame.anchor:
                    anchors[frame.anchor] = (frame.container, frame.nodes)
                attach(
                    frame.container,
                    _mark_range(frame.start_mark, ev.end_mark),
                    frame.nodes,
                    None,
                    frame.start_mark,
                )
            elif isinstance(ev, yaml.AliasEvent):
                if ev.anchor not in anchors:
                    raise error("yaml-alias", f"unknown alias '*{ev.anchor}'", sp(ev.start_mark))
                value, nodes = anchors[ev.anchor]
                expanded += nodes
                if expanded > max_alias_expansion:
                    raise error(
                        "yaml-alias",
                        f"aliases expand to more than {max_alias_expansion} values (an alias bomb?)",
                        sp(ev.start_mark, ev.end_mark),
                    )
                attach(value, _mark_range(ev.start_mark, ev.end_mark), nodes, None, ev.start_mark)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if mark is not None:
            span = Span(name, mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 1, source)
        else:
            span = Span(name, 1, 1, 1, 1, source)
        raise RulepassError(
            Diagnostic("yaml-syntax", f"YAML syntax error: {problem}", span, hint=_syntax_hint(exc, source))
        ) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (control characters, ...)
        raise _reader_error(exc, source) from None
    except yaml.YAMLError as exc:
        raise error("yaml-syntax", f"YAML syntax error: {exc}", Span(name, 1, 1, 1, 1, source)) from None
    except UnicodeEncodeError as exc:  # text (not a file) holding a lone surrogate
        line, col = source.position(exc.start)
        raise error(
            "encoding",
            f"the text holds an invalid character {text[exc.start]!r}",
            Span(name, line, col, line, col, source),
        ) from None
    if not root_set:
        doc.data = None
    return doc


def _reader_error(exc: yaml.reader.ReaderError, source: Source) -> RulepassError:
    # libyaml counts UTF-8 bytes, the pure-Python reader characters
    pos = int(exc.position)
    if _Loader is not yaml.SafeLoader:
        pos = len(source.text.encode("utf-8", "surrogatepass")[:pos].decode("utf-8", "ignore"))
    line, col = source.position(min(pos, max(len(source.text) - 1, 0)))
    ch = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
    return error(
        "yaml-syntax",
        f"YAML syntax error: unacceptable character U+{ch:04X} ({exc.reason})",
        Span(source.name, line, col, line, col, source),
        hint="remove it, or write it as an escape inside a double-quoted string",
    )


def _syntax_hint(exc: yaml.MarkedYAMLError, source: Source) -> str | None:
    """What usually causes a YAML syntax error in a rule file, and where the construct it broke began."""
    hints: list[str] = []
    problem, mark, ctx = exc.problem or "", exc.problem_mark, exc.context_mark
    if "mapping values are not allowed" in problem:
        hints.append(
            "a ': ' inside an unquoted value starts a mapping; quote the value, "
            "or write it as a block scalar (`>` with the text on the next lines)"
        )
    at = _index_of(source, mark.line + 1, mark.column + 1) if mark is not None else -1
    if 0 <= at < len(source.text) and source.text[at] == "\t":
        hints.append("YAML does not allow tabs here; indent with spaces")
    if exc.context and ctx is not None and (mark is None or (ctx.line, ctx.column) != (mark.line, mark.column)):
        hints.append(f"{exc.context} that starts on line {ctx.line + 1}, column {ctx.column + 1}")
    return "; ".join(hints) or None


def read_text(path: str | Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a UTF-8 text file, turning every I/O or encoding problem into one clear error."""
    p = Path(path)
    name = str(path)
    try:
        if p.is_dir():
            raise error("io", f"{what} '{name}' is a directory", where=name)
        size = p.stat().st_size
        if size > max_bytes:
            raise error("io", f"{what} is {size} bytes, over the {max_bytes}-byte limit", where=name)
        raw = p.read_bytes()
    except FileNotFoundError:
        raise error("io", f"{what} '{name}' does not exist", where=name) from None
    except PermissionError:
        raise error("io", f"{what} '{name}' cannot be read (permission denied)", where=name) from None
    except OSError as exc:
        raise error("io", f"{what} '{name}' cannot be read: {exc.strerror or exc}", where=name) from None
    if b"\x00" in raw:
        raise error("encoding", f"{what} is not a text file (it contains NUL bytes)", Span(name, 1, 1, 1, 1, None))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(
            "encoding",
            f"{what} is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            Span(name, line, col, line, col, None),
        ) from None
    return text


def load_file(path: str | Path, *, what: str = "file") -> YamlDoc:
    """Read and parse a YAML or JSON file into a :class:`YamlDoc`."""
    return load_text(read_text(path, what=what), str(path))
