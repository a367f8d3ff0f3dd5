"""Graph files (YAML or JSON) to and from ComputeGraph, with an error for every mistake at its line.

The format is concise for people: a node's inputs are `producer:index` strings, a consumer's input desc
defaults to its producer's output desc, a desc may be written `float16[2048,12288]`, and a storage shape
left out is derived from the origin shape and format as GE's format transfer would. Every mistake (schema,
unknown producer, index out of range, duplicate names, cycles, two producers into one input, unknown dtype or
format, bad shapes) is one diagnostic naming the file, line and column and the node and field concerned; no
traceback reaches the user, whatever the file holds. Load -> save -> load gives an equal graph.
"""

from __future__ import annotations

import gc
import json
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from ..base.diagnostics import Diagnostic, RulepassError, Span, did_you_mean, error
from ..base.files import atomic_output, read_text
from ..base.limits import LimitError
from ..base.schema import schema_diagnostics
from ..base.yaml_source import YamlDoc, load_text, plain_scalar
from . import formats
from .ir import ATTR_PARENT_NODE_INDEX, AttrValue, ComputeGraph, GraphError, Node, OpDesc, TensorDesc

SCHEMA_NAME = "graph.schema.json"
SCHEMA_PACKAGE = "rulepass.compiler"
_SHORTHAND = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[([-0-9,\s]*)\]\s*([A-Za-z0-9_]+)?\s*$")
_EDGE = re.compile(r"^\s*([^\s:]+):(\d+)\s*->\s*([^\s:]+):(\d+)\s*$")

PathT = list[str | int]
# Characters PyYAML's reader rejects or reads as line breaks (all in the BMP, so \uXXXX escapes suffice).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


@dataclass
class _Pending:
    node: Node
    path: PathT
    inputs: list[Any]
    control: list[Any]


