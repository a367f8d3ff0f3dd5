"""Execute compiled models: arenas, tasks stream by stream, reference kernels (RT1/RT2 semantics).

Needs numpy (the `run` extra): `run_model` executes a model file's JSON object at its planned addresses,
`evaluate_graph` evaluates a graph directly as the reference, `kernels` holds the numpy reference kernels.
"""

from .executor import ExecutedTask, RunResult, checksum, evaluate_graph, model_rank_size, run_model
from .kernels import has_kernel, kernel_for, register_collective, register_kernel, registered_kernels

__all__ = [
    "ExecutedTask",
    "RunResult",
    "checksum",
    "evaluate_graph",
    "has_kernel",
    "kernel_for",
    "model_rank_size",
    "register_collective",
    "register_kernel",
    "registered_kernels",
    "run_model",
]
