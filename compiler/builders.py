"""The built-in task builders, one per GE kernel library family (spec §6.5), all on one TaskBuilder abstraction.

Each reads only its node and the BuildContext (symbolic addresses), so it can be tested alone on one node.
"""

from __future__ import annotations

from .facts import attr_int, attr_ints, attr_str
from .ir import Node
from .task_registry import BuildContext, CcKernelType, ModelTaskType, TaskBuilder, TaskDef, register_builder


def _kernel(node: Node, ctx: BuildContext, kernel_type: CcKernelType) -> dict[str, object]:
    args = [*ctx.inputs(node), *ctx.outputs(node), *ctx.workspaces(node)]
    return {
        "kernel_name": attr_str(node, "_kernelname", node.name),
        "stub_func": attr_str(node, "_stub_func", f"{node.type}__kernel0"),
        "block_dim": attr_int(node, "_block_dim", 1),
        "args": args,
        "args_size": 8 * len(args),
        "context": {"kernel_type": int(kernel_type), "op_index": node.seq, "args_count": len(args)},
    }


@register_builder("AIcoreEngine", "VectorEngine")
class AiCoreBuilder(TaskBuilder):
    """AI Core and Vector Core: one TE kernel task; args = input, output and workspace addresses."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """A KERNEL task (VECTOR_KERNEL on the vector engine)."""
        t = ModelTaskType.VECTOR_KERNEL if node.op.kernel_lib == "VectorEngine" else ModelTaskType.KERNEL
        return [TaskDef(t, node.name, kernel=_kernel(node, ctx, CcKernelType.TE))]


# GE local ops that launch nothing (hicann/ge local_engine no_op.cc registers the functional ops among them)
GE_LOCAL_NO_TASK = frozenset({
    "NoOp", "PhonyConcat", "PhonySplit", "Data", "RefData", "AippData", "QueueData", "NetOutput", "Const", "Constant",
    "Variable", "Reshape", "Squeeze", "Unsqueeze", "ExpandDims", "Flatten", "Merge", "Bitcast", "ControlTrigger",
    "PartitionedCall", "StatefulPartitionedCall", "If", "Case", "While", "For",
})  # fmt: skip


@register_builder("DNN_VM_GE_LOCAL_OP_STORE")
class GeLocalBuilder(TaskBuilder):
    """GE local ops: most (NoOp, PhonyConcat, Reshape-like, Data, NetOutput, Const) need no task."""

    no_task_types = GE_LOCAL_NO_TASK

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """No task for virtual/host-side ops; a memcpy for anything else that must move data."""
        if node.op.type in self.no_task_types:
            return []
        src, dst = ctx.inputs(node), ctx.outputs(node)
        if src and dst:
            return [
                TaskDef(
                    ModelTaskType.MEMCPY_ASYNC,
                    node.name,
                    memcpy_async={"src": src[0], "dst": dst[0], "kind": "device_to_device"},
                )
            ]
        return []


@register_builder("DNN_VM_RTS_OP_STORE", "DNN_VM_RTS_FFTS_PLUS_OP_STORE")
class RtsBuilder(TaskBuilder):
    """Runtime ops: stream switch (several tasks), stream active, labels, events, memcpy."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """The control tasks of the op type."""
        t = node.op.type
        if t in ("StreamSwitch", "StreamSwitchN"):
            active = attr_ints(node, "active_stream_list")
            tasks = [
                TaskDef(
                    ModelTaskType.STREAM_SWITCH if t == "StreamSwitch" else ModelTaskType.STREAM_SWITCH_N,
                    node.name,
                    stream_switch={
                        "cond": attr_int(node, "switch_condition", 0),
                        "inputs": ctx.inputs(node),
                        "true_stream_id": active[0] if active else -1,
                    },
                )
            ]
            tasks += [
                TaskDef(ModelTaskType.STREAM_ACTIVE, node.name, stream_active={"active_stream_id": s})
                for s in active[1:]
            ]
            return tasks
        if t == "StreamActive":
            return [
                TaskDef(ModelTaskType.STREAM_ACTIVE, node.name, stream_active={"active_stream_id": s})
                for s in attr_ints(node, "active_stream_list")
            ]
        if t == "LabelSet":
            return [TaskDef(ModelTaskType.LABEL_SET, node.name, label_id=attr_int(node, "_label_switch_index", 0))]
        if t in ("LabelGoto", "LabelGotoEx"):
            return [TaskDef(ModelTaskType.LABEL_GOTO, node.name, label_id=attr_int(node, "_label_switch_index", 0))]
        if t in ("LabelSwitch", "LabelSwitchByIndex"):
            return [
                TaskDef(
                    ModelTaskType.STREAM_LABEL_SWITCH_BY_INDEX,
                    node.name,
                    kernel={"args": ctx.inputs(node), "label_list": attr_ints(node, "_label_switch_list")},
                )
            ]
        if t == "Send":
            return [TaskDef(ModelTaskType.EVENT_RECORD, node.name, event_id=attr_int(node, "event_id", 0))]
        if t == "Recv":
            return [TaskDef(ModelTaskType.EVENT_WAIT, node.name, event_id=attr_int(node, "event_id", 0))]
        if t in ("MemcpyAsync", "MemcpyAddrAsync"):
            src, dst = ctx.inputs(node), ctx.outputs(node)
            kind = ModelTaskType.MEMCPY_ASYNC if t == "MemcpyAsync" else ModelTaskType.MEMCPY_ADDR_ASYNC
            return [
                TaskDef(
                    kind,
                    node.name,
                    memcpy_async={
                        "src": src[0] if src else None,
                        "dst": dst[0] if dst else None,
                        "kind": "device_to_device",
                    },
                )
            ]
        raise ValueError(f"the RTS builder has no task for op type '{t}'")


@register_builder("ops_kernel_info_hccl", "ops_kernel_info_hccl_gradtune", "hvd_ops_kernel_info")
class HcclBuilder(TaskBuilder):
    """Collectives: one HCCL task carrying its collective type."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """An HCCL task; `hccl_type` is the op type (e.g. HcomAllGather)."""
        return [
            TaskDef(
                ModelTaskType.HCCL,
                node.name,
                kernel_hccl={
                    "hccl_type": node.type,
                    "op_index": node.seq,
                    "inputs": ctx.inputs(node),
                    "outputs": ctx.outputs(node),
                    "group": attr_str(node, "group", "hccl_world_group"),
                    "rank_size": attr_int(node, "rank_size", 1),
                },
            )
        ]


@register_builder("aicpu_ascend_kernel", "DNN_VM_AICPU_ASCEND")
class AiCpuAscendBuilder(TaskBuilder):
    """AI CPU (Ascend kernels): a kernel task of type AI_CPU."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """A KERNEL task with kernel type AI_CPU."""
        k = _kernel(node, ctx, CcKernelType.AI_CPU)
        k["so_name"] = "libaicpu_kernels.so"
        return [TaskDef(ModelTaskType.KERNEL, node.name, kernel=k)]


@register_builder("aicpu_tf_kernel", "DNN_VM_AICPU")
class AiCpuTfBuilder(TaskBuilder):
    """AI CPU (TensorFlow kernels): a KERNEL_EX task."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """A KERNEL_EX task."""
        args = [*ctx.inputs(node), *ctx.outputs(node)]
        return [
            TaskDef(
                ModelTaskType.KERNEL_EX,
                node.name,
                kernel_ex={"op_index": node.seq, "args": args, "kernel_name": node.type},
            )
        ]


@register_builder("DNN_VM_HOST_CPU_OP_STORE")
class HostCpuBuilder(TaskBuilder):
    """Host CPU ops: a kernel task of type HOST_CPU."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """A KERNEL task with kernel type HOST_CPU."""
        return [TaskDef(ModelTaskType.KERNEL, node.name, kernel=_kernel(node, ctx, CcKernelType.HOST_CPU))]


@register_builder("dvpp_ops_kernel", "dvpp_ops_kernel_info_store")
class DvppBuilder(TaskBuilder):
    """DVPP (image processing) ops: a DVPP task."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """A DVPP task."""
        return [
            TaskDef(
                ModelTaskType.DVPP,
                node.name,
                dvpp_task={"op_index": node.seq, "inputs": ctx.inputs(node), "outputs": ctx.outputs(node)},
            )
        ]


@register_builder("DNN_VM_CUSTOM_OP_STORE")
class CustomBuilder(TaskBuilder):
    """Custom ops: a kernel task of type CUST_AI_CPU."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """A KERNEL task with kernel type CUST_AI_CPU."""
        return [TaskDef(ModelTaskType.KERNEL, node.name, kernel=_kernel(node, ctx, CcKernelType.CUST_AI_CPU))]


@register_builder("DSAEngine")
class DsaBuilder(TaskBuilder):
    """DSA (data streaming accelerator) ops: a DSA task."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """A DSA task."""
        return [
            TaskDef(
                ModelTaskType.DSA,
                node.name,
                dsa_task={"op_index": node.seq, "inputs": ctx.inputs(node), "outputs": ctx.outputs(node)},
            )
        ]


@register_builder("ffts_plus")
class FftsPlusBuilder(TaskBuilder):
    """FFTS+: one task that wraps the tasks of the node's subgraph (filled in by the generator)."""

    def build(self, node: Node, ctx: BuildContext) -> list[TaskDef]:
        """One FFTS_PLUS task; `sub_tasks` holds the subgraph's tasks."""
        mode = attr_str(node, "_ffts_plus_mode", "manual")
        return [
            TaskDef(
                ModelTaskType.FFTS_PLUS, node.name, ffts_plus_task={"op_index": node.seq, "mode": mode, "sub_tasks": []}
            )
        ]