class _Builder:
    """Turns a schema-valid document into a ComputeGraph, collecting located diagnostics."""

    def __init__(self, doc: YamlDoc) -> None:
        self.doc = doc
        self.diags: list[Diagnostic] = []

    def fail(
        self,
        message: str,
        path: Sequence[str | int],
        *,
        key: bool = False,
        hint: str | None = None,
        code: str = "graph",
    ) -> None:
        self.diags.append(Diagnostic(code, message, self.doc.span(path, key=key), hint=hint))

    # ---- descs ----------------------------------------------------------------------------------------
    def dtype(self, name: str, path: PathT, where: str) -> str:
        canon = formats.canonical_dtype(name)
        if canon is None:
            self.fail(f"{where}: unknown dtype '{name}'", path, hint=did_you_mean(name.lower(), formats.DTYPES))
            return "undefined"
        return canon

    def format(self, name: str, path: PathT, where: str) -> str:
        canon = formats.canonical_format(name)
        if canon is None:
            self.fail(f"{where}: unknown format '{name}'", path, hint=did_you_mean(name.upper(), formats.FORMATS))
            return "ND"
        return canon

    def desc(self, raw: Any, path: PathT, where: str) -> TensorDesc:
        if isinstance(raw, str):
            m = _SHORTHAND.match(raw)
            assert m is not None  # guaranteed by the schema pattern
            inner = m.group(2).strip()
            dims_text = [d.strip() for d in inner.split(",")] if inner else []
            dims: list[int] = []
            for d in dims_text:
                try:
                    dims.append(int(d))
                except ValueError:
                    what = f"dimension '{d}' is not an integer" if d else f"empty dimension in '[{m.group(2)}]'"
                    self.fail(f"{where}: {what}", path)
                    dims.append(1)
            fmt = self.format(m.group(3), path, where) if m.group(3) else "ND"
            self.check_dims(dims, path, where)
            dtype = self.dtype(m.group(1), path, where)
            return TensorDesc(tuple(dims), dtype, fmt, tuple(dims), fmt)
        dtype = self.dtype(raw.get("dtype", "float"), [*path, "dtype"], where)
        given = self.format(raw["format"], [*path, "format"], where) if "format" in raw else None
        ogiven = self.format(raw["origin_format"], [*path, "origin_format"], where) if "origin_format" in raw else None
        fmt = given or ogiven or "ND"
        ofmt = ogiven or fmt
        # JSON Schema's "integer" admits 2.0; keep Python ints so a saved file reads back the same.
        shape: Any = None if raw.get("shape") is None else [int(d) for d in raw["shape"]]
        oshape: Any = None if raw.get("origin_shape") is None else [int(d) for d in raw["origin_shape"]]
        if shape is not None:
            self.check_dims(shape, [*path, "shape"], where)
        if oshape is not None:
            self.check_dims(oshape, [*path, "origin_shape"], where)
        if shape is None:
            derived = formats.transfer_shape(ofmt, fmt, tuple(oshape), dtype)
            if derived is None:
                self.fail(
                    f"{where}: cannot derive the storage shape from origin {ofmt} {list(oshape)} to {fmt}",
                    path,
                    hint="give 'shape' explicitly",
                )
                derived = tuple(oshape)
            shape = list(derived)
        if oshape is None:
            if formats.primary_format(fmt) != formats.primary_format(ofmt):
                self.fail(
                    f"{where}: 'origin_shape' is needed when format {fmt} differs from origin format {ofmt}",
                    path,
                )
            oshape = shape
        attrs = self.attrs(raw.get("attrs", {}), [*path, "attrs"], where)
        return TensorDesc(tuple(shape), dtype, fmt, tuple(oshape), ofmt, attrs)

    def check_dims(self, dims: Sequence[int], path: PathT, where: str) -> None:
        for i, d in enumerate(dims):
            if d < -2:
                self.fail(
                    f"{where}: dimension {d} is invalid (use -1 for an unknown dim, -2 for unknown rank)",
                    [*path, i],
                )

    def attrs(self, raw: dict[str, Any], path: PathT, where: str) -> dict[str, AttrValue]:
        out: dict[str, AttrValue] = {}
        hint = "NaN never equals itself, so the graph could not be compared or saved and read back"
        for k, v in raw.items():
            if isinstance(v, list):
                for i, x in enumerate(v):
                    if isinstance(x, float) and x != x:
                        self.fail(f"{where}: attribute '{k}' holds NaN at index {i}", [*path, k, i], hint=hint)
                out[k] = [_decode_float(x) for x in v] if any(isinstance(x, str) for x in v) else list(v)
            elif isinstance(v, float) and v != v:
                self.fail(f"{where}: attribute '{k}' is NaN", [*path, k], hint=hint)
                out[k] = 0.0
            else:
                out[k] = _decode_float(v) if isinstance(v, str) else v
        return out

    # ---- graphs ----------------------------------------------------------------------------------------
    def graph(
        self, raw: dict[str, Any], path: PathT, name: str, parent: Node | None, names: dict[str, PathT]
    ) -> ComputeGraph:
        g = ComputeGraph(
            name,
            attrs=self.attrs(raw.get("attrs", {}), [*path, "attrs"], f"graph '{name}'"),
            unknown_shape=bool(raw.get("unknown_shape", False)),
        )
        if parent is not None:
            parent.graph.set_subgraph(parent, g)
        pending: list[_Pending] = []
        for i, rn in enumerate(raw.get("nodes", [])):
            npath: PathT = [*path, "nodes", i]
            nname = rn["name"]
            if nname in names:
                prev = self.doc.span(names[nname]).line
                self.fail(f"duplicate node name '{nname}' (first defined on line {prev})", [*npath, "name"])
                continue
            names[nname] = [*npath, "name"]
            outputs = [
                self.desc(d, [*npath, "outputs", k], f"node '{nname}' output {k}")
                for k, d in enumerate(rn.get("outputs", []))
            ]
            op = OpDesc(
                name=nname,
                type=rn["type"],
                attrs=self.attrs(rn.get("attrs", {}), [*npath, "attrs"], f"node '{nname}'"),
                output_descs=outputs,
                output_names=list(rn.get("output_names", []))
                or [f"y{k}" if len(outputs) > 1 else "y" for k in range(len(outputs))],
                engine=rn.get("engine", ""),
                kernel_lib=rn.get("kernel_lib", ""),
                stream_id=int(rn.get("stream", -1)),
                workspace_bytes=[int(w) for w in rn.get("workspace", [])],
            )
            if len(op.output_names) != len(outputs):
                self.fail(
                    f"node '{nname}': {len(op.output_names)} output_names for {len(outputs)} outputs",
                    [*npath, "output_names"],
                )
            inputs = list(rn.get("inputs", []))
            op.input_descs = [TensorDesc(()) for _ in inputs]  # filled once producers are known
            op.input_names = [f"x{k}" if len(inputs) > 1 else "x" for k in range(len(inputs))]
            for k, item in enumerate(inputs):
                if isinstance(item, dict) and "name" in item:
                    op.input_names[k] = item["name"]
            node = g.add_node(op)
            pending.append(_Pending(node, npath, inputs, list(rn.get("control_inputs", []))))
        for p in pending:
            self.connect(g, p)
        for k, edge in enumerate(raw.get("edges", [])):
            self.extra_edge(g, edge, [*path, "edges", k])
        for p in pending:
            self.finish_inputs(p)
        cycle = g.find_cycle()
        if cycle is not None:
            where = names.get(cycle[0], path)
            self.fail(f"graph '{name}' has a cycle: {' -> '.join(cycle)}", where, code="graph-cycle")
        for p in pending:
            for k, rs in enumerate(self._raw_node(p.path).get("subgraphs", [])):
                spath: PathT = [*p.path, "subgraphs", k]
                sname = rs["name"]
                root = g.root
                if sname in root.subgraphs or sname == root.name:
                    self.fail(f"duplicate subgraph name '{sname}'", [*spath, "name"])
                    continue
                sub = self.graph(rs, spath, sname, p.node, names)
                self.check_parent_indices(sub, p.node, names)
        return g

    def _raw_node(self, path: PathT) -> dict[str, Any]:
        node: Any = self.doc.data
        for k in path:
            node = node[k]
        result: dict[str, Any] = node
        return result

    def producer(self, g: ComputeGraph, ref: str, path: PathT, consumer: str) -> tuple[Node, int] | None:
        name, _, idx = ref.strip().partition(":")
        index = int(idx) if idx else 0
        src = g.node(name)
        if src is None:
            local = [n.name for n in g.nodes_in_insertion_order() if n.name != consumer]
            elsewhere = "" if g.is_root else f" (subgraph '{g.name}' can only use its own nodes)"
            self.fail(
                f"node '{consumer}': unknown producer '{name}'{elsewhere}",
                path,
                hint=did_you_mean(name, local),
            )
            return None
        if not 0 <= index < len(src.out_peers):
            self.fail(
                f"node '{consumer}': producer '{name}' has {len(src.out_peers)} output(s); "
                f"output {index} does not exist",
                path,
            )
            return None
        return src, index

    def connect(self, g: ComputeGraph, p: _Pending) -> None:
        for k, item in enumerate(p.inputs):
            ref = item.get("from") if isinstance(item, dict) else item
            if ref is None:
                continue
            ipath: PathT = [*p.path, "inputs", k] + (["from"] if isinstance(item, dict) else [])
            found = self.producer(g, ref, ipath, p.node.name)
            if found is not None:
                try:
                    g.add_data_edge(found[0], found[1], p.node, k)
                except GraphError as exc:
                    self.fail(str(exc), ipath)
        for k, cname in enumerate(p.control):
            src = g.node(cname)
            if src is None:
                self.fail(
                    f"node '{p.node.name}': unknown control input '{cname}'",
                    [*p.path, "control_inputs", k],
                    hint=did_you_mean(cname, [n.name for n in g.nodes_in_insertion_order()]),
                )
            else:
                g.add_control_edge(src, p.node)

    def extra_edge(self, g: ComputeGraph, text: str, path: PathT) -> None:
        m = _EDGE.match(text)
        assert m is not None  # the schema checked the pattern
        found = self.producer(g, f"{m.group(1)}:{m.group(2)}", path, m.group(3))
        dst = g.node(m.group(3))
        if dst is None:
            self.fail(
                f"edge into unknown node '{m.group(3)}'",
                path,
                hint=did_you_mean(m.group(3), [n.name for n in g.nodes_in_insertion_order()]),
            )
            return
        if found is not None:
            try:
                g.add_data_edge(found[0], found[1], dst, int(m.group(4)))
            except GraphError as exc:
                self.fail(str(exc), path)

    def finish_inputs(self, p: _Pending) -> None:
        op = p.node.op
        for k, item in enumerate(p.inputs):
            where = f"node '{op.name}' input {k}"
            if isinstance(item, dict) and "desc" in item:
                op.input_descs[k] = self.desc(item["desc"], [*p.path, "inputs", k, "desc"], where)
                continue
            peer = p.node.in_peers[k]
            if peer is not None:
                op.input_descs[k] = peer.desc.copy()
            else:
                # An unconnected anchor without a desc: GE's invalid desc.
                op.input_descs[k] = TensorDesc((), "undefined", "RESERVED", (), "RESERVED")

    def check_parent_indices(self, sub: ComputeGraph, owner: Node, names: dict[str, PathT]) -> None:
        for n in sub.nodes_in_insertion_order():
            idx = n.op.attrs.get(ATTR_PARENT_NODE_INDEX)
            if idx is None:
                continue
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(owner.in_peers):
                self.fail(
                    f"node '{n.name}': {ATTR_PARENT_NODE_INDEX}={idx!r} is not an input index of parent "
                    f"'{owner.name}' (it has {len(owner.in_peers)} input(s))",
                    [*names[n.name][:-1], "attrs", ATTR_PARENT_NODE_INDEX],
                )


