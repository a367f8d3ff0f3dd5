"""Rule files -> the rule model: rules, named checks (possibly grouped per element), bindings, actions.

Loading goes file -> span-keeping YAML -> JSON Schema -> every expression parsed with lark. All the problems of
a file are collected (not only the first) and returned as diagnostics; the model keeps each expression's
source so later phases can still point into the file.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base.diagnostics import Diagnostic, RulepassError, Span, did_you_mean
from ..base.files import read_text
from ..base.limits import MAX_RULE_FILE_BYTES
from ..base.schema import schema_diagnostics
from ..base.yaml_source import YamlDoc, load_text
from . import ast
from .desugar import Text, binders, lookup_text, rename

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
    """`let: {name: expr}`; `spliced_from`: the list of checks (as used) this let was taken in from, whose scope it
    is checked in."""

    name: str
    expr: Expr
    span: Span
    spliced_from: Check | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Param:
    """A declared parameter (of a shared check or a template): its name, its type as written, where."""

    name: str
    type: str
    span: Span


@dataclass(frozen=True)
class Arg:
    """`with: {param: name}` at a use of a shared check: the caller's binding `name` passed as `param`."""

    param: str
    name: str
    span: Span
    type: str = ""  # the parameter's declared type, once resolved


@dataclass(frozen=True)
class Check:
    """A named check: `require` (passes when true), `reject_if` (fails when true), or a `for_each` group; or, as
    read, `use: NAME` (kind "use", `name` the shared check's, `span` that of the name), which `resolve_shared`
    replaces by the shared check itself, its parameters read under the names of the caller's bindings (`args`,
    `shared` its name: it is checked in a scope of the root bindings and those names alone). A shared check may
    also be a list of checks (kind "list": `checks` and `let` alone), which a use splices into the caller's list:
    its checks, each `spliced_from` the list as used, and its lets, joining the caller's."""

    name: str
    span: Span
    kind: str  # "require" | "reject_if" | "group" | "use" | "list"
    expr: Expr | None
    lets: tuple[Binding, ...] = ()
    var: str | None = None
    var_span: Span | None = None
    coll: Expr | None = None
    where: Expr | None = None
    checks: tuple[Check, ...] = ()
    description: str = ""
    params: tuple[Param, ...] = ()
    args: tuple[Arg, ...] = ()
    shared: str | None = None
    spliced_from: Check | None = field(default=None, compare=False, repr=False)


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
    template: TemplateUse | None = None  # until `resolve_shared` takes the template in


@dataclass(frozen=True)
class Template:
    """`templates:` what rules share: levels and tags (a rule's own win), order constraints, skip_graph and lets
    (before its own); `params` are constants each rule gives with `with:`, bound as lets before the template's."""

    name: str
    span: Span
    params: tuple[Param, ...]
    levels: tuple[str, ...] | None
    tags: tuple[str, ...] | None
    skip_graph: tuple[GraphSkip, ...]
    lets: tuple[Binding, ...]
    doc: YamlDoc
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    after_spans: tuple[Span, ...] = ()
    before_spans: tuple[Span, ...] = ()


@dataclass(frozen=True)
class TemplateUse:
    """A rule's `template: NAME` and `with:` (parameter -> (constant, span)); which of levels/tags it wrote."""

    name: str
    span: Span
    args: tuple[tuple[str, object, Span, tuple[str | int, ...]], ...]
    own_levels: bool
    own_tags: bool


@dataclass(frozen=True)
class RuleFile:
    """The rules of one file, with the document they were read from."""

    path: str
    rules: tuple[Rule, ...]
    doc: YamlDoc
    shared: tuple[Check, ...] = ()
    templates: tuple[Template, ...] = ()


# an expression's AST by (start symbol, text): what parsing gives, kept so a file read again needs no parser
Parsed = dict[tuple[str, str], ast.Node]


