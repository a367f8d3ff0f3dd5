"""Incremental task generation (the GenerateTask analysis, §7.2): reuse a previous compile's tasks for every node
whose tasks cannot have changed, and build only the others.

A node's tasks are a function of what its builder may read (see `task_registry.TaskBuilder`): its own op desc
(type, attributes, descs, engine, kernel library, stream, workspaces, position in its graph, the subgraphs it
owns with everything in them: an FFTS+ node's tasks wrap theirs), and the symbolic addresses of its inputs
(its producers' names and output indices, and for a producer that is a Data/RefData its type and `index`). The
*signature* of a node is a digest of exactly that, taken from the graph's text (`graph_to_data`): the text the
model file keeps of its graph. So a signature is computed the same way for a live graph and from the graph
section of a previous model, and a cache is keyed by content, never by a node's index: nodes another
pass inserted (an Identity) or whose first/last marks, fusion group or fallback library changed (generation
sets those before any task is built: `tasks.order_tasks`) simply miss, and are built. A node whose tasks are
known to be none from its op desc (`tasks.known_empty`: `_no_task`, no kernel library, or a type its builder
never builds a task for, as a Const) is never looked up: generation takes it as none; so it has no signature,
and its text (a Const's weights) is not hashed. A node without a signature that is looked up is built, never
reused: a text taken wrongly for such a node's would cost reuse, never a byte.

Two sources of previous tasks:

- **A model file** (`--incremental-from MODEL`): the tasks of each node are the model's top-level tasks of that
  op, less the event tasks the model's `events` put around them. A node whose name is not unique in the model
  or whose tasks are not contiguous there, or a subgraph's node without top-level tasks (it may have had some
  inside its FFTS+ owner's), is not reused: it is rebuilt, which is always correct. The whole model is read but
  its weights (`_raw_data`: no signature holds any).
- **A cache folder** (`--task-cache DIR`), rewritten by every compile of each graph name: one file per graph
  name (`NAME.tasks`): a versioned header with the generation key (what the model does not record: rulepass's
  version, the task builders, the generation options), each node's *record* (its own tasks as the JSON text
  the model holds of them, with the keys of their addresses), then an *index* (per node signature the offset,
  length and CRC-32 of its record). The file is memory-mapped: the index is read whole (32 bytes a node), a
  record when its node is looked up, checked against its CRC, and its text is copied into the new model as it
  is: a reused task is neither decoded nor encoded. A different key reuses nothing. A cache that is not one
  (unreadable, truncated, another format's, a record whose CRC is wrong) gives one `TaskCacheWarning` and no
  reuse (a bad record: no reuse from there on; the records read before it were checked), and is rewritten.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import mmap
import struct
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..base.diagnostics import RulepassError, error
from ..base.files import atomic_output, read_text
from ..base.schema import is_valid, schema_diagnostics
from ..base.yaml_source import load_file
from .ir import ComputeGraph, Node
from .model import ENCODE
from .task_registry import DATA_TYPES, ModelTaskType, TaskDef, builder_for, registered_libraries
from .tasks import Lookup, TaskResult, TaskSource, known_empty
from .weights import RAW_ATTR

if TYPE_CHECKING:
    from .memory.assign import MemoryPlan
    from .streams import StreamPlan

CACHE_FORMAT = 2
INDEX_MAGIC = b"rulepass-tasks\n\0"
# a cache file's header: magic, format, node count, generation key digest, where the index starts
_HEADER = struct.Struct("<16sII16sQ")
_ENTRY = struct.Struct("<16sQII")  # signature, record offset, record length, record CRC-32
Signatures = dict[str, "bytes | None"]  # node name -> signature (None: no tasks, or a name the graph holds twice)


class TaskCacheWarning(UserWarning):
    """A task cache folder that cannot be used: the compile builds every node and rewrites it."""


def _input_ref(item: Any) -> str | None:
    ref = item.get("from") if isinstance(item, dict) else item
    return ref if isinstance(ref, str) else None


def _signatures(
    graph: dict[str, Any], is_root: bool, out: list[tuple[str, bytes | None]], texts: list[str] | None
) -> None:
    nodes = graph.get("nodes", ())
    data = {rn["name"]: [rn["type"], rn.get("attrs", {}).get("index")] for rn in nodes if rn["type"] in DATA_TYPES}
    for seq, rn in enumerate(nodes):
        text = None
        if texts is not None:
            text = ENCODE(rn)  # ASCII: the model's encoder escapes the rest
            texts.append(text)
        if known_empty(rn["type"], rn.get("attrs", _NO_ATTRS), rn.get("kernel_lib")):
            out.append((rn["name"], None))  # no task, its text says: never looked up, so not hashed
        else:
            out.append((rn["name"], _signature(rn, f"{CACHE_FORMAT},{is_root:d},{seq}", data, text)))
        for sub in rn.get("subgraphs", ()):
            _signatures(sub, False, out, None)


_NO_ATTRS: dict[str, Any] = {}
_WEIGHTS = f'"{RAW_ATTR}":"'  # weights in a node's text


def _signature(rn: dict[str, Any], head: str, data: dict[str, list[Any]], text: str | None) -> bytes | None:
    """The signature of node `rn` (its text `text`, or encoded here) at `head` (format, root or not, position)
    among the data nodes `data` of its graph; None when its text holds weights (`_raw_data`: a Const's, which
    has none anyway): a previous model is read without them (`TaskCache.load`)."""
    text = ENCODE(rn) if text is None else text
    if _WEIGHTS in text:
        return None
    inputs = rn.get("inputs") if data else None
    if inputs:  # the producers that are data nodes: their type and index make the input's address
        fed = [None if ref is None else data.get(ref.rsplit(":", 1)[0]) for ref in map(_input_ref, inputs)]
        if any(fed):
            head += ENCODE(fed)
    digest = hashlib.sha256(f"{head}|".encode("ascii"))
    digest.update(text.encode("ascii"))
    return digest.digest()[:16]


def data_signatures(graph: dict[str, Any], texts: list[str] | None = None) -> list[tuple[str, bytes | None]]:
    """(node name, signature) of every node of a graph's text (`graph_to_data`), its subgraphs' too: None for a
    node whose tasks are known to be none (`tasks.known_empty`: generation never looks it up); `texts` (if
    given) gets the model encoder's text of each of the graph's own nodes, in order."""
    out: list[tuple[str, bytes | None]] = []
    _signatures(graph, True, out, texts)
    return out


def signature_map(graph: dict[str, Any], texts: list[str] | None = None) -> Signatures:
    """Every node's signature by name (see `data_signatures`); None for a node without one, and for a name met
    twice (its tasks' node is not known)."""
    sigs: Signatures = {}
    for name, digest in data_signatures(graph, texts):
        sigs[name] = None if name in sigs else digest
    return sigs


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
    """A previous model's tasks by node signature, with the address keys the model bound."""

    def __init__(self, entries: dict[bytes, list[dict[str, Any]]], addresses: set[str], source: str = "") -> None:
        self.entries = entries
        self.addresses = addresses
        self.source = source

    @classmethod
    def from_model(cls, model: dict[str, Any], source: str = "") -> TaskCache:
        """The cache a model (its plain data, schema-checked) holds. A root-graph node with no top-level task
        had none (a node there is a candidate by its own text, which its signature holds); a subgraph's node
        may have had them inside its FFTS+ owner's: only its own top-level tasks are kept."""
        own, with_tasks = _own_tasks(model)
        root = {rn["name"] for rn in model["graph"].get("nodes", [])}
        entries: dict[bytes, list[dict[str, Any]]] = {}
        for name, sig in signature_map(model["graph"]).items():
            if sig is None:
                continue
            if name in own:
                entries[sig] = own[name]
            elif name in root and name not in with_tasks:
                entries[sig] = []
        return cls(entries, set(model["addresses"]), source)

    @classmethod
    def load(cls, path: str | Path) -> TaskCache:
        """The cache in a model file; a file that is not a model is one error naming it."""
        try:  # the C parser, without the weights; the loader (positions, strict JSON) only to say what is wrong
            data = json.loads(_without_weights(read_text(path, what="previous model")))
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

    def lookup(self, sigs: Signatures, held: bool, kept: dict[str, Record]) -> Lookup:
        """The lookup generation calls per node: the node's previous tasks (fresh objects), or None."""

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


def _without_weights(text: str) -> str:
    """A model's text with every `_raw_data` string that has no escape (base64 weights, most of a model file)
    read as empty. No signature needs them: a node whose text holds some has none (see `_signature`)."""
    out: list[str] = []
    at = 0
    while (i := text.find(_WEIGHTS, at)) != -1:
        start = i + len(_WEIGHTS)
        end = text.find('"', start)
        if end == -1:
            break
        out.append(text[at : start if text.find("\\", start, end) == -1 else end])
        at = end
    out.append(text[at:])
    return "".join(out)


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
    return ENCODE([CACHE_FORMAT, _version(), builders, sorted(options.items())])


@functools.cache
def _version() -> str:
    """rulepass's installed version (looked up once: the metadata lookup costs milliseconds)."""
    try:
        return metadata.version("rulepass")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree without metadata
        return "unknown"


class _Corrupt(Exception):
    """A cache folder's file is not what rulepass wrote (the message says what)."""


Record = tuple[bytes, int]  # a node's record in a blob and its CRC-32


def _record(tasks: list[TaskDef]) -> Record:
    """A node's record: a line of its own tasks' types, streams and address keys, then a line per task of its
    text after its id (ASCII, no line break: the model's encoder escapes them). Sets each task's text and keys,
    so the model writer copies the text instead of encoding the task again."""
    if not tasks:
        return b"", 0  # the empty record
    meta, lines = [], []
    for t in tasks:
        if t.text is None:
            full = ENCODE(t.to_json())
            t.keys = tuple(t.address_keys())
            t.text = full[full.index(",") + 1 :]  # after `{"id":N,`
        meta.append([int(t.type), t.stream_id, t.keys or ()])
        lines.append(t.text)
    raw = "\n".join([ENCODE(meta), *lines, ""]).encode("ascii")
    return raw, zlib.crc32(raw)


def _tasks(raw: bytes, name: str, held: bool) -> list[TaskDef]:
    """The tasks of a record (see `_record`), of node `name`; with every field set when `held`."""
    if not raw:
        return []
    head, *texts = raw.decode("ascii").split("\n")
    meta = json.loads(head)
    if len(texts) != len(meta) + 1 or texts.pop():
        raise ValueError("not one text a task")
    if held:  # every field set, as a task built now has them
        return [TaskDef.from_json(json.loads(f'{{"id":-1,{x}'), set(m[2])) for m, x in zip(meta, texts, strict=True)]
    pairs = zip(meta, texts, strict=True)
    return [TaskDef(ModelTaskType(tp), name, st, text=x, keys=tuple(k)) for (tp, st, k), x in pairs]


class FolderCache:
    """The tasks of the last compile kept in a cache folder's file, memory-mapped: its index (read whole when the
    file is opened) and its records (each read when its node is looked up, and checked against its CRC)."""

    def __init__(self, where: str, data: mmap.mmap, index: dict[bytes, tuple[int, int, int]]) -> None:
        self.where = where
        self.data = data
        self.index = index
        self.broken = False

    def record(self, sig: bytes, name: str) -> Record | None:
        """The record of the node of signature `sig` (named `name` now), or None; raises _Corrupt."""
        entry = self.index.get(sig)
        if entry is None:
            return None
        offset, length, crc = entry
        if not length:
            return b"", crc
        raw = self.data[offset : offset + length]
        if len(raw) != length or zlib.crc32(raw) != crc:
            raise _Corrupt(f"the record of node '{name}' is not the one its index describes")
        return raw, crc

    def lookup(self, sigs: Signatures, held: bool, kept: dict[str, Record]) -> Lookup:
        """The lookup generation calls per node (each record found is put in `kept` by node name); a bad record
        warns once and reuses nothing from there on."""

        def lookup(node: Node) -> list[TaskDef] | None:
            name = node.name
            sig = sigs.get(name)
            if sig is None or self.broken:
                return None
            try:
                rec = self.record(sig, name)
                if rec is None:
                    return None
                try:
                    tasks = _tasks(rec[0], name, held)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise _Corrupt(f"the record of node '{name}' does not read back ({exc})") from None
            except _Corrupt as exc:
                self.broken = True
                _warn(self.where, f"{exc}; the nodes from '{name}' on are built")
                return None
            kept[name] = rec
            return tasks

        return lookup

    def close(self) -> None:
        """Unmap the file."""
        self.data.close()


def _warn(where: str, what: str) -> None:
    warnings.warn(f"task cache '{where}': {what}", TaskCacheWarning, stacklevel=2)


class CacheFolder:
    """A task cache folder: per graph name, one file (`NAME.tasks`) of the last compile of that graph: a header
    (format, generation key, where the index is), the records, then the index (per node signature the offset,
    length and CRC-32 of its record)."""

    def __init__(self, folder: str | Path, graph_name: str, options: dict[str, str]) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise error("usage", f"task cache '{folder}' is not a folder")
        stem = hashlib.blake2b(graph_name.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        self.path = self.folder / f"{stem}.tasks"
        self.legacy = [self.folder / f"{stem}.model.json", self.folder / f"{stem}.key"]  # cache format 1
        self.key = hashlib.blake2b(generation_key(options).encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def load(self) -> FolderCache | None:
        """The tasks of the last compile of this graph name with the same key; None when there are none, for
        another key, or (with one warning) when the folder's file is not what rulepass wrote."""
        data = None
        try:
            data = self._map()
            if data is None:
                if any(p.is_file() for p in self.legacy):
                    _warn(str(self.folder), "written by an older rulepass (cache format 1); it is rewritten")
                return None
            index = self._index(data)
        except _Corrupt as exc:
            _warn(str(self.folder), f"{exc}; compiling in full and rewriting it")
            index = None
        if index is None or data is None:
            if data is not None:
                data.close()
            return None
        return FolderCache(str(self.folder), data, index)

    def _map(self) -> mmap.mmap | None:
        """The cache file, memory-mapped (None: there is none); raises _Corrupt."""
        try:
            with open(self.path, "rb") as f:
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # ValueError: an empty file
            raise _Corrupt(f"cannot read '{self.path.name}' ({exc})") from None

    def _index(self, data: mmap.mmap) -> dict[bytes, tuple[int, int, int]] | None:
        """The index of a cache file (None: another generation key); raises _Corrupt."""
        if len(data) < _HEADER.size:
            raise _Corrupt(f"'{self.path.name}' is truncated")
        magic, fmt, count, key, at = _HEADER.unpack_from(data)
        if magic != INDEX_MAGIC:
            raise _Corrupt(f"'{self.path.name}' is not a rulepass task cache")
        if fmt != CACHE_FORMAT:
            raise _Corrupt(f"'{self.path.name}' has cache format {fmt}, this rulepass reads {CACHE_FORMAT}")
        if at < _HEADER.size or len(data) != at + count * _ENTRY.size:
            raise _Corrupt(f"'{self.path.name}' is not the size its header says")
        if key != self.key:
            return None
        return {sig: (off, n, crc) for sig, off, n, crc in _ENTRY.iter_unpack(data[at:])}

    @contextlib.contextmanager
    def writing(self) -> Iterator[CacheWriter]:
        """A writer of this compile's records; when the block ends the index and header are written and the file
        replaces the folder's (atomically: nothing is replaced when the block raises)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_output(self.path, what="task cache", binary=True) as f:
            f.write(bytes(_HEADER.size))
            writer = CacheWriter(f)
            yield writer
            f.writelines(_ENTRY.pack(*e) for e in sorted(writer.entries))
            f.seek(0)
            f.write(_HEADER.pack(INDEX_MAGIC, CACHE_FORMAT, len(writer.entries), self.key, writer.size))
        for old in self.legacy:
            with contextlib.suppress(OSError):
                old.unlink(missing_ok=True)


class CacheWriter:
    """Writes each candidate node's record into a new cache file as generation tells it."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.size = _HEADER.size  # where the next record goes
        self.entries: list[tuple[bytes, int, int, int]] = []

    def keep(self, sigs: Signatures, kept: dict[str, Record]) -> Callable[[Node, list[TaskDef]], None]:
        """The function generation calls with each candidate node's own tasks: a reused node's record (in
        `kept`, by node name) is copied as it was read."""

        def keep(node: Node, tasks: list[TaskDef]) -> None:
            name = node.name
            rec = kept.pop(name, None)
            sig = sigs.get(name)
            if sig is None:
                return
            raw, crc = _record(tasks) if rec is None else rec
            self.out.write(raw)
            self.entries.append((sig, self.size, len(raw), crc))
            self.size += len(raw)

        return keep


@dataclass
class TaskReuse:
    """How a compile reuses and writes its tasks: the previous model to reuse (`previous`), or a cache folder
    (`folder`: read when no previous model is given, and written with this compile's tasks), and the model
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
        folder = None if self.folder is None else CacheFolder(self.folder, graph.name, options)

        def load() -> TaskCache | FolderCache | None:
            if self.previous is not None:
                return TaskCache.load(self.previous)
            return None if folder is None else folder.load()

        cache: TaskCache | FolderCache | None = timed("task cache", load)
        try:
            if folder is None:
                return self._generate(graph, (plan, streams, threads, options), timed, cache, None)
            with folder.writing() as writer:
                return self._generate(graph, (plan, streams, threads, options), timed, cache, writer)
        finally:
            if isinstance(cache, FolderCache):
                cache.close()

    def _generate(
        self,
        graph: ComputeGraph,
        how: tuple[MemoryPlan, StreamPlan, int | None, dict[str, str]],
        timed: Callable[[str, Callable[[], Any]], Any],
        cache: TaskCache | FolderCache | None,
        writer: CacheWriter | None,
    ) -> tuple[TaskResult, dict[str, Any] | None]:
        """Generate (and write) the tasks of `graph` under (plan, streams, threads, options), reusing `cache`'s
        and keeping them with `writer`."""
        from .model import build_model, stream_model
        from .tasks import generate_tasks

        plan, streams, threads, options = how
        held = self.model_path is None

        def source(graph_data: dict[str, Any]) -> TaskSource:
            texts: list[str] = []  # the root nodes' text, which the model writer then copies
            sigs = signature_map(graph_data, texts)
            kept: dict[str, Record] = {}
            lookup = None if cache is None else cache.lookup(sigs, held, kept)
            return TaskSource(lookup, None if writer is None else writer.keep(sigs, kept), texts)

        reuse = None if cache is None and writer is None else source
        if self.model_path is None:
            tasks: TaskResult = timed(
                "tasks", lambda: generate_tasks(graph, plan, streams, threads=threads, options=options, reuse=reuse)
            )
            return tasks, timed("model", lambda: build_model(graph, plan, streams, tasks))
        out = self.model_path
        tasks = timed(
            "tasks", lambda: stream_model(graph, plan, streams, out, threads=threads, options=options, reuse=reuse)
        )
        return tasks, None
