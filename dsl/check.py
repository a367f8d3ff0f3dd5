"""The checker: resolves every name of a rule against the catalogue and types every expression.

It reports, each at its file position with a suggestion where one helps: unknown names and fields, unknown
helpers and wrong arity, type mismatches (conditions that are not booleans, comparing a node with a number,
quantifying over something that is not a list, ...), bindings that shadow others or are never used, duplicate
check names in a rule, duplicate rule names across files, and order constraints that name unknown passes or
form a cycle. It records what each name resolved to, for the compiler.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.diagnostics import Diagnostic, Span, did_you_mean
from ..base.limits import MAX_EXPR_DEPTH
from . import ast
from .catalogue import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    NOTHING,
    NULL,
    STR,
    Catalogue,
    EditSpec,
    FieldSpec,
    HelperSpec,
    Type,
    list_of,
    parse_type,
)
from .rules import Binding, Check, Expr, Rule

_NUMERIC = ("int", "float")


@dataclass
class Resolution:
    """What the checker found for each AST node of a rule (keyed by node identity)."""

    types: dict[int, Type] = field(default_factory=dict)
    fields: dict[int, FieldSpec] = field(default_factory=dict)
    helpers: dict[int, HelperSpec] = field(default_factory=dict)
    setters: dict[int, Callable[[Any, str, Any], None]] = field(default_factory=dict)
    edits: dict[int, EditSpec] = field(default_factory=dict)  # structural action node -> the domain's edit
    let_refs: dict[int, Binding] = field(default_factory=dict)  # Name node -> the `let` it reads
    describers: dict[int, Callable[[Any], str]] = field(default_factory=dict)
    earlier: dict[int, Earlier] = field(default_factory=dict)  # `earlier(x)` Call node -> what it lists
    # `set` action node -> the inline form of the dict its attribute is written to, and helper call with an inline
    # form -> that of the dict its first argument's attributes live in (when the entity declares one)
    attr_dicts: dict[int, str] = field(default_factory=dict)
    # `x in xs` / `x not in xs` node where x and xs's elements are of one type with an equality key (a scalar: the
    # value itself, `{0}`; an entity: its catalogue `key_inline`) -> that key's inline form (codegen keeps sets)
    member_keys: dict[int, str] = field(default_factory=dict)

    def type_of(self, node: ast.Node) -> Type:
        """The static type of `node`."""
        return self.types.get(id(node), ANY)


EARLIER = "earlier"  # the language's one built-in form that is not a catalogue helper


@dataclass(frozen=True)
class Earlier:
    """`earlier(x)`: the values `x` took for the elements of `group` visited before the current one.

    `x` is the group's variable (`binding` None) or one of the group's own lets (`binding`)."""

    group: Check
    name: str
    binding: Binding | None


def earlier_key(group: Check) -> str:
    """The evaluation-environment key under which a group keeps the elements it has visited (no rule name can
    clash with it)."""
    return f"\0visited:{id(group)}"


@dataclass
class _Var:
    type: Type
    span: Span | None
    kind: str  # "root" | "let" | "var" | "quant"
    used: bool = False
    binding: Binding | None = None
    poisoned: bool = False  # bound to an element of a collection already reported as wrong: no cascade
    group: Check | None = None  # the for_each group whose variable or own `let` this is


class _Scope:
    def __init__(self, parent: _Scope | None = None, shared: Check | None = None) -> None:
        self.vars: dict[str, _Var] = {}
        self.parent = parent
        self.shared = shared  # the scope of this shared check: the root bindings and its parameters alone

    def shared_check(self) -> Check | None:
        s: _Scope | None = self
        while s is not None and s.shared is None:
            s = s.parent
        return s.shared if s is not None else None

    def lookup(self, name: str) -> _Var | None:
        s: _Scope | None = self
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            s = s.parent
        return None

    def names(self) -> list[str]:
        out: list[str] = []
        s: _Scope | None = self
        while s is not None:
            out.extend(s.vars)
            s = s.parent
        return out


def _literal_type(v: object) -> Type:
    """The type of a literal's value."""
    if v is None:
        return NULL
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    return FLOAT if isinstance(v, float) else STR


