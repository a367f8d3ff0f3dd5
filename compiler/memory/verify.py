"""An independent proof that a memory plan is safe; it shares no layout code with the planner.

Given a graph and a plan it checks, from the graph's attributes alone:
1. every output tensor has a placement inside its arena whose size covers the tensor's bytes;
2. every layout contract holds: an alias sits exactly where its source is (Reshape, pass-through, reference,
   reuse-input, subgraph inputs/outputs); a zero-copy concat/pack's inputs sit back to back at input 0 + the
   raw sizes before them with the output at input 0; a zero-copy split's outputs likewise; padded continuous
   inputs sit in 512-aligned strides;
3. no two tensors that may be live at the same time on the same memory type overlap, unless a contract ties
   them together; across streams, a block is reused only if every use of the old tenant happens before the new
   tenant is written, by stream order and events alone (what the runtime enforces; graph edges are not).
Every violation names both tensors and the steps where they clash.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import formats
from ..facts import attr_bool, attr_int, attr_ints, is_subgraph_input, ref_input_index
from ..ir import ATTR_PARENT_NODE_INDEX, ComputeGraph, Node, OutAnchor
from ..streams import READY_BEFORE_RUN
from .assign import MemoryPlan
from .io_offsets import BASIC, RELATIVE

STRIDE = 512


@dataclass(frozen=True)
class Violation:
    """One way a plan is unsafe."""

    kind: str
    message: str
    tensors: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def _tid(out: OutAnchor) -> str:
    return f"{out.node.name}:{out.index}"


class _Groups:
    """Union-find over tensors tied by a contract, with which tensor's bytes lie within which."""

    def __init__(self) -> None:
        self.up: dict[str, str] = {}
        self.within: dict[str, set[str]] = {}

    def inside(self, inner: str, outer: str) -> None:
        """`inner`'s bytes lie within `outer`'s."""
        self.within.setdefault(inner, set()).add(outer)

    def nested(self, a: str, b: str) -> bool:
        """Whether one of a, b lies within the other, through any chain of contracts."""
        for x, y in ((a, b), (b, a)):
            seen, todo = {x}, [x]
            while todo:
                z = todo.pop()
                if z == y:
                    return True
                for w in self.within.get(z, ()):
                    if w not in seen:
                        seen.add(w)
                        todo.append(w)
        return False

    def root(self, x: str) -> str:
        self.up.setdefault(x, x)
        while self.up[x] != x:
            self.up[x] = self.up[self.up[x]]
            x = self.up[x]
        return x

    def join(self, a: str, b: str) -> None:
        ra, rb = self.root(a), self.root(b)
        if ra != rb:
            self.up[max(ra, rb)] = min(ra, rb)


