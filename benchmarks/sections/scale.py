"""Section 2, scale: synthetic LLM / split-pipeline / 5HD-CNN graphs at 10k, 100k (and, opt-in, 1M) nodes, each
size generated and then compiled in a fresh subprocess (`workers`), in `--repeat` rounds (sizes up and back down):
wall and CPU time, GC time and peak RSS of every stage, means over the rounds; with `--huge-pages`, every graph
compiled once more with its heap in 2 MiB transparent huge pages. The tables are `scale_render`'s.

What it measures: `benchmarks/synthetic.py` builds three graph shapes — `llm` (tensor-parallel transformer
layers: AllGather'd Q/K/V shards concatenated on axis 0, a fused gate/up concat on axis 1 that cannot be
zero-copy, ReduceScatter / AllReduce; 32 nodes a layer), `split` (SplitD → ReLU/Sigmoid/Mul → ConcatD → Gelu
pipelines; 15–16 nodes a block) and `cnn` (Inception-style blocks in NC1HWC0 with FRACTAL_Z weights, four
branches concatenated on C; 16 nodes a block). For every size a subprocess generates the graph and saves it as
a JSON graph file; a fresh subprocess then runs the real pipeline on it: `load_graph` (*load*), `compile_graph`
(its stages: the baseline *copy* of the graph, *passes*, *streams*, *memory*, *verify*, *baseline memory* =
passes, streams and memory again without the no-task passes, *tasks*, *model*) and writing the model file
(*write*). The rule files are loaded (and a small graph compiled) before the measurement starts.
How to read it: per stage the wall time, and its peak RSS (Linux `VmHWM`, reset at the start of every stage,
so each figure is that stage's own peak). CPU time is used for the linearity ratios, because it is less
disturbed by other processes on the machine than wall time; a ratio above 1.10 marks a stage that grows faster
than the number of nodes. The graphs are generated first and then compiled in rounds (`--repeat N`, one by
default): a round takes every workload through the sizes up and back down (10k, 100k, 1M, 100k, 10k), so every
size is measured throughout the run and the host's drifting speed (a fifth over minutes on this shared VM) falls
on all sizes alike; each figure is the mean over a graph's compiles. Each round starts by measuring the machine's
own scaling: a trivially linear pure-Python workload (no project code) over as many linked objects as the graph
has nodes, whose CPU time per element grows only because a larger heap misses the caches more often (the last
table of each run).
With `--huge-pages`, every graph and the reference walk run a second time in a process whose heap is in 2 MiB
transparent huge pages instead of 4 KiB pages (the rows marked *(huge pages)*): the same code doing the same
work, so the two modes' ratios side by side separate what grows in the code from what grows in the memory system.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import pstats
import re
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import synthetic

from sections.common import HERE, last_line, mean

SCALE_TEXT = """## 2. Scale: synthetic workloads at 10k, 100k and 1M nodes

