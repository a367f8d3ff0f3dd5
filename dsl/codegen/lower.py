"""Lowering: a checked rule's typed AST -> the statements of one Python function, as lines of source.

The lowering does its optimisations as it goes (memoised common sub-expressions, lets computed on first use,
facts carried along a path, short-circuits as control flow, indexed lists counted rather than built); see the
package's docstring for the semantics it keeps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .. import ast
from ..backend import FAILED, FAULT, OVER_BUDGET, Site
from ..builtins import RANGE_CAP, _len, _range
from ..catalogue import INT, FieldSpec, IndexedList
from ..check import Earlier, Resolution
from ..compile import CompiledCheck, _attr_value
from ..rules import Binding, Check
from .support import (
    _ARITH,
    _ATOM,
    _CONDITIONAL,
    _EMPTY_IF,
    _FLAG_READ,
    _FLIPPED,
    _LOCAL,
    _NESTED_OPERANDS,
    _NUMERIC,
    _ORDER,
    _SINGLE_READ,
    MAX_LINES,
    _add,
    _Declined,
    _distinct_add,
    _int_literal,
    _kept_local,
    _nodes,
    _Setter,
    _slice,
    _truth,
)


class _Gen:
    """Emits the statements of one function; `expr` returns the name holding a node's value."""

    def __init__(self, res: Resolution, step_limit: int) -> None:
        self.res = res
        self.limit = step_limit
        self.consts: list[Any] = []
        self.const_ids: dict[int, str] = {}
        self.lines: list[str] = []
        self.depth = 1
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
        # a boolean chain's result local -> (the value it has when every block ran, what is done then)
        self.complete: dict[str, tuple[bool, set[str]]] = {}
        self.nonnull: set[str] = set()  # locals tested not null on every path to here (they are not reassigned)
        # id(group check) -> the locals of its visited elements and, per id(let) earlier() reads, (values, fault)
        self.visited: dict[int, tuple[str, dict[int, tuple[str, str]]]] = {}
        # a loop over an indexed list keeps the positions it visited; the list nothing reads (no miss's record,
        # no `earlier` of the elements themselves) is left out: the list -> the line appending to it
        self.unread_visited: dict[str, str] = {}
        # a field read through a sibling (FieldSpec.not_null_of): id(read) -> the sibling's read of the same object
        # (made once, so it is a sub-expression like the rule's own reads of it), and its field
        self.siblings: dict[int, ast.Attr] = {}
        self.sibling_fields: dict[int, FieldSpec] = {}
        # what is known on every path to here: a local's name, that it holds an int known non-negative (a loop's
        # counter over range(n) or an indexed list's positions; one a comparison proved so), read as an index
        # without the negative-index guard; `_truth(local)`, that the local holds true (a bool value kept in a
        # local), dropped from an `and` and taken as the branch. Facts come from a passed `require`, the earlier
        # operands of the `and` chain being evaluated, the condition of the branch taken and a `where` let
        # through; `proves` holds per emitted condition what it proves when it is true
        self.known: set[str] = set()
        self.proves: dict[str, frozenset[str]] = {}
        # the kept let values held as a set of keys -> the key's inline form and the group's scope level (an
        # element's key is computed once: where it is tested, and read again where the element is kept)
        self.kept_keys: dict[str, tuple[str, int]] = {}
        # the element local of a loop over an indexed list -> (owner local, position local, maker constant, form):
        # the element is `maker(owner, position)`, made only where its value is needed
        self.indexed: dict[str, tuple[str, str, str, IndexedList]] = {}
        self.attr_locals: set[str] = set()  # the memo locals holding an attribute dict (see `attrs_dict`)
        self.literal_sets: dict[int, frozenset[Any]] = {}  # id(comparison) -> its literal list as a set
        # the `hf` flags of kept let values, and those that can be set (a value computed when kept, which may
        # fault); the others, always false, are left out of the function with their tests
        self.flags: list[str] = []
        self.faulting: set[str] = set()
        # generated actions: the writes of phase 2, the lists collecting a loop's writes, the loops around here
        self.writes: list[str] = []
        self.write_lists: list[str] = []
        self.action_loops = 0

    # ---- emission ------------------------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)
        if len(self.lines) > MAX_LINES:
            raise _Declined

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any) -> str:
        """The local bound to `value` (a literal from the rule, a field reader, a helper, ...)."""
        if value is None or isinstance(value, bool):
            return repr(value)  # None / True / False: the template's own words, not the rule's
        key = id(value)
        name = self.const_ids.get(key)
        if name is None:
            name = self.const_ids[key] = f"k{len(self.consts)}"
            self.consts.append(value)
        return name

    def indent(self) -> _Indent:
        """A nested block that runs whenever the code before it does (a `try:`, a `return` under an `if`)."""
        return _Indent(self)

    def branch(self) -> _Indent:
        """A nested block that may not run: what it computes is not known to be computed after it."""
        return _Indent(self, branch=True)

    def loop(self) -> _Indent:
        """A loop body: it may run no time, or again after computing something."""
        return _Indent(self, branch=True, loop=True)

    def memoised(self, local: str, compute: Callable[[], str], fuse: bool = False, cheap: bool = False) -> str:
        """`local`, computed by `compute` (which emits statements and returns the value) unless known done.

        With `fuse`, a computation that needs no statement is returned as an expression, `(local := value)` (or,
        where an earlier path may have computed it, `(local if local is not _U else (local := value))`), so the
        expression around it stays one expression: it is computed where it stands, and every later read comes
        after it (an `and`/`or` chain goes left to right; a branch forgets what it computed; an inline form that
        may skip an argument takes it as a statement, see `inline`). A `cheap` value (one attribute read) that
        would need the test is computed where it stands instead."""
        if local in self.done:
            return local
        fresh = local not in self.touched and self.birth.get(local, 0) >= self.loop_depth
        if cheap and not fresh:
            return compute()
        if fresh:
            mark = len(self.lines)
            value = compute()
            self.done.add(local)
            self.touched.add(local)
            if fuse and len(self.lines) == mark:
                return self.same_proof(value, f"({local} := {value})", local)
            self.emit(f"{local} = {value}")  # computed on no path to here: no test, no reset needed
            return self.same_proof(value, local)
        self.tested.add(local)
        mark = len(self.lines)
        with self.branch():
            value = compute()
            fused = fuse and len(self.lines) == mark
            if not fused:
                self.emit(f"{local} = {value}")
        self.done.add(local)
        self.touched.add(local)
        if fused:  # computed on some path: the test, in the expression
            return self.same_proof(value, f"({local} if {local} is not _U else ({local} := {value}))", local)
        self.lines.insert(mark, "    " * self.depth + f"if {local} is _U:")
        return self.same_proof(value, local)

    def same_proof(self, value: str, *forms: str) -> str:
        """`forms` (a memo local holding `value`, the expressions reading it) prove what `value` proves when true;
        returns the first."""
        got = self.proves.get(value)
        if got:
            for f in forms:
                self.proves[f] = got
        return forms[0]

    def assume(self, cond: str) -> None:
        """The code from here on runs only where `cond` was true: what it proves holds."""
        self.known |= self.facts(cond)

    def facts(self, cond: str) -> frozenset[str]:
        """What `cond` (a bool value as emitted) proves when it is true: what `proves` says, and that the local
        it is kept in (a walrus, a memo, a chain's result) holds true."""
        got = self.proves.get(cond, frozenset())
        local = _kept_local(cond) if ":=" in cond or _LOCAL.fullmatch(cond) else None
        return got | {_truth(local)} if local is not None else got

    def is_true(self, value: str) -> bool:
        """Whether `value` (as emitted) is known true here: the literal, or a local known to hold true."""
        return value == "True" or _truth(value) in self.known

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
            marker = f"\0{len(self.resets)}"
            self.resets[marker] = own
            self.emit(marker)
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
        marker = f"\0{len(self.resets)}"
        self.resets[marker] = []
        del self.scopes[level:]
        self.scopes.append(marker)
        self.emit(marker)
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

    def let_value(self, b: Binding) -> str:
        """The value of `let` b where it is read (computed on first use; a literal is itself)."""
        if isinstance(b.expr.node, ast.Lit):
            return self.const(b.expr.node.value)
        if self.shared_memo(b):
            return self.expr(b.expr.node)
        return self.memoised(self.let_local(b), lambda: self.expr(b.expr.node), fuse=True)

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

    # ---- expressions ---------------------------------------------------------------------------------------
    def expr(self, n: ast.Node, view: bool = False) -> str:
        """Emit the statements computing `n`; the returned local (or constant) holds its value. With `view` (the
        value's elements are only read: measured, indexed, sliced, iterated), a list field with a catalogue view
        is read without the getter's copy."""
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

            def compute() -> str:
                return self.inline(viewed, [self.expr(obj)], self.const(spec.get) if "{f}" in viewed else "")

        else:

            def compute() -> str:
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
        if form is None:
            form = f"{{0}}.{spec.path}" if spec.path is not None else spec.inline
        return form is not None and _SINGLE_READ.fullmatch(form) is not None

    def attrs_dict(self, holder: ast.Node, value: str, form: str) -> str | None:
        """The local holding the attribute dict of `holder` (whose value is `value`; `form` the entity's inline
        form of its dict) when several attribute reads of the same holder share it, like a common
        sub-expression; None where the read keeps its own form. No check changes a dict while a candidate is
        decided, and actions only write into it."""
        k = self.key(holder)
        local = self.shared(("attrs", k[0]), k[1]) if k is not None else None
        if local is None:
            return None
        self.attr_locals.add(local)
        return self.memoised(local, lambda: f"({form.format(value)})")

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

    def _expr(self, n: ast.Node) -> str:
        """Emit what computes `n` (not memoised: see `expr`) and return its value. Loop-free, statement-free parts
        are returned as Python expressions (in parentheses) and fused into their parent's expression: evaluated
        once, where the parent stands, in the same left-to-right order (`seq` pins an earlier operand into a local
        when a later one needs statements). A fault raises in the fused expression as it would have in a
        statement of its own."""
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
            return f"(not {o})" if n.op == "not" else f"(-{o})"
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
            return t
        if isinstance(n, ast.ListLit):
            if all(isinstance(i, ast.Lit) for i in n.items):  # built once; no helper mutates its arguments
                return self.const([i.value for i in n.items])  # type: ignore[attr-defined]
            self.emit(f"{t} = [{', '.join(self.seq(list(n.items)))}]")
            return t
        if isinstance(n, ast.Index):
            return self.index(n)
        if isinstance(n, ast.Slice):
            return self.slice(n)
        raise AssertionError(f"unexpected node {type(n).__name__}")  # pragma: no cover - the parser makes no other

    def name(self, n: ast.Name) -> str:
        """A `let` (computed on first use), a loop variable or a root binding."""
        binding = self.res.let_refs.get(id(n))
        if binding is not None:
            return self.let_value(binding)
        local = self.vars.get(n.id)
        if local in self.indexed:
            return self.element(local)
        if local is None:
            local = self.roots.get(n.id)
            if local is None:
                local = self.roots[n.id] = self.fresh("r")
        return local

    def attr(self, n: ast.Attr) -> str:
        """A catalogue field read: through a sibling, an indexed list's owner, its attribute path, its inline form,
        or its getter (a null object is a fault in each)."""
        spec = self.field(n)
        if spec.not_null_of is not None:  # the sibling, read (and kept) as itself
            return f"({self.expr(self.sibling(n, spec.not_null_of))} is not None)"
        part = self.indexed_field(n, spec)
        if part is not None:
            return part
        if spec.path is not None:  # a catalogue-declared attribute path (null raises AttributeError: a fault)
            return f"({self.expr(n.obj)}.{spec.path})"
        if spec.inline is not None:  # the catalogue's inline form of the getter (null raises likewise)
            return self.inline(spec.inline, [self.expr(n.obj)])
        o = self.atom(self.expr(n.obj))
        if o not in self.nonnull:
            self.emit(f"if {o} is None: raise _F")
            self.nonnull.add(o)
        return f"{self.const(spec.get)}({o})"

    def call(self, n: ast.Call) -> str:
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
            return f"len({args[0]})"
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
            form = self.res.attr_dicts.get(id(n))
            if form is not None and first is not None:
                dict_read = re.compile(re.escape(form) + r"(?!\w)")  # the holder's dict, not a longer name
                if dict_read.search(template):
                    attrs = self.attrs_dict(first, args[0], form)
                    if attrs is not None:
                        template = dict_read.sub(attrs, template)
            return self.inline(template, args, fn)
        if not helper.memo:
            return f"{fn}({', '.join(args)})"
        return self.memo_call(fn, args)

    def memo_call(self, fn: str, args: list[str]) -> str:
        """A memoised helper's call: reused for the same argument objects while deciding this candidate, keyed
        by identity (cheap); the entry keeps the arguments alive, so no id is reused meanwhile."""
        memo = self.memo_dicts.setdefault(fn, f"M{fn}")  # one table per helper
        args = [self.atom(a) for a in args]
        key = f"id({args[0]})" if len(args) == 1 else f"({''.join(f'id({a}), ' for a in args)})"
        t, e = self.fresh(), self.fresh("e")
        self.emit(f"{e} = {memo}.get({key})")
        self.emit(f"if {e} is not None and {' and '.join(f'{e}[{i}] is {a}' for i, a in enumerate(args))}:")
        with self.indent():
            self.emit(f"{t} = {e}[{len(args)}]")
        self.emit("else:")
        with self.indent():
            self.emit(f"{t} = {fn}({', '.join(args)})")
            self.emit(f"{memo}[{key}] = ({''.join(f'{a}, ' for a in args)}{t})")
        return t

    def arith(self, n: ast.Arith) -> str:
        """Arithmetic: plain Python on numbers (None raises TypeError: a fault), list concatenation, `_add`."""
        a, b = self.seq([n.left, n.right])
        numeric = self.res.type_of(n.left).name in _NUMERIC and self.res.type_of(n.right).name in _NUMERIC
        if n.op == "+":  # None raises TypeError in `+`, `*` and _add: a fault, as the closures' check
            if numeric:
                return f"({a} + {b})"
            if self.res.type_of(n.left).is_list and self.res.type_of(n.right).is_list:
                return f"[*{a}, *{b}]"
            return f"{self.const(_add)}({a}, {b})"
        if numeric:  # None raises TypeError: a fault
            return f"({a} {_ARITH[n.op]} {b})"
        a, b = self.atom(a), self.atom(b)
        self.emit(f"if {a} is None or {b} is None: raise _F")
        return f"({a} {_ARITH[n.op]} {b})"

    def if_else(self, n: ast.IfElse, t: str) -> str:
        """`a if c else b` into `t` (the branch taken alone where the condition is known true)."""
        c = self.expr(n.cond)
        if self.is_true(c):  # the branch taken is known
            return self.expr(n.then)
        self.emit(f"if {c}:")
        with self.branch():
            self.assume(c)
            self.emit(f"{t} = {self.expr(n.then)}")
        self.emit("else:")
        with self.branch():
            self.emit(f"{t} = {self.expr(n.else_)}")
        return t

    def index(self, n: ast.Index) -> str:
        """`o[i]`: null (TypeError) and past the end (IndexError) raise as they are: faults; a negative index,
        which Python would count from the end, is turned into None (TypeError)."""
        o, i = self.seq([n.obj, n.index], (True,))
        it = self.res.type_of(n.index)
        lit = n.index.value if isinstance(n.index, ast.Lit) else None
        if (isinstance(lit, int) and not isinstance(lit, bool) and lit >= 0) or i in self.known:
            return f"{o}[{i}]"  # a non-negative index: Python raises on null and past the end, as the closures
        if it.name == "int" and not it.nullable:
            if not _ATOM.fullmatch(i):
                o, i = self.atom(o), self.atom(i)
            return f"{o}[{i} if {i} >= 0 else None]"
        o, i = self.atom(o), self.atom(i)
        self.emit(f"if {o} is None or not isinstance({i}, int) or not 0 <= {i} < len({o}): raise _F")
        return f"{o}[{i}]"

    def slice(self, n: ast.Slice) -> str:
        """`o[lo:hi]`, copied as `_slice` does (a negative bound is a fault)."""
        parts = self.seq([x for x in (n.obj, n.lo, n.hi) if x is not None], (True,))  # copied: a list
        o = parts.pop(0)
        lo = parts.pop(0) if n.lo is not None else "None"
        hi = parts.pop(0) if n.hi is not None else "None"
        bounds = [(b, x) for b, x in ((lo, n.lo), (hi, n.hi)) if x is not None]
        if self.res.type_of(n.obj).is_list and all(self.res.type_of(x) == INT for _, x in bounds):
            # a list slice copied as _slice does; a negative bound is refused by indexing with None
            o, *rest = [self.atom(v) for v in (o, *(b for b, _ in bounds))] if bounds else [o]
            lo, hi = (rest.pop(0) if n.lo is not None else "", rest.pop(0) if n.hi is not None else "")
            neg = " or ".join(f"{b} < 0" for b in (lo, hi) if b)
            return f"list({o}[{lo}:{hi}] if not ({neg}) else {o}[None])" if neg else f"list({o}[:])"
        return f"{self.const(_slice)}({o}, {lo}, {hi})"

    def inline(self, template: str, args: list[str], fn: str = "") -> str:
        """A catalogue inline form applied to `args` (an argument used twice is evaluated once, into a local;
        `{t}` becomes a fresh temporary, a helper's `{f}` the constant `fn` holding the helper)."""
        used = [template.count(f"{{{i}}}") for i in range(len(args))]
        if any(k > 1 for k in used) or (any(":=" in a for a in args) and _CONDITIONAL.search(template)):
            # in order; a memo first computed in an argument the form may skip is computed before it instead
            args = [self.atom(a) for a in args]
        return f"({template.format(*args, t=self.fresh(), f=fn)})"

    def seq(self, nodes: Sequence[ast.Node], views: Sequence[bool] = ()) -> list[str]:
        """The values of `nodes`, evaluated in order: an earlier fused expression is pinned into a local when a
        later operand needs statements (which would otherwise run before it). `views[k]`: node k's elements are
        only read (see `expr`)."""
        out: list[str] = []
        for at, n in enumerate(nodes):
            mark = len(self.lines)
            v = self.expr(n, at < len(views) and views[at])
            if len(self.lines) > mark:
                for k, prev in enumerate(out):
                    if not _ATOM.fullmatch(prev):
                        t = self.fresh()
                        self.lines.insert(mark, "    " * self.depth + f"{t} = {prev}")
                        mark += 1
                        out[k] = t
            out.append(v)
        return out

    def atom(self, v: str) -> str:
        """`v` as a local or constant (a fused expression is evaluated into a local here)."""
        if _ATOM.fullmatch(v):
            return v
        t = self.fresh()
        self.emit(f"{t} = {v}")
        return t

    def truth(self, n: ast.Node) -> str:
        """`n` as a Python bool (no conversion when its static type is a non-null bool, which Python's own
        comparisons, `not`, `in` and the catalogue's bool fields and helpers produce)."""
        v = self.expr(n)
        t = self.res.type_of(n)
        return v if t.name == "bool" and not t.nullable else f"bool({v})"

    def boolop(self, n: ast.BoolOp, t: str) -> str:
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
            mark = len(self.lines)
            with self.indent():
                v = self.truth(op)
            proved |= self.facts(v)
            if len(self.lines) == mark:
                if not (n.op == "and" and self.is_true(v)):
                    pending.append(v)
                continue
            blocks = True
            head = [] if pending == [t] else [f"{t} = {self.fuse(pending, n.op)}"]
            head.append(f"if {t}:" if n.op == "and" else f"if not {t}:")
            self.lines[mark:mark] = ["    " * self.depth + line for line in head]
            with self.indent():
                self.emit(f"{t} = {v}")
            pending = [t]
        value = t
        if pending != [t]:
            if not blocks:  # no operand after the first needed a statement: one expression
                value = f"({self.fuse(pending, n.op)})" if pending else "True"  # (an `and` of known truths)
            else:
                self.emit(f"{t} = {self.fuse(pending, n.op)}")
        chain_done, self.done, self.known = self.done, after, outside
        if value == "True":  # a constant, not this chain's own: nothing is recorded under it
            return value
        # where the chain came out as it does when every block ran (true for `and`, false for `or`), all did
        self.complete[value] = (n.op == "and", set(chain_done))
        if n.op == "and" and proved:  # true, every operand was
            self.proves[value] = frozenset(proved)
        return value

    def fuse(self, operands: list[str], op: str) -> str:
        """Bool operands joined by `op`. In an `or`, a run of flag reads of one attribute dict (`D.get(k) is
        True`, and the test that an int list attribute is not empty, `attr_ints`' inline form under `not not`:
        false for every key of an empty dict) is skipped as a whole when the dict is empty, the usual case for a
        GE op (the catalogue's `attrs_inline` names the entity's attribute dict, so `D` is a dict)."""
        if op == "or" and len(operands) > 1:
            runs: list[tuple[str | None, list[str]]] = []
            for v in operands:
                m = _FLAG_READ.fullmatch(v)
                d = (m.group(1) or m.group(2)) if m is not None else None
                d = d if d in self.attr_locals else None
                if d is not None and runs and runs[-1][0] == d:
                    runs[-1][1].append(v)
                else:
                    runs.append((d, [v]))
            operands = [
                f"(({' or '.join(vs)}) if {d} else False)" if d is not None and len(vs) > 1 else " or ".join(vs)
                for d, vs in runs
            ]
        return f" {op} ".join(operands) or ("True" if op == "and" else "False")

    def compare(self, n: ast.Compare) -> str:
        members = self.literal_set(n)
        if members is not None:  # a hash lookup, with the list's answer for every such value
            return f"({self.expr(n.left)} {n.op} {self.const(members)})"
        empty = self.emptiness(n)
        if empty is not None:
            return empty
        a, b = self.seq([n.left, n.right], (False, n.op in ("in", "not in")))  # membership reads the elements
        kept = self.kept_keys.get(b) if id(n) in self.res.member_keys else None
        if kept is not None:  # `x in earlier(x)` kept as a set of keys
            let = id(self.res.earlier[id(n.right)].binding)
            return f"({self.keyed(kept, a, self.res.type_of(n.left).nullable, let)} {n.op} {b})"
        if n.op in ("==", "!=") and "None" in (a, b):  # no value of the language equals null but null itself
            return f"({a} {'is' if n.op == '==' else 'is not'} {b})"
        if n.op in ("==", "!=", "in", "not in"):  # `in` null raises TypeError: a fault, as the closures' check
            return f"({a} {n.op} {b})"
        assert n.op in _ORDER
        plain = all(self.res.type_of(x).name in (*_NUMERIC, "str") for x in (n.left, n.right))
        value = f"({a} {n.op} {b})" if plain else f"bool({a} {n.op} {b})"
        local = self.nonneg_operand(n, a, b)
        if local is not None:
            self.proves[value] = frozenset((local,))
        return value

    def emptiness(self, n: ast.Compare) -> str | None:
        """A length compared with the literal that tells an empty sequence from others (`len(x) == 0`,
        `len(x) > 0`, `0 < len(x)`, `len(x) >= 1`, ...) as the truth of the sequence, when it is a list or string
        that is never null (where a null one would fault, none is: the checker's type, or the catalogue's, says
        so); else None."""
        for length, bound, op in ((n.left, n.right, n.op), (n.right, n.left, _FLIPPED.get(n.op, ""))):
            k = _int_literal(bound)
            empty = _EMPTY_IF.get((op, k)) if k is not None else None
            sequence = self.sized(length) if empty is not None else None
            if sequence is not None:
                return f"(not {sequence()})" if empty else f"(not (not {sequence()}))"
        return None

    def sized(self, n: ast.Node) -> Callable[[], str] | None:
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

    def nonneg_operand(self, n: ast.Compare, a: str, b: str) -> str | None:
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

    def loop_head(self, coll: str, var_local: str) -> None:
        """`for` over `coll`, its length charged to the budget (`len` of null raises: a fault); over the
        positions when `var_local` is an indexed list's element (`coll` is then its count)."""
        self.charge(coll, var_local in self.indexed)
        self.for_header(var_local, coll)

    def charge(self, coll: str, counted: bool) -> None:
        """A loop's length (`coll`'s, or `coll` itself when `counted`) charged to the budget."""
        self.emit(f"s += {coll}" if counted else f"s += len({coll})")
        self.emit(f"if s > {self.const(self.limit)}: raise _B")

    def for_header(self, var_local: str, coll: str) -> None:
        """`for` binding `var_local` to each element of `coll` (to each position, for an indexed list's element)."""
        ix = self.indexed.get(var_local)
        self.emit(f"for {ix[1]} in range({coll}):" if ix is not None else f"for {var_local} in {coll}:")

    # ---- indexed lists -------------------------------------------------------------------------------------
    # A loop over a list the catalogue declares indexed (a node's inputs: anchor k is InAnchor(node, k)) counts
    # instead of building the list: the element's fields read through the owner and the position, and the
    # element is made only where its value itself is needed (a helper's argument, a miss's record).
    def indexed_items(self, coll: ast.Node) -> tuple[str, str, IndexedList] | None:
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

    def bind_indexed(self, local: str, items: tuple[str, str, IndexedList]) -> None:
        """`local` (a loop variable just bound) is an element of the indexed list `indexed_items` emitted."""
        _, owner, form = items
        position = self.fresh("p")
        self.known.add(position)
        self.indexed[local] = (owner, position, self.const(form.make), form)

    def element(self, local: str) -> str:
        """The value of an indexed list's element: made from its owner and position."""
        owner, position, make, _ = self.indexed[local]
        return f"{make}({owner}, {position})"

    def indexed_field(self, n: ast.Attr, spec: FieldSpec) -> str | None:
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
                return position
            return f"({owner}.{spec.path[len(owner_part) + 1 :]})" if spec.path.startswith(owner_part + ".") else None
        if spec.inline is None:
            return None
        parts = re.compile(r"\{0\}\.(" + re.escape(owner_part) + "|" + re.escape(index_part) + r")\b")
        if "{0}" in parts.sub("", spec.inline):
            return None
        template = parts.sub(lambda m: "{0}" if m.group(1) == owner_part else "{1}", spec.inline)
        return self.inline(template, [owner, position])

    def quant(self, n: ast.Quant, t: str) -> None:
        coll = n.coll
        got: tuple[str, str, IndexedList] | None = None
        helper = self.res.helpers.get(id(coll))
        counting = isinstance(coll, ast.Call) and helper is not None and helper.fn is _range
        if isinstance(coll, ast.Call) and counting:  # the same integers, no list (and nothing to do for none)
            c = self.atom(self.expr(coll.args[0]))
        else:
            got = self.indexed_items(coll)
            c = got[0] if got is not None else self.atom(self.expr(coll, view=True))  # iterated: elements read
        start = {"all": "True", "any": "False", "none": "True", "count": "0"}.get(n.kind)
        hashed = seen = ""
        if start is None:  # distinct
            hashed, seen = self.fresh("h"), self.fresh("h")
            self.emit(f"{hashed} = set()")
            self.emit(f"{seen} = []")
        else:
            self.emit(f"{t} = {start}")
        local, prev = self.bind_var(n.var)
        if counting:
            self.known.add(local)
        elif got is not None:
            self.bind_indexed(local, got)
        if counting:  # range(c): min(c, RANGE_CAP) integers, none when c <= 0 (null or not a number: a fault)
            self.emit(f"if {c} > 0:")
            with self.branch():
                capped = self.fresh()
                cap = self.const(RANGE_CAP)
                self.emit(f"{capped} = {c} if {c} < {cap} else {cap}")
                self.charge(capped, True)
                self.emit(f"for {local} in range({capped}):")
                self.quant_body(n, t, hashed, seen)
        else:
            self.loop_head(c, local)
            self.quant_body(n, t, hashed, seen)
        self.unbind(n.var, prev)
        if start is None:
            self.emit(f"{t} = len({hashed}) + len({seen})")

    def quant_body(self, n: ast.Quant, t: str, hashed: str, seen: str) -> None:
        """The loop body of quantifier `n` (the loop header just emitted), folding each element into `t`."""
        with self.loop():
            if n.where is not None:
                self.emit(f"if not {self.expr(n.where)}: continue")
            b = self.expr(n.body)
            if n.kind == "all":
                self.emit(f"if not {b}:")
                with self.indent():
                    self.emit(f"{t} = False")
                    self.emit("break")
            elif n.kind in ("any", "none"):
                self.emit(f"if {b}:")
                with self.indent():
                    self.emit(f"{t} = {n.kind == 'any'}")
                    self.emit("break")
            elif n.kind == "count":
                self.emit(f"if {b}: {t} += 1")
            else:
                self.emit(f"{self.const(_distinct_add)}({hashed}, {seen}, {b})")

    def catch(self, k: int, vals: str) -> None:
        """The handlers closing a `try:` around site `k`'s evaluation."""
        if self.lines[-1].strip() == "try:":  # nothing to evaluate (a literal, a variable already bound)
            with self.indent():
                self.emit("pass")
        self.emit("except _B:")
        with self.indent():
            self.emit(f"return ({k}, {OVER_BUDGET}, s, {vals})")
        self.emit("except Exception:")
        with self.indent():
            self.emit(f"return ({k}, {FAULT}, s, {vals})")

    # ---- checks --------------------------------------------------------------------------------------------
    def site(self, cc: CompiledCheck, path: tuple[str, ...], groups: tuple[CompiledCheck, ...]) -> int:
        self.sites.append(Site(cc, path, groups))
        return len(self.sites) - 1

    def checks(self, ccs: Sequence[CompiledCheck], path: tuple[str, ...], groups: tuple[CompiledCheck, ...]) -> None:
        vals = "(" + "".join(self.site_values(g) for g in groups) + ")"
        for cc in ccs:
            c = cc.check
            here = (*path, c.name)
            k = self.site(cc, here, groups)
            if cc.fn is not None:
                if c.lets:  # the check's lets, and what is computed from them, live while it is evaluated
                    self.open_scope(len(groups) + 1)
                    self.reset_lets(c.lets, len(groups) + 1)
                assert c.expr is not None
                # the test inside the `try`, on the value as it stands (a fused expression needs no local)
                miss = f"return ({k}, {FAILED}, s, {vals})"
                self.emit("try:")
                chain = self.chain_test(c.expr.node, c.kind == "require")
                if chain is not None:
                    with self.indent():
                        chain(c.expr.node, c.kind == "require", miss)
                    self.catch(k, vals)
                    continue
                with self.indent():
                    v = self.expr(c.expr.node)
                    self.emit(f"if {'not ' if c.kind == 'require' else ''}{v}:")
                    with self.indent():
                        self.emit(miss)
                    if c.kind == "require":  # past it, the condition held
                        self.assume(v)
                self.catch(k, vals)
                passing, done = self.complete.get(v, (None, set()))
                if passing == (c.kind == "require"):  # past the check, every block of its chain ran
                    self.done |= done
                continue
            assert c.coll is not None and c.var is not None
            # counted, unless `earlier` lists the elements themselves
            itself = any(r.group is c and r.binding is None for r in self.res.earlier.values())
            self.emit("try:")
            with self.indent():
                got = None if itself else self.indexed_items(c.coll.node)
                # the elements are only read (each bound in turn): a view serves
                items = got[0] if got is not None else self.atom(self.expr(c.coll.node, view=True))
                self.charge(items, got is not None)
            self.catch(k, vals)
            level = len(groups) + 1
            local, prev = self.bind_var(c.var, level, id(cc))
            if got is not None:
                self.bind_indexed(local, got)
            kept = self.visited_lists(cc, level)
            ix = self.indexed.get(local)
            if kept is not None and ix is not None:
                self.unread_visited[kept[0]] = f"{kept[0]}.append({ix[1]})"
            self.for_header(local, items)
            with self.loop():
                self.open_scope(level)
                self.reset_lets(c.lets, level)
                if c.where is not None:
                    self.emit("try:")
                    with self.indent():
                        w = self.expr(c.where.node)
                        self.emit(f"if not {w}: continue")
                        self.assume(w)
                    self.catch(k, vals)
                self.checks(cc.subs, here, (*groups, cc))
                if kept is not None:
                    self.keep_visited(cc, local, kept)
            del self.scopes[level:]
            self.unbind(c.var, prev)

    def chain_test(self, n: ast.Node, require: bool) -> Callable[[Any, bool, str], None] | None:
        """How a check whose condition `n` is an `and`/`or` chain (not kept for another read) is tested as
        control flow: in turn when it misses at its first deciding operand (a `require`'s `and`, a
        `reject_if`'s `or`), nested when only every operand together decides the miss; None for the rest."""
        if not isinstance(n, ast.BoolOp):
            return None
        k = self.key(n)
        if self.hot is not None and k is not None and k[0] in self.hot:
            return None
        if (n.op == "and") == require:
            return self.test_in_turn
        # nested one block deeper per operand that needs statements: a long chain keeps its local instead (Python
        # refuses about a hundred levels of indentation, and the rule would run on the closures)
        return self.test_nested if len(n.operands) <= _NESTED_OPERANDS else None

    def test_in_turn(self, n: ast.BoolOp, require: bool, miss: str) -> None:
        """A check's `and` (`require`) or `or` (`reject_if`) chain as a test per run of operands: the operands
        needing no statement are fused into one Python `and`/`or` (see `fuse`), and a run is tested, missing
        with `miss`, before the statements of the operand after it, which run only where it passed (so what
        they compute is computed on every path past them; a `require`'s operands hold past their test, and
        prove what they prove). The chain's value needs no local, and no operand is tested twice."""
        pending: list[str] = []
        neg = "not " if require else ""
        for op in n.operands:
            mark = len(self.lines)
            v = self.truth(op)
            if len(self.lines) > mark and pending:  # the run before these statements is tested before them
                pad = "    " * self.depth
                self.lines[mark:mark] = [f"{pad}if {neg}({self.fuse(pending, n.op)}):", f"{pad}    {miss}"]
                pending = []
            if require:
                known = self.is_true(v)  # known true before this check: nothing to test
                self.assume(v)  # later operands run only where it held (the fused ones by `and` itself)
                if known:
                    continue
            pending.append(v)
        if pending:
            self.emit(f"if {neg}({self.fuse(pending, n.op)}):")
            with self.indent():
                self.emit(miss)

    def test_nested(self, n: ast.BoolOp, require: bool, miss: str) -> None:
        """A check's `or` (`require`) or `and` (`reject_if`) chain, which misses only where no operand (every
        operand) holds: each run of operands needing no statement is tested, fused, and the operands after it
        are evaluated inside that test's block (where, for an `and`, the run held), so the miss is the
        innermost block's; no local holds the chain's value."""
        descend = "not " if require else ""
        first = self.truth(n.operands[0])
        pending = [] if n.op == "and" and self.is_true(first) else [first]  # a known truth decides nothing
        opened: list[_Indent] = []
        for op in n.operands[1:]:
            block = self.branch()  # runs only where the operands before it did not decide
            block.__enter__()
            if n.op == "and":
                for p in pending:
                    self.assume(p)
            mark = len(self.lines)
            v = self.truth(op)
            if len(self.lines) > mark:  # statements: the run before them is tested, and they run in its block
                pad = "    " * (self.depth - 1)
                self.lines.insert(mark, f"{pad}if {descend}({self.fuse(pending, n.op)}):")
                opened.append(block)
                pending = []
            else:
                block.__exit__(None, None, None)
            if not (n.op == "and" and self.is_true(v)):
                pending.append(v)
        self.emit(f"if {descend}({self.fuse(pending, n.op)}):")
        with self.indent():
            self.emit(miss)
        for block in reversed(opened):
            block.__exit__(None, None, None)

    # ---- earlier(...) ----------------------------------------------------------------------------------------
    # A group that some `earlier(x)` reads keeps, in locals, the elements it has visited (`h`) and, per `let` x
    # read that way, x's value for each of them (`hv`), appended when an element has passed every check. A
    # value not known to be computed by then is computed there; if that faults, `hf` is set and every
    # `earlier(x)` after it faults, as the closures' would when they compute it at the read.
    def site_values(self, g: CompiledCheck) -> str:
        """A miss's values for enclosing group `g`: its element, then (when it keeps them) its visited ones."""
        local = self.vars[g.check.var or "_"]
        ix = self.indexed.get(local)
        out = f"{self.element(local) if ix is not None else local}, "
        if g.visited is not None:
            h = self.visited[id(g.check)][0]
            if ix is not None:  # the positions kept, made into elements for the record
                j = self.fresh("j")
                out += f"[{ix[2]}({ix[0]}, {j}) for {j} in {h}], "
                self.unread_visited.pop(h, None)
            else:
                out += f"{h}, "
        return out

    def visited_lists(self, cc: CompiledCheck, level: int) -> tuple[str, dict[int, tuple[str, str]]] | None:
        """The locals of group `cc`'s visited elements and kept let values (declared empty here), or None; `level`
        is the scope level of its elements."""
        if cc.visited is None:
            return None
        h = self.fresh("h")
        values: dict[int, tuple[str, str]] = {}
        for ref in self.res.earlier.values():
            if ref.group is cc.check and ref.binding is not None and id(ref.binding) not in values:
                if self.has_loop(ref.binding.expr.node):
                    raise _Declined  # computing it at the end of an element would charge steps the closures do not
                values[id(ref.binding)] = (self.fresh("hv"), self.fresh("hf"))
                self.flags.append(values[id(ref.binding)][1])
        self.visited[id(cc.check)] = (h, values)
        self.emit(f"{h} = []")
        for b, (hv, hf) in values.items():
            key = self.membership_key(cc.check, b)
            if key is not None:
                self.kept_keys[hv] = (key, level)
            self.emit(f"{hv} = {'set()' if key is not None else '[]'}")
            self.emit(f"{hf} = False")
        return h, values

    def membership_key(self, group: Check, binding: int) -> str | None:
        """When every `earlier(x)` of let `binding` (an id) of `group` is the right of an `in` / `not in` whose
        sides share an equality key (`Resolution.member_keys`): that key's inline form, and the values are kept in
        a set of keys (one lookup, not a scan of `==` calls); else None."""
        refs = {k for k, r in self.res.earlier.items() if r.group is group and id(r.binding) == binding}
        reads = tests = 0
        keys: set[str | None] = set()
        for n in _nodes(group):
            reads += id(n) in refs
            if isinstance(n, ast.Compare) and n.op in ("in", "not in") and id(n.right) in refs:
                tests += 1
                keys.add(self.res.member_keys.get(id(n)))
        return keys.pop() if reads and reads == tests and len(keys) == 1 else None

    def keyed(self, kept: tuple[str, int], v: str, nullable: bool, let: int) -> str:
        """The equality key of value `v` (null's is null) of the `let` (an id) kept as a set of keys: `kept`'s
        inline form, computed once per element of its group (at the test, read again where the element is
        kept)."""
        key, level = kept
        if key == "{0}":
            return v
        v = self.atom(v)

        def compute() -> str:
            got = self.inline(key, [v])
            return f"(None if {v} is None else {got})" if nullable else got

        local = self.shared(("key", let), level)
        return compute() if local is None else self.memoised(local, compute, fuse=True)

    def keep_visited(self, cc: CompiledCheck, local: str, kept: tuple[str, dict[int, tuple[str, str]]]) -> None:
        """At the end of an element of group `cc` (every check passed): remember it and its kept let values."""
        h, values = kept
        for b in cc.check.lets:
            if id(b) not in values:
                continue
            hv, hf = values[id(b)]
            kept_key = self.kept_keys.get(hv)
            nullable = self.res.type_of(b.expr.node).nullable
            mark = len(self.lines)
            self.emit("try:")
            with self.branch():
                v = self.let_value(b)
                self.emit(f"{hv}.add({self.keyed(kept_key, v, nullable, id(b))})" if kept_key else f"{hv}.append({v})")
            if len(self.lines) == mark + 2 and _ATOM.fullmatch(v):  # known computed: a local's read
                line = self.lines[-1].strip()
                del self.lines[mark:]
                self.emit(line)
                continue
            self.emit("except Exception:")
            with self.indent():
                self.emit(f"{hf} = True")
                self.emit(f"{hv}.add(None)" if kept_key else f"{hv}.append(None)")
            self.faulting.add(hf)
        ix = self.indexed.get(local)
        self.emit(f"{h}.append({ix[1] if ix is not None else local})")

    def earlier(self, ref: Earlier) -> str:
        """`earlier(x)`: the kept list (a fault if computing one of its values faulted)."""
        h, values = self.visited[id(ref.group)]
        if ref.binding is None:
            self.unread_visited.pop(h, None)
            return h
        hv, hf = values[id(ref.binding)]
        self.emit(f"if {hf}: raise _F")
        return hv

    def has_loop(self, n: ast.Node) -> bool:
        """Whether evaluating `n` runs a quantifier (directly or in a `let` it reads)."""
        if isinstance(n, ast.Quant):
            return True
        b = self.res.let_refs.get(id(n)) if isinstance(n, ast.Name) else None
        if b is not None and self.has_loop(b.expr.node):
            return True
        return any(self.has_loop(c) for c in ast.children(n))

    # ---- actions -------------------------------------------------------------------------------------------
    def action(self, n: ast.Node) -> None:
        """Evaluate one action (phase 1: what it writes where, which may fault) and add its writes to `self.writes`
        (phase 2, emitted by `apply_writes` once every action has been evaluated: the writes cannot fault)."""
        if isinstance(n, ast.ForAction):
            got = self.indexed_items(n.coll)
            c = got[0] if got is not None else self.atom(self.expr(n.coll))
            level = len(self.scopes)  # an element's scope, as a group's: what repeats in it is computed once
            local, prev = self.bind_var(n.var, level, id(n))
            if got is not None:
                self.bind_indexed(local, got)
            outermost = self.action_loops == 0
            mark, kept = len(self.lines), len(self.write_lists)
            self.action_loops += 1
            self.loop_head(c, local)
            with self.loop():
                self.open_scope(level)
                if n.where is not None:
                    self.emit(f"if not {self.expr(n.where)}: continue")
                self.action(n.body)
            del self.scopes[level:]
            self.action_loops -= 1
            self.unbind(n.var, prev)
            if outermost:  # the lists the loop's writes are collected in, made before it
                pad = "    " * self.depth
                self.lines[mark:mark] = [f"{pad}{w} = []" for w in self.write_lists[kept:]]
            return
        if isinstance(n, ast.EditAction):
            raise _Declined  # a structural action: the closures run the rule's actions (and ask the edit's check)
        assert isinstance(n, ast.SetAction)
        target = self.atom(self.expr(n.target))
        form = self.res.attr_dicts.get(id(n))
        # a null target faults: where the write's dict is read from it, that read raises (any exception sends the
        # actions to the closures, which give the error); a setter's target is tested here
        if target not in self.nonnull and not (form is not None and form.startswith("{0}.")):
            self.emit(f"if {target} is None: raise _F")
        self.nonnull.add(target)
        if isinstance(n.value, ast.Lit):  # a scalar: _attr_value keeps it as it is
            value = self.const(n.value.value)
        else:
            value = f"{self.const(_attr_value)}({self.expr(n.value)})"
        if form is not None:  # the dict the setter would write the attribute to (shared by the target's writes)
            where = self.attrs_dict(n.target, target, form) or self.inline(form, [target])
        else:
            where = f"{self.const(_Setter)}({self.const(self.res.setters[id(n)])}, {target})"
        attr = self.const(n.attr)
        constant = isinstance(n.value, ast.Lit)
        if self.action_loops == 0:  # one write: its container and value into locals, written in phase 2
            self.writes.append(f"{self.atom(where)}[{attr}] = {value if constant else self.atom(value)}")
            return
        w = self.fresh("w")  # in a loop: each element's write collected, all written in phase 2
        self.write_lists.append(w)
        if constant:
            self.emit(f"{w}.append({where})")
            self.writes.append(f"for d in {w}: d[{attr}] = {value}")
        else:
            self.emit(f"{w}.append(({where}, {value}))")
            self.writes.append(f"for d, v in {w}: d[{attr}] = v")

    def apply_writes(self) -> None:
        """Phase 2 of the actions, when asked to apply (not a dry run): every write, in the actions' order."""
        if self.writes:
            self.emit("if apply:")
            with self.indent():
                for line in self.writes:
                    self.emit(line)


class _Indent:
    def __init__(self, gen: _Gen, branch: bool = False, loop: bool = False) -> None:
        self.gen = gen
        self.branch = branch
        self.loop = loop
        self.done: set[str] = set()
        self.nonnull: set[str] = set()
        self.known: set[str] = set()

    def __enter__(self) -> None:
        g = self.gen
        g.depth += 1
        if self.branch:
            self.done = set(g.done)
            self.nonnull = set(g.nonnull)
            self.known = set(g.known)
        if self.loop:
            g.loop_depth += 1

    def __exit__(self, *exc: object) -> None:
        g = self.gen
        g.depth -= 1
        if self.branch:
            g.done = self.done
            g.nonnull = self.nonnull
            g.known = self.known
        if self.loop:
            g.loop_depth -= 1
