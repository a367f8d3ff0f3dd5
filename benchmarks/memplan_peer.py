"""rulepass's offset planner next to every allocator of ``omnimalloc`` (the peer), on the same instances, in one run.

For each instance — every CSV in tests/data/memplan (or the folder RULEPASS_MEMPLAN_DATA names), plus the large
real-like traces of ``memplan_traces.py`` (a 60k-buffer and a 1M-buffer training step, and the planner inputs of
compiled 10k/100k-node synthetic graphs and of the corpus models of tests/data/models), written to a temporary
folder at benchmark time — every allocator runs in its own child process (so one that runs away is stopped at
``--limit`` CPU seconds and reported as such) and reports its arena, arena / lower bound and CPU time
(``time.process_time`` in the child: all its threads; a run under 50 ms is repeated and the mean taken).
Every placement, the peer's included, is checked by rulepass's own ``check_placement``.

The verdict per instance compares the planner with the best peer allocator (smallest valid arena; ties: less
CPU): "ahead" when its arena and its CPU time are both no larger. omnimalloc is optional (``pip install
'.[bench]'``); without it the planner runs alone and the peer columns say why.

``--growth`` instead measures the planner alone on training traces of 10k to 1M buffers and, at 100k, with a
growing share of long-lived (overlapping) buffers, with no optional work (budget 0) and with the budget.

``--budgets S...`` instead measures the planner alone at each budget on the small set of instances: CPU and wall
seconds against the budget asked (``--wall-clock``: with the budget a wall-clock deadline too, as the command line's
``--wall-clock`` runs the planner).

Usage: ``python benchmarks/memplan_peer.py [--json] [--limit S] [--budget S] [--small] [--only NAME...]
[--peers NAME...] [--growth] [--budgets S...] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rulepass.compiler.memory.planner import Buffer, check_placement, lower_bound, plan, read_csv, wall_clock_budget

sys.path.insert(0, str(Path(__file__).resolve().parent))
import memplan_traces

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("RULEPASS_MEMPLAN_DATA") or ROOT / "tests" / "data" / "memplan")
PLANNER = "rulepass"
# allocators whose search needs a package omnimalloc does not install itself
OPTIONAL_PEERS = {"minimalloc": "minimalloc", "genetic": "deap"}


def peer_names() -> tuple[list[str], str | None]:
    """omnimalloc's allocator names, or ([], why not) when it is not installed."""
    try:
        import omnimalloc
    except ImportError:
        return [], "omnimalloc is not installed (pip install 'rulepass[bench]'): the peer columns are empty"
    return sorted(omnimalloc.available_allocators()), None


def run_peer(name: str, buffers: Sequence[Buffer]) -> dict[str, int]:
    """Offsets from omnimalloc's allocator ``name`` (zero-size buffers, which it refuses, at offset 0)."""
    import omnimalloc

    allocs = tuple(omnimalloc.Allocation(k, b.size, b.first, b.last + 1) for k, b in enumerate(buffers) if b.size)
    placed = omnimalloc.allocate(allocs, name) if allocs else ()
    offsets = {b.id: 0 for b in buffers}
    for a in placed:
        offsets[buffers[a.id].id] = int(a.offset)
    return offsets


#: A run shorter than this many CPU seconds is repeated, in batches, until they add up to it (the VM's process clock
#: ticks too coarsely to time one sub-millisecond run), and the mean is reported.
MIN_TIMED_S = 0.05

#: Whether the budget is a wall-clock deadline too, as with the command line's ``--wall-clock`` (``--wall-clock``).
WALL_CLOCK = False


def _runner(name: str, buffers: Sequence[Buffer], budget: float | None) -> Callable[[], tuple[dict[str, int], str]]:
    """One run of allocator ``name`` on ``buffers``: (offsets, strategy)."""
    if name != PLANNER:
        return lambda: (run_peer(name, buffers), name)

    def run() -> tuple[dict[str, int], str]:
        p = plan(buffers) if budget is None else plan(buffers, budget_s=budget)
        return p.offsets, p.strategy

    return run


def _timed(run: Callable[[], tuple[dict[str, int], str]]) -> tuple[dict[str, int], str, float, float]:
    """(offsets, strategy, CPU seconds, wall seconds) of ``run``: the mean over batches of 1, 2, 4, ... runs until
    :data:`MIN_TIMED_S` of CPU (the clocks are read between batches only, so their cost is not the allocator's)."""
    runs, batch = 0, 1
    t0, w0 = time.process_time(), time.perf_counter()
    while True:
        for _ in range(batch):
            offsets, strategy = run()
        runs += batch
        cpu = time.process_time() - t0
        if cpu >= MIN_TIMED_S:
            return offsets, strategy, cpu / runs, (time.perf_counter() - w0) / runs
        batch *= 2