class _Checker:
    def __init__(self, catalogue: Catalogue, res: Resolution) -> None:
        self.cat = catalogue
        self.res = res
        self.diags: list[Diagnostic] = []
        self.expr: Expr | None = None
        self.pending: list[str] = []  # let names declared later in the same block (for a better message)
        self.early: set[str] = set()  # pending let names already reported as used before their binding
        self.poisoned: set[int] = set()  # nodes whose type is `any` because an error was reported in them
        self.filtering: set[int] = set()  # groups whose `where` is being checked (no `earlier` of them there)
        self.uses_earlier: set[int] = set()  # lets whose value needs `earlier(...)` (directly or through a let)
        self.earlier_seen = 0  # `earlier(...)` calls and reads of such lets met so far
        self.let_depth: dict[int, int] = {}  # let -> how deep its expression is nested, the lets it reads inlined
        self.roots = _Scope()  # the root bindings (set by check_rule)
        self.list_scopes: dict[tuple[int, int], _Scope] = {}  # (list of checks as used, caller's scope) -> its scope

    # ---- reporting -----------------------------------------------------------------------------------------
    def err(self, code: str, msg: str, node: ast.Node, hint: str | None = None) -> Type:
        assert self.expr is not None
        self.diags.append(Diagnostic(code, msg, self.expr.src.span(node.start, node.end), hint=hint))
        return ANY

    def err_at(self, code: str, msg: str, start: int, length: int, hint: str | None = None) -> Type:
        assert self.expr is not None
        self.diags.append(Diagnostic(code, msg, self.expr.src.span(start, start + length), hint=hint))
        return ANY

    def text(self, node: ast.Node) -> str:
        assert self.expr is not None
        return self.expr.text[node.start : node.end]

    # ---- entry points --------------------------------------------------------------------------------------
    def check_expr(self, e: Expr, scope: _Scope, want: Type | None = None, what: str = "expression") -> Type:
        self.expr = e
        t = self.visit(e.node, scope)
        depth = self.inlined_depth(e.node)
        if depth > MAX_EXPR_DEPTH:  # code generation inlines the lets read: no rule may reach Python's recursion limit
            self.err(
                "expr-depth",
                f"{what} is nested {depth} levels deep counting the lets it reads; the limit is {MAX_EXPR_DEPTH}",
                e.node,
                hint="shorten the chain of lets that build on each other",
            )
            self.poisoned.add(id(e.node))
        if want is not None and t.name != "any" and not self.cat.assignable(t, want):
            self.err("type-mismatch", f"{what} must be {want}, but `{self.text(e.node)}` is {t}", e.node)
        return t

    def inlined_depth(self, n: ast.Node) -> int:
        """How deep `n` is nested once every let it reads stands in place of its name (bounded by MAX_EXPR_DEPTH per
        expression, so this recursion is too)."""
        if isinstance(n, ast.Name):
            b = self.res.let_refs.get(id(n))
            return self.let_depth.get(id(b), 1) if b is not None else 1
        return 1 + max((self.inlined_depth(c) for c in ast.children(n)), default=0)

    def bind(self, scope: _Scope, name: str, t: Type, span: Span | None, kind: str, node_for_err: Span | None) -> None:
        prev = scope.lookup(name)
        if prev is not None or name in self.cat.helpers:
            what = "a helper" if prev is None else ("a root binding" if prev.kind == "root" else "another binding")
            self.diags.append(
                Diagnostic(
                    "shadowing", f"'{name}' shadows {what} of the same name", node_for_err, hint="choose another name"
                )
            )
        scope.vars[name] = _Var(t, span, kind)

    def check_lets(self, lets: Sequence[Binding], scope: _Scope, group: Check | None = None) -> None:
        names = [b.name for b in lets]
        for k, b in enumerate(lets):
            self.pending = names[k + 1 :]
            seen = self.earlier_seen
            own = self.list_scope(b.spliced_from, scope) if b.spliced_from is not None else scope
            t = self.check_expr(b.expr, own)
            depth = self.inlined_depth(b.expr.node)
            self.let_depth[id(b)] = depth if depth <= MAX_EXPR_DEPTH else 1  # reported once, not at every later let
            if self.earlier_seen != seen:
                self.uses_earlier.add(id(b))
            self.pending = []
            self.bind(scope, b.name, t, b.span, "let", b.span)
            scope.vars[b.name].binding = b
            scope.vars[b.name].group = group
            if b.name in self.early:  # already reported as used too early: do not also call it unused
                scope.vars[b.name].used = True
                self.early.discard(b.name)
            if own is not scope:  # the checks of its list read it
                own.vars[b.name] = scope.vars[b.name]

    def list_scope(self, lst: Check, scope: _Scope) -> _Scope:
        """The scope of the list of checks `lst` (as used) spliced into `scope`: its parameters, as for any shared
        check, and its lets as they are bound (one scope for all its checks and lets)."""
        key = (id(lst), id(scope))
        if key not in self.list_scopes:
            self.list_scopes[key] = self.shared_scope(lst, scope, self.roots)
        return self.list_scopes[key]

    def check_scope(self, c: Check, scope: _Scope) -> _Scope:
        """The scope check `c` is checked in, within `scope`: its list's, or its own as a shared check."""
        if c.spliced_from is not None:
            return self.list_scope(c.spliced_from, scope)
        return self.shared_scope(c, scope, self.roots) if c.shared is not None else scope

    def shared_scope(self, c: Check, scope: _Scope, roots: _Scope) -> _Scope:
        """The scope a shared check is checked in: the root bindings and, under the names the caller passes,
        its parameters (the caller's own bindings, so their uses count and the compiler finds their lets)."""
        inner = _Scope(roots, shared=c)
        for a in c.args:
            var = scope.lookup(a.name)
            if var is None:
                self.diags.append(
                    Diagnostic(
                        "unknown-name",
                        f"no binding '{a.name}' here to pass as parameter '{a.param}' of '{c.shared}'",
                        a.span,
                        hint=did_you_mean(a.name, scope.names()),
                    )
                )
                inner.vars[a.name] = _Var(ANY, a.span, "root", poisoned=True)
                continue
            var.used = True
            inner.vars[a.name] = var
            try:
                want = parse_type(a.type)
            except ValueError:
                want = None
            if want is None or not self.known_type(want):
                self.diags.append(
                    Diagnostic(
                        "type-mismatch", f"parameter '{a.param}' of '{c.shared}': unknown type '{a.type}'", a.span
                    )
                )
            elif var.type.name != "any" and not self.cat.assignable(var.type, want):
                self.diags.append(
                    Diagnostic(
                        "type-mismatch",
                        f"parameter '{a.param}' of '{c.shared}' is {want}, but '{a.name}' is {var.type}",
                        a.span,
                    )
                )
                # the check's body is checked against the declared type: no error of the mismatch's making there
                inner.vars[a.name] = _Var(want, var.span, var.kind, True, var.binding, var.poisoned, var.group)
        return inner

    def known_type(self, t: Type) -> bool:
        if t.is_list:
            return t.elem is not None and self.known_type(t.elem)
        return t.name in ("int", "float", "str", "bool", "any") or t.name in self.cat.entities

    def unused(self, scope: _Scope) -> None:
        for name, v in scope.vars.items():
            if not v.used and v.kind in ("let", "var") and not name.startswith("_"):
                self.diags.append(
                    Diagnostic(
                        "unused-binding",
                        f"binding '{name}' is never used",
                        v.span,
                        severity="warning",
                        hint="remove it, or prefix it with '_'",
                    )
                )

    # ---- expressions ---------------------------------------------------------------------------------------
    def visit(self, n: ast.Node, scope: _Scope) -> Type:
        before = len(self.diags)
        t = self._visit(n, scope)
        self.res.types[id(n)] = t
        if t.name == "any" and (len(self.diags) > before or any(id(c) in self.poisoned for c in ast.children(n))):
            self.poisoned.add(id(n))  # its type is unknown because of an error already reported: no cascade
        return t

    def _visit(self, n: ast.Node, scope: _Scope) -> Type:
        if isinstance(n, ast.Lit):
            return _literal_type(n.value)
        if isinstance(n, ast.Name):
            return self.name(n, scope)
        if isinstance(n, ast.Attr):
            obj = self.visit(n.obj, scope)
            return self.field(n, obj)
        if isinstance(n, ast.Call):
            return self.call(n, scope)
        if isinstance(n, ast.Unary):
            return self.unary(n, scope)
        if isinstance(n, ast.BoolOp):
            for op in n.operands:
                self.need_bool(op, self.visit(op, scope), f"each operand of '{n.op}'")
            return BOOL
        if isinstance(n, ast.Compare):
            return self.compare(n, scope)
        if isinstance(n, ast.Arith):
            return self.arith(n, scope)
        if isinstance(n, ast.IfElse):
            return self.if_else(n, scope)
        if isinstance(n, ast.Quant):
            return self.quant(n, scope)
        if isinstance(n, ast.ListLit):
            return self.list_lit(n, scope)
        if isinstance(n, ast.Index):
            return self.index(n, scope)
        if isinstance(n, ast.Slice):
            return self.slice(n, scope)
        raise AssertionError(f"unexpected node {type(n).__name__}")

    def name(self, n: ast.Name, scope: _Scope) -> Type:
        """A name's type: a root binding, a let (its reads recorded for the compiler) or a variable."""
        var = scope.lookup(n.id)
        if var is None:
            return self.unknown_name(n, scope)
        var.used = True
        if var.poisoned:
            self.poisoned.add(id(n))
        if var.binding is not None:
            self.res.let_refs[id(n)] = var.binding
            if id(var.binding) in self.uses_earlier:
                self.earlier_seen += 1
        return var.type

    def unknown_name(self, n: ast.Name, scope: _Scope) -> Type:
        """Report a name `scope` does not bind, saying what it is instead where it is something."""
        if n.id in self.pending:
            self.early.add(n.id)
            return self.err(
                "unknown-name",
                f"'{n.id}' is used before its binding",
                n,
                hint="a `let` may only use the bindings listed before it",
            )
        if n.id in self.cat.helpers:
            return self.err("unknown-name", f"'{n.id}' is a helper; call it as {n.id}(...)", n)
        if n.id in self.cat.roots:  # a root binding that is not bound here: only in skip_graph
            return self.err(
                "unknown-name",
                f"'{n.id}' is not bound in skip_graph (only `graph` is)",
                n,
                hint="skip_graph conditions are evaluated once per graph, before any candidate",
            )
        shared = scope.shared_check()
        if shared is not None:
            given = ", ".join(f"{a.param}: {a.name}" if a.param != a.name else a.param for a in shared.args)
            return self.err(
                "unknown-name",
                f"shared check '{shared.shared}' reads '{n.id}', which is none of its parameters"
                f" ({given or 'it has none'}) nor a root binding",
                n,
                hint="declare it under `params:` and pass it with `with:` where the check is used",
            )
        return self.err("unknown-name", f"unknown name '{n.id}'", n, hint=did_you_mean(n.id, scope.names()))

    def unary(self, n: ast.Unary, scope: _Scope) -> Type:
        t = self.visit(n.operand, scope)
        if n.op == "not":
            self.need_bool(n.operand, t, "the operand of 'not'")
            return BOOL
        if t.name not in (*_NUMERIC, "any"):
            return self.err("type-mismatch", f"'-' needs a number, but `{self.text(n.operand)}` is {t}", n.operand)
        return t

    def if_else(self, n: ast.IfElse, scope: _Scope) -> Type:
        self.need_bool(n.cond, self.visit(n.cond, scope), "the condition of 'if'")
        a, b = self.visit(n.then, scope), self.visit(n.else_, scope)
        u = self.unify(a, b)
        if u is None:
            return self.err("type-mismatch", f"the branches of 'if' have different types ({a} and {b})", n)
        return u

    def list_lit(self, n: ast.ListLit, scope: _Scope) -> Type:
        elem: Type | None = None
        for item in n.items:
            t = self.visit(item, scope)
            u = t if elem is None else self.unify(elem, t)
            if u is None:
                return self.err("type-mismatch", f"list elements have different types ({elem} and {t})", item)
            elem = u
        return list_of(elem or NOTHING)

    def index(self, n: ast.Index, scope: _Scope) -> Type:
        obj, idx = self.visit(n.obj, scope), self.visit(n.index, scope)
        if idx.name not in ("int", "any"):
            self.err("type-mismatch", f"an index must be an int, but `{self.text(n.index)}` is {idx}", n.index)
        if obj.is_list:
            return obj.item()
        if obj.name in ("str", "any"):
            return obj
        return self.err("type-mismatch", f"`{self.text(n.obj)}` is {obj}; only lists and strings can be indexed", n.obj)

    def slice(self, n: ast.Slice, scope: _Scope) -> Type:
        obj = self.visit(n.obj, scope)
        for bound in (n.lo, n.hi):
            if bound is not None and self.visit(bound, scope).name not in ("int", "any"):
                self.err("type-mismatch", "slice bounds must be ints", bound)
        if obj.is_list or obj.name in ("str", "any"):
            return obj
        return self.err("type-mismatch", f"`{self.text(n.obj)}` is {obj}; only lists and strings can be sliced", n.obj)

    def bad_coll(self, n: ast.Node, t: Type) -> bool:
        """Whether collection `n` (of type `t`) was reported as wrong, so its elements' type is unknown."""
        return (not t.is_list and t.name != "any") or id(n) in self.poisoned

    def need_bool(self, n: ast.Node, t: Type, what: str) -> None:
        if t.name not in ("bool", "any"):
            self.err(
                "type-mismatch",
                f"{what} must be bool, but `{self.text(n)}` is {t}",
                n,
                hint="compare it explicitly, e.g. `x != null` or `len(x) > 0`",
            )

    def field(self, n: ast.Attr, obj: Type) -> Type:
        if obj.name == "any" and id(n.obj) in self.poisoned:
            return ANY
        if obj.name == "any":
            return self.err(
                "type-mismatch", f"cannot read field '{n.name}' of `{self.text(n.obj)}`: its type is not known", n
            )
        if obj.is_list:
            return self.err(
                "type-mismatch",
                f"`{self.text(n.obj)}` is {obj}; lists have no field '{n.name}'",
                n,
                hint="use a quantifier, e.g. all(x in ...: x." + n.name + " ...)",
            )
        if obj.name not in self.cat.entities:
            return self.err("type-mismatch", f"`{self.text(n.obj)}` is {obj}, which has no fields", n)
        spec = self.cat.field(obj.name, n.name)
        if spec is None:
            helper = self.cat.helpers.get(n.name)
            hint = (
                f"'{n.name}' is a helper: call it as `{self.text(n.obj)}.{n.name}(...)`"
                if helper is not None
                else did_you_mean(n.name, self.cat.field_names(obj.name))
            )
            return self.err_at(
                "unknown-field",
                f"{obj.non_null()} has no field '{n.name}'",
                n.start + self.text(n).rfind(n.name),  # not n.end - len(name): `(x.f)` ends at its parenthesis
                len(n.name),
                hint=hint,
            )
        self.res.fields[id(n)] = spec
        return spec.type

    def call(self, n: ast.Call, scope: _Scope) -> Type:
        if n.func == EARLIER and n.receiver is None and EARLIER not in self.cat.helpers:
            return self.earlier(n, scope)
        helper = self.cat.helpers.get(n.func)
        args = list(n.args)
        arg_types = [self.visit(a, scope) for a in args]
        if n.receiver is not None:
            recv_t = self.visit(n.receiver, scope)
            args.insert(0, n.receiver)
            arg_types.insert(0, recv_t)
            if helper is None and recv_t.name in self.cat.entities and self.cat.field(recv_t.name, n.func) is not None:
                return self.err_at(
                    "unknown-name",
                    f"'{n.func}' is a field of {recv_t.non_null()}, not a helper",
                    n.name_start,
                    len(n.func),
                    hint=f"drop the parentheses: .{n.func}",
                )
        if helper is None:
            return self.err_at(
                "unknown-name",
                f"unknown helper '{n.func}'",
                n.name_start,
                len(n.func),
                hint=did_you_mean(n.func, self.cat.helpers),
            )
        self.res.helpers[id(n)] = helper
        required = sum(1 for p in helper.params if not p.optional)
        if not required <= len(args) <= len(helper.params):
            want = str(required) if required == len(helper.params) else f"{required} to {len(helper.params)}"
            return self.err(
                "wrong-arity",
                f"{n.func}() takes {want} argument(s), {len(args)} given",
                n,
                hint=f"signature: {helper.signature()}",
            )
        for p, a, t in zip(helper.params, args, arg_types, strict=False):
            if not self.cat.assignable(t, p.type):
                self.err(
                    "type-mismatch",
                    f"argument '{p.name}' of {n.func}() must be {p.type}, but `{self.text(a)}` is {t}",
                    a,
                    hint=f"signature: {helper.signature()}",
                )
        if arg_types and helper.inline:
            entity = self.cat.entities.get(arg_types[0].name)
            if entity is not None and entity.attrs_inline is not None:
                self.res.attr_dicts[id(n)] = entity.attrs_inline  # an inline form's attribute dict (codegen)
        return helper.returns

    def earlier(self, n: ast.Call, scope: _Scope) -> Type:
        """`earlier(x)`, x a for_each variable or one of its group's own lets: list of x's earlier values."""
        self.earlier_seen += 1
        usage = "earlier(x) lists the values x took for the elements visited before this one"
        if len(n.args) != 1 or not isinstance(n.args[0], ast.Name):
            return self.err(
                "wrong-arity", "earlier() takes one name: a for_each variable or a `let` of its group", n, hint=usage
            )
        arg = n.args[0]
        var = scope.lookup(arg.id)
        if var is None or var.group is None:
            self.visit(arg, scope)  # reports an unknown name
            if var is None:
                return ANY
            return self.err(
                "type-mismatch",
                f"earlier() needs a for_each variable or a `let` of a for_each group; '{arg.id}' is neither",
                arg,
                hint=usage,
            )
        if id(var.group) in self.filtering:
            return self.err(
                "type-mismatch",
                f"earlier({arg.id}) cannot be used in the 'where' filter of its own for_each",
                n,
                hint="which elements count as visited depends on that filter",
            )
        t = self.visit(arg, scope)
        if var.binding is not None and id(var.binding) in self.uses_earlier:
            return self.err(
                "type-mismatch",
                f"earlier({arg.id}): '{arg.id}' itself needs earlier(); list a value that does not",
                arg,
            )
        self.res.earlier[id(n)] = Earlier(var.group, arg.id, var.binding)
        return list_of(t)

    def compare(self, n: ast.Compare, scope: _Scope) -> Type:
        a, b = self.visit(n.left, scope), self.visit(n.right, scope)
        if "any" in (a.name, b.name):
            return BOOL
        if n.op in ("in", "not in"):
            if b.is_list:
                assert b.elem is not None
                if not (self.cat.assignable(a, b.elem) or self.cat.assignable(b.elem, a) or a.name == "null"):
                    self.err(
                        "type-mismatch", f"`{self.text(n.left)}` is {a} but `{self.text(n.right)}` holds {b.elem}", n
                    )
                key = self.equality_key(a, b.elem)
                if key is not None:
                    self.res.member_keys[id(n)] = key
            elif b.name == "str":
                if a.name != "str":
                    self.err("type-mismatch", f"`in` a string needs a string on the left, not {a}", n.left)
            else:
                self.err("type-mismatch", f"`in` needs a list or a string on the right, not {b}", n.right)
            return BOOL
        if n.op in ("==", "!="):
            if not (
                self.cat.assignable(a, b) or self.cat.assignable(b, a) or (a.name in _NUMERIC and b.name in _NUMERIC)
            ):
                self.err(
                    "type-mismatch",
                    f"comparing {a} with {b} is always {'false' if n.op == '==' else 'true'}",
                    n,
                    hint=f"`{self.text(n.left)}` is {a}, `{self.text(n.right)}` is {b}",
                )
            return BOOL
        if not ((a.name in _NUMERIC and b.name in _NUMERIC) or (a.name == b.name == "str")):
            self.err("type-mismatch", f"'{n.op}' compares numbers or strings, not {a} and {b}", n)
        return BOOL

    def equality_key(self, a: Type, b: Type) -> str | None:
        """The inline form of the key two values of types `a` and `b` share, equal exactly when they are (the value
        for an int, string or bool; the catalogue's key for an entity of one type), else None."""
        if a.is_list or b.is_list or a.name != b.name:
            return None
        if a.name in ("int", "str", "bool"):
            return "{0}"
        entity = self.cat.entities.get(a.name)
        return entity.key_inline if entity is not None else None

    def arith(self, n: ast.Arith, scope: _Scope) -> Type:
        a, b = self.visit(n.left, scope), self.visit(n.right, scope)
        if "any" in (a.name, b.name):
            return ANY
        if n.op == "+" and a.name == b.name == "str":
            return STR
        if n.op == "+" and a.is_list and b.is_list:
            u = self.unify(a, b)
            if u is None:
                return self.err("type-mismatch", f"cannot join {a} and {b}", n)
            return u
        if a.name not in _NUMERIC or b.name not in _NUMERIC:
            return self.err("type-mismatch", f"'{n.op}' needs numbers, not {a} and {b}", n)
        if n.op == "/":
            return FLOAT
        return INT if a.name == b.name == "int" else FLOAT

    def quant(self, n: ast.Quant, scope: _Scope) -> Type:
        coll = self.visit(n.coll, scope)
        if coll.name == "any":
            elem = ANY
        elif not coll.is_list:
            self.err("type-mismatch", f"{n.kind}() needs a list, but `{self.text(n.coll)}` is {coll}", n.coll)
            elem = ANY
        else:
            elem = coll.item()
        inner = _Scope(scope)
        assert self.expr is not None
        self.bind(inner, n.var, elem, None, "quant", self.expr.src.span(n.var_start, n.var_start + len(n.var)))
        inner.vars[n.var].poisoned = self.bad_coll(n.coll, coll)
        if n.where is not None:
            self.need_bool(n.where, self.visit(n.where, inner), "the 'where' filter")
        body = self.visit(n.body, inner)
        if n.kind != "distinct":
            self.need_bool(n.body, body, f"the body of {n.kind}()")
        return INT if n.kind in ("count", "distinct") else BOOL

    def unify(self, a: Type, b: Type) -> Type | None:
        if a.name == "any" or b.name == "any":
            return ANY
        if a.name == "nothing":  # the empty list's elements: [] joins any list
            return b
        if b.name == "nothing":
            return a
        if a.name == "null":
            return b.or_null()
        if b.name == "null":
            return a.or_null()
        if a.name in _NUMERIC and b.name in _NUMERIC:
            return FLOAT if "float" in (a.name, b.name) else INT
        if a.is_list and b.is_list:
            assert a.elem is not None and b.elem is not None
            e = self.unify(a.elem, b.elem)
            return list_of(e) if e is not None else None
        if self.cat.assignable(a, b):
            return b if not a.nullable else b.or_null()
        if self.cat.assignable(b, a):
            return a if not b.nullable else a.or_null()
        return None

    # ---- actions -------------------------------------------------------------------------------------------
    def action(self, e: Expr, n: ast.Node, scope: _Scope) -> None:
        self.expr = e
        if isinstance(n, ast.ForAction):
            coll = self.visit(n.coll, scope)
            elem = coll.item() if coll.is_list else ANY
            if not coll.is_list and coll.name != "any":
                self.err("type-mismatch", f"'for' needs a list, but `{self.text(n.coll)}` is {coll}", n.coll)
            inner = _Scope(scope)
            self.bind(inner, n.var, elem, None, "quant", e.src.span(n.var_start, n.var_start + len(n.var)))
            inner.vars[n.var].poisoned = self.bad_coll(n.coll, coll)
            if n.where is not None:
                self.need_bool(n.where, self.visit(n.where, inner), "the 'where' filter")
            self.action(e, n.body, inner)
            return
        if isinstance(n, ast.EditAction):
            self.edit_action(e, n, scope)
            return
        assert isinstance(n, ast.SetAction)
        target = self.visit(n.target, scope)
        self.visit(n.value, scope)
        setter = self.cat.setter(target.name) if target.name in self.cat.entities else None
        if setter is None and id(n.target) in self.poisoned:
            return  # its type is unknown because of an error already reported
        if setter is None:
            holders = sorted(k for k in self.cat.entities if self.cat.setter(k) is not None)
            self.err(
                "type-mismatch",
                f"cannot set attributes on `{self.text(n.target)}` ({target})",
                n.target,
                hint=f"attributes live on: {', '.join(holders)}",
            )
            return
        self.res.setters[id(n)] = setter
        vt = self.res.type_of(n.value)
        spec = self.cat.field(target.name, n.attr)
        if spec is not None:  # the name is a field of the entity: only settable fields, with values of its type
            if not spec.settable:
                self.err(
                    "read-only-field",
                    f"'{n.attr}' is a read-only field of {target.non_null()}; an attribute cannot take its name",
                    n,
                    hint="choose another attribute name",
                )
            elif not self.cat.assignable(vt, spec.type):
                self.err(
                    "type-mismatch",
                    f"field '{n.attr}' of {target.non_null()} is {spec.type}, but `{self.text(n.value)}` is {vt}",
                    n.value,
                )
            return
        form = self.cat.entities[target.name].attrs_inline
        if form is not None:
            self.res.attr_dicts[id(n)] = form
        ok = vt.name in ("bool", "int", "float", "str") or (
            vt.is_list and vt.elem is not None and vt.elem.name in ("bool", "int", "float", "str", "nothing")
        )
        if not ok:
            self.err(
                "type-mismatch",
                f"an attribute value must be bool, int, float, str or a list of those, not {vt}",
                n.value,
            )

    def edit_action(self, e: Expr, n: ast.EditAction, scope: _Scope) -> None:
        """`insert OP before|after x` / `bypass x`: an edit the catalogue offers, on a target of its entity, making
        an op type it allows."""
        target = self.visit(n.target, scope)
        shown = "bypass" if n.kind == "bypass" else f"insert ... {n.kind.removeprefix('insert_')}"
        spec = self.cat.edits.get(n.kind)
        if spec is None:
            offered = ", ".join(sorted(self.cat.edits)) or "none"
            self.err("unknown-edit", f"`{shown}` is not offered by this catalogue (edits offered: {offered})", n)
            return
        self.res.edits[id(n)] = spec
        if id(n.target) not in self.poisoned and not self.cat.assignable(target.non_null(), Type(spec.entity)):
            self.err(
                "type-mismatch",
                f"`{shown}` needs {'an' if spec.entity[0] in 'AEIOU' else 'a'} {spec.entity}, "
                f"but `{self.text(n.target)}` is {target}",
                n.target,
                hint=spec.doc,
            )
        if n.kind != "bypass" and n.op_type not in spec.op_types:
            at = re.match(r"insert\s+", e.text[n.start : n.end])
            self.err_at(
                "unknown-op-type",
                f"an insert cannot make op type '{n.op_type}' (it can make: {', '.join(spec.op_types)})",
                n.start + (at.end() if at else 0),
                len(n.op_type),
                hint=did_you_mean(n.op_type, spec.op_types),
            )


