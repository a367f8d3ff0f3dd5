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

A CASE is `fixtures`, a synthetic workload at 10k nodes (`llm`, `split`, `cnn`) or a light model with its
formats (`squeezenet:ascend`, `densenet121:keep`).
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DEFAULT_CASES = ("fixtures", "split", "llm", "cnn", "squeezenet:ascend", "densenet121:keep")
COPIES = 3  # runs counted per case (the count is exact: a few runs average the copies' differences)


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
    """The measured process: the setup, then `copies` runs of `mode` (engine or hand) inside one `reduce`."""
    if mode not in ("engine", "hand"):
        raise SystemExit(f"error: unknown mode {mode!r}; expected engine or hand")
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
    fn = engine if mode == "engine" else handwritten
    batches = [[bench.warm(g.copy()) for g in graphs] for _ in range(copies)]
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


def main(argv: list[str] | None = None) -> int:
    """Print instructions per run and the ratio engine / hand-written pass for each case."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", default=list(DEFAULT_CASES))
    ap.add_argument("--copies", type=int, default=COPIES, help=f"runs counted per case (default {COPIES})")
    ap.add_argument("--worker", nargs=3, metavar=("MODE", "CASE", "K"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        mode, case, k = args.worker
        worker(mode, case, int(k))
        return 0
    if args.copies < 1:
        print(f"error: --copies must be a positive count, not {args.copies}", file=sys.stderr)
        return 2
    for case in args.cases:  # an unknown case is one error before any count starts
        _graphs(case)
    if shutil.which("valgrind") is None:
        print("error: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    print(f"{'case':22s} {'engine M instr/run':>19s} {'hand M instr/run':>17s} {'engine / hand':>14s}")
    for case in args.cases:
        e, h = (count(m, case, args.copies) / args.copies for m in ("engine", "hand"))
        print(f"{case:22s} {e / 1e6:19.3f} {h / 1e6:17.3f} {e / h:14.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