class _Reader:
    def __init__(self, doc: YamlDoc, parsed: Parsed | None) -> None:
        self.doc = doc
        self.diags: list[Diagnostic] = []
        self.parsed: Parsed = parsed if parsed is not None else {}
        self.tables: dict[str, dict[str, list[str]]] = (doc.data or {}).get("tables", {})
        self.tables_read: set[str] = set()

    def expr(
        self,
        path: list[str | int],
        *,
        action: bool = False,
        text: str | None = None,
        offset: int = 0,
        written: Text | None = None,
    ) -> Expr | None:
        """The expression at `path` (or `text`, a part of it from `offset`; or `written` by the loader, its
        spans those of the pieces it copied and the value at `path` elsewhere)."""
        raw = written.text if written is not None else text if text is not None else self.doc.value_at(path)
        src = ast.ExprSource(raw, self.doc, tuple(path), self.doc.source.name, offset)
        if written is not None:
            src = replace(src, pieces=tuple(written.pieces), at=self.doc.span(path))
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
        for name, value in raw.items():
            e = self.lookup(value, [*path, name]) if isinstance(value, dict) else self.expr([*path, name])
            if e is not None:
                out.append(Binding(name, e, self.doc.span([*path, name], key=True)))
        return tuple(out)

    def lookup(self, raw: dict[str, str], path: list[str | int]) -> Expr | None:
        """A table lookup `{row_holding|first_in_row: KEY, in: TABLE, else: DEFAULT}`, written as an if-chain."""
        table = self.tables.get(raw["in"])
        if table is None:
            self.diags.append(
                Diagnostic(
                    "unknown-table",
                    f"no table named '{raw['in']}' in this file",
                    self.doc.span([*path, "in"]),
                    hint=did_you_mean(raw["in"], list(self.tables)) or "declare it under the file's `tables:`",
                )
            )
            return None
        self.tables_read.add(raw["in"])
        kind = "row_holding" if "row_holding" in raw else "first_in_row"
        text = lookup_text(kind, raw[kind], raw["else"], table, [*path, kind], [*path, "else"])
        return self.expr(path, written=text)

    def params(self, raw: dict[str, str], path: list[str | int]) -> tuple[Param, ...]:
        """Declared parameters `{name: type}`; a type the catalogue may not know is found when checking."""
        return tuple(Param(k, v, self.doc.span([*path, k], key=True)) for k, v in raw.items())

    def check(self, raw: dict[str, Any], path: list[str | int]) -> Check | None:
        """The check item at `path`: a `use`, a `require`/`reject_if`, a `for_each` group or, at the top of
        `shared_checks`, a list of checks; None, with the problem reported, when it is malformed."""
        if "params" in raw and path[0] != "shared_checks":
            self.shape_error("only a shared check (`shared_checks`) declares `params`", [*path, "params"])
            return None
        if "use" in raw:
            return self.use(raw, path)
        if "with" in raw:
            self.shape_error("'with' only goes with 'use'", [*path, "with"])
            return None
        kind = self.kind(raw, path)
        if kind is None:
            return None
        name, span = raw["name"], self.doc.span([*path, "name"])
        lets = self.lets(raw.get("let", {}), [*path, "let"])
        desc = raw.get("description", "")
        params = self.params(raw.get("params", {}), [*path, "params"])
        if kind in ("require", "reject_if"):
            e = self.expr([*path, kind])
            return Check(name, span, kind, e, lets, description=desc, params=params) if e is not None else None
        if kind == "list":
            subs = self.checks(raw["checks"], path)
            if subs is None:
                return None
            return Check(name, span, kind, None, lets, checks=subs, description=desc, params=params)
        m = _FOR_EACH.match(raw["for_each"])
        assert m is not None  # the schema's pattern
        var = m.group(2)
        var_span = self.doc.span_in_scalar([*path, "for_each"], len(m.group(1)), len(var))
        coll = self.expr([*path, "for_each"], text=m.group(4), offset=len(m.group(1)) + len(var) + len(m.group(3)))
        where = self.expr([*path, "where"]) if "where" in raw else None
        subs = self.checks(raw["checks"], path)
        if coll is None or ("where" in raw and where is None) or subs is None:
            return None
        return Check(name, span, "group", None, lets, var, var_span, coll, where, subs, desc, params=params)

    def checks(self, raw: list[dict[str, Any]], path: list[str | int]) -> tuple[Check, ...] | None:
        """The checks of a group or list at `path` (None when any is malformed, each problem reported)."""
        subs = [self.check(c, [*path, "checks", k]) for k, c in enumerate(raw)]
        return None if any(s is None for s in subs) else tuple(s for s in subs if s is not None)

    def shape_error(self, message: str, at: list[str | int], hint: str | None = None) -> None:
        """Report a `rule-shape` problem at the key `at`."""
        self.diags.append(Diagnostic("rule-shape", message, self.doc.span(at, key=True), hint=hint))

    def use(self, raw: dict[str, Any], path: list[str | int]) -> Check | None:
        """`use: NAME` (with its `with:` arguments), which takes no other key."""
        others = [k for k in raw if k not in ("use", "with")]
        if others:
            self.shape_error(
                f"`use: {raw['use']}` takes the shared check whole: no other key goes with it "
                f"(found {', '.join(others)})",
                [*path, others[0]],
                hint="to change the check, copy it into the rule instead of using it",
            )
            return None
        args = tuple(Arg(k, v, self.doc.span([*path, "with", k])) for k, v in raw.get("with", {}).items())
        return Check(raw["use"], self.doc.span([*path, "use"]), "use", None, args=args)

    def kind(self, raw: dict[str, Any], path: list[str | int]) -> str | None:
        """Which check `raw` is: its one key of `require`, `reject_if` and `for_each`, or "list" (a shared check
        with `checks` alone); None, with the problem reported, when its keys do not fit together."""
        name = raw["name"]
        kinds = [k for k in ("require", "reject_if", "for_each") if k in raw]
        if not kinds and "checks" in raw and "where" not in raw and path[0] == "shared_checks" and len(path) == 2:
            return "list"
        if len(kinds) != 1:
            found = ", ".join(kinds) if kinds else "none of them"
            self.diags.append(
                Diagnostic(
                    "rule-shape",
                    f"check '{name}' needs exactly one of 'require', 'reject_if' or 'for_each' (found {found})",
                    self.doc.span([*path, "name"]),
                    hint="only a shared check (at the top of `shared_checks`) can be a list of checks"
                    if not kinds and "checks" in raw
                    else None,
                )
            )
            return None
        if "for_each" in raw and "checks" not in raw:
            span = self.doc.span([*path, "name"])
            self.diags.append(Diagnostic("rule-shape", f"check '{name}' has 'for_each' but no 'checks'", span))
            return None
        for key in ("checks", "where"):
            if key in raw and "for_each" not in raw:
                self.shape_error(f"check '{name}': '{key}' only goes with 'for_each'", [*path, key])
                return None
        return kinds[0]

    def skips(self, raw: list[dict[str, str]], path: list[str | int]) -> tuple[GraphSkip, ...]:
        out = []
        for k, s in enumerate(raw):
            e = self.expr([*path, k, "when"])
            if e is not None:
                out.append(GraphSkip(s["name"], self.doc.span([*path, k, "name"]), e, s.get("description", "")))
        return tuple(out)

    def lock(self, attr: str, path: list[str | int]) -> tuple[Binding | None, Expr | None]:
        """`lock: ATTR`: the let `lock` (the string ATTR) the checks read, and the action claiming the producers."""
        at = [*path, "lock"]
        let = self.expr(at, written=Text().add("'").copy(attr, at).add("'"))
        claim = Text().add("for i in node.inputs where i.connected: set i.peer.desc.").copy(attr, at).add(" = false")
        action = self.expr(at, action=True, written=claim)
        return (Binding("lock", let, self.doc.span(at, key=True)) if let is not None else None), action

    def template_use(self, raw: dict[str, Any], path: list[str | int]) -> TemplateUse | None:
        if "template" not in raw:
            if "with" in raw:
                self.diags.append(
                    Diagnostic(
                        "rule-shape", "'with' only goes with 'template'", self.doc.span([*path, "with"], key=True)
                    )
                )
            return None
        args = tuple(
            (k, v, self.doc.span([*path, "with", k]), (*path, "with", k)) for k, v in raw.get("with", {}).items()
        )
        return TemplateUse(raw["template"], self.doc.span([*path, "template"]), args, "levels" in raw, "tags" in raw)

    def order(self, raw: dict[str, Any], path: list[str | int]) -> dict[str, Any]:
        """A rule's or template's `after` and `before`, and the span of each name, as keyword arguments."""
        out: dict[str, Any] = {}
        for key in ("after", "before"):
            names = raw.get(key, [])
            out[key] = tuple(names)
            out[f"{key}_spans"] = tuple(self.doc.span([*path, key, k]) for k in range(len(names)))
        return out

    def template(self, raw: dict[str, Any], path: list[str | int]) -> Template:
        return Template(
            raw["name"],
            self.doc.span([*path, "name"]),
            self.params(raw.get("params", {}), [*path, "params"]),
            tuple(raw["levels"]) if "levels" in raw else None,
            tuple(raw["tags"]) if "tags" in raw else None,
            self.skips(raw.get("skip_graph", []), [*path, "skip_graph"]),
            self.lets(raw.get("let", {}), [*path, "let"]),
            self.doc,
            **self.order(raw, path),
        )

    def rule(self, raw: dict[str, Any], path: list[str | int]) -> Rule | None:
        before = len(self.diags)
        skips = self.skips(raw.get("skip_graph", []), [*path, "skip_graph"])
        lets = self.lets(raw.get("let", {}), [*path, "let"])
        checks = [self.check(c, [*path, "checks", k]) for k, c in enumerate(raw["checks"])]
        actions = [self.expr([*path, "actions", k], action=True) for k in range(len(raw.get("actions", [])))]
        if "lock" in raw:
            let, claim = self.lock(raw["lock"], path)
            lets = (*lets, let) if let is not None else lets
            actions.append(claim)
        template = self.template_use(raw, path)
        if len(self.diags) > before:
            return None
        return Rule(
            name=raw["name"],
            span=self.doc.span([*path, "name"]),
            file=self.doc.source.name,
            description=raw.get("description", ""),
            levels=tuple(raw.get("levels", DEFAULT_LEVELS)),
            **self.order(raw, path),
            enabled=bool(raw.get("enabled", True)),
            tags=tuple(raw.get("tags", [])),
            match=tuple(raw["match"]),
            skip_graph=skips,
            lets=lets,
            checks=tuple(c for c in checks if c is not None),
            actions=tuple(a for a in actions if a is not None),
            template=template,
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
    if not any(k in doc.data for k in ("rules", "shared_checks", "templates")):
        return None, [
            Diagnostic(
                "rule-shape",
                "the rule file has none of 'rules', 'shared_checks' or 'templates'; expected at least one of them",
                doc.span([]),
            )
        ]
    reader = _Reader(doc, parsed)
    rules = [reader.rule(r, ["rules", k]) for k, r in enumerate(doc.data.get("rules", []))]
    shared = [reader.check(c, ["shared_checks", k]) for k, c in enumerate(doc.data.get("shared_checks", []))]
    templates = [reader.template(t, ["templates", k]) for k, t in enumerate(doc.data.get("templates", []))]
    for name in reader.tables:
        if name not in reader.tables_read:
            reader.diags.append(
                Diagnostic(
                    "unused-table",
                    f"table '{name}' is read by no lookup of this file",
                    doc.span(["tables", name], key=True),
                    severity="warning",
                )
            )
    model = RuleFile(
        name,
        tuple(r for r in rules if r is not None),
        doc,
        tuple(c for c in shared if c is not None),
        tuple(templates),
    )
    return model, reader.diags


def resolve_shared(files: Sequence[RuleFile]) -> tuple[list[Rule], list[Diagnostic]]:
    """The rules of `files` with every `use: NAME` replaced by the shared check NAME of any of them (nested uses
    too; a list of checks spliced in place, its lets joining the caller's), and the problems: a name defined
    twice, a use of an unknown name or of a check that uses itself, a shared check no rule uses; and with its
    template (`template: NAME`) taken in. A rule with a use or a template that cannot be resolved is left out."""
    diags: list[Diagnostic] = []
    uses = _Uses(_shared_table(files, diags), diags)
    templates = _templates(files, diags)
    rules: list[Rule] = []
    for f in files:
        for r in f.rules:
            expanded = uses.expand(r.checks, ())
            if expanded is None:
                continue
            checks, lifted = expanded
            if _changed(checks, r.checks) or lifted:
                r = replace(r, checks=checks, lets=(*r.lets, *lifted))
            whole = _take_template(r, templates, diags)
            if whole is not None:
                rules.append(whole)
    unused = [(n, c.span, "shared check") for n, c in uses.table.items() if n not in uses.used]
    unused += [(n, t.span, "template") for n, t in templates.items() if n not in _templates_used(files)]
    for name, span, what in unused:
        diags.append(
            Diagnostic(
                f"unused-{what.replace(' ', '-')}",
                f"{what} '{name}' is used by no rule (so it is not checked either)",
                span,
                severity="warning",
            )
        )
    # a problem inside a shared check is met by every rule that uses it: report it once
    return rules, list(dict.fromkeys(diags))


def _shared_table(files: Sequence[RuleFile], diags: list[Diagnostic]) -> dict[str, Check]:
    """The shared checks of `files` by name (one defined twice, or that is itself a `use`, is reported)."""
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
    return table


class _Uses:
    """Expands the uses of the shared checks `table` (reporting what cannot be), noting which are `used`."""

    def __init__(self, table: dict[str, Check], diags: list[Diagnostic]) -> None:
        self.table = table
        self.diags = diags
        self.used: set[str] = set()

    def expand(
        self, checks: tuple[Check, ...], stack: tuple[str, ...]
    ) -> tuple[tuple[Check, ...], tuple[Binding, ...]] | None:
        """`checks` with every use replaced by its shared check, nested ones too (a list's checks spliced in
        place), and the lets of the lists spliced, to join the caller's; None when a use cannot be resolved.
        `stack`: the shared checks being expanded (using one of them again is a cycle)."""
        out: list[Check] = []
        lifted: list[Binding] = []
        ok = True
        for c in checks:
            stack_c = stack
            if c.kind == "use":
                bound = self.bind(c, stack)
                if bound is None:
                    ok = False
                    continue
                c, stack_c = bound, (*stack, c.name)
            if c.kind in ("group", "list"):
                expanded = self.expand(c.checks, stack_c)
                if expanded is None:
                    ok = False
                    continue
                inner, inner_lets = expanded
                if _changed(inner, c.checks) or inner_lets:
                    c = replace(c, checks=inner, lets=(*c.lets, *inner_lets))
            if c.kind == "list":
                out.extend(
                    s if s.shared is not None else replace(s, shared=c.shared, args=c.args, spliced_from=c)
                    for s in c.checks
                )
                lifted.extend(b if b.spliced_from is not None else replace(b, spliced_from=c) for b in c.lets)
            else:
                out.append(c)
        return (tuple(out), tuple(lifted)) if ok else None

    def bind(self, use: Check, stack: tuple[str, ...]) -> Check | None:
        """The shared check `use` names, its parameters bound to the caller's names (None, reported, when there is
        none of that name, it is being expanded already, or the arguments do not fit)."""
        shared = self.table.get(use.name)
        if shared is None:
            known = sorted(self.table)
            loaded = f" (shared checks loaded: {', '.join(known)})" if known else " (none are loaded)"
            self.diags.append(
                Diagnostic(
                    "unknown-shared-check",
                    f"no shared check named '{use.name}'{loaded}",
                    use.span,
                    hint=did_you_mean(use.name, known)
                    or "load the rule file that defines it (its `shared_checks`) together with this one",
                )
            )
            return None
        if use.name in stack:
            cycle = " -> ".join([*stack[stack.index(use.name) :], use.name])
            self.diags.append(Diagnostic("shared-check-cycle", f"shared check uses itself: {cycle}", use.span))
            return None
        self.used.add(use.name)
        return _bind_params(shared, use, self.diags)


def _bind_params(shared: Check, use: Check, diags: list[Diagnostic]) -> Check | None:
    """`shared` as used by `use`: each parameter read under the name of the caller's binding `with:` gives it
    (`args` keep which, with the declared type, for the checker). None when the arguments do not fit."""
    declared = {p.name: p for p in shared.params}
    given = {a.param: a for a in use.args}
    bad = False
    for a in use.args:
        if a.param not in declared:
            listed = ", ".join(declared) or "none"
            diags.append(
                Diagnostic(
                    "shared-check-params",
                    f"shared check '{shared.name}' has no parameter '{a.param}' (its parameters: {listed})",
                    a.span,
                    hint=did_you_mean(a.param, list(declared)),
                )
            )
            bad = True
    missing = _missing(declared, given, "shared-check-params", f"`use: {shared.name}` gives", use.span, "NAME")
    if missing is not None:
        diags.append(missing)
        bad = True
    if bad:
        return None
    names = {a.param: a.name for a in use.args if a.name != a.param}
    captured = sorted(set(names.values()) & _bound_inside(shared))
    if captured:
        diags.append(
            Diagnostic(
                "shared-check-params",
                f"shared check '{shared.name}' binds '{captured[0]}' itself, so it cannot be passed in under that name",
                given[next(p for p, n in names.items() if n == captured[0])].span,
                hint="bind the value to another name with a `let` and pass that",
            )
        )
        return None
    args = tuple(replace(a, type=declared[a.param].type) for a in use.args)
    return replace(_renamed(shared, names) if names else shared, args=args, shared=shared.name)


def _missing(
    declared: Iterable[str], given: Container[str], code: str, who: str, span: Span, value: str
) -> Diagnostic | None:
    """The error for the declared parameters a use gives no value for (None when it gives them all)."""
    missing = [p for p in declared if p not in given]
    if not missing:
        return None
    return Diagnostic(
        code,
        f"{who} no value for its parameter(s) {', '.join(missing)}",
        span,
        hint="with: {" + ", ".join(f"{p}: {value}" for p in missing) + "}",
    )


def _bound_inside(c: Check) -> set[str]:
    """The names a check binds itself: lets, group variables, quantifier variables."""
    out = {b.name for b in c.lets} | ({c.var} if c.var else set())
    for e in (c.expr, c.coll, c.where, *(b.expr for b in c.lets)):
        if e is not None:
            out |= binders(e.node)
    for sub in c.checks:
        out |= _bound_inside(sub)
    return out


def _renamed(c: Check, names: dict[str, str]) -> Check:
    """`c` with its free variables in `names` read under their new names (nested uses pass them on)."""

    def ex(e: Expr | None) -> Expr | None:
        return None if e is None else Expr(e.text, rename(e.node, names), e.src)

    return replace(
        c,
        expr=ex(c.expr),
        coll=ex(c.coll),
        where=ex(c.where),
        lets=tuple(replace(b, expr=Expr(b.expr.text, rename(b.expr.node, names), b.expr.src)) for b in c.lets),
        checks=tuple(_renamed(sub, names) for sub in c.checks),
        args=tuple(replace(a, name=names.get(a.name, a.name)) for a in c.args),
    )


def _templates(files: Sequence[RuleFile], diags: list[Diagnostic]) -> dict[str, Template]:
    """The templates of `files` by name (one defined twice is reported, the first kept)."""
    out: dict[str, Template] = {}
    for f in files:
        for t in f.templates:
            if t.name in out:
                diags.append(
                    Diagnostic(
                        "duplicate-template", f"template '{t.name}' is already defined at {out[t.name].span}", t.span
                    )
                )
            else:
                out[t.name] = t
    return out


def _templates_used(files: Sequence[RuleFile]) -> set[str]:
    return {r.template.name for f in files for r in f.rules if r.template is not None}


_CONSTANT_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}


