"""Rule fixtures: small graphs with the decision expected for every candidate, run like a test suite.

A rule author tests an edit the way a Semgrep user does: `fixtures/<stem>/*.yaml` beside `<stem>.yaml` holds
graphs and, per candidate node, `fired` or the name of the check it must miss at (optionally the element it
must stop at), or `not-a-candidate` for a node no rule of the file may take up, plus attributes (`expect_attrs`)
and node fields such as the engine and kernel library (`expect_fields`) that must hold afterwards. Every
candidate must be listed, so a rule that starts firing where it should not is caught. `rulepass test` and the
test suite both run them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.diagnostics import Diagnostic, RulepassError, did_you_mean, error
from ..base.schema import schema_diagnostics
from ..base.yaml_source import load_file
from ..dsl.load import RuleSet
from ..engine.decisions import Decision
from .facts import ge_catalogue
from .graph_file import graph_from_doc
from .ir import ComputeGraph, Node
from .passes import build_pass_manager, load_ge_rules

FIXTURES_DIR = "fixtures"


@dataclass(frozen=True)
class CaseResult:
    """The outcome for one expectation of a fixture file."""

    fixture: str
    node: str
    ok: bool
    message: str

    @property
    def id(self) -> str:
        """`fixture::node`, as a test runner prints it."""
        return f"{self.fixture}::{self.node}"


def rule_file_of(fixture: Path) -> Path:
    """The rule file a fixture tests, by its location `<dir>/fixtures/<stem>/x.yaml` -> `<dir>/<stem>.yaml`."""
    return fixture.parent.parent.parent / f"{fixture.parent.name}.yaml"


def fixtures_of(rule_file: Path) -> list[Path]:
    """The fixture files of a rule file (sorted)."""
    folder = rule_file.parent / FIXTURES_DIR / rule_file.stem
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def collect(paths: Iterable[str | Path]) -> tuple[list[tuple[Path, Path]], list[Diagnostic]]:
    """(rule file, fixture file) pairs for rule files, fixture files or folders of either."""
    pairs: list[tuple[Path, Path]] = []
    diags: list[Diagnostic] = []
    for p in map(Path, paths):
        if p.is_dir():
            if p.name == FIXTURES_DIR or p.parent.name == FIXTURES_DIR:
                for f in sorted(p.rglob("*.yaml")):
                    pairs.append((rule_file_of(f), f))
            else:
                for r in sorted(p.glob("*.yaml")):
                    pairs.extend((r, f) for f in fixtures_of(r))
        elif not p.exists():
            diags.append(Diagnostic("io", f"'{p}' does not exist", where=str(p)))
        elif p.parent.parent.name == FIXTURES_DIR:
            pairs.append((rule_file_of(p), p))
        else:
            found = fixtures_of(p)
            if not found:
                diags.append(
                    Diagnostic(
                        "io",
                        f"rule file '{p}' has no fixtures (expected them in {p.parent / FIXTURES_DIR / p.stem}/)",
                        where=str(p),
                    )
                )
            pairs.extend((p, f) for f in found)
    return pairs, diags


#: The expectation of a node that must not be a candidate of the rule file (or of the pass named after `@`).
NOT_A_CANDIDATE = "not-a-candidate"


def _expected(raw: Any) -> tuple[str, str | None]:
    if isinstance(raw, str):
        return raw, None
    return str(raw["check"]), raw.get("element")


def _confined_rule_file(default: Path, fixture: Path, given: str, doc: Any) -> Path:
    """A fixture's `rule_file`, which must name a file in the rule folder the fixture belongs to (resolved, so
    neither `..` nor a symlink leads out of it): a fixture cannot make `rulepass test` read files elsewhere."""
    folder = default.parent.resolve()
    chosen = (fixture.parent / given).resolve()
    if chosen.parent != folder:
        raise error(
            "fixture",
            f"rule_file '{given}' is outside the fixture's rule folder '{folder}'",
            doc.span(("rule_file",)),
            hint="a fixture tests a rule file of its own folder, e.g. rule_file: ../../other.yaml",
        )
    return chosen


def run_fixture(rule_file: Path, fixture: Path, rule_sets: dict[Path, RuleSet] | None = None) -> list[CaseResult]:
    """Run one fixture file against its rule file; one result per expectation (errors are results too)."""
    name = str(fixture)
    try:
        doc = load_file(fixture, what="fixture file")
        diags = schema_diagnostics(doc, "rulepass.compiler", "fixture.schema.json", what="the fixture file")
        if diags:
            raise RulepassError(diags)
        data = doc.data
        if "rule_file" in data:
            rule_file = _confined_rule_file(rule_file, fixture, data["rule_file"], doc)
        # The fixture runs the whole rule folder, as production does (placement, other passes, their order),
        # but only the decisions of the rules defined in the file under test are judged.
        folder = rule_file.parent
        cache = rule_sets if rule_sets is not None else {}
        rs = cache.get(folder)
        if rs is None:
            rs = cache[folder] = load_ge_rules([folder])
        tested = {r.name for r in rs.rules if Path(r.rule.file).resolve() == rule_file.resolve()}
        if not tested and not rs.errors:
            raise RulepassError([Diagnostic("fixture", f"rule file '{rule_file}' defines no rule", where=name)])
        graph = graph_from_doc(doc.sub(["graph"]), fixture.stem)
        pm = build_pass_manager(rs, level=data.get("level", "O3"))
        reports = pm.run(graph)
    except RulepassError as exc:
        return [CaseResult(name, "<load>", False, "\n".join(d.render() for d in exc.diagnostics))]
    # every decision of the tested file's rules, by node; `node@Pass` names one when several rules decide a node
    by_node: dict[str, dict[str, Decision]] = {}
    for r in reports:
        if r.name in tested:
            for dec in r.decisions:
                if dec.node:
                    by_node.setdefault(dec.node, {})[r.name] = dec
    results: list[CaseResult] = []
    expect: dict[str, Any] = data["expect"]
    covered: set[tuple[str, str]] = set()
    for key, raw in expect.items():
        want, element = _expected(raw)
        node, _, pass_name = key.partition("@")
        found = by_node.get(node, {})
        d: Decision | None
        if pass_name:
            d = found.get(pass_name)
        elif len(found) > 1:
            results.append(
                CaseResult(
                    name,
                    key,
                    False,
                    f"'{node}' is decided by {', '.join(sorted(found))}: write the expectation as '{node}@<pass>'",
                )
            )
            covered.update((node, p) for p in found)
            continue
        else:
            d = next(iter(found.values()), None)
        if d is None:
            where = f"pass {pass_name}" if pass_name else f"any rule in {rule_file.name}"
            ok = want == NOT_A_CANDIDATE
            results.append(CaseResult(name, key, ok, "ok" if ok else f"'{node}' is not a candidate of {where}"))
            continue
        covered.add((node, d.rule))
        got = "fired" if d.fired else (d.check or "?")
        if want == NOT_A_CANDIDATE:
            got = f"a candidate of {d.rule} ({'fired' if d.fired else 'missed at ' + got})"
        ok = got == want
        msg = f"expected {want}, got {got}" + ("" if d.fired else f" ({d.summary()})")
        if ok and element is not None and not d.fired:
            elems = " ".join(d.elements) + " " + " ".join(d.reason.elements() if d.reason else [])
            ok = element in elems
            msg = f"expected the miss at an element containing {element!r}; it stopped at {elems.strip() or 'none'}"
        results.append(CaseResult(name, key, ok, "ok" if ok else msg))
    for node, found in by_node.items():
        for pass_name, d in found.items():
            if (node, pass_name) not in covered:
                what = "fired" if d.fired else "missed at " + str(d.check)
                label = node if len(found) == 1 else f"{node}@{pass_name}"
                results.append(CaseResult(name, label, False, f"candidate '{label}' has no expectation (it {what})"))
    results.extend(_expected_values(name, graph, data))
    return results


def _expected_values(name: str, graph: ComputeGraph, data: dict[str, Any]) -> list[CaseResult]:
    """The results of `expect_inputs` (node -> its inputs' producers), `expect_attrs` (node -> attributes) and
    `expect_fields` (node -> fields of the catalogue's Node, read as rules read them: engine, kernel_lib, ...)
    after the passes ran."""
    cat = ge_catalogue()
    results: list[CaseResult] = []
    for node, inputs in (data.get("expect_inputs") or {}).items():  # after a structural action
        n = _find_node(graph, node)
        if n is None:
            results.append(CaseResult(name, f"{node} inputs", False, f"no node '{node}' in the graph"))
            continue
        got_inputs = [str(p) if p is not None else None for p in n.in_peers]
        ok = got_inputs == inputs
        results.append(CaseResult(name, f"{node} inputs", ok, "ok" if ok else f"expected {inputs}, got {got_inputs}"))
    for key, what in (("expect_attrs", "attrs"), ("expect_fields", "fields")):
        for node, want in (data.get(key) or {}).items():
            n = _find_node(graph, node)
            if n is None:
                results.append(CaseResult(name, f"{node} {what}", False, f"no node '{node}' in the graph"))
                continue
            bad = []
            for k, v in want.items():
                if what == "attrs":
                    got = n.op.attrs.get(k)
                else:
                    spec = cat.field("Node", k)
                    if spec is None:
                        hint = did_you_mean(k, cat.field_names("Node")) or "see `rulepass catalogue`"
                        bad.append(f"Node has no field '{k}' ({hint})")
                        continue
                    got = spec.get(n)
                if got != v:
                    bad.append(f"{k}={got!r} (expected {v!r})")
            results.append(CaseResult(name, f"{node} {what}", not bad, "ok" if not bad else "; ".join(bad)))
    return results


def _find_node(graph: ComputeGraph, name: str) -> Node | None:
    """The node called `name` in `graph` or one of its subgraphs."""
    return next((g.node(name) for g in [graph, *graph.all_subgraphs()] if g.node(name) is not None), None)


def run_fixtures(paths: Sequence[str | Path]) -> tuple[list[CaseResult], list[Diagnostic]]:
    """Run the fixtures found under `paths`."""
    pairs, diags = collect(paths)
    cache: dict[Path, RuleSet] = {}
    results: list[CaseResult] = []
    for rule_file, fixture in pairs:
        results.extend(run_fixture(rule_file, fixture, cache))
    return results, diags
