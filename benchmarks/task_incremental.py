"""Incremental and streamed task generation (issue 34): what reuse saves, and what streaming saves in memory.

* **Incremental compile.** A graph is compiled once, keeping its tasks in a cache folder (`--task-cache`) and
  writing its model; then edited, and compiled three more times: in full, incrementally from the cache folder
  (restored to the unedited graph's before every run: an incremental compile rewrites it), and incrementally
  from the first model (`--incremental-from`). Two edits: *one rule* (a mutant of the mutation campaign,
  benchmarks/mutation_campaign.py: the first, in its order, that compiles and changes the marked graph, else
  the first that compiles) and *one node* (`_block_dim` set on the node in the middle of the topological order).
  Every compile writes the model (streamed), so an incremental one pays for reading the previous tasks and
  (from the folder) for rewriting the folder. Reported: CPU seconds of the whole compile and of its task stages
  (`task cache`, reading the previous tasks, + `tasks`, which includes writing the model, + `task cache store`),
  each the least of `--repeat` runs, and incremental / full; the nodes rebuilt and reused (work counted: the
  same on any machine); the models equal byte for byte. Graphs: the synthetic `llm` and `split` workloads at 10k
  nodes, and the three largest corpus models.
* **Streaming.** A synthetic graph (default `llm`, 1M nodes) is taken through passes, streams and memory in a
  fresh process per mode; then task generation and model writing run, held (`generate_tasks`, `build_model`,
  `write_model`: every task, and the model, in memory) or streamed (`stream_model`: each task written as it is
  made). Reported: the peak RSS of that stage above the RSS at its start (Linux `VmHWM`, reset at the start),
  its seconds, and whether the two files are equal byte for byte.

    python benchmarks/task_incremental.py [--nodes 10000] [--stream-nodes 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mutation_campaign as mc
import real_models as rm
import synthetic
from rulepass.compiler.graph_file import copy_graph
from rulepass.compiler.ir import ComputeGraph
from rulepass.compiler.model import build_model, stream_model, write_model
from rulepass.compiler.task_cache import TaskReuse
from rulepass.compiler.tasks import generate_tasks
from rulepass.dsl.load import RuleSet

from rulepass.api import CompileResult, compile_graph, load_rules
from rulepass.base.diagnostics import RulepassError

HERE = Path(__file__).resolve().parent
TASK_STAGES = ("task cache", "tasks")
CORPUS = ("shufflenet_v2", "mobilenet_v3_small", "gpt2_hf")


def _marker(marks: list[tuple[str, float]]) -> Any:
    return lambda stage: marks.append((stage, time.process_time()))


def _run(g: ComputeGraph, rules: RuleSet, out: Path, reuse: dict[str, Path]) -> tuple[float, float, Any]:
    """(CPU s of the compile, CPU s of its task stages, its result). The stages' CPU time is read at each stage's
    start (the pipeline's progress callback) and at the end. A cache folder (`reuse["folder"]`) is restored from
    `reuse["pristine"]` first."""
    if "folder" in reuse:
        shutil.rmtree(reuse["folder"], ignore_errors=True)
        shutil.copytree(reuse["pristine"], reuse["folder"])
    gc.collect()
    marks: list[tuple[str, float]] = []
    t0 = time.process_time()
    task_reuse = TaskReuse(previous=reuse.get("previous"), folder=reuse.get("folder"), model_path=out)
    r = compile_graph(copy_graph(g), rules, reuse=task_reuse, progress=_marker(marks))
    end = time.process_time()
    start = next(t for stage, t in marks if stage == TASK_STAGES[0])  # the task stages come last
    return end - t0, end - start, r


def _compiles(
    g: ComputeGraph, rules: RuleSet, variants: dict[str, dict[str, Path]], work: Path, repeat: int
) -> dict[str, tuple[float, float, Any]]:
    """Per variant (name -> how it reuses), the least CPU s of the compile and of its task stages over `repeat`
    runs, and its last result; the variants' runs interleaved, so each meets the same machine."""
    best: dict[str, tuple[float, float, Any]] = {}
    for _ in range(repeat):
        for name, reuse in variants.items():
            s, t, r = _run(g, rules, work / f"{name}.json", reuse)
            old = best.get(name, (float("inf"), float("inf"), None))
            best[name] = (min(old[0], s), min(old[1], t), r)
    return best


def _rule_edit(g: ComputeGraph, base: CompileResult, work: Path, tries: int) -> tuple[str, RuleSet]:
    """The first of `tries` mutants that compiles `g` and changes its marked graph, else the first that compiles."""
    first: tuple[str, RuleSet] | None = None
    marks = base.graph.attribute_state()
    for k, m in enumerate(mc.all_mutants()[:tries]):
        d = work / f"m{k}"
        d.mkdir()
        rules = mc.load_mutant(m, d)
        try:
            r = compile_graph(copy_graph(g), rules)
        except RulepassError:
            continue
        if r.graph.attribute_state() != marks:
            return m.id, rules
        first = first or (m.id, rules)
    assert first is not None, "no mutant compiles the graph"
    return first


def _node_edit(g: ComputeGraph) -> tuple[str, ComputeGraph]:
    edited = copy_graph(g)
    order = [n for n in edited.topological_order() if n.type not in ("Data", "Const", "NetOutput")]
    node = order[len(order) // 2]
    node.op.attrs["_block_dim"] = 7
    return f"_block_dim on {node.name}", edited


def incremental_rows(graphs: list[tuple[str, ComputeGraph]], repeat: int, tries: int = 40) -> list[list[str]]:
    """One row per graph and edit: the incremental compiles against the full one."""
    rules = load_rules()
    rows = []
    for name, g in graphs:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            prev = work / "prev.json"
            base = compile_graph(copy_graph(g), rules, reuse=TaskReuse(folder=work / "pristine", model_path=prev))
            rule_id, mutant = _rule_edit(g, base, work, tries)
            node_id, edited = _node_edit(g)
            for edit, graph, rs in (("one rule", g, mutant), ("one node", edited, rules)):
                variants = {
                    "full": {},
                    "inc": {"folder": work / "cache", "pristine": work / "pristine"},
                    "from": {"previous": prev},
                }
                runs = _compiles(graph, rs, variants, work, repeat)
                (full_s, full_t, _), (inc_s, inc_t, inc), (from_s, _, _) = runs["full"], runs["inc"], runs["from"]
                full = (work / "full.json").read_bytes()
                same = full == (work / "inc.json").read_bytes() == (work / "from.json").read_bytes()
                what = rule_id if edit == "one rule" else node_id
                rows.append([
                    f"{name} ({len(g.all_nodes())})", f"{edit}: {what}", f"{inc.tasks.regenerated}",
                    f"{inc.tasks.reused}", f"{full_s:.3f}", f"{inc_s:.3f}", f"{inc_s / full_s:.2f}",
                    f"{full_t:.3f}", f"{inc_t:.3f}", f"{inc_t / full_t:.2f}", f"{from_s / full_s:.2f}",
                    "yes" if same else "**NO**",
                ])  # fmt: skip
                print(" | ".join(rows[-1]), file=sys.stderr)
    return rows


def _peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def stream_child(mode: str, workload: str, nodes: int, out: Path) -> dict[str, Any]:
    """In a fresh process: passes, streams and memory on a synthetic graph, then task generation and writing
    held or streamed, measured from a reset peak RSS (Linux `VmHWM`)."""
    from rulepass.compiler.graph_file import gc_paused
    from rulepass.compiler.memory.assign import assign_memory
    from rulepass.compiler.streams import assign_streams

    from rulepass.api import optimize

    g = synthetic.generate(workload, nodes)
    with gc_paused():  # as compile_graph runs
        optimize(g, load_rules(), explain=False)
        streams = assign_streams(g)
        plan = assign_memory(g, events=streams.event_pairs(), budget_s=0)
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (peak RSS) on Linux
        before = _peak_rss_mib()
        t0 = time.perf_counter()
        if mode == "held":
            write_model(build_model(g, plan, streams, generate_tasks(g, plan, streams)), out)
        else:
            stream_model(g, plan, streams, out)
        seconds = time.perf_counter() - t0
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    return {"nodes": len(g.all_nodes()), "mib": _peak_rss_mib() - before, "seconds": seconds, "sha": digest}


def stream_rows(workload: str, nodes: int) -> list[list[str]]:
    """Peak memory of task generation and writing, held and streamed, each in its own process."""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("held", "streamed"):
            cmd = [sys.executable, __file__, "--stream-child", mode, "--stream-workload", workload]
            cmd += ["--stream-nodes", str(nodes), "--child-out", str(Path(tmp) / f"{mode}.json")]
            done = subprocess.run(cmd, check=True, capture_output=True, text=True)
            results[mode] = json.loads(done.stdout)
    same = results["held"]["sha"] == results["streamed"]["sha"]
    rows = []
    for mode, r in results.items():
        ratio = r["mib"] / results["held"]["mib"]
        rows.append([f"{workload} {r['nodes']}", mode, f"{r['mib']:,.0f}", f"{ratio:.2f}", f"{r['seconds']:.1f}"])
        rows[-1].append("yes" if same else "**NO**")
        print(" | ".join(rows[-1]), file=sys.stderr)
    return rows


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _machine(argv: list[str]) -> str:
    """The line saying how and where the tables were measured."""
    import datetime
    import os

    from validate_bench import machine

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"Measured with `{' '.join(['python benchmarks/task_incremental.py', *argv])}` on: {machine()}; {when}; "
        f"commit {commit.stdout.strip() or 'unknown'}; load average {os.getloadavg()[0]:.2f} at start.\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Print both tables (markdown)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000, help="size of the synthetic graphs of the incremental table")
    ap.add_argument("--stream-nodes", type=int, default=1000000, help="size of the streaming table's graph")
    ap.add_argument("--stream-workload", default="llm", choices=synthetic.WORKLOADS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["incremental", "stream"])
    ap.add_argument("--stream-child", choices=["held", "streamed"], help=argparse.SUPPRESS)
    ap.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stream_child:
        print(json.dumps(stream_child(args.stream_child, args.stream_workload, args.stream_nodes, args.child_out)))
        return 0
    print(_machine(sys.argv[1:] if argv is None else argv))
    if args.only != "stream":
        graphs = [(w, synthetic.generate(w, args.nodes)) for w in ("llm", "split")]
        graphs += [(e["name"], rm.import_model(e, "keep")) for e in rm.entries(list(CORPUS))]
        head = ["graph (nodes)", "edit", "nodes rebuilt", "nodes reused", "full CPU s", "incremental CPU s",
                "ratio", "full task stages s", "incremental task stages s", "ratio",
                "ratio from the model (`--incremental-from`)", "same bytes"]  # fmt: skip
        print(_table(head, incremental_rows(graphs, args.repeat)) + "\n")
    if args.only != "incremental":
        head = ["graph", "tasks", "peak RSS MiB above start", "ratio to held", "seconds", "same bytes"]
        print(_table(head, stream_rows(args.stream_workload, args.stream_nodes)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
