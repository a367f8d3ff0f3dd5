"""Lowering, its core: the state of one generated function and the statements it is built of, as Python syntax
trees (`ast`): the block being filled, what is known to be computed on every path (memo locals, facts), the
scopes their resets belong to, the names in scope and the structural keys of repeated sub-expressions.

The lowering does its optimisations as it goes (memoised common sub-expressions, lets computed on first use,
facts carried along a path, short-circuits as control flow, indexed lists counted rather than built); what can
only be decided once the whole function is known is :mod:`.optimise`'s. See the package's docstring for the
semantics kept. Expressions are in :mod:`.lower_expr`, checks and actions in :mod:`.lower_check`.
"""

from __future__ import annotations

import ast as py
from collections.abc import Callable, Sequence
from typing import Any

from .. import ast
from ..backend import Site
from ..catalogue import FieldSpec, IndexedList
from ..check import Resolution
from ..rules import Binding
from .support import (
    MAX_LINES,
    Marker,
    _Declined,
    _kept_local,
    _truth,
    assign,
    compare,
    if_,
    load,
)


class _Core:
    """The state of one function being lowered, and the statements it is made of."""

    def __init__(self, res: Resolution, step_limit: int) -> None:
        self.res = res
        self.limit = step_limit
        self.consts: list[Any] = []
        self.const_ids: dict[int, str] = {}
        self.body: list[py.stmt] = []  # the function's statements
        self.block = self.body  # the block statements are emitted into
        self.size = 0  # statements emitted
        self.counter = 0
        self.vars: dict[str, str] = {}  # names in scope (roots, loop variables) -> their local
        self.roots: dict[str, str] = {}  # root names read -> their local
        self.memo: dict[int, str] = {}  # id(let binding) -> its memo local
        self.sites: list[Site] = []
        # common sub-expressions: a loop-free sub-expression is a function of the variables it reads, so one
        # that occurs more than once is computed once per scope where those are bound (the candidate, or one
        # element of a for_each group), on first use, like an implicit `let`
        self.levels: dict[str, tuple[int | None, object]] = {}  # variable name -> (scope level, identity)
        self.let_levels: dict[int, int | None] = {}  # id(let binding) -> its scope level (None: a check's)
        self.keys: dict[int, tuple[object, int] | None] = {}  # id(node) -> (structural key, level)
        self.counts: dict[object, int] = {}
        self.hot: set[object] | None = None  # the keys to memoise (None: this pass only counts)
        self.cse: dict[object, str] = {}  # key -> its memo local
        self.scopes: list[str] = []  # per level, the marker of the scope being generated
        self.resets: dict[str, list[str]] = {}  # marker -> the memo locals to reset there
        self.memo_dicts: dict[str, str] = {}  # memoised helper's constant -> its table (per candidate)
        self.quant_depth = 0  # quantifier loops around the code being generated
        # What is known of each memo local (a `let`'s or a common sub-expression's) where code is emitted: `done`
        # holds those computed on every path to this point (read as they are), `touched` those computed on some
        # path; one computed on no path yet is assigned outright. Only the rest need the `is _U` test, and only
        # those tested are reset when their scope starts. A local whose scope started outside the innermost
        # loop may have been computed by an earlier iteration, so there it counts as touched.
        self.loop_depth = 0
        self.birth: dict[str, int] = {}  # memo local -> the loop depth where its scope starts
        self.scope_depth: dict[int, int] = {}  # scope level -> the loop depth of its start
        self.cse_level: dict[str, int] = {}  # common sub-expression local -> its scope level
        self.done: set[str] = set()
        self.touched: set[str] = set()
        self.tested: set[str] = set()
        # a boolean chain's value (its `pkey`) -> (the value it has when every block ran, what is done then)
        self.complete: dict[object, tuple[bool, set[str]]] = {}
        self.nonnull: set[str] = set()  # locals tested not null on every path to here (they are not reassigned)
        # id(group check) -> the locals of its visited elements and, per id(let) earlier() reads, (values, fault)
        self.visited: dict[int, tuple[str, dict[int, tuple[str, str]]]] = {}
        self.markers: list[tuple[list[py.stmt], Marker]] = []  # the scope markers emitted, with their blocks
        # a field read through a sibling (FieldSpec.not_null_of): id(read) -> the sibling's read of the same object
        # (made once, so it is a sub-expression like the rule's own reads of it), and its field
        self.siblings: dict[int, ast.Attr] = {}
        self.sibling_fields: dict[int, FieldSpec] = {}
        # what is known on every path to here: a local's name, that it holds an int known non-negative (a loop's
        # counter over range(n) or an indexed list's positions; one a comparison proved so), read as an index
        # without the negative-index guard; `_truth(local)`, that the local holds true (a bool value kept in a
        # local), dropped from an `and` and taken as the branch. Facts come from a passed `require`, the earlier
        # operands of the `and` chain being evaluated, the condition of the branch taken and a `where` let
        # through; `proves` holds per emitted condition (its `pkey`) what it proves when it is true
        self.known: set[str] = set()
        self.proves: dict[object, frozenset[str]] = {}
        self.keyed_nodes: list[py.expr] = []  # the expressions keyed by identity (kept, so no id is reused)
        # the kept let values held as a set of keys -> the key's inline form and the group's scope level (an
        # element's key is computed once: where it is tested, and read again where the element is kept)
        self.kept_keys: dict[str, tuple[str, int]] = {}
        # the element local of a loop over an indexed list -> (owner local, position local, maker constant, form):
        # the element is `maker(owner, position)`, made only where its value is needed
        self.indexed: dict[str, tuple[py.expr, str, py.expr, IndexedList]] = {}
        self.attr_locals: set[str] = set()  # the memo locals holding an attribute dict (see `attrs_dict`)
        self.literal_sets: dict[int, frozenset[Any]] = {}  # id(comparison) -> its literal list as a set
        # generated actions: the writes of phase 2, the lists collecting a loop's writes, the loops around here
        self.writes: list[py.stmt] = []
        self.write_lists: list[str] = []
        self.action_loops = 0

    # ---- emission ------------------------------------------------------------------------------------------
    def emit(self, stmt: py.stmt) -> None:
        """Append `stmt` to the block being filled."""
        self.block.append(stmt)
        self.size += 1
        if self.size > MAX_LINES:
            raise _Declined

    def marker(self, key: str) -> None:
        """Emit the marker of scope `key`: where its memo locals are reset (see `optimise.optimise`)."""
        self.markers.append((self.block, Marker(key)))
        self.emit(self.markers[-1][1])

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any) -> py.expr:
        """The local bound to `value` (a literal from the rule, a field reader, a helper, ...)."""
        if value is None or isinstance(value, bool):
            return py.Constant(value)  # None / True / False: the language's own words, not the rule's
        key = id(value)
        name = self.const_ids.get(key)
        if name is None:
            name = self.const_ids[key] = f"k{len(self.consts)}"
            self.consts.append(value)
        return load(name)

    def indent(self, body: list[py.stmt]) -> _Indent:
        """A nested block that runs whenever the code before it does (a `try:`, a `return` under an `if`)."""
        return _Indent(self, body)

    def branch(self, body: list[py.stmt]) -> _Indent:
        """A nested block that may not run: what it computes is not known to be computed after it."""
        return _Indent(self, body, branch=True)

    def loop(self, body: list[py.stmt]) -> _Indent:
        """A loop body: it may run no time, or again after computing something."""
        return _Indent(self, body, branch=True, loop=True)

    def memoised(self, local: str, compute: Callable[[], py.expr], fuse: bool = False, cheap: bool = False) -> py.expr:
        """`local`, computed by `compute` (which emits statements and returns the value) unless known done.

        With `fuse`, a computation that needs no statement is returned as an expression, `(local := value)` (or,
        where an earlier path may have computed it, `(local if local is not _U else (local := value))`), so the
        expression around it stays one expression: it is computed where it stands, and every later read comes
        after it (an `and`/`or` chain goes left to right; a branch forgets what it computed; an inline form that
        may skip an argument takes it as a statement, see `inline`). A `cheap` value (one attribute read) that
        would need the test is computed where it stands instead."""
        if local in self.done:
            return load(local)
        fresh = local not in self.touched and self.birth.get(local, 0) >= self.loop_depth
        if cheap and not fresh:
            return compute()
        if fresh:
            mark = self.size
            value = compute()
            self.done.add(local)
            self.touched.add(local)
            if fuse and self.size == mark:
                return self.same_proof(value, py.NamedExpr(py.Name(local, py.Store()), value), load(local))
            self.emit(assign(local, value))  # computed on no path to here: no test, no reset needed
            return self.same_proof(value, load(local))
        self.tested.add(local)
        body: list[py.stmt] = []
        with self.branch(body):
            value = compute()
            fused = fuse and not body
            if not fused:
                self.emit(assign(local, value))
        self.done.add(local)
        self.touched.add(local)
        if fused:  # computed on some path: the test, in the expression
            test = compare(load(local), "is not", load("_U"))
            form = py.IfExp(test, load(local), py.NamedExpr(py.Name(local, py.Store()), value))
            return self.same_proof(value, form, load(local))
        self.emit(if_(compare(load(local), "is", load("_U")), body))
        return self.same_proof(value, load(local))

    def pkey(self, e: py.expr) -> object:
        """The key what is known of emitted expression `e` is kept under: a local's name (every read of it), or
        the expression's identity (a value is looked up as the very expression its maker returned)."""
        if isinstance(e, py.Name):
            return e.id
        self.keyed_nodes.append(e)
        return id(e)

    def same_proof(self, value: py.expr, *forms: py.expr) -> py.expr:
        """`forms` (a memo local holding `value`, the expressions reading it) prove what `value` proves when true;
        returns the first."""
        got = self.proves.get(self.pkey(value)) if self.proves else None
        if got:
            for f in forms:
                self.proves[self.pkey(f)] = got
        return forms[0]

    def assume(self, cond: py.expr) -> None:
        """The code from here on runs only where `cond` was true: what it proves holds."""
        self.known |= self.facts(cond)

    def facts(self, cond: py.expr) -> frozenset[str]:
        """What `cond` (a bool value as emitted) proves when it is true: what `proves` says, and that the local
        it is kept in (a walrus, a memo, a chain's result) holds true."""
        got = self.proves.get(self.pkey(cond), frozenset()) if self.proves else frozenset()
        local = _kept_local(cond)
        return got | {_truth(local)} if local is not None else got

    def is_true(self, value: py.expr) -> bool:
        """Whether `value` (as emitted) is known true here: the literal, or a local known to hold true."""
        if isinstance(value, py.Constant):
            return value.value is True
        return isinstance(value, py.Name) and _truth(value.id) in self.known

    def forget(self, locals_: Sequence[str], depth: int) -> None:
        """The scope of `locals_` starts here (they are reset): none is computed yet."""
        for m in locals_:
            self.birth[m] = depth
            self.done.discard(m)
            self.touched.discard(m)
            self.known.discard(m)
            self.known.discard(_truth(m))

    # ---- names ---------------------------------------------------------------------------------------------
    def bind_var(
        self, name: str, level: int | None = None, ident: object = None
    ) -> tuple[str, tuple[str | None, tuple[int | None, object] | None]]:
        """A fresh local for loop variable `name` (of a group at scope `level`, or of a quantifier: None);
        returns it and what it hides (a `let` body inlined inside a loop may reuse the loop's variable name),
        which `unbind` restores."""
        local = self.fresh("v")
        prev = (self.vars.get(name), self.levels.get(name))
        self.vars[name] = local
        self.levels[name] = (level, ident)
        if level is None:
            self.quant_depth += 1
        return local, prev

    def unbind(self, name: str, prev: tuple[str | None, tuple[int | None, object] | None]) -> None:
        if self.levels[name][0] is None:
            self.quant_depth -= 1
        hidden_local, hidden_level = prev
        if hidden_local is None or hidden_level is None:
            self.vars.pop(name, None)
            self.levels.pop(name, None)
        else:
            self.vars[name] = hidden_local
            self.levels[name] = hidden_level

    def reset_lets(self, lets: Sequence[Binding], level: int | None) -> None:
        """Start a new scope for `lets`: each is computed again on its first use (a `let` whose expression is a
        memoised common sub-expression shares that memo, which its own scope resets)."""
        own = []
        for b in lets:
            self.let_levels[id(b)] = level
            if not self.shared_memo(b):
                own.append(self.let_local(b))
        if own:
            marker = f"s{len(self.resets)}"
            self.resets[marker] = own
            self.marker(marker)
            self.forget(own, self.loop_depth if level is None else self.scope_depth[level])

    def shared_memo(self, b: Binding) -> bool:
        """Whether `let` b's expression is a memoised common sub-expression (then that memo is the let's)."""
        n = b.expr.node
        if self.hot is None or isinstance(n, (ast.Lit, ast.Name)):
            return False
        k = self.key(n)
        return k is not None and k[0] in self.hot

    def open_scope(self, level: int) -> None:
        """A scope at `level` starts here: its memoised sub-expressions are reset at this point."""
        marker = f"s{len(self.resets)}"
        self.resets[marker] = []
        del self.scopes[level:]
        self.scopes.append(marker)
        self.marker(marker)
        self.scope_depth[level] = self.loop_depth
        self.forget([m for m, lv in self.cse_level.items() if lv >= level], self.loop_depth)

    def key(self, n: ast.Node) -> tuple[object, int] | None:
        """(structural key, scope level) of a loop-free sub-expression; None when it reads a loop variable of a
        quantifier or a check's `let`, or contains a loop."""
        if id(n) in self.keys:
            return self.keys[id(n)]
        out: tuple[object, int] | None = None
        if isinstance(n, ast.Lit):
            out = (("lit", type(n.value).__name__, repr(n.value)), 0)
        elif isinstance(n, ast.Name):
            binding = self.res.let_refs.get(id(n))
            if binding is not None:
                level = self.let_levels.get(id(binding))
                out = None if level is None else (("let", id(binding)), level)
            elif n.id in self.levels:
                lv, ident = self.levels[n.id]
                out = None if lv is None else (("var", ident), lv)
            else:
                out = (("root", n.id), 0)
        elif not isinstance(n, ast.Quant) and id(n) not in self.res.earlier:  # `earlier(x)` reads a local
            parts: list[object] = [type(n).__name__, getattr(n, "op", None)]
            if isinstance(n, ast.Attr):
                parts.append(id(self.field(n).get))
            elif isinstance(n, ast.Call):
                parts.append(id(self.res.helpers[id(n)].fn))
            elif isinstance(n, ast.Slice):
                parts.append((n.lo is not None, n.hi is not None))
            level = 0
            for c in ast.children(n):
                k = self.key(c)
                if k is None:
                    break
                parts.append(k[0])
                level = max(level, k[1])
            else:
                out = (tuple(parts), level)
        self.keys[id(n)] = out
        return out

    def let_local(self, b: Binding) -> str:
        name = self.memo.get(id(b))
        if name is None:
            name = self.memo[id(b)] = self.fresh("m")
        return name

    def field(self, n: ast.Attr) -> FieldSpec:
        """The catalogue field `n` reads."""
        return self.sibling_fields.get(id(n)) or self.res.fields[id(n)]

    def sibling(self, n: ast.Attr, spec: FieldSpec) -> ast.Attr:
        """The read of field `spec` of `n`'s object (one node per `n`)."""
        got = self.siblings.get(id(n))
        if got is None:
            got = self.siblings[id(n)] = ast.Attr(n.start, n.end, n.depth, n.obj, spec.name)
            self.sibling_fields[id(got)] = spec
        return got

    def shared(self, key: object, level: int) -> str | None:
        """The memo local of the sub-expression `key` (of scope `level`) when it repeats, made on first use;
        None when it is computed where it stands. The first generation pass only counts the occurrences."""
        if self.hot is None:
            # inside a loop whose variable it does not read, one occurrence already repeats
            invariant = self.quant_depth > 0 or level < len(self.scopes) - 1
            self.counts[key] = self.counts.get(key, 0) + (2 if invariant else 1)
            return None
        if key not in self.hot:
            return None
        local = self.cse.get(key)
        if local is None:
            local = self.cse[key] = self.fresh("c")
            self.resets[self.scopes[level]].append(local)
            self.cse_level[local] = level
            self.birth[local] = self.scope_depth[level]
        return local


class _Indent:
    """A nested block being filled (a branch keeps what is known before it, a loop counts its depth)."""

    def __init__(self, gen: _Core, body: list[py.stmt], branch: bool = False, loop: bool = False) -> None:
        self.gen = gen
        self.body = body
        self.outer: list[py.stmt] = []
        self.branch = branch
        self.loop = loop
        self.done: set[str] = set()
        self.nonnull: set[str] = set()
        self.known: set[str] = set()

    def __enter__(self) -> None:
        g = self.gen
        self.outer, g.block = g.block, self.body
        if self.branch:
            self.done = set(g.done)
            self.nonnull = set(g.nonnull)
            self.known = set(g.known)
        if self.loop:
            g.loop_depth += 1

    def __exit__(self, *exc: object) -> None:
        g = self.gen
        g.block = self.outer
        if self.branch:
            g.done = self.done
            g.nonnull = self.nonnull
            g.known = self.known
        if self.loop:
            g.loop_depth -= 1