def _child(conn: Any, name: str, buffers: Sequence[Buffer], budget: float | None, limit: float) -> None:
    """Run one allocator within ``limit`` CPU seconds; send back (offsets, cpu seconds, strategy) or an error."""
    resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(limit), math.ceil(limit) + 5))  # SIGXCPU ends a runaway
    try:
        with wall_clock_budget() if WALL_CLOCK and name == PLANNER else contextlib.nullcontext():
            offsets, strategy, cpu, wall = _timed(_runner(name, buffers, budget))
        conn.send(("ok", offsets, cpu, strategy, wall))
    except BaseException as exc:  # reported in the table, not raised: one allocator's failure is a result
        conn.send(("error", f"{type(exc).__name__}: {exc}".splitlines()[0][:120], 0.0, name, 0.0))
    finally:
        conn.close()


def measure(name: str, buffers: Sequence[Buffer], limit: float, budget: float | None) -> dict[str, Any]:
    """One allocator on one instance: arena, CPU seconds, validity (checked here, by rulepass's checker)."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, name, buffers, budget, limit))
    proc.start()
    send.close()
    row: dict[str, Any] = {"allocator": name}
    print(f"memplan_peer:   {name}...", file=sys.stderr, flush=True)
    try:
        status, offsets, cpu, strategy, wall = recv.recv()  # the child's CPU limit bounds the wait
    except EOFError:
        proc.join()
        row.update(status=f"stopped at {limit:.0f} s of CPU", arena=None, cpu_s=None, valid=None)
        return row
    proc.join()
    if status != "ok":
        row.update(status=offsets, arena=None, cpu_s=None, valid=None)
        return row
    problems = check_placement(buffers, offsets)
    arena = max((offsets[b.id] + b.size for b in buffers), default=0)
    row.update(status="ok", arena=arena, cpu_s=cpu, wall_s=wall, valid=not problems, strategy=strategy)
    return row


def instance_rows(
    label: str, buffers: Sequence[Buffer], peers: list[str], limit: float, budget: float | None
) -> dict[str, Any]:
    """Every allocator on one instance, with the verdict against the best valid peer."""
    lb = lower_bound(buffers)
    runs = [measure(PLANNER, buffers, limit, budget)] + [measure(p, buffers, limit, budget) for p in peers]
    for r in runs:
        r["ratio"] = r["arena"] / lb if r["arena"] is not None and lb else (1.0 if r["arena"] is not None else None)
    valid_peers = [r for r in runs[1:] if r["valid"]]
    best = min(valid_peers, key=lambda r: (r["arena"], r["cpu_s"]), default=None)
    mine = runs[0]
    verdict = "no peer"
    if best is not None and mine["valid"]:
        smaller = mine["arena"] <= best["arena"]
        faster = mine["cpu_s"] <= best["cpu_s"]
        verdict = "ahead" if smaller and faster else ("smaller, slower" if smaller else "BEHIND")
    elif mine["valid"] is None:
        verdict = "planner " + mine["status"]
    elif not mine["valid"]:
        verdict = "INVALID"
    return {"instance": label, "buffers": len(buffers), "lower_bound": lb, "runs": runs,
            "best_peer": best["allocator"] if best else None, "verdict": verdict}  # fmt: skip


def instances(small: bool, only: list[str], workdir: Path) -> list[tuple[str, Callable[[], list[Buffer]]]]:
    """(label, loader) of every instance: the shared CSVs, then the generated large traces."""
    out: list[tuple[str, Callable[[], list[Buffer]]]] = [
        (p.name, lambda p=p: read_csv(p)) for p in sorted(DATA.glob("*.csv"))
    ]
    sizes = [60_000] if small else [60_000, 1_000_000]
    for n in sizes:
        path = workdir / f"training_{n}.csv"
        out.append((path.stem, lambda n=n, path=path: _cached(path, memplan_traces.training, n)))
    nodes = [10_000] if small else [10_000, 100_000]
    for workload in ("llm", "split", "cnn"):
        for k in nodes:
            path = workdir / f"compiled_{workload}_{k}.csv"
            out.append((path.stem, lambda w=workload, k=k, path=path: _cached(path, memplan_traces.compiled, w, k)))
    for name in memplan_traces.corpus_models():
        path = workdir / f"corpus_{name}.csv"
        out.append((path.stem, lambda name=name, path=path: _cached(path, memplan_traces.corpus, name)))
    return [(label, load) for label, load in out if not only or any(o in label for o in only)]


def _cached(path: Path, make: Callable[..., list[Buffer]], *args: Any) -> list[Buffer]:
    """A generated trace, written as CSV once and read back (the benchmark reads what it wrote). It is made in a
    child process: a compile leaves this process's heap full of freed blocks, and the allocators' children (forked
    from it) would pay for writing into those shared pages, as a user's process reading a CSV does not."""
    if not path.exists():
        proc = mp.get_context("fork").Process(target=_write_trace, args=(path, make, args))
        proc.start()
        proc.join()
        if proc.exitcode != 0 or not path.exists():
            raise RuntimeError(f"memplan_peer: making {path.name} failed (exit code {proc.exitcode})")
    return read_csv(path)


