"""Fuzzing harness shared by the short CI run (`tests/fuzz/test_fuzz.py`) and the long run (`scripts/fuzz.py`).

One entry point per way a user's bytes enter rulepass: each writes the bytes to a file and runs the command line
on it in-process (`rulepass.cli.main`), classifying what happened:

* ``error``: a clean error (exit 1 or 2, diagnostics on stderr);
* ``accepted``: exit 0;
* ``crash``: an internal error (exit 3) or an exception escaping `main`;
* ``over-limit``: the process ran out of the memory it was given (MemoryError), which the long run enforces
  with resource.setrlimit; a hang is a timeout the long run's supervisor sees.

Inputs come from seeds (the examples, the bundled rules and fixtures, the error corpora, the memplan instances)
mutated byte-wise by a seeded generator, so a run is reproducible from its seed.
"""

from __future__ import annotations

import io
import json
import random
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from rulepass.cli import main

REPO = Path(__file__).resolve().parents[2]

Outcome = str  # "error" | "accepted" | "crash" | "over-limit"


@dataclass(frozen=True)
class Result:
    """What one input did: its outcome, exit code and the first line of stderr (the error's headline)."""

    outcome: Outcome
    code: int
    headline: str


def _cli(argv: list[str]) -> Result:
    out, err = io.StringIO(), io.StringIO()
    try:
        code = main(argv, out=out, err=err)
    except MemoryError:
        return Result("over-limit", -1, "MemoryError")
    text = err.getvalue()
    first = next((line for line in text.splitlines() if "error" in line), text.splitlines()[0] if text else "")
    if code == 3:
        outcome = "over-limit" if "MemoryError" in text else "crash"
    elif code in (1, 2):
        outcome = "error"
    elif code == 0:
        outcome = "accepted"
    else:
        outcome = "crash"
    return Result(outcome, code, first)


# ---- entry points: (file name, how to run the command line on it) --------------------------------------------
def _graph(path: Path) -> Result:
    return (
        _cli(["compile", "--quiet", str(path)]) if path.stat().st_size < 4000 else _cli(["graph", "check", str(path)])
    )


def _rules(path: Path) -> Result:
    return _cli(["validate", str(path)])


def _model(path: Path) -> Result:
    return _cli(["run", str(path), "--max-memory", "256M"])


def _memplan(path: Path) -> Result:
    return _cli(["memplan", str(path)])


_MODEL: list[Path] = []  # the compiled example the inputs are fed to, written once per process


def _inputs(path: Path) -> Result:
    if not _MODEL:
        model = path.with_name("inputs_model.json")
        model.write_bytes(_model_seed())
        _MODEL.append(model)
    return _cli(["run", str(_MODEL[0]), "--inputs", str(path), "--max-memory", "256M"])


def _fixture(path: Path) -> Result:
    # a copy of the bundled rules beside it, so `rule_file: ../x.yaml` in a mutated fixture can name them
    rules = path.parent / "rules"
    if not rules.exists():
        rules.mkdir()
        for f in sorted((REPO / "rules").glob("*.yaml")):
            (rules / f.name).write_bytes(f.read_bytes())
        (rules / "fixtures" / "fuzz").mkdir(parents=True)
    target = rules / "fixtures" / "fuzz" / path.name
    target.write_bytes(path.read_bytes())
    try:
        return _cli(["test", str(target)])
    finally:
        target.unlink()


def _onnx(path: Path) -> Result:
    out = path.with_name("imported.json")
    try:
        return _cli(["import", str(path), "-o", str(out)])
    finally:
        out.unlink(missing_ok=True)


ENTRY_POINTS: dict[str, tuple[str, Callable[[Path], Result]]] = {
    "graph": ("graph.yaml", _graph),
    "graph-json": ("graph.json", _graph),
    "rules": ("rules.yaml", _rules),
    "model": ("model.json", _model),
    "memplan": ("buffers.csv", _memplan),
    "inputs": ("inputs.npz", _inputs),
    "fixture": ("fixture.yaml", _fixture),
    "onnx": ("model.onnx", _onnx),
}


def run_entry(entry: str, data: bytes, folder: Path) -> Result:
    """Write `data` as `entry`'s input file in `folder` and run it."""
    name, run = ENTRY_POINTS[entry]
    path = folder / name
    path.write_bytes(data)
    try:
        return run(path)
    finally:
        path.unlink(missing_ok=True)


def run_argv(argv: list[str]) -> Result:
    """The command line itself as the input."""
    return _cli(argv)


