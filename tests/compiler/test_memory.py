"""Memory assignment reproduces GE's layout facts, and the independent verifier accepts every plan it makes."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rulepass.compiler.graph_file import load_graph_text
from rulepass.compiler.ir import ComputeGraph, OpDesc, TensorDesc
from rulepass.compiler.memory.assign import assign_memory
from rulepass.compiler.memory.verify import verify_plan
from rulepass.examples import example_path

from rulepass.api import load_graph, optimize, plan_memory


def _plan(text: str, *, opt: bool = True) -> tuple[ComputeGraph, object]:
    g = load_graph_text(text, "t.yaml")
    if opt:
        optimize(g)
    p = assign_memory(g)
    assert verify_plan(g, p) == []
    return g, p


def test_worked_sizing_example_spec_5_5() -> None:
    g = load_graph(example_path("allgather_concat.yaml"))
    optimize(g)
    p = assign_memory(g)
    a0, a1, out = p.tensors["allgather_0:0"], p.tensors["allgather_1:0"], p.tensors["concat:0"]
    assert (a0.raw_size, a0.size) == (50_331_648, 50_331_680)
    assert (out.raw_size, out.size) == (100_663_296, 100_663_328)
    assert a1.offset == a0.offset + 50_331_648
    assert out.offset == a0.offset
    assert a0.unit == a1.unit == out.unit  # producer 1 has no block of its own
    unit_bytes = max(t.offset + t.size for t in (a0, a1, out)) - a0.offset
    assert -(-unit_bytes // 512) * 512 == 100_663_808
    assert verify_plan(g, p) == []


PACK_ST = """
nodes:
  - {name: x, type: Data, outputs: ["float16[3,256]"]}
  - {name: relu_0, type: ReLU, inputs: [x:0], outputs: ["float16[1,256]"]}
  - {name: relu_1, type: ReLU, inputs: [x:0], outputs: ["float16[1,256]"]}
  - {name: relu_2, type: ReLU, inputs: [x:0], outputs: ["float16[1,256]"]}
  - {name: pack, type: Pack, attrs: {axis: 0, N: 3}, inputs: [relu_0:0, relu_1:0, relu_2:0],
     outputs: ["float16[3,1,256]"]}
  - {name: identity, type: Identity, inputs: [pack:0], outputs: ["float16[3,1,256]"]}
  - {name: out, type: NetOutput, inputs: [identity:0]}
"""


def test_layout_contract_of_the_pack_st_spec_5_4() -> None:
    g, p = _plan(PACK_ST)
    pack = g.node("pack")
    assert pack is not None and pack.op.attrs.get("_no_task") is True
    t = p.tensors  # type: ignore[attr-defined]
    offsets = [t[f"relu_{i}:0"].offset for i in range(3)]
    assert t["pack:0"].offset == offsets[0]  # (1) output at input 0
    assert [offsets[i] - offsets[i - 1] for i in (1, 2)] == [512, 512]  # (3) raw size of the producer before


def test_padded_continuous_input_gets_512_aligned_back_to_back_blocks() -> None:
    _, p = _plan(
        """
nodes:
  - {name: x, type: Data, outputs: ["float16[7,3]"]}
  - {name: a, type: ReLU, inputs: [x:0], outputs: ["float16[7,3]"]}
  - {name: b, type: ReLU, inputs: [x:0], outputs: ["float16[300]"]}
  - {name: c, type: ReLU, inputs: [x:0], outputs: ["float[5]"]}
  - {name: fused, type: HcomAllReduce, attrs: {continuous_input: true}, inputs: [a:0, b:0, c:0],
     outputs: ["float16[7,3]", "float16[300]", "float[5]"]}
  - {name: out, type: NetOutput, inputs: [fused:0, fused:1, fused:2]}
