"""The scale section's tables: time and peak memory per stage, linearity between sizes (paired by round where the
run had rounds), the goal line, and the machine's own reference walk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import synthetic

from sections.common import mean, table
from sections.scale import STAGES, max_peak, round_order

LINEAR_GOAL = 1.10  # the scale section's goal: CPU time per node at most this much of a smaller size's
Runs = list[dict[str, Any]]


def paired_ratios(small: dict[str, Any], large: dict[str, Any], key: str, per: tuple[float, float]) -> list[float]:
    """The ratio of two sizes' figures round by round (`samples`' `key`, divided by `per`: the nodes or 1), each
    round's samples of a size averaged: [large / small for every round both have]."""
    out = []
    for rnd in sorted({s["round"] for s in small.get("samples", [])} & {s["round"] for s in large.get("samples", [])}):
        a = mean([s[key] for s in small["samples"] if s["round"] == rnd]) / per[0]
        b = mean([s[key] for s in large["samples"] if s["round"] == rnd]) / per[1]
        if a > 0:
            out.append(b / a)
    return out


def _range(xs: Sequence[float]) -> str:
    """Ratios paired by round as 'least–most' (one: itself; none: a dash)."""
    if not xs:
        return "—"
    return f"{min(xs):.2f}" if len(xs) == 1 else f"{min(xs):.2f}–{max(xs):.2f}"


def net_peak(run: dict[str, Any]) -> float:
    """The run's peak RSS above the interpreter's own (RSS before loading the graph), MiB."""
    return max_peak(run) - run.get("rss_before_mib", 0.0)


def render_scale(data: dict[str, Any]) -> str:
    """Time per stage, peak memory per stage, and the linearity table."""
    runs = data["runs"]
    shown = [s for s in STAGES if any(s in r.get("stages", {}) for r in runs)]
    sampled = any("samples" in r for r in runs)
    t1, t2 = _stage_tables(runs, shown)
    lrows, totals = _linearity_rows(runs, shown, sampled)
    sampled_cols = ["total, paired by round", "total, least of the compiles"] if sampled else []
    t3 = (
        table(["sizes", *shown, "total", *sampled_cols, "total without GC", "peak memory"], lrows)
        if lrows
        else "(one size only: no ratio)"
    )
    t3 += _goal_line(totals, data) + _reference_table(data, sampled)
    return (
        "Time per stage (wall seconds; total also in CPU seconds, with the share spent in Python's cyclic GC)."
        + _rounds_note(data, sampled)
        + "\n\n"
        + t1
        + "\n\nPeak RSS during each stage (MiB; the peak is reset at every stage start):\n\n"
        + t2
        + "\n\nLinearity: CPU time per node at the larger size divided by the same at the smaller size, for "
        "every pair of sizes (1.00 = perfectly linear; the goal is within ~10%, i.e. at most 1.10; where the "
        "smaller graph's whole compile fits in the CPU's last-level cache and the larger one's does not, the ratio "
        "also measures the cache, see the findings); "
        + (
            "*total* divides the two sizes' mean CPU time per node; *paired by round* divides them round by round "
            "(least–most over the rounds), to show how far the host's drift moves the ratio; *least of the "
            "compiles* divides the two sizes' least CPU time per node, the estimate of the runs before the rounds, "
            "biased upwards by a short compile's fast moments; "
            if sampled
            else ""
        )
        + "*total without GC* leaves out the "
        "time in Python's cyclic garbage collector; *peak memory* compares the peak above the interpreter's own "
        "RSS per node:\n\n" + t3 + _huge_pages_note(data)
    )


def _stage_tables(runs: Runs, shown: Sequence[str]) -> tuple[str, str]:
    """The time table and the peak-memory table: one row a run, one column a stage."""
    huge = any(r.get("pages") == "huge" for r in runs)
    repeated = any(len(_samples(r, "cpu")) > 1 for r in runs)
    trows, mrows = [], []
    for r in runs:
        st = r.get("stages", {})
        name = _run_label(r) + ("" if r.get("verify", True) else " (verify off)")
        nodes = r.get("nodes", r.get("generate", {}).get("nodes", "?"))
        total = sum(s["wall"] for s in st.values())
        cpu = sum(s["cpu"] for s in st.values())
        gct = sum(s["gc"] for s in st.values())
        status = f" ({r['error']})" if "error" in r else ""
        trows.append(
            [name + status, nodes]
            + [f"{st[s]['wall']:.2f}" if s in st else "—" for s in shown]
            + [f"**{total:.1f}**", f"{cpu:.1f}", f"{100 * gct / total:.0f}%" if total else "—"]
            + [f"{1e6 * cpu / nodes:.0f}" if isinstance(nodes, int) and nodes else "—"]
            + ([_spread(_samples(r, "cpu"))] if repeated else [])
        )
        mrows.append(
            [name + status, nodes]
            + [f"{st[s]['peak_mib']:.0f}" if s in st else "—" for s in shown]
            + [
                f"**{max_peak(r):.0f}**",
                f"{1024 * net_peak(r) / nodes:.1f}" if isinstance(nodes, int) and "rss_before_mib" in r else "—",
            ]
            + ([f"{r['huge_mib']:.0f}" if r.get("huge_mib") is not None else "—"] if huge else [])
        )
    spread_col = ["CPU spread of compiles"] if repeated else []
    t1 = table(["workload", "nodes", *shown, "total s", "CPU s", "GC", "CPU µs/node", *spread_col], trows)
    huge_col = ["in huge pages at the end"] if huge else []
    t2 = table(["workload", "nodes", *shown, "peak MiB", "KiB/node above start", *huge_col], mrows)
    return t1, t2


