"""The conventions every command follows: `schema`, `test --format json|junit`, `-v/-q` everywhere."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import jsonschema
import pytest
import yaml

from rulepass.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "rules" / "fixtures" / "concat_notask" / "input_lock.yaml"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


# ---- schema ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "source"),
    [
        ("rule", "dsl/rule.schema.json"),
        ("graph", "compiler/graph.schema.json"),
        ("model", "compiler/model.schema.json"),
        ("fixture", "compiler/fixture.schema.json"),
    ],
)
def test_schema_prints_the_packaged_schema(kind: str, source: str) -> None:
    code, out, _ = cli("schema", kind)
    assert code == 0 and out == (ROOT / source).read_text(encoding="utf-8")
    assert json.loads(out)["$id"] == f"https://rulepass.dev/schemas/{Path(source).name}"


def test_a_copied_rule_file_checks_against_the_written_schema_from_any_folder(tmp_path: Path) -> None:
    """The schema written beside a copied rule file validates it; rulepass ignores the file's `$schema`."""
    code, out, _ = cli("schema", "rule", "-o", str(tmp_path / "rule.schema.json"))
    assert code == 0 and "wrote the rule schema" in out
    rule = tmp_path / "concat_notask.yaml"
    shutil.copy(ROOT / "rules" / "concat_notask.yaml", rule)
    for base in ("notask_base.yaml", "engine_placement.yaml", "pack_notask.yaml", "split_notask.yaml"):
        shutil.copy(ROOT / "rules" / base, tmp_path / base)
    rule.write_text(rule.read_text(encoding="utf-8").replace("../dsl/rule.schema.json", "./rule.schema.json"))
    schema = json.loads((tmp_path / "rule.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(rule.read_text(encoding="utf-8")))
    code, out, err = cli("validate", str(tmp_path))
    assert code == 0, err


def test_schema_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    code, _, err = cli("schema", "rules")
    assert code == 2 and "invalid choice: 'rules'" in err
    code, _, err = cli("schema", "-o", str(tmp_path / "missing" / "s.json"))
    assert code == 1 and err.count("error[io]") == 1 and "folder does not exist" in err


# ---- test --format ----------------------------------------------------------------------------------------------
def test_test_json_report() -> None:
    code, out, err = cli("test", str(FIXTURE), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and err == ""
    assert doc["passed"] == 3 and doc["failed"] == 0 and doc["diagnostics"] == []
    assert {c["case"] for c in doc["cases"]} == {"locked", "unlocked", "pack_locked_only"}
    assert all(c["ok"] and c["message"] is None for c in doc["cases"])


def _junit(out: str) -> ET.Element:
    """The report parsed, with the attributes the JUnit schema requires checked on every element."""
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    for suite in root:
        assert suite.tag == "testsuite" and {"name", "tests", "failures", "errors"} <= set(suite.attrib)
        assert int(suite.get("tests", "")) == len(suite)
        for case in suite:
            assert case.tag == "testcase" and {"name", "classname"} <= set(case.attrib)
            assert all(child.tag in ("failure", "error") and "message" in child.attrib for child in case)
        assert int(suite.get("failures", "")) == len(suite.findall("testcase/failure"))
        assert int(suite.get("errors", "")) == len(suite.findall("testcase/error"))
    return root


def test_test_junit_report_with_a_failing_case(tmp_path: Path) -> None:
    """A failing case is a <failure> with the message; a path without fixtures an <error>; the exit code is the
    text format's; the same run gives the same bytes."""
    shutil.copytree(ROOT / "rules", tmp_path / "rules", ignore=shutil.ignore_patterns("fixtures", "*.py"))
    fixture = tmp_path / "rules" / "fixtures" / "concat_notask" / "input_lock.yaml"
    fixture.parent.mkdir(parents=True)
    text = FIXTURE.read_text(encoding="utf-8").replace("unlocked: fired", "unlocked: IsPreOutAnchorCanReuse")
    fixture.write_text(text.replace("../../../compiler/", "../../../../compiler/"), encoding="utf-8")
    code, out, _ = cli("test", str(fixture), str(tmp_path / "nothing_here"), "--format", "junit")
    assert code == 1
    root = _junit(out)
    failures = root.findall("testsuite/testcase/failure")
    assert len(failures) == 1 and "expected IsPreOutAnchorCanReuse" in failures[0].get("message", "")
    errors = root.findall("testsuite/testcase/error")
    assert len(errors) == 1 and "nothing_here" in errors[0].get("message", "")
    assert cli("test", str(fixture), str(tmp_path / "nothing_here"), "--format", "junit")[1] == out


# ---- -v / -q -----------------------------------------------------------------------------------------------------
def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its words (`graph check`)."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, words: str) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[words.strip()] = parser
        for sub in subs:
            for name, p in sub.choices.items():
                walk(p, f"{words} {name}")

    walk(build_parser(), "")
    return out


@pytest.mark.parametrize("command", sorted(_command_parsers()))
def test_every_command_takes_v_and_q_after_its_name(command: str) -> None:
    actions = _command_parsers()[command]._option_string_actions
    for flag, dest in (("-v", "verbose"), ("-q", "quiet"), ("--verbose", "verbose"), ("--quiet", "quiet")):
        assert flag in actions and actions[flag].dest == dest and actions[flag].default == argparse.SUPPRESS


def test_v_and_q_count_before_or_after_the_command() -> None:
    parser = build_parser()
    args = parser.parse_args(["-vv", "optimize", "-q"])
    assert (args.verbose, args.quiet) == (2, 1)
    args = parser.parse_args(["-v", "optimize", "-vvv"])  # after the command, a count replaces the one before
    assert (args.verbose, args.quiet) == (3, 0)
    args = parser.parse_args(["optimize"])
    assert (args.verbose, args.quiet) == (0, 0)


def test_quiet_drops_notes_and_warnings_keeps_errors(tmp_path: Path) -> None:
    code, _, err = cli("optimize")
    assert code == 0 and "no GRAPH given" in err
    code, _, err = cli("optimize", "-q")
    assert code == 0 and err == ""
    rule = tmp_path / "r.yaml"
    text = (
        (ROOT / "rules" / "engine_placement.yaml")
        .read_text(encoding="utf-8")
        .replace("    before: [SplitNotaskPass]\n", "")
    )
    rule.write_text(text.replace("    let:\n", '    let:\n      never_read: "1"\n', 1), encoding="utf-8")
    code, _, err = cli("validate", str(rule))
    assert code == 0 and "warning[" in err and "never_read" in err
    code, out, err = cli("-q", "validate", str(rule))
    assert code == 0 and err == "" and "1 warning(s)" in out
    code, _, err = cli("validate", str(tmp_path / "missing.yaml"), "-q")
    assert code == 1 and "error[io]" in err


def test_verbose_lists_what_validate_read() -> None:
    code, out, _ = cli("validate", "-v", str(ROOT / "rules"))
    assert code == 0
    assert "rule ConcatNotaskPass\n" in out and any(line.endswith("notask_base.yaml") for line in out.splitlines())
    assert "rule ConcatNotaskPass" not in cli("validate", str(ROOT / "rules"))[1]


# ---- settings: rulepass.toml / [tool.rulepass] -------------------------------------------------------------------
@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a copy of the bundled rules in `myrules/`, worked in from a subfolder."""
    shutil.copytree(ROOT / "rules", tmp_path / "myrules", ignore=shutil.ignore_patterns("fixtures", "*.py"))
    (tmp_path / "myrules" / "pack_notask.yaml").unlink()
    (tmp_path / "myrules" / "mem_layout_conflict.yaml").unlink()  # it orders itself after PackNotaskPass
    (tmp_path / "myrules" / "concat_notask.yaml").write_text(
        (ROOT / "rules" / "concat_notask.yaml")
        .read_text(encoding="utf-8")
        .replace("    before: [PackNotaskPass]\n", "")
    )
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def _optimize_json(*argv: str) -> Any:
    code, out, err = cli("optimize", "--format", "json", *argv)
    assert code == 0, err
    return json.loads(out)


def test_pyproject_settings_fill_what_the_command_line_leaves_out(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.rulepass]\nrules = ["myrules"]\nlevel = "O1"\ndisable = ["ConcatNotaskPass"]\n'
    )
    code, out, err = cli("validate", "-v")
    assert code == 0 and "rulepass: settings from" in err and "rule PackNotaskPass" not in out and "4 rule(s)" in out
    doc = _optimize_json()
    assert doc["level"] == "O1"
    assert _optimize_json("--level", "O2")["level"] == "O2"  # the command line wins
    ran = {p["pass"]: p for p in _optimize_json("--level", "O3")["passes"]}
    assert ran["ConcatNotaskPass"]["skipped_reason"].startswith("disabled")
    ran = {p["pass"]: p for p in _optimize_json("--level", "O3", "--disable", "SplitNotaskPass")["passes"]}
    assert ran["ConcatNotaskPass"]["ran"] and not ran["SplitNotaskPass"]["ran"]
    assert "rule PackNotaskPass" in cli("--no-config", "validate", "-v")[1]  # the bundled rules


def test_rulepass_toml_comes_first_and_a_pyproject_without_the_table_is_passed_over(project: Path) -> None:
    (project / "work" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (project / "rulepass.toml").write_text('rules = "myrules"\n')
    (project / "pyproject.toml").write_text('[tool.rulepass]\nlevel = "O1"\n')
    code, out, _ = cli("validate")
    assert code == 0 and "4 rule(s)" in out
    assert _optimize_json()["level"] == "O3"  # rulepass.toml sets no level; the pyproject beside it is not read


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('[tool.rulepass]\nlevle = "O1"\n', ":2:1:", "unknown setting 'levle'"),
        ("[tool.rulepass]\nlevel = O1\n", ":2:9:", "invalid TOML"),
        ('[tool.rulepass]\nlevel = "O9"\n', ":2:1:", "level must be one of O0, O1, O2, O3"),
        ("[tool.rulepass]\nrules = 3\n", ":2:1:", "rules must be a path or a list of paths"),
        ('[tool.rulepass]\ndisable = "X"\n', ":2:1:", "disable must be a list of pass names"),
    ],
)
def test_a_bad_setting_is_one_located_error(project: Path, text: str, where: str, message: str) -> None:
    (project / "pyproject.toml").write_text(text)
    code, out, err = cli("validate")
    assert code == 1 and out == ""
    assert err.count("error[config]") == 1 and f"pyproject.toml{where} error[config]: {message}" in err
    assert cli("--no-config", "validate")[0] == 0
    assert cli("schema")[0] == 0 and cli("catalogue")[0] == 0  # commands that take no setting read none


# ---- shell completion --------------------------------------------------------------------------------------------
def _bash_complete(script: str, *words: str) -> list[str]:
    """What the bash completion function offers for `rulepass WORDS...` (the last word being completed)."""
    import subprocess

    program = (
        script
        + '\nCOMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _rulepass; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "-c", program, "bash", "rulepass", *words], capture_output=True, text=True, timeout=30, check=True
    )
    return [w for w in done.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_knows_every_command_option_and_choice() -> None:
    code, script, _ = cli("completion", "bash")
    assert code == 0
    parsers = _command_parsers()
    top = {c.split()[0] for c in parsers}
    assert set(_bash_complete(script, "")) == top
    assert _bash_complete(script, "op") == ["optimize"]
    assert _bash_complete(script, "-v", "graph", "") == ["check"]
    assert _bash_complete(script, "optimize", "--level", "") == ["O0", "O1", "O2", "O3"]
    assert _bash_complete(script, "test", "--format", "j") == ["json", "junit"]
    assert _bash_complete(script, "schema", "") == ["rule", "graph", "model", "fixture"]
    assert _bash_complete(script, "optimize", "-o", "") == []  # a file name: the shell's default completion
    for command, parser in parsers.items():
        options = {o for o in parser._option_string_actions}
        assert set(_bash_complete(script, *command.split(), "-")) == options, command


def test_zsh_and_fish_scripts_cover_every_command() -> None:
    code, zsh, _ = cli("completion", "zsh")
    assert code == 0 and "autoload -U +X bashcompinit && bashcompinit" in zsh
    assert cli("completion", "bash")[1].split("\n", 1)[1] in zsh  # the bash function, run by zsh's bash layer
    code, fish, _ = cli("completion", "fish")
    assert code == 0
    for command, parser in _command_parsers().items():
        last = command.split()[-1]
        assert f" -a {last} -d " in fish, command
        for option in parser._option_string_actions:
            spelled = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            assert spelled in fish, (command, option)
    assert "-l level -x -a 'O0 O1 O2 O3'" in fish
    code, _, err = cli("completion", "tcsh")
    assert code == 2 and "invalid choice: 'tcsh'" in err


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes(tmp_path: Path) -> None:
    import subprocess

    script = tmp_path / "rulepass.fish"
    script.write_text(cli("completion", "fish")[1], encoding="utf-8")

    def complete(line: str) -> list[str]:
        program = f"source {script}; complete -C '{line}'"
        done = subprocess.run(["fish", "-c", program], capture_output=True, text=True, timeout=30, check=True)
        return [w.split("\t")[0] for w in done.stdout.splitlines()]

    assert complete("rulepass opt") == ["optimize"]
    assert complete("rulepass optimize --level ") == ["O0", "O1", "O2", "O3"]
    assert complete("rulepass graph ") == ["check"]
    assert "--format" in complete("rulepass test --") and "junit" in complete("rulepass test --format ")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_registers_the_function(tmp_path: Path) -> None:
    import subprocess

    script = tmp_path / "rulepass.zsh"
    script.write_text(cli("completion", "zsh")[1], encoding="utf-8")
    program = f"source {script} && print -r -- $_comps[rulepass]"
    done = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, timeout=30, check=True)
    assert "-F _rulepass" in done.stdout and done.stderr == ""
