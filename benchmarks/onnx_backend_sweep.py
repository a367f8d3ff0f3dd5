"""Models the project has never seen, against an oracle: the ONNX backend test data of the installed onnx package.

    python benchmarks/onnx_backend_sweep.py [--folders node,simple,...] [--pattern GLOB] [--limit N]
        [--formats keep[,ascend]] [--timeout S] [--json OUT]

Sources, all from the installed `onnx` package (nothing is downloaded):

- `node` — the single-op test cases (`onnx.backend.test.case.node.collect_testcases()`: the models and data sets
  `python -m onnx.backend.test.cmd_tools generate-data` writes; recent onnx wheels ship this generator, not the
  files);
- `pytorch-converted`, `pytorch-operator`, `simple` — folders of `onnx/backend/test/data/` with `model.onnx` and
  `test_data_set_0/{input,output}_*.pb`;
- `light` — model-zoo graphs without inputs: imported, compiled and run on seeded inputs, no oracle;
- `real` — only URLs (a download): counted as skipped.

Each model is imported (`import_onnx`, the input shapes of its data set), compiled (`api.compile_graph`, bundled
rules), run (`api.run_model`) and its outputs compared with the stored ones: same shape and dtype, floats within
max |out - ref| <= 1e-3 x max(1, max |ref|) (NaN where the reference has NaN), anything else exactly (a model with
a random op: shapes and dtypes only, counted "ran (no oracle)"). A model whose inputs or outputs are not tensors
(sequence / optional / map) or that uses the training domain is skipped with that reason. Each model runs in a
worker process with a timeout.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from real_models import RELATIVE_TOLERANCE, first_line, run_outputs

from rulepass.api import RuleSet, compile_graph, load_rules

DATA = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data"
FOLDERS = ("node", "pytorch-converted", "pytorch-operator", "simple", "light", "real")
RANDOM_OPS = {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}
OUTCOMES = ("passed", "ran (no oracle)", "wrong", "import", "compile", "run", "timeout", "skipped")


@dataclass
class Case:
    """One model and its data set: inputs in graph-input order, expected outputs (None: no oracle)."""

    folder: str
    name: str
    model: bytes = b""
    inputs: list[Any] = field(default_factory=list)
    outputs: list[Any] | None = None
    problem: str = ""  # why the case could not even be read (reported as an import failure)


@dataclass
class Row:
    """One model's outcome (see OUTCOMES) and the first line of its error."""

    folder: str
    model: str
    formats: str
    outcome: str
    error: str = ""


# ---- the cases ---------------------------------------------------------------------------------------------
def _read_pb(path: Path) -> Any:
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def dir_case(folder: str, path: Path) -> Case:
    """A case from a folder holding `model.onnx` and `test_data_set_0/` (or a light `NAME.onnx`)."""
    case = Case(folder, path.name.removesuffix(".onnx"))
    try:
        model_file = path if path.suffix == ".onnx" else path / "model.onnx"
        case.model = model_file.read_bytes()
        data = path / "test_data_set_0"
        if data.is_dir():
            n_in = len(list(data.glob("input_*.pb")))
            n_out = len(list(data.glob("output_*.pb")))
            case.inputs = [_read_pb(data / f"input_{i}.pb") for i in range(n_in)]
            case.outputs = [_read_pb(data / f"output_{i}.pb") for i in range(n_out)]
    except Exception as exc:  # an unreadable case is a row, not a crash
        case.problem = f"cannot read the case: {type(exc).__name__}: {exc}"
    return case


def node_cases() -> Iterator[Case]:
    """The single-op cases the installed onnx package generates (its `node` test data)."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    for c in cases:
        assert c.model is not None and c.data_sets
        inputs, outputs = c.data_sets[0]
        yield Case("node", c.name, c.model.SerializeToString(), _arrays(inputs), _arrays(outputs))


def _arrays(values: Sequence[Any]) -> list[Any]:
    """A data set's values as arrays: the generator gives a TensorProto where numpy has no dtype (bfloat16, ...)."""
    return [numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v for v in values]


def cases(folders: Sequence[str], pattern: str = "*") -> Iterator[Case]:
    """Every case of the folders, in folder then name order, whose name matches the glob."""
    for folder in folders:
        if folder == "node":
            found = sorted(node_cases(), key=lambda c: c.name)
        elif folder == "light":
            found = [dir_case(folder, p) for p in sorted((DATA / folder).glob("*.onnx"))]
        else:
            found = [dir_case(folder, p) for p in sorted((DATA / folder).iterdir()) if p.is_dir()]
        yield from (c for c in found if fnmatch.fnmatchcase(c.name, pattern))


