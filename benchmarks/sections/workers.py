"""What the scale and work sections run in their subprocesses (`run.py --worker ...`): generate a graph, compile
one while measuring every stage, and the machine's own reference walk. Each prints its result as a JSON line."""

from __future__ import annotations

import contextlib
import cProfile
import gc
import json
import os
import re
import resource
import time
from pathlib import Path
from typing import Any

import synthetic

from rulepass.api import compile_graph, load_graph, load_rules
from sections.common import CONCAT, MiB


class _StageMeter:
    """Wall time, CPU time, GC time and peak RSS per stage (peak reset at every stage start)."""

    def __init__(self, count_calls: bool = False) -> None:
        self.stages: dict[str, dict[str, float]] = {}
        self.current: str | None = None
        self.t_wall = self.t_cpu = 0.0
        self.gc_start = 0.0
        self.gc_acc = 0.0
        self.can_reset = self._reset_peak()
        # with count_calls, a fresh cProfile per stage counts the stage's calls (its times are not kept)
        self.count_calls = count_calls
        self.prof: cProfile.Profile | None = None
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.gc_start = time.perf_counter()
        else:
            self.gc_acc += time.perf_counter() - self.gc_start

    @staticmethod
    def _reset_peak() -> bool:
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (peak RSS) on Linux
            return True
        except OSError:
            return False

    @staticmethod
    def _status(key: str) -> float:
        with contextlib.suppress(OSError):
            m = re.search(rf"{key}:\s+(\d+) kB", Path("/proc/self/status").read_text())
            if m:
                return int(m.group(1)) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def start(self, stage: str) -> None:
        """End the current stage (if any) and start measuring `stage`."""
        self.stop()
        self.current = stage
        if self.can_reset:
            self._reset_peak()
        self.gc_acc = 0.0
        self.t_wall, self.t_cpu = time.perf_counter(), time.process_time()
        if self.count_calls:
            self.prof = cProfile.Profile()
            self.prof.enable()

    def stop(self) -> None:
        """End the current stage: record its figures and report them on stdout."""
        if self.current is None:
            return
        calls = None
        if self.prof is not None:
            self.prof.disable()
            calls = sum(e.callcount for e in self.prof.getstats())  # every Python and builtin call of the stage
            self.prof = None
        wall, cpu = time.perf_counter() - self.t_wall, time.process_time() - self.t_cpu
        peak = self._status("VmHWM")
        self.stages[self.current] = {
            "wall": wall,
            "cpu": cpu,
            "gc": self.gc_acc,
            "peak_mib": peak,
            "rss_mib": self._status("VmRSS"),
        }
        if calls is not None:
            self.stages[self.current]["calls"] = calls
        self.current = None
        print(json.dumps({"stage_done": self.stages}), flush=True)


def worker_generate(workload: str, nodes: int, out: str) -> dict[str, Any]:
    """Generate a graph and save it as JSON (one subprocess per size)."""
    from rulepass.compiler.graph_file import save_graph

    t0 = time.perf_counter()
    g = synthetic.generate(workload, nodes)
    t1 = time.perf_counter()
    save_graph(g, out)
    t2 = time.perf_counter()
    return {
        "nodes": len(g),
        "edges": g.edge_count()[0],
        "generate_s": t1 - t0,
        "save_s": t2 - t1,
        "file_mib": os.path.getsize(out) / MiB,
    }


class _RefNode:
    __slots__ = ("attrs", "name", "outs", "peers")

    def __init__(self, i: int) -> None:
        self.name = f"n{i}"
        self.attrs: dict[str, Any] = {"index": i, "shape": [1, i % 7, 16]}
        self.peers: list[_RefNode] = []
        self.outs: list[_RefNode] = []