_Paths = dict[tuple[int, int, int, int], tuple[Any, ...]]


def _paths_by_range(doc: YamlDoc) -> tuple[_Paths, _Paths]:
    """The deepest path of each key range and of each value range: built once for all diagnostics, so that
    reporting N errors is linear in N and the document's size, not their product."""
    keys: _Paths = {}
    values: _Paths = {}
    for index, ranges in ((keys, doc.key_ranges), (values, doc.ranges)):
        for p, r in ranges.items():
            if r not in index or len(p) > len(index[r]):
                index[r] = p
    return keys, values


def _with_context(doc: YamlDoc, diag: Diagnostic, paths: tuple[_Paths, _Paths]) -> Diagnostic:
    """A schema diagnostic prefixed with the node or subgraph and the field it is about."""
    span = diag.span
    if span is None:
        return diag
    at = (span.line, span.col, span.end_line, span.end_col)
    # The schema check reports at a value's span or, for an unknown key, at the key's: find that path again.
    key_path = paths[0].get(at)
    path = key_path[:-1] if key_path is not None else paths[1].get(at, ())
    owner = -1
    for i in range(1, len(path)):
        if path[i - 1] in ("nodes", "subgraphs") and isinstance(path[i], int):
            owner = i
    if owner < 0:
        field = path
        prefix = ""
    else:
        field = path[owner + 1 :]
        kind = "node" if path[owner - 1] == "nodes" else "subgraph"
        item: Any = doc.data
        for k in path[: owner + 1]:
            item = item[k]
        name = item.get("name") if isinstance(item, dict) else None
        prefix = f"{kind} '{name}'" if isinstance(name, str) and name else f"{path[owner - 1]}[{path[owner]}]"
    if field:
        text = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in field).lstrip(".")
        prefix = f"{prefix} field '{text}'" if prefix else f"field '{text}'"
    return replace(diag, message=f"{prefix}: {diag.message}") if prefix else diag


