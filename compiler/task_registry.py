"""The task vocabulary and the builder registry: GE's ModelTaskType, TaskDef with symbolic addresses, the
context a builder sees, the TaskBuilder base class, and the registry of builders by kernel library name.

It exists apart from the generator (`tasks`) so that builders (`builders`, or a third party's through the
entry-point group `rulepass.task_builders`) import the registry without importing the generator: the
generator imports the built-in builders, which register themselves here.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from enum import IntEnum
from importlib import metadata
from typing import Any

from .facts import attr_int
from .ir import Node
from .memory.assign import MemoryPlan


class ModelTaskType(IntEnum):
    """GE's ModelTaskType (spec §6.4), the `type` of a TaskDef."""

    KERNEL = 0
    EVENT_RECORD = 1
    EVENT_WAIT = 2
    FUSION_START = 3
    FUSION_END = 4
    KERNEL_EX = 5
    HCCL = 6
    STREAM_SWITCH = 7
    STREAM_ACTIVE = 8
    LABEL_SET = 9
    LABEL_SWITCH = 10
    LABEL_GOTO = 11
    PROFILER_TRACE = 12
    MEMCPY_ASYNC = 13
    NOTIFY_RECORD = 14
    NOTIFY_WAIT = 15
    REDUCE_ASYNC = 16
    RDMA_SEND = 17
    EVENT_RESET = 18
    END_GRAPH = 19
    STREAM_SWITCH_N = 20
    RDMA_DB_SEND = 21
    MEMCPY_ADDR_ASYNC = 22
    STREAM_LABEL_SWITCH_BY_INDEX = 23
    STREAM_LABEL_GOTO = 24
    MODEL_EXIT = 25
    ALL_KERNEL = 26
    PROFILER_TRACE_EX = 27
    FFTS = 28
    FFTS_PLUS = 29
    DSA = 30
    CMO = 31
    BARRIER = 32
    NPU_GET_FLOAT_STATUS = 33
    NPU_CLEAR_FLOAT_STATUS = 34
    DVPP = 35
    NPU_GET_DEBUG_FLOAT_STATUS = 36
    NPU_CLEAR_DEBUG_FLOAT_STATUS = 37
    CMO_ADDR = 38
    VECTOR_KERNEL = 39
    VECTOR_ALL_KERNEL = 40
    UPDATE = 41
    NOP = 42
    PREPROCESS_KERNEL = 43
    SUPER_KERNEL = 44
    MEM_EVENT_RECORD = 45
    MEM_EVENT_WAIT = 46
    FUSION_KERNEL = 47
    KERNEL_LAUNCH_V2 = 48
    CCU_KERNEL = 49
    CUSTOM_KERNEL = 50


class CcKernelType(IntEnum):
    """GE's ccKernelType: the `kernel_type` of a kernel task's context."""

    CCE_AI_CORE = 0
    CCE_AI_CPU = 1
    TE = 2
    CUSTOMIZED = 3
    TE_AI_CORE = 4
    TE_AI_CPU = 5
    AI_CPU = 6
    CUST_AI_CPU = 7
    HOST_CPU = 8
    DVPP = 9
    AI_CPU_KFC = 10
    MIX_AICORE = 11
    MIX_VECTOR_CORE = 12
    INVALID = 10000


@dataclass(frozen=True, order=True)
class Address:
    """A symbolic address: `output`/`input`/`workspace` `index` of node `node`, or `model_input` `index`."""

    kind: str
    node: str
    index: int

    def __str__(self) -> str:
        if self.kind == "model_input":
            return f"input {self.index} of the model ({self.node})"
        return f"{self.kind} {self.index} of node {self.node}"

    def key(self) -> str:
        """A compact stable key, e.g. `output:concat:0`."""
        return f"{self.kind}:{self.node}:{self.index}"