# ---- one model ---------------------------------------------------------------------------------------------
def skip_reason(model: onnx.ModelProto) -> str | None:
    """Why a model is not measured (it clearly cannot import), or None."""
    for vi in list(model.graph.input) + list(model.graph.output):
        kind = vi.type.WhichOneof("value")
        if kind not in ("tensor_type", None):
            return f"non-tensor graph input/output ({kind})"
    if any(o.domain.startswith("ai.onnx.preview.training") for o in model.opset_import):
        return "training-domain op"
    return None


def compare(outs: Sequence[np.ndarray], refs: Sequence[Any]) -> str | None:
    """None when the outputs match the references, else what differs first."""
    if len(outs) != len(refs):
        return f"{len(outs)} outputs, expected {len(refs)}"
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        ref = np.asarray(ref)
        if tuple(out.shape) != tuple(ref.shape):
            return f"output {i}: shape {list(out.shape)}, expected {list(ref.shape)}"
        if out.dtype != ref.dtype:
            return f"output {i}: dtype {out.dtype}, expected {ref.dtype}"
        if ref.dtype.kind not in "fc":
            if not np.array_equal(out, ref):
                return f"output {i}: {int(np.sum(out != ref))} of {ref.size} elements differ ({ref.dtype})"
            continue
        nan = np.isnan(ref)
        if not np.array_equal(nan, np.isnan(out)):
            return f"output {i}: NaN where the reference has none, or the reverse"
        a, b = out[~nan].astype(np.complex128), ref[~nan].astype(np.complex128)
        finite = np.isfinite(b)
        if not np.array_equal(a[~finite], b[~finite]):
            return f"output {i}: an infinity differs"
        bound = RELATIVE_TOLERANCE * max(1.0, float(np.max(np.abs(b[finite]))) if finite.any() else 1.0)
        err = float(np.max(np.abs(a[finite] - b[finite]))) if finite.any() else 0.0
        if not err <= bound:
            return f"output {i}: max abs error {err:.3g} > {bound:.3g}"
    return None


_RULES: list[RuleSet] = []


def measure(case: Case, formats: str = "keep") -> Row:
    """One case in one format mode: import, compile, run, compare; a failure is a row, never an exception."""
    from rulepass.compiler.onnx_import import import_onnx

    row, where = Row(case.folder, case.name, formats, "import"), "\0"
    if case.folder == "real":
        row.outcome, row.error = "skipped", "only a URL (needs a download)"
        return row
    if case.problem:
        row.error = case.problem
        return row
    try:
        model = onnx.load_from_string(case.model)
        reason = skip_reason(model)
        if reason is not None:
            row.outcome, row.error = "skipped", reason
            return row
        initializers = {t.name for t in model.graph.initializer}
        names = [vi.name for vi in model.graph.input if vi.name not in initializers]
        inputs = dict(zip(names, (np.asarray(v) for v in case.inputs), strict=False))
        shapes = {n: list(v.shape) for n, v in inputs.items()}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{case.name}.onnx"
            path.write_bytes(case.model)
            where = f"{tmp}{os.sep}"
            graph = import_onnx(path, format_mode=formats, input_shapes=shapes, weights="inline").graph
        row.outcome = "compile"
        if not _RULES:
            _RULES.append(load_rules())
        compiled = compile_graph(graph, _RULES[0])
        row.outcome = "run"
        outs = run_outputs(compiled, inputs)
    except Exception as exc:  # a stage's failure is the measurement: recorded, not raised
        row.error = first_line(exc).replace(where, "")  # the same message whatever the temporary folder
        return row
    if case.outputs is None:
        row.outcome = "ran (no oracle)"
        return row
    if any(n.op_type in RANDOM_OPS for n in model.graph.node):  # random values: only their shapes and dtypes
        refs = [np.asarray(r) for r in case.outputs]
        wrong = compare([np.zeros(o.shape, o.dtype) for o in outs], [np.zeros(r.shape, r.dtype) for r in refs])
        row.outcome, row.error = ("ran (no oracle)", "random op") if wrong is None else ("wrong", wrong)
        return row
    wrong = compare(outs, case.outputs)
    row.outcome, row.error = ("passed", "") if wrong is None else ("wrong", wrong)
    return row