def graph_from_doc(doc: YamlDoc, default_name: str) -> ComputeGraph:
    """Build a ComputeGraph from a loaded document, or raise RulepassError with every problem found."""
    if doc.data is None:
        raise error(
            "graph",
            "the graph file is empty; expected a mapping with 'nodes'",
            Span(doc.source.name, 1, 1, 1, 1, doc.source),
        )
    if not isinstance(doc.data, dict):
        kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list"}
        kind = kinds.get(type(doc.data), "a scalar")
        raise error("graph", f"the graph file holds {kind}; expected a mapping with 'nodes'", doc.span(()))
    if "nodes" not in doc.data and "graph" in doc.data and "expect" in doc.data:
        raise error(
            "graph",
            "this is a rule fixture (a graph under 'graph' and its expected decisions under 'expect'), not a graph "
            "file; run it with `rulepass test FILE`, or give the graph on its own",
            doc.span(("graph",), key=True),
        )
    diags = schema_diagnostics(doc, SCHEMA_PACKAGE, SCHEMA_NAME, what="the graph file")
    if diags:
        paths = _paths_by_range(doc)
        raise RulepassError([_with_context(doc, d, paths) for d in diags])
    b = _Builder(doc)
    graph = b.graph(doc.data, [], doc.data.get("name", default_name), None, {})
    if b.diags:
        raise RulepassError(sorted(b.diags, key=lambda d: (d.span.line, d.span.col) if d.span else (0, 0)))
    return graph


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector, restoring its previous state on the way out.

    Building a graph allocates millions of objects and frees none of them: every automatic collection would walk
    all of them again (a quarter or more of the load time of a large graph) to find nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_graph_text(text: str, name: str = "<graph>") -> ComputeGraph:
    """Parse graph-file text (YAML or JSON)."""
    with gc_paused():
        return graph_from_doc(load_text(text, name, lazy_positions=True), Path(name).stem or "graph")


