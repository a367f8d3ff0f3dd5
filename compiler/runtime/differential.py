"""Differential check: a compiled model run at its planned addresses against its graph evaluated directly.

The direct evaluation (:func:`evaluate_graph`) has no memory plan and computes virtual ops as their op, so any
difference is the compiler's doing (a zero-copy layout, a reused block, a missing event). Both runs record what
every kernel input read; the first difference in topological order names the tensor and its reader, which is
usually one step from the cause (e.g. the consumer of an unsound zero-copy concat reads the concat's output).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...base.yaml_source import load_text
from ..graph_file import graph_from_doc
from .executor import RunResult, evaluate_graph, run_model
from .kernels import Array

__all__ = ["CheckReport", "Difference", "check_model"]


@dataclass(frozen=True)
class Difference:
    """The first tensor whose bytes differ: the producer anchor, who read it, and how it differs."""

    tensor: str
    reader: str
    detail: str

    def __str__(self) -> str:
        return f"tensor {self.tensor} differs as read by {self.reader}: {self.detail}"


@dataclass
class CheckReport:
    """What was compared, the first difference (None: equal bit for bit), and the model's run."""

    compared: int
    difference: Difference | None
    run: RunResult


def _differs(a: Array, b: Array) -> str | None:
    """Why two arrays are not the same bits (None when they are)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype}{list(a.shape)} in the model, {b.dtype}{list(b.shape)} directly"
    x, y = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if np.array_equal(x.view(np.uint8), y.view(np.uint8)):
        return None
    width = x.dtype.itemsize
    flat_x, flat_y = x.reshape(-1), y.reshape(-1)
    per_element = (flat_x.view(np.uint8).reshape(-1, width) != flat_y.view(np.uint8).reshape(-1, width)).any(axis=1)
    bad = np.flatnonzero(per_element)
    if bad.size == 0:
        return "the bytes differ"
    k = int(bad[0])
    at = [int(i) for i in np.unravel_index(k, x.shape)] if x.shape else []
    return (
        f"{bad.size} of {flat_x.size} element(s) differ; first at {at}: {flat_x[k].item()!r} in the model, "
        f"{flat_y[k].item()!r} directly"
    )


def check_model(
    model: Mapping[str, Any],
    inputs: Mapping[str, Any] | None = None,
    *,
    ranks: int = 1,
    seed: int = 0,
    rank_inputs: Sequence[Mapping[str, Any]] | None = None,
    verify: bool = True,
    max_memory: int | None = None,
) -> CheckReport:
    """Run `model` and evaluate its graph directly on the same seeded inputs; compare every kernel input (rank 0)
    and every output (all ranks) bit for bit, in topological order. `max_memory` bounds the run (see run_model)."""
    ran_reads: dict[str, Array] = {}
    ran = run_model(
        model,
        inputs,
        ranks=ranks,
        seed=seed,
        rank_inputs=rank_inputs,
        verify=verify,
        reads=ran_reads,
        max_memory=max_memory,
    )
    name = str(model["model_def"]["name"])
    graph = graph_from_doc(load_text(json.dumps(model["graph"]), "<model graph>"), name)
    direct_reads: dict[str, Array] = {}
    direct = evaluate_graph(graph, inputs, seed=seed, ranks=ranks, rank_inputs=rank_inputs, reads=direct_reads)
    compared = 0
    for node in graph.topological_order():
        for i, peer in enumerate(node.in_peers):
            key = f"{node.name}:{i}"
            if peer is None or key not in ran_reads or key not in direct_reads:
                continue
            compared += 1
            why = _differs(ran_reads[key], direct_reads[key])
            if why is not None:
                reader = f"node '{node.name}' ({node.type}) input {i}"
                return CheckReport(compared, Difference(f"{peer.node.name}:{peer.index}", reader, why), ran)
    for r, (mine, theirs) in enumerate(zip(ran.per_rank, direct.per_rank, strict=True)):
        for out_name, arr in mine.items():
            compared += 1
            why = _differs(arr, theirs[out_name])
            if why is not None:
                where = f"model output {out_name}" + (f" on rank {r}" if ranks > 1 else "")
                return CheckReport(compared, Difference(ran.sources[out_name], where, why), ran)
    return CheckReport(compared, None, ran)
