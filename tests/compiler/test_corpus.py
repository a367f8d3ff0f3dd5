"""Corpus runs (`rulepass.compiler.corpus`): the entries a corpus names, the rule fingerprints and cache keys,
the diff of two rule sets, the cache (hits, a one-rule edit, corrupt entries) and the workers (same bytes
whatever the count, and on a Dask cluster)."""

from __future__ import annotations

import pickle
import shutil
import time
from pathlib import Path

import pytest
from rulepass.compiler.corpus.execute import open_cache, run_corpus
from rulepass.compiler.corpus.inputs import (
    Entry,
    GraphData,
    ImportOptions,
    RuleSource,
    expand,
    fingerprint,
    result_key,
)
from rulepass.compiler.corpus.jobs import Job, Product, load_graph_data, run_job
from rulepass.compiler.corpus.render import FORMATS, render
from rulepass.compiler.corpus.report import batch_report, diff_report
from rulepass.compiler.graph_file import dump_graph
from rulepass.examples import example_path
from rulepass.rules import bundled_rules_dir

from rulepass.base.diagnostics import RulepassError

EXAMPLES = Path(example_path()).parent
MODELS = Path(__file__).parent.parent / "data" / "models"

RELU_ONLY = """name: relus
nodes:
  - {name: x, type: Data, attrs: {index: 0}, outputs: ["float16[1,64]"]}
  - {name: relu, type: ReLU, inputs: [x:0], outputs: ["float16[1,64]"]}
  - {name: out, type: NetOutput, inputs: [relu:0]}
"""


def edited_rules(tmp: Path, name: str, old: str, new: str, *, base: Path | None = None) -> Path:
    """A copy of the bundled rules (or of `base`) with `old` replaced by `new` in rule file `name`."""
    folder = tmp / f"rules-{len(list(tmp.glob('rules-*')))}"
    shutil.copytree(base or bundled_rules_dir(), folder, ignore=shutil.ignore_patterns("fixtures", "*.py"))
    text = (folder / name).read_text(encoding="utf-8")
    assert old in text
    (folder / name).write_text(text.replace(old, new), encoding="utf-8")
    return folder


def strict_alignment(tmp: Path) -> Path:
    """Rules whose tensor alignment is 8192 bytes, not 32: concats and splits of small tensors miss."""
    return edited_rules(tmp, "notask_base.yaml", "% 32 == 0", "% 8192 == 0")


@pytest.fixture
def corpus(tmp_path: Path) -> list[Entry]:
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "relus.yaml").write_text(RELU_ONLY, encoding="utf-8")
    (tmp_path / "g" / "broken.yaml").write_text("name: [unclosed\n", encoding="utf-8")
    return [
        *expand([str(EXAMPLES / "*.yaml")]),
        *expand([str(tmp_path / "g")]),
        Entry(str(tmp_path / "missing.json")),
    ]


