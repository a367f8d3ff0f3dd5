"""Incremental task generation (the GenerateTask analysis, §7.2): reuse a previous compile's tasks for every node
whose tasks cannot have changed, and build only the others.

A node's tasks are a function of what its builder may read (see `task_registry.TaskBuilder`): its own op desc
(type, attributes, descs, engine, kernel library, stream, workspaces, position in its graph, the subgraphs it
owns with everything in them: an FFTS+ node's tasks wrap theirs), and the symbolic addresses of its inputs
(its producers' names and output indices, and for a producer that is a Data/RefData its type and `index`). The
*signature* of a node is a digest of exactly that, taken from the graph's text (`graph_to_data`): the text the
model file keeps of its graph. So a signature is computed the same way for a live graph and from the graph
section of a previous model, and the cache is keyed by content, never by a node's index: nodes another
pass inserted (an Identity) or whose first/last marks, fusion group or fallback library changed (generation
sets those before any task is built: `tasks.order_tasks`) simply miss, and are built.

The previous compile is read from its model file (`--incremental-from MODEL`): the tasks of each node are the
model's top-level tasks of that op, less the event tasks the model's `events` put around them. A node whose name
is not unique in the model or whose tasks are not contiguous there, or a subgraph's node without top-level
tasks (it may have had some inside its FFTS+ owner's), is not reused: it is rebuilt, which is always correct.
A cache folder (`--task-cache DIR`) keeps the model of the last compile of each graph name beside a key of what
the model file does not record (rulepass version, task builders, generation options); a different key reuses
nothing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.diagnostics import RulepassError, error
from ..base.files import atomic_output, read_text
from ..base.schema import is_valid, schema_diagnostics
from ..base.yaml_source import load_file
from .ir import ComputeGraph, Node
from .task_registry import ModelTaskType, TaskDef, builder_for, registered_libraries
from .tasks import Lookup, TaskResult, generate_tasks

if TYPE_CHECKING:
    from .memory.assign import MemoryPlan
    from .streams import StreamPlan

CACHE_FORMAT = 1
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _input_ref(item: Any) -> str | None:
    ref = item.get("from") if isinstance(item, dict) else item
    return ref if isinstance(ref, str) else None


def data_signatures(graph: dict[str, Any], is_root: bool = True) -> Iterator[tuple[str, str]]:
    """(node name, signature) of every node of a graph's text (`graph_to_data`), its subgraphs' too."""
    nodes = graph.get("nodes", [])
    by_name = {rn["name"]: rn for rn in nodes}
    for seq, rn in enumerate(nodes):
        producers: list[Any] = []
        for item in rn.get("inputs", []):
            ref = _input_ref(item)
            peer = by_name.get(ref.rsplit(":", 1)[0]) if ref is not None else None
            producers.append(None if peer is None else [peer["type"], peer.get("attrs", {}).get("index")])
        text = _ENCODE([CACHE_FORMAT, is_root, seq, rn, producers])
        yield rn["name"], hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        for sub in rn.get("subgraphs", []):
            yield from data_signatures(sub, False)


def _own_tasks(model: dict[str, Any]) -> tuple[dict[str, list[dict[str, Any]]], set[str]]:
    """Each op's own top-level tasks in a model (its event tasks taken off), for ops whose tasks are one run;
    and every op with a top-level task."""
    waits: dict[str, int] = {}
    records: dict[str, int] = {}
    for e in model.get("events", []):
        waits[e["consumer"]] = waits.get(e["consumer"], 0) + 1
        records[e["producer"]] = records.get(e["producer"], 0) + 1
    runs: dict[str, list[dict[str, Any]]] = {}
    split: set[str] = set()
    last = None
    for t in model["model_def"]["task"]:
        op = t["op"]
        if op != last and op in runs:
            split.add(op)  # a second run of the same op: which node made which is not known
        runs.setdefault(op, []).append(t)
        last = op
    out: dict[str, list[dict[str, Any]]] = {}
    for op, tasks in runs.items():
        w, r = waits.get(op, 0), records.get(op, 0)
        if op in split or len(tasks) < w + r:
            continue
        head, own, tail = tasks[:w], tasks[w : len(tasks) - r], tasks[len(tasks) - r :]
        if all(t["type"] == ModelTaskType.EVENT_WAIT for t in head) and all(
            t["type"] == ModelTaskType.EVENT_RECORD for t in tail
        ):
            out[op] = own
    return out, set(runs)


class TaskCache:
    """A previous compile's tasks by node signature, with the address keys its model bound."""

    def __init__(self, entries: dict[str, list[dict[str, Any]]], addresses: set[str], source: str = "") -> None:
        self.entries = entries
        self.addresses = addresses
        self.source = source

    @classmethod
    def from_model(cls, model: dict[str, Any], source: str = "") -> TaskCache:
        """The cache a model (its plain data, schema-checked) holds. A root-graph node with no top-level task
        had none (a node there is a candidate by its own text, which its signature holds); a subgraph's node
        may have had them inside its FFTS+ owner's: only its own top-level tasks are kept."""
        own, with_tasks = _own_tasks(model)
        seen: dict[str, str | None] = {}
        root = {rn["name"] for rn in model["graph"].get("nodes", [])}
        for name, digest in data_signatures(model["graph"]):
            seen[name] = None if name in seen else digest  # a name met twice: its tasks' node is not known
        entries: dict[str, list[dict[str, Any]]] = {}
        for name, sig in seen.items():
            if sig is not None and name in own:
                entries[sig] = own[name]
            elif sig is not None and name in root and name not in with_tasks:
                entries[sig] = []
        return cls(entries, set(model["addresses"]), source)

    @classmethod
    def load(cls, path: str | Path) -> TaskCache:
        """The cache in a model file; a file that is not a model is one error naming it."""
        try:  # the C parser; the loader (positions, strict JSON) only to say what is wrong
            data = json.loads(read_text(path, what="previous model"))
        except ValueError:
            data = load_file(path, what="previous model").data
        if not is_valid(data, "rulepass.compiler", "model.schema.json"):
            doc = load_file(path, what="previous model")
            diags = schema_diagnostics(doc, "rulepass.compiler", "model.schema.json", what="the previous model")
            if diags:
                raise RulepassError(diags)
        try:
            return cls.from_model(data, str(path))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _not_ours(str(path), exc) from None

    def reuse(self, graph: dict[str, Any]) -> Lookup:
        """The lookup generation calls per node of a graph (given its text): the node's previous tasks (fresh
        objects), or None. A name the graph holds twice is never looked up."""
        sigs: dict[str, str | None] = {}
        for name, digest in data_signatures(graph):
            sigs[name] = None if name in sigs else digest

        def lookup(node: Node) -> list[TaskDef] | None:
            sig = sigs.get(node.name)
            entry = None if sig is None else self.entries.get(sig)
            if entry is None:
                return None
            try:
                return [TaskDef.from_json(t, self.addresses) for t in entry]
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise _not_ours(self.source, exc, node.name) from None

        return lookup


