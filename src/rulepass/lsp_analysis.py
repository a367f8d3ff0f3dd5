"""What the language server (`rulepass lsp`) knows of a rule set: no protocol here, only the rule language.

Every fact comes from the rule language itself: diagnostics from `validate_ge_rules` (exactly what
`rulepass validate` reports), the type, field or helper under the cursor from the checker's resolution of each
rule (`check_rule`), the docs from the catalogue (`ge_catalogue`: builtins and GE's entities, fields and
helpers) and from the rule schema's descriptions. A rule set is the settings' `rules` (`[tool.rulepass]`, see
:mod:`.config`) when one of them holds the file edited, else the file's folder (as `validate FOLDER` reads it:
every rule file below it but fixtures); the editor's unsaved buffers are read instead of the disk. Positions are
0-based (line, character) as the protocol counts them, characters as Python counts them (the server converts
to the client's code units).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .base.diagnostics import Diagnostic, RulepassError, Span
from .base.schema import load_schema
from .compiler.facts import ge_catalogue
from .compiler.passes import validate_ge_rules
from .config import find_config, load_config
from .dsl import ast
from .dsl.catalogue import Type
from .dsl.check import Resolution, check_rule
from .dsl.load import RULE_SUFFIXES, rule_files
from .dsl.rule_cache import rule_file_exprs
from .dsl.rules import Check, Expr, Rule, RuleFile, read_rule_text, resolve_shared

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY = re.compile(r"^(\s*)(-\s+)?([A-Za-z_$][A-Za-z0-9_]*)\s*:")
_USE = re.compile(r"^\s*(?:-\s+)?use:\s*([A-Za-z0-9_]*)$")
_ORDER = re.compile(r"^\s*(?:-\s+)?(?:after|before):.*?([A-Za-z0-9_]*)$")
_RECEIVER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\[[^\[\]]*\]|\.[A-Za-z_][A-Za-z0-9_]*)*)\.([A-Za-z0-9_]*)$")
_RULE_FILE = re.compile(r"^(rules|shared_checks)\s*:", re.M)
KEYWORDS = ("and", "or", "not", "in", "if", "then", "else", "where", "true", "false", "null")
QUANTIFIERS = ("all", "any", "none", "count", "distinct", "earlier")


@dataclass(frozen=True)
class Item:
    """A completion: the text, what kind of thing it is, a one-line detail and its doc."""

    label: str
    kind: str  # "field" | "helper" | "variable" | "keyword" | "check" | "rule" | "key"
    detail: str = ""
    doc: str = ""


@dataclass(frozen=True)
class Hover:
    """What the cursor is on: markdown text and the span it covers (None: the word)."""

    text: str
    span: Span | None = None


@dataclass
class Analysis:
    """The models of a rule set's files (by resolved path), each rule with what the checker resolved, the shared
    checks and the rules by name."""

    models: dict[Path, RuleFile] = field(default_factory=dict)
    checked: list[tuple[Rule, Resolution]] = field(default_factory=list)
    shared: dict[str, Check] = field(default_factory=dict)
    rules: dict[str, Rule] = field(default_factory=dict)
    checks: dict[str, Check] = field(default_factory=dict)  # every named check, nested ones too (the first)


def fixture_rule_file(path: Path, text: str) -> Path | None:
    """The rule file a fixture tests (its `rule_file`, else `<stem>.yaml` two folders up), when `path` is a
    fixture (a YAML file under a `fixtures` folder with a top-level `expect:`)."""
    if "fixtures" not in path.parts or not re.search(r"^expect\s*:", text, re.M):
        return None
    m = re.search(r"^rule_file\s*:\s*['\"]?([^'\"\s#]+)", text, re.M)
    return (path.parent / m.group(1)).resolve() if m else path.parents[2] / f"{path.parent.name}.yaml"


def fixture_completions(analysis: Analysis, rule_file: Path, lines: Sequence[str], line: int, col: int) -> list[Item]:
    """In a fixture's `expect:` section, after `NODE:` (or `check:`): `fired` and the names the decisions of the
    tested file's rules can miss at (their checks, nested ones too, graph exclusions, `actions`)."""
    prefix = (lines[line] if line < len(lines) else "")[:col]
    section = next((m.group(1) for t in reversed(lines[:line]) if (m := re.match(r"^(\w+)\s*:", t))), None)
    if section != "expect" or not re.match(r"^\s+\S+\s*:\s*(\{\s*check\s*:\s*)?\w*$", prefix):
        return []
    out = {"fired": Item("fired", "keyword", "the candidate is made zero-copy")}
    for rule, _ in analysis.checked:
        if Path(rule.file) == rule_file:
            for c in _nested(rule.checks):
                out.setdefault(c.name, Item(c.name, "check", f"check of {rule.name}", c.description))
            for g in rule.skip_graph:
                out.setdefault(g.name, Item(g.name, "check", f"graph exclusion of {rule.name}", g.description))
            out.setdefault("actions", Item("actions", "keyword", f"an action of {rule.name} failed"))
    return list(out.values())