The three graph shapes of `benchmarks/synthetic.py` (`llm`, `split`, `cnn`) compiled at each size, each compile in
a fresh process, in rounds over the sizes up and back down; per stage the wall time and the peak RSS (reset at the
start of every stage). The figure is the linearity: CPU time per node at the larger size over the smaller's (1.00 =
linear; above 1.10, a stage that grows faster than the number of nodes). The machine's reference walk (no project
code) shows what a larger heap's cache misses alone cost; rows marked *(huge pages)* ran with the heap in 2 MiB
pages.
"""

STAGES = (
    "load",
    "copy",
    "passes",
    "streams",
    "memory",
    "verify",
    "baseline memory",
    "tasks",
    "model",
    "write",
)
# address-space cap of the scale workers (the machine has 24 GiB); RULEPASS_BENCH_MEM_GIB overrides it
MEM_LIMIT_GIB = float(os.environ.get("RULEPASS_BENCH_MEM_GIB", "23"))


def mem_cap() -> int:
    """The address-space cap for a worker: MEM_LIMIT_GIB, or what the machine has available less 1 GiB."""
    cap = int(MEM_LIMIT_GIB * (1 << 30))
    with contextlib.suppress(OSError):
        m = re.search(r"MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        if m:
            cap = min(cap, int(m.group(1)) * 1024 - (1 << 30))
    return cap


# The huge-pages runs of the scale section: every allocation through glibc's malloc (CPython's own small-object
# allocator maps its arenas itself, in 4 KiB pages), which glibc backs with transparent huge pages (2 MiB).
HUGE_PAGES_ENV = {"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


def huge_pages_unavailable() -> str | None:
    """Why this machine cannot run the huge-pages mode, or None when it can (Linux with transparent huge pages
    not disabled, glibc 2.35 or later: its `glibc.malloc.hugetlb` tunable)."""
    try:
        mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "no transparent huge pages (not Linux, or a kernel without them)"
    if "[never]" in mode:
        return "transparent huge pages are disabled on this machine ([never])"
    lib, version = platform.libc_ver()
    parts = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if lib != "glibc" or parts < (2, 35):
        return f"needs glibc 2.35 or later for glibc.malloc.hugetlb (found {lib or 'no glibc'} {version})"
    return None


def run_worker(
    args: list[str], log: Callable[[str], None], *, huge_pages: bool = False
) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    """Run `run.py --worker ...` (with `huge_pages`, in the huge-pages mode); (final result or None, last stage
    report, error text)."""
    cmd = [sys.executable, str(HERE / "run.py"), "--worker", *args]
    env = {**os.environ, **HUGE_PAGES_ENV} if huge_pages else None

    cap = mem_cap()

    def limit() -> None:  # fail with MemoryError rather than wake the OOM killer on a shared machine
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, preexec_fn=limit, env=env)
    last: dict[str, Any] = {}
    final = None
    for line in proc.stdout.splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            doc = json.loads(line)
            if "stage_done" in doc:
                last = doc["stage_done"]
            if "result" in doc:
                final = doc["result"]
    err = ""
    if proc.returncode != 0 or final is None:
        err = f"exit code {proc.returncode}: {last_line(proc.stderr)}"
        log(f"  worker failed: {err}")
    return final, last, err


def each_graph(
    prefix: str,
    sizes: Sequence[int],
    runs: list[dict[str, Any]],
    log: Callable[[str], None],
) -> Iterator[tuple[str, int, str, str, dict[str, Any]]]:
    """Every workload at every size, generated one at a time into a temporary directory (`_generated`) and both
    files removed after use."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        for w, n, gpath, mpath, gen in _generated(tmp, sizes, runs, log, {}):
            yield w, n, gpath, mpath, gen
            for path in (gpath, mpath):
                with contextlib.suppress(OSError):
                    os.remove(path)


def round_order(sizes: Sequence[int]) -> list[int]:
    """The order of the sizes in one round of the scale section: up, then back down without repeating the largest
    (10k, 100k, 1M, 100k, 10k), so every smaller size is measured just before and just after each larger one."""
    up = sorted(sizes)
    return up + up[-2::-1]


