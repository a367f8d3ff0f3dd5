"""Running a corpus: the cache first, then what is left as one job per graph, in local worker processes (the
default), in this process (one worker), or on a Dask distributed cluster; results in the corpus's order
whatever ran where and when.

The cache is a folder of entries (`dsl.cache.Store`: JSON data under an HMAC tag, written atomically, an entry
that fails its tag or does not read as expected ignored and rewritten). Per graph it keeps the graph's name and
op types, and each product's result under its key (`inputs.result_key`): a second run after a rule edit
recomputes only the graphs that have a node the edited rules can match.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...base.diagnostics import error
from ...base.files import MAX_FILE_BYTES
from ...dsl.cache import Store, cache_dir
from .inputs import Entry, GraphData, RuleSource, fingerprint, types_key
from .jobs import Job, JobResult, Product, run_job

CACHE_SUBDIR = "corpus"
CACHE_ENTRIES = 200_000  # a corpus's entries: its graphs' op types, and a result per product and rule edit
CONNECT_TIMEOUT_S = 10.0

Progress = Callable[[int, int], None]  # (graphs done, graphs in all)


@dataclass(frozen=True)
class Outcome:
    """One graph's outcome: its name, and each product's result in the order the products were asked for (or
    the error that stopped the graph from loading); `cached`: how many came from the cache."""

    entry: Entry
    name: str
    error: str | None
    results: tuple[dict[str, Any], ...]
    cached: int


def open_cache(folder: str | Path | None) -> Store | None:
    """The corpus cache in `folder` (default: `corpus/` in the user's cache folder), or None when the cache is
    off (`RULEPASS_NO_CACHE`) or the folder is not safe to use."""
    base = Path(folder) if folder is not None else cache_dir()
    if base is None:
        return None
    return Store.open(base / CACHE_SUBDIR if folder is None else base, max_entries=CACHE_ENTRIES)


def run_corpus(
    entries: Sequence[Entry],
    products: Sequence[tuple[str, RuleSource]],
    *,
    level: str = "O3",
    disabled: Sequence[str] = (),
    workers: int = 1,
    cluster: str | None = None,
    store: Store | None = None,
    progress: Progress | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
) -> list[Outcome]:
    """Every product (kind, rule set) of every entry, taken from `store` when there, else computed (in `workers`
    local processes, or on the Dask scheduler at `cluster`) and stored. Raises on a rule set with errors or a
    cluster that cannot be reached; a graph that cannot be read or compiled is its outcome's error."""
    wanted = tuple(Product(kind, src, fingerprint(src.load())) for kind, src in products)
    base = [Job(GraphData.read(e, MAX_FILE_BYTES), wanted, level, tuple(disabled)) for e in entries]
    cached = [_from_cache(store, job) for job in base]
    todo = {i: job for i, (job, (named, _)) in enumerate(zip(base, cached, strict=True)) if _remaining(job, named, _)}
    done = len(base) - len(todo)
    if progress is not None:
        progress(done, len(base))

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, len(base))

    jobs = [_remaining(job, *cached[i]) or job for i, job in todo.items()]
    ran = _dask(cluster, jobs, tick, connect_timeout) if cluster else _local(jobs, workers, tick)
    found = dict(zip(todo, ran, strict=True))
    for i, result in found.items():
        if result.error is None:
            cached[i] = ((result.name, result.op_types), {**cached[i][1], **dict(result.results)})
            _to_cache(store, base[i], result)
    if store is not None and found:
        store.prune()
    return [_outcome(job, *cached[i], found.get(i)) for i, job in enumerate(base)]


def _from_cache(store: Store | None, job: Job) -> tuple[tuple[str, tuple[str, ...]] | None, dict[str, dict[str, Any]]]:
    """The graph's name and op types, and the results of its products, that the cache holds."""
    if store is None or job.graph.error is not None:
        return None, {}
    t = store.get(types_key(job.graph))
    if not (isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("types"), list)):
        return None, {}
    named = (t["name"], tuple(str(x) for x in t["types"]))
    out = {}
    for p in job.products:
        key = job.key(p, frozenset(named[1]))
        hit = store.get(key)
        if isinstance(hit, dict) and "error" in hit and (hit["error"] is not None or _complete(hit)):
            out[key] = hit
    return named, out


