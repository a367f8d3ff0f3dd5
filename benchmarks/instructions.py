"""Engine overhead in machine instructions: the Concat rule run by the engine versus the hand-written pass, each
counted by valgrind's cachegrind (`I refs`), so the ratio is free of the machine's load.

Table 1 times both contenders in CPU seconds; on a shared 2-core machine two identical runs of one case differ
by 5-10%, which is as large as the gap left to close. Instruction counts are exact up to the allocator's and
the collector's run-to-run differences (about 3% on the absolute figure, 0.3% on the ratio here), and the
interpreter's own loop is most of both (instructions follow bytecodes executed, weighted by what each costs).
They do not count cache misses or branch mispredictions, so they are a second figure beside the times, not
a replacement for them.

Resolution: the setup's own count differs from process to process by tens of millions of instructions (the
copies' allocation, the collector), so a case must run for hundreds of millions: the ratio then moves by
±2-3% between two runs. Graphs whose pass takes a few microseconds (the light models without a concat) are
below it: their figures are noise, even negative.

Each case runs in three processes under cachegrind with the same setup (rules, graphs, one warm-up run of
both contenders, `K` fresh copies): one runs nothing more, one the engine's pass manager on the copies, one
the hand-written pass's; the setup's count is subtracted from the others. Needs `valgrind` on the PATH.

    python benchmarks/instructions.py [--copies K] [CASE ...]

A CASE is `fixtures`, a synthetic workload at 10k nodes (`llm`, `split`, `cnn`) or a light model with its
formats (`squeezenet:ascend`, `densenet121:keep`).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DEFAULT_CASES = ("fixtures", "split", "llm", "cnn", "squeezenet:ascend", "densenet121:keep")
# copies per case: enough that the runs counted dwarf the setup's run-to-run difference
DEFAULT_COPIES = {"fixtures": 10, "split": 3, "llm": 3, "cnn": 3}


def _graphs(case: str) -> list[Any]:
    import run as bench  # the table-1 harness: its fixtures, models and warm-up
    import synthetic

    from rulepass.api import load_graph

    if case == "fixtures":
        return bench._fixture_graphs()
    if case in synthetic.WORKLOADS:
        return [synthetic.generate(case, 10_000)]
    model, _, fmt = case.partition(":")
    paths = [p for p in bench.light_models() if bench.model_name(p) == model]
    if not paths or fmt not in ("keep", "ascend"):
        raise SystemExit(f"error: unknown case {case!r}; expected fixtures, llm, split, cnn or MODEL:keep|ascend")
    return [load_graph(paths[0], onnx_formats=fmt)]


def worker(mode: str, case: str, copies: int) -> None:
    """The measured process: the setup, then `copies` runs of `mode` (none, engine or hand)."""
    import handwritten_concat as hand
    import run as bench
    from rulepass.compiler.passes import build_pass_manager

    from rulepass.api import load_rules

    rules = load_rules()
    others = [p.name for p in build_pass_manager(rules).passes if p.kind != "placeholder" and p.name != bench.CONCAT]
    pm = build_pass_manager(rules, disabled=others)
    hand_pm = hand.hosted(pm)
    graphs = _graphs(case)

    def engine(gs: list[Any]) -> list[Any]:
        return [d for g in gs for r in pm.run(g, explain=False) for d in r.decisions if d.rule == bench.CONCAT]

    def handwritten(gs: list[Any]) -> list[Any]:
        return [d for g in gs for r in hand_pm.run(g, explain=False) for d in r.decisions if d.rule == bench.CONCAT]

    first = engine([bench.warm(g.copy()) for g in graphs])
    if [hand.decision_key(d) for d in first] != [
        hand.decision_key(d) for d in handwritten([bench.warm(g.copy()) for g in graphs])
    ]:
        raise SystemExit(f"error: the engine and the hand-written pass disagree on {case}")
    batches = [[bench.warm(g.copy()) for g in graphs] for _ in range(copies)]
    gc.collect()
    gc.disable()
    fn = {"engine": engine, "hand": handwritten}.get(mode)
    for batch in batches:
        if fn is not None:
            fn(batch)


def count(mode: str, case: str, copies: int) -> int:
    """Instructions executed by one worker process (cachegrind's `I refs`)."""
    cmd = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        mode,
        case,
        str(copies),
    ]
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"error: cachegrind failed on {case} ({mode}):\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    """Print instructions per run and the ratio engine / hand-written pass for each case."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", default=list(DEFAULT_CASES))
    ap.add_argument("--copies", type=int, default=0, help="runs counted per case (default: by the case's size)")
    ap.add_argument("--worker", nargs=3, metavar=("MODE", "CASE", "K"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        mode, case, k = args.worker
        worker(mode, case, int(k))
        return 0
    if args.copies < 0:
        print(f"error: --copies must be a positive count (0: by the case's size), not {args.copies}", file=sys.stderr)
        return 2
    # every case loaded once here: an unknown one is one error before any count starts, and its size sets K
    nodes = {case: sum(len(g) for g in _graphs(case)) for case in args.cases}
    if shutil.which("valgrind") is None:
        print("error: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    print(f"{'case':22s} {'engine M instr/run':>19s} {'hand M instr/run':>17s} {'engine / hand':>14s}")
    for case in args.cases:
        k = args.copies or DEFAULT_COPIES.get(case, max(3, min(3000, 100_000 // max(nodes[case], 1))))
        base, eng, hnd = (count(m, case, k) for m in ("none", "engine", "hand"))
        e, h = (eng - base) / k, (hnd - base) / k
        ratio = f"{e / h:14.3f}" if e > 0 and h > 0 else f"{'below resolution':>14s}"
        print(f"{case:22s} {e / 1e6:19.3f} {h / 1e6:17.3f} {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
