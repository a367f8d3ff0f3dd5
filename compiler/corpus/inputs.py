"""What a corpus run reads: the graphs (files, folders, globs, manifests) and the rule sets, as plain data that
pickles (a worker process, or a cluster worker that shares no file with us, gets the bytes, not the paths).

A rule set travels as its files' bytes (:class:`RuleSource`) and is compiled once per worker process; its
fingerprint (:func:`fingerprint`) says, per rule, what decides its effect on a graph: the rule's place and
header (name, levels, order, tags, enabled) and its body (match, checks, lets, actions) with every source
position left out, so an edit that only moves a rule's lines changes nothing.
"""

from __future__ import annotations

import glob
import hashlib
import importlib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from ... import __version__
from ...base.diagnostics import RulepassError, Span, error
from ...base.files import read_bytes
from ...base.limits import MAX_RULE_FILE_BYTES
from ...base.yaml_source import load_file
from ...dsl.cache import digest
from ...dsl.load import RuleSet, rule_files
from ...dsl.rules import Expr

GRAPH_SUFFIXES = (".json", ".yaml", ".yml", ".onnx")
MANIFEST_STRUCTURED = (".json", ".yaml", ".yml")
LEVELS = ("O0", "O1", "O2", "O3")
_NOT_CONTENT = frozenset({"span", "file", "var_span", "after_spans", "before_spans"})
_HEADER = ("name", "levels", "after", "before", "enabled", "tags")


@dataclass(frozen=True)
class ImportOptions:
    """How an ONNX file of the corpus is imported (`rulepass import`'s options; graph files ignore them)."""

    formats: str = "keep"
    dims: tuple[tuple[str, int], ...] = ()
    input_shape: str | None = None
    weights: str = "inline"

    def to_json(self) -> dict[str, Any]:
        """As JSON (part of a cache key and of an entry's label)."""
        return {
            "formats": self.formats,
            "dims": dict(self.dims),
            "input_shape": self.input_shape,
            "weights": self.weights,
        }

    def changes(self) -> list[str]:
        """The options that differ from the defaults, as `name=value` words."""
        base = ImportOptions().to_json()
        return [f"{k}={v}" for k, v in self.to_json().items() if v != base[k]]


@dataclass(frozen=True)
class Entry:
    """One graph of a corpus: a file, how to import it (ONNX), and the level it is run at (None: the run's)."""

    path: str
    imports: ImportOptions = ImportOptions()
    level: str | None = None

    @property
    def is_onnx(self) -> bool:
        """Whether the file is an ONNX model (imported), not a graph file."""
        return self.path.lower().endswith(".onnx")

    @property
    def label(self) -> str:
        """The path, and the options that are not the defaults: how reports name the entry."""
        words = (self.imports.changes() if self.is_onnx else []) + ([f"level={self.level}"] if self.level else [])
        return f"{self.path} [{', '.join(words)}]" if words else self.path


def expand(
    items: Sequence[str], manifests: Sequence[str] = (), imports: ImportOptions = ImportOptions()
) -> list[Entry]:
    """The entries of a corpus given as files, folders (every graph or ONNX file below, sorted), globs and
    manifest files, in the order given, each once. A path that does not exist stays an entry: reading it is
    that entry's error, not the run's. A manifest that cannot be read or understood raises."""
    out: list[Entry] = []
    for item in items:
        out += [Entry(p, imports) for p in _paths(item)]
    for m in manifests:
        out += _manifest(m, imports)
    seen: set[Entry] = set()
    return [e for e in out if not (e in seen or seen.add(e))]  # type: ignore[func-returns-value]


def _paths(item: str, base: Path | None = None) -> list[str]:
    """The graph files one argument names: itself, the files below a folder, or a glob's matches (sorted)."""
    full = str(base / item) if base is not None and not Path(item).is_absolute() else item
    if Path(full).is_dir():
        found = (p for p in Path(full).rglob("*") if p.suffix.lower() in GRAPH_SUFFIXES and p.is_file())
        return sorted(str(p) for p in found if not any(part.startswith(".") for part in p.relative_to(full).parts))
    if glob.has_magic(full):
        matches = sorted(p for p in glob.glob(full, recursive=True) if Path(p).is_file())
        return matches or [full]  # a glob matching nothing is one entry that cannot be read
    return [full]


