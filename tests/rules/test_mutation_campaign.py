"""The mutation campaign: every bundled no-task rule with one check deleted, or one constant changed, over the
examples and the rule fixtures' graphs. A mutant that changes any output under `run` must be stopped by the
soundness checker at compile time (benchmarks/mutation_campaign.py; the matrix is in docs/safety.md)."""

from __future__ import annotations

from pathlib import Path

import mutation_campaign as mc
import pytest
import yaml
from rulepass.rules import bundled_rules_dir


def test_mutants_are_made_from_the_yaml_data_one_edit_each() -> None:
    mutants = mc.all_mutants()
    assert len({m.id for m in mutants}) == len(mutants)
    base = {f: yaml.safe_load((bundled_rules_dir() / f).read_text(encoding="utf-8")) for f in mc.NO_TASK_FILES}
    deleted = [m for m in mutants if m.kind == "delete"]
    # every check item of every rule's checks (and every nested check of the shared checks) is deleted once
    items = sum(len(c) for f, data in base.items() for _, c in mc._check_lists(data) if len(c) > 1)
    assert len(deleted) == items
    assert any(m.id == "notask_base.yaml: delete CheckDimForInput/CheckDimAlignment" for m in deleted)
    assert any(
        m.id.startswith("notask_base.yaml: InputCheck/CheckTensorAlign/require") and "32 -> 33" in m.id for m in mutants
    )
    for m in mutants:
        assert m.data != base[m.file]  # one edit, and the original is untouched
    assert base == {f: yaml.safe_load((bundled_rules_dir() / f).read_text(encoding="utf-8")) for f in mc.NO_TASK_FILES}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[mc.Outcome]:
    """Every deletion mutant and every fourth constant mutant (the whole campaign, about 120 mutants, is the
    benchmark's: `python benchmarks/mutation_campaign.py`), their rule files written under tmp_path."""
    mutants = mc.all_mutants()
    constants = [m for m in mutants if m.kind == "constant"]
    chosen = [m for m in mutants if m.kind == "delete"] + constants[::4]
    return mc.run_campaign(chosen, workdir=Path(tmp_path_factory.mktemp("mutants")))


@pytest.mark.slow
def test_no_mutant_that_changes_outputs_passes_silently(outcomes: list[mc.Outcome]) -> None:
    missed = [(o.mutant.id, o.graphs["unsound-and-missed"]) for o in outcomes if o.verdict == "unsound-and-missed"]
    assert missed == []
    assert not [o.mutant.id for o in outcomes if o.verdict == "invalid"]


@pytest.mark.slow
def test_the_checker_is_exercised_by_the_mutants_that_matter(outcomes: list[mc.Outcome]) -> None:
    verdict = {o.mutant.id: o.verdict for o in outcomes}
    assert sum(v == "caught" for v in verdict.values()) >= 20
    for mutant in (
        "notask_base.yaml: delete CheckDimForInput/CheckDimAlignment",  # the 24-channel NC1HWC0 concat of issue 32
        "notask_base.yaml: delete CheckDimForInput/CheckRealDim",
        "concat_notask.yaml: delete ConcatNotaskPass/use CheckDim",
        "split_notask.yaml: delete SplitNotaskPass/CheckDim/use CheckDimForInput",
        "pack_notask.yaml: delete PackNotaskPass/CheckDim",  # Pack's own (GE's PackNotaskPass::CheckDim)
        "pack_notask.yaml: delete PackNotaskPass/CheckDim/LastAxisAllOnes",  # axis == rank interleaves
    ):
        assert verdict[mutant] == "caught", mutant


def test_the_unmutated_rules_run_every_runnable_campaign_graph_as_the_direct_evaluation() -> None:
    """The campaign compares mutants with the direct evaluation: for the unmutated rules the two agree."""
    from rulepass.compiler.graph_file import copy_graph
    from rulepass.compiler.runtime import run_model

    from rulepass.api import compile_graph, load_rules
    from rulepass.base.diagnostics import RulepassError

    rules = load_rules(None)
    compared = 0
    for name, g in mc.campaign_graphs():
        ref = mc._reference(g, rules)
        if ref.outputs is None:
            continue
        try:
            model = compile_graph(copy_graph(g), rules).model
        except RulepassError:
            continue  # refused by the unmutated rules' compile (e.g. an unsound hand-marked fixture)
        assert mc._fingerprints(run_model(model, seed=11, ranks=ref.ranks).per_rank) == ref.outputs, name
        compared += 1
    assert compared >= 40
