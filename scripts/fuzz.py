#!/usr/bin/env python3
"""The long fuzzing run: N inputs per entry point through the harness of tests/fuzz, each in a supervised worker
process with a per-input timeout and an address-space limit, and a table of entry points × inputs × outcomes.

    python scripts/fuzz.py --count 5000 --seed 1 --timeout 30 --memory 2G [--table docs-table.md]
    python scripts/fuzz.py --minimise FINDING.bin --entry rules      # shrink a finding, keeping its outcome

Outcomes: `error` (a clean error, exit 1/2), `accepted` (exit 0), `crash` (exit 3 or an exception), `over-limit`
(MemoryError under the --memory limit), `hang` (no answer within --timeout: the worker is killed and replaced).
Every crash, over-limit and hang is written to --findings (the input and its one-line outcome), to be minimised
into tests/corpus/hostile/. Bytes of the inputs are reproducible from --seed; generated (hypothesis) inputs are not.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "fuzz"))

import fuzz_harness as h  # noqa: E402

OUTCOMES = ("error", "accepted", "crash", "over-limit", "hang")
GENERATED = {"graph-gen": "graph-json", "rules-gen": "rules", "memplan-gen": "memplan"}


def _worker(conn: Connection, memory: int) -> None:
    """Run inputs sent on `conn` (entry, bytes) and answer (outcome, code, headline, seconds, max RSS KiB)."""
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    folder = Path(tempfile.mkdtemp(prefix="rulepass-fuzz-"))
    os.chdir(folder)
    while True:
        try:
            entry, data = conn.recv()
        except EOFError:
            return
        start = time.perf_counter()
        try:
            if entry == "argv":
                r = h.run_argv(data.decode("utf-8", "surrogateescape").split("\0"))
            else:
                r = h.run_entry(entry, data, folder)
        except MemoryError:
            r = h.Result("over-limit", -1, "MemoryError")
        except BaseException as exc:  # reported, the worker lives on
            r = h.Result("crash", -1, f"{type(exc).__name__}: {exc}"[:300])
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        conn.send((r.outcome, r.code, r.headline[:300], time.perf_counter() - start, rss))


class Supervisor:
    """One worker process at a time; a worker that does not answer in time is killed and replaced."""

    def __init__(self, timeout: float, memory: int) -> None:
        self.timeout, self.memory = timeout, memory
        self.ctx = mp.get_context("fork")
        self.proc: mp.process.BaseProcess | None = None
        self.conn: Connection | None = None

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, self.memory), daemon=True)
        self.proc.start()
        self.conn = parent

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
        self.proc = self.conn = None

    def run(self, entry: str, data: bytes) -> tuple[str, int, str, float, int]:
        if self.proc is None:
            self._start()
        assert self.conn is not None
        self.conn.send((entry, data))
        if not self.conn.poll(self.timeout):
            self.stop()
            return ("hang", -1, f"no answer within {self.timeout} s", self.timeout, 0)
        try:
            return self.conn.recv()  # type: ignore[no-any-return]
        except EOFError:  # the worker died: killed by the kernel, a segfault
            self.stop()
            return ("crash", -1, "the worker process died", 0.0, 0)


def _inputs(entry: str, seed: int, count: int) -> Iterator[bytes]:
    if entry == "argv":
        for argv in h.argv_for(seed, count, [str(REPO / "examples" / "split_relu_concat.yaml")]):
            yield "\0".join(argv).encode("utf-8", "surrogateescape")
    elif entry in GENERATED:
        from hypothesis.errors import NonInteractiveExampleWarning

        strategy = {
            "graph-gen": h.graph_strategy(),
            "rules-gen": h.expression_strategy().map(h.rule_text),
            "memplan-gen": h.memplan_strategy(),
        }[entry]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NonInteractiveExampleWarning)
            for _ in range(count):
                yield strategy.example()
    else:
        yield from h.inputs_for(entry, seed, count)


def _table(rows: list[str]) -> str:
    head = "| entry point | inputs | " + " | ".join(OUTCOMES) + " | slowest input (s) | peak RSS (MiB) |"
    return "\n".join([head, "| --- " * (len(OUTCOMES) + 4) + "|", *rows]) + "\n"


def fuzz(
    entries: list[str], count: int, seed: int, timeout: float, memory: int, findings: Path, table: Path | None
) -> str:
    """Run every entry point and return the Markdown table of outcomes (written to `table` after each entry)."""
    sup = Supervisor(timeout, memory)
    rows = []
    try:
        for entry in entries:
            tally: Counter[str] = Counter()
            slowest, rss = 0.0, 0
            for k, data in enumerate(_inputs(entry, seed, count)):
                outcome, code, headline, seconds, peak = sup.run(GENERATED.get(entry, entry), data)
                tally[outcome] += 1
                slowest, rss = max(slowest, seconds), max(rss, peak)
                if outcome in ("crash", "over-limit", "hang"):
                    findings.mkdir(parents=True, exist_ok=True)
                    stem = findings / f"{entry}-{seed}-{k}"
                    stem.with_suffix(".bin").write_bytes(data)
                    stem.with_suffix(".txt").write_text(f"{outcome} (exit {code}): {headline}\n")
                    print(f"{entry} #{k}: {outcome}: {headline}", file=sys.stderr)
            cells = " | ".join(str(tally[o]) for o in OUTCOMES)
            rows.append(f"| {entry} | {sum(tally.values())} | {cells} | {slowest:.1f} | {rss // 1024} |")
            print(rows[-1], file=sys.stderr)
            if table is not None:
                table.write_text(_table(rows))
    finally:
        sup.stop()
    return _table(rows)


def minimise(path: Path, entry: str, timeout: float) -> bytes:
    """Delete ever smaller chunks of the input while it keeps its outcome and headline's error code."""
    sup = Supervisor(timeout, 4 << 30)
    data = path.read_bytes()
    want = sup.run(entry, data)[:1]
    chunk = max(len(data) // 2, 1)
    try:
        while chunk >= 1:
            i, shrunk = 0, False
            while i < len(data):
                trial = data[:i] + data[i + chunk :]
                if sup.run(entry, trial)[:1] == want:
                    data, shrunk = trial, True
                else:
                    i += chunk
            if not shrunk:
                chunk //= 2
    finally:
        sup.stop()
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000, help="inputs per entry point")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per input before it counts as a hang")
    ap.add_argument("--memory", default="2G", help="address-space limit of the worker (e.g. 2G)")
    ap.add_argument("--entries", default=",".join([*h.ENTRY_POINTS, *GENERATED, "argv"]))
    ap.add_argument("--findings", type=Path, default=Path("fuzz-findings"))
    ap.add_argument("--table", type=Path, help="also write the table here")
    ap.add_argument("--minimise", type=Path, metavar="FILE")
    ap.add_argument("--entry", help="the entry point of --minimise")
    args = ap.parse_args()
    from rulepass.base.limits import parse_byte_size

    if args.minimise:
        sys.stdout.buffer.write(minimise(args.minimise, args.entry, args.timeout))
        return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)
    memory = parse_byte_size(args.memory)
    print(fuzz(args.entries.split(","), args.count, args.seed, args.timeout, memory, args.findings, args.table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
