"""The model file: GE's ModelTaskDef as JSON, tasks with symbolic addresses and the table that binds them.

Tasks name their addresses symbolically ("output 0 of node X", "input 2 of the model"); `addresses` binds each
to a (region, memory type, offset, size) of the memory plan, so a runtime can rebind a user's input buffer or
relocate an arena without regenerating a task (the seed's §7.3 improvement). Everything is deterministic: the
same graph and options give the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from ..base.diagnostics import RulepassError, error
from ..base.files import atomic_output
from ..base.schema import schema_diagnostics
from ..base.yaml_source import load_file
from .graph_file import gc_paused, graph_from_doc, graph_to_data
from .ir import ComputeGraph
from .memory.assign import MemoryPlan
from .streams import StreamPlan
from .tasks import (
    BuildContext,
    Reuse,
    TaskDef,
    TaskResult,
    bind,
    bind_addresses,
    iter_tasks,
    order_tasks,
    reused,
    workers_for,
)

MODEL_VERSION = 1
SCHEMA_URL = "https://rulepass.dev/schemas/model.schema.json"


def build_model(graph: ComputeGraph, plan: MemoryPlan, streams: StreamPlan, tasks: TaskResult) -> dict[str, Any]:
    """The model as plain data (see compiler/model.schema.json)."""
    task = [t.to_json() for t in tasks.tasks]
    return _model(graph, plan, streams, task, bind_addresses(tasks.tasks, plan), tasks.graph_data)


def _model(
    graph: ComputeGraph,
    plan: MemoryPlan,
    streams: StreamPlan,
    task: Any,
    addresses: Any,
    graph_data: dict[str, Any] | None = None,
) -> dict[str, Any]:
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
            "task": task,
        },
        "addresses": addresses,
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
        # GE's ModelTaskDef.op: the marked graph, every op desc and edge
        "graph": graph_to_data(graph) if graph_data is None else graph_data,
    }


class _Streamed:
    """A list the writer encodes member by member as an iterator yields them, never holding them all."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


class Encoded(str):
    """A member of a streamed list already encoded (the encoder's text of it)."""


def _encode_members(piece: list[Any]) -> str:
    """The members of a list as the encoder writes them inside it: those `Encoded` as they are, runs of the
    others encoded together."""
    if not any(isinstance(x, Encoded) for x in piece):
        return ENCODE(piece)[1:-1]
    out: list[str] = []
    run: list[Any] = []
    for x in piece:
        if isinstance(x, Encoded):
            if run:
                out.append(ENCODE(run)[1:-1])
                run = []
            out.append(x)
        else:
            run.append(x)
    if run:
        out.append(ENCODE(run)[1:-1])
    return ",".join(out)


