"""GE's SetInputOutputOffsetPass (compiler/graph/passes/memory_conflict/set_input_output_offset_pass.cc), run on
the planned offsets: where a zero-copy op's layout makes several planned tensors parts of a model output, the
runtime must refresh each part's address when the user's output buffer replaces the planned one. GE records, on
the NetOutput, one `_zero_copy_basic_offset` (the planned offset of the buffer replaced) and one
`_zero_copy_relative_offset` (where the part lies in it) per part.

Which nodes take part is GE's InputOutputConnectionIdentifyPass's marking (input_output_connection_identify_pass.cc):
`_is_connected_to_netoutput` lists a node's outputs that share memory (one symbol: an output and those reusing it)
with a model output or a user input, `_is_connected_to_data` its inputs that do (`connections`). Then, for a
node whose outputs are so connected:

- **SetOutputOffsetForConcat**: a no-task node with `continuous_input`, or under buffer fusion (every producer
  carries `_output_offset_for_buffer_fusion`), gives the NetOutput it feeds (its first consumer when none is a
  NetOutput) basic = its output offset and, per input, relative = the producer's output offset - basic.
- **SetOutputOffsetForHcom**: a `continuous_output` node gives the NetOutput reading its first connected output
  basic = that output's offset and, per consumer of any output (a NetOutput only on that output), relative = the
  consumer's input offset - basic.

GE's two input cases record nothing here: SetInputOffsetForHcom only where a Data's output offset differs from
the continuous-input node's input offset (a node's input offset is its producer's output offset in this plan),
and SetInputOffsetForFusion only for L1/UB inputs (not planned here).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..facts import attr_bool, ref_chain
from ..ir import ComputeGraph, Node, OutAnchor

BASIC = "_zero_copy_basic_offset"
RELATIVE = "_zero_copy_relative_offset"
BUFFER_FUSION = "_output_offset_for_buffer_fusion"
USER_INPUT_TYPES = ("Data", "RefData", "AippData", "AnnData", "QueueData")


@dataclass(frozen=True)
class ZeroCopyOffset:
    """One part of a model output: the NetOutput that records it, the planned offset of the output buffer
    (`basic`), where the part lies in it (`relative`), the part's tensor and the op whose layout made it a part."""

    holder: str
    basic: int
    relative: int
    tensor: str
    by: str

    def to_json(self) -> dict[str, object]:
        """The record as plain data."""
        return {
            "holder": self.holder,
            "basic": self.basic,
            "relative": self.relative,
            "tensor": self.tensor,
            "by": self.by,
        }


def _tid(out: OutAnchor) -> str:
    return f"{out.node.name}:{out.index}"


def connections(graph: ComputeGraph) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """InputOutputConnectionIdentifyPass on the root graph: per node, the inputs and the outputs sharing memory
    (a symbol) with a user input's output or a model output's input, in node then anchor order."""
    nodes = graph.topological_order()
    members: dict[tuple[str, int], list[OutAnchor]] = {}  # symbol (its root output) -> its outputs
    root_of: dict[tuple[str, int], tuple[str, int]] = {}
    for n in nodes:
        for o in n.out_anchors:
            r = ref_chain(o)[-1]
            key = (r.node.name, r.index)
            root_of[(n.name, o.index)] = key
            members.setdefault(key, []).append(o)
    connected: list[tuple[str, int]] = []
    for n in nodes:
        if n.type in USER_INPUT_TYPES:
            connected += [root_of[(n.name, o.index)] for o in n.out_anchors]
        elif n.type == "NetOutput":
            connected += [root_of[(p.node.name, p.index)] for p in n.in_peers if p is not None]
    ins: dict[str, list[int]] = {}
    outs: dict[str, list[int]] = {}
    for key in dict.fromkeys(connected):
        for o in members[key]:
            outs.setdefault(o.node.name, []).append(o.index)
            for c in o.consumers:
                ins.setdefault(c.node.name, []).append(c.index)
    return ins, outs


def _buffer_fusion(node: Node) -> bool:
    """GE's CheckBufferFusion: every input producer carries `_output_offset_for_buffer_fusion`."""
    return all(p is None or BUFFER_FUSION in p.node.op.attrs for p in node.in_peers)


def _concat_offsets(node: Node, offset: dict[str, int]) -> list[ZeroCopyOffset]:
    consumers = node.out_data_nodes()
    if not consumers:
        return []
    holder = next((c for c in consumers if c.type == "NetOutput"), consumers[0])
    basic = offset[f"{node.name}:0"]
    return [
        ZeroCopyOffset(holder.name, basic, offset[_tid(p)] - basic, _tid(p), node.name)
        for p in node.in_peers
        if p is not None
    ]


def _hcom_offsets(node: Node, first: int, offset: dict[str, int]) -> list[ZeroCopyOffset]:
    if not 0 <= first < len(node.out_peers):
        return []
    holder = next((c.node for c in node.out_peers[first] if c.node.type == "NetOutput"), None)
    if holder is None:
        return []
    basic = offset[f"{node.name}:{first}"]
    out: list[ZeroCopyOffset] = []
    for o in node.out_anchors:
        for c in o.consumers:
            if c.node.type == "NetOutput" and o.index != first:
                continue
            out.append(ZeroCopyOffset(holder.name, basic, offset[_tid(o)] - basic, _tid(o), node.name))
    return out


def zero_copy_offsets(graph: ComputeGraph, offset: dict[str, int]) -> list[ZeroCopyOffset]:
    """SetInputOutputOffsetPass over the root graph's own nodes, given every tensor's planned offset; sets GE's
    offset lists on each NetOutput recorded. (The connection lists are computed, not stored: they would be in
    every model file and nothing reads them after this.)"""
    nodes = graph.topological_order()
    concat = {
        id(n) for n in nodes if attr_bool(n, "_no_task") and (attr_bool(n, "continuous_input") or _buffer_fusion(n))
    }
    hcom = {id(n) for n in nodes if attr_bool(n, "continuous_output")}
    records: list[ZeroCopyOffset] = []
    if concat or hcom:  # most graphs have neither: no symbol is looked up
        _, outs = connections(graph)
        for n in nodes:
            connect_output = outs.get(n.name)
            if connect_output and id(n) in concat:
                records += _concat_offsets(n, offset)
            if connect_output and id(n) in hcom:
                records += _hcom_offsets(n, connect_output[0], offset)
    _record(nodes, records)
    return records


def _record(nodes: Iterable[Node], records: Iterable[ZeroCopyOffset]) -> None:
    """GE's attribute lists on every NetOutput (cleared where there are none, so a second plan replaces them)."""
    by_holder: dict[str, list[ZeroCopyOffset]] = {}
    for r in records:
        by_holder.setdefault(r.holder, []).append(r)
    for n in nodes:
        got = by_holder.get(n.name)
        if got:
            n.op.attrs[BASIC] = [r.basic for r in got]
            n.op.attrs[RELATIVE] = [r.relative for r in got]
        else:
            n.op.attrs.pop(BASIC, None)
            n.op.attrs.pop(RELATIVE, None)
