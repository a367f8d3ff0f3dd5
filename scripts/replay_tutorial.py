#!/usr/bin/env python3
"""Replay docs/tutorial.md as a reader would, and check (or rewrite) every output it shows.

    python scripts/replay_tutorial.py            # rewrite the tutorial's ```text blocks with what the commands print
    python scripts/replay_tutorial.py --check    # exit 1, showing the differences, when an output shown is stale

The tutorial is a sequence of fenced blocks, read in order in a fresh temporary folder:

* ```sh: run with bash (in `concat-tutorial/` once the first block has made it); stdout and stderr together,
  with the bundled rules' folder written as the tutorial writes it (SHOWN_RULES). A ```text block right after it
  is that output.
* ```yaml: what the sentence before it says: `Save this as `F`` / `Create `F``: written to F; `update their
  expectations in `F``: F's `expect:` section replaced by it; `An excerpt of `F``: every piece between `...`
  lines must occur in F; `defined at line N of `F``: it must be the text of the project's file F from line N on.
* ```diff: applied (its `-` lines replaced by its `+` lines) to the file the sentence before it names.
* a sentence `Fix the typo (`A` → `B`)`: A replaced by B in the file the last diff edited.

A block the replay does not know how to read is an error, so the tutorial cannot gain an unchecked example.
tests/test_docs.py runs the check.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TUTORIAL = REPO / "docs" / "tutorial.md"
SHOWN_RULES = ".venv/lib/python3.11/site-packages/rulepass/rules"  # how the tutorial writes the bundled rules' folder
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
_FILE = r"`([^`]+)`"


@dataclass
class Block:
    lang: str
    body: str
    start: int  # offsets of the body in the tutorial's text
    end: int
    before: str  # the prose since the previous block


def blocks(text: str) -> list[Block]:
    """The fenced blocks of `text`, in order, each with the prose before it."""
    out, last = [], 0
    for m in _BLOCK.finditer(text):
        out.append(Block(m.group(1), m.group(2), m.start(2), m.end(2), text[last : m.start()]))
        last = m.end()
    return out


class Replay:
    """The reader's folder and what the last commands printed."""

    def __init__(self, root: Path, rules_dir: str) -> None:
        self.root = root
        self.rules_dir = rules_dir
        self.edited: Path | None = None

    @property
    def cwd(self) -> Path:
        work = self.root / "concat-tutorial"
        return work if work.is_dir() else self.root

    def path(self, name: str) -> Path:
        return self.cwd / name

    def run(self, script: str) -> str:
        bindir = os.path.dirname(sys.executable)  # the `rulepass` and `python` of this installation
        env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "COLUMNS": "200"}
        env.pop("RULEPASS_DEBUG", None)
        proc = subprocess.run(
            ["bash", "-c", script],
            cwd=self.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
            timeout=300,
        )
        return proc.stdout.replace(self.rules_dir, SHOWN_RULES)

    def yaml(self, b: Block, problems: list[str]) -> None:
        intent = b.before.strip().splitlines()[-1] if b.before.strip() else ""
        prose = " ".join(b.before.split())
        if saved := re.findall(rf"(?:Save this as|Create) {_FILE}", prose):
            target = self.path(saved[-1])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.body, encoding="utf-8")
        elif m := re.search(rf"update their expectations in {_FILE}:$", prose):
            target = self.path(m.group(1))
            text = target.read_text(encoding="utf-8")
            at = text.find("\nexpect:\n")
            if at < 0 or not b.body.startswith("expect:\n"):
                problems.append(f"cannot replace the expectations of {m.group(1)} with the block at {intent!r}")
                return
            target.write_text(text[: at + 1] + b.body, encoding="utf-8")
        elif m := re.search(rf"An excerpt of {_FILE}:$", prose):
            if not self.path(m.group(1)).is_file():
                problems.append(f"{m.group(1)} was not written")
                return
            text = self.path(m.group(1)).read_text(encoding="utf-8")
            for piece in re.split(r"^\.\.\.\n", b.body, flags=re.M):
                if piece not in text:
                    problems.append(f"the excerpt of {m.group(1)} is not in it:\n{piece}")
        elif m := re.search(rf"defined at line (\d+) of {_FILE}:$", prose):
            lines = (REPO / m.group(2)).read_text(encoding="utf-8").splitlines(keepends=True)
            line = int(m.group(1))
            if not "".join(lines[line - 1 :]).startswith(b.body):
                found = [i + 1 for i in range(len(lines)) if "".join(lines[i:]).startswith(b.body)]
                problems.append(f"the rule excerpt is not at line {line} of {m.group(2)} (at {found})")
        else:
            problems.append(f"a yaml block the replay cannot read, after: {intent!r}")

    def diff(self, b: Block, problems: list[str]) -> None:
        names = re.findall(_FILE, " ".join(b.before.split()))
        target = next((self.path(n) for n in reversed(names) if self.path(n).is_file()), None)
        if target is None:
            problems.append(f"a diff block with no file to apply it to: {names}")
            return
        old = "".join(line[1:] + "\n" for line in b.body.splitlines() if line.startswith("-"))
        new = "".join(line[1:] + "\n" for line in b.body.splitlines() if line.startswith("+"))
        text = target.read_text(encoding="utf-8")
        if text.count(old) != 1:
            problems.append(f"the diff's old lines are not once in {target.name}")
            return
        target.write_text(text.replace(old, new), encoding="utf-8")
        self.edited = target

    def prose(self, text: str, problems: list[str]) -> None:
        for a, b in re.findall(r"Fix the typo \(`([^`]+)` → `([^`]+)`\)", text):
            if self.edited is None or a not in self.edited.read_text(encoding="utf-8"):
                problems.append(f"no edited file holds the typo {a!r}")
                continue
            self.edited.write_text(self.edited.read_text(encoding="utf-8").replace(a, b), encoding="utf-8")


