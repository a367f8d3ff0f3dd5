"""The model file: GE's ModelTaskDef as JSON, tasks with symbolic addresses and the table that binds them.

Tasks name their addresses symbolically ("output 0 of node X", "input 2 of the model"); `addresses` binds each
to a (region, memory type, offset, size) of the memory plan, so a runtime can rebind a user's input buffer or
relocate an arena without regenerating a task (the seed's §7.3 improvement). Everything is deterministic: the
same graph and options give the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from .graph_file import gc_paused, graph_to_data
from .ir import ComputeGraph
from .memory.assign import MemoryPlan
from .streams import StreamPlan
from .tasks import TaskResult, bind_addresses

MODEL_VERSION = 1
SCHEMA_URL = "https://rulepass.dev/schemas/model.schema.json"


def build_model(graph: ComputeGraph, plan: MemoryPlan, streams: StreamPlan, tasks: TaskResult) -> dict[str, Any]:
    """The model as plain data (see compiler/model.schema.json)."""
    memory_size = {f"{a.region}:{a.mem_type}": a.size for a in plan.arenas}
    return {
        "$schema": SCHEMA_URL,
        "model_def": {
            "version": MODEL_VERSION,
            "name": graph.name,
            "stream_num": streams.stream_count,
            "event_num": len(streams.events),
            "memory_size": plan.total("feature_map"),
            "weight_size": plan.total("weight"),
            "memory_sizes": memory_size,
            "task": [t.to_json() for t in tasks.tasks],
        },
        "addresses": bind_addresses(tasks.tasks, plan),
        "events": [
            {
                "id": e.id,
                "record_stream": e.record_stream,
                "wait_stream": e.wait_stream,
                "producer": e.producer.name,
                "consumer": e.consumer.name,
            }
            for e in streams.events
        ],
        "streams": {n.name: n.op.stream_id for n in graph.all_nodes()},
        "memory_plan": plan.to_json(),
        "graph": graph_to_data(graph),  # GE's ModelTaskDef.op: the marked graph, every op desc and edge
    }


def dump_model(model: dict[str, Any]) -> str:
    """Deterministic JSON text of a model (compact: the C encoder; `python -m json.tool` pretty-prints it)."""
    with gc_paused():  # the encoder allocates a string per value: collections would walk the whole heap for nothing
        return json.dumps(model, separators=(",", ":"), sort_keys=False) + "\n"
