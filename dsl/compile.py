"""Checked rules -> closures, compiled once from the typed AST (never from raw user text).

Each AST node becomes one Python closure over an :class:`Env`; field reads and helper calls are bound to the
catalogue's implementations at compile time, so evaluation does no name lookups. Evaluation is side-effect
free until actions run, and bounded: every loop (quantifier, `for_each` group, `for` action) charges its
collection's length to a step budget when it starts, and a candidate that exceeds the budget fails with a clear
error. (The language has no recursion and helpers are total, so the work is at most the expression's size times
the steps charged.) :mod:`.codegen` compiles the same AST into one generated function with exactly this
accounting; the closures stay the reference, used by the explainer and for what the generated code declines.
A runtime fault (a field of null, an index out of range, a helper that cannot answer) is an :class:`EvalError`:
the check fails, as GE's failed asserts do. The closure of every node is kept, so the engine's explainer can
re-evaluate any sub-expression.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import ast
from .check import Earlier, Resolution, earlier_key
from .rules import Binding, Check, GraphSkip, Rule

DEFAULT_STEP_LIMIT = 1_000_000


class EvalError(Exception):
    """A runtime fault while evaluating an expression; the check it occurs in fails."""

    def __init__(self, message: str, node: ast.Node | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


class Env:
    """Variables of one evaluation (root bindings, loop variables, memoised `let`s) and its step budget."""

    __slots__ = ("limit", "steps", "vars")

    def __init__(self, vars: dict[str, Any], limit: int = DEFAULT_STEP_LIMIT) -> None:
        self.vars = vars
        self.steps = 0
        self.limit = limit

    def charge(self, n: int) -> None:
        """Spend `n` steps of the budget (a loop over `n` elements charges them when it starts)."""
        self.steps += n
        if self.steps > self.limit:
            raise budget_error(self.limit)


class BudgetError(EvalError):
    """An evaluation exceeded its step budget (the check it occurs in fails, as for any EvalError)."""


def budget_error(limit: int) -> BudgetError:
    """The error of an evaluation that exceeded its step budget."""
    return BudgetError(f"evaluation exceeded its budget of {limit} steps")


Fn = Callable[[Env], Any]
# (writer, target, name, value): a `set` writes an attribute (the writer returns None); a structural action makes its
# edit (the writer returns a line saying what it did)
Effect = tuple[Callable[[Any, str, Any], object], Any, str, Any]
ActionFn = Callable[[Env, list[Effect]], None]


_MISSING: Any = object()


def restore(vs: dict[str, Any], var: str, prev: Any) -> None:
    """Put back a loop variable's previous binding (or remove it when there was none)."""
    if prev is _MISSING:
        vs.pop(var, None)
    else:
        vs[var] = prev


def saved(vs: dict[str, Any], var: str) -> Any:
    """The current binding of `var`, to pass to `restore` afterwards."""
    return vs.get(var, _MISSING)


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def _attr_value(v: Any) -> Any:
    return list(v) if isinstance(v, (list, tuple)) else v


@dataclass
class CompiledCheck:
    """A check with its closures: the condition, or for a group the collection, filter and sub-checks."""

    check: Check
    fn: Fn | None
    lets: tuple[str, ...]
    coll: Fn | None = None
    where: Fn | None = None
    subs: list[CompiledCheck] = field(default_factory=list)
    # for a group some `earlier(...)` reads: the environment key under which it keeps the elements it visited
    visited: str | None = None


_PENDING: Any = object()


class _GeneratedOnFirstUse:
    """The descriptor of `CompiledRule.fast`: the generated decision function, made when first read (a pass
    whose rule has no candidate in the graphs it runs on never reads it, so a small graph pays for the rules it
    uses only) by the generator `generate_with` gave (None without one: closures only); set it to a value to
    have that instead. The generator is given, not imported: codegen builds on this module."""

    def __get__(self, rule: CompiledRule | None, owner: type | None = None) -> Any:
        if rule is None:  # the class's: the dataclass field's default
            return _PENDING
        fast = rule.__dict__.get("_fast", _PENDING)
        if fast is _PENDING:
            make = rule.__dict__.get("_make_fast")
            fast = rule.__dict__["_fast"] = make(rule) if make is not None else None
        return fast

    def __set__(self, rule: CompiledRule, value: Any) -> None:
        rule.__dict__["_fast"] = value


