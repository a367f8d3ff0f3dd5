"""`rulepass validate` against the broken-rule corpus, hostile inputs and random text.

Every file of tests/corpus/rules holds one mistake and starts with the diagnostics it must produce, one
`# expect: LINE:COL: severity[code]: message` line each. A subfolder is validated as a whole (cross-file
mistakes); there each file lists the diagnostics located in it (a companion file lists none). The test
compares the exact headlines `file:line:col: severity[code]: message` (paths relative to the repository) and
the exit code, and makes sure no input ever produces a traceback or an internal error.
"""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rulepass.compiler.facts import ge_catalogue
from rulepass.compiler.passes import GE_PLACEHOLDER_PASSES, load_ge_rules
from rulepass.dsl.check import check_rule, check_rule_set
from rulepass.dsl.load import compile_rule, load_rules
from rulepass.dsl.rules import read_rule_text, resolve_shared
from rulepass.rules import bundled_rules_dir

from rulepass.base.diagnostics import Diagnostic
from rulepass.cli import main

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus" / "rules"
CONCAT_RULE = REPO / "rules" / "concat_notask.yaml"
BASE_RULE = REPO / "rules" / "notask_base.yaml"  # the shared checks the concat rule uses
EXPECT = re.compile(r"^# expect: (\d+:\d+: (?:error|warning)\[[a-z-]+\]: .*)$")
GUTTER = re.compile(r"^\s*\d+ \| ")

# Hints that must accompany a headline (the "did you mean" and how-to-fix parts of the messages).
HINTS = {
    "schema_unknown_key.yaml": "did you mean 'description'?",
    "unknown_name.yaml": "did you mean 'node'?",
    "unknown_field.yaml": "did you mean 'input_count'?",
    "unknown_helper.yaml": "did you mean 'is_unknown_shape'?",
    "unknown_pass.yaml": "did you mean 'ParallelGroupPass'?",
    "wrong_arity.yaml": "signature: len(x: any) -> int",
    "argument_type_mismatch.yaml": "signature: dtype_size(dtype: str) -> int",
    "field_on_list.yaml": "use a quantifier",
    "check_list_in_a_rule.yaml": "only a shared check (at the top of `shared_checks`) can be a list of checks",
    "field_called_as_helper.yaml": "drop the parentheses: .input_count",
    "action_on_non_attribute_holder.yaml": "attributes live on: AttrHolder, Graph, Node, TensorDesc",
    "yaml_syntax_error.yaml": "while parsing a flow sequence that starts on line 4, column 12",
    "yaml_colon_in_plain_expression.yaml": "quote the value, or write it as a block scalar",
    "yaml_tab_indentation.yaml": "indent with spaces",
    "schema_expression_read_as_boolean.yaml": 'quote it to make it a string: "true"',
    "skip_graph_uses_node.yaml": "evaluated once per graph",
    "let_before_binding.yaml": "a `let` may only use the bindings listed before it",
    "shared_check_unknown.yaml": "did you mean 'InputCheck'?",
    "shared_check_with_other_keys.yaml": "copy it into the rule instead of using it",
    "shared_check_reads_undeclared.yaml": "declare it under `params:` and pass it with `with:`",
    "analysis_constant_condition.yaml": "the left side lies in [0, inf], the right side in [0, 0]",
    "analysis_unreachable_check.yaml": "remove it, or move it before the check that covers it",
    "analysis_order_hazard.yaml": "add `after: [MarkProducers]` or `before: [MarkProducers]` to 'ReluFusion'",
    "analysis_write_conflict.yaml": "order the rules (after/before) to say which value stays",
    "shared_check_across_files": (
        "did you mean 'input_count'? (found checking the rule(s) that use this shared check: ConcatDemo, PackDemo)"
    ),
}