# ---- seeds ---------------------------------------------------------------------------------------------------
def _example(name: str) -> Path:
    return REPO / "examples" / name


def _model_seed() -> bytes:
    from rulepass.api import compile_graph, load_graph, load_rules

    model = compile_graph(load_graph(_example("split_relu_concat.yaml")), load_rules()).model
    return json.dumps(model, indent=1).encode()


def _npz_seed() -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.savez(buf, x=np.arange(3 * 2048, dtype=np.float16).reshape(3, 2048))
    return buf.getvalue()


def seeds(entry: str) -> list[bytes]:
    """The well-formed and error-corpus inputs an entry point's mutations start from."""
    if entry == "graph":
        files = sorted((REPO / "examples").glob("*.yaml")) + sorted((REPO / "tests/corpus/graphs").glob("*.yaml"))
        return [f.read_bytes() for f in files]
    if entry == "graph-json":
        from rulepass.compiler.graph_file import dump_graph, load_graph

        return [dump_graph(load_graph(f), "json").encode() for f in sorted((REPO / "examples").glob("*.yaml"))]
    if entry == "rules":
        files = sorted((REPO / "rules").glob("*.yaml")) + sorted((REPO / "tests/corpus/rules").glob("*.yaml"))
        return [f.read_bytes() for f in files]
    if entry == "model":
        return [_model_seed()]
    if entry == "memplan":
        return [f.read_bytes()[:3000] for f in sorted((REPO / "tests/data/memplan").glob("*.csv"))]
    if entry == "inputs":
        return [_npz_seed()]
    if entry == "fixture":  # each names its rule file, as the fixture runs from a folder of its own
        files = sorted((REPO / "rules" / "fixtures").glob("*/*.yaml"))
        return [
            f.read_bytes() if b"\nrule_file:" in f.read_bytes() else
            f"rule_file: ../../{f.parent.name}.yaml\n".encode() + f.read_bytes()
            for f in files
        ]  # fmt: skip
    if entry == "onnx":
        return [(REPO / "tests/data/models" / f"{m}.onnx").read_bytes() for m in ONNX_SEEDS]
    raise KeyError(entry)


ONNX_SEEDS = ("branches_tiny", "shape_math", "audio_kws", "crnn_ocr", "yolo_head")  # the small corpus models


# ---- mutation ------------------------------------------------------------------------------------------------
# Byte strings a hostile file tends to hold: huge numbers, deep nesting, control characters, YAML features,
# special values; spliced in at random places.
TOKENS: tuple[bytes, ...] = (
    b"9" * 5000,
    b"0x" + b"f" * 3000,
    b"-1",
    b"0",
    b"-2",
    b"4294967296",
    b"1e999",
    b".nan",
    b"[" * 200,
    b"{" * 200,
    b"\n",
    b"\x00",
    b"\x1b[31m",
    b"\xff\xfe",
    b"\xe2\x80\xae",
    b"&a [*a, *a, *a]",
    b"!!python/object:os.system",
    b"---\n",
    b"null",
    b"~",
    b"true",
    b"'",
    b'"',
    b": ",
    b"- ",
    b"\t",
    b"let",
    b"for_each: x in node.inputs",
    b"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((",
    b"not not not not not not not not not not not not not not not not not not",
    b"node.attr_int('a', 0)",
    b"float16[0]",
    b"float16[1099511627776,1099511627776]",
    b"int8[-1]",
    b"ConcatD",
    b"Split",
    b"NetOutput",
    b"rank_size: 100000",
)


def mutate(data: bytes, rng: random.Random, rounds: int | None = None) -> bytes:
    """`data` after a few random byte-level edits: flips, deletions, duplications, splices of TOKENS."""
    buf = bytearray(data)
    for _ in range(rounds if rounds is not None else rng.choice((1, 1, 1, 2, 3))):
        op = rng.randrange(6)
        pos = rng.randint(0, len(buf))
        if op == 0 and buf:  # flip a byte
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:  # delete a run
            del buf[pos : pos + rng.randint(1, 64)]
        elif op == 2 and buf:  # duplicate a run
            start = rng.randrange(len(buf))
            chunk = buf[start : start + rng.randint(1, 256)]
            buf[pos:pos] = chunk * rng.randint(1, 8)
        elif op == 3:  # splice a token
            buf[pos:pos] = rng.choice(TOKENS)
        elif op == 4 and buf:  # replace a number-looking run with a token
            buf[pos : pos + rng.randint(1, 8)] = rng.choice(TOKENS)
        else:  # swap two lines
            lines = bytes(buf).split(b"\n")
            if len(lines) > 2:
                a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[a], lines[b] = lines[b], lines[a]
                buf = bytearray(b"\n".join(lines))
    return bytes(buf)


