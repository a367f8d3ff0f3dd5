"""Incremental and streamed task generation, and nested FFTS+ in one pool: every model the same bytes as a full
compile's, whatever was edited (a rule, one node) and whatever the thread count."""

from __future__ import annotations

import json
import random
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rulepass.compiler.graph_file import copy_graph, graph_to_data
from rulepass.compiler.ir import AttrValue, ComputeGraph, Node, OpDesc, TensorDesc
from rulepass.compiler.task_cache import CacheFolder, TaskCache, TaskCacheWarning, TaskReuse, data_signatures
from rulepass.compiler.tasks import ModelTaskType, candidate_nodes, generate_tasks
from rulepass.dsl.load import RuleSet
from rulepass.examples import example_path

from rulepass.api import CompileResult, compile_graph, load_graph
from rulepass.base.diagnostics import RulepassError
from rulepass.cli import main

EXAMPLES = ["split_relu_concat.yaml", "conv_nc1hwc0_concat.yaml", "allgather_concat.yaml", "tutorial_misaligned.yaml"]


def _compile(g: ComputeGraph, rules: RuleSet | None = None, **kw: Any) -> CompileResult:
    return compile_graph(copy_graph(g), rules, **kw)


def test_an_unchanged_graph_reuses_every_node_and_writes_the_same_bytes(tmp_path: Path) -> None:
    for name in EXAMPLES:
        g = load_graph(example_path(name))
        full = compile_graph(copy_graph(g))
        full.write_model(tmp_path / "prev.json")
        again = compile_graph(copy_graph(g), reuse=TaskReuse(previous=tmp_path / "prev.json"))
        assert again.model_text() == full.model_text(), name
        rep = again.report()["tasks"]
        assert rep["incremental"] and rep["regenerated"] == 0 and rep["reused"] == len(candidate_nodes(again.graph))
        assert not full.report()["tasks"]["incremental"] and full.tasks.reused == 0


def test_signatures_of_a_live_graph_and_of_its_model_text_agree() -> None:
    r = compile_graph(load_graph(example_path("conv_nc1hwc0_concat.yaml")))
    live = dict(data_signatures(graph_to_data(r.graph)))
    assert dict(data_signatures(json.loads(r.model_text())["graph"])) == live  # the JSON round trip keeps them
    r.graph.node("conv_a").op.attrs["_block_dim"] = 7  # type: ignore[union-attr]
    edited = dict(data_signatures(graph_to_data(r.graph)))
    assert {n for n in live if live[n] != edited[n]} == {"conv_a"}


# ---- random edits ---------------------------------------------------------------------------------------------
def _edit_attr(g: ComputeGraph, rng: random.Random) -> str:
    node = rng.choice([n for n in g.all_nodes() if n.type not in ("Data", "NetOutput")])
    node.op.attrs["_block_dim"] = rng.randint(2, 48)
    return f"_block_dim of {node.name}"


def _edit_workspace(g: ComputeGraph, rng: random.Random) -> str:
    node = rng.choice([n for n in g.all_nodes() if n.type not in ("Data", "NetOutput", "Const")])
    node.op.workspace_bytes = [512 * rng.randint(1, 4)]
    return f"workspace of {node.name}"


def _insert_identity(g: ComputeGraph, rng: random.Random) -> str:
    edges = [(n, k) for n in g.nodes_in_insertion_order() for k, p in enumerate(n.in_peers) if p is not None]
    dst, k = rng.choice(edges)
    src = g.remove_data_edge(dst, k)
    desc = src.desc.copy()
    ident = g.add_node(OpDesc(f"inserted_identity_{dst.name}_{k}", "Identity", {}, [desc.copy()], [desc]))
    g.add_data_edge(src.node, src.index, ident, 0)
    g.add_data_edge(ident, 0, dst, k)
    return f"Identity before {dst.name}:{k}"


GRAPH_EDITS: list[Callable[[ComputeGraph, random.Random], str]] = [_edit_attr, _edit_workspace, _insert_identity]


def _mutant_rules(tmp: Path, count: int, rng: random.Random) -> list[tuple[str, RuleSet]]:
    import mutation_campaign as mc  # benchmarks/: one check deleted, or one constant changed, in a rule file

    out = []
    for m in rng.sample(mc.all_mutants(), count):
        work = tmp / f"m{len(out)}"
        work.mkdir()
        out.append((m.id, mc.load_mutant(m, work)))
    return out