def replay(text: str) -> tuple[dict[int, str], list[str]]:
    """Replay the tutorial `text`: (the output each ```text block must show, by its index; problems found)."""
    from rulepass.rules import bundled_rules_dir

    outputs: dict[int, str] = {}
    problems: list[str] = []
    bs = blocks(text)
    with tempfile.TemporaryDirectory(prefix="rulepass-tutorial-") as tmp:
        r = Replay(Path(tmp), str(bundled_rules_dir()))
        printed: str | None = None
        for i, b in enumerate(bs):
            r.prose(b.before, problems)
            if b.lang == "sh":
                printed = r.run(b.body)
                continue
            if b.lang == "text":
                if printed is None:
                    problems.append(f"a text block with no command before it: {b.body[:60]!r}")
                else:
                    outputs[i] = printed
                printed = None
                continue
            printed = None
            if b.lang == "yaml":
                r.yaml(b, problems)
            elif b.lang == "diff":
                r.diff(b, problems)
            else:
                problems.append(f"a ```{b.lang} block the replay cannot read")
    return outputs, problems


def rewritten(text: str, outputs: dict[int, str]) -> str:
    """`text` with every ```text block replaced by its output."""
    out, last = [], 0
    for i, b in enumerate(blocks(text)):
        if i in outputs:
            out += [text[last : b.start], outputs[i]]
            last = b.end
    return "".join(out) + text[last:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when an output shown is stale")
    args = parser.parse_args(argv)
    text = TUTORIAL.read_text(encoding="utf-8")
    outputs, problems = replay(text)
    for p in problems:
        print(f"docs/tutorial.md: {p}", file=sys.stderr)
    new = rewritten(text, outputs)
    if args.check:
        if new != text:
            sys.stderr.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), "shown", "printed"))
            return 1
        return 1 if problems else 0
    TUTORIAL.write_text(new, encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
