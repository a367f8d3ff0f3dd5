"""Project settings for the command line: `[tool.rulepass]` in `pyproject.toml`, or a `rulepass.toml`.

The nearest folder from the working directory upwards that holds a `rulepass.toml`, or a `pyproject.toml` with a
`[tool.rulepass]` table, gives the settings (`rulepass.toml` first within one folder; a `pyproject.toml` without
the table is passed over). Keys: `rules` (a path or a list of paths, relative to the file's folder: the rule
sets, as `--rules` and `validate PATH`), `level` (`O0`..`O3`) and `disable` (a list of passes). What the command
line gives wins: a setting fills only an option that was not given. A file that is not valid TOML, an unknown
key or a value of the wrong type is one error naming the file, line and column. TOML is read with the standard
library's `tomllib` (the `tomli` backport on Python 3.10).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base.diagnostics import Source, Span, did_you_mean, error
from .base.files import read_text
from .dsl.rules import DEFAULT_LEVELS, LEVELS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_LEVEL = DEFAULT_LEVELS[0]  # GE's default working level
KEYS = ("rules", "level", "disable")
_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True)
class Config:
    """The settings read, and the file they came from."""

    path: Path
    rules: tuple[str, ...] = ()
    level: str | None = None
    disable: tuple[str, ...] = ()


def find_config(start: Path) -> Path | None:
    """The settings file that governs `start`: the nearest `rulepass.toml`, or `pyproject.toml` with a
    `[tool.rulepass]` table, in `start` or a folder above it."""
    for folder in (start, *start.parents):
        own = folder / "rulepass.toml"
        if own.is_file():
            return own
        project = folder / "pyproject.toml"
        if project.is_file() and _has_table(project):
            return project
    return None


def _has_table(path: Path) -> bool:
    """Whether a pyproject.toml has a `[tool.rulepass]` table (an unreadable one is looked at when loaded)."""
    try:
        return re.search(r"^\s*\[\s*tool\s*\.\s*rulepass\s*[\].]", path.read_text(encoding="utf-8"), re.M) is not None
    except (OSError, UnicodeDecodeError):
        return False


def load_config(path: Path) -> Config:
    """Read and check a settings file; a problem is one RulepassError located in it."""
    text = read_text(path, what="settings file")
    source = Source(str(path), text)
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _AT.search(str(exc))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        message = _AT.sub("", str(exc)).strip()
        raise error("config", f"invalid TOML: {message}", Span.point(source, line, col)) from None
    table = data.get("tool", {}).get("rulepass", {}) if path.name == "pyproject.toml" else data
    if not isinstance(table, dict):
        raise error("config", "[tool.rulepass] must be a table", _key_span(source, "rulepass"))
    for key in table:
        if key not in KEYS:
            hint = did_you_mean(key, KEYS) or f"the keys are {', '.join(KEYS)}"
            raise error("config", f"unknown setting '{key}'", _key_span(source, key), hint=hint)
    rules = table.get("rules", [])
    rules = [rules] if isinstance(rules, str) else rules
    _expect(source, "rules", rules, "a path or a list of paths")
    disable = table.get("disable", [])
    _expect(source, "disable", disable, "a list of pass names")
    level = table.get("level")
    if level is not None and level not in LEVELS:
        raise error("config", f"level must be one of {', '.join(LEVELS)}, got {level!r}", _key_span(source, "level"))
    return Config(path, tuple(str(path.parent / r) for r in rules), level, tuple(disable))


def _expect(source: Source, key: str, value: Any, what: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise error("config", f"{key} must be {what}, got {value!r}", _key_span(source, key))


def _key_span(source: Source, key: str) -> Span:
    """The span of the first `key =` (or `[..key]`) line of the file (its first line when none is found)."""
    pattern = re.compile(rf"^\s*(?:{re.escape(key)}\s*=|\[.*\b{re.escape(key)}\s*\])")
    for n, line in enumerate(source.text.splitlines(), start=1):
        m = pattern.match(line)
        if m is not None:
            col = line.index(key) + 1
            return Span.point(source, n, col, len(key))
    return Span.point(source, 1, 1)


def apply_config(args: argparse.Namespace, start: Path) -> Config | None:
    """Fill the options the command line left out (rule paths, level, disabled passes) from the settings that
    govern `start`; the default level where neither says. Returns the settings used, if any (a command that
    takes none of those options reads none, so a bad settings file does not stop `schema` or `lsp`)."""
    uses = any(hasattr(args, key) for key in ("rules", "paths", "level", "disable"))
    path = None if getattr(args, "no_config", False) or not uses else find_config(start)
    config = load_config(path) if path is not None else None
    if config is not None and config.rules:
        if getattr(args, "rules", False) is None:
            args.rules = list(config.rules)
        if getattr(args, "paths", None) == []:
            args.paths = list(config.rules)
    if hasattr(args, "level") and args.level is None:
        args.level = (config.level if config is not None else None) or DEFAULT_LEVEL
    if config is not None and getattr(args, "disable", None) == []:
        args.disable = list(config.disable)
    return config
