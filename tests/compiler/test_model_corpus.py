"""The corpus of real models (tests/data/models): each imported, compiled, run with and without the no-task passes
(bit-identical) and checked against onnxruntime's stored outputs, through benchmarks/real_models.py's stages.

A model that fails today because of a gap in the importer or the runtime is listed in KNOWN_GAPS with the stage it
fails at: its test is an expected failure at exactly that stage. When the gap closes the test passes and, being
strict, fails the run until the entry is removed; when the model gets further but fails at a later stage, the test
fails and says so, until the entry names the new stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
import real_models as rm  # noqa: E402  (benchmarks/, on the path by tests/conftest.py)

from rulepass.api import RuleSet, load_rules  # noqa: E402

MAX_FILE_BYTES = 2 << 20
# model -> "stage: reason" for both format modes; "model[keep]" or "model[ascend]" for one mode (it wins)
KNOWN_GAPS = {
    "yolo_head": "run: no kernel for Resize",
    "crnn_ocr": "compile: ConstantOfShape of Shape math (LSTM's initial state) keeps an unknown shape",
    "decoder_kv": "compile: Range over Shape math keeps an unknown shape",
    "gpt2_hf": "compile: Reshape by Shape math keeps an unknown shape",
    "bert_tiny": "compile: Slice with bounds from Shape math keeps an unknown shape",
    "shape_math": "compile: Pad with pads from Shape math keeps an unknown shape",
    "mobilenet_v3_small": "run: no kernel for HardSwish",
    "shufflenet_v2": "compile: Slice with bounds from Shape math (channel chunk) keeps an unknown shape",
    "unet_tiny": "run: no kernel for ConvTranspose",
    "audio_kws": "run: Conv1d imported as Conv2D on 3-D tensors; the kernel fails (axes don't match array)",
}
SLOW = {"gpt2_hf", "bert_tiny", "shufflenet_v2", "mobilenet_v3_small", "decoder_kv"}
ENTRIES = rm.entries()


class KnownGap(Exception):
    """The failure KNOWN_GAPS expects: the listed stage, still failing."""


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return load_rules()


def _gap(name: str, formats: str) -> str | None:
    """The gap KNOWN_GAPS lists for a model in a format mode, if any."""
    return KNOWN_GAPS.get(f"{name}[{formats}]", KNOWN_GAPS.get(name))


def _case(name: str, formats: str) -> Any:
    marks = [pytest.mark.slow] if name in SLOW else []
    gap = _gap(name, formats)
    if gap is not None:
        marks.append(pytest.mark.xfail(strict=True, raises=KnownGap, reason=gap))
    return pytest.param(name, formats, marks=marks, id=f"{name}-{formats}")


@pytest.mark.parametrize(("name", "formats"), [_case(e["name"], fm) for e in ENTRIES for fm in rm.FORMATS])
def test_model_imports_compiles_runs_and_matches_onnxruntime(name: str, formats: str, rules: RuleSet) -> None:
    (entry,) = rm.entries([name])
    outcome = rm.measure(entry, formats, rules)
    gap = _gap(name, formats)
    if outcome.passed or gap is None:
        assert outcome.passed, f"{name} ({formats}) fails at {outcome.stage}: {outcome.error}"
        return
    stage = gap.split(":")[0]
    assert outcome.stage == stage, (
        f"KNOWN_GAPS says {name} ({formats}) fails at {stage}; it now fails at {outcome.stage}: {outcome.error} "
        "(update the entry)"
    )
    raise KnownGap(f"{outcome.stage}: {outcome.error}")


def test_every_gap_names_a_model_of_the_corpus_and_a_stage() -> None:
    names = {e["name"] for e in ENTRIES}
    keys = {*names, *(f"{n}[{fm}]" for n in names for fm in rm.FORMATS)}
    assert set(KNOWN_GAPS) <= keys, set(KNOWN_GAPS) - keys
    assert {g.split(":")[0] for g in KNOWN_GAPS.values()} <= set(rm.STAGES)
    assert set(SLOW) <= names


def test_a_model_with_zero_copy_ops_passes_every_stage(rules: RuleSet) -> None:
    """The harness can pass: branches_tiny makes a Split and a Concat zero-copy, and still matches onnxruntime."""
    (entry,) = rm.entries(["branches_tiny"])
    out = rm.measure(entry, "keep", rules)
    assert out.passed, f"{out.stage}: {out.error}"
    assert out.fired.get("splits", 0) >= 1 and out.fired.get("concats", 0) >= 1, out.fired
    assert out.tasks < out.tasks_without and out.copy_bytes_saved > 0
    assert out.max_error is not None and out.bound is not None and out.max_error <= out.bound


def test_a_model_from_outside_the_corpus_is_measured_up_to_the_oracle(capsys: pytest.CaptureFixture[str]) -> None:
    path = rm.CORPUS / "branches_tiny.onnx"
    assert rm.main(["--model", str(path), "--formats", "keep,ascend"]) == 0
    out = capsys.readouterr().out
    assert out.count("**passed** (no oracle)") == 2 and "2 of 2 passed" in out
    assert rm.main(["--model", str(rm.CORPUS / "unet_tiny.onnx"), "--formats", "keep"]) == 1
    assert "| unet_tiny | keep |" in capsys.readouterr().out
    assert rm.main(["--model", str(path), "--dim", "batch"]) == 2


# ---- the manifest and the files agree --------------------------------------------------------------------------
def _graph_inputs(model: Any) -> list[tuple[str, list[int | str]]]:
    inits = {i.name for i in model.graph.initializer}
    return [
        (vi.name, [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim])
        for vi in model.graph.input
        if vi.name not in inits
    ]


def test_the_manifest_lists_every_file_of_the_corpus_and_nothing_else() -> None:
    listed = {e[k] for e in ENTRIES for k in ("file", "inputs_file", "outputs_file")} | {rm.MANIFEST.name}
    present = {p.name for p in rm.CORPUS.iterdir()}
    assert listed == present, (listed - present, present - listed)
    assert len({e["name"] for e in ENTRIES}) == len(ENTRIES) >= 8
    assert set(rm.manifest()["versions"]) >= {"torch", "onnx", "onnxruntime"}


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_manifest_entry_agrees_with_its_model_and_arrays(entry: dict[str, Any]) -> None:
    path: Path = rm.CORPUS / entry["file"]
    assert path.stat().st_size == entry["bytes"] <= MAX_FILE_BYTES
    model = onnx.load(str(path))
    assert {o.version for o in model.opset_import if o.domain in ("", "ai.onnx")} == {entry["opset"]}
    graph_inputs = _graph_inputs(model)
    assert [(i["name"], i["dims"]) for i in entry["inputs"]] == graph_inputs
    inputs = rm.load_arrays(rm.CORPUS / entry["inputs_file"])
    assert list(inputs) == [name for name, _ in graph_inputs]
    for i, (_, dims) in zip(entry["inputs"], graph_inputs, strict=True):
        value = inputs[i["name"]]
        assert list(value.shape) == i["shape"] and str(value.dtype) == i["dtype"]
        for d, size in zip(dims, value.shape, strict=True):  # a fixed dim as exported, a symbolic one as listed
            assert size == (entry["dims"][d] if isinstance(d, str) else d), (i["name"], d)
    assert entry["input_shape"] == ";".join(f"{i['name']}:{','.join(map(str, i['shape']))}" for i in entry["inputs"])
    outputs = rm.load_arrays(rm.CORPUS / entry["outputs_file"])
    assert list(outputs) == [o.name for o in model.graph.output] == [o["name"] for o in entry["outputs"]]
    assert [list(v.shape) for v in outputs.values()] == [o["shape"] for o in entry["outputs"]]
    assert all(np.isfinite(v).all() for v in outputs.values())


# ---- the harness's checks --------------------------------------------------------------------------------------
def test_the_gaps_read_off_an_import_count_unknown_shapes_and_ops_without_a_kernel(tmp_path: Path) -> None:
    from onnx import TensorProto, helper
    from rulepass.compiler.onnx_import import import_onnx

    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Mystery", ["r"], ["y"], domain="example.org"),
        helper.make_node("Reshape", ["r", "s"], ["z"]),  # to a shape given at run time: unknown at import
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "gaps", [x, s], [y, z])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("example.org", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(tmp_path / "gaps.onnx"))
    unknown, missing = rm.import_gaps(import_onnx(tmp_path / "gaps.onnx").graph)
    assert unknown >= 1 and "Mystery" in missing and "Relu" not in missing
    (entry,) = rm.entries(["branches_tiny"])
    assert rm.import_gaps(rm.import_model(entry, "keep")) == (0, [])


def test_outputs_must_be_bit_identical_without_the_no_task_passes() -> None:
    a = [np.array([0.0, 1.0], np.float32)]
    assert rm.identical(a, [a[0].copy()]) is None
    assert rm.identical(a, [np.array([-0.0, 1.0], np.float32)]) is not None  # equal as numbers, not as bits
    assert rm.identical(a, [a[0].astype(np.float64)]) is not None
    assert rm.identical(a, []) is not None


def test_the_oracle_bound_is_relative_to_the_reference_and_refuses_nan() -> None:
    ref = {"y": np.array([1000.0, -2.0], np.float32)}
    assert rm.oracle_error([np.array([1000.9, -2.0], np.float32)], ref)[2] is None  # 0.9 <= 1e-3 * 1000
    assert rm.oracle_error([np.array([1001.5, -2.0], np.float32)], ref)[2] is not None
    assert rm.oracle_error([np.array([np.nan, -2.0], np.float32)], ref)[2] is not None
    assert rm.oracle_error([np.zeros((1, 2), np.float32)], ref)[2] is not None  # a shape that differs
    small = {"y": np.array([0.01], np.float32)}
    assert rm.oracle_error([np.array([0.0109], np.float32)], small)[2] is None  # bound 1e-3 * max(1, 0.01)
    assert rm.oracle_error([np.array([0.0111], np.float32)], small)[2] is not None