def is_rule_text(path: Path, text: str) -> bool:
    """Whether a document is a rule file (not a fixture, graph or other YAML): what the server looks at."""
    return "fixtures" not in path.parts and bool(_RULE_FILE.search(text))


def rule_set_roots(path: Path) -> tuple[Path, ...]:
    """The rule set `path` belongs to, as the paths `validate` would be given: the settings' `rules` (see
    :mod:`.config`) when one of them holds `path`, else the file's folder."""
    found = find_config(path.parent)
    try:
        roots = tuple(Path(r).resolve() for r in load_config(found).rules) if found is not None else ()
    except RulepassError:  # a bad settings file: the command line says what is wrong with it
        roots = ()
    return roots if any(path == r or r in path.parents for r in roots) else (path.parent,)


def rule_set_paths(roots: Sequence[Path], path: Path) -> list[Path]:
    """The files checked together with `path`: every rule file of `roots`, as `validate ROOTS` finds them."""
    files, _ = rule_files(roots)
    found = [f.resolve() for f in files]
    return found if path in found else [*found, path]


def validate(roots: Sequence[Path], path: Path, texts: Mapping[Path, str]) -> dict[Path, list[Diagnostic]]:
    """`rulepass validate ROOTS` (the rule set of `path`), with `texts` (unsaved buffers by resolved path) read
    instead of the disk; the diagnostics by resolved file (those with no span go to the file they name, else to
    `path`)."""
    found = validate_ge_rules(roots, texts={p: t.encode() for p, t in texts.items()})
    out: dict[Path, list[Diagnostic]] = {}
    for d in found.diagnostics:
        named = Path(d.span.file if d.span is not None else d.where or "")
        out.setdefault(named.resolve() if named.suffix in RULE_SUFFIXES else path, []).append(d)
    return out


def analyse(paths: Sequence[Path], texts: Mapping[Path, str]) -> Analysis:
    """Read every file of a rule set (the buffers in `texts` first) and check each rule: the names, types,
    fields and helpers under every expression."""
    out = Analysis()
    for p in paths:
        text = texts.get(p)
        if text is None:
            try:
                text = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
        model, _ = read_rule_text(text, str(p))
        if model is not None:
            out.models[p] = model
    for model in out.models.values():
        for c in model.shared:
            out.shared.setdefault(c.name, c)
        for r in model.rules:
            out.rules.setdefault(r.name, r)
        for c in _nested((*model.shared, *(c for r in model.rules for c in r.checks))):
            if c.kind != "use":
                out.checks.setdefault(c.name, c)
    rules, _ = resolve_shared(list(out.models.values()))
    catalogue = ge_catalogue()
    for r in rules:
        res, _ = check_rule(r, catalogue)
        out.checked.append((r, res))
    return out


def _nested(checks: Sequence[Check]) -> Iterator[Check]:
    for c in checks:
        yield c
        yield from _nested(c.checks)


def _contains(span: Span, line: int, col: int) -> bool:
    """Whether 1-based (line, col) lies in `span` or just after its end."""
    return (span.line, span.col) <= (line, col) <= (span.end_line, span.end_col + 1)


def node_at(model: RuleFile, line: int, col: int) -> tuple[Expr, ast.Node] | None:
    """The innermost expression node of `model` at 0-based (line, col)."""
    line, col = line + 1, col + 1
    for _, e in rule_file_exprs(model):
        if not _contains(e.span(), line, col):
            continue
        node = e.node
        while True:
            inner = [c for c in ast.children(node) if _contains(e.span(c), line, col)]
            if not inner:
                return e, node
            node = inner[-1]
    return None


def _resolution(analysis: Analysis, node: ast.Node) -> Resolution | None:
    """The resolution of a rule that checked `node` (a shared check's nodes: any rule that uses it)."""
    for _, res in analysis.checked:
        if id(node) in res.types:
            return res
    return None


