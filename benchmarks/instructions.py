"""Engine overhead in machine instructions: the Concat rule run by the engine versus the hand-written pass, each
counted by valgrind's callgrind inside the runs only, so the ratio is free of the machine's load.

Table 1 times both contenders in CPU seconds; on this shared 2-core machine a time ratio moves by up to ±20%
from process to process, more than the gap left to close. Instruction counts follow bytecodes executed,
weighted by what each costs the interpreter; they do not count cache misses or branch mispredictions, so they
are a second figure beside the times, not a replacement for them.

Each case runs in two processes under callgrind with the same setup (rules, graphs, one warm-up run of both
contenders, `K` fresh copies), one running the engine's pass manager on the copies, the other the hand-written
pass's. The runs are made inside one `functools.reduce` call, and callgrind counts only while that C function
runs (`--collect-atstart=no --toggle-collect=functools_reduce`; nothing on either side calls `reduce`), so the
setup is not counted at all: two runs of the same code agree to about 0.02%, on the light models as on the
synthetic graphs. (The first version subtracted a third process's setup, whose own count varies between
processes by more than a light model's runs: DenseNet-121 came out at 1.18 and at 0.88.) Needs `valgrind`.

    python benchmarks/instructions.py [--copies K] [CASE ...]
    python benchmarks/instructions.py --scale WORKLOAD:SIZE [WORKLOAD:SIZE ...] [--cache-sim]

A CASE is `fixtures`, a synthetic workload at 10k nodes (`llm`, `split`, `cnn`) or a light model with its
formats (`squeezenet:ascend`, `densenet121:keep`).

With `--scale`, the scale section's pipeline instead (table 2: load the graph file, `compile_graph`, write the
model file) on a synthetic graph of that size, counted per stage: the worker calls `os.getppid()` at every stage's
start and callgrind dumps its counters there (`--dump-before=os_getppid`). Instructions per node show whether the
code's work, including what C does inside one builtin call (a sort, `json.loads`), which the *work* table's call
counts cannot see, grows with the graph; with `--cache-sim`, callgrind also simulates the caches (first level
and last level, sized as this machine's) and counts the last-level misses per node, the memory traffic that a
larger heap adds and instructions do not show. The simulated caches are callgrind's model, two levels, no
prefetcher and no TLB: a count that holds still from run to run, not the machine's own. About 50 times slower
than the compile (100 with `--cache-sim`).
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DEFAULT_CASES = ("fixtures", "split", "llm", "cnn", "squeezenet:ascend", "densenet121:keep")
COPIES = 3  # runs counted per case (the count is exact: a few runs average the copies' differences)


def _graphs(case: str) -> list[Any]:
    import synthetic
    from sections.common import light_models, model_name  # the table-1 harness: its fixtures and models
    from sections.engine import fixture_graphs

    from rulepass.api import load_graph

    if case == "fixtures":
        return fixture_graphs()
    if case in synthetic.WORKLOADS:
        return [synthetic.generate(case, 10_000)]
    model, _, fmt = case.partition(":")
    paths = [p for p in light_models() if model_name(p) == model]
    if not paths or fmt not in ("keep", "ascend"):
        raise SystemExit(f"error: unknown case {case!r}; expected fixtures, llm, split, cnn or MODEL:keep|ascend")
    return [load_graph(paths[0], onnx_formats=fmt)]


def worker(mode: str, case: str, copies: int) -> None:
    """The measured process: the setup, then `copies` runs of `mode` (engine or hand) inside one `reduce`."""
    if mode not in ("engine", "hand"):
        raise SystemExit(f"error: unknown mode {mode!r}; expected engine or hand")
    import handwritten_concat as hand
    from rulepass.compiler.passes import build_pass_manager
    from sections.common import CONCAT, warm

    from rulepass.api import load_rules

    rules = load_rules()
    others = [p.name for p in build_pass_manager(rules).passes if p.kind != "placeholder" and p.name != CONCAT]
    pm = build_pass_manager(rules, disabled=others)
    hand_pm = hand.hosted(pm)
    graphs = _graphs(case)

    def engine(gs: list[Any]) -> list[Any]:
        return [d for g in gs for r in pm.run(g, explain=False) for d in r.decisions if d.rule == CONCAT]

    def handwritten(gs: list[Any]) -> list[Any]:
        return [d for g in gs for r in hand_pm.run(g, explain=False) for d in r.decisions if d.rule == CONCAT]

    first = engine([warm(g.copy()) for g in graphs])
    if [hand.decision_key(d) for d in first] != [
        hand.decision_key(d) for d in handwritten([warm(g.copy()) for g in graphs])
    ]:
        raise SystemExit(f"error: the engine and the hand-written pass disagree on {case}")
    fn = engine if mode == "engine" else handwritten
    batches = [[warm(g.copy()) for g in graphs] for _ in range(copies)]
    gc.collect()
    gc.disable()
    functools.reduce(lambda _, batch: fn(batch) and None, batches, None)  # what callgrind counts


def count(mode: str, case: str, copies: int) -> int:
    """Instructions one worker process executes inside its runs (callgrind's `Collected`)."""
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        "--toggle-collect=functools_reduce",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        mode,
        case,
        str(copies),
    ]
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"error: callgrind failed on {case} ({mode}):\n{done.stderr[-2000:]}")
    if int(found.group(1)) == 0:  # the interpreter's symbols are not visible to valgrind
        raise SystemExit(f"error: callgrind counted nothing inside functools_reduce on {case} ({mode})")
    return int(found.group(1))