def test_expand_folders_globs_and_manifests(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    for name in ("x.yaml", "y.json", "m.onnx", "notes.txt", ".hidden.yaml"):
        (tmp_path / "a" / name).write_text("{}", encoding="utf-8")
    (tmp_path / "list.txt").write_text("# graphs\na/x.yaml\n\na/*.json  # a glob\n", encoding="utf-8")
    (tmp_path / "list.yaml").write_text(
        "corpus:\n  - a/x.yaml\n  - {path: a/m.onnx, formats: ascend, dims: {N: 2}, level: O2}\n", encoding="utf-8"
    )
    entries = expand([str(tmp_path / "a"), str(tmp_path / "a" / "x.yaml")], [str(tmp_path / "list.txt")])
    assert [Path(e.path).name for e in entries] == ["m.onnx", "x.yaml", "y.json"]  # sorted, each once, no hidden
    (onnx,) = [e for e in expand([], [str(tmp_path / "list.yaml")]) if e.is_onnx]
    assert onnx.imports == ImportOptions("ascend", (("N", 2),)) and onnx.level == "O2"
    assert onnx.label.endswith("m.onnx [formats=ascend, dims={'N': 2}, level=O2]")
    assert expand([str(tmp_path / "none" / "*.yaml")]) == [Entry(str(tmp_path / "none" / "*.yaml"))]
    (tmp_path / "bad.yaml").write_text("corpus:\n  - {path: a/x.yaml, level: O9}\n", encoding="utf-8")
    with pytest.raises(RulepassError, match="entry 1"):
        expand([], [str(tmp_path / "bad.yaml")])


def test_fingerprint_ignores_positions_and_sees_edits(tmp_path: Path) -> None:
    bundled = fingerprint(RuleSource.read(None).load())
    moved = edited_rules(tmp_path, "concat_notask.yaml", "rules:\n", "# a comment\n\nrules:\n")
    assert fingerprint(RuleSource.read([moved]).load()) == bundled
    strict = fingerprint(RuleSource.read([strict_alignment(tmp_path)]).load())
    changed = {i for i, (a, b) in enumerate(zip(bundled, strict, strict=True)) if a != b}
    names = [r.name for r in RuleSource.read(None).load().rules]
    assert sorted(names[i] for i in changed) == ["ConcatNotaskPass", "PackNotaskPass"]  # the users of the check
    assert all(bundled[i].header == strict[i].header for i in changed)  # only the bodies changed


def test_a_rule_edit_keys_only_the_graphs_it_can_match(tmp_path: Path) -> None:
    bundled = fingerprint(RuleSource.read(None).load())
    concat_edit = edited_rules(
        tmp_path, "concat_notask.yaml", "{axis_attr: concat_dim, new_axes: 0}", "{axis_attr: N, new_axes: 0}"
    )
    edited = fingerprint(RuleSource.read([concat_edit]).load())
    graph = GraphData(Entry("g.yaml"), b"", "d" * 64)
    opts = {"level": "O3", "disabled": []}
    assert result_key("compile", graph, ["Data", "ReLU"], bundled, opts) == result_key(
        "compile", graph, ["Data", "ReLU"], edited, opts
    )
    assert result_key("compile", graph, ["ConcatD"], bundled, opts) != result_key(
        "compile", graph, ["ConcatD"], edited, opts
    )
    assert result_key("optimize", graph, ["ReLU"], bundled, opts) != result_key(
        "compile", graph, ["ReLU"], bundled, opts
    )


def test_diff_reports_flips_deltas_and_unreadable_files(tmp_path: Path, corpus: list[Entry]) -> None:
    strict = RuleSource.read([strict_alignment(tmp_path)])
    outcomes = run_corpus(corpus, [("compile", RuleSource.read(None)), ("compile", strict)])
    report = diff_report(outcomes, ["old"], ["new"], "O3")
    s = report["summary"]
    assert (s["graphs"], s["unreadable"], s["changed"] + s["unchanged"]) == (7, 2, 5)
    assert [e["graph"].rsplit("/", 1)[1] for e in report["errors"]] == ["broken.yaml", "missing.json"]
    top = report["graphs"][0]
    assert top["graph"].endswith("conv_nc1hwc0_concat.yaml") and top["rank"] == 1  # the most copy bytes moved
    # the concat flips; the layout-conflict rule that looks at it misses either way, at another check now
    (change,) = [c for c in top["changes"] if c["pass"] == "ConcatNotaskPass"]
    assert all(c["before"].startswith("missed") for c in top["changes"] if c is not change)
    assert (change["node"], change["before"], change["decided_by"]) == (
        "concat_c",
        "fired",
        "InputCheck/CheckTensorAlign",
    )
    assert change["after"] == "missed at InputCheck/CheckTensorAlign"
    assert top["deltas"]["virtual_ops"] == {"before": 1, "after": 0, "delta": -1}
    assert top["deltas"]["copy_bytes_saved"]["after"] == 0
    assert s["deltas"]["kernel_tasks"] == -s["deltas"]["virtual_ops"] > 0
    for fmt in FORMATS:
        text = render(report, fmt)
        assert "concat_c" in text and "missing.json" in text
    assert "<script" not in render(report, "html")


def test_batch_reports_sum_the_graphs(corpus: list[Entry]) -> None:
    outcomes = run_corpus(corpus[:2], [("compile", RuleSource.read(None))])
    report = batch_report(outcomes, "compile", ["rules"], "O3")
    rows = report["graphs"]
    assert report["summary"]["totals"]["tasks"] == sum(r["tasks"] for r in rows) > 0
    assert all(r["soundness"] == "sound" for r in rows)


def test_the_cache_skips_what_a_one_rule_edit_cannot_change(tmp_path: Path, corpus: list[Entry]) -> None:
    store = open_cache(tmp_path / "cache")
    assert store is not None
    bundled, strict = RuleSource.read(None), RuleSource.read([strict_alignment(tmp_path)])
    first = run_corpus(corpus, [("compile", bundled), ("compile", strict)], store=store)
    # relus.yaml has no node any edited rule matches: its two results are one, computed once
    relus = next(o for o in first if o.entry.path.endswith("relus.yaml"))
    assert relus.results[0] == relus.results[1]
    again = run_corpus(corpus, [("compile", bundled), ("compile", strict)], store=store)
    assert [o.results for o in again] == [o.results for o in first]
    assert sum(o.cached for o in again) == 2 * 5
    # a one-rule edit (the concat rule's axis attribute): only the graphs with a concat are computed again
    concat_edit = RuleSource.read(
        [
            edited_rules(
                tmp_path,
                "concat_notask.yaml",
                "{axis_attr: concat_dim, new_axes: 0}",
                "{axis_attr: N, new_axes: 0}",
                base=Path(strict.files[0][0]).parent,
            )
        ]
    )
    third = run_corpus(corpus, [("compile", bundled), ("compile", concat_edit)], store=store)
    assert {Path(o.entry.path).name: o.cached for o in third if o.error is None} == {
        "allgather_concat.yaml": 1,
        "conv_nc1hwc0_concat.yaml": 1,
        "split_relu_concat.yaml": 1,
        "tutorial_misaligned.yaml": 1,
        "relus.yaml": 2,
    }


def test_corrupt_cache_entries_are_ignored_and_rewritten(tmp_path: Path, corpus: list[Entry]) -> None:
    store = open_cache(tmp_path / "cache")
    assert store is not None
    wanted = [("compile", RuleSource.read(None))]
    first = run_corpus(corpus[:2], wanted, store=store)
    entries = sorted((tmp_path / "cache").glob("r-*.json"))
    entries[0].write_bytes(b"garbage\n{}")
    entries[1].write_bytes(entries[1].read_bytes()[:-10])
    again = run_corpus(corpus[:2], wanted, store=store)
    assert [o.results for o in again] == [o.results for o in first]
    assert sum(o.cached for o in again) == 0
    assert sum(o.cached for o in run_corpus(corpus[:2], wanted, store=store)) == 2


def test_workers_give_the_same_bytes(tmp_path: Path, corpus: list[Entry]) -> None:
    wanted = [("compile", RuleSource.read(None)), ("compile", RuleSource.read([strict_alignment(tmp_path)]))]
    one = diff_report(run_corpus(corpus, wanted, workers=1), ["a"], ["b"], "O3")
    two = diff_report(run_corpus(corpus, wanted, workers=2), ["a"], ["b"], "O3")
    assert all(render(one, f) == render(two, f) for f in FORMATS)


def test_jobs_and_results_pickle() -> None:
    rules = RuleSource.read(None)
    job = Job(GraphData.read(Entry(str(example_path())), 1 << 20), (Product("optimize", rules, ()),), "O3", ())
    again = pickle.loads(pickle.dumps(job))
    assert again == job and again.products[0].rules.load() is rules.load()  # compiled once per process
    result = run_job(again)
    assert pickle.loads(pickle.dumps(result)) == result and result.error is None
    graph = load_graph_data(job.graph)  # graphs pickle too (a job carries bytes: the worker parses them)
    assert dump_graph(pickle.loads(pickle.dumps(graph))) == dump_graph(graph)


def test_onnx_entries_are_imported_with_their_options() -> None:
    model = str(MODELS / "branches_tiny.onnx")
    entries = [Entry(model), Entry(model, ImportOptions(formats="ascend"))]
    outcomes = run_corpus(entries, [("optimize", RuleSource.read(None))])
    assert all(o.error is None for o in outcomes)
    assert outcomes[0].results != outcomes[1].results  # the Ascend formats change what the passes see


@pytest.mark.slow
def test_a_local_dask_cluster_gives_the_local_bytes(tmp_path: Path) -> None:
    from distributed import LocalCluster  # in the `test` extra

    entries = [*expand([str(Path(example_path()).parent / "*.yaml")]), Entry(str(tmp_path / "missing.yaml"))]
    wanted = [("compile", RuleSource.read(None)), ("compile", RuleSource.read([strict_alignment(tmp_path)]))]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = diff_report(run_corpus(entries, wanted, cluster=cluster.scheduler_address), ["a"], ["b"], "O3")
    local = diff_report(run_corpus(entries, wanted, workers=1), ["a"], ["b"], "O3")
    assert remote["summary"]["changed"] > 0 and len(remote["errors"]) == 1
    assert all(render(remote, f) == render(local, f) for f in FORMATS)


def test_an_unreachable_cluster_is_one_clear_error() -> None:
    t0 = time.perf_counter()
    with pytest.raises(RulepassError) as caught:
        run_corpus(
            [Entry(str(example_path()))],
            [("optimize", RuleSource.read(None))],
            cluster="tcp://127.0.0.1:9",
            connect_timeout=1,
        )
    (d,) = caught.value.diagnostics
    assert d.code == "cluster" and "tcp://127.0.0.1:9" in d.message
    assert time.perf_counter() - t0 < 30