def load_graph(path: str | Path) -> ComputeGraph:
    """Load a graph file (YAML or JSON)."""
    with gc_paused():
        text = read_text(path, what="graph file")
        return graph_from_doc(load_text(text, str(path), lazy_positions=True), Path(path).stem)


# ---- saving ---------------------------------------------------------------------------------------------
# Non-finite floats in attributes are written as the strings "inf", "-inf" and "nan" (JSON has no such numbers,
# and a model file must be valid JSON); a string attribute that is one of these, behind any number of
# backslashes, is written with one backslash more, so every value reads back as it was written.
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_ESCAPED = re.compile(r"^\\+(?:inf|-inf|nan)$")


def _encode_float(x: Any) -> Any:
    if isinstance(x, float) and x - x != 0.0:  # inf - inf and nan - nan are nan
        return "nan" if x != x else ("inf" if x > 0 else "-inf")
    if isinstance(x, str) and (x in _NON_FINITE or (x[:1] == "\\" and _ESCAPED.match(x))):
        return "\\" + x
    return x


def _decode_float(x: Any) -> Any:
    if isinstance(x, str):
        if x in _NON_FINITE:
            return _NON_FINITE[x]
        if x[:1] == "\\" and _ESCAPED.match(x):
            return x[1:]
    return x


