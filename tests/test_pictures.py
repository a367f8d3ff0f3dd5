"""docs/pictures/ and docs/report_allgather_concat.html are what scripts/gen_pictures.py makes now.

Memory pictures and the index byte for byte; graph pictures (laid out by Graphviz, whose layout varies between
its versions) by the SHA-256 of the DOT they were laid out from; the report likewise, its graph cut out.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    path = ROOT / "scripts" / "gen_pictures.py"
    spec = importlib.util.spec_from_file_location("gen_pictures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_pictures", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_committed_pictures_are_up_to_date() -> None:
    pytest.importorskip("onnx")  # the test models are ONNX files
    gen = _script()
    texts, dots, report_view = gen.build()
    assert len(dots) == len(gen.sources()) >= 4 + 12  # every example and every test model
    assert gen._stale(texts, dots, report_view) == [], "run: python scripts/gen_pictures.py"
    again, _, _ = gen.build()
    assert again == texts  # regenerable deterministically


def test_the_readme_links_the_report() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/report_allgather_concat.html" in readme and "docs/pictures/" in readme
