"""Mutation campaign: does every rule edit that changes a model's outputs get stopped by the soundness checker?

For every check of every bundled no-task rule (and every check inside the shared checks they `use`), a mutant
rule set with that check deleted; and for every integer constant in those checks' expressions, a mutant with it
changed (n -> n + 1). Mutants are made by editing the loaded YAML data and dumping it, never by editing text.
Each mutant is loaded with `rulepass.api.load_rules` and run over the examples and the rule fixtures' graphs
(made runnable: unfed inputs get a Data node, dangling outputs an Identity into a NetOutput). Per mutant x graph:

- the marks equal the unmutated rules' marks: *harmless* (same marked graph, same model);
- the compile refuses it with `zero-copy-unsound`: *caught*; refused by another compile check: *refused*;
- it compiles: run it and the graph evaluated directly on the same seeded inputs; outputs equal bit for bit:
  *harmless*, else *unsound-and-missed*. A graph the reference runtime cannot run is *not runnable*.

A mutant is caught if any graph catches it, unsound-and-missed if any graph misses it, else harmless.
`python benchmarks/mutation_campaign.py` prints the matrix as a markdown table (docs/safety.md holds it).
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rulepass.compiler.graph_file import copy_graph, graph_from_doc
from rulepass.compiler.ir import ComputeGraph, OpDesc
from rulepass.compiler.runtime import evaluate_graph, run_model
from rulepass.dsl.load import RuleSet
from rulepass.examples import example_path
from rulepass.rules import bundled_rules_dir

from rulepass.api import compile_graph, load_graph, load_rules, optimize
from rulepass.base.diagnostics import RulepassError
from rulepass.base.yaml_source import load_file

NO_TASK_FILES = ("concat_notask.yaml", "pack_notask.yaml", "split_notask.yaml", "notask_base.yaml")
SKIPPED_KEYS = frozenset({"name", "description", "$schema"})
_INT = re.compile(r"(?<![\w.'\"])\d+(?![\w.'\"])")


@dataclass(frozen=True)
class Mutant:
    """One edit of one rule file: its id (file, path of the check, what changed) and the edited YAML data."""

    id: str
    file: str
    kind: str  # "delete" or "constant"
    data: dict[str, Any]


# ---- mutants --------------------------------------------------------------------------------------------------
def _check_lists(data: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """Every list of checks in a rule file, with a readable path: rule checks and shared checks' nested checks."""

    def nested(path: str, checks: list[Any]) -> Iterator[tuple[str, list[Any]]]:
        yield path, checks
        for item in checks:
            if isinstance(item, dict) and isinstance(item.get("checks"), list):
                yield from nested(f"{path}/{item.get('name', '?')}", item["checks"])

    for rule in data.get("rules") or []:
        yield from nested(str(rule["name"]), rule["checks"])
    for shared in data.get("shared_checks") or []:
        if isinstance(shared.get("checks"), list):
            yield from nested(str(shared["name"]), shared["checks"])


def _label(item: Any) -> str:
    return f"use {item['use']}" if "use" in item else str(item.get("name", "?"))


def deletion_mutants(file: str, data: dict[str, Any]) -> list[Mutant]:
    """A mutant per check item whose list keeps at least one other item."""
    out: list[Mutant] = []
    for path, checks in _check_lists(data):
        for k, item in enumerate(checks):
            if len(checks) < 2:
                continue
            copy = deepcopy(data)
            target = next(c for p, c in _check_lists(copy) if p == path)
            del target[k]
            out.append(Mutant(f"{file}: delete {path}/{_label(item)}", file, "delete", copy))
    return out


def _strings(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in SKIPPED_KEYS:
                yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, (*path, i))
    elif isinstance(node, str):
        yield path, node