# ---- many models, each in a worker with a timeout -------------------------------------------------------------
def sweep(
    todo: Sequence[Case], formats: Sequence[str], timeout: float, log: Callable[[str], None] | None = None
) -> list[Row]:
    """Every case in every format mode, one worker process at a time; a case over `timeout` s is a row."""
    ctx = multiprocessing.get_context("fork")
    pool: Pool = ctx.Pool(1)
    rows: list[Row] = []
    try:
        for case in todo:
            for fm in formats:
                try:
                    row = pool.apply_async(measure, (case, fm)).get(timeout)
                except multiprocessing.TimeoutError:
                    pool.terminate()
                    pool = ctx.Pool(1)
                    row = Row(case.folder, case.name, fm, "timeout", f"over {timeout:g} s")
                except Exception as exc:  # the worker died (e.g. out of memory)
                    pool.terminate()
                    pool = ctx.Pool(1)
                    row = Row(case.folder, case.name, fm, "run", f"worker died: {first_line(exc)}")
                rows.append(row)
                if log:
                    log(f"  {row.folder}/{row.model} ({fm}): {row.outcome} {row.error}")
    finally:
        pool.terminate()
        pool.join()
    return rows


# ---- the tables ----------------------------------------------------------------------------------------------
def cause(row: Row) -> str:
    """A failure's cause, grouped: its stage, error code and first words; numbers, names and shapes elided."""
    coded = re.search(r"error\[([^\]]+)\]:\s*(.*)", row.error)
    text = f"[{coded.group(1)}] {coded.group(2)}" if coded else row.error
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"(?<![\w\[])\d+(\.\d+)?(e[-+]?\d+)?", "N", text)
    text = re.sub(r"(?<=\S)\[[^\]]*\]", "[…]", text)
    text = re.sub(r"[\w./-]+:N\b", "…", text)  # a tensor named by node:output
    return f"{row.outcome}: {' '.join(text.split()[:10])}"


def render(rows: Sequence[Row], top: int = 15) -> str:
    """The markdown summary: counts per outcome per folder, then the top failure causes with an example."""
    folders = [f for f in FOLDERS if any(r.folder == f for r in rows)]
    used = [o for o in OUTCOMES if any(r.outcome == o for r in rows)]
    lines = ["| folder | models | " + " | ".join(used) + " |", "|" + "---|" * (len(used) + 2)]
    for f in [*folders, "all"]:
        mine = [r for r in rows if f in ("all", r.folder)]
        n = Counter(r.outcome for r in mine)
        lines.append(f"| {f} | {len(mine)} | " + " | ".join(str(n.get(o, 0)) for o in used) + " |")
    failures = [r for r in rows if r.outcome not in ("passed", "ran (no oracle)", "skipped")]
    causes = Counter(cause(r) for r in failures)
    example = {}
    for r in failures:
        example.setdefault(cause(r), r.model)
    lines += ["", "| failure cause | models | e.g. |", "|---|---|---|"]
    for c, n in causes.most_common(top):
        lines.append(f"| `{c.replace('|', '/')}` | {n} | {example[c]} |")
    skips = Counter(r.error for r in rows if r.outcome == "skipped")
    if skips:
        lines.append("\nSkipped: " + "; ".join(f"{n} {why}" for why, n in skips.most_common()) + ".")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Sweep the chosen folders and print the summary."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--folders", default=",".join(FOLDERS), help="comma-separated (default: all)")
    parser.add_argument("--pattern", default="*", help="only the models whose name matches this glob")
    parser.add_argument("--limit", type=int, default=0, help="at most this many models (0: all)")
    parser.add_argument("--formats", default="keep", help="comma-separated: keep,ascend")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per model (default 20)")
    parser.add_argument("--json", type=Path, help="also write the raw rows as JSON")
    parser.add_argument("--quiet", action="store_true", help="no per-model log on stderr")
    parser.add_argument("--top", type=int, default=15, help="how many failure causes to list (default 15)")
    parser.add_argument("--from-json", type=Path, help="render the rows a previous --json wrote; run nothing")
    args = parser.parse_args(argv)
    folders = [s for s in args.folders.split(",") if s]
    formats = [s for s in args.formats.split(",") if s]
    unknown = sorted(set(folders) - set(FOLDERS)) + sorted(set(formats) - {"keep", "ascend"})
    if unknown:
        parser.error(f"unknown folder(s) or format(s): {', '.join(unknown)}")
    if args.from_json:
        print(render([Row(**r) for r in json.loads(args.from_json.read_text(encoding="utf-8"))], args.top))
        return 0
    todo = list(cases(folders, args.pattern))
    if args.limit > 0:
        todo = todo[: args.limit]
    log = None if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    rows = sweep(todo, formats, args.timeout, log)
    print(f"onnx {onnx.__version__}, formats {','.join(formats)}, pattern {args.pattern!r}\n")
    print(render(rows, args.top))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