@dataclass
class CompiledRule:
    """A rule ready to run: closures for its exclusions, checks and actions, plus every node's closure."""

    rule: Rule
    res: Resolution
    skips: list[tuple[GraphSkip, Fn]]
    checks: list[CompiledCheck]
    actions: list[ActionFn]
    lets: tuple[str, ...]
    fns: dict[int, Fn]
    step_limit: int = DEFAULT_STEP_LIMIT
    # the generated decision function (codegen.FastRule), or None: closures only; by default made on first use
    fast: Any = _GeneratedOnFirstUse()
    # the op types it matches as a set, or None for `*` (every node): what a candidate index looks up
    match_types: frozenset[str] | None = field(init=False)
    name: str = field(init=False)  # the pass name (the rule's), read for every graph a pass runs on

    def __post_init__(self) -> None:
        self.match_types = None if "*" in self.rule.match else frozenset(self.rule.match)
        self.name = self.rule.name

    def generate_with(self, make: Callable[[CompiledRule], Any]) -> None:
        """Have `fast` made by `make` (the code generator) when first read."""
        self.__dict__["_make_fast"] = make


class _Compiler:
    def __init__(self, res: Resolution) -> None:
        self.res = res
        self.fns: dict[int, Fn] = {}
        self.let_fns: dict[int, Fn] = {}

    def expr(self, n: ast.Node) -> Fn:
        f = self._expr(n)
        self.fns[id(n)] = f
        return f

    def let_fn(self, b: Binding) -> Fn:
        f = self.let_fns.get(id(b))
        if f is None:
            f = self.expr(b.expr.node)
            self.let_fns[id(b)] = f
        return f

    def _expr(self, n: ast.Node) -> Fn:
        if isinstance(n, ast.Lit):
            v = n.value
            return lambda env: v
        if isinstance(n, ast.Name):
            return self.name(n)
        if isinstance(n, ast.Attr):
            return self.attr(n)
        if isinstance(n, ast.Call):
            ref = self.res.earlier.get(id(n))
            return self.earlier(n, ref) if ref is not None else self.call(n)
        if isinstance(n, ast.Unary):
            operand = self.expr(n.operand)
            if n.op == "not":
                return lambda env: not operand(env)
            return lambda env: -operand(env)
        if isinstance(n, ast.BoolOp):
            return self.boolop(n)
        if isinstance(n, ast.Compare):
            return self.compare(n)
        if isinstance(n, ast.Arith):
            return self.arith(n)
        if isinstance(n, ast.IfElse):
            c, t, e = self.expr(n.cond), self.expr(n.then), self.expr(n.else_)
            return lambda env: t(env) if c(env) else e(env)
        if isinstance(n, ast.Quant):
            return self.quant(n)
        if isinstance(n, ast.ListLit):
            items = [self.expr(i) for i in n.items]
            return lambda env: [i(env) for i in items]
        if isinstance(n, ast.Index):
            return self.index(n)
        if isinstance(n, ast.Slice):
            return self.slice(n)
        raise AssertionError(f"unexpected node {type(n).__name__}")

    def name(self, n: ast.Name) -> Fn:
        """A variable's read, or a `let`'s (computed on first use, then kept in the environment)."""
        key = n.id
        binding = self.res.let_refs.get(id(n))
        if binding is None:

            def var(env: Env) -> Any:
                return env.vars[key]

            return var
        let = self.let_fn(binding)

        def lazy(env: Env) -> Any:
            vs = env.vars
            if key in vs:
                return vs[key]
            v = let(env)
            vs[key] = v
            return v

        return lazy

    def attr(self, n: ast.Attr) -> Fn:
        """A field read through the catalogue's getter (of null: an error)."""
        obj = self.expr(n.obj)
        spec = self.res.fields[id(n)]
        get, fname = spec.get, n.name

        def attr(env: Env) -> Any:
            o = obj(env)
            if o is None:
                raise EvalError(f"cannot read '{fname}' of null", n)
            return get(o)

        return attr

    def call(self, n: ast.Call) -> Fn:
        """A helper call (a helper that raises a Python error: an EvalError naming it)."""
        helper = self.res.helpers[id(n)]
        args = [self.expr(a) for a in ((n.receiver,) if n.receiver is not None else ()) + n.args]
        fn, hname = helper.fn, helper.name

        def call(env: Env) -> Any:
            vals = [a(env) for a in args]
            try:
                return fn(*vals)
            except EvalError:
                raise
            except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, AttributeError) as exc:
                raise EvalError(f"{hname}() failed: {exc}", n) from None

        return call

    def boolop(self, n: ast.BoolOp) -> Fn:
        """`and` / `or`, short-circuiting, as bools."""
        ops = [self.expr(o) for o in n.operands]
        if n.op == "and":
            if len(ops) == 2:
                a, b = ops
                return lambda env: bool(a(env)) and bool(b(env))

            def all_of(env: Env) -> bool:
                return all(op(env) for op in ops)

            return all_of
        if len(ops) == 2:
            a, b = ops
            return lambda env: bool(a(env)) or bool(b(env))

        def any_of(env: Env) -> bool:
            return any(op(env) for op in ops)

        return any_of

    def index(self, n: ast.Index) -> Fn:
        """`o[i]` (null, a non-int or an index out of range: an error)."""
        obj, idx = self.expr(n.obj), self.expr(n.index)

        def index(env: Env) -> Any:
            o, i = obj(env), idx(env)
            if o is None:
                raise EvalError("cannot index null", n)
            if not isinstance(i, int) or not 0 <= i < len(o):
                raise EvalError(f"index {i} is out of range for a length of {len(o)}", n)
            return o[i]

        return index

    def slice(self, n: ast.Slice) -> Fn:
        """`o[lo:hi]`, a copy (null or a negative bound: an error)."""
        obj = self.expr(n.obj)
        lo = self.expr(n.lo) if n.lo is not None else None
        hi = self.expr(n.hi) if n.hi is not None else None

        def slice_(env: Env) -> Any:
            o = obj(env)
            if o is None:
                raise EvalError("cannot slice null", n)
            a = lo(env) if lo is not None else 0
            b = hi(env) if hi is not None else len(o)
            if a < 0 or b < 0:
                raise EvalError(f"negative slice bound {min(a, b)}", n)
            return list(o[a:b]) if not isinstance(o, str) else o[a:b]

        return slice_

    def earlier(self, n: ast.Call, ref: Earlier) -> Fn:
        """`earlier(x)`: x evaluated for each element its group visited before the current one (the group keeps
        them in the environment), the group's variable rebound and its lets recomputed for each."""
        key, var = earlier_key(ref.group), ref.group.var or "_"
        lets = tuple(b.name for b in ref.group.lets)
        value = self.let_fn(ref.binding) if ref.binding is not None else None
        self.expr(n.args[0])  # the argument read as itself (the current element's value), for explanations

        def earlier(env: Env) -> list[Any]:
            vs = env.vars
            visited = vs.get(key)
            if visited is None:  # pragma: no cover - the checker admits earlier() only inside its group
                raise EvalError("earlier() outside its for_each", n)
            if value is None or not visited:
                return list(visited)
            prev = saved(vs, var)
            kept = {k: vs.pop(k) for k in lets if k in vs}  # the current element's lets, put back afterwards
            out = []
            try:
                for x in visited:
                    vs[var] = x
                    out.append(value(env))
                    for k in lets:
                        vs.pop(k, None)
            finally:
                restore(vs, var, prev)
                for k in lets:
                    vs.pop(k, None)
                vs.update(kept)
            return out

        return earlier

    def compare(self, n: ast.Compare) -> Fn:
        a, b, op = self.expr(n.left), self.expr(n.right), n.op
        if op == "==":
            return lambda env: a(env) == b(env)
        if op == "!=":
            return lambda env: a(env) != b(env)
        if op in ("in", "not in"):
            neg = op == "not in"

            def member(env: Env) -> bool:
                x, coll = a(env), b(env)
                if coll is None:
                    raise EvalError("`in` null", n)
                return (x not in coll) if neg else (x in coll)

            return member
        import operator

        f = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]

        def order(env: Env) -> bool:
            x, y = a(env), b(env)
            try:
                return bool(f(x, y))
            except TypeError:
                raise EvalError(f"cannot compare {x!r} {op} {y!r}", n) from None

        return order

    def arith(self, n: ast.Arith) -> Fn:
        a, b, op = self.expr(n.left), self.expr(n.right), n.op

        def arith(env: Env) -> Any:
            x, y = a(env), b(env)
            if x is None or y is None:
                raise EvalError(f"'{op}' on null", n)
            try:
                if op == "+":
                    return list(x) + list(y) if isinstance(x, (list, tuple)) else x + y
                if op == "-":
                    return x - y
                if op == "*":
                    return x * y
                if op == "/":
                    return x / y
                if op == "//":
                    return x // y
                return x % y
            except ZeroDivisionError:
                raise EvalError(f"division by zero in `{op}`", n) from None
            except TypeError as exc:
                raise EvalError(str(exc), n) from None

        return arith

    def quant(self, n: ast.Quant) -> Fn:
        coll, body = self.expr(n.coll), self.expr(n.body)
        where = self.expr(n.where) if n.where is not None else None
        var, kind = n.var, n.kind

        def items(env: Env) -> Sequence[Any]:
            c = coll(env)
            if c is None:
                raise EvalError(f"{kind}() over null", n)
            env.charge(len(c))
            return c  # type: ignore[no-any-return]

        def each(env: Env) -> Any:
            vs = env.vars
            for x in items(env):
                vs[var] = x
                if where is not None and not where(env):
                    continue
                yield x

        def bound(run: Callable[[Env], Any]) -> Fn:
            # the loop variable is restored afterwards (an enclosing quantifier may use the same name)
            def quantifier(env: Env) -> Any:
                vs = env.vars
                prev = saved(vs, var)
                try:
                    return run(env)
                finally:
                    restore(vs, var, prev)

            return quantifier

        if kind == "all":
            return bound(lambda env: all(body(env) for _ in each(env)))
        if kind == "any":
            return bound(lambda env: any(body(env) for _ in each(env)))
        if kind == "none":
            return bound(lambda env: not any(body(env) for _ in each(env)))
        if kind == "count":
            return bound(lambda env: sum(1 for _ in each(env) if body(env)))

        def distinct(env: Env) -> int:
            seen: list[Any] = []
            hashed: set[Any] = set()
            for _ in each(env):
                k = _hashable(body(env))
                try:
                    hashed.add(k)
                except TypeError:
                    if k not in seen:
                        seen.append(k)
            return len(hashed) + len(seen)

        return bound(distinct)

    # ---- actions -------------------------------------------------------------------------------------------
    def action(self, n: ast.Node) -> ActionFn:
        if isinstance(n, ast.ForAction):
            coll, body = self.expr(n.coll), self.action(n.body)
            where = self.expr(n.where) if n.where is not None else None
            var = n.var

            def loop(env: Env, out: list[Effect]) -> None:
                c = coll(env)
                if c is None:
                    raise EvalError("'for' over null", n)
                env.charge(len(c))
                prev = saved(env.vars, var)
                try:
                    for x in c:
                        env.vars[var] = x
                        if where is None or where(env):
                            body(env, out)
                finally:
                    restore(env.vars, var, prev)

            return loop
        if isinstance(n, ast.EditAction):
            return self.edit_action(n)
        assert isinstance(n, ast.SetAction)
        target, value = self.expr(n.target), self.expr(n.value)
        setter, attr = self.res.setters[id(n)], n.attr

        def set_(env: Env, out: list[Effect]) -> None:
            t = target(env)
            if t is None:
                raise EvalError(f"cannot set '{attr}' on null", n)
            out.append((setter, t, attr, _attr_value(value(env))))

        return set_

    def edit_action(self, n: ast.EditAction) -> ActionFn:
        """A structural action: its target evaluated and the edit's own check asked now (a refusal is a fault,
        so nothing is changed); the edit itself made when the effects are written."""
        target, spec, op_type = self.expr(n.target), self.res.edits[id(n)], n.op_type
        shown = "bypass" if n.kind == "bypass" else f"insert {op_type} {n.kind.removeprefix('insert_')}"

        def edit(env: Env, out: list[Effect]) -> None:
            t = target(env)
            if t is None:
                raise EvalError(f"cannot {shown} null", n)
            why = spec.why_not(t, op_type)
            if why is not None:
                raise EvalError(f"cannot {shown} {t}: {why}", n)
            out.append((spec.apply, t, op_type, None))

        return edit