def _set(data: Any, path: tuple[Any, ...], value: str) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def constant_mutants(file: str, data: dict[str, Any]) -> list[Mutant]:
    """A mutant per integer literal in a check's expressions (and a rule's `let`): n -> n + 1."""
    out: list[Mutant] = []
    roots: list[tuple[str, tuple[Any, ...]]] = []
    for i, rule in enumerate(data.get("rules") or []):
        roots += [(f"{rule['name']}/checks", ("rules", i, "checks")), (f"{rule['name']}/let", ("rules", i, "let"))]
    for i, shared in enumerate(data.get("shared_checks") or []):
        roots.append((str(shared["name"]), ("shared_checks", i)))
    for label, root in roots:
        node: Any = data
        for key in root:
            node = node.get(key) if isinstance(node, dict) else node[key]
            if node is None:
                break
        for path, text in _strings(node):
            names = _names_along(node, path)
            for m in _INT.finditer(text):
                n = int(m.group())
                edited = text[: m.start()] + str(n + 1) + text[m.end() :]
                copy = deepcopy(data)
                _set(copy, (*root, *path), edited)
                around = " ".join(text[max(0, m.start() - 14) : m.end() + 4].split())
                where = "/".join([label, *names])
                out.append(Mutant(f"{file}: {where} `{around}`: {n} -> {n + 1}", file, "constant", copy))
    return out


def _names_along(node: Any, path: tuple[Any, ...]) -> list[str]:
    """The check names (and the final key) along a path into a rule's data."""
    names: list[str] = []
    for key in path:
        node = node[key]
        if isinstance(node, dict) and "name" in node:
            names.append(str(node["name"]))
    if path and isinstance(path[-1], str):
        names.append(path[-1])
    return names


def all_mutants(rules_dir: Path | None = None) -> list[Mutant]:
    """Every deletion and constant mutant of the bundled no-task rule files."""
    folder = rules_dir or bundled_rules_dir()
    out: list[Mutant] = []
    for file in NO_TASK_FILES:
        data = yaml.safe_load((folder / file).read_text(encoding="utf-8"))
        out += deletion_mutants(file, data) + constant_mutants(file, data)
    return out


def load_mutant(mutant: Mutant, workdir: Path, rules_dir: Path | None = None) -> RuleSet:
    """The bundled rule files with the mutant's file replaced, written under `workdir`, loaded by the API."""
    folder = rules_dir or bundled_rules_dir()
    target = workdir / "rules"
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.yaml"):
        old.unlink()
    for src in sorted(folder.glob("*.yaml")):
        text = src.read_text(encoding="utf-8")
        if src.name == mutant.file:
            text = yaml.safe_dump(mutant.data, sort_keys=False, allow_unicode=True)
        (target / src.name).write_text(text, encoding="utf-8")
    return load_rules([target])


# ---- graphs ---------------------------------------------------------------------------------------------------
def runnable(graph: ComputeGraph) -> ComputeGraph:
    """`graph` with every unfed input of a root node fed by a Data node and every dangling output read by an
    Identity into one NetOutput (fixture graphs describe decisions, not runnable models)."""
    g = graph
    feeds = 0
    for node in list(g.nodes_in_insertion_order()):
        if node.type in ("Data", "Const", "Constant", "Variable", "RefData", "NetOutput") or node.op.subgraph_names:
            continue
        if not node.op.input_descs and len(node.op.output_descs) == 1:
            # a producer with no input at all (a fixture's stand-in): an elementwise op of one fed input
            node.op.type = "ReLU"
            node.op.input_descs.append(node.op.output_descs[0].copy())
            node.in_peers.append(None)
        for k, peer in enumerate(node.in_peers):
            if peer is None and k < len(node.op.input_descs):
                d = node.op.input_descs[k].copy()
                d.attrs = {}
                data = g.add_node(OpDesc(f"feed_{feeds}", "Data", {"index": feeds}, [], [d]))
                g.add_data_edge(data, 0, node, k)
                feeds += 1
    dangling = [(n, o.index) for n in list(g.nodes_in_insertion_order()) for o in n.out_anchors if not o.consumers]
    if dangling and not any(n.type == "NetOutput" for n in g.nodes_in_insertion_order()):
        sinks = []
        for k, (n, j) in enumerate(dangling):
            d = n.op.output_descs[j].copy()
            d.attrs = {}
            sink = g.add_node(OpDesc(f"sink_{k}", "Identity", {}, [d.copy()], [d]))
            g.add_data_edge(n, j, sink, 0)
            sinks.append(sink)
        out = g.add_node(OpDesc("sink_out", "NetOutput", {}, [s.op.output_descs[0].copy() for s in sinks], []))
        for k, s in enumerate(sinks):
            g.add_data_edge(s, 0, out, k)
    return g