# callgrind's simulated caches for --cache-sim: this machine's (AMD EPYC: L1d 32 KiB 8-way, L3 32 MiB 16-way)
CACHES = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=33554432,16,64")


def scale_worker(case: str, out: str) -> None:
    """The measured process of `--scale`: the graph generated and saved, the rules loaded and a small graph
    compiled (as the scale section's worker does), then load, compile and write inside one `reduce`, with a call
    to `os.getppid` (callgrind's dump point) at the start of every stage; the stage names go to `out`."""
    import synthetic
    from rulepass.compiler.graph_file import save_graph

    from rulepass.api import compile_graph, load_graph, load_rules

    workload, size = _scale_case(case)
    folder = Path(out).parent
    gpath, mpath = str(folder / "graph.json"), str(folder / "model.json")
    save_graph(synthetic.generate(workload, size), gpath)
    rules = load_rules()
    compile_graph(synthetic.generate("split", 200), rules)  # warm-up: parsers, catalogue, builders
    assert all(r.fast is not None for r in rules.rules)  # every rule's code generated (on first use) before the stages
    gc.collect()
    stages: list[str] = []

    def stage(name: str) -> None:
        stages.append(name)
        os.getppid()  # callgrind dumps the counts of the stage before

    def pipeline(_: None, __: None) -> None:
        stage("load")
        graph = load_graph(gpath)
        stage("copy")  # compile_graph copies the graph for the baseline before its first stage
        result = compile_graph(graph, rules, progress=stage)
        stage("write")
        result.write_model(mpath)
        stage("end")
        stages.append(str(len(graph.all_nodes())))

    functools.reduce(pipeline, [None], None)  # what callgrind counts
    Path(out).write_text("\n".join(stages), encoding="utf-8")


def _scale_case(case: str) -> tuple[str, int]:
    import synthetic

    workload, _, size = case.partition(":")
    if workload not in synthetic.WORKLOADS or not size.isdigit() or int(size) < 100:
        raise SystemExit(f"error: unknown scale case {case!r}; expected WORKLOAD:SIZE, e.g. split:10000")
    return workload, int(size)


