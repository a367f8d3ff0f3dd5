"""Why a check failed: narrow a false condition down to the sub-expression, values and element responsible.

Runs only for misses, re-evaluating the failing condition with the very closures the engine ran (kept by the
compiler per AST node), so an explanation can never disagree with the decision. `and` narrows to its first
false operand, `all` to the first element that fails, `none`/`any` to the first element that matches, `not`
flips the expectation; comparisons and calls report the values they saw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..dsl import ast
from ..dsl.catalogue import Catalogue, Type
from ..dsl.compile import CompiledRule, Env, EvalError, restore, saved
from ..dsl.rules import Expr
from .decisions import Reason

MAX_VALUE_CHARS = 160


def _capped(text: str) -> str:
    """`text`, cut to MAX_VALUE_CHARS."""
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


class Explainer:
    """Builds :class:`Reason` chains for one compiled rule."""

    def __init__(self, rule: CompiledRule, catalogue: Catalogue) -> None:
        self.rule = rule
        self.cat = catalogue

    def show(self, value: Any, t: Type | None) -> str:
        """A short, readable rendering of a runtime value of static type `t`."""
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (list, tuple)):
            elem = t.elem if t is not None and t.is_list else None
            parts = [self.show(v, elem) for v in value[:16]]
            text = "[" + ", ".join(parts) + (", ..." if len(value) > 16 else "") + "]"
        elif isinstance(value, str):
            text = repr(value)
        elif t is not None and t.name in self.cat.entities:
            text = self.cat.describer(t.name)(value)
        else:
            text = str(value)
        return _capped(text)

    def describe_element(self, var: str, value: Any, t: Type | None) -> str:
        """`var = <value>` for a bound element."""
        return f"{var} = {self.show(value, t)}"

    def element_shower(self, var: str, t: Type | None) -> Callable[[Any], str]:
        """`describe_element` for `var` of static type `t`, as a function of the value (worked out once: an
        entity's elements, the usual case, go straight to its describer)."""
        if t is None or t.is_list or t.name not in self.cat.entities:
            return lambda value: self.describe_element(var, value, t)
        described = self.values_describer(var, t, 0)
        return lambda value: described((value,))[0]

    def values_describer(self, var: str, t: Type | None, at: int) -> Callable[[tuple[Any, ...]], tuple[str, ...]]:
        """The elements of a miss inside one group, described from the miss's values (its element at `at`, of
        static type `t`, bound to `var`): `(element_shower(var, t)(values[at]),)`, () for no values, in one call
        (it runs once per miss, in every compile: an entity's elements, the usual case, go straight to its
        describer)."""
        if t is None or t.is_list or t.name not in self.cat.entities:
            return lambda values: (self.describe_element(var, values[at], t),) if values else ()
        describe, prefix = self.cat.describer(t.name), f"{var} = "

        def described(values: tuple[Any, ...]) -> tuple[str, ...]:
            if not values:
                return ()
            value = values[at]
            if value is None or isinstance(value, (bool, list, tuple, str)):  # as `show` renders them
                return (self.describe_element(var, value, t),)
            return (prefix + _capped(describe(value)),)

        return described

    def _fn(self, n: ast.Node) -> Callable[[Env], Any]:
        return self.rule.fns[id(n)]

    def _val(self, n: ast.Node, env: Env) -> tuple[Any, str | None]:
        try:
            return self._fn(n)(env), None
        except EvalError as exc:
            return None, exc.message

    def why(self, e: Expr, n: ast.Node, env: Env, expected: bool) -> Reason:
        """Why `n` (part of `e`) did not evaluate to `expected`."""
        text = " ".join(e.text[n.start : n.end].split())  # one line, whatever the YAML block looked like
        span = e.src.span(n.start, n.end)
        res = self.rule.res
        if isinstance(n, ast.Unary) and n.op == "not":
            return self.why(e, n.operand, env, not expected)
        if isinstance(n, ast.BoolOp):
            # `and` that should be true / `or` that should be false: one operand is to blame; else all are.
            narrows = (n.op == "and") == expected
            vals = []
            for op in n.operands:
                v, err = self._val(op, env)
                if err is not None:
                    return self.error(e, op, err)
                if narrows and bool(v) != expected:
                    return self.why(e, op, env, expected)
                vals.append((" ".join(e.text[op.start : op.end].split()), self.show(v, res.type_of(op))))
            k = len(n.operands)
            held = f"none of the {k} alternatives held" if n.op == "or" else f"all {k} conditions held"
            every = tuple(self.why(e, op, env, expected) for op in n.operands)
            return Reason(text, span, held, tuple(vals), alternatives=every)
        if isinstance(n, ast.Quant):
            return self.why_quant(e, n, env, expected)
        if isinstance(n, ast.Compare):
            lv, lerr = self._val(n.left, env)
            rv, rerr = self._val(n.right, env)
            if lerr or rerr:
                return self.error(e, n.left if lerr else n.right, lerr or rerr or "")
            ls, rs = self.show(lv, res.type_of(n.left)), self.show(rv, res.type_of(n.right))
            lt, rt = e.text[n.left.start : n.left.end], e.text[n.right.start : n.right.end]
            pairs = [(lt, ls), (rt, rs), *self.inner_values(e, n.left, env), *self.inner_values(e, n.right, env)]
            shown = tuple(dict((k, v) for k, v in pairs if k != v).items())
            if n.op in ("==", "!=") and isinstance(n.right, ast.Lit) and n.right.value is None:
                return Reason(text, span, f"`{lt}` is {'null' if lv is None else 'not null'}", shown)
            lx, rx = self.operands(e, n.left, env, ls), self.operands(e, n.right, env, rs)
            return Reason(text, span, f"`{text}` is {str(not expected).lower()}: {lx} {n.op} {rx}", shown)
        v, err = self._val(n, env)
        if err is not None:
            return self.error(e, n, err)
        values: list[tuple[str, str]] = []
        if isinstance(n, ast.Call) and id(n) not in res.earlier:  # earlier(x)'s argument is not its input
            for a in ((n.receiver,) if n.receiver is not None else ()) + n.args:
                av, aerr = self._val(a, env)
                if aerr is None and not isinstance(a, ast.Lit):
                    values.append((e.text[a.start : a.end], self.show(av, res.type_of(a))))
        return Reason(text, span, f"`{text}` is {self.show(v, res.type_of(n))}", tuple(values))

    def operands(self, e: Expr, n: ast.Node, env: Env, shown: str) -> str:
        """`31 % 16 → 15` for an arithmetic side of a comparison, else its value."""
        if not isinstance(n, ast.Arith):
            return shown
        a, aerr = self._val(n.left, env)
        b, berr = self._val(n.right, env)
        if aerr or berr:
            return shown
        res = self.rule.res
        return f"{self.show(a, res.type_of(n.left))} {n.op} {self.show(b, res.type_of(n.right))} → {shown}"

    def inner_values(self, e: Expr, n: ast.Node, env: Env, limit: int = 6) -> list[tuple[str, str]]:
        """Values of the named parts inside `n` (names, fields, indexing, calls), outermost first."""
        out: list[tuple[str, str]] = []
        todo = [] if isinstance(n, ast.Quant) else list(ast.children(n))  # a quantifier's parts read its variable
        while todo and len(out) < limit:
            sub = todo.pop(0)
            if isinstance(sub, (ast.Quant, ast.Lit)):
                continue
            if isinstance(sub, (ast.Name, ast.Attr, ast.Index, ast.Call)):
                v, err = self._val(sub, env)
                if err is None:
                    out.append((e.text[sub.start : sub.end], self.show(v, self.rule.res.type_of(sub))))
            todo.extend(ast.children(sub))
        return out

    def why_quant(self, e: Expr, n: ast.Quant, env: Env, expected: bool) -> Reason:
        text = e.text[n.start : n.end]
        span = e.src.span(n.start, n.end)
        coll, err = self._val(n.coll, env)
        if err is not None:
            return self.error(e, n.coll, err)
        if n.kind in ("count", "distinct"):
            v, _ = self._val(n, env)
            return Reason(text, span, f"`{text}` is {v}")
        # The element to blame: all->first false body; none/any->first true body.
        blame_true = (n.kind == "none") == expected or (n.kind == "any" and not expected)
        if n.kind == "all":
            blame_true = not expected
        coll_t = self.rule.res.type_of(n.coll)
        elem_t = coll_t.elem if coll_t.is_list else None
        vs = env.vars
        prev = saved(vs, n.var)
        count = 0
        try:
            for x in coll or []:
                vs[n.var] = x
                if n.where is not None:
                    keep, werr = self._val(n.where, env)
                    if werr is not None:
                        return self.error(e, n.where, werr)
                    if not keep:
                        continue
                count += 1
                b, berr = self._val(n.body, env)
                if berr is not None:
                    return Reason(
                        text,
                        span,
                        f"error for {n.var} = {self.show(x, elem_t)}: {berr}",
                        element=self.describe_element(n.var, x, elem_t),
                    )
                if bool(b) == blame_true:
                    sub = self.why(e, n.body, env, not blame_true)
                    return Reason(text, span, sub.message, (), self.describe_element(n.var, x, elem_t), sub)
        finally:
            restore(vs, n.var, prev)
        coll_text = e.text[n.coll.start : n.coll.end]
        if n.kind == "any":
            return Reason(text, span, f"no element of `{coll_text}` matches ({count} checked)")
        return Reason(text, span, f"every element of `{coll_text}` matches ({count} checked)")

    def error(self, e: Expr, n: ast.Node, message: str) -> Reason:
        """A reason for an evaluation error at `n`."""
        return Reason(e.text[n.start : n.end], e.src.span(n.start, n.end), f"evaluation error: {message}")