def hover(analysis: Analysis, path: Path, lines: Sequence[str], line: int, col: int) -> Hover | None:
    """What to show for the cursor at 0-based (line, col) of the file `path` (whose text is `lines`)."""
    model = analysis.models.get(path)
    found = node_at(model, line, col) if model is not None else None
    if found is not None:
        e, node = found
        res = _resolution(analysis, node)
        if res is not None:
            return Hover(_describe_node(node, res), e.span(node))
    text = lines[line] if line < len(lines) else ""
    word = _word_at(text, col)
    if word is None:
        return None
    key = _KEY.match(text)
    if (
        key is not None
        and key.start(3) <= col <= key.end(3)
        and word in schema_key_docs()
        and "fixtures" not in path.parts
    ):
        return Hover(f"**{word}** (rule file key)\n\n{schema_key_docs()[word]}")
    if word in analysis.shared:
        return Hover(_describe_check(analysis.shared[word], shared=True))
    if word in analysis.rules:
        r = analysis.rules[word]
        return Hover(f"**{r.name}** (rule, {r.span})\n\n{r.description}".rstrip())
    if word in analysis.checks:
        return Hover(_describe_check(analysis.checks[word]))
    return _catalogue_hover(word)


def _describe_node(node: ast.Node, res: Resolution) -> str:
    """Markdown for an expression node: the field, helper or name it is, with its type and doc."""
    catalogue = ge_catalogue()
    t = res.type_of(node)
    if isinstance(node, ast.Attr) and id(node) in res.fields:
        f = res.fields[id(node)]
        return f"```\n{res.type_of(node.obj)}.{node.name}: {f.type}\n```\n{f.doc}"
    if isinstance(node, ast.Call):
        h = res.helpers.get(id(node))
        if h is not None:
            return f"```\n{h.signature()}\n```\n{h.doc}"
        return f"```\n{node.func}(...): {t}\n```"
    if isinstance(node, ast.Name):
        if id(node) in res.let_refs:
            b = res.let_refs[id(node)]
            return f"```\n{node.id}: {t}\n```\nlet `{node.id}` = `{b.expr.text.strip()}` ({b.span})"
        if node.id in catalogue.roots:
            return f"```\n{node.id}: {t}\n```\n{catalogue.roots[node.id][1]}"
        return f"```\n{node.id}: {t}\n```\na loop variable"
    return f"```\n{t}\n```"


def _describe_check(c: Check, *, shared: bool = False) -> str:
    what = "shared check" if shared else "check"
    return f"**{c.name}** ({what}, {c.span})\n\n{c.description}".rstrip()


def _catalogue_hover(word: str) -> Hover | None:
    """A catalogue name alone: a helper, a root binding, an entity, or the fields of that name."""
    c = ge_catalogue()
    if word in c.helpers:
        h = c.helpers[word]
        return Hover(f"```\n{h.signature()}\n```\n{h.doc}")
    if word in c.roots:
        t, doc = c.roots[word]
        return Hover(f"```\n{word}: {t}\n```\n{doc}")
    if word in c.entities:
        return Hover(f"**{word}** (entity)\n\n{c.entities[word].doc}")
    fields = [
        f"```\n{e.name}.{word}: {f.type}\n```\n{f.doc}" for e in c.entities.values() for f in [e.fields.get(word)] if f
    ]
    return Hover("\n\n".join(fields)) if fields else None


def _word_at(text: str, col: int) -> str | None:
    for m in _WORD.finditer(text):
        if m.start() <= col <= m.end():
            return m.group()
    return None


@cache
def schema_key_docs() -> dict[str, str]:
    """The description of every key the rule schema describes (the first one where a key recurs)."""
    out: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in (node.get("properties") or {}).items():
                desc = v.get("description") if isinstance(v, dict) else None
                if desc is None and isinstance(v, dict) and "$ref" in v:
                    desc = _ref(schema, v["$ref"]).get("description")
                if desc and k not in out:
                    out[k] = desc
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    schema = load_schema("rulepass.dsl", "rule.schema.json")
    walk(schema)
    return out