def _linearity_rows(
    runs: Runs, shown: Sequence[str], sampled: bool
) -> tuple[list[list[str]], list[tuple[float, str, tuple[int, int]]]]:
    """CPU time per node at each size relative to each smaller one, in total and per stage: the table's rows, and
    the default pages' total ratios (for the goal line)."""
    lrows = []
    totals: list[tuple[float, str, tuple[int, int]]] = []
    for w, pages in [(w, pages) for pages in ("small", "huge") for w in synthetic.WORKLOADS]:
        ok = [r for r in runs if r["workload"] == w and r.get("pages", "small") == pages and "error" not in r]
        if any(not r.get("verify", True) for r in ok):  # compare like with like: the verifier is ~10% of a run
            ok = [{**r, "stages": {k: v for k, v in r["stages"].items() if k != "verify"}} for r in ok]
        if len(ok) < 2:
            continue
        for base, r in [(a, b) for i, a in enumerate(ok) for b in ok[i + 1 :]]:
            row, total = _linearity_row(base, r, shown, sampled)
            pair = f"{w} {r['size'] // 1000}k vs {base['size'] // 1000}k"
            if pages == "small":
                totals.append((total, pair, (base["size"], r["size"])))
            label = pair + (" (huge pages)" if pages == "huge" else "")
            lrows.append([label + ("" if r.get("verify", True) else " (verify left out)"), *row])
    return lrows, totals


def _linearity_row(
    base: dict[str, Any], r: dict[str, Any], shown: Sequence[str], sampled: bool
) -> tuple[list[str], float]:
    """One pair of sizes' ratios (after its label): per stage, total, by round, without GC, peak memory; and the
    total ratio."""
    per = []
    for s in shown:
        a, b = base["stages"].get(s), r["stages"].get(s)
        per.append(f"{(b['cpu'] / r['nodes']) / (a['cpu'] / base['nodes']):.2f}" if a and b and a["cpu"] > 0 else "—")
    tot_a = sum(s["cpu"] for s in base["stages"].values()) / base["nodes"]
    tot_b = sum(s["cpu"] for s in r["stages"].values()) / r["nodes"]
    nogc_a = sum(s["cpu"] - s["gc"] for s in base["stages"].values()) / base["nodes"]
    nogc_b = sum(s["cpu"] - s["gc"] for s in r["stages"].values()) / r["nodes"]
    mem = (net_peak(r) / r["nodes"]) / (net_peak(base) / base["nodes"]) if net_peak(base) > 0 else float("nan")
    rounds = []
    if sampled:
        nodes = (base["nodes"], r["nodes"])
        least = (r["cpu_least"] / r["nodes"]) / (base["cpu_least"] / base["nodes"])
        rounds = [_range(paired_ratios(base, r, "cpu", nodes)), f"{least:.2f}"]
    return [*per, f"**{tot_b / tot_a:.2f}**", *rounds, f"{nogc_b / nogc_a:.2f}", f"{mem:.2f}"], tot_b / tot_a


def _goal_line(totals: list[tuple[float, str, tuple[int, int]]], data: dict[str, Any]) -> str:
    """Whether every pair of sizes is within the linearity goal, and the worst pair beside the machine's walk."""
    if not totals:
        return ""
    worst = max(totals)
    met = sum(1 for x, *_ in totals if x <= LINEAR_GOAL)
    walks = {
        r["size"]: r["walk"]
        for r in data.get("reference", [])
        if "error" not in r and r.get("pages", "small") == "small"
    }
    small, large = worst[2]
    walk = f"; the machine's reference walk {walks[large] / walks[small]:.2f}" if {small, large} <= set(walks) else ""
    return (
        f"\n\nGoal: CPU time per node within ~10% of every smaller size's (total at most {LINEAR_GOAL:.2f}): "
        f"**{'met' if met == len(totals) else 'not met'}**, {met} of {len(totals)} pairs of sizes within it "
        f"(highest {worst[0]:.2f}, {worst[1]}{walk})."
    )


