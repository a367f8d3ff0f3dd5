"""Lowering checks and actions: a rule's checks -> `try` blocks returning a miss where one fails or faults, its
groups -> `for` loops (keeping what `earlier(...)` reads), its chains -> control flow, and its actions -> the
two phases of the generated actions (evaluate every write, then make them)."""

from __future__ import annotations

import ast as py
from collections.abc import Callable, Sequence
from typing import Any

from .. import ast
from ..backend import FAILED, FAULT, OVER_BUDGET, Site
from ..compile import CompiledCheck, _attr_value
from ..rules import Check
from .lower import _Indent
from .lower_expr import _Exprs
from .support import (
    _NESTED_OPERANDS,
    _Declined,
    _nodes,
    _Setter,
    assign,
    atom_key,
    call,
    compare,
    if_,
    is_atom,
    load,
    method,
    not_,
    raise_,
    store,
    tuple_,
)

Miss = Callable[[], py.stmt]  # makes the statement returning a check's miss


class _Gen(_Exprs):
    """Emits the statements of one function: a rule's checks, its actions or its skip conditions."""

    def site(self, cc: CompiledCheck, path: tuple[str, ...], groups: tuple[CompiledCheck, ...]) -> int:
        self.sites.append(Site(cc, path, groups))
        return len(self.sites) - 1

    def miss(self, k: int, how: int, vals: list[py.expr]) -> py.Return:
        """`return (site, how, s, group values)`."""
        return py.Return(tuple_([py.Constant(k), py.Constant(how), load("s"), tuple_(vals)]))

    def try_(self) -> py.Try:
        """A `try` block (its body filled by the caller, its handlers by `catch`)."""
        node = py.Try([], [], [], [])
        self.emit(node)
        return node

    def catch(self, node: py.Try, k: int, vals: list[py.expr]) -> None:
        """The handlers closing a `try` around site `k`'s evaluation."""
        if not node.body:  # nothing to evaluate (a literal, a variable already bound)
            node.body.append(py.Pass())
        node.handlers = [
            py.ExceptHandler(load("_B"), None, [self.miss(k, OVER_BUDGET, vals)]),
            py.ExceptHandler(load("Exception"), None, [self.miss(k, FAULT, vals)]),
        ]

    # ---- checks --------------------------------------------------------------------------------------------
    def checks(self, ccs: Sequence[CompiledCheck], path: tuple[str, ...], groups: tuple[CompiledCheck, ...]) -> None:
        """The checks `ccs` in order (inside the groups `groups`, whose elements a miss records)."""
        vals = [v for g in groups for v in self.site_values(g)]
        for cc in ccs:
            here = (*path, cc.check.name)
            k = self.site(cc, here, groups)
            if cc.fn is not None:
                self.test(cc, k, len(groups), vals)
            else:
                self.group(cc, k, here, groups, vals)

    def test(self, cc: CompiledCheck, k: int, depth: int, vals: list[py.expr]) -> None:
        """A check of one condition (site `k`, inside `depth` groups): a miss where it fails or faults."""
        c = cc.check
        if c.lets:  # the check's lets, and what is computed from them, live while it is evaluated
            self.open_scope(depth + 1)
            self.reset_lets(c.lets, depth + 1)
        assert c.expr is not None
        require = c.kind == "require"

        def miss() -> py.stmt:
            return self.miss(k, FAILED, vals)

        # the test inside the `try`, on the value as it stands (a fused expression needs no local)
        node = self.try_()
        chain = self.chain_test(c.expr.node, require)
        if chain is not None:
            with self.indent(node.body):
                chain(c.expr.node, require, miss)
            self.catch(node, k, vals)
            return
        with self.indent(node.body):
            v = self.expr(c.expr.node)
            self.emit(if_(not_(v) if require else v, [miss()]))
            if require:  # past it, the condition held
                self.assume(v)
        self.catch(node, k, vals)
        passing, done = self.complete.get(self.pkey(v), (None, set())) if self.complete else (None, set())
        if passing == require:  # past the check, every block of its chain ran
            self.done |= done

    def group(
        self, cc: CompiledCheck, k: int, here: tuple[str, ...], groups: tuple[CompiledCheck, ...], vals: list[py.expr]
    ) -> None:
        """A `for_each` group (site `k`): a loop over its elements, each through its `where` and its checks."""
        c = cc.check
        assert c.coll is not None and c.var is not None
        # counted, unless `earlier` lists the elements themselves
        itself = any(r.group is c and r.binding is None for r in self.res.earlier.values())
        node = self.try_()
        with self.indent(node.body):
            got = None if itself else self.indexed_items(c.coll.node)
            # the elements are only read (each bound in turn): a view serves
            items = got[0] if got is not None else self.atom(self.expr(c.coll.node, view=True))
            self.charge(items, got is not None)
        self.catch(node, k, vals)
        level = len(groups) + 1
        local, prev = self.bind_var(c.var, level, id(cc))
        if got is not None:
            self.bind_indexed(local, got)
        kept = self.visited_lists(cc, level)
        loop = self.for_header(local, items)
        with self.loop(loop.body):
            self.open_scope(level)
            self.reset_lets(c.lets, level)
            if c.where is not None:
                where = self.try_()
                with self.indent(where.body):
                    w = self.expr(c.where.node)
                    self.emit(if_(not_(w), [py.Continue()]))
                    self.assume(w)
                self.catch(where, k, vals)
            self.checks(cc.subs, here, (*groups, cc))
            if kept is not None:
                self.keep_visited(cc, local, kept)
        del self.scopes[level:]
        self.unbind(c.var, prev)

    def chain_test(self, n: ast.Node, require: bool) -> Callable[[Any, bool, Miss], None] | None:
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

    def test_in_turn(self, n: ast.BoolOp, require: bool, miss: Miss) -> None:
        """A check's `and` (`require`) or `or` (`reject_if`) chain as a test per run of operands: the operands
        needing no statement are fused into one Python `and`/`or`, and a run is tested, missing with `miss`,
        before the statements of the operand after it, which run only where it passed (so what they compute is
        computed on every path past them; a `require`'s operands hold past their test, and prove what they
        prove). The chain's value needs no local, and no operand is tested twice."""
        pending: list[py.expr] = []

        def test(values: list[py.expr]) -> py.expr:
            fused = self.fuse(n.op, values)
            return not_(fused) if require else fused

        for op in n.operands:
            mark, size = len(self.block), self.size
            v = self.truth(op)
            if self.size > size and pending:  # the run before these statements is tested before them
                self.block.insert(mark, if_(test(pending), [miss()]))
                pending = []
            if require:
                known = self.is_true(v)  # known true before this check: nothing to test
                self.assume(v)  # later operands run only where it held (the fused ones by `and` itself)
                if known:
                    continue
            pending.append(v)
        if pending:
            self.emit(if_(test(pending), [miss()]))

    def test_nested(self, n: ast.BoolOp, require: bool, miss: Miss) -> None:
        """A check's `or` (`require`) or `and` (`reject_if`) chain, which misses only where no operand (every
        operand) holds: each run of operands needing no statement is tested, fused, and the operands after it
        are evaluated inside that test's block (where, for an `and`, the run held), so the miss is the
        innermost block's; no local holds the chain's value."""

        def descend(values: list[py.expr]) -> py.expr:
            fused = self.fuse(n.op, values)
            return not_(fused) if require else fused

        first = self.truth(n.operands[0])
        pending = [] if n.op == "and" and self.is_true(first) else [first]  # a known truth decides nothing
        opened: list[_Indent] = []
        for op in n.operands[1:]:
            body: list[py.stmt] = []
            block = self.branch(body)  # runs only where the operands before it did not decide
            block.__enter__()
            if n.op == "and":
                for p in pending:
                    self.assume(p)
            v = self.truth(op)
            if body:  # statements: the run before them is tested, and they run in its block
                block.outer.append(if_(descend(pending), body))
                opened.append(block)
                pending = []
            else:
                block.__exit__(None, None, None)
            if not (n.op == "and" and self.is_true(v)):
                pending.append(v)
        self.emit(if_(descend(pending), [miss()]))
        for block in reversed(opened):
            block.__exit__(None, None, None)

    # ---- earlier(...) ----------------------------------------------------------------------------------------
    # A group that some `earlier(x)` reads keeps, in locals, the elements it has visited (`h`) and, per `let` x
    # read that way, x's value for each of them (`hv`), appended when an element has passed every check. A
    # value not known to be computed by then is computed there; if that faults, `hf` is set and every
    # `earlier(x)` after it faults, as the closures' would when they compute it at the read.
    def site_values(self, g: CompiledCheck) -> list[py.expr]:
        """A miss's values for enclosing group `g`: its element, then (when it keeps them) its visited ones."""
        local = self.vars[g.check.var or "_"]
        ix = self.indexed.get(local)
        out = [self.element(local) if ix is not None else load(local)]
        if g.visited is not None:
            h = self.visited[id(g.check)][0]
            if ix is not None:  # the positions kept, made into elements for the record
                j = self.fresh("j")
                made = call(ix[2], ix[0], load(j))
                out.append(py.ListComp(made, [py.comprehension(store(j), load(h), [], 0)]))
            else:
                out.append(load(h))
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
        self.visited[id(cc.check)] = (h, values)
        self.emit(assign(h, py.List([], py.Load())))
        for b, (hv, hf) in values.items():
            key = self.membership_key(cc.check, b)
            if key is not None:
                self.kept_keys[hv] = (key, level)
            self.emit(assign(hv, call("set") if key is not None else py.List([], py.Load())))
            self.emit(assign(hf, py.Constant(False)))
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

    def keep_visited(self, cc: CompiledCheck, local: str, kept: tuple[str, dict[int, tuple[str, str]]]) -> None:
        """At the end of an element of group `cc` (every check passed): remember it and its kept let values."""
        h, values = kept
        for b in cc.check.lets:
            if id(b) not in values:
                continue
            hv, hf = values[id(b)]
            kept_key = self.kept_keys.get(hv)
            nullable = self.res.type_of(b.expr.node).nullable
            node = py.Try([], [], [], [])
            with self.branch(node.body):
                v = self.let_value(b)
                if kept_key:
                    self.emit(py.Expr(method(load(hv), "add", self.keyed(kept_key, v, nullable, id(b)))))
                else:
                    self.emit(py.Expr(method(load(hv), "append", v)))
            if len(node.body) == 1 and is_atom(v):  # known computed: a local's read
                self.emit(node.body[0])
                continue
            fault = py.Expr(method(load(hv), "add" if kept_key else "append", py.Constant(None)))
            node.handlers = [py.ExceptHandler(load("Exception"), None, [assign(hf, py.Constant(True)), fault])]
            self.emit(node)
        ix = self.indexed.get(local)
        self.emit(py.Expr(method(load(h), "append", load(ix[1]) if ix is not None else load(local))))

    # ---- actions -------------------------------------------------------------------------------------------
    def action(self, n: ast.Node) -> None:
        """Evaluate one action (phase 1: what it writes where, which may fault) and add its writes to `self.writes`
        (phase 2, emitted by `apply_writes` once every action has been evaluated: the writes cannot fault)."""
        if isinstance(n, ast.ForAction):
            self.for_action(n)
            return
        if isinstance(n, ast.EditAction):
            raise _Declined  # a structural action: the closures run the rule's actions (and ask the edit's check)
        assert isinstance(n, ast.SetAction)
        target = self.atom(self.expr(n.target))
        form = self.res.attr_dicts.get(id(n))
        # a null target faults: where the write's dict is read from it, that read raises (any exception sends the
        # actions to the closures, which give the error); a setter's target is tested here
        if atom_key(target) not in self.nonnull and not (form is not None and form.startswith("{0}.")):
            self.emit(if_(compare(target, "is", py.Constant(None)), [raise_("_F")]))
        self.nonnull.add(atom_key(target))
        if isinstance(n.value, ast.Lit):  # a scalar: _attr_value keeps it as it is
            value = self.const(n.value.value)
        else:
            value = call(self.const(_attr_value), self.expr(n.value))
        if form is not None:  # the dict the setter would write the attribute to (shared by the target's writes)
            where = self.attrs_dict(n.target, target, form) or self.inline(form, [target])
        else:
            where = call(self.const(_Setter), self.const(self.res.setters[id(n)]), target)
        attr = self.const(n.attr)
        constant = isinstance(n.value, ast.Lit)
        if self.action_loops == 0:  # one write: its container and value into locals, written in phase 2
            container = self.atom(where)
            written = value if constant else self.atom(value)
            self.writes.append(py.Assign([py.Subscript(container, attr, py.Store())], written))
            return
        w = self.fresh("w")  # in a loop: each element's write collected, all written in phase 2
        self.write_lists.append(w)
        item = py.Subscript(load("d"), attr, py.Store())
        if constant:
            self.emit(py.Expr(method(load(w), "append", where)))
            self.writes.append(py.For(store("d"), load(w), [py.Assign([item], value)], []))
        else:
            self.emit(py.Expr(method(load(w), "append", tuple_([where, value]))))
            pair = py.Tuple([store("d"), store("v")], py.Store())
            self.writes.append(py.For(pair, load(w), [py.Assign([item], load("v"))], []))

    def for_action(self, n: ast.ForAction) -> None:
        """`for x in coll [where c]: action`: each element's writes collected in lists made before the loop."""
        got = self.indexed_items(n.coll)
        c = got[0] if got is not None else self.atom(self.expr(n.coll))
        level = len(self.scopes)  # an element's scope, as a group's: what repeats in it is computed once
        local, prev = self.bind_var(n.var, level, id(n))
        if got is not None:
            self.bind_indexed(local, got)
        outermost = self.action_loops == 0
        mark, kept = len(self.block), len(self.write_lists)
        self.action_loops += 1
        loop = self.loop_head(c, local)
        with self.loop(loop.body):
            self.open_scope(level)
            if n.where is not None:
                self.emit(if_(not_(self.expr(n.where)), [py.Continue()]))
            self.action(n.body)
        del self.scopes[level:]
        self.action_loops -= 1
        self.unbind(n.var, prev)
        if outermost:  # the lists the loop's writes are collected in, made before it
            self.block[mark:mark] = [assign(w, py.List([], py.Load())) for w in self.write_lists[kept:]]

    def apply_writes(self) -> None:
        """Phase 2 of the actions, when asked to apply (not a dry run): every write, in the actions' order."""
        if self.writes:
            self.emit(if_(load("apply"), list(self.writes)))