def _check_names(checks: Iterable[Check], seen: dict[str, Span], diags: list[Diagnostic]) -> None:
    for c in checks:
        if c.name in seen:
            diags.append(
                Diagnostic(
                    "duplicate-check",
                    f"duplicate check name '{c.name}' in this rule (first "
                    + (f"on line {seen[c.name].line}" if seen[c.name].file == c.span.file else f"at {seen[c.name]}")
                    + ")",
                    c.span,
                    hint="explanations name checks; keep them unique",
                )
            )
        else:
            seen[c.name] = c.span
        _check_names(c.checks, seen, diags)


def check_rule(rule: Rule, catalogue: Catalogue) -> tuple[Resolution, list[Diagnostic]]:
    """Type-check one rule against the catalogue; returns what names resolved to and every diagnostic."""
    res = Resolution()
    ch = _Checker(catalogue, res)
    roots = ch.roots
    for name, (t, _doc) in catalogue.roots.items():
        roots.vars[name] = _Var(t, None, "root")
    # Graph exclusions run once per graph, before any candidate: only `graph` is bound there.
    graph_scope = _Scope()
    if "graph" in roots.vars:
        graph_scope.vars["graph"] = roots.vars["graph"]
    for s in rule.skip_graph:
        ch.check_expr(s.when, graph_scope, BOOL, f"skip_graph '{s.name}'")
    for op_type in rule.match:
        if not op_type.strip():
            ch.diags.append(Diagnostic("rule-shape", "empty op type in 'match'", rule.span))
    rule_scope = _Scope(roots)
    ch.check_lets(rule.lets, rule_scope)

    def run_checks(checks: Sequence[Check], outer: _Scope) -> None:
        for c in checks:
            scope = ch.check_scope(c, outer)
            if c.kind == "use":  # load_rules resolves these (rules.resolve_shared) before checking
                ch.diags.append(
                    Diagnostic("unknown-shared-check", f"`use: {c.name}` was not resolved to a shared check", c.span)
                )
            elif c.kind == "group":
                assert c.coll is not None
                coll = ch.check_expr(c.coll, scope)
                elem = coll.item() if coll.is_list else ANY
                if not coll.is_list and coll.name != "any":
                    ch.err("type-mismatch", f"for_each needs a list, but `{c.coll.text}` is {coll}", c.coll.node)
                inner = _Scope(scope)
                ch.bind(inner, c.var or "_", elem, c.var_span, "var", c.var_span)
                inner.vars[c.var or "_"].poisoned = ch.bad_coll(c.coll.node, coll)
                inner.vars[c.var or "_"].group = c
                if c.where is not None:
                    ch.filtering.add(id(c))
                    ch.check_expr(c.where, inner, BOOL, "the 'where' filter")
                    ch.filtering.discard(id(c))
                ch.check_lets(c.lets, inner, group=c)
                run_checks(c.checks, inner)
                ch.unused(inner)
            else:
                assert c.expr is not None
                if c.lets:
                    inner = _Scope(scope)
                    ch.check_lets(c.lets, inner)
                else:
                    inner = scope
                ch.check_expr(c.expr, inner, BOOL, f"{c.kind} of check '{c.name}'")
                if inner is not scope:
                    ch.unused(inner)

    run_checks(rule.checks, rule_scope)
    for a in rule.actions:
        ch.action(a, a.node, rule_scope)
    ch.unused(rule_scope)
    _check_names(rule.checks, {}, ch.diags)
    return res, ch.diags