""",
        opt=False,
    )
    t = p.tensors  # type: ignore[attr-defined]
    a, b, c = t["a:0"], t["b:0"], t["c:0"]
    assert a.offset % 512 == 0
    assert b.offset == a.offset + 512  # 42 B raw -> 64 + 32 = 96 B -> one 512 B block
    assert c.offset == b.offset + 1024  # 600 B -> 608 + 32 = 640 B -> two blocks


def test_zero_copy_split_feeding_compute_feeding_zero_copy_concat() -> None:
    g = load_graph(example_path("split_relu_concat.yaml"))
    optimize(g)
    p = assign_memory(g)
    t = p.tensors
    assert [t[f"split:{k}"].offset - t["input:0"].offset for k in range(3)] == [0, 2048, 4096]
    assert [t[f"relu_{k}:0"].offset - t["relu_0:0"].offset for k in range(3)] == [0, 2048, 4096]
    assert t["concat:0"].offset == t["relu_0:0"].offset
    assert verify_plan(g, p) == []


CASCADE = """
# seed §4.4.1: a,b,c -> d,e,f -> h (no-padding); g,h,i -> j (no-padding). g's block will hold d/e/f's data,
# so g must not reuse a/b/c's memory: its life begins with d/e/f.
nodes:
  - {name: x, type: Data, outputs: ["float16[16,16]"]}
  - {name: a, type: ReLU, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: b, type: ReLU, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: c, type: ReLU, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: d, type: ReLU, inputs: [a:0], outputs: ["float16[16,16]"]}
  - {name: e, type: ReLU, inputs: [b:0], outputs: ["float16[16,16]"]}
  - {name: f, type: ReLU, inputs: [c:0], outputs: ["float16[16,16]"]}
  - {name: h, type: PhonyConcat, attrs: {_no_task: true, _no_padding_continuous_input: true,
     _output_reuse_input: true, _reuse_input_on_dim_index: 0}, inputs: [d:0, e:0, f:0], outputs: ["float16[48,16]"]}
  - {name: g, type: ReLU, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: i, type: ReLU, inputs: [x:0], outputs: ["float16[16,16]"]}
  - {name: j, type: PhonyConcat, attrs: {_no_task: true, _no_padding_continuous_input: true,
     _output_reuse_input: true, _reuse_input_on_dim_index: 0}, inputs: [g:0, h:0, i:0], outputs: ["float16[80,16]"]}
  - {name: out, type: NetOutput, inputs: [j:0]}