def mutate_npz(data: bytes, rng: random.Random) -> bytes:
    """An .npz mutated inside its members (so the zip stays readable and the .npy headers are what changes), or
    byte-wise as a whole."""
    if rng.random() < 0.3:
        return mutate(data, rng)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            head, rest = body[:128], body[128:]
            dst.writestr(info.filename, mutate(head, rng) + rest[: rng.choice([len(rest), len(rest) // 2, 0])])
    return out.getvalue()


def _mutate_proto(model: Any, rng: random.Random) -> None:
    """One structural edit of an ONNX ModelProto: a dim, an attribute, an op type, an input name, an
    initializer's dims or raw data, or the opset."""
    graph = model.graph
    node = rng.choice(graph.node) if graph.node else None
    op = rng.randrange(7)
    number = rng.choice([0, -1, 1, 2, 3, 7, 1 << 31, 1 << 62, -(1 << 62)])
    if op == 0 and graph.input:
        dims = graph.input[0].type.tensor_type.shape.dim
        if dims:
            dims[rng.randrange(len(dims))].dim_value = max(number, 0)
    elif op == 1 and node is not None and node.attribute:
        attr = rng.choice(node.attribute)
        if attr.ints:
            attr.ints[rng.randrange(len(attr.ints))] = number
        else:
            attr.i = number
    elif op == 2 and node is not None:
        node.op_type = rng.choice(["Concat", "Split", "If", "Loop", "Reshape", "NoSuchOp", "", "Resize"])
    elif op == 3 and node is not None and node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(["", "missing", graph.node[0].output[0]])
    elif op == 4 and graph.initializer:
        init = rng.choice(graph.initializer)
        if init.dims:
            init.dims[rng.randrange(len(init.dims))] = number
        else:
            init.raw_data = init.raw_data[: rng.randrange(len(init.raw_data) + 1)]
    elif op == 5 and model.opset_import:
        model.opset_import[0].version = rng.choice([0, 1, 6, 99, 1 << 40])
    elif graph.output:
        graph.output[rng.randrange(len(graph.output))].name = rng.choice(["", "\x1b[31m", "a\nb"])


def mutate_onnx(data: bytes, rng: random.Random) -> bytes:
    """An ONNX model with one to three structural edits (so the protobuf stays readable and the importer's checks
    are what is exercised), or mutated byte-wise as a whole."""
    if rng.random() < 0.3:
        return mutate(data, rng)
    import onnx

    model = onnx.load_from_string(data)
    for _ in range(rng.choice((1, 1, 2, 3))):
        _mutate_proto(model, rng)
    return bytes(model.SerializeToString())


def inputs_for(entry: str, seed: int, count: int) -> list[bytes]:
    """`count` mutated inputs of `entry`, reproducible from `seed`."""
    rng = random.Random(f"{entry}:{seed}")
    base = seeds(entry)
    mutator = {"inputs": mutate_npz, "onnx": mutate_onnx}.get(entry, mutate)
    return [mutator(rng.choice(base), rng) for _ in range(count)]


# ---- the command line as input --------------------------------------------------------------------------------
_ARGS = (
    "graph", "check", "validate", "catalogue", "optimize", "explain", "compile", "import", "memory", "run",
    "memplan", "test", "--format", "json", "text", "--level", "O9", "O3", "--disable", "NoSuchPass",
    "ConcatNotaskPass", "--node", "concat", "\x1b[31m", "--rule", "--threads", "100000", "0", "-1", "4",
    "--ranks", "99999999999999999999", "--seed", "-3", "--max-memory", "1K", "8G", "lots", "-o", "/dev/null", "-",
    "/dev/zero", "/nonexistent", "--inputs", "--dim", "a=0", "b=1", "--verify", "--no-verify", "--rules",
    "--buffer-optimize", "l1_optimize", "--single-stream", "--dry-run", "--timings", "--baseline", "--offsets",
    "-v", "--help", "--version", "",
)  # fmt: skip


def argv_for(seed: int, count: int, examples: list[str]) -> list[list[str]]:
    """`count` random command lines (from the vocabulary above and the example files), reproducible."""
    rng = random.Random(f"argv:{seed}")
    vocab = list(_ARGS) + examples
    out = []
    for _ in range(count):
        argv = [rng.choice(["graph", "validate", "optimize", "explain", "compile", "memory", "run", "memplan"])]
        argv += [rng.choice(vocab) for _ in range(rng.randint(0, 5))]
        out.append([a for a in argv if a not in ("-o", "--help", "--version")] if "-o" in argv else argv)
    return out


# ---- structure-aware inputs (hypothesis strategies over the graph schema and the expression grammar) ----------
def graph_strategy() -> st.SearchStrategy[bytes]:
    """Graph files as JSON: a chain of nodes of known types, names with hostile characters, shorthand descriptors
    with extreme dims, edges to earlier nodes; mostly well-formed, so the later stages see them."""
    names = st.one_of(st.sampled_from(["a", "b", "c", "concat", "x"]), st.text(min_size=1, max_size=8))
    dims = st.lists(st.sampled_from([0, 1, 2, 16, 2048, -1, -2, -3, 1 << 40, 10**30]), max_size=5)
    dtype = st.sampled_from(["float16", "float32", "int8", "uint1", "bool", "complex128", "floatX"])
    desc = st.builds(lambda d, s: f"{d}[{','.join(map(str, s))}]", dtype, dims)
    types = st.sampled_from(["Data", "Const", "ConcatD", "SplitD", "Pack", "Relu", "HcomAllGather", "NetOutput"])
    attrs = st.dictionaries(
        st.sampled_from(["concat_dim", "N", "axis", "split_dim", "num_split", "index", "rank_size", "_no_task"]),
        st.one_of(st.integers(-(10**20), 10**20), st.booleans(), st.text(max_size=4)),
        max_size=4,
    )

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        nodes: list[dict[str, object]] = []
        for k in range(draw(st.integers(1, 8))):
            name = draw(names) + str(k)
            node: dict[str, object] = {"name": name, "type": draw(types), "attrs": draw(attrs)}
            if nodes:
                node["inputs"] = [draw(st.sampled_from(nodes))["name"] for _ in range(draw(st.integers(0, 3)))]
            node["outputs"] = draw(st.lists(desc, max_size=2))
            if draw(st.booleans()):
                node["engine"] = node["kernel_lib"] = "AIcoreEngine"
            nodes.append(node)
        return json.dumps({"nodes": nodes}).encode()

    return build()


def expression_strategy() -> st.SearchStrategy[str]:
    """Expressions of the rule language, from its catalogue's words and operators, nested at random."""
    atoms = st.sampled_from(
        ["node", "node.inputs", "node.input_descs", "node.attr_int('axis', 0)", "graph", "1", "0", "-1", "'s'",
         "true", "null", "[1, 2]", "node.name", "9" * 1200, "0x" + "f" * 900, "1.5e308", "node.input_count"]
    )  # fmt: skip

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.builds(
                lambda a, op, b: f"({a} {op} {b})",
                inner,
                st.sampled_from(["+", "-", "*", "/", "%", "==", "<", "and", "or", "in"]),
                inner,
            ),
            st.builds(lambda a: f"not {a}", inner),
            st.builds(lambda a: f"len({a})", inner),
            st.builds(lambda a: f"{a}[0]", inner),
            st.builds(lambda a: f"all(x in {a}: x == x)", inner),
        )

    return st.recursive(atoms, extend, max_leaves=12)


def rule_text(expr: str, lets: int = 0) -> bytes:
    """A rule file whose one check requires `expr`, after a chain of `lets` lets."""
    chain = "".join(f'      v{i}: "{"v" + str(i - 1) if i else "1"} + 1"\n' for i in range(lets))
    let_block = f"    let:\n{chain}" if lets else ""
    return (
        "rules:\n  - name: Fuzz\n    match: [Pack]\n" + let_block + "    checks:\n      - name: C\n"
        f"        require: {json.dumps(expr)}\n    actions:\n      - set node._no_task = true\n"
    ).encode()


def memplan_strategy() -> st.SearchStrategy[bytes]:
    """Buffer CSVs with extreme and inconsistent numbers."""
    num = st.one_of(st.integers(-5, 50), st.sampled_from([2**63, 10**40, -(2**63)]), st.just("x"))
    row = st.tuples(st.text("abc", min_size=1, max_size=3), num, num, num)
    return st.lists(row, max_size=12).map(
        lambda rows: ("id,lower,upper,size\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows)).encode()
    )
