"""Large real-like memory-planning traces, made at benchmark time (not committed: they are big).

Two sources, both written as ``id,lower,upper,size`` CSV (the format ``read_csv`` reads, upper exclusive):

* ``compiled`` — the memory-plan inputs of real compiles: the synthetic graphs of ``benchmarks/synthetic.py``
  (and the example graphs) are compiled, and the buffers ``assign_memory`` hands to the planner for the
  feature-map arena are captured on the way (the planner is wrapped for the duration of the compile).
* ``corpus`` — the same for the real models of ``tests/data/models`` (imported from ONNX, ``keep`` formats, with
  the manifest's sizes of their symbolic dims), one trace per model.
* ``training`` — a training step: each layer's forward ops produce activations that the backward pass reads
  back, so they live from their forward step to their layer's backward step (nested, long-lived and all
  overlapping at the peak, where forward meets backward); plus short-lived temporaries and workspaces, and
  weight gradients that live from their backward step to the optimizer step at the end.

Usage: ``python benchmarks/memplan_traces.py OUT_DIR [--nodes 10000 100000] [--training 60000 1000000]``.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rulepass.compiler.memory.planner import Buffer

sys.path.insert(0, str(Path(__file__).resolve().parent))

TRAINING_SEED = 37


def training(n: int, seed: int = TRAINING_SEED, keep: float = 0.55) -> list[Buffer]:
    """A seeded training-step trace of about ``n`` buffers (see the module docstring); ``keep`` is the share of
    forward outputs saved for the backward pass (the long-lived, overlapping ones)."""
    rng = random.Random(seed)
    per_layer = 23
    layers = max(1, n // per_layer)
    out: list[Buffer] = []
    t = 0
    saved: list[list[tuple[int, int]]] = []  # per layer: (first step, size) of the activations kept for backward
    for layer in range(layers):
        width = rng.choice((1, 1, 2, 4))  # a layer's scale: attention-like layers hold bigger tensors
        kept: list[tuple[int, int]] = []
        for _ in range(10):
            size = _size(rng, width)
            if rng.random() < keep:
                kept.append((t, size))  # saved for the backward pass
            else:
                out.append(Buffer(f"f{layer}_{len(out)}", t, t + rng.randrange(1, 4), size))
            if rng.random() < 0.3:
                out.append(Buffer(f"w{layer}_{len(out)}", t, t, _size(rng, width)))  # a kernel's workspace
            t += 1
        saved.append(kept)
    optimizer = t + layers * 10 + 2
    for layer in reversed(range(layers)):
        kept = saved[layer]
        for k, (first, size) in enumerate(kept):
            out.append(Buffer(f"a{layer}_{k}", first, t + k, size))
        for _ in range(10):
            size = _size(rng, 1)
            if rng.random() < 0.2:
                out.append(Buffer(f"g{layer}_{len(out)}", t, optimizer, size))  # a weight gradient
            else:
                out.append(Buffer(f"d{layer}_{len(out)}", t, t + rng.randrange(1, 3), size))
            t += 1
    return out


def _size(rng: random.Random, width: int) -> int:
    """A tensor size in bytes, 512-aligned, log-uniform between 4 KiB and 4 MiB times ``width``."""
    return (int(2 ** rng.uniform(12, 22)) * width + 511) // 512 * 512


@contextmanager
def captured() -> Iterator[list[list[Buffer]]]:
    """Record the buffer lists the memory assignment hands to the planner while the block runs."""
    from rulepass.compiler.memory import assign

    seen: list[list[Buffer]] = []
    original: Callable[..., Any] = assign.plan

    def spy(buffers: Sequence[Buffer], **kwargs: Any) -> Any:
        seen.append(list(buffers))
        return original(buffers, **kwargs)

    assign.plan = spy  # type: ignore[assignment]
    try:
        yield seen
    finally:
        assign.plan = original  # type: ignore[assignment]


def compiled(workload: str, nodes: int) -> list[Buffer]:
    """The largest buffer list the planner gets when the ``workload`` graph of ``nodes`` nodes is compiled."""
    from synthetic import generate

    from rulepass.api import compile_graph

    with captured() as seen:
        compile_graph(generate(workload, nodes), verify=False)
    return max(seen, key=len)


def corpus_models() -> list[str]:
    """The names of the corpus models (``tests/data/models/manifest.json``)."""
    import real_models

    return [e["name"] for e in real_models.entries()]


def corpus(name: str) -> list[Buffer]:
    """The largest buffer list the planner gets when the corpus model ``name`` is imported and compiled."""
    import real_models

    from rulepass.api import compile_graph

    (entry,) = real_models.entries([name])
    graph = real_models.import_model(entry, "keep")
    with captured() as seen:
        compile_graph(graph, verify=False)
    return max(seen, key=len)


def write_csv(buffers: Sequence[Buffer], path: Path) -> Path:
    """Write ``buffers`` as ``id,lower,upper,size`` rows (upper exclusive); alignment must be a size multiple."""
    lines = ["id,lower,upper,size"]
    lines += [f"{b.id},{b.first},{b.last + 1},{b.size}" for b in buffers]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    """Write the traces into OUT_DIR and print one line per file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--workloads", nargs="*", default=["llm", "split", "cnn"])
    parser.add_argument("--training", type=int, nargs="*", default=[60_000, 1_000_000])
    parser.add_argument("--corpus", action="store_true", help="also the corpus models' traces")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for n in args.training:
        path = write_csv(training(n), args.out / f"training_{n}.csv")
        print(path)
    for workload in args.workloads:
        for nodes in args.nodes:
            path = write_csv(compiled(workload, nodes), args.out / f"compiled_{workload}_{nodes}.csv")
            print(path)
    for name in corpus_models() if args.corpus else []:
        print(write_csv(corpus(name), args.out / f"corpus_{name}.csv"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
