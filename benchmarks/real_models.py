"""Real models end to end: every model of the corpus (tests/data/models) imported, compiled, run, checked.

    python benchmarks/real_models.py [--only NAME,...] [--formats keep,ascend] [--json OUT]
    python benchmarks/real_models.py --model PATH.onnx [--dim NAME=N]...   # a model from outside the corpus

For every model of `tests/data/models/manifest.json` (made by scripts/make_model_corpus.py) and both ONNX
format modes (`keep`, `ascend`), the stages in order, each only when the one before passed:

- import   — `import_onnx` (what `api.load_graph` calls) with the manifest's sizes of the symbolic dims;
- compile  — `api.compile_graph` with the bundled rules, and again with the no-task passes disabled;
- run      — `api.run_model` of both models on the stored seeded inputs;
- no-task  — the two runs' outputs must be bit-identical (the no-task passes change where data lives, not what
             it is);
- oracle   — the outputs against onnxruntime's stored ones: max |out - ref| ≤ 1e-3 × max(1, max |ref|).

A model's row names the first stage that failed and the first line of its error, and the figures of the stages
that passed: nodes, concats / splits made zero-copy, copy bytes and tasks the no-task passes saved, compile time,
the feature-map arena (the model's peak memory) with and without the no-task passes; and, read off the imported
graph, what the later stages will miss beyond the first failure: outputs without a static shape and op types
without a runtime kernel. `benchmarks/run.py --only
models` stores the table in benchmarks/results.json and docs/benchmarks.md; tests/compiler/test_model_corpus.py
runs the same pipeline.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rulepass.compiler.graph_file import copy_graph
from rulepass.compiler.ir import ComputeGraph
from rulepass.compiler.weights import carries_data

from rulepass.api import CompileResult, RuleSet, compile_graph, load_rules, run_model
from rulepass.base.diagnostics import RulepassError

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "models"
MANIFEST = CORPUS / "manifest.json"
FORMATS = ("keep", "ascend")
STAGES = ("import", "compile", "run", "no-task", "oracle")
RELATIVE_TOLERANCE = 1e-3  # max |out - ref| <= 1e-3 * max(1, max |ref|), as issue 31 asks
NO_TASK_RULES = {"ConcatNotaskPass": "concats", "SplitNotaskPass": "splits", "PackNotaskPass": "packs"}


def manifest(path: Path = MANIFEST) -> dict[str, Any]:
    """The corpus manifest (models, their inputs, dims and files)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def entries(names: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The manifest's model entries, all or those named."""
    models: list[dict[str, Any]] = manifest()["models"]
    return [m for m in models if not names or m["name"] in names]


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz file, in their stored order."""
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


@dataclass
class Outcome:
    """One model in one format mode: the stage that failed (None: all passed), its error, and the figures."""

    model: str
    formats: str
    stage: str | None = None
    error: str = ""
    nodes: int = 0
    unknown_shapes: int = 0  # outputs the import left without a static shape
    no_kernel: list[str] = field(default_factory=list)  # op types the runtime has no kernel for
    warnings: list[str] = field(default_factory=list)
    candidates: dict[str, int] = field(default_factory=dict)  # no-task candidates per kind (concats, ...)
    fired: dict[str, int] = field(default_factory=dict)  # of them made zero-copy
    copy_bytes_saved: int = 0
    tasks: int = 0
    tasks_without: int = 0
    compile_s: float = 0.0
    arena: int = 0
    arena_without: int = 0
    max_error: float | None = None
    bound: float | None = None

    @property
    def passed(self) -> bool:
        """Every stage passed."""
        return self.stage is None


def first_line(exc: BaseException) -> str:
    """The first line of an error as a user sees it: a RulepassError's message, else 'internal error: ...'."""
    text = str(exc) if isinstance(exc, RulepassError) else f"internal error: {type(exc).__name__}: {exc}"
    return (text.strip().splitlines() or [""])[0]


def import_model(entry: dict[str, Any], formats: str, warnings: list[str] | None = None) -> ComputeGraph:
    """Import one corpus model in a format mode, with the manifest's sizes of its symbolic dims."""
    from rulepass.compiler.onnx_import import import_onnx

    result = import_onnx(CORPUS / entry["file"], format_mode=formats, dims=entry["dims"], weights="inline")
    if warnings is not None:
        warnings.extend(result.warnings)
    return result.graph


def import_gaps(graph: ComputeGraph) -> tuple[int, list[str]]:
    """What the imported graph shows the later stages will miss, beyond the first failure: the outputs without a
    static shape (compile cannot plan them) and the op types without a runtime kernel (run cannot execute them)."""
    from rulepass.compiler.formats import is_unknown_shape
    from rulepass.compiler.runtime.executor import PASSIVE_TYPES
    from rulepass.compiler.runtime.onnx_ops import is_control_flow, kernel_of

    nodes = graph.all_nodes()
    unknown = sum(1 for n in nodes for d in n.op.output_descs if is_unknown_shape(d.shape))
    missing: set[str] = set()
    for n in nodes:
        if n.type in PASSIVE_TYPES or is_control_flow(n):
            continue
        try:
            kernel_of(n)  # the runtime's own dispatch: a hand-written kernel or the ONNX op
        except RulepassError:
            missing.add(n.type)
    return unknown, sorted(missing)


def compile_both(graph: ComputeGraph, rules: RuleSet) -> tuple[CompileResult, CompileResult, float]:
    """The graph compiled with every pass and (a copy) with the no-task passes disabled; the first's seconds."""
    plain = copy_graph(graph)
    t0 = time.perf_counter()
    with_passes = compile_graph(graph, rules)
    seconds = time.perf_counter() - t0
    off = [r.name for r in rules.rules if r.name in NO_TASK_RULES]
    return with_passes, compile_graph(plain, rules, disabled=off), seconds


def run_outputs(compiled: CompileResult, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs, in order, on the inputs given in the ONNX graph's input order (none: seeded)."""
    result = run_model(compiled, {str(i): v for i, v in enumerate(inputs.values())}, seed=0)
    return [np.asarray(v) for v in result.outputs.values()]


def identical(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> str | None:
    """None when both output lists are bit-identical, else what differs first."""
    if len(a) != len(b):
        return f"{len(a)} outputs against {len(b)}"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return f"output {i}: {x.dtype}{list(x.shape)} differs from {y.dtype}{list(y.shape)} without the passes"
    return None


def oracle_error(outs: Sequence[np.ndarray], refs: dict[str, np.ndarray]) -> tuple[float, float, str | None]:
    """(max abs error, bound, None or what is wrong) of the outputs against onnxruntime's."""
    names = list(refs)
    if len(outs) != len(names):
        return float("inf"), 0.0, f"{len(outs)} outputs, onnxruntime gave {len(names)}"
    worst, bound = 0.0, 0.0
    for name, out in zip(names, outs, strict=True):
        ref = refs[name]
        if tuple(out.shape) != tuple(ref.shape):
            return float("inf"), 0.0, f"output '{name}': shape {list(out.shape)}, onnxruntime's {list(ref.shape)}"
        tol = RELATIVE_TOLERANCE * max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
        err = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
        if not err <= tol:  # (a NaN fails too)
            return err, tol, f"output '{name}': max abs error {err:.3g} > {tol:.3g}"
        worst, bound = max(worst, err), max(bound, tol)
    return worst, bound, None


def _decisions(out: Outcome, compiled: CompileResult, without: CompileResult, seconds: float) -> None:
    for d in compiled.optimize.decisions:
        kind = NO_TASK_RULES.get(d.rule)
        if kind is not None:
            out.candidates[kind] = out.candidates.get(kind, 0) + 1
            out.fired[kind] = out.fired.get(kind, 0) + int(d.fired)
    out.copy_bytes_saved = compiled.memory.copy_bytes_saved
    out.tasks, out.tasks_without = len(compiled.tasks.tasks), len(without.tasks.tasks)
    out.compile_s = seconds
    out.arena = compiled.memory.plan.total("feature_map")
    out.arena_without = without.memory.plan.total("feature_map")


def measure(entry: dict[str, Any], formats: str, rules: RuleSet) -> Outcome:
    """Every stage of one model in one format mode; stops at the first that fails (and says which and why)."""
    out = Outcome(entry["name"], formats)
    stage = "import"
    try:
        graph = import_model(entry, formats, out.warnings)
        out.nodes = len(graph.all_nodes())
        out.unknown_shapes, out.no_kernel = import_gaps(graph)
        stage = "compile"
        compiled, without, seconds = compile_both(graph, rules)
        _decisions(out, compiled, without, seconds)
        stage = "run"
        inputs = load_arrays(CORPUS / entry["inputs_file"]) if "inputs_file" in entry else {}
        outs = run_outputs(compiled, inputs)
        outs_without = run_outputs(without, inputs)
    except Exception as exc:  # a stage's failure is the measurement: recorded, not raised
        out.stage, out.error = stage, first_line(exc)
        return out
    differs = identical(outs, outs_without)
    if differs is not None:
        out.stage, out.error = "no-task", differs
        return out
    if "outputs_file" not in entry:  # a model from outside the corpus: no oracle
        return out
    out.max_error, out.bound, wrong = oracle_error(outs, load_arrays(CORPUS / entry["outputs_file"]))
    if wrong is not None:
        out.stage, out.error = "oracle", wrong + placeholder_note(graph)
    return out


def placeholder_note(graph: ComputeGraph) -> str:
    """Why outputs can differ from onnxruntime's although every kernel ran: Const nodes the importer left
    without their values (the runtime fills those with seeded random numbers)."""
    consts = [n for n in graph.all_nodes() if n.type in ("Const", "Constant")]
    empty = sum(1 for n in consts if not carries_data(n.op))
    return f" ({empty} of {len(consts)} Const nodes carry no value: the runtime seeds them)" if empty else ""


def measure_all(
    names: Sequence[str] = (), formats: Sequence[str] = FORMATS, log: Callable[[str], None] | None = None
) -> list[Outcome]:
    """Every (named) model in every format mode."""
    rules = load_rules()
    rows = []
    for entry in entries(names):
        for fm in formats:
            row = measure(entry, fm, rules)
            if log:
                log(f"  {row.model} ({fm}): " + ("passed" if row.passed else f"{row.stage}: {row.error}"))
            rows.append(row)
    return rows


# ---- the table ---------------------------------------------------------------------------------------------
def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def _zero_copy(r: dict[str, Any]) -> str:
    parts = [f"{r['fired'].get(k, 0)}/{n} {k}" for k, n in sorted(r["candidates"].items()) if n]
    return ", ".join(parts) or "—"


def _verdict(r: dict[str, Any]) -> str:
    if r["stage"] is not None:
        return f"{r['stage']}: `{r['error'].replace('|', '/')}`"
    return "**passed**" if r["max_error"] is not None else "**passed** (no oracle)"


def render(rows: Sequence[dict[str, Any]]) -> str:
    """The markdown table of outcomes (as dicts, the form results.json stores)."""
    head = [
        "model",
        "formats",
        "nodes",
        "unknown shapes; ops without a kernel",
        "zero-copy (made / candidates)",
        "copies saved",
        "tasks without → with",
        "compile s",
        "arena without → with",
        "max error / bound",
        "fails at",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        compiled = r["stage"] not in ("import", "compile")
        cells = [
            r["model"],
            r["formats"],
            str(r["nodes"] or "—"),
            f"{r['unknown_shapes']}; {', '.join(r['no_kernel']) or '—'}" if r["nodes"] else "—",
            _zero_copy(r) if compiled else "—",
            _kib(r["copy_bytes_saved"]) if compiled else "—",
            f"{r['tasks_without']} → {r['tasks']}" if compiled else "—",
            f"{r['compile_s']:.2f}" if compiled else "—",
            f"{_kib(r['arena_without'])} → {_kib(r['arena'])}" if compiled else "—",
            f"{r['max_error']:.2g} / {r['bound']:.2g}" if r["max_error"] is not None else "—",
            _verdict(r),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    passed = sum(1 for r in rows if r["stage"] is None)
    by_stage = {s: sum(1 for r in rows if r["stage"] == s) for s in STAGES}
    summary = ", ".join(f"{n} at {s}" for s, n in by_stage.items() if n)
    return (
        "\n".join(lines)
        + f"\n\n{passed} of {len(rows)} passed end to end"
        + (f"; failed: {summary}." if summary else ".")
    )


def bench_models(log: Callable[[str], None]) -> dict[str, Any]:
    """What `benchmarks/run.py --only models` stores: the manifest's versions and every outcome."""
    rows = [asdict(r) for r in measure_all(log=log)]
    return {"versions": manifest()["versions"], "rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated: keep,ascend")
    parser.add_argument("--json", type=Path, help="also write the outcomes as JSON")
    parser.add_argument(
        "--model", type=Path, help="measure this ONNX file instead (seeded inputs, no oracle): a model from outside"
    )
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=N", help="with --model: a symbolic dim")
    args = parser.parse_args(argv)
    if args.model is not None:
        return _outside(args.model.resolve(), args.dim, [s for s in args.formats.split(",") if s])
    names = [s for s in args.only.split(",") if s]
    formats = [s for s in args.formats.split(",") if s]
    unknown = sorted(set(names) - {e["name"] for e in entries()}) + sorted(set(formats) - set(FORMATS))
    if unknown:
        parser.error(f"unknown model(s) or format(s): {', '.join(unknown)}")
    rows = measure_all(names, formats, log=lambda s: print(s, file=sys.stderr, flush=True))
    data = [asdict(r) for r in rows]
    print(render(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


def _outside(path: Path, dims: Sequence[str], formats: Sequence[str]) -> int:
    """`--model`: the stages up to no-task for a model the corpus does not hold."""
    sizes = {}
    for item in dims:
        name, _, value = item.partition("=")
        if not value.isdigit() or int(value) < 1:
            print(f"real_models.py: --dim expects NAME=POSITIVE_INT, got {item!r}", file=sys.stderr)
            return 2
        sizes[name.strip()] = int(value)
    entry = {"name": path.stem, "file": str(path), "dims": sizes}  # (an absolute file: CORPUS / file is file)
    rules = load_rules()
    rows = [asdict(measure(entry, fm, rules)) for fm in formats]
    print(render(rows))
    return 0 if all(r["stage"] is None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