@dataclass
class TaskDef:
    """GE's domi::TaskDef, with the sub-definition its type needs (`kernel`, `kernel_hccl`, ...)."""

    type: ModelTaskType
    op_name: str
    stream_id: int = 0
    id: int = -1
    event_id: int | None = None
    label_id: int | None = None
    kernel: dict[str, Any] | None = None
    kernel_ex: dict[str, Any] | None = None
    kernel_hccl: dict[str, Any] | None = None
    stream_switch: dict[str, Any] | None = None
    stream_active: dict[str, Any] | None = None
    memcpy_async: dict[str, Any] | None = None
    ffts_plus_task: dict[str, Any] | None = None
    dsa_task: dict[str, Any] | None = None
    dvpp_task: dict[str, Any] | None = None
    # the data `from_json` read this task from (its id apart), written again as it was: a reused task costs no
    # encoding; a task whose fields are changed after reading must drop it
    source: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    # the JSON text of the task after its id (`{"id":N,` + text is its text in the model) and the keys of the
    # addresses it uses, when it is known as text (a task cache's): the writer copies the text, and a task known
    # only so has no other field set but `type` and `stream_id` (`to_json` reads the text back)
    text: str | None = field(default=None, repr=False, compare=False)
    keys: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    def address_keys(self) -> list[str]:
        """The keys of every address the task uses (`addresses`' keys)."""
        return list(self.keys) if self.keys is not None else [a.key() for a in self.addresses()]

    def addresses(self) -> list[Address]:
        """Every symbolic address the task uses (also inside an FFTS+ task's sub-tasks)."""
        if self.keys is not None:
            return [address_from_key(k) for k in self.keys]
        out: list[Address] = []
        for part in (getattr(self, name) for name in ADDRESS_PARTS):
            if part:
                for key in ADDRESS_KEYS:
                    v = part.get(key)
                    if isinstance(v, list):
                        out.extend(a for a in v if isinstance(a, Address))
                    elif isinstance(v, Address):
                        out.append(v)
        if self.ffts_plus_task:
            for sub in self.ffts_plus_task.get("sub_tasks", []):
                out.extend(sub.addresses())
        return out

    def to_json(self) -> dict[str, Any]:
        """GE field names; symbolic addresses as their keys."""
        if self.source is not None:
            return {**self.source, "id": self.id}
        if self.text is not None:
            data: dict[str, Any] = json.loads(f'{{"id":{self.id},{self.text}')
            return data
        out: dict[str, Any] = {
            "id": self.id,
            "type": int(self.type),
            "type_name": f"MODEL_TASK_{self.type.name}",
            "stream_id": self.stream_id,
            "op": self.op_name,
        }
        for name in ("event_id", "label_id"):
            v = getattr(self, name)
            if v is not None:
                out[name] = v
        for name in TASK_PARTS:
            v = getattr(self, name)
            if v is not None:
                out[name] = _plain(v)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], addresses: Container[str]) -> TaskDef:
        """The task `to_json` wrote (its `id` included), back: a string where an address may stand that is one of
        `addresses` (the keys the model bound) is that Address again, so `to_json` and `addresses` give what
        they gave."""
        fields: dict[str, Any] = {"type": ModelTaskType(data["type"]), "op_name": data["op"]}
        for name in ("id", "stream_id", "event_id", "label_id"):
            if name in data:
                fields[name] = data[name]
        for name in TASK_PARTS:
            part = data.get(name)
            if part is None:
                continue
            part = dict(part)
            if name in ADDRESS_PARTS:
                for key in ADDRESS_KEYS:
                    if key in part:
                        part[key] = _address_back(part[key], addresses)
            if name == "ffts_plus_task" and isinstance(part.get("sub_tasks"), list):
                part["sub_tasks"] = [cls.from_json(t, addresses) for t in part["sub_tasks"]]
            fields[name] = part
        return cls(**fields, source=data)


# the sub-definitions of a TaskDef, in the order to_json writes them; those that may hold addresses, and where
TASK_PARTS = (
    "kernel",
    "kernel_ex",
    "kernel_hccl",
    "stream_switch",
    "stream_active",
    "memcpy_async",
    "ffts_plus_task",
    "dsa_task",
    "dvpp_task",
)
ADDRESS_PARTS = ("kernel", "kernel_ex", "kernel_hccl", "memcpy_async", "dsa_task", "dvpp_task")
ADDRESS_KEYS = ("args", "inputs", "outputs", "src", "dst")


def address_from_key(key: str) -> Address:
    """The Address whose `key()` is `key` (`kind:node:index`; the node name may hold colons)."""
    kind, rest = key.split(":", 1)
    node, index = rest.rsplit(":", 1)
    return Address(kind, node, int(index))


