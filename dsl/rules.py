"""Rule files -> the rule model: rules, named checks (possibly grouped per element), bindings, actions.

Loading goes file -> span-keeping YAML -> JSON Schema -> every expression parsed with lark. All the problems of
a file are collected (not only the first) and returned as diagnostics; the model keeps each expression's
source so later phases can still point into the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..base.diagnostics import Diagnostic, RulepassError, Span, did_you_mean
from ..base.files import read_text
from ..base.limits import MAX_RULE_FILE_BYTES
from ..base.schema import schema_diagnostics
from ..base.yaml_source import YamlDoc, load_text
from . import ast

LEVELS = ("O0", "O1", "O2", "O3")
DEFAULT_LEVELS = ("O3",)  # GE's default working level; passes register the levels they run at
_FOR_EACH = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)(\s+in\s+)(.*)$", re.S)


@dataclass(frozen=True)
class Expr:
    """An expression (or action) string, its parsed AST and where it came from."""

    text: str
    node: ast.Node
    src: ast.ExprSource

    def span(self, node: ast.Node | None = None) -> Span:
        """The file span of `node` (default: the whole expression)."""
        n = node or self.node
        return self.src.span(n.start, n.end)


@dataclass(frozen=True)
class Binding:
    """`let: {name: expr}`."""

    name: str
    expr: Expr
    span: Span


@dataclass(frozen=True)
class Check:
    """A named check: `require` (passes when true), `reject_if` (fails when true), or a `for_each` group; or, as
    read, `use: NAME` (kind "use", `name` the shared check's, `span` that of the name), which `resolve_shared`
    replaces by the shared check itself."""

    name: str
    span: Span
    kind: str  # "require" | "reject_if" | "group" | "use"
    expr: Expr | None
    lets: tuple[Binding, ...] = ()
    var: str | None = None
    var_span: Span | None = None
    coll: Expr | None = None
    where: Expr | None = None
    checks: tuple[Check, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class GraphSkip:
    """A graph-level exclusion: when true, no candidate of the graph is considered."""

    name: str
    span: Span
    when: Expr
    description: str = ""


@dataclass(frozen=True)
class Rule:
    """One rule: the pass it defines, what it matches, its checks in order and its actions."""

    name: str
    span: Span
    file: str
    description: str
    levels: tuple[str, ...]
    after: tuple[str, ...]
    before: tuple[str, ...]
    after_spans: tuple[Span, ...]
    before_spans: tuple[Span, ...]
    enabled: bool
    tags: tuple[str, ...]
    match: tuple[str, ...]
    skip_graph: tuple[GraphSkip, ...]
    lets: tuple[Binding, ...]
    checks: tuple[Check, ...]
    actions: tuple[Expr, ...]


@dataclass(frozen=True)
class RuleFile:
    """The rules of one file, with the document they were read from."""

    path: str
    rules: tuple[Rule, ...]
    doc: YamlDoc
    shared: tuple[Check, ...] = ()


# an expression's AST by (start symbol, text): what parsing gives, kept so a file read again needs no parser
Parsed = dict[tuple[str, str], ast.Node]


class _Reader:
    def __init__(self, doc: YamlDoc, parsed: Parsed | None) -> None:
        self.doc = doc
        self.diags: list[Diagnostic] = []
        self.parsed: Parsed = parsed if parsed is not None else {}

    def expr(
        self, path: list[str | int], *, action: bool = False, text: str | None = None, offset: int = 0
    ) -> Expr | None:
        raw = text if text is not None else self.doc.value_at(path)
        src = ast.ExprSource(raw, self.doc, tuple(path), self.doc.source.name, offset)
        key = ("action" if action else "expr", raw)
        node = self.parsed.get(key)
        if node is None:
            from .parse import parse_action, parse_expr  # lark, and building its parser, only when parsing

            try:
                node = parse_action(raw, src) if action else parse_expr(raw, src)
            except RulepassError as exc:
                self.diags.extend(exc.diagnostics)
                return None
            self.parsed[key] = node
        return Expr(raw, node, src)

    def lets(self, raw: dict[str, Any], path: list[str | int]) -> tuple[Binding, ...]:
        out = []
        for name in raw:
            e = self.expr([*path, name])
            if e is not None:
                out.append(Binding(name, e, self.doc.span([*path, name], key=True)))
        return tuple(out)

    def check(self, raw: dict[str, Any], path: list[str | int]) -> Check | None:
        if "use" in raw:
            others = [k for k in raw if k != "use"]
            if others:
                self.diags.append(
                    Diagnostic(
                        "rule-shape",
                        f"`use: {raw['use']}` takes the shared check whole: no other key goes with it "
                        f"(found {', '.join(others)})",
                        self.doc.span([*path, others[0]], key=True),
                        hint="to change the check, copy it into the rule instead of using it",
                    )
                )
                return None
            return Check(raw["use"], self.doc.span([*path, "use"]), "use", None)
        name = raw["name"]
        span = self.doc.span([*path, "name"])
        kinds = [k for k in ("require", "reject_if", "for_each") if k in raw]
        if len(kinds) != 1:
            found = ", ".join(kinds) if kinds else "none of them"
            self.diags.append(
                Diagnostic(
                    "rule-shape",
                    f"check '{name}' needs exactly one of 'require', 'reject_if' or 'for_each' (found {found})",
                    span,
                )
            )
            return None
        if "for_each" in raw and "checks" not in raw:
            self.diags.append(Diagnostic("rule-shape", f"check '{name}' has 'for_each' but no 'checks'", span))
            return None
        for key in ("checks", "where"):
            if key in raw and "for_each" not in raw:
                self.diags.append(
                    Diagnostic(
                        "rule-shape",
                        f"check '{name}': '{key}' only goes with 'for_each'",
                        self.doc.span([*path, key], key=True),
                    )
                )
                return None
        lets = self.lets(raw.get("let", {}), [*path, "let"])
        desc = raw.get("description", "")
        kind = kinds[0]
        if kind != "for_each":
            e = self.expr([*path, kind])
            return Check(name, span, kind, e, lets, description=desc) if e is not None else None
        m = _FOR_EACH.match(raw["for_each"])
        assert m is not None  # the schema's pattern
        var = m.group(2)
        var_span = self.doc.span_in_scalar([*path, "for_each"], len(m.group(1)), len(var))
        coll = self.expr([*path, "for_each"], text=m.group(4), offset=len(m.group(1)) + len(var) + len(m.group(3)))
        where = self.expr([*path, "where"]) if "where" in raw else None
        subs = [self.check(c, [*path, "checks", k]) for k, c in enumerate(raw["checks"])]
        if coll is None or ("where" in raw and where is None) or any(s is None for s in subs):
            return None
        return Check(
            name, span, "group", None, lets, var, var_span, coll, where, tuple(s for s in subs if s is not None), desc
        )

    def rule(self, raw: dict[str, Any], path: list[str | int]) -> Rule | None:
        before = len(self.diags)
        skips = []
        for k, s in enumerate(raw.get("skip_graph", [])):
            e = self.expr([*path, "skip_graph", k, "when"])
            if e is not None:
                skips.append(
                    GraphSkip(s["name"], self.doc.span([*path, "skip_graph", k, "name"]), e, s.get("description", ""))
                )
        lets = self.lets(raw.get("let", {}), [*path, "let"])
        checks = [self.check(c, [*path, "checks", k]) for k, c in enumerate(raw["checks"])]
        actions = [self.expr([*path, "actions", k], action=True) for k in range(len(raw.get("actions", [])))]
        if len(self.diags) > before:
            return None
        return Rule(
            name=raw["name"],
            span=self.doc.span([*path, "name"]),
            file=self.doc.source.name,
            description=raw.get("description", ""),
            levels=tuple(raw.get("levels", DEFAULT_LEVELS)),
            after=tuple(raw.get("after", [])),
            before=tuple(raw.get("before", [])),
            after_spans=tuple(self.doc.span([*path, "after", k]) for k in range(len(raw.get("after", [])))),
            before_spans=tuple(self.doc.span([*path, "before", k]) for k in range(len(raw.get("before", [])))),
            enabled=bool(raw.get("enabled", True)),
            tags=tuple(raw.get("tags", [])),
            match=tuple(raw["match"]),
            skip_graph=tuple(skips),
            lets=lets,
            checks=tuple(c for c in checks if c is not None),
            actions=tuple(a for a in actions if a is not None),
        )


def read_rule_doc(
    doc: YamlDoc, parsed: Parsed | None = None, *, schema_ok: bool = False
) -> tuple[RuleFile | None, list[Diagnostic]]:
    """Schema-check and parse a loaded rule document; returns the model (None if unusable) and all diagnostics.

    `parsed` holds ASTs already known by expression text (used instead of parsing; those parsed are added);
    `schema_ok` says the document is known to satisfy the schema (the same text did)."""
    name = doc.source.name
    if doc.data is None:
        return None, [
            Diagnostic(
                "rule-shape",
                "the rule file is empty; expected a mapping with 'rules'",
                Span(name, 1, 1, 1, 1, doc.source),
            )
        ]
    diags = [] if schema_ok else schema_diagnostics(doc, "rulepass.dsl", "rule.schema.json", what="the rule file")
    if diags:
        return None, diags
    if "rules" not in doc.data and "shared_checks" not in doc.data:
        return None, [
            Diagnostic(
                "rule-shape",
                "the rule file has neither 'rules' nor 'shared_checks'; expected at least one of them",
                doc.span([]),
            )
        ]
    reader = _Reader(doc, parsed)
    rules = [reader.rule(r, ["rules", k]) for k, r in enumerate(doc.data.get("rules", []))]
    shared = [reader.check(c, ["shared_checks", k]) for k, c in enumerate(doc.data.get("shared_checks", []))]
    model = RuleFile(name, tuple(r for r in rules if r is not None), doc, tuple(c for c in shared if c is not None))
    return model, reader.diags


def resolve_shared(files: Sequence[RuleFile]) -> tuple[list[Rule], list[Diagnostic]]:
    """The rules of `files` with every `use: NAME` replaced by the shared check NAME of any of them (nested uses
    too), and the problems: a name defined twice, a use of an unknown name or of a check that uses itself, a
    shared check no rule uses. A rule with a use that cannot be resolved is left out."""
    diags: list[Diagnostic] = []
    table: dict[str, Check] = {}
    for f in files:
        for c in f.shared:
            if c.kind == "use":
                diags.append(Diagnostic("rule-shape", f"a shared check is itself a `use: {c.name}`", c.span))
            elif c.name in table:
                diags.append(
                    Diagnostic(
                        "duplicate-shared-check",
                        f"shared check '{c.name}' is already defined at {table[c.name].span}",
                        c.span,
                        hint="the shared checks of all the files loaded together share one namespace",
                    )
                )
            else:
                table[c.name] = c
    used: set[str] = set()

    def expand(checks: tuple[Check, ...], stack: tuple[str, ...]) -> tuple[Check, ...] | None:
        out: list[Check] = []
        ok = True
        for c in checks:
            if c.kind == "use":
                shared = table.get(c.name)
                if shared is None:
                    known = sorted(table)
                    loaded = f" (shared checks loaded: {', '.join(known)})" if known else " (none are loaded)"
                    diags.append(
                        Diagnostic(
                            "unknown-shared-check",
                            f"no shared check named '{c.name}'{loaded}",
                            c.span,
                            hint=did_you_mean(c.name, known)
                            or "load the rule file that defines it (its `shared_checks`) together with this one",
                        )
                    )
                    ok = False
                    continue
                if c.name in stack:
                    cycle = " -> ".join([*stack[stack.index(c.name) :], c.name])
                    diags.append(Diagnostic("shared-check-cycle", f"shared check uses itself: {cycle}", c.span))
                    ok = False
                    continue
                used.add(c.name)
                c, stack_c = shared, (*stack, c.name)
            else:
                stack_c = stack
            if c.kind == "group":
                inner = expand(c.checks, stack_c)
                if inner is None:
                    ok = False
                    continue
                if _changed(inner, c.checks):
                    c = replace(c, checks=inner)
            out.append(c)
        return tuple(out) if ok else None

    rules: list[Rule] = []
    for f in files:
        for r in f.rules:
            checks = expand(r.checks, ())
            if checks is not None:
                rules.append(replace(r, checks=checks) if _changed(checks, r.checks) else r)
    for name, c in table.items():
        if name not in used:
            diags.append(
                Diagnostic(
                    "unused-shared-check",
                    f"shared check '{name}' is used by no rule (so it is not checked either)",
                    c.span,
                    severity="warning",
                )
            )
    # a problem inside a shared check is met by every rule that uses it: report it once
    return rules, list(dict.fromkeys(diags))


def _changed(new: tuple[Check, ...], old: tuple[Check, ...]) -> bool:
    """Whether expanding the uses of `old` gave other checks (`new` holds the same objects where nothing was)."""
    return any(a is not b for a, b in zip(new, old, strict=True))


def read_rule_file(path: str | Path) -> tuple[RuleFile | None, list[Diagnostic]]:
    """Load, schema-check and parse one rule file, collecting every problem found."""
    try:
        doc = load_text(read_text(path, what="rule file", max_bytes=MAX_RULE_FILE_BYTES), str(path))
    except RulepassError as exc:
        return None, list(exc.diagnostics)
    return read_rule_doc(doc)


def read_rule_text(text: str, name: str = "<rules>") -> tuple[RuleFile | None, list[Diagnostic]]:
    """Like read_rule_file, from text."""
    try:
        doc = load_text(text, name)
    except RulepassError as exc:
        return None, list(exc.diagnostics)
    return read_rule_doc(doc)