"""


def test_cascade_life_time_rule_of_the_seed() -> None:
    _, p = _plan(CASCADE, opt=False)
    t = p.tensors  # type: ignore[attr-defined]
    sched = p.schedule  # type: ignore[attr-defined]
    assert t["g:0"].unit == t["d:0"].unit == t["h:0"].unit == t["j:0"].unit  # one block for the cascade
    g_off = t["g:0"].offset
    assert [t[n].offset - g_off for n in ("d:0", "e:0", "f:0", "h:0", "i:0", "j:0")] == [512, 1024, 1536, 512, 2048, 0]
    step = {n.name: s for s, n in enumerate(sched.nodes)}
    assert t["g:0"].first <= min(step["d"], step["e"], step["f"])
    for early in ("a:0", "b:0", "c:0"):  # alive when d/e/f are produced: g may not take their bytes
        lo, hi = t[early].offset, t[early].offset + t[early].size
        assert hi <= g_off or lo >= g_off + t["g:0"].size


def _random_graph(data: st.DataObject) -> ComputeGraph:
    g = ComputeGraph("random")
    n_streams = data.draw(st.integers(1, 3))
    x = g.add_node(OpDesc("x", "Data", output_descs=[TensorDesc((64, 16), "float16", "ND", (64, 16), "ND")]))
    pool = [(x, 0, 64)]  # (node, output, rows) of [rows, 16] fp16 tensors
    for i in range(data.draw(st.integers(3, 18))):
        kind = data.draw(st.sampled_from(["relu", "relu", "concat", "split", "reshape", "ref"]))
        stream = data.draw(st.integers(0, n_streams - 1))
        if kind == "concat":
            picks = data.draw(st.lists(st.sampled_from(pool), min_size=2, max_size=3))
            rows = sum(r for _, _, r in picks)
            n = g.add_node(
                OpDesc(
                    f"n{i}",
                    "ConcatD",
                    {"concat_dim": 0},
                    [TensorDesc((r, 16), "float16", "ND", (r, 16), "ND") for _, _, r in picks],
                    [TensorDesc((rows, 16), "float16", "ND", (rows, 16), "ND")],
                    stream_id=stream,
                )
            )
            for k, (src, o, _) in enumerate(picks):
                g.add_data_edge(src, o, n, k)
            pool.append((n, 0, rows))
            continue
        src, o, rows = data.draw(st.sampled_from(pool))
        if kind == "split" and rows % 2 == 0 and rows >= 2:
            half = rows // 2
            desc = [TensorDesc((half, 16), "float16", "ND", (half, 16), "ND") for _ in range(2)]
            n = g.add_node(
                OpDesc(
                    f"n{i}",
                    "SplitD",
                    {"split_dim": 0, "num_split": 2},
                    [TensorDesc((rows, 16), "float16", "ND", (rows, 16), "ND")],
                    desc,
                    stream_id=stream,
                )
            )
            g.add_data_edge(src, o, n, 0)
            pool += [(n, 0, half), (n, 1, half)]
            continue
        op_type = {"reshape": "Reshape", "ref": "Assign"}.get(kind, "ReLU")
        attrs = {"reference": True} if kind == "ref" else {}
        d = TensorDesc((rows, 16), "float16", "ND", (rows, 16), "ND")
        n = g.add_node(
            OpDesc(
                f"n{i}",
                op_type,
                attrs,
                [d.copy()],
                [d.copy()],
                input_names=["x"],
                output_names=["x" if kind == "ref" else "y"],
                stream_id=stream,
            )
        )
        g.add_data_edge(src, o, n, 0)
        pool.append((n, 0, rows))
    outs = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    net = g.add_node(OpDesc("out", "NetOutput", input_descs=[TensorDesc((r, 16), "float16") for _, _, r in outs]))
    for k, (src, o, _) in enumerate(outs):
        g.add_data_edge(src, o, net, k)
    return g


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_every_plan_of_random_graphs_verifies(data: st.DataObject) -> None:
    g = _random_graph(data)
    optimize(g)
    plan = assign_memory(g)
    assert verify_plan(g, plan) == []
    # corrupting the plan is caught: put tensor b on tensor a's bytes while a still has a reader to come
    assert plan.schedule is not None
    step = {n.name: s for s, n in enumerate(plan.schedule.nodes)}
    span = {}
    for n in plan.schedule.nodes:
        for o in n.out_anchors:
            readers = [step[c.node.name] for c in o.consumers]
            span[f"{n.name}:{o.index}"] = (step[n.name], max(readers, default=step[n.name]))
    live = [t for t in plan.tensors.values() if t.region == "feature_map"]
    for a in live:
        for b in live:
            if a.unit != b.unit and span[a.anchor][0] < span[b.anchor][0] < span[a.anchor][1]:
                plan.tensors[b.anchor] = dataclasses.replace(b, offset=a.offset)
                assert any(v.kind in ("overlap", "layout") for v in verify_plan(g, plan))
                return


def test_corrupted_zero_copy_input_is_rejected_naming_both_tensors() -> None:
    g = load_graph(example_path("split_relu_concat.yaml"))
    optimize(g)
    plan = assign_memory(g)
    t = plan.tensors["relu_2:0"]
    plan.tensors["relu_2:0"] = dataclasses.replace(t, offset=t.offset + 512)
    layout = [v for v in verify_plan(g, plan) if v.kind == "layout"]
    assert len(layout) == 1
    assert set(layout[0].tensors) == {"relu_2:0", "relu_0:0"}
    assert "relu_0:0 + 4096" in layout[0].message


def test_memory_report_counts_what_the_no_task_passes_saved() -> None:
    r = plan_memory(load_graph(example_path("split_relu_concat.yaml")))
    assert r.no_task_nodes == ["split", "concat"]
    assert r.copy_bytes_saved == 3 * 2048 + 3 * 2048
    assert r.bytes_saved > 0 and r.violations == []
