"""User text reaches the terminal escaped: names can neither forge lines nor send escape sequences (issue 38)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rulepass.base.diagnostics import printable
from rulepass.cli import main

GRAPH = """nodes:
  - {name: "a\\x1b[31mRED", type: Data, attrs: {index: 0}, outputs: ["float16[2]"]}
  - {name: "c\\nConcatNotaskPass  g  forged  ConcatD  fired", type: ConcatD, engine: AIcoreEngine,
     kernel_lib: AIcoreEngine, attrs: {concat_dim: 0, N: 2}, inputs: ["a\\x1b[31mRED", "a\\x1b[31mRED"],
     outputs: ["float16[4]"]}
  - {name: o, type: NetOutput, inputs: ["a\\x1b[31mRED"]}
"""


def test_printable_escapes_controls_newlines_and_bidi_overrides() -> None:
    assert printable("a\x1b[31mb\nc\u202ed\x85\t") == "a\\x1b[31mb\\x0ac\\u202ed\\x85\t"
    assert printable("x\ny\x07", keep_newlines=True) == "x\ny\\x07" and printable("plain") == "plain"


@pytest.mark.parametrize(
    "command", [["optimize"], ["explain", "--node", "c\nConcatNotaskPass  g  forged  ConcatD  fired"]]
)
def test_names_are_shown_escaped(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(GRAPH)
    out, err = io.StringIO(), io.StringIO()
    code = main([command[0], str(path), *command[1:]], out=out, err=err)
    text = out.getvalue() + err.getvalue()
    assert code == 0 and "\x1b" not in text and "c\\x0aConcatNotaskPass" in text
    assert not any(line.startswith("ConcatNotaskPass  g  forged") for line in text.splitlines())


def test_an_identifier_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text('rules:\n  - name: "Forged\\n"\n    match: [Pack]\n    checks: [{name: C, require: "true"}]\n')
    out, err = io.StringIO(), io.StringIO()
    assert main(["validate", str(rules)], out=out, err=err) == 1
    assert 'invalid value "Forged\\n": an identifier' in err.getvalue()