class _Contracts:
    """The layout contracts of the graph's nodes: each checked against the plan (a violation when it is broken)
    and recorded in the groups (which tensors are tied, which lie within which)."""

    def __init__(self, plan: MemoryPlan, out: list[Violation], groups: _Groups) -> None:
        self.t = plan.tensors
        self.out = out
        self.groups = groups

    def need(self, a: str, b: str, delta: int, what: str, *, a_in_b: bool = True, b_in_a: bool = True) -> None:
        """Tensor `a` must sit at tensor `b` + `delta` in the same arena."""
        groups, t = self.groups, self.t
        groups.join(a, b)
        if a_in_b:
            groups.inside(a, b)
        if b_in_a:
            groups.inside(b, a)
        if a in t and b in t:
            ta, tb = t[a], t[b]
            if (ta.region, ta.mem_type) != (tb.region, tb.mem_type) or ta.offset != tb.offset + delta:
                self.out.append(
                    Violation(
                        "layout",
                        f"{what}: {a} must be at {b} + {delta} = "
                        f"{tb.region}@{tb.offset + delta}, but it is at {ta.region}@{ta.offset}",
                        (a, b),
                    )
                )

    def node(self, node: Node) -> None:
        """Every contract `node` makes: on its outputs (split, subgraph input, reuse), as a subgraph's NetOutput,
        and on its inputs (zero-copy concat/pack, padded continuous input)."""
        ins = node.in_peers
        nopad_out = attr_bool(node, "_no_padding_continuous_output") and attr_bool(node, "_output_reuse_input")
        nopad_in = (
            attr_bool(node, "_no_padding_continuous_input") and attr_bool(node, "_output_reuse_input") and len(ins) > 1
        )
        if nopad_out and ins and ins[0] is not None:
            self._split(node, _tid(ins[0]))
        elif is_subgraph_input(node):
            self._subgraph_input(node)
        else:
            self._reuses(node)
        if node.op.type == "NetOutput" and node.graph.parent_node is not None:
            self._subgraph_output(node, node.graph.parent_node)
        if nopad_in and ins[0] is not None:
            self._nopad_inputs(node, _tid(ins[0]))
        elif attr_bool(node, "continuous_input") and len(ins) > 1 and not nopad_in:
            self._continuous_inputs(node)

    def _split(self, node: Node, source: str) -> None:
        """A zero-copy split: its outputs back to back inside its input."""
        pos = 0
        for o in node.out_anchors:
            self.need(_tid(o), source, pos, f"zero-copy split {node.name} output {o.index}", b_in_a=False)
            pos += formats.tensor_raw_size(o.desc.shape, o.desc.dtype)

    def _subgraph_input(self, node: Node) -> None:
        """A subgraph's input node: its outputs at the parent's input."""
        parent = node.graph.parent_node
        p = attr_int(node, ATTR_PARENT_NODE_INDEX, -1)
        if parent is not None and 0 <= p < len(parent.in_peers) and parent.in_peers[p] is not None:
            src = parent.in_peers[p]
            assert src is not None
            for o in node.out_anchors:
                self.need(_tid(o), _tid(src), 0, f"subgraph input {node.name}")

    def _reuses(self, node: Node) -> None:
        """Each output reusing an input (Reshape, pass-through, reference, reuse-input): at that input."""
        ins = node.in_peers
        for o in node.out_anchors:
            k = ref_input_index(o)
            if 0 <= k < len(ins) and ins[k] is not None:
                src = ins[k]
                assert src is not None
                self.need(_tid(o), _tid(src), 0, f"{node.name} output {o.index} reuses input {k}")

    def _subgraph_output(self, node: Node, parent: Node) -> None:
        """A subgraph's NetOutput: the parent's output p at the input carrying `_parent_node_index` p."""
        for k, src in enumerate(node.in_peers):
            p = attr_int(node.op.input_descs[k], ATTR_PARENT_NODE_INDEX, -1)
            if src is not None and 0 <= p < len(parent.out_peers):
                self.need(f"{parent.name}:{p}", _tid(src), 0, f"subgraph output {p} of {parent.name}")

    def _nopad_inputs(self, node: Node, first: str) -> None:
        """A zero-copy concat/pack: its inputs back to back from input 0, its output at input 0."""
        outs = node.out_anchors
        pos = 0
        for k, src in enumerate(node.in_peers):
            d = node.op.input_descs[k]
            if src is not None:
                self.need(
                    _tid(src),
                    first,
                    pos,
                    f"zero-copy {node.type} {node.name} input {k}",
                    a_in_b=False,
                    b_in_a=False,
                )
                if outs:
                    self.groups.inside(_tid(src), _tid(outs[0]))
            pos += formats.tensor_raw_size(d.shape, d.dtype)
        if outs:
            self.need(_tid(outs[0]), first, 0, f"zero-copy {node.type} {node.name} output", a_in_b=False)

    def _continuous_inputs(self, node: Node) -> None:
        """Padded continuous inputs: each at the previous one's end rounded up to the 512-byte stride."""
        srcs = [s for s in node.in_peers if s is not None]
        for a, b in itertools.pairwise(srcs):
            ta, tb = self.t.get(_tid(a)), self.t.get(_tid(b))
            self.groups.join(_tid(a), _tid(b))
            if ta is not None and tb is not None:
                want = ta.offset + (ta.size + STRIDE - 1) // STRIDE * STRIDE
                if tb.offset != want or tb.offset % STRIDE or (tb.region, tb.mem_type) != (ta.region, ta.mem_type):
                    self.out.append(
                        Violation(
                            "layout",
                            f"continuous input of {node.name}: {_tid(b)} must follow "
                            f"{_tid(a)} at offset {want}, but it is at {tb.offset}",
                            (_tid(b), _tid(a)),
                        )
                    )


