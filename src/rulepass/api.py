"""The library API for compile scripts: load graphs and rules, run the passes, explain a decision.

Small and typed; every function raises :class:`RulepassError` (with located diagnostics) on bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base.diagnostics import RulepassError, error
from .compiler.graph_file import load_graph as load_graph_file
from .compiler.graph_file import save_graph
from .compiler.ir import ComputeGraph
from .compiler.passes import load_ge_rules
from .compiler.pipeline import (
    CompileResult,
    MemoryResult,
    OptimizeResult,
    Undo,
    compile_graph,
    explain,
    optimize,
    plan_memory,
    undone_decisions,
)
from .dsl.load import RuleSet
from .engine.decisions import Decision

if TYPE_CHECKING:
    from .compiler.memory.assign import MemoryPlan
    from .compiler.runtime.executor import RunResult

__all__ = [
    "CompileResult",
    "ComputeGraph",
    "Decision",
    "MemoryPlan",
    "MemoryResult",
    "OptimizeResult",
    "RuleSet",
    "RulepassError",
    "Undo",
    "compile_graph",
    "explain",
    "load_graph",
    "load_rules",
    "optimize",
    "plan_memory",
    "run_model",
    "save_graph",
    "undone_decisions",
]


def __getattr__(name: str) -> Any:
    """`MemoryPlan`, exported, imported when first asked for (optimize needs no memory stage)."""
    if name == "MemoryPlan":
        from .compiler.memory.assign import MemoryPlan

        return MemoryPlan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_graph(
    path: str | Path, *, onnx_formats: str = "keep", warn: Callable[[str], object] | None = None
) -> ComputeGraph:
    """Load a graph file (YAML/JSON), or import an ONNX model (`.onnx`) with the given format mode."""
    if str(path).lower().endswith(".onnx"):
        from .compiler.onnx_import import import_onnx

        result = import_onnx(path, format_mode=onnx_formats)
        for w in result.warnings:
            (warn or (lambda _w: None))(w)
        return result.graph
    return load_graph_file(path)


def load_rules(paths: Sequence[str | Path] | None = None) -> RuleSet:
    """Load and check rule files or folders (default: the bundled rules); raises on any error."""
    return load_ge_rules(paths).raise_on_error()


def run_model(
    model: dict[str, Any] | CompileResult,
    inputs: dict[str, Any] | None = None,
    *,
    ranks: int = 1,
    seed: int = 0,
    rank_inputs: Sequence[dict[str, Any]] | None = None,
    verify: bool = True,
    max_memory: int | None = None,
) -> RunResult:
    """Execute a compiled model (its JSON object, or a CompileResult) with the numpy reference kernels.

    Inputs by Data node name (missing ones seeded random per rank), weights as their Const nodes carry them
    (seeded random for one that carries none, see compiler/weights.py); outputs per NetOutput input, per rank when
    `ranks` > 1 (collectives run in lock-step). A model needing more than `max_memory` bytes (default: half the
    available memory) is refused before allocating. Needs numpy (`pip install 'rulepass[run]'`).
    """
    try:
        from .compiler.runtime.executor import run_model as _run
    except ImportError as exc:
        raise error("usage", f"running models needs numpy: pip install 'rulepass[run]' ({exc})") from None
    doc = model.model if isinstance(model, CompileResult) else model
    return _run(doc, inputs, ranks=ranks, seed=seed, rank_inputs=rank_inputs, verify=verify, max_memory=max_memory)
