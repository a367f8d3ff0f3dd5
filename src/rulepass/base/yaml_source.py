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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .diagnostics import Diagnostic, RulepassError, Source, Span, error
from .files import read_text
from .json_positions import json_ranges
from .limits import LimitError, int_literal

PathKey = tuple[str | int, ...]

MAX_DEPTH = 64
MAX_ALIAS_EXPANSION = 100_000

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
_SURROGATE = re.compile("[\ud800-\udfff]")


def plain_scalar(text: str) -> object:
    """The value of a plain (unquoted) scalar by the YAML 1.2 core schema (LimitError for an integer literal
    over MAX_INT_DIGITS)."""
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.fullmatch(text):
        return int_literal(text)
    if _INT_OCT.fullmatch(text):
        return int_literal(text[2:], 8)
    if _INT_HEX.fullmatch(text):
        return int_literal(text[2:], 16)
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


Range = tuple[int, int, int, int]


class YamlDoc:
    """A loaded document: plain data plus the source range of every value and mapping key.

    The ranges may be found lazily: `locate` (when given) re-reads the text with positions the first time a
    range is asked for, so a document that never reports an error never pays for them.
    """

    def __init__(
        self,
        source: Source,
        data: Any,
        *,
        locate: Callable[[], YamlDoc | None] | None = None,
    ) -> None:
        self.source = source
        self.data = data
        self._locate = locate
        self._ranges: dict[PathKey, Range] = {}
        self._key_ranges: dict[PathKey, Range] = {}
        self._styles: dict[PathKey, str | None] = {}

    def _located(self) -> YamlDoc:
        if self._locate is not None:
            locate, self._locate = self._locate, None
            found = locate()
            if found is not None:
                self._ranges, self._key_ranges, self._styles = found._ranges, found._key_ranges, found._styles
        return self

    @property
    def ranges(self) -> dict[PathKey, Range]:
        """The source range of every value, by path."""
        return self._located()._ranges

    @property
    def key_ranges(self) -> dict[PathKey, Range]:
        """The source range of every mapping key, by the path of its value."""
        return self._located()._key_ranges

    @property
    def styles(self) -> dict[PathKey, str | None]:
        """The scalar style of every value, by path (None for plain scalars and collections)."""
        return self._located()._styles

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, YamlDoc):
            return NotImplemented
        return (self.source, self.data, self.ranges, self.key_ranges, self.styles) == (
            other.source,
            other.data,
            other.ranges,
            other.key_ranges,
            other.styles,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"YamlDoc(source={self.source!r}, data={self.data!r})"

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
        out._ranges = {k[n:]: v for k, v in self.ranges.items() if k[:n] == p}
        out._key_ranges = {k[n:]: v for k, v in self.key_ranges.items() if k[:n] == p}
        out._styles = {k[n:]: v for k, v in self.styles.items() if k[:n] == p}
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


def _strict_json(text: str, name: str, max_depth: int) -> tuple[Any, bool] | None:
    """JSON's own rules for a .json file (YAML would accept trailing commas, comments, 'Infinity' as a string).

    (data, plain): `plain` when the YAML reader would object to nothing JSON allows (a duplicate key, nesting
    deeper than `max_depth`, a lone surrogate), so that the data stands without it. None when the text is nested
    too deeply for Python's parser or holds an integer over MAX_INT_DIGITS: the YAML pass then reports that with
    a position.
    """
    source = Source(name, text)
    duplicates = False

    def constant(word: str) -> Any:
        raise ValueError(f"{word} is not a JSON value")

    def mapping(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicates
        out = dict(pairs)
        if len(out) != len(pairs):
            duplicates = True
        return out

    try:
        data = json.loads(text, parse_constant=constant, parse_int=int_literal, object_pairs_hook=mapping)
    except json.JSONDecodeError as exc:
        raise error(
            "json-syntax",
            f"JSON syntax error: {exc.msg}",
            Span(name, exc.lineno, exc.colno, exc.lineno, exc.colno, source),
        ) from None
    except (RecursionError, LimitError):
        return None
    except ValueError as exc:
        raise error("json-syntax", f"invalid JSON: {exc}", Span(name, 1, 1, 1, 1, source)) from None
    plain = not duplicates and _nested_within(data, max_depth) and (text.isascii() or not _SURROGATE.search(text))
    return data, plain


def _nested_within(data: Any, max_depth: int) -> bool:
    """Whether no list or mapping of `data` is nested deeper than `max_depth` levels (the root being level 1)."""
    todo: list[tuple[Any, int]] = [(data, 1)] if isinstance(data, (dict, list)) else []
    while todo:
        value, depth = todo.pop()
        if depth > max_depth:
            return False
        for child in value.values() if isinstance(value, dict) else value:
            if isinstance(child, (dict, list)):
                todo.append((child, depth + 1))
    return True


def load_text(
    text: str,
    name: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_alias_expansion: int = MAX_ALIAS_EXPANSION,
    lazy_positions: bool = False,
) -> YamlDoc:
    """Parse YAML or JSON text into a :class:`YamlDoc`; every problem is a RulepassError with a span.

    A name ending in `.json` is held to JSON's rules and read by the json module; the YAML reader adds the
    positions only when a span is first asked for (to report an error), or at once when it would object to
    what JSON allows (duplicate keys, deep nesting, lone surrogates) to report that. Valid JSON that libyaml
    cannot read (surrogate-pair escapes) has no positions. YAML is read with its positions, or with
    `lazy_positions` without, and again with them when a span is first asked for.
    """

    def located() -> YamlDoc | None:
        try:
            return _load_yaml(text, name, max_depth=max_depth, max_alias_expansion=max_alias_expansion)
        except RulepassError:  # what libyaml cannot read (e.g. JSON's surrogate-pair escapes) has no positions
            return None

    if name.lower().endswith(".json"):
        read = _strict_json(text, name, max_depth)
        if read is not None and read[1]:
            return _json_doc(Source(name, text), read[0])
        try:
            return _load_yaml(text, name, max_depth=max_depth, max_alias_expansion=max_alias_expansion)
        except RulepassError as exc:
            if read is None or exc.diagnostics[0].code != "yaml-syntax":
                raise
            return YamlDoc(Source(name, text), read[0])
    if not lazy_positions:
        return _load_yaml(text, name, max_depth=max_depth, max_alias_expansion=max_alias_expansion)
    try:
        doc = _load_yaml(text, name, max_depth=max_depth, max_alias_expansion=max_alias_expansion, positions=False)
    except RulepassError:  # read again with positions: the same error, with all it says (e.g. the first key's line)
        return _load_yaml(text, name, max_depth=max_depth, max_alias_expansion=max_alias_expansion)
    return YamlDoc(doc.source, doc.data, locate=located)


def _json_doc(source: Source, data: Any) -> YamlDoc:
    """A document read by the json module, its ranges found from the text when asked (base.json_positions)."""
    doc = YamlDoc(source, data)
    doc._ranges, doc._key_ranges, doc._styles = json_ranges(source, data)  # type: ignore[assignment]
    return doc


class _TreeBuilder:
    """Builds a YamlDoc from YAML events with an explicit stack (see the module docstring for what it refuses)."""

    def __init__(self, source: Source, *, max_depth: int, max_alias_expansion: int, positions: bool) -> None:
        self.source = source
        self.doc = YamlDoc(source, None)
        self.max_depth = max_depth
        self.max_alias_expansion = max_alias_expansion
        self.positions = positions
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.stack: list[_Frame] = []
        self.expanded = 0
        self.documents = 0
        self.root_set = False

    def sp(self, start: Any, end: Any | None = None) -> Span:
        r = _mark_range(start, end if end is not None else start)
        return Span(self.source.name, r[0], r[1], r[2], r[3] if end is not None else r[1], self.source)

    def attach(self, value: Any, start: Any, end: Any, nodes: int, style: str | None) -> None:
        """Put a finished value in its parent (or make it the root), recording where it stands."""
        doc, stack = self.doc, self.stack
        if not stack:
            doc.data = value
            if self.positions:
                doc._ranges[()] = _mark_range(start, end)
                doc._styles[()] = style
            self.root_set = True
            return
        parent = stack[-1]
        parent.nodes += nodes
        if parent.kind == "seq":
            if self.positions:
                path = (*parent.path, len(parent.container))
                doc._ranges[path] = _mark_range(start, end)
                doc._styles[path] = style
            parent.container.append(value)
        elif not parent.key_pending:
            self._key(parent, value, start, end)
        else:
            parent.container[parent.key] = value
            if self.positions:
                path = (*parent.path, str(parent.key))
                doc._ranges[path] = _mark_range(start, end)
                doc._styles[path] = style
                if parent.key_range is not None:
                    doc._key_ranges[path] = parent.key_range
            parent.key_pending = False

    def _key(self, parent: _Frame, value: Any, start: Any, end: Any) -> None:
        if isinstance(value, (dict, list)):
            raise error("yaml-key", "a mapping key must be a plain scalar, not a mapping or list", self.sp(start))
        key = (
            value
            if isinstance(value, str)
            else ("null" if value is None else str(value).lower() if isinstance(value, bool) else str(value))
        )
        if key in parent.container:
            first = self.doc._key_ranges.get((*parent.path, key))
            where = f" (first defined on line {first[0]})" if first else ""
            raise error(
                "duplicate-key",
                f"duplicate key '{key}'{where}",
                self.sp(start),
                hint="each key may appear once in a mapping",
            )
        parent.key, parent.key_pending = key, True
        if self.positions:
            parent.key_range = _mark_range(start, end)

    def next_path(self) -> PathKey:
        if not self.stack or not self.positions:
            return ()
        parent = self.stack[-1]
        if parent.kind == "seq":
            return (*parent.path, len(parent.container))
        return (*parent.path, str(parent.key)) if parent.key_pending else (*parent.path, "<key>")

    def check_tag(self, tag: str | None, at: Any) -> None:
        if tag is not None and tag not in _STD_TAGS:
            shown = "!!" + tag[len("tag:yaml.org,2002:") :] if tag.startswith("tag:yaml.org,2002:") else tag
            raise error(
                "yaml-tag", f"tag '{shown}' is not allowed: these files hold plain data only", self.sp(at),
                hint="remove the tag",
            )  # fmt: skip

    def event(self, ev: Any) -> None:
        """Take one parser event."""
        if isinstance(ev, yaml.ScalarEvent):
            self.scalar(ev)
        elif isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self.check_tag(ev.tag, ev.start_mark)
            if len(self.stack) >= self.max_depth:
                raise error(
                    "yaml-depth", f"nesting deeper than {self.max_depth} levels", self.sp(ev.start_mark),
                    hint="these files never need such depth; is the file generated wrongly?",
                )  # fmt: skip
            is_map = isinstance(ev, yaml.MappingStartEvent)
            frame = _Frame("map" if is_map else "seq", {} if is_map else [], self.next_path(), ev.start_mark, ev.anchor)
            self.stack.append(frame)
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frame = self.stack.pop()
            if frame.anchor:
                self.anchors[frame.anchor] = (frame.container, frame.nodes)
            self.attach(frame.container, frame.start_mark, ev.end_mark, frame.nodes, None)
        elif isinstance(ev, yaml.AliasEvent):
            self.alias(ev)
        elif isinstance(ev, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise error(
                    "yaml-documents", "expected a single YAML document, found another one", self.sp(ev.start_mark),
                    hint="split the file or remove the '---' separator",
                )  # fmt: skip

    def scalar(self, ev: Any) -> None:
        self.check_tag(ev.tag, ev.start_mark)
        try:
            if ev.tag is not None and ev.tag != "!":
                value = _tagged_scalar(ev.tag, ev.value, self.sp(ev.start_mark, ev.end_mark))
            elif ev.implicit[0] and not ev.style:
                value = plain_scalar(ev.value)
            else:
                value = ev.value
        except LimitError as exc:
            raise error("limit", str(exc), self.sp(ev.start_mark, ev.end_mark)) from None
        if ev.anchor:
            self.anchors[ev.anchor] = (value, 1)
        self.attach(value, ev.start_mark, ev.end_mark, 1, ev.style or None)

    def alias(self, ev: Any) -> None:
        if ev.anchor not in self.anchors:
            raise error("yaml-alias", f"unknown alias '*{ev.anchor}'", self.sp(ev.start_mark))
        value, nodes = self.anchors[ev.anchor]
        self.expanded += nodes
        if self.expanded > self.max_alias_expansion:
            raise error(
                "yaml-alias",
                f"aliases expand to more than {self.max_alias_expansion} values (an alias bomb?)",
                self.sp(ev.start_mark, ev.end_mark),
            )
        self.attach(value, ev.start_mark, ev.end_mark, nodes, None)


def _load_yaml(
    text: str, name: str, *, max_depth: int, max_alias_expansion: int, positions: bool = True, loader: Any = _Loader
) -> YamlDoc:
    """The event-stream loader behind load_text (without `positions`, the ranges and styles stay empty)."""
    source = Source(name, text)
    builder = _TreeBuilder(source, max_depth=max_depth, max_alias_expansion=max_alias_expansion, positions=positions)
    try:
        for ev in yaml.parse(text, Loader=loader):
            builder.event(ev)
    except yaml.MarkedYAMLError as exc:
        if loader is not yaml.SafeLoader and "maximum nesting depth" in (exc.problem or ""):
            # libyaml (PyYAML 6.0.4 on) scans ahead and stops at its own limit (1000 levels) before this loader's
            # `max_depth` is met; the pure-Python parser streams the events and meets it where it is
            return _load_yaml(
                text, name, max_depth=max_depth, max_alias_expansion=max_alias_expansion, positions=positions,
                loader=yaml.SafeLoader,
            )  # fmt: skip
        raise _syntax_error(exc, source) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (control characters, ...)
        raise _reader_error(exc, source, loader) from None
    except yaml.YAMLError as exc:
        raise error("yaml-syntax", f"YAML syntax error: {exc}", Span(name, 1, 1, 1, 1, source)) from None
    except UnicodeEncodeError as exc:  # text (not a file) holding a lone surrogate
        line, col = source.position(exc.start)
        raise error(
            "encoding",
            f"the text holds an invalid character {text[exc.start]!r}",
            Span(name, line, col, line, col, source),
        ) from None
    if not builder.root_set:
        builder.doc.data = None
    return builder.doc


def _syntax_error(exc: yaml.MarkedYAMLError, source: Source) -> RulepassError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if mark is not None:
        span = Span(source.name, mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 1, source)
    else:
        span = Span(source.name, 1, 1, 1, 1, source)
    return RulepassError(
        Diagnostic("yaml-syntax", f"YAML syntax error: {problem}", span, hint=_syntax_hint(exc, source))
    )


def _reader_error(exc: yaml.reader.ReaderError, source: Source, loader: Any) -> RulepassError:
    # libyaml counts UTF-8 bytes, the pure-Python reader characters
    pos = int(exc.position)
    if loader is not yaml.SafeLoader:
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


def load_file(path: str | Path, *, what: str = "file") -> YamlDoc:
    """Read and parse a YAML or JSON file into a :class:`YamlDoc`."""
    return load_text(read_text(path, what=what), str(path))