def _happens_before(nodes: list[Node], events: Sequence[tuple[Node, Node]]) -> Callable[[int, int], bool] | None:
    """`before(u, p)`: whether step u happens before step p (None for a single stream: then step order does).

    Read from what the runtime enforces and nothing else: stream order and events. A data or control edge across
    streams with no event orders nothing at run time, so a plan relying on it is reported. Per node, the
    earliest position reachable on each stream (streams run their nodes in order, so reaching a node reaches
    every later one on its stream): O(nodes x streams), not a bitset per node. Graph inputs, weights and
    variables run nothing and sit on no stream.
    """
    index = {id(n): i for i, n in enumerate(nodes)}
    runs = [not (n.op.type in READY_BEFORE_RUN and n.graph.is_root) for n in nodes]

    def stream_of(n: Node) -> int:
        if n.op.stream_id < 0 and n.graph.parent_node is not None:
            return max(n.graph.parent_node.op.stream_id, 0)
        return max(n.op.stream_id, 0)

    streams = sorted({stream_of(n) for n, r in zip(nodes, runs, strict=True) if r})
    if len(streams) <= 1:
        return None
    col = {s: k for k, s in enumerate(streams)}
    succ: list[set[int]] = [set() for _ in nodes]
    last: dict[int, int] = {}
    position = [-1] * len(nodes)
    count = dict.fromkeys(streams, 0)
    for i, n in enumerate(nodes):
        if runs[i]:
            s = stream_of(n)
            if s in last:
                succ[last[s]].add(i)
            last[s] = i
            position[i] = count[s]
            count[s] += 1
    for a, b in events:
        succ[index[id(a)]].add(index[id(b)])
    never = len(nodes)
    earliest = [[never] * len(streams) for _ in nodes]
    for i in range(len(nodes) - 1, -1, -1):
        row = earliest[i]
        if runs[i]:
            row[col[stream_of(nodes[i])]] = position[i]
        for j in succ[i]:
            other = earliest[j]
            for k, v in enumerate(other):
                if v < row[k]:
                    row[k] = v

    def before(u: int, p: int) -> bool:
        if not runs[p]:
            return True  # its value exists before the run
        return u == p or earliest[u][col[stream_of(nodes[p])]] <= position[p]

    return before


def verify_plan(graph: ComputeGraph, plan: MemoryPlan, *, events: Sequence[tuple[Node, Node]] = ()) -> list[Violation]:
    """Every way `plan` is unsafe for `graph` (empty when it is safe)."""
    nodes = graph.all_nodes()
    out: list[Violation] = []
    # 1. coverage
    producers = _check_coverage(nodes, plan, out)
    # 2. contracts
    groups = _Groups()
    contracts = _Contracts(plan, out, groups)
    for node in nodes:
        contracts.node(node)
    # 2b. inside a group, tensors share bytes only when one lies within the other
    _check_groups(plan, producers, groups, out)
    # 3. no overlap between groups that may be live together
    before = _happens_before(nodes, events)
    lives = _Lives()
    for items in _tenants(nodes, plan, producers, groups, lives).values():
        _check_arena(items, lives, before, out)
    # 4. the zero-copy offsets of model outputs (SetInputOutputOffsetPass)
    _check_zero_copy_offsets(graph, plan, out)
    return out