def campaign_graphs() -> list[tuple[str, ComputeGraph]]:
    """The examples, the no-task rule fixtures' graphs (made runnable) and the real models of the corpus
    (tests/data/models, both format modes, with the manifest's sizes of their symbolic dims), by name."""
    out = [(p.name, load_graph(p)) for p in sorted(example_path().parent.glob("*.yaml"))]
    fixtures = bundled_rules_dir() / "fixtures"
    for folder in ("concat_notask", "pack_notask", "split_notask"):
        for path in sorted((fixtures / folder).glob("*.yaml")):
            doc = load_file(path, what="fixture file")
            if isinstance(doc.data, dict) and "graph" in doc.data:
                try:
                    out.append((f"{folder}/{path.name}", runnable(graph_from_doc(doc.sub(["graph"]), path.stem))))
                except RulepassError:
                    continue  # a fixture of a graph-file error: no graph to compile
    import real_models  # beside this script: the corpus and its manifest

    for entry in real_models.entries():
        for formats in ("keep", "ascend"):
            out.append((f"{entry['name']}[{formats}]", real_models.import_model(entry, formats)))
    return out


# ---- the campaign -----------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """One mutant over every graph: the graphs per verdict."""

    mutant: Mutant
    graphs: dict[str, list[str]] = field(default_factory=dict)
    load_error: str = ""

    @property
    def verdict(self) -> str:
        """caught, unsound-and-missed, harmless, or invalid (the mutant rule set does not load)."""
        if self.load_error:
            return "invalid"
        if self.graphs.get("unsound-and-missed"):
            return "unsound-and-missed"
        if self.graphs.get("caught"):
            return "caught"
        return "harmless"


