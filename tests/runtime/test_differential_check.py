"""`run --check` / `compile --check`: the model against its graph evaluated directly, bit for bit."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

from rulepass.compiler.runtime.differential import check_model
from rulepass.examples import example_path

from rulepass.api import compile_graph, load_graph
from rulepass.cli import main

C24 = (Path(__file__).parents[1] / "data" / "unsound_c24_concat.yaml").read_text(encoding="utf-8")


def _graph(tmp_path: Path) -> Path:
    path = tmp_path / "c24.yaml"
    path.write_text(C24, encoding="utf-8")
    return path


def test_check_model_names_the_tensor_an_unsound_zero_copy_breaks(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compile_graph(load_graph(_graph(tmp_path)), soundness=False)
    report = check_model(result.model)
    d = report.difference
    assert d is not None and d.tensor == "cat:0" and d.reader == "node 'back' (TransData) input 0"
    assert "element(s) differ; first at [0, 1, 0, 0, 8]" in d.detail


def test_check_model_of_a_sound_example_is_equal() -> None:
    report = check_model(compile_graph(load_graph(example_path("split_relu_concat.yaml"))).model)
    assert report.difference is None and report.compared > 0


def test_cli_compile_and_run_check(tmp_path: Path) -> None:
    graph = str(_graph(tmp_path))
    model = tmp_path / "m.json"
    out, err = io.StringIO(), io.StringIO()
    args = ["compile", graph, "--no-soundness-check", "--check", "--quiet", "-o", str(model)]
    assert main(args, out=out, err=err) == 1
    assert "differs from the graph evaluated directly: tensor cat:0" in err.getvalue() and not model.exists()
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", graph, "--no-soundness-check", "--check", "--format", "json"], out=out, err=err) == 1
    doc = json.loads(out.getvalue())
    assert doc["check"]["equal"] is False and doc["check"]["first_difference"]["tensor"] == "cat:0"
    out = io.StringIO()
    assert main(["run", str(example_path("conv_nc1hwc0_concat.yaml")), "--check"], out=out, err=io.StringIO()) == 0
    assert "check: equal to the direct evaluation of the graph, bit for bit" in out.getvalue()
    out = io.StringIO()
    assert main(["compile", str(example_path()), "--check", "--quiet"], out=out, err=io.StringIO()) == 0
    assert "check: equal" in out.getvalue()
