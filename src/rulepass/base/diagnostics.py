"""Diagnostics that keep their source spans through every phase.

Every mistake a user can make in a rule file, a graph file or an argument ends up as a :class:`Diagnostic`
with a :class:`Span` (file, line, column) and is rendered with a caret excerpt of the offending line. The
loaders, the schema check, the expression parser and the checker all report through this one type, so the
command line prints them alike and tests can snapshot them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]

# C0 controls but tab (newline kept or not), DEL, C1 controls, the Unicode line and paragraph separators and the
# bidirectional overrides and isolates ("trojan source"): what could move the cursor, forge a line, recolour a
# terminal or reorder what a reader sees
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNPRINTABLE = re.compile(f"[{_CONTROLS}\n]")
_UNPRINTABLE_BUT_NEWLINE = re.compile(f"[{_CONTROLS}]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control character (newline too, unless kept) escaped as `\\xNN` or `\\uNNNN`: user text
    (names, values, paths) shown in a terminal can neither forge a line nor send escape sequences."""
    pattern = _UNPRINTABLE_BUT_NEWLINE if keep_newlines else _UNPRINTABLE
    return pattern.sub(_escape, text) if pattern.search(text) else text


class Source:
    """The text of one input file, kept so diagnostics can quote the offending line."""

    __slots__ = ("_line_starts", "name", "text")

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self._line_starts: list[int] | None = None

    def line_text(self, line: int) -> str:
        """The text of 1-based `line`, without its newline ('' when out of range)."""
        starts = self._starts()
        if line < 1 or line > len(starts):
            return ""
        begin = starts[line - 1]
        end = self.text.find("\n", begin)
        return self.text[begin : end if end >= 0 else len(self.text)].rstrip("\r")

    def position(self, index: int) -> tuple[int, int]:
        """1-based (line, column) of character `index`."""
        starts = self._starts()
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= index:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, index - starts[lo] + 1

    def _starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos >= 0:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        return self._line_starts


@dataclass(frozen=True)
class Span:
    """A region of a source file: 1-based line and column of its start and (inclusive) end."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    source: Source | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    @staticmethod
    def point(source: Source, line: int, col: int, length: int = 1) -> Span:
        """A span on one line starting at (line, col), `length` characters long."""
        return Span(source.name, line, col, line, col + max(length, 1) - 1, source)

    def to_json(self) -> dict[str, object]:
        """The span as a JSON object."""
        return {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
        }


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in an input, with where it is and, optionally, how to fix it."""

    code: str
    message: str
    span: Span | None = None
    severity: Severity = "error"
    hint: str | None = None
    where: str | None = None  # a graph element or argument when there is no file position

    def headline(self) -> str:
        """`file:line:col: error[code]: message` on one line."""
        loc = f"{self.span}: " if self.span is not None else (f"{self.where}: " if self.where else "")
        return printable(f"{loc}{self.severity}[{self.code}]: {self.message}")

    def render(self) -> str:
        """The headline, the source line with carets under the span, and the hint."""
        lines = [self.headline()]
        span = self.span
        if span is not None and span.source is not None:
            text = span.source.line_text(span.line)
            if text:
                shown = printable(text.expandtabs(1))
                if len(shown) > 160:  # keep excerpts of huge lines readable: a window around the caret
                    start = max(0, span.col - 60)
                    shown = ("..." if start else "") + shown[start : start + 120] + "..."
                    col = span.col - start + (3 if start else 0)
                else:
                    col = span.col
                width = span.end_col - span.col + 1 if span.end_line == span.line else len(text) - span.col + 1
                width = max(1, min(width, max(1, len(shown) - col + 1)))
                gutter = f"{span.line:>5} | "
                lines.append(gutter + shown)
                lines.append(" " * (len(gutter) - 2) + "| " + " " * (col - 1) + "^" * width)
        if self.hint:
            lines.append(f"      = help: {printable(self.hint)}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        """The diagnostic as a JSON object for tools."""
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "span": self.span.to_json() if self.span is not None else None,
            "where": self.where,
            "hint": self.hint,
        }


class Diagnosed:
    """A result that carries `diagnostics` (a rule set, a validation): its errors and its warnings."""

    diagnostics: list[Diagnostic]

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics that are errors."""
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        """The diagnostics that are warnings."""
        return [d for d in self.diagnostics if d.severity == "warning"]


class RulepassError(Exception):
    """One or more diagnostics that stop the operation; never shown as a traceback."""

    def __init__(self, diagnostics: Diagnostic | Sequence[Diagnostic]) -> None:
        diags = (diagnostics,) if isinstance(diagnostics, Diagnostic) else tuple(diagnostics)
        self.diagnostics: tuple[Diagnostic, ...] = diags
        super().__init__("\n".join(d.headline() for d in diags))

    def render(self) -> str:
        """Every diagnostic rendered with its excerpt."""
        return "\n".join(d.render() for d in self.diagnostics)


def error(
    code: str, message: str, span: Span | None = None, *, hint: str | None = None, where: str | None = None
) -> RulepassError:
    """A RulepassError carrying one error diagnostic."""
    return RulepassError(Diagnostic(code, message, span, hint=hint, where=where))


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelt `name`, or None when nothing is close."""
    import difflib

    found = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """A 'did you mean' hint for a misspelt `name`, or None."""
    best = suggest(name, candidates)
    return f"did you mean '{best}'?" if best else None
