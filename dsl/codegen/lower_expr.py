"""Lowering expressions: a typed AST node -> the Python expression (`ast.expr`) holding its value, with the
statements computing it emitted before. Loop-free, statement-free parts are returned as expressions and fused
into their parent's; the catalogue's inline forms are instantiated from their parsed trees (:mod:`..templates`).
"""

from __future__ import annotations

import ast as py
import functools
from collections.abc import Callable, Sequence
from typing import Any

from .. import ast
from ..builtins import RANGE_CAP, _len, _range
from ..catalogue import INT, FieldSpec, IndexedList
from ..check import Earlier
from ..rules import Binding
from ..templates import ARGS, FN, TEMP, instantiate, parse_template, replace_reads, substitute, uses
from .lower import _Core
from .optimise import flag_runs
from .support import (
    _EMPTY_IF,
    _FLIPPED,
    _NUMERIC,
    _ORDER,
    _add,
    _distinct_add,
    _int_literal,
    _kept_local,
    _slice,
    assign,
    atom_key,
    binop,
    bool_op,
    call,
    compare,
    has_walrus,
    if_,
    is_atom,
    load,
    method,
    not_,
    path,
    raise_,
    store,
    tuple_,
)

_DICT = "_dict"  # the name an attribute dict's read is replaced by in a helper's form
_OWNER, _INDEX = "_owner", "_index"


@functools.cache
def _through_owner(template: str, owner: str, index: str) -> py.expr | None:
    """A field's form of an indexed list's element as a form of (owner, position), when it reads the element only
    through those two (`{0}.node.in_peers[{0}.index]` -> `{0}.in_peers[{1}]`); else None."""
    tree = replace_reads(template, {f"{{0}}.{owner}": _OWNER, f"{{0}}.{index}": _INDEX})
    if uses(tree).get(ARGS[0]):
        return None
    return substitute(tree, {_OWNER: py.Name(ARGS[0], py.Load()), _INDEX: py.Name(ARGS[1], py.Load())})


@functools.cache
def _dict_form(template: str, form: str) -> py.expr | None:
    """A helper's form with its read of the first argument's attribute dict (the entity's form `form`) as the
    name `_dict`; None when it does not read it."""
    tree = replace_reads(template, {form: _DICT})
    return tree if uses(tree).get(_DICT) else None


_SHAPES: dict[int, tuple[py.expr, dict[str, int], bool]] = {}


def _shape(tree: py.expr) -> tuple[dict[str, int], bool]:
    """How often a form's tree (a cached one: parsed, or made from a parsed one) reads each placeholder, and
    whether it may leave an argument unevaluated (`a if c else b`, `and`, `or`)."""
    got = _SHAPES.get(id(tree))
    if got is None or got[0] is not tree:
        conditional = any(isinstance(x, (py.IfExp, py.BoolOp)) for x in py.walk(tree))
        got = _SHAPES[id(tree)] = (tree, uses(tree), conditional)  # keeps the tree: its id stays its own
    return got[1], got[2]