def bench_scale(
    sizes: Sequence[int], profile: bool, log: Callable[[str], None], huge_pages: bool = False, repeat: int = 1
) -> dict[str, Any]:
    """Generate every workload at every size, then compile them (and run the reference walk) in `repeat` rounds,
    each in its own subprocess; a round runs, workload by workload, the sizes in `round_order`, so that every size
    is measured in every stretch of the run and their means see the same drift of the host's speed (`combine`).
    With `huge_pages`, all of it once more in the huge-pages mode (`HUGE_PAGES_ENV`)."""
    runs: list[dict[str, Any]] = []
    profiles: dict[str, str] = {}
    reference: list[dict[str, Any]] = []
    unavailable = huge_pages_unavailable() if huge_pages else None
    if unavailable:
        log(f"  scale: no huge-pages runs: {unavailable}")
    # every default run first, then every huge-pages run (graphs generated again: the same graphs), so that no
    # default run follows a process that held ~10 GiB in huge pages
    for huge in [False, True] if huge_pages and not unavailable else [False]:
        mode = {"pages": "huge"} if huge else {}
        with tempfile.TemporaryDirectory(prefix="rulepass-scale-") as tmp:
            compiles = {
                (w, n): _ScaledGraph(w, n, gpath, mpath, gen, huge)
                for w, n, gpath, mpath, gen in _generated(tmp, sizes, runs, log, mode)
            }
            refs: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
            ref_errors: dict[int, str] = {}
            for rnd in range(repeat):
                log(f"  scale: round {rnd + 1} of {repeat}" + (" (huge pages)" if huge else ""))
                for n in round_order(sizes):
                    if n not in ref_errors:
                        ref, _, err = run_worker(["reference", str(n)], log, huge_pages=huge)
                        if ref is None:
                            ref_errors[n] = err
                        else:
                            refs[n].append({**ref, "round": rnd})
                for w in synthetic.WORKLOADS:
                    for n in round_order(sizes):
                        if (w, n) in compiles:
                            compiles[w, n].compile(rnd, log)
            reference += [
                {"size": n, **mode, **(combine_reference(refs[n]) if n not in ref_errors else {"error": ref_errors[n]})}
                for n in sizes
            ]
            for graph in compiles.values():
                runs += graph.records()
            if profile and not huge:
                for w in synthetic.WORKLOADS:
                    top = compiles.get((w, max(sizes)))
                    if top is None or top.failed:
                        continue
                    ppath = top.gpath + ".prof"  # in the same temporary directory
                    log(f"  scale: {w} {max(sizes)}: profiling (cProfile)")
                    pres, _, _ = run_worker(["compile", top.gpath, top.mpath, ppath], log)
                    if pres is not None:
                        profiles[f"{w} {max(sizes)}"] = profile_text(ppath)
    out: dict[str, Any] = {
        "sizes": list(sizes),
        "runs": runs,
        "profiles": profiles,
        "reference": reference,
        "repeat": repeat,
        "schedule": "rounds",
    }
    if unavailable:
        out["huge_pages_unavailable"] = unavailable
    return out


def _generated(
    tmp: str, sizes: Sequence[int], runs: list[dict[str, Any]], log: Callable[[str], None], mode: dict[str, str]
) -> Iterator[tuple[str, int, str, str, dict[str, Any]]]:
    """Every workload at every size generated into `tmp`, each in a subprocess: (workload, size, graph path, model
    path, the generator's report); a graph that could not be made is recorded in `runs` instead."""
    for w in synthetic.WORKLOADS:
        for n in sizes:
            gpath, mpath = os.path.join(tmp, f"{w}_{n}.json"), os.path.join(tmp, f"{w}_{n}.model.json")
            log(f"  {w} {n}: generating")
            gen, _, err = run_worker(["generate", w, str(n), gpath], log)
            if gen is None:
                runs.append({"workload": w, "size": n, **mode, "error": f"generate: {err}"})
            else:
                yield w, n, gpath, mpath, gen


