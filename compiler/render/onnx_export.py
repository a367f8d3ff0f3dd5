"""The marked graph as an ONNX file for Netron: each GE op a node of domain `ge`, with what rulepass decided
as attributes (`rulepass_decisions`, `rulepass_virtual`, `rulepass_zero_copy`, `rulepass_stream`,
`rulepass_events`, `rulepass_control_in`), and each tensor's dtype and shape as value info.

The file is for looking at, not for running (GE op types are no ONNX operators). Needs `onnx`
(`pip install 'rulepass[onnx]'`); the bytes are protobuf's deterministic serialisation.
"""

from __future__ import annotations

from typing import Any

from ..ir import Node
from ..onnx_import import ONNX_DTYPES, need_onnx
from .dot import decision_lines
from .view import CompileView

__all__ = ["onnx_bytes"]

DOMAIN = "ge"
_ELEM_TYPES = {name: code for code, name in ONNX_DTYPES.items()}


def _tensor(n: Node, index: int) -> str:
    return f"{n.name}:{index}"


def _attributes(view: CompileView, n: Node, facts: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {"rulepass_type": n.type, "rulepass_engine": n.op.engine or "-"}
    if n.op.stream_id >= 0:
        attrs["rulepass_stream"] = n.op.stream_id
    if n.op.attrs.get("_no_task") is True:
        attrs["rulepass_virtual"] = 1
    group = facts["groups"].get(n.name)
    if group is not None:
        attrs["rulepass_zero_copy"] = [f"{m.role}: {m.tensor} at +{m.offset} ({m.size} B)" for m in group.members]
    decided = facts["decided"].get((n.graph.name, n.name), [])
    if decided:
        attrs["rulepass_decisions"] = ["\n".join(decision_lines(d, u)) for d, u in decided]
    events = facts["events"].get(n.name, [])
    if events:
        attrs["rulepass_events"] = events
    if n.control_in:
        attrs["rulepass_control_in"] = [c.name for c in n.control_in]
    if not n.graph.is_root:
        owner = n.graph.parent_node
        attrs["rulepass_subgraph"] = f"{n.graph.name} of {owner.name if owner is not None else '?'}"
    return attrs


def onnx_bytes(view: CompileView) -> bytes:
    """The view's graph as ONNX bytes, the decisions as node attributes (Netron shows them per node)."""
    onnx = need_onnx("the ONNX export")
    helper = onnx.helper
    events: dict[str, list[str]] = {}
    for e in view.events:
        events.setdefault(e.producer, []).append(f"records event {e.id} on stream {e.record_stream} for {e.consumer}")
        events.setdefault(e.consumer, []).append(f"waits for event {e.id} on stream {e.wait_stream} from {e.producer}")
    facts = {
        "groups": {g.node: g for g in view.zero_copy_groups()},
        "decided": view.decisions_by_node(),
        "events": events,
    }
    nodes, infos = [], []
    for n in view.graph.all_nodes():
        inputs = [_tensor(p.node, p.index) if (p := a.peer) is not None else "" for a in n.in_anchors]
        while inputs and not inputs[-1]:
            inputs.pop()
        outputs = [_tensor(n, o.index) for o in n.out_anchors]
        nodes.append(
            helper.make_node(n.type, inputs, outputs, name=n.name, domain=DOMAIN, **_attributes(view, n, facts))
        )
        for o in n.out_anchors:
            d = o.desc
            elem = _ELEM_TYPES.get(d.dtype, onnx.TensorProto.UNDEFINED)
            infos.append(helper.make_tensor_value_info(_tensor(n, o.index), elem, [int(x) for x in d.shape]))
    graph = helper.make_graph(nodes, view.graph.name, [], [], value_info=infos)
    model = helper.make_model(graph, producer_name="rulepass", opset_imports=[helper.make_opsetid(DOMAIN, 1)])
    return bytes(model.SerializeToString(deterministic=True))