def count_stages(case: str, cache_sim: bool) -> tuple[int, dict[str, dict[str, int]]]:
    """(nodes, {stage: {event: count}}) for one `--scale` case: callgrind's dumps, one a stage."""
    with tempfile.TemporaryDirectory(prefix="rulepass-instr-") as tmp:
        names = os.path.join(tmp, "stages.txt")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            "--dump-before=os_getppid",
            f"--callgrind-out-file={tmp}/cg.out",
            *((["--cache-sim=yes", *CACHES]) if cache_sim else []),
            sys.executable,
            str(Path(__file__).resolve()),
            "--scale-worker",
            case,
            names,
        ]
        done = subprocess.run(
            cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0"), check=False
        )
        if done.returncode != 0 or not os.path.exists(names):
            raise SystemExit(f"error: callgrind failed on {case}:\n{done.stderr[-2000:]}")
        *stages, end, nodes = Path(names).read_text(encoding="utf-8").split("\n")
        # dump k (1-based) holds what ran before the k-th getppid call: dump 1 the moments before "load",
        # dump k + 1 the k-th stage
        dumps = sorted(Path(tmp).glob("cg.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
        counts = [_events(p) for p in dumps]
        if len(counts) < len(stages) + 1 or end != "end":
            raise SystemExit(f"error: callgrind dumped {len(counts)} times for {len(stages)} stages on {case}")
        return int(nodes), {s: counts[k + 1] for k, s in enumerate(stages)}


def _events(path: Path) -> dict[str, int]:
    """A callgrind dump's totals by event (Ir, and with the cache simulation D1mr, DLmr, ...)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    names = re.search(r"^events:\s*(.+)$", text, re.M)
    total = re.search(r"^(?:summary|totals):\s*(.+)$", text, re.M)
    if names is None or total is None:
        raise SystemExit(f"error: no totals in callgrind's dump {path.name}")
    return dict(zip(names.group(1).split(), (int(x) for x in total.group(1).split()), strict=False))


def scale_main(cases: list[str], cache_sim: bool) -> int:
    """Print, for every `--scale` case, instructions (and last-level misses) per node by stage, and the growth
    of each against the first case of the same workload."""
    for case in cases:  # an unknown case is one error before any count starts
        _scale_case(case)
    first: dict[str, tuple[int, dict[str, dict[str, int]]]] = {}
    for case in cases:
        nodes, stages = count_stages(case, cache_sim)
        workload = _scale_case(case)[0]
        base = first.setdefault(workload, (nodes, stages))
        print(f"{case}: {nodes} nodes" + ("" if base[1] is stages else f", growth against {base[0]} nodes"))
        for event in ("Ir", "DLmr", "DLmw") if cache_sim else ("Ir",):
            line = []
            for s in [*stages, "total"]:
                per, was = _per_node(stages, s, event, nodes), _per_node(base[1], s, event, base[0])
                grown = "" if base[1] is stages else f" ({per / was:.3f})" if was else " (—)"
                line.append(f"{s} {per:,.{0 if event == 'Ir' else 2}f}{grown}")
            print(f"  {event} per node: " + "; ".join(line), flush=True)
    return 0


def _per_node(stages: dict[str, dict[str, int]], stage: str, event: str, nodes: int) -> float:
    values = stages.values() if stage == "total" else [stages[stage]]
    return sum(v.get(event, 0) for v in values) / nodes


def main(argv: list[str] | None = None) -> int:
    """Print instructions per run and the ratio engine / hand-written pass for each case."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help=f"default: {' '.join(DEFAULT_CASES)} (none with --scale)")
    ap.add_argument("--copies", type=int, default=COPIES, help=f"runs counted per case (default {COPIES})")
    ap.add_argument("--scale", action="store_true", help="the cases are WORKLOAD:SIZE: the whole pipeline by stage")
    ap.add_argument("--cache-sim", action="store_true", help="with --scale: also simulate the caches")
    ap.add_argument("--worker", nargs=3, metavar=("MODE", "CASE", "K"), help=argparse.SUPPRESS)
    ap.add_argument("--scale-worker", nargs=2, metavar=("CASE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        mode, case, k = args.worker
        worker(mode, case, int(k))
        return 0
    if args.scale_worker:
        scale_worker(*args.scale_worker)
        return 0
    if args.cache_sim and not args.scale:
        print("error: --cache-sim goes with --scale", file=sys.stderr)
        return 2
    if args.scale:
        if not args.cases:
            print("error: --scale needs WORKLOAD:SIZE cases, e.g. split:10000 split:100000", file=sys.stderr)
            return 2
        if shutil.which("valgrind") is None:
            print("error: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
            return 2
        return scale_main(args.cases, args.cache_sim)
    if args.copies < 1:
        print(f"error: --copies must be a positive count, not {args.copies}", file=sys.stderr)
        return 2
    cases = args.cases or list(DEFAULT_CASES)
    for case in cases:  # an unknown case is one error before any count starts
        _graphs(case)
    if shutil.which("valgrind") is None:
        print("error: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    print(f"{'case':22s} {'engine M instr/run':>19s} {'hand M instr/run':>17s} {'engine / hand':>14s}")
    for case in cases:
        e, h = (count(m, case, args.copies) / args.copies for m in ("engine", "hand"))
        print(f"{case:22s} {e / 1e6:19.3f} {h / 1e6:17.3f} {e / h:14.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
