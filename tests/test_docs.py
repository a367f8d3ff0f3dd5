"""The docs cannot drift from the code: the generated catalogue page, and the commands docs/cli.md shows.

- docs/catalogue.md must equal what scripts/gen_catalogue_doc.py generates from the live catalogue;
- every line of a ```sh block of docs/cli.md (and docs/tutorial.md) that starts with `rulepass ` must parse with
  the real argument parser, after its placeholder words (GRAPH, FILE, ...) are replaced with real example paths;
- docs/cli.md must show every subcommand and name every option the parser has.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from rulepass.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATOR = ROOT / "scripts" / "gen_catalogue_doc.py"
COMMAND_DOCS = ("cli.md", "tutorial.md")

# Placeholder words the docs use in synopses, and real values that stand for them.
PLACEHOLDERS = {
    "GRAPH": str(ROOT / "examples" / "split_relu_concat.yaml"),
    "FILE": str(ROOT / "examples" / "split_relu_concat.yaml"),
    "FILE.csv": "buffers.csv",
    "PATH": str(ROOT / "rules"),
    "OUT": "marked.yaml",
    "NAME": "concat",
    "PASS": "ConcatNotaskPass",
}
_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)
_SHELL_STOP = set("|&;<>()")


def _script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(path.stem, module)
    spec.loader.exec_module(module)
    return module


def _generator() -> ModuleType:
    return _script(GENERATOR)


def sh_commands(doc: str) -> list[str]:
    """Every `rulepass ...` command line of the ```sh blocks of docs/<doc> (continuation lines joined)."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    out: list[str] = []
    for block in _SH_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith("rulepass "):
                out.append(line)
    return out


def argv_of(line: str) -> list[str]:
    """The arguments of a shell command line: comments, pipes and redirections cut off, placeholders replaced."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for token in lexer:
        if token and set(token) <= _SHELL_STOP:
            if words and words[-1].isdigit():  # `2>&1`, `2>/dev/null`: the digit belongs to the redirection
                words.pop()
            break
        words.append(token)
    assert words[0] == "rulepass", line
    return [PLACEHOLDERS.get(w, w) for w in words[1:]]


def subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The command paths of `parser` that take no further subcommand, e.g. ('graph', 'check')."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix
    for action in subs:
        for name, sub in action.choices.items():
            yield from subcommands(sub, (*prefix, name))


def parser_of(path: tuple[str, ...]) -> argparse.ArgumentParser:
    """The (sub)parser of a command path."""
    parser = build_parser()
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


# ---- the catalogue page ------------------------------------------------------------------------------------
def test_catalogue_doc_is_generated_from_the_catalogue() -> None:
    committed = (DOCS / "catalogue.md").read_text(encoding="utf-8")
    assert committed == _generator().generate(), (
        "docs/catalogue.md differs from the catalogue; run: python scripts/gen_catalogue_doc.py"
    )


def test_catalogue_doc_names_every_field_and_helper() -> None:
    from rulepass.compiler.facts import ge_catalogue

    data = ge_catalogue().to_json()
    text = _generator().render(data)
    for name in data["roots"]:
        assert f"| `{name}` |" in text
    for entity, spec in data["entities"].items():
        assert f"### {entity}\n" in text
        for field in spec["fields"]:
            assert f"| `.{field}` |" in text
    for spec in data["helpers"].values():
        assert f"`{spec['signature']}`" in text


def test_generator_check_mode(tmp_path: Path) -> None:
    gen = _generator()
    target = tmp_path / "catalogue.md"
    assert gen.main(["--check", "--output", str(target)]) == 1  # missing
    assert gen.main(["--output", str(target)]) == 0
    assert gen.main(["--check", "--output", str(target)]) == 0
    target.write_text(target.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    assert gen.main(["--check", "--output", str(target)]) == 1


def test_generator_is_deterministic() -> None:
    gen = _generator()
    assert gen.generate() == gen.generate()


# ---- the command lines the docs show -----------------------------------------------------------------------
@pytest.mark.parametrize("doc", COMMAND_DOCS)
def test_docs_show_commands(doc: str) -> None:
    assert sh_commands(doc), f"docs/{doc} shows no `rulepass` command in a ```sh block"


@pytest.mark.parametrize(
    ("doc", "line"),
    [(doc, line) for doc in COMMAND_DOCS for line in sh_commands(doc)],
)
def test_documented_command_parses(doc: str, line: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = argv_of(line)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help and --version exit 0 after printing; anything else is a usage error
        assert exc.code == 0, f"docs/{doc}: `{line}` does not parse: {capsys.readouterr().err.strip()}"
        return
    assert callable(args.handler)


def test_cli_doc_covers_every_command_and_option() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    shown = [argv_of(line) for line in sh_commands("cli.md")]
    missing: list[str] = []
    for path in subcommands(build_parser()):
        if not any(argv[: len(path)] == list(path) for argv in shown):
            missing.append(f"no example of `rulepass {' '.join(path)}`")
        for action in parser_of(path)._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help") and not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text):
                    missing.append(f"`rulepass {' '.join(path)} {option}` is not documented")
    for option in ("--version",):
        if option not in text:
            missing.append(f"`rulepass {option}` is not documented")
    assert not missing, "docs/cli.md is missing:\n" + "\n".join(missing)


def test_argv_of_cuts_shell_syntax() -> None:
    assert argv_of("rulepass optimize GRAPH --format json | head -3") == [
        "optimize",
        PLACEHOLDERS["GRAPH"],
        "--format",
        "json",
    ]
    assert argv_of("rulepass validate my_rules/ 2>&1  # both streams") == ["validate", "my_rules/"]
    assert argv_of("rulepass test -v > out.txt") == ["test", "-v"]


# ---- the tutorial, replayed ----------------------------------------------------------------------------------
def test_the_tutorial_shows_what_its_commands_print() -> None:
    replay = _script(ROOT / "scripts" / "replay_tutorial.py")
    text = (DOCS / "tutorial.md").read_text(encoding="utf-8")
    outputs, problems = replay.replay(text)
    assert not problems
    assert len(outputs) == 10  # every ```text block of it is a command's output, checked
    stale = [i for i, out in outputs.items() if replay.blocks(text)[i].body != out]
    assert replay.rewritten(text, outputs) == text, (
        f"the outputs of blocks {stale} of docs/tutorial.md are stale; run: python scripts/replay_tutorial.py"
    )


def test_the_tutorial_replay_catches_a_stale_output_and_an_unreadable_block() -> None:
    replay = _script(ROOT / "scripts" / "replay_tutorial.py")
    text = (
        "Save this as `g.yaml`:\n\n"
        '```yaml\nname: g\nnodes:\n  - {name: x, type: Data, outputs: ["float16[4]"]}\n```\n\n'
        "```sh\nrulepass graph check g.yaml\n```\n\n```text\ng.yaml: ok: graph 'g', 9 nodes\n```\n\n"
        "A mystery:\n\n```toml\nx = 1\n```\n"
    )
    outputs, problems = replay.replay(text)
    assert problems == ["a ```toml block the replay cannot read"]
    assert list(outputs.values()) == [
        "g.yaml: ok: graph 'g', 1 nodes, 0 data edges, 0 control edges, 0 subgraphs\n    op types: Data x1\n"
    ]
    assert "1 nodes" in replay.rewritten(text, outputs) and "9 nodes" not in replay.rewritten(text, outputs)
