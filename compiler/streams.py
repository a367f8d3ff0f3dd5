"""Stream assignment and the events that order work across streams.

Deterministic, in GE's spirit: engines that own streams (AIcoreEngine, VectorEngine, DNN_HCCL, DSAEngine) each
get a stream of their own, numbered in order of first appearance along the execution order; every other node
follows its first producer's stream (stream 0 without one); subgraph nodes follow their owner. A stream id
already set in the graph file is kept. Every edge that crosses streams, data or control, gets an event:
EVENT_RECORD after the producer on its stream, EVENT_WAIT before the consumer on its stream (one event per
producer and consuming stream, waited for by the first successor there: stream order covers the later ones);
values that exist before the model runs (graph inputs, weights, variables) need none. Streams and these events
are all the runtime orders by, so the memory planner and the verifier read happens-before from them alone. With
`single_stream` everything runs on stream 0 and no event is needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ir import ComputeGraph, Node

STREAM_OWNING_ENGINES = ("AIcoreEngine", "VectorEngine", "DNN_HCCL", "DSAEngine")
# Their values exist before the model runs (inputs bound, weights loaded): reading them needs no event.
READY_BEFORE_RUN = frozenset({"Data", "RefData", "AippData", "Const", "Constant", "Variable"})


@dataclass(frozen=True)
class Event:
    """An event: recorded after `producer` on its stream, waited for before `consumer` on its stream."""

    id: int
    producer: Node
    consumer: Node

    @property
    def record_stream(self) -> int:
        """The stream the event is recorded on."""
        return self.producer.op.stream_id

    @property
    def wait_stream(self) -> int:
        """The stream that waits for it."""
        return self.consumer.op.stream_id


@dataclass
class StreamPlan:
    """Stream ids (set on the nodes' op descs), the events between streams, and per-stream node counts."""

    stream_count: int
    events: list[Event] = field(default_factory=list)
    engine_streams: dict[str, int] = field(default_factory=dict)

    def event_pairs(self) -> list[tuple[Node, Node]]:
        """(producer, consumer) of every event, for the memory planner's happens-before."""
        return [(e.producer, e.consumer) for e in self.events]


def _successors(n: Node) -> list[Node]:
    """The nodes an edge orders after `n`: its data consumers and its control successors."""
    out = [a.node for peers in n.out_peers for a in peers]
    out.extend(n.control_out)
    return out


def assign_streams(graph: ComputeGraph, *, single_stream: bool = False) -> StreamPlan:
    """Give every node of `graph` (and its subgraphs) a stream and create the cross-stream events."""
    nodes = graph.all_nodes()
    plan = StreamPlan(1)
    used: set[int] = set()
    for n in nodes:
        if single_stream:
            n.op.stream_id = 0
        elif n.op.stream_id >= 0:
            used.add(n.op.stream_id)
    if not single_stream:
        next_id = 0

        def fresh() -> int:
            nonlocal next_id
            while next_id in used:
                next_id += 1
            used.add(next_id)
            return next_id

        for n in nodes:
            if n.op.stream_id >= 0:
                continue
            owner = n.graph.parent_node
            if owner is not None:
                n.op.stream_id = max(owner.op.stream_id, 0)
            elif n.op.engine in STREAM_OWNING_ENGINES:
                if n.op.engine not in plan.engine_streams:
                    plan.engine_streams[n.op.engine] = fresh()
                n.op.stream_id = plan.engine_streams[n.op.engine]
            else:
                producer = next((p.node for p in n.in_peers if p is not None), None)
                if producer is not None and producer.op.stream_id >= 0:
                    n.op.stream_id = producer.op.stream_id
                else:
                    n.op.stream_id = min(used) if used else fresh()
    plan.stream_count = max((n.op.stream_id for n in nodes), default=0) + 1
    step = {id(n): i for i, n in enumerate(nodes)}
    for n in nodes:
        if n.op.type in READY_BEFORE_RUN and n.graph.is_root:
            continue
        first_on: dict[int, Node] = {}  # per consuming stream, the consumer that runs first
        for c in _successors(n):
            s = c.op.stream_id
            if s != n.op.stream_id and id(c) in step and (s not in first_on or step[id(c)] < step[id(first_on[s])]):
                first_on[s] = c
        for s in sorted(first_on):
            plan.events.append(Event(len(plan.events), n, first_on[s]))
    return plan