def check_rule_set(rules: Sequence[Rule], known_passes: Iterable[str] = ()) -> list[Diagnostic]:
    """Checks across files: duplicate rule names, order constraints naming unknown passes or forming a cycle."""
    diags: list[Diagnostic] = []
    first: dict[str, Rule] = {}
    for r in rules:
        if r.name in first:
            other = first[r.name]
            diags.append(
                Diagnostic(
                    "duplicate-rule",
                    f"rule '{r.name}' is already defined at {other.span}",
                    r.span,
                    hint="rule names are pass names and must be unique",
                )
            )
        else:
            first[r.name] = r
    known = set(first) | set(known_passes)
    for r in rules:
        for names, spans in ((r.after, r.after_spans), (r.before, r.before_spans)):
            for name, span in zip(names, spans, strict=False):
                if name not in known:
                    diags.append(
                        Diagnostic(
                            "unknown-pass", f"'{name}' is not a known pass", span, hint=did_you_mean(name, known)
                        )
                    )
                elif name == r.name:
                    diags.append(
                        Diagnostic("order-cycle", f"rule '{r.name}' cannot be ordered relative to itself", span)
                    )
    # A rule naming itself is reported above; leave it out of the cycle search so it is not reported twice.
    cycle = order_cycle(
        {
            r.name: (tuple(a for a in r.after if a != r.name), tuple(b for b in r.before if b != r.name))
            for r in first.values()
        }
    )
    if cycle:
        r = first[cycle[0]]
        diags.append(
            Diagnostic(
                "order-cycle",
                "order constraints form a cycle: " + " -> ".join(cycle),
                r.span,
                hint="'after'/'before' must describe one order",
            )
        )
    return list(dict.fromkeys(diags))  # a name in a template's `after` is met once for each rule taking it in


def order_cycle(constraints: dict[str, tuple[Sequence[str], Sequence[str]]]) -> list[str] | None:
    """A cycle among `after`/`before` constraints (pass -> (after, before)), as pass names, or None."""
    succ: dict[str, set[str]] = {}
    for name, (after, before) in constraints.items():
        for a in after:
            succ.setdefault(a, set()).add(name)
        for b in before:
            succ.setdefault(name, set()).add(b)
    color: dict[str, int] = {}
    for startn in sorted(succ):
        if color.get(startn):
            continue
        stack: list[tuple[str, list[str]]] = [(startn, sorted(succ.get(startn, ())))]
        path = [startn]
        color[startn] = 1
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                color[node] = 2
                continue
            nxt = todo.pop(0)
            if color.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if not color.get(nxt):
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(succ.get(nxt, ()))))
    return None