def _manifest(path: str, imports: ImportOptions) -> list[Entry]:
    """The entries a manifest lists: a text file of paths (one a line, `#` comments), or a YAML/JSON list (or
    `{corpus: [...]}`) of paths and of mappings `{path, formats, dims, input_shape, weights, level}`. Paths are
    relative to the manifest's folder."""
    base = Path(path).parent
    if not path.lower().endswith(MANIFEST_STRUCTURED):
        raw = read_bytes(path, what="corpus manifest").decode("utf-8", "replace")
        lines = (line.split("#", 1)[0].strip() for line in raw.splitlines())
        return [Entry(p, imports) for line in lines if line for p in _paths(line, base)]
    doc = load_file(path, what="corpus manifest")
    data = doc.data.get("corpus") if isinstance(doc.data, dict) else doc.data
    if not isinstance(data, list):
        raise error("corpus-manifest", "expected a list of graph files (or a mapping with a `corpus` list)", where=path)
    out: list[Entry] = []
    for i, item in enumerate(data):
        at = f"{path}: entry {i + 1}"
        if isinstance(item, str):
            out += [Entry(p, imports) for p in _paths(item, base)]
        elif isinstance(item, dict) and isinstance(item.get("path"), str):
            opts, level = _entry_options(item, imports, at)
            out += [Entry(p, opts, level) for p in _paths(item["path"], base)]
        else:
            raise error("corpus-manifest", "expected a path, or a mapping with a `path` string", where=at)
    return out


def _entry_options(item: dict[str, Any], imports: ImportOptions, at: str) -> tuple[ImportOptions, str | None]:
    """A manifest entry's import options (defaults: the run's) and level, each checked."""
    unknown = sorted(set(item) - {"path", "formats", "dims", "input_shape", "weights", "level"})
    if unknown:
        raise error("corpus-manifest", f"unknown key(s) {', '.join(map(repr, unknown))}", where=at)
    formats = item.get("formats", imports.formats)
    weights = item.get("weights", imports.weights)
    shape = item.get("input_shape", imports.input_shape)
    dims = item.get("dims", dict(imports.dims))
    level = item.get("level")
    if formats not in ("keep", "ascend") or weights not in ("inline", "placeholder"):
        raise error("corpus-manifest", "`formats` is keep or ascend, `weights` inline or placeholder", where=at)
    if not (shape is None or isinstance(shape, str)) or not (level is None or level in LEVELS):
        raise error("corpus-manifest", f"`input_shape` is a string, `level` one of {', '.join(LEVELS)}", where=at)
    if not isinstance(dims, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 1 for k, v in dims.items()
    ):
        raise error("corpus-manifest", "`dims` maps names to positive integers", where=at)
    return ImportOptions(formats, tuple(sorted(dims.items())), shape, weights), level


@dataclass(frozen=True)
class GraphData:
    """An entry with its file's bytes (or the error reading them) and their digest."""

    entry: Entry
    data: bytes = b""
    digest: str = ""
    error: str | None = None

    @staticmethod
    def read(entry: Entry, max_bytes: int) -> GraphData:
        """Read an entry's file; an unreadable one carries its error instead of raising."""
        try:
            raw = read_bytes(entry.path, what="graph file", max_bytes=max_bytes)
        except RulepassError as exc:
            return GraphData(entry, error=error_line(entry, exc))
        return GraphData(entry, raw, hashlib.sha256(raw).hexdigest())


def error_line(entry: Entry, exc: RulepassError) -> str:
    """The first diagnostic of an error about an entry's file in one line, without the file's path in front
    (reports put the entry's label there)."""
    line = exc.diagnostics[0].headline()
    return line[len(entry.path) + 2 :] if line.startswith(entry.path + ": ") else line


@dataclass(frozen=True)
class RuleSource:
    """A rule set as its files' (name, bytes): what pickles to a worker, which compiles it once."""

    files: tuple[tuple[str, bytes], ...]

    @staticmethod
    def read(paths: Sequence[str | Path] | None) -> RuleSource:
        """The rule files of `paths` (files or folders; default: the bundled rules); raises when one is missing."""
        from ...rules import bundled_rules_dir

        found, diags = rule_files(list(paths) if paths else [bundled_rules_dir()])
        if diags:
            raise RulepassError(diags)
        return RuleSource(
            tuple((str(f), read_bytes(f, what="rule file", max_bytes=MAX_RULE_FILE_BYTES)) for f in found)
        )

    @cached_property
    def digest(self) -> str:
        """The digest of every file's name and bytes."""
        return digest(*(p for name, raw in self.files for p in (name, raw)))

    def load(self) -> RuleSet:
        """The compiled rule set (raises on any error), compiled once per process."""
        return _compiled(self)


