"""How long a rule author waits for each command: whole `rulepass` processes on the small bundled example.

Each case is a fresh process (`python -m rulepass ...`); its CPU time (user + system of the child, from
`os.wait4`) is measured, the cases interleaved round after round so a busy machine slows all alike, and the
median over rounds reported beside its ratio to `python -c pass` measured in the same rounds. "cold" runs with
an empty cache folder (made anew each round), "warm" with the cache filled by an earlier run; bytecode is warm
throughout. Targets (issue 39): `--version` <= 2x Python; `validate` warm <= 0.25 s; `optimize`/`explain` warm
<= 0.35 s. A row that fails prints its stderr and stops the run.

    python benchmarks/cli_latency.py [--rounds 7]      # prints the table
    python benchmarks/run.py --only latency           # stores it in docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "allgather_concat.yaml")
RULES = str(ROOT / "rules")
RP = [sys.executable, "-m", "rulepass"]

# (label, argv, cache state, target CPU seconds or None, target ratio to `python -c pass` or None)
CASES: list[tuple[str, list[str], str, float | None, float | None]] = [
    ("python -c pass", [sys.executable, "-c", "pass"], "-", None, None),
    ("rulepass --version", [*RP, "--version"], "-", None, 2.0),
    ("rulepass catalogue", [*RP, "catalogue"], "-", None, None),
    ("validate rules/ (cold)", [*RP, "validate", RULES], "cold", None, None),
    ("validate rules/ (warm)", [*RP, "validate", RULES], "warm", 0.25, None),
    ("optimize example (cold)", [*RP, "optimize", EXAMPLE], "cold", None, None),
    ("optimize example (warm)", [*RP, "optimize", EXAMPLE], "warm", 0.35, None),
    ("explain example --node (warm)", [*RP, "explain", EXAMPLE, "--node", "concat"], "warm", 0.35, None),
    ("compile example (warm)", [*RP, "compile", EXAMPLE, "--quiet"], "warm", None, None),
]


def cpu_of(argv: list[str], env: dict[str, str]) -> float:
    """The CPU seconds (user + system) of one run of `argv`; exits with its stderr when it fails."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err.decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


def measure(rounds: int) -> dict[str, list[float]]:
    """CPU seconds per case per round, the cases interleaved within each round."""
    times: dict[str, list[float]] = {label: [] for label, *_ in CASES}
    with tempfile.TemporaryDirectory(prefix="rulepass-bench-") as tmp:
        warm = os.path.join(tmp, "warm")
        # warm bytecode: the children may write it (the first runs do), as an installed package has it
        base = {k: v for k, v in os.environ.items() if not k.startswith("RULEPASS_") and k != "PYTHONDONTWRITEBYTECODE"}
        for _, argv, *_ in CASES:  # fill the warm cache and write the bytecode of every module used
            cpu_of(argv, {**base, "RULEPASS_CACHE_DIR": warm})
        for r in range(rounds):
            for label, argv, state, _, _ in CASES:
                cold = os.path.join(tmp, f"cold-{r}-{len(times[label])}")
                env = {**base, "RULEPASS_CACHE_DIR": cold if state == "cold" else warm}
                times[label].append(cpu_of(argv, env))
                shutil.rmtree(cold, ignore_errors=True)
    return times


def bench(rounds: int) -> dict[str, Any]:
    """The medians of `rounds` interleaved rounds, each row with its ratio to Python's and its target."""
    times = measure(rounds)
    python = statistics.median(times["python -c pass"])
    rows = []
    for label, _, _, target_s, target_ratio in CASES:
        m = statistics.median(times[label])
        met = (target_s is None or m <= target_s) and (target_ratio is None or m / python <= target_ratio)
        rows.append(
            {
                "command": label,
                "cpu": m,
                "ratio": m / python,
                "target_s": target_s,
                "target_ratio": target_ratio,
                "met": met,
            }
        )
    return {"rounds": rounds, "python": sys.version.split()[0], "rows": rows}


def render(data: dict[str, Any]) -> str:
    """The markdown table of `bench`'s figures."""
    out = [
        f"Median of {data['rounds']} interleaved rounds (CPython {data['python']}).\n",
        "| command | median CPU (s) | ratio to `python -c pass` | target | met |",
        "|---|---:|---:|---|---|",
    ]
    for r in data["rows"]:
        if r["target_s"] is not None:
            target = f"<= {r['target_s']:.2f} s"
        elif r["target_ratio"] is not None:
            target = f"<= {r['target_ratio']:.0f}x"
        else:
            target = ""
        met = ("yes" if r["met"] else "**no**") if target else ""
        out.append(f"| {r['command']} | {r['cpu']:.3f} | {r['ratio']:.2f} | {target} | {met} |")
    return "\n".join(out)


def main() -> None:
    """Measure and print the table (`benchmarks/run.py --only latency` stores it in docs/benchmarks.md)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    print(render(bench(args.rounds)))


if __name__ == "__main__":
    main()