def _not_ours(source: str, exc: Exception, node: str | None = None) -> RulepassError:
    what = f"the tasks of node '{node}' in it do not read back" if node else "it is not a model rulepass wrote"
    return error(
        "model",
        f"previous model '{source}': {what}: {type(exc).__name__}: {exc}",
        where=node,
        hint="give it a model written by `rulepass compile -o`",
    )


def generation_key(options: dict[str, str]) -> str:
    """What a model file does not record but a task depends on: rulepass's version, the task builders
    registered (by library), the generation options."""
    builders = {lib: type(builder_for(lib)).__qualname__ for lib in registered_libraries()}
    try:
        version = metadata.version("rulepass")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree without metadata
        version = "unknown"
    return _ENCODE([CACHE_FORMAT, version, builders, sorted(options.items())])


class CacheFolder:
    """A task cache folder: per graph name, the last compile's model file and its generation key."""

    def __init__(self, folder: str | Path, graph_name: str, options: dict[str, str]) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise error("usage", f"task cache '{folder}' is not a folder")
        stem = hashlib.blake2b(graph_name.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        self.model_path = self.folder / f"{stem}.model.json"
        self.key_path = self.folder / f"{stem}.key"
        self.key = generation_key(options)

    def load(self) -> TaskCache | None:
        """The cache of the last compile of this graph name with the same key, or None (none, or another key)."""
        if not self.model_path.is_file() or not self.key_path.is_file():
            return None
        if self.key_path.read_text(encoding="utf-8") != self.key:
            return None
        return TaskCache.load(self.model_path)

    def store(self, write: Callable[[Path], None] | Path) -> None:
        """Keep this compile's model: written by `write(path)`, or copied from the model file at a path."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if isinstance(write, Path):
            with atomic_output(self.model_path, what="task cache", binary=True) as f, write.open("rb") as src:
                shutil.copyfileobj(src, f)
        else:
            write(self.model_path)
        with atomic_output(self.key_path, what="task cache") as f:
            f.write(self.key)


@dataclass
class TaskReuse:
    """How a compile reuses and writes its tasks: the previous model to reuse (`previous`), or a cache folder
    (`folder`: read when no previous model is given, and written with this compile's model), and the model
    file to stream the tasks into as they are made (`model_path`; None keeps the model in memory)."""

    previous: str | Path | None = None
    folder: str | Path | None = None
    model_path: Path | None = None

    def compile(
        self,
        graph: ComputeGraph,
        plan: MemoryPlan,
        streams: StreamPlan,
        threads: int | None,
        options: dict[str, str],
        timed: Callable[[str, Callable[[], Any]], Any],
    ) -> tuple[TaskResult, dict[str, Any] | None]:
        """The tasks and the model (None when streamed to `model_path`), each stage timed by `timed`."""
        from .model import build_model, stream_model, write_model

        folder = None if self.folder is None else CacheFolder(self.folder, graph.name, options)

        def load() -> TaskCache | None:
            if self.previous is not None:
                return TaskCache.load(self.previous)
            return None if folder is None else folder.load()

        cache: TaskCache | None = timed("task cache", load)
        lookup = None if cache is None else cache.reuse
        model: dict[str, Any] | None = None
        if self.model_path is None:
            tasks: TaskResult = timed(
                "tasks", lambda: generate_tasks(graph, plan, streams, threads=threads, options=options, reuse=lookup)
            )
            model = timed("model", lambda: build_model(graph, plan, streams, tasks))
        else:
            out = self.model_path
            tasks = timed(
                "tasks", lambda: stream_model(graph, plan, streams, out, threads=threads, options=options, reuse=lookup)
            )
        if folder is not None:
            doc = model
            timed("task cache store", lambda: folder.store(self.model_path or (lambda p: write_model(doc or {}, p))))
        return tasks, model
