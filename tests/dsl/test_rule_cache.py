"""The cache of loaded rules (dsl/cache.py, dsl/rule_cache.py): the same diagnostics warm or cold, any edit seen,
nothing read back that is not whole and ours, and processes sharing the folder at once.

Each test copies the bundled rules into a temporary folder and uses a cache folder of its own.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rulepass.compiler.facts import ge_catalogue
from rulepass.compiler.passes import GE_PLACEHOLDER_PASSES
from rulepass.dsl import ast
from rulepass.dsl.cache import KEY_FILE, Store
from rulepass.dsl.load import load_rules
from rulepass.rules import bundled_rules_dir

from rulepass.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "allgather_concat.yaml"


@pytest.fixture
def rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled rules, validated from its own folder with a cache folder of the test's."""
    folder = tmp_path / "rules"
    shutil.copytree(bundled_rules_dir(), folder, ignore=shutil.ignore_patterns("fixtures", "*.py", "__pycache__"))
    monkeypatch.setenv("RULEPASS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return folder


def validate(*args: str) -> tuple[int, str, str]:
    """`rulepass [args] validate rules`: the exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main([*args, "validate", "rules"], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def validate_json(*args: str) -> dict[str, object]:
    """What `validate --format json` reports."""
    out = io.StringIO()
    main([*args, "validate", "rules", "--format", "json"], out=out, err=io.StringIO())
    data: dict[str, object] = json.loads(out.getvalue())
    return data


def entries(cache: Path, kind: str) -> list[Path]:
    """The cache's entries of one kind ('file' or 'set')."""
    return sorted(cache.glob(f"{kind}-*.json"))


def test_edit_validate_revert(rules: Path) -> None:
    cache = rules.parent / "cache"
    clean = validate()
    assert clean[0] == 0 and clean[2] == "" and "10 rule(s) compiled: valid" in clean[1]
    assert len(entries(cache, "file")) == 6 and len(entries(cache, "set")) == 1
    assert validate() == clean  # warm: the set's entry

    concat = rules / "concat_notask.yaml"
    original = concat.read_text(encoding="utf-8")
    concat.write_text(original.replace("set node._no_task = true", "set node._no_task = true.nope"))
    broken = validate()
    assert broken[0] == 1, broken
    assert "concat_notask.yaml:26:" in broken[2] and "nope" in broken[2], broken[2]
    assert validate() == broken  # warm, the error too
    assert validate("--no-cache") == broken  # and as a load without any cache says
    assert len(entries(cache, "file")) == 7  # one more file entry: the edited file's; the others were reused

    concat.write_text(original, encoding="utf-8")
    assert validate() == clean

    # a shared check edited: the rules that use it are checked again, and say so
    base = rules / "notask_base.yaml"
    shared = base.read_text(encoding="utf-8")
    assert "reject_if: i.desc.origin_rank == 0" in shared
    base.write_text(shared.replace("reject_if: i.desc.origin_rank == 0", "reject_if: i.desc.origin_rank == 'x'"))
    mixed = validate()
    assert mixed[0] == 1 and "notask_base.yaml" in mixed[2]
    assert "the rule(s) that use this shared check: ConcatNotaskPass, PackNotaskPass" in mixed[2], mixed[2]
    assert validate() == mixed == validate("--no-cache")
    base.write_text(shared, encoding="utf-8")
    assert validate() == clean


def test_warnings_and_json_identical_warm_and_cold(rules: Path) -> None:
    base = rules / "notask_base.yaml"
    base.write_text(
        base.read_text(encoding="utf-8") + "\n  - name: NeverUsed\n    require: node.type == 'X'\n", encoding="utf-8"
    )
    cold = validate_json("--no-cache")
    assert cold["warnings"] == 1 and cold["errors"] == 0
    assert validate_json() == cold  # filling the cache
    assert validate_json() == cold  # from it
    assert validate("--no-cache") == validate()  # the text too, excerpt and caret included
    assert "NeverUsed" in validate()[2] and "^" in validate()[2]


def test_warm_load_parses_nothing(rules: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cold = load_rules([rules], ge_catalogue(), known_passes=GE_PLACEHOLDER_PASSES)
    import rulepass.dsl.parse as parse

    def refuse(*_args: object) -> None:
        raise AssertionError("parsed although every file's ASTs were cached")

    monkeypatch.setattr(parse, "_parse", refuse)
    warm = load_rules([rules], ge_catalogue(), known_passes=GE_PLACEHOLDER_PASSES)
    assert [r.name for r in warm.rules] == [r.name for r in cold.rules] and not warm.diagnostics
    for a, b in zip(cold.rules, warm.rules, strict=True):
        assert a.fast is not None and b.fast is not None
        assert a.fast.source == b.fast.source  # the same ASTs generate the same code


def test_an_edited_file_parses_only_the_expressions_the_edit_changed(
    rules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_rules([rules], ge_catalogue(), known_passes=GE_PLACEHOLDER_PASSES)
    import rulepass.dsl.parse as parse

    real = parse._parse
    texts: list[str] = []

    def counted(text: str, *args: Any) -> Any:
        texts.append(text)
        return real(text, *args)

    monkeypatch.setattr(parse, "_parse", counted)
    concat = rules / "concat_notask.yaml"
    original = concat.read_text(encoding="utf-8")
    concat.write_text(original.replace("Mark a concat", "Mark a ConcatD"), encoding="utf-8")  # no expression
    edited = load_rules([rules], ge_catalogue(), known_passes=GE_PLACEHOLDER_PASSES)
    assert texts == [] and not edited.diagnostics
    concat.write_text(original.replace("dim_index = 0", "dim_index = 1"), encoding="utf-8")
    edited = load_rules([rules], ge_catalogue(), known_passes=GE_PLACEHOLDER_PASSES)
    assert texts == ["set node._reuse_input_on_dim_index = 1"] and not edited.diagnostics


def test_ast_data_round_trip_and_refusals() -> None:
    rs = load_rules([bundled_rules_dir()], ge_catalogue(), known_passes=GE_PLACEHOLDER_PASSES)
    assert rs.rules
    for r in rs.rules:
        for e in (*(b.expr for b in r.rule.lets), *r.rule.actions):
            data = json.loads(json.dumps(ast.to_data(e.node)))
            assert repr(ast.from_data(data)) == repr(e.node)
    for bad in (None, [], ["Exec", 0, 1, 1], ["Name", 0, 1, 1], ["Name", 0, 1, 1, 5], ["Lit", 0, 1, 1, [1]]):
        with pytest.raises(ValueError):
            ast.from_data(bad)


def test_tampered_or_corrupt_entries_are_ignored_and_rebuilt(rules: Path) -> None:
    cache = rules.parent / "cache"
    clean = validate()
    files = entries(cache, "file")  # the entries of the files as they are now
    concat = rules / "concat_notask.yaml"
    concat.write_text(concat.read_text(encoding="utf-8").replace("_no_task = true", "_no_task = 1 + true"))
    broken = validate()
    assert broken[0] == 1
    concat.write_text((bundled_rules_dir() / concat.name).read_text(encoding="utf-8"), encoding="utf-8")
    store = Store.open()
    assert store is not None
    # the clean set's entry forged to report the broken set's findings, tagged with another key: not trusted
    set_entry = next(p for p in entries(cache, "set") if store.get(p.stem)["diagnostics"] == [])
    broken_data = next(store.get(p.stem) for p in entries(cache, "set") if p != set_entry)
    body = json.dumps(broken_data).encode()
    set_entry.write_bytes(Store(cache, b"k" * 32)._tag(body) + b"\n" + body)
    # a file's entry cut short, another's body changed under its old tag
    files[0].write_bytes(files[0].read_bytes()[:-10])
    tag, _, rest = files[1].read_bytes().partition(b"\n")
    files[1].write_bytes(tag + b"\n" + rest.replace(b'"schema_ok":true', b'"schema_ok":false'))
    assert validate() == clean
    for p in files:  # each was written again, whole
        assert store.get(p.stem) is not None, p
    assert store.get(set_entry.stem) is not None and store.get(set_entry.stem)["diagnostics"] == []
    assert validate() == clean


def test_unsafe_folder_or_key_turns_the_cache_off(rules: Path) -> None:
    cache = rules.parent / "cache"
    clean = validate()
    assert Store.open() is not None
    if not hasattr(os, "getuid"):
        pytest.skip("no POSIX owners or modes")
    (cache / KEY_FILE).chmod(0o644)  # readable by others: anyone could forge entries
    assert Store.open() is None
    assert validate() == clean
    (cache / KEY_FILE).chmod(0o600)
    cache.chmod(0o777)  # others could swap entries
    assert Store.open() is None
    cache.chmod(0o700)
    assert Store.open() is not None
    (cache / KEY_FILE).write_bytes(b"short")
    assert Store.open() is None and validate() == clean


@pytest.mark.slow
def test_processes_sharing_the_cache_at_once(rules: Path) -> None:
    cache = rules.parent / "cache"
    env = {**os.environ, "RULEPASS_CACHE_DIR": str(cache)}
    commands = [["validate", str(rules)], ["optimize", str(EXAMPLE), "--rules", str(rules)]] * 2
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "rulepass", *c], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for c in commands
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outs
    assert outs[0] == outs[2] and outs[1] == outs[3]
    store = Store.open()
    assert store is not None
    found = entries(cache, "file") + entries(cache, "set")
    assert len(found) == 7 and all(store.get(p.stem) is not None for p in found)
    assert not list(cache.glob(".*.tmp"))  # no temporary file left behind
    again = subprocess.run(
        [sys.executable, "-m", "rulepass", "validate", str(rules)], capture_output=True, env=env, timeout=120
    )
    assert (again.stdout, again.stderr) == outs[0]


LEAN = """
import io, sys
import rulepass.cli
code = rulepass.cli.main({args}, out=io.StringIO(), err=io.StringIO())
heavy = ("numpy", "onnx", "networkx", "jsonschema", "lark", "rulepass.dsl.codegen", "rulepass.engine.run")
print(code, sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy))
"""


@pytest.mark.parametrize(
    "args", [["--version"], ["catalogue"], ["validate"]], ids=["version", "catalogue", "validate-warm"]
)
def test_commands_import_only_what_they_use(args: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "RULEPASS_CACHE_DIR": str(tmp_path / "cache")}
    script = LEAN.format(args=args)
    if args == ["validate"]:  # an unchanged set: the cache filled by a first run
        subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, timeout=120)
    got = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert got.stdout.strip() == "0 []", got.stdout + got.stderr


def test_where_the_cache_lives_and_turning_it_off(rules: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rulepass.dsl.cache import cache_dir

    cache = rules.parent / "cache"
    assert cache_dir() == cache
    monkeypatch.delenv("RULEPASS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(rules.parent / "xdg"))
    assert cache_dir() == rules.parent / "xdg" / "rulepass"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(rules.parent / "home"))
    assert cache_dir() == rules.parent / "home" / ".cache" / "rulepass"
    monkeypatch.setenv("RULEPASS_CACHE_DIR", str(cache))
    clean = validate("--no-cache")
    assert not cache.exists()
    monkeypatch.setenv("RULEPASS_NO_CACHE", "1")
    assert cache_dir() is None and validate() == clean and not cache.exists()
    monkeypatch.setenv("RULEPASS_NO_CACHE", "0")
    assert validate() == clean and cache.exists()


def test_the_folder_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rulepass.dsl.cache as cache

    monkeypatch.setenv("RULEPASS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "MAX_ENTRIES", 10)
    monkeypatch.setattr(cache, "KEEP_ENTRIES", 6)
    store = Store.open()
    assert store is not None
    for k in range(11):
        store.put(f"set-{k:02d}", {"k": k})
        os.utime(tmp_path / "cache" / f"set-{k:02d}.json", ns=(k * 10**9, k * 10**9))
    kept = sorted(p.stem for p in (tmp_path / "cache").glob("*.json"))
    assert kept == [f"set-{k:02d}" for k in range(5, 11)] and store.get("set-10") == {"k": 10}
    assert (tmp_path / "cache" / KEY_FILE).exists()  # the key is not an entry


def test_unsaved_texts_are_read_instead_of_the_disk(rules: Path) -> None:
    """`validate_ge_rules(texts=...)` (the language server's unsaved buffers) checks the given text, not the file;
    the disk's text checked after it is judged on its own bytes, warm cache or not."""
    from rulepass.compiler.passes import validate_ge_rules

    base = rules / "notask_base.yaml"
    edited = base.read_text(encoding="utf-8").replace("origin_rank", "origin_rnak", 1).encode()
    for _ in range(2):  # cold, then from the cache
        found = validate_ge_rules([rules], texts={base.resolve(): edited})
        assert [d.code for d in found.errors] == ["unknown-field"] and "origin_rnak" in found.errors[0].message
        assert not validate_ge_rules([rules]).errors
