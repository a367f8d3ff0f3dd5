"""What the library keeps between calls: the bundled rule set (reloaded when its files change) and the pass
managers `optimize` runs (one per rule set, level and disabled passes), so that a compile script calling the API
per graph does not load 70 ms of rules, or build a pass manager, for every graph; and what must still be fresh."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import rulepass.rules
from rulepass.compiler import passes, pipeline
from rulepass.examples import example_path

from rulepass import api
from rulepass.base.diagnostics import RulepassError


@pytest.fixture
def rules_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled rule files standing in for the bundled folder, with nothing loaded yet."""
    folder = tmp_path / "rules"
    folder.mkdir()
    for f in rulepass.rules.bundled_rules_dir().glob("*.yaml"):
        shutil.copy(f, folder / f.name)
    monkeypatch.setattr(rulepass.rules, "bundled_rules_dir", lambda: folder)
    monkeypatch.setattr(passes, "_DEFAULT_RULES", None)
    return folder


def _touch(path: Path, text: str) -> None:
    """Write `text` and move the modification time on, so an edit within the clock's tick still reads as one."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, max(st.st_mtime_ns, before + 1_000_000)))


def test_the_bundled_rules_are_loaded_once_and_again_after_an_edit(rules_copy: Path) -> None:
    first = passes.default_rules()
    assert passes.default_rules() is first
    base = rules_copy / "notask_base.yaml"  # the NotaskPass template the concat rule takes its levels from
    edited_text = base.read_text().replace("levels: [O3]", "levels: [O2, O3]", 1)
    assert edited_text != base.read_text()
    _touch(base, edited_text)
    edited = passes.default_rules()
    assert edited is not first
    assert next(r for r in edited.rules if r.name == "ConcatNotaskPass").rule.levels == ("O2", "O3")
    assert passes.default_rules() is edited


EXTRA = """
rules:
  - name: MarkConcat
    match: [ConcatD]
    checks:
      - name: TwoInputs
        require: len(node.inputs) >= 2
    actions:
      - set node._marked = true
"""


def _bump(folder: Path) -> None:
    """Move the folder's modification time on (a file added or removed within the clock's tick)."""
    st = folder.stat()
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_a_rule_file_added_or_removed_reloads_the_bundled_rules(rules_copy: Path) -> None:
    names = {r.name for r in passes.default_rules().rules}
    extra = rules_copy / "mark_concat.yaml"
    _touch(extra, EXTRA)
    _bump(rules_copy)
    assert {r.name for r in passes.default_rules().rules} == names | {"MarkConcat"}
    extra.unlink()
    _bump(rules_copy)
    assert {r.name for r in passes.default_rules().rules} == names


def test_an_edit_that_breaks_the_bundled_rules_raises_each_time(rules_copy: Path) -> None:
    passes.default_rules()
    base = rules_copy / "notask_base.yaml"  # the shared checks the concat and pack rules use
    text = base.read_text()
    assert "reject_if: i.desc.origin_rank == 0" in text
    _touch(base, text.replace("reject_if: i.desc.origin_rank == 0", "reject_if: i.desc.origin_rnk == 0"))
    for _ in range(2):  # a failed load keeps nothing: the next call reports the error again
        with pytest.raises(RulepassError, match="origin_rnk"):
            passes.default_rules()


def test_a_new_working_directory_reloads_the_bundled_rules(
    rules_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = passes.default_rules()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the spans name rule files relative to it
    assert passes.default_rules() is not first


def test_optimize_reuses_one_pass_manager_per_rule_set_level_and_disabled_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "_PASS_MANAGERS", {})
    built: list[object] = []
    real = pipeline.build_pass_manager

    def counting(*args: object, **kw: object) -> passes.PassManager:
        pm = real(*args, **kw)  # type: ignore[arg-type]
        built.append(pm)
        return pm

    monkeypatch.setattr(pipeline, "build_pass_manager", counting)
    rules = api.load_rules()
    path = example_path()
    first = api.optimize(api.load_graph(path), rules)
    again = api.optimize(api.load_graph(path), rules)
    assert len(built) == 1
    assert [d.to_json() for d in first.decisions] == [d.to_json() for d in again.decisions]
    api.optimize(api.load_graph(path), rules, disabled=["ConcatNotaskPass"])
    api.optimize(api.load_graph(path), rules, level="O1")
    assert len(built) == 3
    # a rule set changed in place is another rule set: its pass manager runs what it now holds
    (tmp_path / "mark_concat.yaml").write_text(EXTRA)
    rules.rules.extend(api.load_rules([tmp_path / "mark_concat.yaml"]).rules)
    more = api.optimize(api.load_graph(path), rules)
    assert len(built) == 4
    assert "MarkConcat" in {d.rule for d in more.decisions}
    assert "MarkConcat" not in {d.rule for d in first.decisions}


def test_bad_disabled_passes_are_still_an_error_every_time() -> None:
    rules = api.load_rules()
    graph = api.load_graph(example_path())
    for _ in range(2):
        with pytest.raises(RulepassError, match="collection of pass names"):
            api.optimize(graph, rules, disabled="ConcatNotaskPass")
        with pytest.raises(RulepassError, match="unknown pass 'ConcatNotask'"):
            api.optimize(graph, rules, disabled=["ConcatNotask"])
        with pytest.raises(RulepassError, match="unknown optimisation level"):
            api.optimize(graph, rules, level="O9")
        with pytest.raises(RulepassError, match="unknown optimisation level"):
            api.optimize(graph, rules, level=["O3"])  # type: ignore[arg-type]


def test_the_bundled_rules_load_from_a_removed_working_directory(
    rules_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # the process still stands in it; the spans name the files as they are
    rules = passes.default_rules()
    assert {r.name for r in rules.rules} >= {"ConcatNotaskPass", "PackNotaskPass"}
    assert passes.default_rules() is rules


@pytest.mark.parametrize("call", ["optimize", "explain", "plan_memory", "compile_graph"])
def test_a_graph_or_rule_set_of_the_wrong_type_is_one_usage_error(call: str) -> None:
    graph = api.load_graph(example_path())
    stage = getattr(api, call)
    extra = ("concat",) if call == "explain" else ()
    with pytest.raises(RulepassError, match="expected a ComputeGraph, not str"):
        stage("graph.yaml", *extra)
    for wrong in (["rules/"], "rules/"):
        with pytest.raises(RulepassError, match=r"expected a RuleSet \(or None for the bundled rules\)"):
            stage(graph, *extra, wrong)
