"""Example graphs of the seed's scenarios, shipped so the commands have bundled defaults."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_EXAMPLE = "allgather_concat.yaml"


def example_path(name: str = DEFAULT_EXAMPLE) -> Path:
    """The path of a bundled example graph."""
    return Path(str(resources.files("rulepass.examples").joinpath(name)))
