"""`rulepass corpus diff` over a corpus of 200+ graphs: one worker against all cores, and a cached rerun after a
one-rule edit against the first run.

    python benchmarks/corpus_bench.py [--jobs N] [--out benchmarks/corpus_bench.md] [--keep DIR]

The corpus is generated into a temporary folder (nothing of it is committed): the 12 real models of
tests/data/models in both format modes (`keep`, `ascend`) at O2 and at O3 (48 entries of one manifest, with the
models' input shapes), the graph of every rule fixture (rules/fixtures), the bundled examples, and synthetic
variants (benchmarks/synthetic.py's three workloads at 26 sizes each). The edit diffed: the bundled rules against a
copy whose shared alignment check (notask_base.yaml's InputCheck/CheckTensorAlign, used by the concat and pack
rules) asks for 64-byte blocks instead of 32. Runs, each a whole `rulepass corpus diff` process:

1. `-j 1 --no-cache`, then `-j N --no-cache`: the speed-up of N workers (the two reports must be the same bytes);
2. `-j N` into an empty cache: the first run; then again, nothing edited (the cost of reading the cache);
3. the split rule's own alignment threshold edited (split_notask.yaml, 32 -> 64), `-j N` with that cache: the
   rerun; then the same diff with no cache, whose report must be the same bytes as the rerun's.

Wall times are of a shared machine (the load average is printed); the counts of results computed and taken from
the cache are the steady figure. The table goes to stdout and to `--out` (benchmarks/run.py puts that file on
docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = ROOT / "tests" / "data" / "models"
SIZES = range(40, 40 + 26 * 20, 20)  # synthetic graph sizes, nodes
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def make_corpus(folder: Path) -> tuple[Path, dict[str, int]]:
    """Write the corpus's graphs and its manifest into `folder`; the manifest's path and the count per kind."""
    import synthetic
    from rulepass.compiler.graph_file import save_graph
    from rulepass.examples import example_path
    from rulepass.rules import bundled_rules_dir

    entries: list[Any] = []
    models = json.loads((MODELS / "manifest.json").read_text(encoding="utf-8"))["models"]
    for m in models:
        for formats in ("keep", "ascend"):
            for level in ("O2", "O3"):
                entry = {"path": str(MODELS / m["file"]), "formats": formats, "level": level, "dims": m["dims"]}
                entries.append({**entry, "input_shape": m["input_shape"]} if m.get("input_shape") else entry)
    (folder / "fixtures").mkdir()
    fixtures = sorted(Path(bundled_rules_dir(), "fixtures").glob("*/*.yaml"))
    for f in fixtures:
        graph = yaml.safe_load(f.read_text(encoding="utf-8"))["graph"]
        out = folder / "fixtures" / f"{f.parent.name}__{f.stem}.yaml"
        out.write_text(yaml.safe_dump({"name": f.stem, **graph}, sort_keys=False), encoding="utf-8")
        entries.append(str(out.relative_to(folder)))
    examples = sorted(Path(example_path()).parent.glob("*.yaml"))
    entries += [str(e) for e in examples]
    (folder / "synthetic").mkdir()
    for workload in synthetic.WORKLOADS:
        for n in SIZES:
            out = folder / "synthetic" / f"{workload}_{n}.json"
            save_graph(synthetic.generate(workload, n), out)
            entries.append(str(out.relative_to(folder)))
    manifest = folder / "corpus.yaml"
    manifest.write_text(yaml.safe_dump({"corpus": entries}, sort_keys=False), encoding="utf-8")
    counts = {"models": len(models) * 4, "fixtures": len(fixtures), "examples": len(examples)}
    return manifest, {**counts, "synthetic": len(synthetic.WORKLOADS) * len(SIZES)}


def edited(src: Path, dst: Path, name: str, old: str, new: str) -> Path:
    """A copy of the rule folder `src` with `old` replaced by `new` in `name`."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("fixtures", "*.py", "__pycache__"))
    text = (dst / name).read_text(encoding="utf-8")
    if old not in text:
        raise SystemExit(f"{name} no longer holds {old!r}: update the benchmark's edit")
    (dst / name).write_text(text.replace(old, new), encoding="utf-8")
    return dst


def diff(base: Path, rules: Path, manifest: Path, out: Path, *flags: str) -> tuple[float, float, str, int]:
    """One `rulepass corpus diff` process: its wall time, its CPU time (with the workers it waited for: not those
    of a forkserver), its report's text, and how many results came from the cache."""
    argv = [sys.executable, "-m", "rulepass", "corpus", "diff", "--base", str(base), "--rules", str(rules)]
    argv += ["--manifest", str(manifest), "--format", "json", "-o", str(out), *flags]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if done.returncode not in (0, 1):
        raise SystemExit(f"rulepass corpus diff failed ({done.returncode}):\n{done.stderr}")
    found = re.search(r"(\d+) of (\d+) result\(s\) from the cache", done.stderr)
    return seconds, cpu, out.read_text(encoding="utf-8"), int(found.group(1)) if found else 0