def _complete(hit: dict[str, Any]) -> bool:
    """Whether a cached result without an error holds what its product gives (decisions, near misses, report
    sections, a plan)."""
    return any(k in hit for k in ("decisions", "near_misses", "sections", "plan"))


def _remaining(job: Job, named: tuple[str, tuple[str, ...]] | None, known: dict[str, dict[str, Any]]) -> Job | None:
    """`job` with only the products the cache did not hold (all of them when the graph's op types are unknown),
    or None when it held them all."""
    if named is None:
        return job
    left = tuple(p for p in job.products if job.key(p, frozenset(named[1])) not in known)
    return Job(job.graph, left, job.level, job.disabled) if left else None


def _to_cache(store: Store | None, job: Job, result: JobResult) -> None:
    if store is None:
        return
    store.put(types_key(job.graph), {"name": result.name, "types": list(result.op_types)}, prune=False)
    for key, value in result.results:
        store.put(key, value, prune=False)


def _outcome(
    job: Job,
    named: tuple[str, tuple[str, ...]] | None,
    known: dict[str, dict[str, Any]],
    computed: JobResult | None,
) -> Outcome:
    if named is None:
        return Outcome(job.graph.entry, "", computed.error if computed else job.graph.error, (), 0)
    keys = [job.key(p, frozenset(named[1])) for p in job.products]
    fresh = {k for k, _ in computed.results} if computed is not None else set()
    return Outcome(job.graph.entry, named[0], None, tuple(known[k] for k in keys), sum(k not in fresh for k in keys))


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which stops them all (no worker dies half way on its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _indexed(item: tuple[int, Job]) -> tuple[int, JobResult]:
    return item[0], run_job(item[1])


def _local(jobs: Sequence[Job], workers: int, tick: Callable[[], None]) -> list[JobResult]:
    """Run `jobs` here (one worker or one job) or in `workers` processes, biggest file first; stopped whole on
    Ctrl-C or any error."""
    out: list[JobResult | None] = [None] * len(jobs)
    if workers <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            out[i] = run_job(job)
            tick()
        return [r for r in out if r is not None]
    order = sorted(range(len(jobs)), key=lambda i: (-len(jobs[i].graph.data), i))
    # forkserver where there is one: a fork of this process would copy whatever threads it runs (a library's, a
    # test runner's) in whatever state they are, which can deadlock a worker
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else None)
    pool = context.Pool(min(workers, len(jobs)), initializer=_ignore_sigint)
    try:
        for i, result in pool.imap_unordered(_indexed, [(i, jobs[i]) for i in order], chunksize=1):
            out[i] = result
            tick()
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
    return [r for r in out if r is not None]


def _dask(address: str, jobs: Sequence[Job], tick: Callable[[], None], timeout: float) -> list[JobResult]:
    """Run `jobs` on the Dask distributed scheduler at `address` (its workers need rulepass installed)."""
    try:
        dist: Any = importlib.import_module("distributed")  # untyped: every call through it is Any
    except ImportError:
        raise error("usage", "--cluster needs Dask distributed: pip install 'rulepass[cluster]'") from None
    try:
        client = dist.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise error(
            "cluster",
            f"cannot reach the Dask scheduler at '{address}' (waited {timeout:g} s): {exc}",
            hint="check the address (e.g. tcp://HOST:8786) and that the scheduler is running",
        ) from None
    out: list[JobResult | None] = [None] * len(jobs)
    futures: list[Any] = []
    try:
        futures = client.map(run_job, list(jobs), pure=False)
        where = {f.key: i for i, f in enumerate(futures)}
        for f in dist.as_completed(futures, loop=client.loop):
            out[where[f.key]] = f.result()
            tick()
    except BaseException:
        if futures:
            client.cancel(futures)
        raise
    finally:
        client.close()
    return [r for r in out if r is not None]


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 1)