class _ScaledGraph:
    """One generated graph of the scale section and its compiles, one a call (`compile`), each in a fresh worker.

    A compile that fails fails the graph: no figure of it is kept, and its record names the stage it failed in.
    When the verifier alone ran out, that failure is recorded and the graph is compiled from then on without it
    (its earlier samples, which include the verifier, are dropped), so the rest of the pipeline is still measured.
    """

    def __init__(self, workload: str, size: int, gpath: str, mpath: str, gen: dict[str, Any], huge: bool) -> None:
        self.workload, self.size, self.gpath, self.mpath, self.gen, self.huge = workload, size, gpath, mpath, gen, huge
        self.verify = True
        self.samples: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []  # the failed attempts' records, in order
        self.failed = False

    def _record(self, **fields: Any) -> dict[str, Any]:
        mode = {"pages": "huge"} if self.huge else {}
        return {
            "workload": self.workload,
            "size": self.size,
            **mode,
            "generate": self.gen,
            "verify": self.verify,
            **fields,
        }

    def compile(self, rnd: int, log: Callable[[str], None]) -> None:
        """Compile the graph once more (round `rnd`), unless it has failed."""
        if self.failed:
            return
        label = f"{self.workload} {self.size}" + (" (huge pages)" if self.huge else "")
        log(f"  scale: {label}: compiling {self.gen['nodes']} nodes ({self.gen['file_mib']:.0f} MiB of JSON)")
        args = ["compile", self.gpath, self.mpath] + ([] if self.verify else ["--no-verify"])
        res, last, err = run_worker(args, log, huge_pages=self.huge)
        if res is not None:
            self.samples.append({**res, "round": rnd})
            wall = sum(s["wall"] for s in res["stages"].values())
            log(f"  scale: {label}: {wall:.1f} s, peak {max_peak(res):.0f} MiB")
            return
        failed_at = next((s for s in STAGES if s not in last and (self.verify or s != "verify")), "?")
        self.errors.append(self._record(error=f"failed in {failed_at}: {err}", stages=last, nodes=self.gen["nodes"]))
        if failed_at == "verify" and self.verify:  # the verifier ran out: measure the rest of the pipeline without it
            log(f"  scale: {label}: compiling again without the verifier")
            self.verify, self.samples = False, []
            self.compile(rnd, log)
        else:
            self.failed = True

    def records(self) -> list[dict[str, Any]]:
        """The graph's records for the section's `runs`: any failure, then its combined samples (if it did not fail
        in the end)."""
        done = [] if self.failed or not self.samples else [self._record(**combine(self.samples))]
        return self.errors + done


def combine(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One compile result from the same graph compiled in several rounds: every stage's times are the mean over the
    rounds, its peak RSS the highest any reached; each compile's round and total CPU seconds are kept in `samples`
    (for the ratios paired by round, and the spread), the least total in `cpu_least`.

    Means, not the least of the repeats: the host's speed drifts by a fifth over minutes, and every size is
    measured throughout the run (`round_order`), so the means of two sizes see the same drift; the least of a
    short compile's repeats catches a fast moment that a compile lasting minutes cannot, which biases the ratio
    of a large size to a small one upwards."""
    out = {k: v for k, v in results[0].items() if k not in ("stages", "round")}
    stages: dict[str, dict[str, float]] = {}
    for stage in results[0]["stages"]:
        entries = [r["stages"][stage] for r in results if stage in r["stages"]]
        stages[stage] = {
            k: (max if k in ("peak_mib", "rss_mib") else mean)([e[k] for e in entries]) for k in entries[0]
        }
    out["stages"] = stages
    out["huge_mib"] = max((r["huge_mib"] for r in results if r.get("huge_mib") is not None), default=None)
    totals = [sum(s["cpu"] for s in r["stages"].values()) for r in results]
    out["samples"] = [{"round": r.get("round", 0), "cpu": t} for r, t in zip(results, totals, strict=True)]
    out["cpu_least"] = min(totals)
    return out


def combine_reference(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The reference walk at one size over its rounds: the mean CPU µs per element of each part (build, walk,
    copy), and each round's walk in `samples`."""
    out: dict[str, Any] = {k: mean([r[k] for r in results]) for k in ("build", "walk", "copy")}
    out["huge_mib"] = max((r["huge_mib"] for r in results if r.get("huge_mib") is not None), default=None)
    out["samples"] = [{"round": r.get("round", 0), "walk": r["walk"]} for r in results]
    return out


def profile_text(path: str, top: int = 25) -> str:
    """The top functions of a profile, by own time and by cumulative time."""
    out = io.StringIO()
    st = pstats.Stats(path, stream=out)
    st.strip_dirs()
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    lines = [
        ln
        for ln in out.getvalue().splitlines()
        if ln.strip() and not ln.startswith(("   Ordered by", "   List reduced"))
    ]
    return "\n".join(lines)


def max_peak(run: dict[str, Any]) -> float:
    """The highest per-stage peak RSS of a run, MiB."""
    return max((s["peak_mib"] for s in run.get("stages", {}).values()), default=0.0)
