"""Structural graph edits the rule language's `insert` and `bypass` actions make (registered in the catalogue).

Each edit has a check, run when the rule's actions are evaluated (a reason why not makes the action fail, with
nothing changed), and an apply, run when the candidate's actions are written, returning one line saying what it
did (the decision record keeps it, `explain` shows it).

- `insert OP before i` puts a new node of type OP on the edge into input anchor `i` (GE's
  GraphUtils::InsertNodeBefore);
- `insert OP after o` puts one new node between output anchor `o` and all its consumers (InsertNodeAfter);
- `bypass n` connects the producer of a node's single input to every consumer of its single output and
  removes the node.

An inserted node's input and output descs are copies of the producer's output desc with its reuse-input flag and
`ref_var_src_var_name` dropped, as GE's MemLayoutConflictUtil::CreateIdentityOpDesc makes them; it cannot be
deleted later (`_cannot_be_deleted`) and gets the engine and kernel library GE's placer gives its type (the
placement pass has run by then). Names are deterministic: `<op>_<index>_<consumer>_<OpType>`, GE's pattern
without its process-wide counter, suffixed when taken.
"""

from __future__ import annotations

from .ir import AttrValue, ComputeGraph, InAnchor, Node, OpDesc, OutAnchor, TensorDesc

# the op types an `insert` may name, with the (engine, kernel library) EnginePlacementPass gives them
INSERTABLE = {
    "Identity": ("AIcoreEngine", "AIcoreEngine"),
    "MemcpyAsync": ("DNN_VM_RTS", "DNN_VM_RTS_OP_STORE"),
}
_DROPPED_DESC_ATTRS = ("reuse_input", "ref_var_src_var_name")


def _fresh_name(graph: ComputeGraph, base: str) -> str:
    name, k = base, 1
    while name in graph:
        k += 1
        name = f"{base}_{k}"
    return name


def _new_node(graph: ComputeGraph, op_type: str, base: str, src: OutAnchor) -> Node:
    desc: TensorDesc = src.desc.copy()
    for a in _DROPPED_DESC_ATTRS:
        desc.attrs.pop(a, None)
    engine, lib = INSERTABLE[op_type]
    attrs: dict[str, AttrValue] = {"_cannot_be_deleted": True}
    op = OpDesc(_fresh_name(graph, base), op_type, attrs, [desc], [desc.copy()], engine=engine, kernel_lib=lib)
    return graph.add_node(op)


def why_not_insert_before(anchor: InAnchor, op_type: str) -> str | None:
    """Why `insert op_type before anchor` cannot be done (None: it can)."""
    if op_type not in INSERTABLE:
        return f"'{op_type}' is not an op type an insert can make (known: {', '.join(sorted(INSERTABLE))})"
    if anchor.peer is None:
        return f"input {anchor.index} of {anchor.node.name} has no producer: there is no edge to insert on"
    return None


def insert_before(anchor: InAnchor, op_type: str, _: object = None) -> str:
    """Put a new `op_type` node on the edge into `anchor`; returns what was done."""
    dst, k = anchor.node, anchor.index
    graph = dst.graph
    src = graph.remove_data_edge(dst, k)
    new = _new_node(graph, op_type, f"{src.node.name}_{k}_{dst.name}_{op_type}", src)
    graph.add_data_edge(src.node, src.index, new, 0)
    graph.add_data_edge(new, 0, dst, k)
    return f"inserted {op_type} '{new.name}' between {src} and input {k} of {dst.name}"


def why_not_insert_after(anchor: OutAnchor, op_type: str) -> str | None:
    """Why `insert op_type after anchor` cannot be done (None: it can)."""
    if op_type not in INSERTABLE:
        return f"'{op_type}' is not an op type an insert can make (known: {', '.join(sorted(INSERTABLE))})"
    if not anchor.consumers:
        return f"output {anchor} feeds nothing: there is no edge to insert on"
    return None


def insert_after(anchor: OutAnchor, op_type: str, _: object = None) -> str:
    """Put one new `op_type` node between `anchor` and all its consumers; returns what was done."""
    graph = anchor.node.graph
    consumers = list(anchor.consumers)
    first = consumers[0]
    base = f"{anchor.node.name}_{first.index}_{first.node.name}_{op_type}"
    new = _new_node(graph, op_type, base, anchor)
    for c in consumers:
        graph.remove_data_edge(c.node, c.index)
        graph.add_data_edge(new, 0, c.node, c.index)
    graph.add_data_edge(anchor.node, anchor.index, new, 0)
    return f"inserted {op_type} '{new.name}' between {anchor} and its {len(consumers)} consumer(s)"


def why_not_bypass(node: Node, _: str = "") -> str | None:
    """Why `bypass node` cannot be done (None: it can)."""
    if len(node.in_peers) != 1 or len(node.out_peers) != 1:
        return (
            f"{node.name} has {len(node.in_peers)} input(s) and {len(node.out_peers)} output(s); bypass needs 1 and 1"
        )
    if node.in_peers[0] is None:
        return f"input 0 of {node.name} has no producer to connect its consumers to"
    if node.op.subgraph_names:
        return f"{node.name} owns subgraphs"
    if node.control_in or node.control_out:
        return f"{node.name} has control edges"
    if node.op.attrs.get("_cannot_be_deleted") is True:
        return f"{node.name} is marked _cannot_be_deleted"
    return None


def bypass(node: Node, _: str = "", __: object = None) -> str:
    """Connect `node`'s producer to its consumers and remove it; returns what was done."""
    graph = node.graph
    src = graph.remove_data_edge(node, 0)
    consumers = list(node.out_peers[0])
    for c in consumers:
        graph.remove_data_edge(c.node, c.index)
        graph.add_data_edge(src.node, src.index, c.node, c.index)
    graph.remove_node(node)
    return f"bypassed {node.name} ({node.type}): {src} now feeds its {len(consumers)} consumer(s)"