def _take_template(r: Rule, templates: dict[str, Template], diags: list[Diagnostic]) -> Rule | None:
    """`r` with its template's levels and tags (unless it wrote its own), order constraints, skip_graph and lets
    (the parameters' constants first) before its own; None, with the problem reported, when they do not fit."""
    use = r.template
    if use is None:
        return r
    t = templates.get(use.name)
    if t is None:
        diags.append(
            Diagnostic(
                "unknown-template",
                f"no template named '{use.name}'",
                use.span,
                hint=did_you_mean(use.name, list(templates)) or "load the rule file that defines it with this one",
            )
        )
        return None
    declared = {p.name: p for p in t.params}
    given = {k for k, *_ in use.args}
    consts: list[Binding] = []
    n = len(diags)
    for k, v, span, path in use.args:
        p = declared.get(k)
        kinds = _CONSTANT_TYPES.get(p.type) if p is not None else None
        if p is None:
            diags.append(
                Diagnostic(
                    "template-params",
                    f"template '{t.name}' has no parameter '{k}'",
                    span,
                    hint=did_you_mean(k, list(declared)),
                )
            )
        elif kinds is None:
            diags.append(
                Diagnostic(
                    "template-params", f"a template parameter is a constant (str, int, float, bool): {p.type}", p.span
                )
            )
        elif not isinstance(v, kinds) or (isinstance(v, bool) and p.type != "bool"):
            diags.append(
                Diagnostic("template-params", f"parameter '{k}' of template '{t.name}' is {p.type}, not {v!r}", span)
            )
        else:
            consts.append(Binding(k, _constant(v, span, path), span))
    missing = _missing(declared, given, "template-params", f"`template: {t.name}` gives", use.span, "VALUE")
    if missing is not None:
        diags.append(missing)
    if len(diags) > n:
        return None
    return replace(
        r,
        levels=r.levels if use.own_levels or t.levels is None else t.levels,
        tags=r.tags if use.own_tags or t.tags is None else t.tags,
        after=(*t.after, *r.after),
        before=(*t.before, *r.before),
        after_spans=(*t.after_spans, *r.after_spans),
        before_spans=(*t.before_spans, *r.before_spans),
        skip_graph=(*t.skip_graph, *r.skip_graph),
        lets=(*consts, *t.lets, *r.lets),
        template=None,
    )


def _constant(v: object, span: Span, path: tuple[str | int, ...]) -> Expr:
    """A constant a rule gives a template, as the expression of a literal (its spans all `span`)."""
    text = repr(v).lower() if isinstance(v, bool) else repr(v)
    src = ast.ExprSource(text, None, path, span.file, at=span)
    return Expr(text, ast.Lit(0, len(text), 1, v), src)


def _changed(new: tuple[Check, ...], old: tuple[Check, ...]) -> bool:
    """Whether expanding the uses of `old` gave other checks (`new` holds the same objects where nothing was)."""
    return len(new) != len(old) or any(a is not b for a, b in zip(new, old, strict=True))


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