def _reference_table(data: dict[str, Any], sampled: bool) -> str:
    """The machine's reference walk: its growth between every pair of sizes, in each page mode."""
    rrows = []
    repeated_ref = any(len(_samples(r, "walk")) > 1 for r in data.get("reference", []))
    for pages in ("small", "huge"):
        ref = [r for r in data.get("reference", []) if "error" not in r and r.get("pages", "small") == pages]
        rrows += [
            [
                f"{r['size'] // 1000}k vs {a['size'] // 1000}k" + (" (huge pages)" if pages == "huge" else ""),
                *(f"{r[k] / a[k]:.2f}" for k in ("build", "walk", "copy")),
                *([_range(paired_ratios(a, r, "walk", (1.0, 1.0)))] if sampled else []),
                f"{r['walk']:.2f}",
                *([_spread(_samples(r, "walk"))] if repeated_ref else []),
            ]
            for i, a in enumerate(ref)
            for r in ref[i + 1 :]
        ]
    if not rrows:
        return ""
    return (
        "\n\nThe machine's own scaling, measured in the same run (`worker_reference`: no project code, a "
        "trivially linear pure-Python workload over as many linked objects as the graph has nodes; the same "
        "ratio of CPU µs per element). What grows here comes from the memory hierarchy, not from an "
        "algorithm, and bounds how linear Python code that walks a graph of that size can look:\n\n"
        + table(
            ["sizes", "build", "walk (peers + dict reads)", "copy"]
            + (["walk, paired by round"] if sampled else [])
            + ["walk µs/element"]
            + (["walk spread of runs"] if repeated_ref else []),
            rrows,
        )
    )


def _rounds_note(data: dict[str, Any], sampled: bool) -> str:
    """How a run in rounds was scheduled and averaged ('' for a run from before the rounds)."""
    if not sampled:
        return ""
    repeat = data.get("repeat", 1)
    order = ", ".join(f"{s // 1000}k" for s in round_order(data.get("sizes", [])))
    return (
        f" The graphs were compiled in {repeat} round{'s' if repeat > 1 else ''}, each compile in a fresh "
        f"process; a round runs the reference walk and then every workload at the sizes in the order {order} "
        "(each smaller size just before and just after each larger one), so every size is measured throughout "
        "the run; every stage's figures are the mean over its compiles (the smaller sizes twice a round), its "
        "peak the highest; *CPU spread of compiles* is (most − least) / least total CPU seconds of a graph's "
        "compiles."
    )


def _samples(record: dict[str, Any], key: str) -> list[float]:
    """A scale run's (`cpu`: total CPU seconds) or a reference walk's (`walk`: µs per element) figure, run by run."""
    return [s[key] for s in record.get("samples", [])]


def _spread(xs: Sequence[float]) -> str:
    """(most - least) / least of repeated measurements, as a percentage; a dash for fewer than two."""
    return f"{100 * (max(xs) - min(xs)) / min(xs):.0f}%" if len(xs) > 1 and min(xs) > 0 else "—"


def _run_label(r: dict[str, Any]) -> str:
    """A scale run's name: workload, size and, for the huge-pages mode, that."""
    return f"{r['workload']} {r['size'] // 1000}k" + (" (huge pages)" if r.get("pages") == "huge" else "")


def _huge_pages_note(data: dict[str, Any]) -> str:
    if data.get("huge_pages_unavailable"):
        return f"\n\nNo huge-pages runs: {data['huge_pages_unavailable']}."
    if not any(r.get("pages") == "huge" for r in data["runs"]):
        return ""
    return (
        "\n\n*(huge pages)*: the same graph compiled once more by the same code with every allocation through "
        "glibc's malloc backed by 2 MiB transparent huge pages (`PYTHONMALLOC=malloc "
        "GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, run with `--huge-pages`; *in huge pages at the end* is the "
        "process's `AnonHugePages`, MiB). The default runs use CPython's small-object allocator, whose arenas "
        "are in 4 KiB pages. The two modes differ in the allocator and in the page size, not in the code or "
        "the work it does (the *work* table's calls); what grows in one mode and not in the other is the memory "
        "system's: translating addresses through 4 KiB page tables on a larger heap, and where the allocator "
        "puts objects."
    )