def _same_as_full(g: ComputeGraph, rules: RuleSet | None, prev: Path, what: str, **kw: Any) -> CompileResult | None:
    """The incremental compile of `g` from `prev`, after checking it writes what a full compile writes."""
    try:
        full = _compile(g, rules, **kw)
    except RulepassError as exc:  # e.g. a mutant the soundness check refuses: the incremental compile refuses it too
        with pytest.raises(RulepassError) as again:
            _compile(g, rules, reuse=TaskReuse(previous=prev), **kw)
        assert str(again.value) == str(exc)
        return None
    inc = _compile(g, rules, reuse=TaskReuse(previous=prev), **kw)
    assert inc.model_text() == full.model_text(), what
    t = inc.tasks
    assert t.reused + t.regenerated == len(candidate_nodes(inc.graph)), what
    return inc


def _sweep(graphs: list[tuple[str, ComputeGraph]], tmp: Path, seed: int, edits: int, mutants: int) -> None:
    rng = random.Random(seed)
    rule_edits = _mutant_rules(tmp, mutants, rng)
    for name, g in graphs:
        prev = tmp / f"{name}.model.json"
        base = compile_graph(copy_graph(g))
        base.write_model(prev)
        for _ in range(edits):
            edited = copy_graph(g)
            what = rng.choice(GRAPH_EDITS)(edited, rng)
            _same_as_full(edited, None, prev, f"{name}: {what}")
        for mid, rules in rule_edits:
            _same_as_full(g, rules, prev, f"{name}: {mid}")
        _same_as_full(g, None, prev, f"{name}: --disable ConcatNotaskPass", disabled=["ConcatNotaskPass"])


def _corpus(names: list[str] | None = None) -> list[tuple[str, ComputeGraph]]:
    pytest.importorskip("onnx")
    import real_models as rm

    return [(e["name"], rm.import_model(e, "keep")) for e in rm.entries(names or [])]


def _examples() -> list[tuple[str, ComputeGraph]]:
    return [(name, load_graph(example_path(name))) for name in EXAMPLES]


def test_after_random_rule_and_one_node_edits_every_example_and_model_compiles_the_same(tmp_path: Path) -> None:
    _sweep(_examples() + _corpus(), tmp_path, seed=34, edits=2, mutants=1)


@pytest.mark.slow
def test_a_larger_sweep_of_edits_compiles_the_same(tmp_path: Path) -> None:
    _sweep(_examples() + _corpus(), tmp_path, seed=3434, edits=6, mutants=6)


def test_a_one_node_edit_regenerates_that_node_alone(tmp_path: Path) -> None:
    g = load_graph(example_path("conv_nc1hwc0_concat.yaml"))
    full = compile_graph(copy_graph(g))
    full.write_model(tmp_path / "prev.json")
    edited = copy_graph(g)
    edited.node("conv_b").op.attrs["_block_dim"] = 9  # type: ignore[union-attr]
    inc = _same_as_full(edited, None, tmp_path / "prev.json", "conv_b")
    assert inc is not None and inc.tasks.regenerated == 1 and inc.tasks.reused == len(candidate_nodes(inc.graph)) - 1


def _weights(g: ComputeGraph, name: str, fill: float) -> None:
    import numpy as np
    from rulepass.compiler.runtime.kernels import numpy_dtype, origin_shape
    from rulepass.compiler.weights import raw_attrs

    node = g.node(name)
    assert node is not None and node.type == "Const"
    desc = node.op.output_descs[0]
    data = np.full(origin_shape(desc), fill, dtype=numpy_dtype(desc.dtype))
    node.op.attrs.update(raw_attrs(data.tobytes()))  # `_raw_data`, as an importer writes weights