class _Exprs(_Core):
    """Emits what computes an expression; `expr` returns the Python expression holding its value."""

    def let_value(self, b: Binding) -> py.expr:
        """The value of `let` b where it is read (computed on first use; a literal is itself)."""
        if isinstance(b.expr.node, ast.Lit):
            return self.const(b.expr.node.value)
        if self.shared_memo(b):
            return self.expr(b.expr.node)
        return self.memoised(self.let_local(b), lambda: self.expr(b.expr.node), fuse=True)

    def expr(self, n: ast.Node, view: bool = False) -> py.expr:
        """Emit the statements computing `n`; the returned expression (a local, a constant) holds its value. With
        `view` (the value's elements are only read: measured, indexed, sliced, iterated), a list field with a
        catalogue view is read without the getter's copy."""
        if isinstance(n, (ast.Lit, ast.Name)) or (
            isinstance(n, ast.ListLit) and all(isinstance(i, ast.Lit) for i in n.items)
        ):
            return self._expr(n)
        form = None
        if view and isinstance(n, ast.Attr):
            spec = self.field(n)
            form = spec.view
            obj = n.obj
        if form is not None:
            viewed = form

            def compute() -> py.expr:
                fn = self.const(spec.get) if _shape(parse_template(viewed))[0].get(FN) else None
                return self.inline(viewed, [self.expr(obj)], fn)

        else:

            def compute() -> py.expr:
                return self._expr(n)

        k = self.key(n)
        if k is None:
            return compute()
        key, level = k
        if form is not None:  # the view and the copy are different values
            key = ("view", key)
        local = self.shared(key, level)
        if local is None:
            return compute()
        return self.memoised(local, compute, fuse=True, cheap=self.single_read(n, form))

    def single_read(self, n: ast.Node, form: str | None) -> bool:
        """Whether `n` is read as one attribute of its object's value (`{0}.name`: a field's path, inline form
        or view `form`): re-read, it costs what a memo's `is _U` test costs."""
        if not isinstance(n, ast.Attr):
            return False
        spec = self.field(n)
        if form is None and spec.path is not None:
            return spec.path.isidentifier()
        form = form if form is not None else spec.inline
        if form is None:
            return False
        tree = parse_template(form)
        return isinstance(tree, py.Attribute) and isinstance(tree.value, py.Name) and tree.value.id == ARGS[0]

    def attrs_dict(self, holder: ast.Node, value: py.expr, form: str) -> py.expr | None:
        """The local holding the attribute dict of `holder` (whose value is `value`; `form` the entity's inline
        form of its dict) when several attribute reads of the same holder share it, like a common
        sub-expression; None where the read keeps its own form. No check changes a dict while a candidate is
        decided, and actions only write into it."""
        k = self.key(holder)
        local = self.shared(("attrs", k[0]), k[1]) if k is not None else None
        if local is None:
            return None
        self.attr_locals.add(local)
        return self.memoised(local, lambda: instantiate(form, [value]))

    def _expr(self, n: ast.Node) -> py.expr:
        """Emit what computes `n` (not memoised: see `expr`) and return its value. Loop-free, statement-free parts
        are returned as Python expressions and fused into their parent's expression: evaluated once, where the
        parent stands, in the same left-to-right order (`seq` pins an earlier operand into a local when a later
        one needs statements). A fault raises in the fused expression as it would have in a statement of its
        own."""
        if isinstance(n, ast.Lit):
            return self.const(n.value)
        if isinstance(n, ast.Name):
            return self.name(n)
        if isinstance(n, ast.Attr):
            return self.attr(n)
        if isinstance(n, ast.Call):
            ref = self.res.earlier.get(id(n))
            return self.earlier(ref) if ref is not None else self.call(n)
        if isinstance(n, ast.Unary):
            o = self.expr(n.operand)
            return not_(o) if n.op == "not" else py.UnaryOp(py.USub(), o)
        if isinstance(n, ast.Compare):
            return self.compare(n)
        if isinstance(n, ast.Arith):
            return self.arith(n)
        t = self.fresh()
        if isinstance(n, ast.BoolOp):
            return self.boolop(n, t)
        if isinstance(n, ast.IfElse):
            return self.if_else(n, t)
        if isinstance(n, ast.Quant):
            self.quant(n, t)
            return load(t)
        if isinstance(n, ast.ListLit):
            if all(isinstance(i, ast.Lit) for i in n.items):  # built once; no helper mutates its arguments
                return self.const([i.value for i in n.items])  # type: ignore[attr-defined]
            self.emit(assign(t, py.List(self.seq(list(n.items)), py.Load())))
            return load(t)
        if isinstance(n, ast.Index):
            return self.index(n)
        if isinstance(n, ast.Slice):
            return self.slice(n)
        raise AssertionError(f"unexpected node {type(n).__name__}")  # pragma: no cover - the parser makes no other

    def name(self, n: ast.Name) -> py.expr:
        """A `let` (computed on first use), a loop variable or a root binding."""
        binding = self.res.let_refs.get(id(n))
        if binding is not None:
            return self.let_value(binding)
        local = self.vars.get(n.id)
        if local is not None and local in self.indexed:
            return self.element(local)
        if local is None:
            local = self.roots.get(n.id)
            if local is None:
                local = self.roots[n.id] = self.fresh("r")
        return load(local)

    def attr(self, n: ast.Attr) -> py.expr:
        """A catalogue field read: through a sibling, an indexed list's owner, its attribute path, its inline form,
        or its getter (a null object is a fault in each)."""
        spec = self.field(n)
        if spec.not_null_of is not None:  # the sibling, read (and kept) as itself
            return compare(self.expr(self.sibling(n, spec.not_null_of)), "is not", py.Constant(None))
        part = self.indexed_field(n, spec)
        if part is not None:
            return part
        if spec.path is not None:  # a catalogue-declared attribute path (null raises AttributeError: a fault)
            return path(self.expr(n.obj), spec.path)
        if spec.inline is not None:  # the catalogue's inline form of the getter (null raises likewise)
            return self.inline(spec.inline, [self.expr(n.obj)])
        o = self.atom(self.expr(n.obj))
        if atom_key(o) not in self.nonnull:
            self.emit(if_(compare(o, "is", py.Constant(None)), [raise_("_F")]))
            self.nonnull.add(atom_key(o))
        return call(self.const(spec.get), o)

    def call(self, n: ast.Call) -> py.expr:
        """A helper call: `len` of a list, the domain's inline form of the helper, or the helper itself (through
        the candidate's memo table when the helper is memoised)."""
        helper = self.res.helpers[id(n)]
        arg_t = self.res.type_of(n.args[0]) if len(n.args) == 1 else None
        if helper.fn is _len:  # the length of a list reads no element
            views: Sequence[bool] = (arg_t is not None and arg_t.is_list,)
        else:
            views = [helper.reads_views and p.type.is_list for p in helper.params]
        args = self.seq([*((n.receiver,) if n.receiver is not None else ()), *n.args], views)
        fn = self.const(helper.fn)
        if helper.fn is _len and arg_t is not None and arg_t.name in ("list", "str"):
            # what _len does for the list or string the checker saw; null raises TypeError in both: a fault
            return call("len", args[0])
        first = n.receiver if n.receiver is not None else (n.args[0] if n.args else None)
        first_t = self.res.type_of(first) if first is not None else None
        template = None
        if first_t and not first_t.nullable:
            key = f"{first_t.name}/{len(args)}"
            last = n.args[-1] if n.args else None
            if isinstance(last, ast.Lit) and isinstance(last.value, bool):  # a form for that literal first
                template = helper.inline.get(f"{key}/{'true' if last.value else 'false'}")
            template = template or helper.inline.get(key)
        if template is not None:  # the domain's inline form: same value, a fault where the call raises
            return self.helper_form(n, template, first, args, fn)
        if not helper.memo:
            return call(fn, *args)
        return self.memo_call(fn, args)

    def helper_form(
        self, n: ast.Call, template: str, first: ast.Node | None, args: list[py.expr], fn: py.expr
    ) -> py.expr:
        """A helper's inline form applied to `args`; where it reads the first argument's attribute dict, that dict
        is shared with the other reads of the same holder (see `attrs_dict`)."""
        form = self.res.attr_dicts.get(id(n))
        if form is not None and first is not None:
            with_dict = _dict_form(template, form)
            if with_dict is not None:
                attrs = self.attrs_dict(first, args[0], form)
                if attrs is not None:
                    return self.inline(with_dict, args, fn, {_DICT: attrs})
        return self.inline(template, args, fn)

    def memo_call(self, fn: py.expr, args: list[py.expr]) -> py.expr:
        """A memoised helper's call: reused for the same argument objects while deciding this candidate, keyed
        by identity (cheap); the entry keeps the arguments alive, so no id is reused meanwhile."""
        assert isinstance(fn, py.Name)
        memo = self.memo_dicts.setdefault(fn.id, f"M{fn.id}")  # one table per helper
        args = [self.atom(a) for a in args]

        def key() -> py.expr:
            return call("id", args[0]) if len(args) == 1 else tuple_([call("id", a) for a in args])

        t, e = self.fresh(), self.fresh("e")
        self.emit(assign(e, method(load(memo), "get", key())))
        same = [compare(py.Subscript(load(e), py.Constant(i), py.Load()), "is", a) for i, a in enumerate(args)]
        test = bool_op("and", [compare(load(e), "is not", py.Constant(None)), *same])
        hit: list[py.stmt] = [assign(t, py.Subscript(load(e), py.Constant(len(args)), py.Load()))]
        entry = py.Assign([py.Subscript(load(memo), key(), py.Store())], tuple_([*args, load(t)]))
        self.emit(if_(test, hit, [assign(t, call(fn, *args)), entry]))
        return load(t)

    def arith(self, n: ast.Arith) -> py.expr:
        """Arithmetic: plain Python on numbers (None raises TypeError: a fault), list concatenation, `_add`."""
        a, b = self.seq([n.left, n.right])
        numeric = self.res.type_of(n.left).name in _NUMERIC and self.res.type_of(n.right).name in _NUMERIC
        if n.op == "+":  # None raises TypeError in `+`, `*` and _add: a fault, as the closures' check
            if numeric:
                return binop(a, "+", b)
            if self.res.type_of(n.left).is_list and self.res.type_of(n.right).is_list:
                return py.List([py.Starred(a, py.Load()), py.Starred(b, py.Load())], py.Load())
            return call(self.const(_add), a, b)
        if numeric:  # None raises TypeError: a fault
            return binop(a, n.op, b)
        a, b = self.atom(a), self.atom(b)
        nulls = [compare(a, "is", py.Constant(None)), compare(b, "is", py.Constant(None))]
        self.emit(if_(bool_op("or", nulls), [raise_("_F")]))
        return binop(a, n.op, b)

    def if_else(self, n: ast.IfElse, t: str) -> py.expr:
        """`a if c else b` into `t` (the branch taken alone where the condition is known true)."""
        c = self.expr(n.cond)
        if self.is_true(c):  # the branch taken is known
            return self.expr(n.then)
        node = if_(c)
        self.emit(node)
        with self.branch(node.body):
            self.assume(c)
            self.emit(assign(t, self.expr(n.then)))
        with self.branch(node.orelse):
            self.emit(assign(t, self.expr(n.else_)))
        return load(t)

    def index(self, n: ast.Index) -> py.expr:
        """`o[i]`: null (TypeError) and past the end (IndexError) raise as they are: faults; a negative index,
        which Python would count from the end, is turned into None (TypeError)."""
        o, i = self.seq([n.obj, n.index], (True,))
        it = self.res.type_of(n.index)
        lit = n.index.value if isinstance(n.index, ast.Lit) else None
        if (isinstance(lit, int) and not isinstance(lit, bool) and lit >= 0) or (
            isinstance(i, py.Name) and i.id in self.known
        ):
            return py.Subscript(o, i, py.Load())  # a non-negative index: Python raises on null and past the end
        if it.name == "int" and not it.nullable:
            if not is_atom(i):
                o, i = self.atom(o), self.atom(i)
            guarded = py.IfExp(compare(i, ">=", py.Constant(0)), i, py.Constant(None))
            return py.Subscript(o, guarded, py.Load())
        o, i = self.atom(o), self.atom(i)
        bounds = py.Compare(py.Constant(0), [py.LtE(), py.Lt()], [i, call("len", o)])
        bad = [compare(o, "is", py.Constant(None)), not_(call("isinstance", i, load("int"))), not_(bounds)]
        self.emit(if_(bool_op("or", bad), [raise_("_F")]))
        return py.Subscript(o, i, py.Load())

    def slice(self, n: ast.Slice) -> py.expr:
        """`o[lo:hi]`, copied as `_slice` does (a negative bound is a fault)."""
        parts = self.seq([x for x in (n.obj, n.lo, n.hi) if x is not None], (True,))  # copied: a list
        o = parts.pop(0)
        lo = parts.pop(0) if n.lo is not None else py.Constant(None)
        hi = parts.pop(0) if n.hi is not None else py.Constant(None)
        bounds = [(b, x) for b, x in ((lo, n.lo), (hi, n.hi)) if x is not None]
        if self.res.type_of(n.obj).is_list and all(self.res.type_of(x) == INT for _, x in bounds):
            # a list slice copied as _slice does; a negative bound is refused by indexing with None
            if not bounds:
                return call("list", py.Subscript(o, py.Slice(None, None), py.Load()))
            o, *rest = [self.atom(v) for v in (o, *(b for b, _ in bounds))]
            low = rest.pop(0) if n.lo is not None else None
            high = rest.pop(0) if n.hi is not None else None
            neg = bool_op("or", [compare(b, "<", py.Constant(0)) for b in (low, high) if b is not None])
            sliced = py.Subscript(o, py.Slice(low, high), py.Load())
            return call("list", py.IfExp(not_(neg), sliced, py.Subscript(o, py.Constant(None), py.Load())))
        return call(self.const(_slice), o, lo, hi)

    def inline(
        self,
        template: str | py.expr,
        args: list[py.expr],
        fn: py.expr | None = None,
        extra: dict[str, py.expr] | None = None,
    ) -> py.expr:
        """A catalogue inline form (its text, or a cached tree made from one) applied to `args` (an argument used
        twice is evaluated once, into a local; `{t}` becomes a fresh temporary, a helper's `{f}` the constant `fn`
        holding the helper, and the names `extra` maps their values)."""
        tree = parse_template(template) if isinstance(template, str) else template
        counts, conditional = _shape(tree)
        if any(counts.get(ARGS[i], 0) > 1 for i in range(len(args))) or (
            conditional and any(has_walrus(a) for a in args)
        ):
            # in order; a memo first computed in an argument the form may skip is computed before it instead
            args = [self.atom(a) for a in args]
        values: dict[str, py.expr] = {**(extra or {}), **dict(zip(ARGS, args, strict=False))}
        values[TEMP] = load(self.fresh())
        if fn is not None:
            values[FN] = fn
        return substitute(tree, values)

    def seq(self, nodes: Sequence[ast.Node], views: Sequence[bool] = ()) -> list[py.expr]:
        """The values of `nodes`, evaluated in order: an earlier fused expression is pinned into a local when a
        later operand needs statements (which would otherwise run before it). `views[k]`: node k's elements are
        only read (see `expr`)."""
        out: list[py.expr] = []
        for at, n in enumerate(nodes):
            mark, size = len(self.block), self.size
            v = self.expr(n, at < len(views) and views[at])
            if self.size > size:
                for k, prev in enumerate(out):
                    if not is_atom(prev):
                        t = self.fresh()
                        self.block.insert(mark, assign(t, prev))
                        mark += 1
                        out[k] = load(t)
            out.append(v)
        return out

    def atom(self, v: py.expr) -> py.expr:
        """`v` as a local or constant (a fused expression is evaluated into a local here)."""
        if is_atom(v):
            return v
        t = self.fresh()
        self.emit(assign(t, v))
        return load(t)

    def truth(self, n: ast.Node) -> py.expr:
        """`n` as a Python bool (no conversion when its static type is a non-null bool, which Python's own
        comparisons, `not`, `in` and the catalogue's bool fields and helpers produce)."""
        v = self.expr(n)
        t = self.res.type_of(n)
        return v if t.name == "bool" and not t.nullable else call("bool", v)

    def fuse(self, op: str, values: list[py.expr]) -> py.expr:
        """Bool operands joined by `op` (see `bool_op`); in an `or`, runs of flag reads of one attribute dict are
        skipped together on an empty dict (`optimise.flag_runs`)."""
        if op == "or" and len(values) > 1 and self.attr_locals:
            values = flag_runs(values, self.attr_locals)
        return bool_op(op, values)

    def boolop(self, n: ast.BoolOp, t: str) -> py.expr:
        """`a and b and c` as `t = a`, then `if t: t = b`, `if t: t = c` (flat: once `t` decides, the rest is
        skipped, and a long chain nests no deeper than two); operands that need no statements are fused into
        one Python `and`/`or` (they are bools, so the value is the same), and a chain of such operands only is
        returned as that expression, for the expression around it to take in. Returns the value."""
        first = self.truth(n.operands[0])  # its statements run whenever the chain does
        # in an `and`, an operand known true (a local) is left out: true where the chain is evaluated
        pending = [] if n.op == "and" and self.is_true(first) else [first]
        blocks = False
        # each block runs only if the one before it ran: what one computes, the next may take as done
        after = set(self.done)
        # in an `and`, an operand is evaluated only where every one before it was true: what they prove holds
        outside, proved = set(self.known), set(self.facts(first))
        for op in n.operands[1:]:
            if n.op == "and":
                self.known |= proved
            body: list[py.stmt] = []
            with self.indent(body):
                v = self.truth(op)
            proved |= self.facts(v)
            if not body:
                if not (n.op == "and" and self.is_true(v)):
                    pending.append(v)
                continue
            blocks = True
            if not (len(pending) == 1 and isinstance(pending[0], py.Name) and pending[0].id == t):
                self.block.append(assign(t, self.fuse(n.op, pending)))
            self.block.append(if_(load(t) if n.op == "and" else not_(load(t)), body))
            with self.indent(body):
                self.emit(assign(t, v))
            pending = [load(t)]
        value: py.expr = load(t)
        if not (len(pending) == 1 and isinstance(pending[0], py.Name) and pending[0].id == t):
            if not blocks:  # no operand after the first needed a statement: one expression
                value = self.fuse(n.op, pending)  # (True for an `and` of known truths)
            else:
                self.emit(assign(t, self.fuse(n.op, pending)))
        chain_done, self.done, self.known = self.done, after, outside
        if isinstance(value, py.Constant):  # a constant, not this chain's own: nothing is recorded under it
            return value
        # where the chain came out as it does when every block ran (true for `and`, false for `or`), all did
        self.complete[self.pkey(value)] = (n.op == "and", set(chain_done))
        if n.op == "and" and proved:  # true, every operand was
            self.proves[self.pkey(value)] = frozenset(proved)
        return value

    def compare(self, n: ast.Compare) -> py.expr:
        """A comparison: a literal list as a set, an emptiness test, `is` for null, the plain Python operator."""
        members = self.literal_set(n)
        if members is not None:  # a hash lookup, with the list's answer for every such value
            return compare(self.expr(n.left), n.op, self.const(members))
        empty = self.emptiness(n)
        if empty is not None:
            return empty
        a, b = self.seq([n.left, n.right], (False, n.op in ("in", "not in")))  # membership reads the elements
        kept = self.kept_keys.get(b.id) if isinstance(b, py.Name) and id(n) in self.res.member_keys else None
        if kept is not None:  # `x in earlier(x)` kept as a set of keys
            let = id(self.res.earlier[id(n.right)].binding)
            return compare(self.keyed(kept, a, self.res.type_of(n.left).nullable, let), n.op, b)
        nulls = [x for x in (a, b) if isinstance(x, py.Constant) and x.value is None]
        if n.op in ("==", "!=") and nulls:  # no value of the language equals null but null itself
            return compare(a, "is" if n.op == "==" else "is not", b)
        if n.op in ("==", "!=", "in", "not in"):  # `in` null raises TypeError: a fault, as the closures' check
            return compare(a, n.op, b)
        assert n.op in _ORDER
        plain = all(self.res.type_of(x).name in (*_NUMERIC, "str") for x in (n.left, n.right))
        value: py.expr = compare(a, n.op, b) if plain else call("bool", compare(a, n.op, b))
        local = self.nonneg_operand(n, a, b)
        if local is not None:
            self.proves[self.pkey(value)] = frozenset((local,))
        return value

    def emptiness(self, n: ast.Compare) -> py.expr | None:
        """A length compared with the literal that tells an empty sequence from others (`len(x) == 0`,
        `len(x) > 0`, `0 < len(x)`, `len(x) >= 1`, ...) as the truth of the sequence, when it is a list or string
        that is never null (where a null one would fault, none is: the checker's type, or the catalogue's, says
        so); else None."""
        for length, bound, op in ((n.left, n.right, n.op), (n.right, n.left, _FLIPPED.get(n.op, ""))):
            k = _int_literal(bound)
            empty = _EMPTY_IF.get((op, k)) if k is not None else None
            sequence = self.sized(length) if empty is not None else None
            if sequence is not None:
                return not_(sequence()) if empty else not_(not_(sequence()))
        return None

    def sized(self, n: ast.Node) -> Callable[[], py.expr] | None:
        """For a length of a list or string that is never null (`len(x)`, or a field the catalogue declares the
        length of another, `d.rank`): what emits that sequence's value; None for anything else."""
        if isinstance(n, ast.Call) and id(n) in self.res.helpers and self.res.helpers[id(n)].fn is _len:
            arg, t = n.args[0], self.res.type_of(n.args[0])
            return None if t.nullable or t.name not in ("list", "str") else lambda: self.expr(arg, t.is_list)
        if isinstance(n, ast.Attr):
            spec, obj = self.field(n), n.obj
            form = spec.length_of
            return None if form is None or spec.indexed is not None else lambda: self.inline(form, [self.expr(obj)])
        return None

    def nonneg_operand(self, n: ast.Compare, a: py.expr, b: py.expr) -> str | None:
        """For a comparison of an int with an int literal that, when true, makes the int non-negative (`x >= 0`,
        `0 <= x`, `x > -1`, ...): the local holding the int (its value as emitted, or the local it is kept in);
        else None."""
        for x, bound, emitted, ops in ((n.left, n.right, a, (">", ">=")), (n.right, n.left, b, ("<", "<="))):
            if n.op not in ops:  # `x >= k` / `x > k` with x on the left, `k <= x` / `k < x` on the right
                continue
            k = _int_literal(bound)
            t = self.res.type_of(x)
            if k is None or t.name != "int" or t.nullable or k < (-1 if n.op in ("<", ">") else 0):
                continue
            return _kept_local(emitted)
        return None

    def literal_set(self, n: ast.Compare) -> frozenset[Any] | None:
        """For `x in [literals]` where x is a scalar (a string, number or bool, or null) and the literals are too:
        the literals as a set (one per comparison), which answers as the list does, since these values hash as
        they compare; else None (a list or an entity on the left keeps the list's `==` scan)."""
        right, t = n.right, self.res.type_of(n.left)
        if (
            n.op not in ("in", "not in")
            or not isinstance(right, ast.ListLit)
            or t.is_list
            or t.name not in (*_NUMERIC, "str")
            or not all(isinstance(i, ast.Lit) and isinstance(i.value, (str, int, float)) for i in right.items)
        ):
            return None
        got = self.literal_sets.get(id(n))
        if got is None:
            got = self.literal_sets[id(n)] = frozenset(i.value for i in right.items)  # type: ignore[attr-defined]
        return got

    # ---- loops ---------------------------------------------------------------------------------------------
    def loop_head(self, coll: py.expr, var_local: str) -> py.For:
        """`for` over `coll`, its length charged to the budget (`len` of null raises: a fault); over the
        positions when `var_local` is an indexed list's element (`coll` is then its count)."""
        self.charge(coll, var_local in self.indexed)
        return self.for_header(var_local, coll)

    def charge(self, coll: py.expr, counted: bool) -> None:
        """A loop's length (`coll`'s, or `coll` itself when `counted`) charged to the budget."""
        self.emit(py.AugAssign(store("s"), py.Add(), coll if counted else call("len", coll)))
        self.emit(if_(compare(load("s"), ">", self.const(self.limit)), [raise_("_B")]))

    def for_header(self, var_local: str, coll: py.expr) -> py.For:
        """`for` binding `var_local` to each element of `coll` (to each position, for an indexed list's element);
        its body is filled by the caller."""
        ix = self.indexed.get(var_local)
        if ix is not None:
            node = py.For(store(ix[1]), call("range", coll), [], [])
        else:
            node = py.For(store(var_local), coll, [], [])
        self.emit(node)
        return node

    # ---- indexed lists -------------------------------------------------------------------------------------
    # A loop over a list the catalogue declares indexed (a node's inputs: anchor k is InAnchor(node, k)) counts
    # instead of building the list: the element's fields read through the owner and the position, and the
    # element is made only where its value itself is needed (a helper's argument, a miss's record).
    def indexed_items(self, coll: ast.Node) -> tuple[py.expr, py.expr, IndexedList] | None:
        """For a loop over an indexed list field: emit its owner and count, (the count, the owner, its form);
        else None."""
        if not isinstance(coll, ast.Attr):
            return None
        form = self.res.fields[id(coll)].indexed
        if form is None:
            return None
        owner = self.atom(self.expr(coll.obj))
        count = self.atom(self.inline(form.count, [owner]))  # null raises: a fault, as reading the list would
        return count, owner, form

    def bind_indexed(self, local: str, items: tuple[py.expr, py.expr, IndexedList]) -> None:
        """`local` (a loop variable just bound) is an element of the indexed list `indexed_items` emitted."""
        _, owner, form = items
        position = self.fresh("p")
        self.known.add(position)
        self.indexed[local] = (owner, position, self.const(form.make), form)

    def element(self, local: str) -> py.expr:
        """The value of an indexed list's element: made from its owner and position."""
        owner, position, make, _ = self.indexed[local]
        return call(make, owner, load(position))

    def indexed_field(self, n: ast.Attr, spec: FieldSpec) -> py.expr | None:
        """A field of an indexed list's element read through its owner and position, when the catalogue's form of
        the field reads the element only through those; else None."""
        obj = n.obj
        if not isinstance(obj, ast.Name) or id(obj) in self.res.let_refs:
            return None
        ix = self.indexed.get(self.vars.get(obj.id, ""))
        if ix is None:
            return None
        owner, position, _, form = ix
        owner_part, index_part = form.parts
        if spec.path is not None:
            if spec.path == owner_part:
                return owner
            if spec.path == index_part:
                return load(position)
            return path(owner, spec.path[len(owner_part) + 1 :]) if spec.path.startswith(owner_part + ".") else None
        if spec.inline is None:
            return None
        tree = _through_owner(spec.inline, owner_part, index_part)
        return None if tree is None else self.inline(tree, [owner, load(position)])

    def quant(self, n: ast.Quant, t: str) -> None:
        """A quantifier's loop, folding each element into `t` (`distinct` into two kept collections)."""
        coll = n.coll
        got: tuple[py.expr, py.expr, IndexedList] | None = None
        helper = self.res.helpers.get(id(coll))
        counting = isinstance(coll, ast.Call) and helper is not None and helper.fn is _range
        if isinstance(coll, ast.Call) and counting:  # the same integers, no list (and nothing to do for none)
            c = self.atom(self.expr(coll.args[0]))
        else:
            got = self.indexed_items(coll)
            c = got[0] if got is not None else self.atom(self.expr(coll, view=True))  # iterated: elements read
        start = {"all": True, "any": False, "none": True, "count": 0}.get(n.kind)
        hashed = seen = ""
        if start is None:  # distinct
            hashed, seen = self.fresh("h"), self.fresh("h")
            self.emit(assign(hashed, call("set")))
            self.emit(assign(seen, py.List([], py.Load())))
        else:
            self.emit(assign(t, py.Constant(start)))
        local, prev = self.bind_var(n.var)
        if counting:
            self.known.add(local)
        elif got is not None:
            self.bind_indexed(local, got)
        if counting:  # range(c): min(c, RANGE_CAP) integers, none when c <= 0 (null or not a number: a fault)
            some = if_(compare(c, ">", py.Constant(0)))
            self.emit(some)
            with self.branch(some.body):
                capped = self.fresh()
                cap = self.const(RANGE_CAP)
                self.emit(assign(capped, py.IfExp(compare(c, "<", cap), c, cap)))
                self.charge(load(capped), True)
                loop = py.For(store(local), call("range", load(capped)), [], [])
                self.emit(loop)
                self.quant_body(n, t, hashed, seen, loop)
        else:
            self.quant_body(n, t, hashed, seen, self.loop_head(c, local))
        self.unbind(n.var, prev)
        if start is None:
            self.emit(assign(t, binop(call("len", load(hashed)), "+", call("len", load(seen)))))

    def quant_body(self, n: ast.Quant, t: str, hashed: str, seen: str, loop: py.For) -> None:
        """The loop body of quantifier `n` (the loop just emitted), folding each element into `t`."""
        with self.loop(loop.body):
            if n.where is not None:
                self.emit(if_(not_(self.expr(n.where)), [py.Continue()]))
            b = self.expr(n.body)
            if n.kind == "all":
                self.emit(if_(not_(b), [assign(t, py.Constant(False)), py.Break()]))
            elif n.kind in ("any", "none"):
                self.emit(if_(b, [assign(t, py.Constant(n.kind == "any")), py.Break()]))
            elif n.kind == "count":
                self.emit(if_(b, [py.AugAssign(store(t), py.Add(), py.Constant(1))]))
            else:
                self.emit(py.Expr(call(self.const(_distinct_add), load(hashed), load(seen), b)))

    # ---- earlier(...) reads --------------------------------------------------------------------------------
    def earlier(self, ref: Earlier) -> py.expr:
        """`earlier(x)`: the kept list (a fault if computing one of its values faulted)."""
        h, values = self.visited[id(ref.group)]
        if ref.binding is None:
            return load(h)
        hv, hf = values[id(ref.binding)]
        self.emit(if_(load(hf), [raise_("_F")]))
        return load(hv)

    def keyed(self, kept: tuple[str, int], v: py.expr, nullable: bool, let: int) -> py.expr:
        """The equality key of value `v` (null's is null) of the `let` (an id) kept as a set of keys: `kept`'s
        inline form, computed once per element of its group (at the test, read again where the element is
        kept)."""
        key, level = kept
        if key == "{0}":
            return v
        v = self.atom(v)

        def compute() -> py.expr:
            got = self.inline(key, [v])
            return py.IfExp(compare(v, "is", py.Constant(None)), py.Constant(None), got) if nullable else got

        local = self.shared(("key", let), level)
        return compute() if local is None else self.memoised(local, compute, fuse=True)

    def has_loop(self, n: ast.Node) -> bool:
        """Whether evaluating `n` runs a quantifier (directly or in a `let` it reads)."""
        if isinstance(n, ast.Quant):
            return True
        b = self.res.let_refs.get(id(n)) if isinstance(n, ast.Name) else None
        if b is not None and self.has_loop(b.expr.node):
            return True
        return any(self.has_loop(c) for c in ast.children(n))
