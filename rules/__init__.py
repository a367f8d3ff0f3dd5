"""The bundled rule set: GE's no-task optimizations and engine placement as rule files, with their fixtures."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def bundled_rules_dir() -> Path:
    """The folder holding the bundled rule files (and their `fixtures/`)."""
    return Path(str(resources.files("rulepass.rules")))
