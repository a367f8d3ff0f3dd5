"""How fast rule files validate: `load_ge_rules` over 100 generated rule files, and over a single one.

The files are copies of the bundled concat rule with the rule renamed (ConcatNotaskPass0..99), written to a
temporary folder beside one copy of the shared checks they use (`notask_base.yaml`, loaded with them: every
copy's use of them is checked in its own scope). Each measurement is the best of several runs of a full load
(read, YAML, schema, parse, check, compile), after one warm-up run that builds the parser and the catalogue.
Target: 100 files in well under a second.

    python benchmarks/validate_bench.py [--files 100] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from rulepass.compiler.passes import load_ge_rules
from rulepass.rules import bundled_rules_dir


def make_files(folder: Path, count: int) -> list[Path]:
    """`count` copies of the concat rule, each defining its own pass, after the shared checks they use."""
    base = folder / "notask_base.yaml"
    base.write_text((bundled_rules_dir() / base.name).read_text(encoding="utf-8"), encoding="utf-8")
    text = (bundled_rules_dir() / "concat_notask.yaml").read_text(encoding="utf-8")
    assert "name: ConcatNotaskPass" in text
    text = text.replace("before: [PackNotaskPass]", "before: []")  # the pack rule is not among the copies
    out = [base]
    for k in range(count):
        f = folder / f"concat_{k:03d}.yaml"
        f.write_text(text.replace("name: ConcatNotaskPass", f"name: ConcatNotaskPass{k}", 1), encoding="utf-8")
        out.append(f)
    return out


def best_of(paths: list[Path], repeat: int) -> float:
    """The fastest of `repeat` full loads of `paths`, in seconds; every load must be clean."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        rs = load_ge_rules(paths)
        times.append(time.perf_counter() - t0)
        if rs.diagnostics or len(rs.rules) != len(paths) - 1:  # every file but the shared checks' is a rule
            raise SystemExit(
                "benchmark rules did not validate cleanly:\n" + "\n".join(d.render() for d in rs.diagnostics)
            )
    return min(times)


def machine() -> str:
    """One line describing where the figures were measured."""
    cpu = platform.processor() or platform.machine()
    return (
        f"{platform.platform()}; {os.cpu_count()} CPU(s) ({cpu}); "
        f"{platform.python_implementation()} {platform.python_version()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100, help="number of rule files (100)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best counts (5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rulepass-bench-") as tmp:
        files = make_files(Path(tmp), args.files)
        load_ge_rules(files[:2])  # warm-up: the lark parser, the schema validator and the GE catalogue
        one = best_of(files[:2], args.repeat)  # one rule file (and the shared checks it uses)
        many = best_of(files, args.repeat)
    print(f"machine: {machine()}")
    print(f"single file: {one * 1000:.1f} ms ({1 / one:.0f} files/s)")
    rate, per_file = args.files / many, many / args.files * 1000
    print(f"{args.files} files: {many:.3f} s total, {rate:.0f} files/s, {per_file:.2f} ms/file")
    print(f"target (100 files well under 1 s): {'met' if many * 100 / args.files < 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