def _address_back(v: Any, addresses: Container[str]) -> Any:
    if isinstance(v, str):
        return address_from_key(v) if v in addresses else v
    if isinstance(v, list):
        return [_address_back(x, addresses) for x in v]
    return v


def _plain(v: Any) -> Any:
    if isinstance(v, Address):
        return v.key()
    if isinstance(v, TaskDef):
        return v.to_json()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, IntEnum):
        return int(v)
    return v


# ---- builders ----------------------------------------------------------------------------------------------
@dataclass
class BuildContext:
    """What a builder may read: the memory plan (through symbolic addresses) and generation options."""

    plan: MemoryPlan | None = None
    options: dict[str, str] = field(default_factory=dict)

    def inputs(self, node: Node) -> list[Address]:
        """Symbolic addresses of the node's connected inputs (the producers' outputs)."""
        out = []
        for peer in node.in_peers:
            if peer is not None:
                out.append(_output_address(peer.node, peer.index))
        return out

    def outputs(self, node: Node) -> list[Address]:
        """Symbolic addresses of the node's outputs."""
        return [_output_address(node, k) for k in range(len(node.out_peers))]

    def workspaces(self, node: Node) -> list[Address]:
        """Symbolic addresses of the node's workspaces."""
        return [Address("workspace", node.name, k) for k, w in enumerate(node.op.workspace_bytes) if w > 0]


DATA_TYPES = ("Data", "RefData")  # a root graph's nodes of these types are the model's inputs


def _output_address(node: Node, index: int) -> Address:
    if node.op.type in DATA_TYPES and node.graph.is_root:
        return Address("model_input", node.name, attr_int(node, "index", 0))
    return Address("output", node.name, index)


class TaskBuilder:
    """Builds the tasks of one node for one or more kernel libraries; subclass and register it."""

    lib_names: tuple[str, ...] = ()
    # op types this builder never builds a task for, whatever their attributes (`tasks.known_empty`)
    no_task_types: frozenset[str] = frozenset()

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """The node's tasks (ids and streams are filled in by the generator)."""
        raise NotImplementedError


_REGISTRY: dict[str, TaskBuilder] = {}
_ENTRY_POINTS_LOADED = False
ENTRY_POINT_GROUP = "rulepass.task_builders"


def register_builder(*lib_names: str) -> Callable[[type[TaskBuilder]], type[TaskBuilder]]:
    """Class decorator: register a TaskBuilder under kernel library names (first registration wins)."""

    def deco(cls: type[TaskBuilder]) -> type[TaskBuilder]:
        builder = cls()
        for lib in lib_names or cls.lib_names:
            register(lib, builder)
        return cls

    return deco


def register(lib: str, builder: TaskBuilder) -> bool:
    """Register `builder` for `lib`; a duplicate warns and keeps the first, as GE's registry does."""
    if lib in _REGISTRY:
        warnings.warn(
            f"task builder for kernel library '{lib}' is already registered "
            f"({type(_REGISTRY[lib]).__name__}); keeping it, ignoring {type(builder).__name__}",
            stacklevel=3,
        )
        return False
    _REGISTRY[lib] = builder
    return True


def load_entry_point_builders() -> list[str]:
    """Register builders published by installed packages under the `rulepass.task_builders` group."""
    global _ENTRY_POINTS_LOADED
    loaded: list[str] = []
    if _ENTRY_POINTS_LOADED:
        return loaded
    _ENTRY_POINTS_LOADED = True
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        obj = ep.load()
        builder = obj() if isinstance(obj, type) else obj
        if isinstance(builder, TaskBuilder):
            for lib in builder.lib_names or (ep.name,):
                if register(lib, builder):
                    loaded.append(lib)
    return loaded


def builder_for(lib: str) -> TaskBuilder | None:
    """The builder registered for kernel library `lib`."""
    load_entry_point_builders()
    return _REGISTRY.get(lib)


def registered_libraries() -> list[str]:
    """Every registered kernel library name."""
    builder_for("")
    return sorted(_REGISTRY)


# ---- the generator ------------------------------------------------------------------------------------------