def _fingerprints(per_rank: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Each rank's outputs as dtype, shape and a digest of their bytes (the arrays themselves are not kept)."""
    return [
        {
            k: f"{a.dtype}{list(a.shape)}:{hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}"
            for k, a in r.items()
        }
        for r in per_rank
    ]


@dataclass
class _Reference:
    marks: list[tuple[str, str, str]]
    outputs: list[dict[str, str]] | None  # the direct evaluation's outputs' fingerprints per rank (None: cannot run)
    ranks: int


def _reference(graph: ComputeGraph, rules: RuleSet) -> _Reference:
    marked = copy_graph(graph)
    optimize(marked, rules, explain=False)
    ranks = _ranks(graph)
    try:
        direct = evaluate_graph(copy_graph(graph), seed=11, ranks=ranks).per_rank
        outputs: list[dict[str, str]] | None = _fingerprints(direct)
    except (RulepassError, ValueError, TypeError, IndexError):
        outputs = None
    return _Reference(marked.attribute_state(), outputs if outputs and outputs[0] else None, ranks)


def _ranks(graph: ComputeGraph) -> int:
    """The ranks a graph's collectives gather over (1 without any)."""
    sizes = [n.op.attrs.get("rank_size") for n in graph.all_nodes() if n.type.startswith("Hcom")]
    return max([s for s in sizes if isinstance(s, int) and not isinstance(s, bool)] or [1])


def _verdict(graph: ComputeGraph, rules: RuleSet, ref: _Reference) -> str:
    marked = copy_graph(graph)
    try:
        optimize(marked, rules, explain=False)
    except RulepassError:
        return "refused"  # e.g. the layout-conflict step meets a layout it cannot make
    if marked.attribute_state() == ref.marks:
        return "harmless"
    try:
        model = compile_graph(copy_graph(graph), rules).model
    except RulepassError as exc:
        return "caught" if exc.diagnostics[0].code == "zero-copy-unsound" else "refused"
    if ref.outputs is None:
        return "not runnable"
    try:
        outputs = _fingerprints(run_model(model, seed=11, ranks=ref.ranks).per_rank)
    except RulepassError:
        return "not runnable"
    return "harmless" if outputs == ref.outputs else "unsound-and-missed"


def run_campaign(mutants: list[Mutant] | None = None, workdir: Path | None = None) -> list[Outcome]:
    """Every mutant over every campaign graph; mutant rule files are written under `workdir` (a temporary
    folder when None)."""
    graphs = campaign_graphs()
    base_rules = load_rules(None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the reference kernels' float overflows on random inputs
        refs = {name: _reference(g, base_rules) for name, g in graphs}
        if workdir is not None:
            return _campaign(mutants, graphs, refs, workdir)
        with tempfile.TemporaryDirectory(prefix="rulepass-mutants-") as tmp:
            return _campaign(mutants, graphs, refs, Path(tmp))


def _campaign(
    mutants: list[Mutant] | None,
    graphs: list[tuple[str, ComputeGraph]],
    refs: dict[str, _Reference],
    workdir: Path,
) -> list[Outcome]:
    out: list[Outcome] = []
    for mutant in mutants if mutants is not None else all_mutants():
        outcome = Outcome(mutant)
        out.append(outcome)
        try:
            rules = load_mutant(mutant, workdir)
        except RulepassError as exc:
            outcome.load_error = exc.diagnostics[0].message
            continue
        reach = _candidate_types(mutant)
        for name, g in graphs:
            # a graph with no candidate of the edited rules cannot change: its marks are the unmutated ones
            touched = any(n.type in reach for n in g.all_nodes())
            verdict = _verdict(g, rules, refs[name]) if touched else "harmless"
            outcome.graphs.setdefault(verdict, []).append(name)
    return out


def _candidate_types(mutant: Mutant) -> frozenset[str]:
    """The op types the mutant's rules match (a shared-checks file: every no-task rule's)."""
    files = [mutant.file] if mutant.file != "notask_base.yaml" else [f for f in NO_TASK_FILES if f != mutant.file]
    types: set[str] = set()
    for f in files:
        data = mutant.data if f == mutant.file else yaml.safe_load((bundled_rules_dir() / f).read_text("utf-8"))
        for rule in data.get("rules") or []:
            types.update(rule.get("match") or [])
    return frozenset(types)


def markdown(outcomes: list[Outcome]) -> str:
    """The mutation matrix as a markdown table, and the totals."""
    lines = [
        "| mutant | verdict | graphs caught | refused otherwise | changed, not runnable | outputs changed, missed |",
        "|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        g = o.graphs
        lines.append(
            f"| {o.mutant.id} | {o.verdict} | {len(g.get('caught', []))} | {len(g.get('refused', []))} | "
            f"{len(g.get('not runnable', []))} | {len(g.get('unsound-and-missed', []))} |"
        )
    totals = dict.fromkeys(("caught", "harmless", "invalid", "unsound-and-missed"), 0)
    for o in outcomes:
        totals[o.verdict] = totals.get(o.verdict, 0) + 1
    lines.append("")
    lines.append(", ".join(f"{k}: {v}" for k, v in totals.items()) + f" (of {len(outcomes)} mutants)")
    return "\n".join(lines)


if __name__ == "__main__":
    results = run_campaign()
    sys.stdout.write(markdown(results) + "\n")
    for o in results:
        for verdict in ("unsound-and-missed", "not runnable"):
            for g in o.graphs.get(verdict, []):
                sys.stderr.write(f"{verdict}: {o.mutant.id} on {g}\n")
