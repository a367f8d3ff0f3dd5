"""How many op types of the default ONNX domain the runtime can execute: with the hand-written kernels alone (as
before onnx.reference was used) and now. Run: python benchmarks/onnx_op_coverage.py [OPSET ...]"""

from __future__ import annotations

import sys

import onnx
from rulepass.compiler.onnx_import import OP_MAP
from rulepass.compiler.runtime import has_kernel
from rulepass.compiler.runtime.onnx_ops import CONTROL_FLOW, onnx_op_types


def main(argv: list[str]) -> None:
    """Print, per opset, the op types defined, runnable by hand-written kernels, and runnable now."""
    for arg in argv or [str(onnx.defs.onnx_opset_version())]:
        v = int(arg)
        ops: set[str] = set()
        for s in onnx.defs.get_all_schemas_with_history():
            if s.domain in ("", "ai.onnx") and s.since_version <= v and not onnx.defs.get_schema(s.name, v).deprecated:
                ops.add(s.name)
        before = {o for o in ops if o not in CONTROL_FLOW and has_kernel(OP_MAP.get(o, o))}
        now = (before | set(onnx_op_types(v)) | CONTROL_FLOW) & ops
        print(
            f"opset {v} (onnx {onnx.__version__}): {len(ops)} op types; hand-written kernels alone {len(before)}; ",
            end="",
        )
        print(f"now {len(now)}; not runnable: {', '.join(sorted(ops - now)) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