def run(jobs: int, keep: Path | None) -> str:
    """Make the corpus, time the runs, and return the section's markdown."""
    from rulepass.rules import bundled_rules_dir

    tmp = Path(tempfile.mkdtemp(prefix="rulepass-corpus-bench-")) if keep is None else keep
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        manifest, counts = make_corpus(tmp)
        base = tmp / "base"
        shutil.copytree(bundled_rules_dir(), base, ignore=shutil.ignore_patterns("fixtures", "*.py", "__pycache__"))
        new = edited(base, tmp / "new", "notask_base.yaml", "% 32 == 0", "% 64 == 0")
        t1, c1, one, _ = diff(base, new, manifest, tmp / "r1.json", "-j", "1", "--no-cache")
        tn, _, many, _ = diff(base, new, manifest, tmp / "rn.json", "-j", str(jobs), "--no-cache")
        cache = ["--cache", str(tmp / "cache"), "-j", str(jobs)]
        tfirst, _, first, cached_first = diff(base, new, manifest, tmp / "rf.json", *cache)
        tsame, _, same_again, cached_same = diff(base, new, manifest, tmp / "rs.json", *cache)
        again = edited(new, tmp / "again", "split_notask.yaml", "% 32 == 0", "% 64 == 0")
        trerun, _, rerun, cached = diff(base, again, manifest, tmp / "rr.json", *cache)
        _, _, fresh, _ = diff(base, again, manifest, tmp / "rx.json", "-j", str(jobs), "--no-cache")
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    report = json.loads(first)
    s = report["summary"]
    products = 2 * (s["graphs"] - s["unreadable"])
    same = one == many == first == same_again and rerun == fresh
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    kinds = ", ".join(f"{v} {k}" for k, v in counts.items())
    rows = [
        ("1 worker, no cache", t1, "", products),
        (f"{jobs} workers, no cache", tn, f"speed-up {t1 / tn:.2f}", products),
        (f"{jobs} workers, first run (empty cache)", tfirst, "", products - cached_first),
        (
            f"{jobs} workers, rerun, nothing edited",
            tsame,
            f"{tsame / tfirst:.2f}x the first run's time",
            products - cached_same,
        ),
        (
            f"{jobs} workers, rerun after a one-rule edit",
            trerun,
            f"{trerun / tfirst:.2f}x the first run's time",
            products - cached,
        ),
    ]
    lines = [
        "## Corpus runs: `rulepass corpus diff` on workers and from the cache (`benchmarks/corpus_bench.py`)",
        "",
        f"A corpus of {s['graphs']} graphs ({kinds}; {s['unreadable']} could not be read, each one line of the "
        "report), the bundled rules against a copy whose shared 32-byte alignment check asks for 64 "
        f"({s['changed']} graphs changed, {s['decisions_changed']} decisions). The rerun diffs against the split "
        "rule's own threshold edited too: only graphs with a split are compiled again for the new side, the base "
        "side comes whole from the cache. How to read it: *ratio* is the figure (same run, same machine); *results "
        "computed* counts the results (two per readable graph: base and new rules) not taken from the cache, the "
        "steady measure of the work the cache saves.",
        "",
        f"Measured with `python benchmarks/corpus_bench.py --jobs {jobs}` on {os.cpu_count()} CPU(s), load average "
        f"{load:.2f} at the end; the 1-worker run had {c1 / t1:.2f} of a core on average (its CPU seconds over its "
        "wall seconds). The kernel shares the cores fairly between sessions (autogroup scheduling), not between "
        "processes, so while other sessions keep the cores busy N workers of one session get no more CPU than one: "
        "the speed-up is the cores left free. Reports byte-identical across worker counts, from the cache and "
        f"against an uncached run: {same}.",
        "",
        "| run | wall s | ratio | results computed |",
        "|---|---|---|---|",
        *(f"| {name} | {t:.1f} | {ratio} | {n} of {products} |" for name, t, ratio, n in rows),
        "",
    ]
    if not same:
        raise SystemExit("\n".join([*lines, "the reports differ: a bug"]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="workers of the parallel runs")
    parser.add_argument("--out", type=Path, help="also write the section here (e.g. benchmarks/corpus_bench.md)")
    parser.add_argument("--keep", type=Path, help="make the corpus here and keep it")
    args = parser.parse_args()
    text = run(args.jobs, args.keep)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