def _check_coverage(nodes: list[Node], plan: MemoryPlan, out: list[Violation]) -> dict[str, Node]:
    """Every output tensor has a placement inside its arena covering its bytes; returns each tensor's producer."""
    arena = {(a.region, a.mem_type): a.size for a in plan.arenas}
    producers: dict[str, Node] = {}
    for n in nodes:
        for o in n.out_anchors:
            tid = _tid(o)
            producers[tid] = n
            p = plan.tensors.get(tid)
            raw = formats.tensor_raw_size(o.desc.shape, o.desc.dtype)
            if p is None:
                out.append(Violation("missing", f"output {tid} has no placement", (tid,)))
            elif p.size < raw or p.offset < 0 or p.offset + p.size > arena.get((p.region, p.mem_type), -1):
                out.append(
                    Violation(
                        "size",
                        f"{tid} needs {raw} bytes; it has [{p.offset}, {p.offset + p.size}) in "
                        f"{p.region} arena of {arena.get((p.region, p.mem_type), 0)} bytes",
                        (tid,),
                    )
                )
    return producers


def _check_groups(plan: MemoryPlan, producers: dict[str, Node], groups: _Groups, out: list[Violation]) -> None:
    """Inside a layout group, two tensors share bytes only when one lies within the other."""
    members: dict[str, list[tuple[int, int, str]]] = {}
    for tid, placed in plan.tensors.items():
        maker = producers.get(tid)
        if maker is not None:
            o = maker.out_anchor(int(tid.rsplit(":", 1)[1]))
            raw = formats.tensor_raw_size(o.desc.shape, o.desc.dtype)
            if raw > 0:
                members.setdefault(groups.root(tid), []).append((placed.offset, placed.offset + raw, tid))
    for group in members.values():
        group.sort()
        active: list[tuple[int, int, str]] = []
        for lo, hi, tid in group:
            active = [m for m in active if m[1] > lo]
            for _, _, other in active:
                if not groups.nested(tid, other):
                    out.append(
                        Violation(
                            "overlap",
                            f"{other} and {tid} share bytes in one layout group though neither lies within the other",
                            (other, tid),
                        )
                    )
            active.append((lo, hi, tid))


@dataclass
class _Lives:
    """Per layout group (by its root) or workspace: its [first step, last step], the steps that use it and the
    steps that write it."""

    span: dict[str, list[int]] = field(default_factory=dict)
    uses: dict[str, set[int]] = field(default_factory=dict)
    prods: dict[str, set[int]] = field(default_factory=dict)


# a tenant of an arena: (its group's first step, offset, end, group, tensor)
_Tenant = tuple[int, int, int, str, str]


def _tenants(
    nodes: list[Node], plan: MemoryPlan, producers: dict[str, Node], groups: _Groups, lives: _Lives
) -> dict[tuple[str, int], list[_Tenant]]:
    """The tenants of each arena (tensors, then workspaces), with each group's life recorded in `lives`."""
    step = {id(n): i for i, n in enumerate(nodes)}
    last_step = len(nodes) - 1
    for tid in plan.tensors:
        producer = producers.get(tid)
        if producer is None:
            continue
        g = groups.root(tid)
        s = step[id(producer)]
        o = producer.out_anchor(int(tid.rsplit(":", 1)[1]))
        uses = {step[id(a.node)] for a in o.consumers if id(a.node) in step}
        if any(a.node.type == "NetOutput" and a.node.graph.is_root for a in o.consumers):
            uses.add(last_step)
        uses.add(s)
        span = lives.span.setdefault(g, [s, s])
        span[0], span[1] = min(span[0], s), max(span[1], max(uses))
        lives.uses.setdefault(g, set()).update(uses)
        lives.prods.setdefault(g, set()).add(s)
    by_arena: dict[tuple[str, int], list[_Tenant]] = {}
    for tid, p in plan.tensors.items():
        if tid in producers:
            g = groups.root(tid)
            by_arena.setdefault((p.region, p.mem_type), []).append(
                (lives.span[g][0], p.offset, p.offset + p.size, g, tid)
            )
    for w in plan.workspaces:
        wid = f"{w.node}#ws{w.index}"
        lives.span[wid] = [w.step, w.step]
        lives.uses[wid] = {w.step}
        lives.prods[wid] = {w.step}
        by_arena.setdefault(("feature_map", w.mem_type), []).append((w.step, w.offset, w.offset + w.size, wid, wid))
    return by_arena