def _ref(schema: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = schema
    for part in ref.lstrip("#/").split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def definition(analysis: Analysis, path: Path, lines: Sequence[str], line: int, col: int) -> Span | None:
    """Where the name at the cursor is defined: a shared check (`use: NAME`), a rule (`after`/`before`), a
    check (a fixture's expectation), a `let` binding read in an expression."""
    model = analysis.models.get(path)
    found = node_at(model, line, col) if model is not None else None
    if found is not None and isinstance(found[1], ast.Name):
        res = _resolution(analysis, found[1])
        if res is not None and id(found[1]) in res.let_refs:
            return res.let_refs[id(found[1])].span
    word = _word_at(lines[line] if line < len(lines) else "", col)
    if word in analysis.shared:
        return analysis.shared[word].span
    if word in analysis.rules:
        return analysis.rules[word].span
    if word in analysis.checks:
        return analysis.checks[word].span
    return None


def completions(analysis: Analysis, path: Path, lines: Sequence[str], line: int, col: int) -> list[Item]:
    """What may be written at 0-based (line, col): `use` targets, pass names, fields after a `.`, names and
    helpers in an expression, keys at the start of a line."""
    prefix = (lines[line] if line < len(lines) else "")[:col]
    if _USE.match(prefix):
        return [Item(n, "check", "shared check", c.description) for n, c in sorted(analysis.shared.items())]
    if _ORDER.match(prefix):
        return [Item(n, "rule", "pass", r.description) for n, r in sorted(analysis.rules.items())]
    m = _RECEIVER.search(prefix)
    if m is not None and not re.match(r"^\s*(-\s+)?[A-Za-z_$][\w.]*$", prefix):
        return _member_items(receiver_type(analysis, path, m.group(1)))
    if re.match(r"^\s*(-\s+)?[A-Za-z_]*$", prefix):
        return [Item(k, "key", "rule file key", d) for k, d in sorted(schema_key_docs().items())]
    return _name_items(analysis, path)


def _member_items(t: Type | None) -> list[Item]:
    """The fields of type `t` (every entity's when unknown) and the helpers callable as its methods."""
    c = ge_catalogue()
    out: dict[str, Item] = {}
    entities = [t.name] if t is not None and t.name in c.entities else list(c.entities)
    for e in entities:
        for name in c.field_names(e):
            f = c.field(e, name)
            if f is not None and name not in out:
                out[name] = Item(name, "field", f"{e}.{name}: {f.type}", f.doc)
    for h in c.helpers.values():
        if h.params and (t is None or c.assignable(t, h.params[0].type)):
            out.setdefault(h.name, Item(h.name, "helper", h.signature(), h.doc))
    return sorted(out.values(), key=lambda i: (i.kind != "field", i.label))


def _name_items(analysis: Analysis, path: Path) -> list[Item]:
    """The names an expression may start with: the file's variables, the roots, helpers and keywords."""
    c = ge_catalogue()
    out = [Item(n, "variable", f"{n}: {t}", doc) for n, (t, doc) in sorted(c.roots.items())]
    seen = {i.label for i in out}
    for name, t in sorted(_file_names(analysis, path).items()):
        if name not in seen:
            out.append(Item(name, "variable", f"{name}: {t}"))
    out += [Item(h.name, "helper", h.signature(), h.doc) for h in sorted(c.helpers.values(), key=lambda h: h.name)]
    out += [Item(k, "keyword") for k in (*QUANTIFIERS, *KEYWORDS)]
    return out


def _file_names(analysis: Analysis, path: Path) -> dict[str, Type]:
    """The variables the expressions of `path` read (lets, loop variables), with the type the checker gave."""
    model = analysis.models.get(path)
    out: dict[str, Type] = {}
    if model is None:
        return out
    for _, e in rule_file_exprs(model):
        for node in _walk(e.node):
            if isinstance(node, ast.Name):
                res = _resolution(analysis, node)
                if res is not None:
                    out.setdefault(node.id, res.type_of(node))
    for rule, res in analysis.checked:
        if Path(rule.file) == path:  # its lets, read or not (yet)
            for b in rule.lets:
                out.setdefault(b.name, res.type_of(b.expr.node))
    return out


def _walk(node: ast.Node) -> Iterator[ast.Node]:
    yield node
    for c in ast.children(node):
        yield from _walk(c)


def receiver_type(analysis: Analysis, path: Path, chain: str) -> Type | None:
    """The static type of a chain `name(.field|[index])*` typed before a `.` (the expression being incomplete,
    it has no resolution yet): the name's type from the checked file, then the catalogue's field types."""
    c = ge_catalogue()
    head = _WORD.match(chain)
    assert head is not None  # the receiver pattern starts with a name
    t = c.roots[head.group()][0] if head.group() in c.roots else _file_names(analysis, path).get(head.group())
    for part in re.findall(r"\[[^\[\]]*\]|\.[A-Za-z_][A-Za-z0-9_]*", chain[head.end() :]):
        if t is None:
            return None
        if part.startswith("["):
            t = t.item() if t.is_list else None
            continue
        f = c.field(t.non_null().name, part[1:])
        t = f.type if f is not None else None
    return t.non_null() if t is not None else None