def test_a_const_whose_value_changed_has_no_signature_and_compiles_the_same(tmp_path: Path) -> None:
    """A node that never has tasks is not hashed: new weights leave every candidate's signature as it was, and
    the incremental compile (from the model, and from the folder) writes the full compile's bytes."""
    g = load_graph(example_path("conv_nc1hwc0_concat.yaml"))
    _weights(g, "weight_a", 1.0)
    folder = tmp_path / "cache"
    base = _compile(g, reuse=TaskReuse(folder=folder))
    base.write_model(tmp_path / "prev.json")
    sigs = dict(data_signatures(graph_to_data(base.graph)))
    assert sigs["weight_a"] is None and sigs["conv_a"] is not None
    edited = copy_graph(g)
    _weights(edited, "weight_a", 2.0)
    full = _compile(edited).model_text()
    assert full != base.model_text()  # the graph section holds the weights
    inc = _same_as_full(edited, None, tmp_path / "prev.json", "weight_a's value")
    held, warned = _folder_compile(edited, folder)
    for r in (inc, held):
        assert r is not None and r.model_text() == full and r.tasks.regenerated == 0
        assert r.tasks.reused == len(candidate_nodes(r.graph))
    assert not warned
    # the previous model is read without its weights: the same entries as from its whole text
    prev = TaskCache.from_model(json.loads((tmp_path / "prev.json").read_text()))
    assert TaskCache.load(tmp_path / "prev.json").entries == prev.entries and prev.entries


def test_weights_are_read_as_empty_unless_their_text_has_an_escape() -> None:
    from rulepass.compiler.task_cache import _without_weights

    text = '{"_raw_data":"QUJD","x":{"_raw_data":"a\\"b"},"y":"_raw_data"}'
    assert _without_weights(text) == '{"_raw_data":"","x":{"_raw_data":"a\\"b"},"y":"_raw_data"}'
    assert json.loads(_without_weights(text))["x"]["_raw_data"] == 'a"b'


# ---- the cache folder, the CLI, bad input ---------------------------------------------------------------------
def test_a_cache_folder_keeps_the_last_compile_and_a_different_option_reuses_nothing(tmp_path: Path) -> None:
    g = load_graph(example_path("allgather_concat.yaml"))
    folder = tmp_path / "cache"
    first = _compile(g, reuse=TaskReuse(folder=folder))
    assert first.tasks.reused == 0 and any(folder.iterdir())
    second = _compile(g, reuse=TaskReuse(folder=folder))
    assert second.tasks.reused > 0 and second.model_text() == first.model_text()
    other = _compile(g, reuse=TaskReuse(folder=folder), options={"ge.bufferOptimize": "l1_optimize"})
    assert other.tasks.reused == 0
    assert CacheFolder(folder, g.name, {}).load() is None  # the last compile had the option: its key is kept
    (tmp_path / "file").write_text("x")
    with pytest.raises(RulepassError, match="not a folder"):
        _compile(g, reuse=TaskReuse(folder=tmp_path / "file"))