def _check_arena(
    items: list[_Tenant], lives: _Lives, before: Callable[[int, int], bool] | None, out: list[Violation]
) -> None:
    """No two tenants of one arena from different groups share bytes while both may be live: their spans meet,
    or (across streams) some use of the old one is not ordered before a write of the new one."""
    items.sort()
    starts: list[int] = []  # segment starts
    segs: list[tuple[int, int, str, str]] = []  # (start, end, group, tensor): the latest tenant of each byte range
    for _first, lo, hi, g, tid in items:
        if hi <= lo:
            continue
        k0 = max(bisect.bisect_right(starts, lo) - 1, 0)
        if k0 < len(segs) and segs[k0][1] <= lo:
            k0 += 1
        k1 = bisect.bisect_left(starts, hi)
        hit = segs[k0:k1]
        for _, _, og, otid in hit:
            if og == g:
                continue
            a, b = lives.span[og], lives.span[g]
            clash = a[1] >= b[0] and b[1] >= a[0]
            if not clash and before is not None:
                clash = not all(before(u, pstep) for u in lives.uses[og] for pstep in lives.prods[g])
            if clash:
                out.append(
                    Violation(
                        "overlap",
                        f"{otid} (live over steps {a[0]}..{a[1]}) and {tid} (steps "
                        f"{b[0]}..{b[1]}) share bytes in the same arena"
                        + ("" if a[1] >= b[0] else " and no event orders them"),
                        (otid, tid),
                    )
                )
        # the new tenant takes [lo, hi): keep the parts of the hit segments outside it
        new: list[tuple[int, int, str, str]] = []
        if hit and hit[0][0] < lo:
            new.append((hit[0][0], lo, hit[0][2], hit[0][3]))
        new.append((lo, hi, g, tid))
        if hit and hit[-1][1] > hi:
            new.append((hi, hit[-1][1], hit[-1][2], hit[-1][3]))
        segs[k0:k1] = new
        starts[k0:k1] = [s[0] for s in new]


def _check_zero_copy_offsets(graph: ComputeGraph, plan: MemoryPlan, out: list[Violation]) -> None:
    """The zero-copy offsets a model output carries (SetInputOutputOffsetPass): every (basic, relative) pair names
    a buffer the NetOutput returns (at `basic`) and a planned tensor lying wholly inside it at `relative`, so
    refreshing the output's address moves the part with it; and, when the plan holds its records (in a compile),
    the NetOutput carries exactly those."""
    recorded: dict[str, list[tuple[int, int]]] = {}
    for r in plan.zero_copy:
        recorded.setdefault(r.holder, []).append((r.basic, r.relative))
    at: dict[tuple[str, int], list[str]] | None = None  # (region, offset) -> tensors, built on first need
    for node in graph.direct_nodes():
        if node.type != "NetOutput":
            continue
        basics, relatives = attr_ints(node, BASIC), attr_ints(node, RELATIVE)
        pairs = list(zip(basics, relatives, strict=False))
        want = recorded.get(node.name, [])
        if len(basics) != len(relatives) or (plan.zero_copy and pairs != want):
            out.append(
                Violation("zero-copy-offset", f"{node.name} carries {basics} / {relatives}; the plan records {want}")
            )
            continue
        if not pairs:
            continue
        if at is None:
            at = {}
            for t in plan.tensors.values():
                at.setdefault((t.region, t.offset), []).append(t.anchor)
        buffers = [plan.tensors[_tid(p)] for p in node.in_peers if p is not None and _tid(p) in plan.tensors]
        for basic, rel in pairs:
            whole = next((b for b in buffers if b.offset == basic), None)
            if whole is None:
                out.append(Violation("zero-copy-offset", f"{node.name}: no output buffer at basic offset {basic}"))
                continue
            inside = [
                a
                for a in at.get((whole.region, basic + rel), [])
                if 0 <= rel <= whole.raw_size - plan.tensors[a].raw_size
            ]
            if not inside:
                out.append(
                    Violation(
                        "zero-copy-offset",
                        f"{node.name}: no planned tensor lies at relative offset {rel} inside the output buffer "
                        f"{whole.anchor} [{whole.offset}, {whole.offset + whole.raw_size}) of {whole.region}",
                        (whole.anchor,),
                    )
                )