def _write_trace(path: Path, make: Callable[..., list[Buffer]], args: tuple[Any, ...]) -> None:
    """Write ``make(*args)`` to ``path`` (atomically: a failed child leaves no half-written file)."""
    part = path.with_suffix(".part")
    memplan_traces.write_csv(make(*args), part)
    part.replace(path)


def _fmt(r: dict[str, Any]) -> str:
    if r["arena"] is None:
        return f"| {r['allocator']} | — | — | — | {r['status']} |"
    valid = "yes" if r["valid"] else "NO"
    return f"| {r['allocator']} | {r['arena']:,} | {r['ratio']:.6f} | {_ms(r['cpu_s'])} | {valid} |"


def _ms(seconds: float) -> str:
    """CPU seconds as milliseconds, to four significant digits or more (microsecond runs stay readable)."""
    ms = seconds * 1e3
    return f"{ms:,.0f}" if ms >= 1000 else f"{ms:.4g}"


def markdown(results: list[dict[str, Any]], why: str | None) -> str:
    """A summary table (planner vs best peer per instance), then every allocator per instance."""
    lines = [
        "| instance | buffers | LB | rulepass / LB | rulepass CPU ms | best peer | peer / LB | peer CPU ms | verdict |",
        "|---|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for res in results:
        mine = res["runs"][0]
        best = next((r for r in res["runs"] if r["allocator"] == res["best_peer"]), None)
        mine_s = f"{mine['ratio']:.6f} | {_ms(mine['cpu_s'])}" if mine["arena"] is not None else f"— | {mine['status']}"
        peer_s = f"{best['allocator']} | {best['ratio']:.6f} | {_ms(best['cpu_s'])}" if best else "— | — | —"
        lines.append(f"| {res['instance']} | {res['buffers']:,} | {res['lower_bound']:,} | {mine_s} | {peer_s} "
                     f"| {res['verdict']} |")  # fmt: skip
    if why:
        lines += ["", why]
    for res in results:
        lines += ["", f"{res['instance']} ({res['buffers']:,} buffers, lower bound {res['lower_bound']:,}):", "",
                  "| allocator | arena | / LB | CPU ms | valid |", "|---|---:|---:|---:|---|"]  # fmt: skip
        lines += [_fmt(r) for r in res["runs"]]
    return "\n".join(lines)


GROWTH_SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
GROWTH_KEEP = (0.0, 0.2, 0.55, 0.9)


def growth(sizes: Sequence[int], keeps: Sequence[float], budget: float | None) -> list[dict[str, Any]]:
    """The planner alone on training traces: growing n (keep 0.55), then growing overlaps (n = 100k)."""
    from rulepass.compiler.memory.planner import _count_pairs

    rows = []
    cases = [(n, 0.55) for n in sizes] + [(100_000, k) for k in keeps if k != 0.55]
    for n, keep in cases:
        buffers = memplan_traces.training(n, keep=keep)
        pairs = _count_pairs(range(len(buffers)), [b.first for b in buffers], [b.last for b in buffers])
        fast = measure(PLANNER, buffers, 3600, 0.0)
        full = measure(PLANNER, buffers, 3600, budget)
        lb = lower_bound(buffers)
        valid = fast["valid"] and full["valid"]
        rows.append({"buffers": len(buffers), "keep": keep, "pairs": pairs, "lower_bound": lb,
                     "fast_ratio": fast["arena"] / lb, "fast_cpu_s": fast["cpu_s"],
                     "ratio": full["arena"] / lb, "cpu_s": full["cpu_s"], "valid": valid})  # fmt: skip
        print(f"memplan_peer: growth {n} keep {keep} done", file=sys.stderr)
    return rows


def growth_markdown(rows: list[dict[str, Any]], budget: float | None) -> str:
    """The growth rows as a table."""
    lines = [
        f"| buffers | saved share | overlapping pairs | budget 0: / LB | CPU s | budget {budget or 'default'}: / LB "
        "| CPU s | CPU µs a buffer | valid |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['buffers']:,} | {r['keep']:.2f} | {r['pairs']:,} | {r['fast_ratio']:.5f} | {r['fast_cpu_s']:.2f} "
            f"| {r['ratio']:.5f} | {r['cpu_s']:.2f} | {r['cpu_s'] / r['buffers'] * 1e6:.0f} "
            f"| {'yes' if r['valid'] else 'NO'} |"
        )
    return "\n".join(lines)


def budget_rows(cases: list[tuple[str, Callable[[], list[Buffer]]]], budgets: Sequence[float]) -> list[dict[str, Any]]:
    """The planner's CPU and wall seconds at each budget on each instance (its own child process each)."""
    rows = []
    for label, load in cases:
        buffers = load()
        row: dict[str, Any] = {"instance": label, "buffers": len(buffers), "valid": True, "runs": []}
        for budget in budgets:
            r = measure(PLANNER, buffers, 10 * budget + 600, budget)
            wall = r["wall_s"]
            row["valid"] = row["valid"] and bool(r["valid"])
            lb = lower_bound(buffers)
            row["runs"].append({"budget": budget, "cpu_s": r["cpu_s"], "wall_s": wall, "ratio": r["arena"] / lb})
        rows.append(row)
        print(f"memplan_peer: budgets {label} done", file=sys.stderr)
    return rows


def budget_markdown(rows: list[dict[str, Any]], budgets: Sequence[float]) -> str:
    """Per instance and budget: / LB, CPU s and wall s of plan(), the worst time / budget."""
    head = " | ".join(f"{b:g} s: / LB | CPU | wall" for b in budgets)
    lines = [f"| instance | buffers | {head} |", "|---|---:|" + "---:|---:|---:|" * len(budgets)]
    for row in rows:
        cells = " | ".join(f"{r['ratio']:.4f} | {r['cpu_s']:.2f} | {r['wall_s']:.2f}" for r in row["runs"])
        lines.append(f"| {row['instance']} | {row['buffers']:,} | {cells} |")
    worst = max((r["cpu_s"] / r["budget"] for row in rows for r in row["runs"] if r["budget"]), default=0.0)
    worst_wall = max((r["wall_s"] / r["budget"] for row in rows for r in row["runs"] if r["budget"]), default=0.0)
    lines += ["", f"Largest CPU time / budget: {worst:.2f}; largest wall time / budget: {worst_wall:.2f}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run every allocator on every instance; print markdown (default) or JSON; exit 2 if a placement is invalid."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown tables")
    parser.add_argument("--limit", type=float, default=600.0, help="stop any one allocator after this many CPU seconds")
    parser.add_argument("--budget", type=float, default=None, help="the planner's budget_s (default: plan()'s)")
    parser.add_argument("--small", action="store_true", help="leave out the 1M-buffer and 100k-node instances")
    parser.add_argument("--only", nargs="*", default=[], help="only instances whose name contains one of these")
    parser.add_argument("--peers", nargs="*", default=None, help="only these omnimalloc allocators")
    parser.add_argument("--growth", action="store_true", help="only the planner's growth with n and overlaps")
    parser.add_argument("--budgets", type=float, nargs="*", help="only: the planner's time against these budgets")
    parser.add_argument("--out", type=Path, help="also append each instance's result to this JSON-lines file")
    parser.add_argument("--wall-clock", action="store_true", help="the budget as a wall-clock deadline too (CLI)")
    args = parser.parse_args(argv)
    global WALL_CLOCK
    WALL_CLOCK = args.wall_clock
    if args.budgets:
        with tempfile.TemporaryDirectory(prefix="memplan-peer-") as tmp:
            rows = budget_rows(instances(True, args.only, Path(tmp)), args.budgets)
        print(json.dumps(rows, indent=1) if args.json else budget_markdown(rows, args.budgets))
        return 0 if all(r["valid"] for r in rows) else 2
    if args.growth:
        rows = growth(GROWTH_SIZES, GROWTH_KEEP, args.budget)
        print(json.dumps(rows, indent=1) if args.json else growth_markdown(rows, args.budget))
        return 0 if all(r["valid"] for r in rows) else 2
    peers, why = peer_names()
    if args.peers is not None:
        peers = [p for p in peers if p in args.peers]
    results = []
    with tempfile.TemporaryDirectory(prefix="memplan-peer-") as tmp:
        for label, load in instances(args.small, args.only, Path(tmp)):
            results.append(instance_rows(label, load(), peers, args.limit, args.budget))
            print(f"memplan_peer: {label} done ({results[-1]['verdict']})", file=sys.stderr)
            if args.out:
                with args.out.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(results[-1]) + "\n")
    if args.json:
        print(json.dumps({"peer_note": why, "instances": results}, indent=1))
    else:
        print(markdown(results, why))
    bad = any(r["valid"] is False for res in results for r in res["runs"][:1])
    return 2 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