def _attrs_to_data(attrs: dict[str, AttrValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in sorted(attrs.items()):
        if isinstance(v, list):
            out[k] = [_encode_float(x) for x in v]
        else:
            out[k] = _encode_float(v)
    return out


def _desc_to_data(d: TensorDesc) -> dict[str, Any] | str:
    if d.format == "ND" and d.origin_format == "ND" and d.shape == d.origin_shape and not d.attrs:
        return f"{d.dtype}[{','.join(str(x) for x in d.shape)}]"
    out: dict[str, Any] = {"dtype": d.dtype, "shape": list(d.shape), "format": d.format}
    if d.origin_format != d.format or d.origin_shape != d.shape:
        out["origin_shape"] = list(d.origin_shape)
        out["origin_format"] = d.origin_format
    if d.attrs:
        out["attrs"] = _attrs_to_data(d.attrs)
    return out


def _graph_to_data(g: ComputeGraph) -> dict[str, Any]:
    out: dict[str, Any] = {"name": g.name}
    if g.unknown_shape:
        out["unknown_shape"] = True
    if g.attrs:
        out["attrs"] = _attrs_to_data(g.attrs)
    nodes = []
    for n in g.nodes_in_insertion_order():
        op = n.op
        rn: dict[str, Any] = {"name": op.name, "type": op.type}
        if op.engine:
            rn["engine"] = op.engine
        if op.kernel_lib:
            rn["kernel_lib"] = op.kernel_lib
        if op.stream_id != -1:
            rn["stream"] = op.stream_id
        if op.attrs:
            rn["attrs"] = _attrs_to_data(op.attrs)
        inputs: list[Any] = []
        default_names = [f"x{k}" if len(op.input_descs) > 1 else "x" for k in range(len(op.input_descs))]
        for k, peer in enumerate(n.in_peers):
            desc = op.input_descs[k]
            item: Any = None if peer is None else f"{peer.node.name}:{peer.index}"
            same = peer is not None and desc.same_as(peer.desc)
            invalid = peer is None and not desc.is_valid
            if (not same and not invalid) or op.input_names[k] != default_names[k]:
                item = {} if peer is None else {"from": item}
                if not same and not invalid:
                    item["desc"] = _desc_to_data(desc)
                if op.input_names[k] != default_names[k]:
                    item["name"] = op.input_names[k]
            inputs.append(item)
        if inputs:
            rn["inputs"] = inputs
        if n.control_in:
            rn["control_inputs"] = [c.name for c in n.control_in]
        if op.output_descs:
            rn["outputs"] = [_desc_to_data(d) for d in op.output_descs]
        default_out = [f"y{k}" if len(op.output_descs) > 1 else "y" for k in range(len(op.output_descs))]
        if op.output_names != default_out:
            rn["output_names"] = list(op.output_names)
        if op.workspace_bytes:
            rn["workspace"] = list(op.workspace_bytes)
        subs = n.subgraphs()
        if subs:
            rn["subgraphs"] = [_graph_to_data(s) for s in subs]
        nodes.append(rn)
    out["nodes"] = nodes
    return out


def graph_to_data(g: ComputeGraph) -> dict[str, Any]:
    """The graph as plain data in the graph-file format."""
    return _graph_to_data(g)


# A long string of only these characters (base64 text: a Const's `_raw_data`) is written in one piece: PyYAML's
# emitter analyses and writes a scalar character by character in Python, seconds for a model's weights.
_LONG_PLAIN = re.compile(r"[A-Za-z0-9+/=]{256,}")


class _Dumper(yaml.SafeDumper):
    """Quotes every string that a YAML 1.2 reader would take for another type (e.g. '1e3', 'null').

    A long base64-like string takes a fast path giving the same bytes: it has no character that changes the
    emitter's analysis past the first ones, nor a space or line break at which a plain scalar could be split."""

    def analyze_scalar(self, scalar: str) -> Any:
        if not _LONG_PLAIN.fullmatch(scalar):
            return super().analyze_scalar(scalar)
        analysis = super().analyze_scalar(scalar[:64])
        analysis.scalar = scalar
        return analysis

    def write_plain(self, text: str, split: bool = True) -> None:
        if not _LONG_PLAIN.fullmatch(text):
            super().write_plain(text, split)
            return
        super().write_plain(text[:1], split)  # the separator, the state, the first character
        rest = text[1:]
        self.column += len(rest)
        self.stream.write(rest.encode(self.encoding) if self.encoding else rest)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    try:
        style = "'" if plain_scalar(value) != value or not value else None
    except LimitError:  # a long run of digits: it would read back as an (over-long) integer
        style = "'"
    if "\x85" in value:  # PyYAML writes NEL raw in quoted scalars and reads it back folded to a space
        style = '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_graph(g: ComputeGraph, fmt: str = "yaml") -> str:
    """The graph as graph-file text, deterministic: 'yaml' or 'json'."""
    data = graph_to_data(g)
    if fmt == "json":
        # The loader reads JSON with a YAML parser, which rejects the surrogate-pair escapes ensure_ascii writes
        # for characters beyond U+FFFF, and folds raw U+0085/U+2028/U+2029 as line breaks: keep non-ASCII
        # characters as they are and escape only those the YAML reader cannot take literally.
        try:
            text = json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False, allow_nan=False)
        except ValueError:  # JSON has no inf/nan; Python's 'Infinity' would read back as a string
            raise error(
                "graph",
                f"graph '{g.name}' has an infinite or NaN float attribute, which JSON cannot hold",
                hint="save the graph as YAML (.yaml), where it is written .inf",
                where=g.name,
            ) from None
        return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=110, allow_unicode=True)


def copy_graph(g: ComputeGraph) -> ComputeGraph:
    """An independent deep copy of a graph."""
    return g.copy()


def save_graph(g: ComputeGraph, path: str | Path) -> None:
    """Write the graph to `path` (JSON when it ends in .json, else YAML), atomically."""
    p = Path(path)
    text = dump_graph(g, "json" if p.suffix.lower() == ".json" else "yaml")
    with atomic_output(p, what="graph file") as f:
        f.write(text)