def _folder_compile(g: ComputeGraph, folder: Path, out: Path | None = None) -> tuple[CompileResult, list[str]]:
    """A compile reusing and rewriting the cache folder, and the task cache warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = _compile(g, reuse=TaskReuse(folder=folder, model_path=out))
    return r, [str(w.message) for w in caught if issubclass(w.category, TaskCacheWarning)]


def _cache_file(folder: Path) -> Path:
    (path,) = folder.glob("*.tasks")
    return path


def test_a_cache_folder_reuses_every_node_held_or_streamed_and_a_one_node_edit_rebuilds_one(tmp_path: Path) -> None:
    g = load_graph(example_path("conv_nc1hwc0_concat.yaml"))
    full = compile_graph(copy_graph(g)).model_text()
    folder = tmp_path / "cache"
    first, warned = _folder_compile(g, folder)
    assert first.tasks.reused == 0 and not warned and [p.suffix for p in folder.iterdir()] == [".tasks"]
    held, _ = _folder_compile(g, folder)
    streamed, _ = _folder_compile(g, folder, tmp_path / "m.json")
    assert held.model_text() == (tmp_path / "m.json").read_text() == full
    assert held.tasks.regenerated == streamed.tasks.regenerated == 0
    edited = copy_graph(g)
    edited.node("conv_b").op.attrs["_block_dim"] = 9  # type: ignore[union-attr]
    inc, _ = _folder_compile(edited, folder, tmp_path / "e.json")
    assert inc.tasks.regenerated == 1 and (tmp_path / "e.json").read_text() == _compile(edited).model_text()


@pytest.mark.parametrize(
    "damage",
    ["truncated", "other format", "not ours", "empty", "bad record", "legacy"],
)
def test_a_corrupt_or_old_cache_warns_once_and_compiles_in_full(tmp_path: Path, damage: str) -> None:
    g = load_graph(example_path("allgather_concat.yaml"))
    full = compile_graph(copy_graph(g)).model_text()
    folder = tmp_path / "cache"
    _folder_compile(g, folder)
    path = _cache_file(folder)
    stem = path.name.split(".")[0]
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        path.write_bytes(data[: len(data) - 5])
    elif damage == "other format":
        data[16] = 1  # the format number, after the magic
        path.write_bytes(data)
    elif damage == "not ours":
        path.write_bytes(b"x" * len(data))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "bad record":
        at = data.index(b'"type"')  # inside the first record's task text
        data[at + 1 : at + 5] = b"TYPE"
        path.write_bytes(data)
    else:  # the files of rulepass's cache format 1
        path.unlink()
        (folder / f"{stem}.model.json").write_text(full)
        (folder / f"{stem}.key").write_text("old")
    r, warned = _folder_compile(g, folder, tmp_path / "m.json")
    assert len(warned) == 1 and "task cache" in warned[0], warned
    assert (tmp_path / "m.json").read_text() == full  # never a wrong model
    assert r.tasks.reused == 0 or damage == "bad record"  # a bad record: the nodes read before it were checked
    again, warned = _folder_compile(g, folder, tmp_path / "m2.json")  # the cache was rewritten
    assert not warned and again.tasks.regenerated == 0 and (tmp_path / "m2.json").read_text() == full
    assert sorted(p.name for p in folder.iterdir()) == [path.name]  # format 1's files removed


def test_cli_incremental_and_streamed_compiles_write_the_same_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = str(example_path("allgather_concat.yaml"))
    a, b, c = (str(tmp_path / f"{x}.json") for x in "abc")
    assert main(["compile", graph, "-o", a, "--quiet", "--format", "json"]) == 0
    assert '"incremental": false' in capsys.readouterr().out
    assert main(["compile", graph, "-o", b, "--quiet", "--incremental-from", a, "--threads", "2"]) == 0
    assert "reused 6, regenerated 0" in capsys.readouterr().out
    cache = str(tmp_path / "cache")
    assert main(["compile", graph, "-o", c, "--quiet", "--task-cache", cache]) == 0
    assert Path(a).read_bytes() == Path(b).read_bytes() == Path(c).read_bytes()
    assert main(["compile", graph, "--quiet", "--incremental-from", str(tmp_path / "missing.json")]) == 1
    assert "previous model" in capsys.readouterr().err
    _cache_file(Path(cache)).write_bytes(b"not a cache")
    assert main(["compile", graph, "-o", b, "--quiet", "--task-cache", cache]) == 0
    err = capsys.readouterr().err
    assert err.count("rulepass: warning: task cache") == 1 and "is truncated" in err, err
    assert Path(a).read_bytes() == Path(b).read_bytes()


def test_a_previous_model_that_is_not_one_is_a_located_error(tmp_path: Path) -> None:
    g = load_graph(example_path("split_relu_concat.yaml"))
    full = compile_graph(copy_graph(g))
    text = full.model_text()
    (tmp_path / "graph.json").write_text('{"nodes": []}')
    with pytest.raises(RulepassError, match="previous model"):
        TaskCache.load(tmp_path / "graph.json")
    (tmp_path / "bad.json").write_text(text.replace('"type":0', '"type":9999', 1))
    with pytest.raises(RulepassError, match=r"bad\.json.*input_0_split_Identity.*9999"):  # its first task
        compile_graph(copy_graph(g), reuse=TaskReuse(previous=tmp_path / "bad.json", model_path=tmp_path / "o.json"))
    assert not (tmp_path / "o.json").exists()  # nothing half-written


def test_streamed_generation_holds_no_task_and_counts_them(tmp_path: Path) -> None:
    g = load_graph(example_path("allgather_concat.yaml"))
    full = compile_graph(copy_graph(g))
    path = tmp_path / "m.json"
    streamed = compile_graph(copy_graph(g), reuse=TaskReuse(model_path=path))
    assert path.read_text() == full.model_text()
    assert streamed.tasks.streamed and streamed.tasks.tasks == [] and streamed.tasks.per_node == {}
    assert streamed.report()["tasks"] == full.report()["tasks"]
    assert streamed.model == full.model  # read back from the file when asked


# ---- nested FFTS+ ---------------------------------------------------------------------------------------------
def _desc() -> TensorDesc:
    return TensorDesc((16, 16), "float16")


def _ffts_node(g: ComputeGraph, name: str, depth: int, src: tuple[Node, int]) -> Node:
    """An FFTS+ node `name` fed by `src`, whose subgraph holds two ReLUs and, above depth 0, another FFTS+ node."""
    attrs: dict[str, AttrValue] = {
        "_ffts_plus_sub_graph": f"{name}_sub",
        "_composite_engine_kernel_lib_name": "ffts_plus",
    }
    node = g.add_node(
        OpDesc(name, "PartitionedCall", attrs, [_desc()], [_desc()], engine="ffts_plus", kernel_lib="ffts_plus")
    )
    g.add_data_edge(src[0], src[1], node, 0)
    sub = ComputeGraph(f"{name}_sub")
    g.set_subgraph(node, sub)
    last = sub.add_node(OpDesc(f"{name}_x", "Data", {"_parent_node_index": 0}, [], [_desc()]))
    for step in ("r1", "in", "r2"):
        if step == "in":
            if depth > 0:
                last = _ffts_node(sub, f"{name}_in", depth - 1, (last, 0))
            continue
        relu = sub.add_node(OpDesc(f"{name}_{step}", "ReLU", {}, [_desc()], [_desc()]))
        sub.add_data_edge(last, 0, relu, 0)
        last = relu
    out_desc = _desc()
    out_desc.attrs["_parent_node_index"] = 0
    out = sub.add_node(OpDesc(f"{name}_out", "NetOutput", {}, [out_desc], []))
    sub.add_data_edge(last, 0, out, 0)
    return node


def nested_ffts(depth: int, width: int) -> ComputeGraph:
    """`width` FFTS+ nodes in a row, each nesting FFTS+ subgraphs `depth` levels deep."""
    g = ComputeGraph("nested")
    last = g.add_node(OpDesc("x", "Data", {}, [], [_desc()]))
    for w in range(width):
        last = _ffts_node(g, f"f{w}", depth, (last, 0))
    out = g.add_node(OpDesc("out", "NetOutput", {}, [_desc()], []))
    g.add_data_edge(last, 0, out, 0)
    return g


def _depth(task: dict[str, object]) -> int:
    subs = (task.get("ffts_plus_task") or {}).get("sub_tasks", [])  # type: ignore[union-attr]
    return 1 + max((_depth(s) for s in subs if s["type"] == ModelTaskType.FFTS_PLUS), default=0)


def test_nested_ffts_plus_subgraphs_share_one_pool_and_give_the_same_model_at_any_thread_count() -> None:
    g = nested_ffts(depth=3, width=3)  # 3 x 4 FFTS+ levels: more nested jobs than threads, none waits for another
    texts = {n: _compile(g, threads=n).model_text() for n in (1, 2, 8)}
    assert texts[1] == texts[2] == texts[8]
    top = compile_graph(copy_graph(g), threads=2).model["model_def"]["task"]
    assert [t["op"] for t in top] == ["f0", "f1", "f2"] and all(_depth(t) == 4 for t in top)
    inner = top[0]["ffts_plus_task"]["sub_tasks"]
    assert [t["op"] for t in inner] == ["f0_r1", "f0_in", "f0_r2"]


def test_a_failing_build_deep_in_nested_ffts_plus_names_its_node_at_any_thread_count() -> None:
    for n in (1, 2, 8):
        g = nested_ffts(depth=2, width=2)
        g.root.subgraphs["f1_in_sub"].node("f1_in_r2").op.kernel_lib = "no_such_lib"  # type: ignore[union-attr]
        with pytest.raises(RulepassError, match="f1_in_r2"):
            generate_tasks(g, threads=n)


def test_an_edit_inside_a_nested_ffts_plus_subgraph_regenerates_its_outer_node(tmp_path: Path) -> None:
    g = nested_ffts(depth=2, width=2)
    full = compile_graph(copy_graph(g), threads=2)
    full.write_model(tmp_path / "prev.json")
    edited = copy_graph(g)
    edited.subgraphs["f1_in_in_sub"].node("f1_in_in_r1").op.attrs["_block_dim"] = 5  # type: ignore[union-attr]
    inc = _same_as_full(edited, None, tmp_path / "prev.json", "nested", threads=8)
    assert inc is not None and inc.tasks.regenerated == 1  # f1, which holds the edited node; x, f0, out reused