_COMPILED: dict[str, RuleSet] = {}


def _compiled(source: RuleSource) -> RuleSet:
    known = _COMPILED.get(source.digest)
    if known is None:
        from ..passes import load_ge_rule_sources

        known = load_ge_rule_sources(source.files).raise_on_error()
        if len(_COMPILED) >= 8:
            _COMPILED.clear()
        _COMPILED[source.digest] = known
    return known


@dataclass(frozen=True)
class RuleFingerprint:
    """What one rule contributes to a cache key: its header, its body, and the op types it matches."""

    header: str
    body: str
    match_types: frozenset[str] | None = field(default=None)


def fingerprint(rules: RuleSet) -> tuple[RuleFingerprint, ...]:
    """The fingerprint of every rule of `rules`, in order (see the module's docstring)."""
    out = []
    for r in rules.rules:
        parts = [f.name for f in fields(r.rule) if f.name not in _HEADER and f.name not in _NOT_CONTENT]
        body = {name: _canon(getattr(r.rule, name)) for name in parts}
        header = [_canon(getattr(r.rule, name)) for name in _HEADER] + [r.step_limit]
        out.append(RuleFingerprint(digest(repr(header)), digest(repr(body)), r.match_types))
    return tuple(out)


def _canon(x: Any) -> Any:
    """`x` (a rule's parsed content) as nested tuples of plain values, without source positions."""
    if isinstance(x, Expr):
        return ("expr", x.text)
    if isinstance(x, Span):
        return None
    if is_dataclass(x) and not isinstance(x, type):
        return (
            type(x).__name__,
            tuple((f.name, _canon(getattr(x, f.name))) for f in fields(x) if f.name not in _NOT_CONTENT),
        )
    if isinstance(x, (list, tuple)):
        return tuple(_canon(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((str(k), _canon(v)) for k, v in x.items()))
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    raise TypeError(f"cannot fingerprint a {type(x).__name__}")  # a new kind of rule content: teach _canon it


def result_key(
    product: str,
    graph: GraphData,
    op_types: Iterable[str],
    rules: Sequence[RuleFingerprint],
    options: dict[str, Any],
) -> str:
    """The cache key of one product of one graph under one rule set: the code, the product, the options, the
    graph's bytes and file name, and every rule's header in order with, only for the rules that can match a
    node of the graph, their body. A rule matching no op type the graph has has no candidate in it (rules
    cannot add nodes or change an op type), so its body cannot change the result."""
    present = frozenset(op_types)
    parts: list[str] = [code_digest(), product, json.dumps(options, sort_keys=True), graph.digest]
    parts += [Path(graph.entry.path).name, json.dumps(graph.entry.imports.to_json()) if graph.entry.is_onnx else ""]
    for fp in rules:
        relevant = fp.match_types is None or not fp.match_types.isdisjoint(present)
        parts += [fp.header, fp.body if relevant else "-"]
    return "r-" + digest(*parts)


def types_key(graph: GraphData) -> str:
    """The cache key of a graph's name and op types (what `result_key` needs before any result is known)."""
    imports = json.dumps(graph.entry.imports.to_json()) if graph.entry.is_onnx else ""
    return "t-" + digest(code_digest(), graph.digest, Path(graph.entry.path).name, imports)


@cache
def code_digest() -> str:
    """The digest of the code a result depends on: every source file of rulepass (rules excepted: they are an
    input), its version and Python's."""
    parts: list[str | bytes] = [__version__, "{}.{}".format(*sys.version_info[:2])]
    for pkg in ("rulepass", "rulepass.dsl", "rulepass.engine", "rulepass.compiler"):
        root = Path(str(importlib.import_module(pkg).__file__)).parent
        files = [*root.glob("*.py"), *(root / "base").glob("*.py")] if pkg == "rulepass" else list(root.rglob("*"))
        for f in sorted(files):
            if f.suffix in (".py", ".lark", ".json") and f.is_file():
                parts += [str(f.relative_to(root)), f.read_bytes()]
    return digest(*parts)