def run_cli(*args: str) -> tuple[int, str, str]:
    """`rulepass ARGS` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def headlines(stderr: str) -> list[str]:
    """The headline of every rendered diagnostic (excerpt, caret and help lines are indented)."""
    return [ln for ln in stderr.splitlines() if ln and not ln[0].isspace() and not GUTTER.match(ln)]


def assert_no_crash(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text
        assert "internal error" not in text


def expectations(unit: Path) -> list[str]:
    """The headlines a corpus file or folder must produce, paths relative to the repository."""
    files = [unit] if unit.is_file() else sorted(unit.glob("*.yaml"))
    out: list[str] = []
    for f in files:
        rel = f.relative_to(REPO).as_posix()
        lines = f.read_text(encoding="utf-8").splitlines()
        for ln in lines:
            m = EXPECT.match(ln)
            if m is None:
                break
            out.append(f"{rel}:{m.group(1)}")
    return out


UNITS = sorted(p for p in CORPUS.iterdir() if p.suffix == ".yaml" or p.is_dir())


def test_corpus_is_complete() -> None:
    files = [p for p in CORPUS.rglob("*.yaml")]
    assert len([u for u in UNITS if u.is_file()]) + len([u for u in UNITS if u.is_dir()]) >= 32
    for f in files:
        first = f.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith(("# expect: ", "# companion: ")), f
    for unit in UNITS:
        assert expectations(unit), f"{unit} expects no diagnostic"


@pytest.mark.parametrize("unit", UNITS, ids=[u.name for u in UNITS])
def test_corpus(unit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    rel = unit.relative_to(REPO).as_posix()
    want = expectations(unit)
    code, out, err = run_cli("validate", rel)
    assert_no_crash(out, err)
    got = headlines(err)
    if unit.is_file():
        assert got == want
    else:  # several files: compare as sets of lines, each file's own lines in order
        assert sorted(got) == sorted(want)
    errors = sum(1 for w in want if "error[" in w)
    assert code == (1 if errors else 0)
    assert f"({errors} error(s), {len(want) - errors} warning(s))" in out
    hint = HINTS.get(unit.name)
    if hint is not None:
        helps = [ln for ln in err.splitlines() if ln.startswith("      = help: ")]
        assert any(hint in ln for ln in helps), helps


@pytest.mark.parametrize("unit", UNITS, ids=[u.name for u in UNITS])
def test_corpus_json_matches_text(unit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    rel = unit.relative_to(REPO).as_posix()
    code, out, err = run_cli("validate", rel, "--format", "json")
    assert_no_crash(out, err)
    assert err == ""
    doc = json.loads(out)
    shown = [
        f"{d['span']['file']}:{d['span']['line']}:{d['span']['col']}: {d['severity']}[{d['code']}]: {d['message']}"
        for d in doc["diagnostics"]
    ]
    assert sorted(shown) == sorted(expectations(unit))
    assert code == (1 if doc["errors"] else 0)


def test_json_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = run_cli("validate", "--format", "json", "tests/corpus/rules/unknown_field.yaml")
    assert code == 1
    doc = json.loads(out)
    assert doc == {
        "valid": False,
        "files": ["tests/corpus/rules/unknown_field.yaml"],
        "rules": [],
        "errors": 1,
        "warnings": 0,
        "diagnostics": [
            {
                "severity": "error",
                "code": "unknown-field",
                "message": "Node has no field 'input_cont'",
                "span": {
                    "file": "tests/corpus/rules/unknown_field.yaml",
                    "line": 7,
                    "col": 23,
                    "end_line": 7,
                    "end_col": 32,
                },
                "where": None,
                "hint": "did you mean 'input_count'?",
            }
        ],
    }
    code, out, _ = run_cli("validate", "--format", "json", "tests/corpus/rules/unused_binding.yaml")
    doc = json.loads(out)
    assert (code, doc["valid"], doc["errors"], doc["warnings"], doc["rules"]) == (0, True, 0, 1, ["DemoPass"])


def test_bundled_rules_validate_clean() -> None:
    code, out, err = run_cli("validate")
    assert_no_crash(out, err)
    assert code == 0
    assert err == ""
    assert "valid (0 error(s), 0 warning(s))" in out
    rs = load_ge_rules()
    assert rs.diagnostics == []
    assert {"ConcatNotaskPass", "PackNotaskPass"} <= {r.name for r in rs.rules}
    code, out, _ = run_cli("validate", "--format", "json", str(bundled_rules_dir()))
    doc = json.loads(out)
    assert (code, doc["valid"], doc["errors"], doc["warnings"], doc["diagnostics"]) == (0, True, 0, 0, [])


# ---- hostile inputs ------------------------------------------------------------------------------------------


def _one_diagnostic(path: Path, code: str) -> str:
    """Validate `path`: exit 1, one diagnostic with `code`, no traceback; returns its headline."""
    rc, out, err = run_cli("validate", str(path))
    assert_no_crash(out, err)
    assert rc == 1
    got = headlines(err)
    assert len(got) == 1, got
    assert f"error[{code}]" in got[0]
    return got[0]


def test_binary_file(tmp_path: Path) -> None:
    f = tmp_path / "binary.yaml"
    rnd = random.Random(7)
    f.write_bytes(bytes(rnd.randrange(256) for _ in range(4096)) + b"\x00\x00rules:\n")
    line = _one_diagnostic(f, "encoding")
    assert line == f"{f}:1:1: error[encoding]: rule file is not a text file (it contains NUL bytes)"


def test_invalid_utf8(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes("rules:\n  - name: Caf\xe9Pass\n".encode("latin-1"))
    assert _one_diagnostic(f, "encoding") == f"{f}:2:14: error[encoding]: rule file is not valid UTF-8 (byte 0xe9)"


def test_empty_file(tmp_path: Path) -> None:
    f = tmp_path / "empty.yaml"
    f.write_bytes(b"")
    line = _one_diagnostic(f, "rule-shape")
    assert line == f"{f}:1:1: error[rule-shape]: the rule file is empty; expected a mapping with 'rules'"


def test_deeply_nested_yaml(tmp_path: Path) -> None:
    f = tmp_path / "deep.yaml"
    f.write_text("[" * 10_000, encoding="utf-8")
    assert _one_diagnostic(f, "yaml-depth") == f"{f}:1:65: error[yaml-depth]: nesting deeper than 64 levels"


def _rule_with(expr: str) -> str:
    return (
        "rules:\n  - name: DemoPass\n    match: [ConcatD]\n    checks:\n      - name: C\n"
        f"        require: {json.dumps(expr)}\n"
    )


def test_huge_expression(tmp_path: Path) -> None:
    f = tmp_path / "long.yaml"
    expr = " or ".join(["node.input_count > 0"] * 5000)[:100_000]
    f.write_text(_rule_with(expr), encoding="utf-8")
    line = _one_diagnostic(f, "expr-too-long")
    assert line == f"{f}:6:19: error[expr-too-long]: expression is 100000 characters long; the limit is 20000"


def test_deeply_nested_expression(tmp_path: Path) -> None:
    f = tmp_path / "deep_expr.yaml"
    f.write_text(_rule_with("[" * 5000 + "]" * 5000 + " == []"), encoding="utf-8")
    assert "expression is nested more than 64 levels deep" in _one_diagnostic(f, "expr-depth")
    f.write_text(_rule_with("(" * 5000 + "true" + ")" * 5000), encoding="utf-8")  # parentheses alone do not nest
    rc, _, err = run_cli("validate", str(f))
    assert (rc, headlines(err)) == (0, [])


def test_alias_bomb(tmp_path: Path) -> None:
    f = tmp_path / "bomb.yaml"
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for k in range(1, 10):
        lines.append(f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]")
    lines.append("rules: [*a9]")
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    line = _one_diagnostic(f, "yaml-alias")
    assert line.endswith("error[yaml-alias]: aliases expand to more than 100000 values (an alias bomb?)")


def test_five_megabyte_file(tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    filler = "      " + "lorem ipsum dolor sit amet " * 3 + "\n"
    n = 5 * 1024 * 1024 // len(filler) + 1
    text = (
        "rules:\n  - name: DemoPass\n    description: >\n"
        + filler * n
        + "    match: [ConcatD]\n    checks:\n      - name: HasInputs\n        require: node.input_cont > 0\n"
    )
    f.write_text(text, encoding="utf-8")
    assert f.stat().st_size > 5 * 1024 * 1024
    line = _one_diagnostic(f, "unknown-field")
    assert line == f"{f}:{n + 7}:23: error[unknown-field]: Node has no field 'input_cont'"


def test_bom_and_crlf_keep_positions(tmp_path: Path) -> None:
    src = (CORPUS / "expr_error_in_block_scalar.yaml").read_text(encoding="utf-8")
    want = "9:40: error[expr-syntax]: unexpected character ';' in expression"
    for name, data in (
        ("bom.yaml", b"\xef\xbb\xbf" + src.encode()),
        ("crlf.yaml", src.replace("\n", "\r\n").encode()),
        ("bom_crlf.yaml", b"\xef\xbb\xbf" + src.replace("\n", "\r\n").encode()),
    ):
        f = tmp_path / name
        f.write_bytes(data)
        assert _one_diagnostic(f, "expr-syntax") == f"{f}:{want}"
    f = tmp_path / "crlf_field.yaml"
    f.write_bytes((CORPUS / "unknown_field.yaml").read_text(encoding="utf-8").replace("\n", "\r\n").encode())
    assert _one_diagnostic(f, "unknown-field") == f"{f}:7:23: error[unknown-field]: Node has no field 'input_cont'"
    _, _, err = run_cli("validate", str(f))
    assert "\r" not in err


def test_control_character_and_tab(tmp_path: Path) -> None:
    f = tmp_path / "ctrl.yaml"
    f.write_text("rules:\n  - name: Démo\x1bPass\n", encoding="utf-8")
    line = _one_diagnostic(f, "yaml-syntax")
    want = "error[yaml-syntax]: YAML syntax error: unacceptable character U+001B (control characters are not allowed)"
    assert line == f"{f}:2:15: {want}"


def test_folder_without_yaml(tmp_path: Path) -> None:
    d = tmp_path / "no_rules"
    d.mkdir()
    (d / "README.txt").write_text("nothing here\n", encoding="utf-8")
    assert _one_diagnostic(d, "io") == f"{d}: error[io]: folder '{d}' holds no rule files (*.yaml)"


def test_missing_path(tmp_path: Path) -> None:
    f = tmp_path / "absent.yaml"
    assert _one_diagnostic(f, "io") == f"{f}: error[io]: rule file '{f}' does not exist"


def test_usage_error() -> None:
    rc, out, err = run_cli("validate", "--format", "xml")
    assert rc == 2
    assert_no_crash(out, err)


# ---- random text -------------------------------------------------------------------------------------------

CATALOGUE = ge_catalogue()
KNOWN_PASSES = (*GE_PLACEHOLDER_PASSES, "PackNotaskPass")  # the concat rule runs before the pack rule
CONCAT_TEXT = CONCAT_RULE.read_text(encoding="utf-8")
BASE_TEXT = BASE_RULE.read_text(encoding="utf-8")
TOKENS = [
    "node", "graph", ".", "inputs", "input_descs", "peer", "desc", "shape", "(", ")", "[", "]", ":", ",", "x", "i",
    "in", "not", "and", "or", "if", "then", "else", "all", "any", "count", "distinct", "none", "where", "0", "1",
    "-1", "1.5", "0x1f", "'a'", '"s"', "==", "<", ">=", "+", "-", "*", "//", "%", "len", "attr_bool", "range",
    "index_of", "null", "true", "false", "set", "for", "=", "__import__", "lambda",
]  # fmt: skip


def validate_text(text: str, shared: str = BASE_TEXT) -> list[Diagnostic]:
    """What `load_rules` does for one file and the shared checks it uses, from text: read both, resolve the
    uses, check every rule, check the set, compile."""
    model, diags = read_rule_text(text, "fuzz.yaml")
    base, base_diags = read_rule_text(shared, "fuzz_base.yaml")
    diags += base_diags
    rules, shared_diags = resolve_shared([m for m in (model, base) if m is not None])
    diags += shared_diags
    for rule in rules:
        res, rule_diags = check_rule(rule, CATALOGUE)
        diags.extend(rule_diags)
        if not any(d.severity == "error" for d in rule_diags):
            compile_rule(rule, res)
    if model is not None:
        diags.extend(check_rule_set(rules, KNOWN_PASSES))
    for d in diags:
        assert isinstance(d, Diagnostic)
        assert d.headline()
        d.render()
        json.dumps(d.to_json())
    return diags


def _mutated(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each (position, characters cut, text inserted) edit applied in turn."""
    for pos, cut, insert in edits:
        pos %= len(text) + 1
        text = text[:pos] + insert + text[pos + cut :]
    return text


FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(st.text(max_size=80))
def test_random_expression_text(expr: str) -> None:
    validate_text(_rule_with(expr))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=24))
def test_random_expression_tokens(tokens: list[str]) -> None:
    validate_text(_rule_with(" ".join(tokens)))


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(CONCAT_TEXT)), st.integers(0, 12), st.text(max_size=6)), max_size=4))
def test_random_mutations_of_the_concat_rule(edits: list[tuple[int, int, str]]) -> None:
    validate_text(_mutated(CONCAT_TEXT, edits))


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(BASE_TEXT)), st.integers(0, 12), st.text(max_size=6)), max_size=4))
def test_random_mutations_of_the_shared_checks(edits: list[tuple[int, int, str]]) -> None:
    validate_text(CONCAT_TEXT, _mutated(BASE_TEXT, edits))


def test_unmutated_concat_rule_is_clean() -> None:
    # with its shared checks; of which the concat rule uses every one
    assert validate_text(CONCAT_TEXT) == []


def test_mutations_through_load_rules(tmp_path: Path) -> None:
    rnd = random.Random(2024)
    alphabet = "abcxyz_:.()[]'\"#&-!*{}|>\n\t 0123456789"
    for k in range(25):
        text = CONCAT_TEXT
        for _ in range(rnd.randint(1, 3)):
            pos = rnd.randrange(len(text))
            text = (
                text[:pos]
                + "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 4)))
                + text[pos + rnd.randint(0, 8) :]
            )
        f = tmp_path / f"mut{k}.yaml"
        f.write_text(text, encoding="utf-8")
        rs = load_rules([f, BASE_RULE], CATALOGUE, known_passes=GE_PLACEHOLDER_PASSES)
        assert all(isinstance(d, Diagnostic) for d in rs.diagnostics)
        rc, out, err = run_cli("validate", str(f), str(BASE_RULE))
        assert_no_crash(out, err)
        assert rc == (1 if rs.errors else 0)


def test_libyamls_own_depth_limit_gives_the_same_diagnostic() -> None:
    """PyYAML 6.0.4's libyaml scans ahead and stops at its own limit (1000 levels) before the loader's 64 are met;
    the loader then parses again in pure Python, so the diagnostic does not depend on the PyYAML installed."""
    import yaml

    from rulepass.base import yaml_source
    from rulepass.base.diagnostics import RulepassError

    class LimitedLibyaml(yaml.SafeLoader):  # as libyaml 0.2.5 in PyYAML 6.0.4 answers 1,000 '[' and more
        def check_event(self, *choices: object) -> bool:
            mark = yaml.Mark("<unicode string>", 1000, 0, 1000, None, None)
            raise yaml.scanner.ScannerError("while increasing flow level", None, "exceeded maximum nesting depth", mark)

    with pytest.raises(RulepassError) as exc:
        yaml_source._load_yaml("[" * 2000, "deep.yaml", max_depth=64, max_alias_expansion=100, loader=LimitedLibyaml)
    assert str(exc.value).startswith("deep.yaml:1:65: error[yaml-depth]: nesting deeper than 64 levels")