def worker_reference(n: int) -> dict[str, Any]:
    """The machine's own scaling: CPU µs per element of trivially linear pure-Python work on a linked structure
    of `n` objects shaped like graph nodes (built, walked through peers with dict reads, copied). Any growth
    from 10k to 1M here is the memory hierarchy's (a larger heap, more cache and TLB misses), not an algorithm's.
    """
    gc.collect()
    gc.disable()
    t0 = time.process_time()
    nodes = [_RefNode(i) for i in range(n)]
    by_name = {x.name: x for x in nodes}
    for i, x in enumerate(nodes):
        for d in (1, 3, 17):
            if i >= d:
                x.peers.append(nodes[i - d])
                nodes[i - d].outs.append(x)
    t1 = time.process_time()
    total = 0
    for x in nodes:
        for p in x.peers:
            total += p.attrs["index"] + len(by_name[p.name].outs) + p.attrs["shape"][1]
    t2 = time.process_time()
    copies = [(x.name, dict(x.attrs), [p.name for p in x.peers]) for x in nodes]
    t3 = time.process_time()
    gc.enable()
    assert len(copies) == n and total >= 0
    return {
        "build": 1e6 * (t1 - t0) / n,
        "walk": 1e6 * (t2 - t1) / n,
        "copy": 1e6 * (t3 - t2) / n,
        "huge_mib": anon_huge_mib(),
    }


def worker_compile(
    graph_path: str, model_path: str, profile_path: str | None, verify: bool = True, count_calls: bool = False
) -> dict[str, Any]:
    """Load, compile and write one graph, measuring every stage (one fresh subprocess per graph); with
    `count_calls`, also the calls each stage makes (under cProfile: its times then measure the profiler too)."""
    rules = load_rules()
    compile_graph(synthetic.generate("split", 200), rules)  # warm-up: parsers, catalogue, builders
    assert all(r.fast is not None for r in rules.rules)  # every rule's code generated (on first use) before the stages
    gc.collect()
    prof = cProfile.Profile() if profile_path else None
    meter = _StageMeter(count_calls)
    rss_before = meter._status("VmRSS")
    if prof:
        prof.enable()
    meter.start("load")
    graph = load_graph(graph_path)
    meter.start("copy")  # compile_graph copies the graph for the baseline before its first stage
    result = compile_graph(graph, rules, progress=meter.start, verify=verify)
    meter.start("write")
    result.write_model(model_path)
    meter.stop()
    if prof:
        prof.disable()
        prof.dump_stats(profile_path)
    decisions = [d for d in result.optimize.decisions if d.rule == CONCAT]
    return {
        "nodes": len(graph.all_nodes()),
        "stages": meter.stages,
        "rss_before_mib": rss_before,
        "peak_reset": meter.can_reset,
        "concats": len(decisions),
        "fired": sum(1 for d in decisions if d.fired),
        "tasks": len(result.tasks.tasks),
        "streams": result.streams.stream_count,
        "feature_map": result.memory.plan.total("feature_map"),
        "model_mib": os.path.getsize(model_path) / MiB,
        "huge_mib": anon_huge_mib(),
    }


def anon_huge_mib() -> float | None:
    """The process's memory in transparent huge pages now, MiB (None where the kernel does not say)."""
    with contextlib.suppress(OSError):
        m = re.search(r"AnonHugePages:\s+(\d+) kB", Path("/proc/self/smaps_rollup").read_text())
        if m:
            return int(m.group(1)) / 1024
    return None


def worker_main(argv: list[str]) -> int:
    """`run.py --worker KIND ARGS...`: run one worker and print its result as one JSON line."""
    kind = argv[0]
    if kind == "generate":
        result = worker_generate(argv[1], int(argv[2]), argv[3])
    elif kind == "reference":
        result = worker_reference(int(argv[1]))
    elif kind == "compile":
        verify = "--no-verify" not in argv
        rest = [a for a in argv[1:] if a not in ("--no-verify", "--count-calls")]
        result = worker_compile(rest[0], rest[1], rest[2] if len(rest) > 2 else None, verify, "--count-calls" in argv)
    else:
        raise SystemExit(f"unknown worker {kind!r}")
    print(json.dumps({"result": result}), flush=True)
    return 0