class _Later:
    """A value the writer asks for only when it reaches it (after everything before it is written)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def stream_model(
    graph: ComputeGraph,
    plan: MemoryPlan,
    streams: StreamPlan,
    path: str | Path,
    *,
    threads: int | None = None,
    options: dict[str, str] | None = None,
    reuse: Reuse | None = None,
) -> TaskResult:
    """Generate the tasks (as `generate_tasks`) straight into the model file at `path`: the result counts them
    but holds none (`streamed`)."""
    opts = dict(options or {})
    order = order_tasks(graph, streams, opts)
    result = TaskResult([], {}, order.fusion_order, streamed=True)
    source = reused(graph, result, reuse)
    made = iter_tasks(order, BuildContext(plan, opts), workers_for(threads), result, source)
    graph_data = result.graph_data
    if graph_data is not None and result.node_texts is not None:  # the nodes' text the task source made
        graph_data = {**graph_data, "nodes": _Streamed(map(Encoded, result.node_texts))}
    write_streamed_model(graph, plan, streams, made, path, graph_data)
    return result


def write_streamed_model(
    graph: ComputeGraph,
    plan: MemoryPlan,
    streams: StreamPlan,
    tasks: Iterable[TaskDef],
    path: str | Path,
    graph_data: dict[str, Any] | None = None,
) -> None:
    """Write the model of `tasks` (an iterator in model order) to `path` as each task comes: the bytes of
    `write_model(build_model(...))`, holding neither the tasks nor their text, only their addresses' keys until
    the address table (after the tasks) is written. Atomic, like `write_model`."""
    used: dict[str, None] = {}

    def task_json() -> Iterator[dict[str, Any] | Encoded]:
        for t in tasks:
            used.update(dict.fromkeys(t.address_keys()))
            yield t.to_json() if t.text is None else Encoded(f'{{"id":{t.id},{t.text}')

    def addresses() -> dict[str, Any]:
        return bind(used, plan)

    model = _model(graph, plan, streams, _Streamed(task_json()), _Later(addresses), graph_data)
    with gc_paused(), atomic_output(path, what="model file") as f:
        f.writelines(model_chunks(model))


# the model's encoder: compact, ASCII (every other character escaped), keys in insertion order
ENCODE = json.JSONEncoder(separators=(",", ":"), sort_keys=False).encode
# a list or a dict longer than this is encoded in slices of this many members (each member whole); a shorter one
# in the top `_SPLIT_DEPTH` levels, member by member, so a long one inside it is sliced too
CHUNK = 4096
_SPLIT_DEPTH = 3


def dump_model(model: dict[str, Any]) -> str:
    """Deterministic JSON text of a model (compact: the C encoder; `python -m json.tool` pretty-prints it)."""
    with gc_paused():  # the encoder allocates a string per value: collections would walk the whole heap for nothing
        return ENCODE(model) + "\n"


def model_chunks(model: dict[str, Any]) -> Iterator[str]:
    """The text of `dump_model`, in pieces of at most a few thousand values each (for writing a large model
    without holding its whole text: the same bytes)."""
    yield from _chunks(model, 0)
    yield "\n"


def _chunks(value: Any, depth: int) -> Iterator[str]:
    if isinstance(value, _Later):
        value = value.make()
    if isinstance(value, _Streamed):
        items = iter(value.items)
        first = True
        while piece := list(islice(items, CHUNK)):
            yield ("[" if first else ",") + _encode_members(piece)
            first = False
        yield "[]" if first else "]"
    elif isinstance(value, list) and len(value) > CHUNK:
        for i in range(0, len(value), CHUNK):
            yield ("[" if i == 0 else ",") + ENCODE(value[i : i + CHUNK])[1:-1]
        yield "]"
    elif isinstance(value, dict) and len(value) > CHUNK:
        items = iter(value.items())
        for i in range(0, len(value), CHUNK):
            yield ("{" if i == 0 else ",") + ENCODE(dict(islice(items, CHUNK)))[1:-1]
        yield "}"
    elif depth < _SPLIT_DEPTH and isinstance(value, (dict, list)) and _short(value, depth):
        yield ENCODE(value)  # nothing long inside: one piece, one call of the encoder
    elif isinstance(value, dict) and value and depth < _SPLIT_DEPTH:  # a short container may hold a long one
        for i, (key, member) in enumerate(value.items()):
            yield ("{" if i == 0 else ",") + ENCODE({key: 0})[1:-2]  # the key as the encoder writes a key
            yield from _chunks(member, depth + 1)
        yield "}"
    elif isinstance(value, list) and value and depth < _SPLIT_DEPTH:
        for i, member in enumerate(value):
            yield "[" if i == 0 else ","
            yield from _chunks(member, depth + 1)
        yield "]"
    else:
        yield ENCODE(value)


def _short(value: Any, depth: int) -> bool:
    """Whether `value` holds, down to the split depth, no container longer than CHUNK and nothing streamed or
    made later (so `_chunks` would write it as the encoder does, in pieces small enough to hold at once)."""
    if isinstance(value, (_Later, _Streamed)):
        return False
    if isinstance(value, (dict, list)):
        if len(value) > CHUNK:
            return False
        if depth < _SPLIT_DEPTH:
            return all(_short(m, depth + 1) for m in (value.values() if isinstance(value, dict) else value))
    return True


def write_model(model: dict[str, Any], path: str | Path) -> None:
    """Write the model file to `path` (the bytes of `dump_model`), streamed: its text is never held whole. The
    file appears complete or not at all (see `atomic_output`)."""
    with gc_paused(), atomic_output(path, what="model file") as f:
        f.writelines(model_chunks(model))


def load_model_or_graph(path: str | Path) -> dict[str, Any] | ComputeGraph:
    """A model file's data (checked against its schema), or the graph of a graph file (YAML/JSON, told apart by
    'nodes'); raises one located error for anything else."""
    doc = load_file(path, what="model file")
    data = doc.data
    if not isinstance(data, dict):
        kind = "nothing" if data is None else f"a {type(data).__name__}"
        raise error(
            "model",
            f"'{path}' holds {kind}: expected a model (an object with 'model_def') or a graph file ('nodes')",
            doc.span(()),
        )
    if "nodes" in data or ("graph" in data and "expect" in data):  # a graph file (a rule fixture is told so there)
        return graph_from_doc(doc, Path(path).stem)
    if "model_def" not in data:
        raise error(
            "model",
            f"'{path}' is neither a model file (it has no 'model_def') nor a graph file (it has no 'nodes')",
            doc.span(()),
        )
    diags = schema_diagnostics(doc, "rulepass.compiler", "model.schema.json", what="the model file")
    if diags:
        raise RulepassError(diags)
    return data