def compile_closures(rule: Rule, res: Resolution, *, step_limit: int = DEFAULT_STEP_LIMIT) -> CompiledRule:
    """Compile a checked rule into closures (`dsl.load.compile_rule` adds its generated decision function)."""
    c = _Compiler(res)
    tracked = {id(e.group) for e in res.earlier.values()}

    def comp_checks(checks: Sequence[Check]) -> list[CompiledCheck]:
        out = []
        for ch in checks:
            lets = tuple(b.name for b in ch.lets)
            for b in ch.lets:
                c.let_fn(b)
            if ch.kind == "group":
                assert ch.coll is not None
                out.append(
                    CompiledCheck(
                        ch,
                        None,
                        lets,
                        c.expr(ch.coll.node),
                        c.expr(ch.where.node) if ch.where is not None else None,
                        comp_checks(ch.checks),
                        earlier_key(ch) if id(ch) in tracked else None,
                    )
                )
            else:
                assert ch.expr is not None
                out.append(CompiledCheck(ch, c.expr(ch.expr.node), lets))
        return out

    for b in rule.lets:
        c.let_fn(b)
    skips = [(s, c.expr(s.when.node)) for s in rule.skip_graph]
    checks = comp_checks(rule.checks)
    actions = [c.action(a.node) for a in rule.actions]
    return CompiledRule(rule, res, skips, checks, actions, tuple(b.name for b in rule.lets), c.fns, step_limit)
