"""What the cache (:mod:`.cache`) keeps of rule files, as plain data, and how it is read back and checked.

Per rule file, the ASTs of its expressions and whether it satisfied the schema; per rule set, what checking it
found (see :func:`.load.validate_rules`). Nothing read back is trusted further than its tag: every value is
decoded into the types expected (a malformed one makes the entry count as missing) and an AST is rebuilt only
from the node types of :mod:`.ast`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.diagnostics import Diagnosed, Diagnostic, RulepassError, Source, Span
from ..base.files import decode_text
from ..base.yaml_source import load_text
from . import ast
from .cache import Store, code_digest, digest
from .catalogue import Catalogue
from .rules import Check, Expr, Parsed, RuleFile, read_rule_doc


@dataclass
class Validation(Diagnosed):
    """What checking rule files finds: the files read, the names of the rules that compile, every diagnostic."""

    files: list[str]
    rules: list[str]
    diagnostics: list[Diagnostic]


_MALFORMED = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)


def catalogue_digest(catalogue: Catalogue) -> str:
    """The digest of what the catalogue declares (roots, entities, fields, helpers and their types)."""
    return digest(json.dumps(catalogue.to_json(), sort_keys=True))


def read_rule_bytes(
    path: Path, raw: bytes | RulepassError, parsed: Parsed, store: Store | None
) -> tuple[RuleFile | None, list[Diagnostic]]:
    """Read one rule file from its bytes as `rules.read_rule_file` does, taking from the cache (and adding to
    it) the ASTs of its expressions and whether it satisfied the schema; `parsed` gains the ASTs."""
    if isinstance(raw, RulepassError):
        return None, list(raw.diagnostics)
    try:
        doc = load_text(decode_text(raw, str(path), what="rule file"), str(path))
    except RulepassError as exc:
        return None, list(exc.diagnostics)
    if store is None:
        return read_rule_doc(doc, parsed)
    key = "file-" + digest(code_digest(), raw)
    schema_ok = _take_asts(store.get(key), parsed)
    # an edited file: the ASTs of what the same path held before (an AST depends on its text alone), so only the
    # expressions the edit changed are parsed
    last = "path-" + digest(code_digest(), str(path.resolve()))
    if not schema_ok:
        _take_asts(store.get(last), parsed, need_schema_ok=False)
    model, diags = read_rule_doc(doc, parsed, schema_ok=schema_ok)
    if not schema_ok:
        asts = [[kind, e.text, ast.to_data(e.node)] for kind, e in rule_file_exprs(model)] if model is not None else []
        store.put(key, {"schema_ok": model is not None, "asts": asts})
        if asts:
            store.put(last, {"schema_ok": False, "asts": asts})
    return model, diags


def _take_asts(entry: Any, parsed: Parsed, *, need_schema_ok: bool = True) -> bool:
    """Add the ASTs of a file's entry to `parsed` (those not there already), unless `need_schema_ok` and the
    entry does not say the file satisfied the schema; whether the entry was whole and (if needed) said so."""
    try:
        if entry is None or (need_schema_ok and entry["schema_ok"] is not True):
            return False
        found: Parsed = {}
        for kind, text, data in entry["asts"]:
            if kind not in ("expr", "action") or not isinstance(text, str):
                return False
            found[(kind, text)] = ast.from_data(data)
    except _MALFORMED:
        return False
    for k, node in found.items():
        parsed.setdefault(k, node)
    return True


def rule_file_exprs(model: RuleFile) -> Iterator[tuple[str, Expr]]:
    """Every expression of a rule file's model (kind 'expr' or 'action')."""

    def of_checks(checks: tuple[Check, ...]) -> Iterator[tuple[str, Expr]]:
        for c in checks:
            for e in (c.expr, *(b.expr for b in c.lets), c.coll, c.where):
                if e is not None:
                    yield "expr", e
            yield from of_checks(c.checks)

    for r in model.rules:
        for e in (*(s.when for s in r.skip_graph), *(b.expr for b in r.lets)):
            yield "expr", e
        yield from of_checks(r.checks)
        for e in r.actions:
            yield "action", e
    yield from of_checks(model.shared)


def encode_validation(found: Validation, raws: dict[str, bytes]) -> dict[str, Any] | None:
    """`found` as plain data; None when a diagnostic quotes a text other than its rule file's (not kept)."""
    texts = {name: raw.decode("utf-8-sig", "replace") for name, raw in raws.items()}
    diags = []
    for d in found.diagnostics:
        span = None
        if d.span is not None:
            src = d.span.source
            if src is not None and (src.name != d.span.file or texts.get(src.name) != src.text):
                return None
            span = [d.span.file, d.span.line, d.span.col, d.span.end_line, d.span.end_col, src is not None]
        diags.append([d.code, d.message, span, d.severity, d.hint, d.where])
    return {"files": found.files, "rules": found.rules, "diagnostics": diags}


def decode_validation(data: Any, files: list[str], raws: list[bytes]) -> Validation | None:
    """The validation `encode_validation` gave `data` for, quoting the rule files' texts; None when malformed."""
    sources: dict[str, Source] = {}
    try:
        if data is None or data["files"] != files or not all(isinstance(r, str) for r in data["rules"]):
            return None
        diags = []
        for code, message, span, severity, hint, where in data["diagnostics"]:
            if severity not in ("error", "warning") or not all(
                isinstance(v, str) or (v is None and k) for k, v in ((0, code), (0, message), (1, hint), (1, where))
            ):
                return None
            at = None
            if span is not None:
                name, line, col, end_line, end_col, quoted = span
                if not isinstance(name, str) or not all(type(v) is int for v in (line, col, end_line, end_col)):
                    return None
                if quoted and name not in sources:
                    sources[name] = Source(name, decode_text(raws[files.index(name)], name))
                at = Span(name, line, col, end_line, end_col, sources[name] if quoted else None)
            diags.append(Diagnostic(code, message, at, severity, hint, where))
    except (*_MALFORMED, RulepassError):
        return None
    return Validation(list(files), list(data["rules"]), diags)
