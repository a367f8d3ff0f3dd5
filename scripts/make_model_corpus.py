"""Make the corpus of small real models in tests/data/models: ONNX files, seeded inputs, onnxruntime outputs.

    pip install torch torchvision transformers onnxruntime onnxscript   # once, for this script only
    python scripts/make_model_corpus.py [--only NAME,...] [--out tests/data/models]

Each model is built with torch / torchvision / transformers (random weights, fixed seed, tiny widths), exported
with the TorchScript exporter (`dynamo=False`) at opset 17, given a seeded input, and run by onnxruntime: its
outputs are the oracle the tests and `benchmarks/real_models.py` compare rulepass's runtime with. The manifest
(`manifest.json`) names every file, its inputs (shapes as exported, symbolic dims, the sizes to set them to and
the same as ATC's `--input-shape`), its outputs, and the package versions that made it. Nothing here runs at
test time: the tests read the stored files only (onnxruntime and torch are not test dependencies).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "models"
OPSET = 17
SEED = 0
PACKAGES = ("torch", "torchvision", "transformers", "onnx", "onnxruntime", "numpy")


def _torchvision_without_ops() -> None:
    """Let torchvision's (pure Python) model definitions import beside a CPU-only torch.

    torchvision's wheels on PyPI link their C ops (nms, roi_align) against CUDA torch; beside the CPU torch
    wheel those ops do not load, and torchvision's import then fails registering their meta kernels. No model
    here uses them, so that registration module is replaced by an empty one before torchvision is imported
    (transformers imports torchvision too)."""
    import types

    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))


@dataclass
class Spec:
    """One model: how to build it, its inputs (name -> (shape, dtype, high for ints)), dynamic axes."""

    name: str
    build: Callable[[], Any]
    inputs: dict[str, tuple[tuple[int, ...], str, int]]
    outputs: list[str]
    source: str
    about: str
    dynamic: dict[str, dict[int, str]] = field(default_factory=dict)


# ---- the models (torch is imported lazily: only this script needs it) -----------------------------------------
def _yolo_head() -> Any:
    import torch
    from torch import nn

    class Head(nn.Module):
        """A tiny YOLO-style detector: two scales, upsample + Concat of features, Split of box/obj/cls."""

        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.SiLU())
            self.c3 = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU())
            self.c4 = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.SiLU())
            self.a = nn.Conv2d(32, 8, 1)
            self.b = nn.Conv2d(32, 8, 1)
            self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
            self.fuse = nn.Conv2d(16 + 8, 16, 3, 1, 1)
            self.det_small = nn.Conv2d(16, 3 * (4 + 1 + 3), 1)
            self.det_large = nn.Conv2d(16, 3 * (4 + 1 + 3), 1)

        def _decode(self, p: Any) -> Any:
            b, _, h, w = p.shape
            p = p.view(b, 3, 8, h, w).permute(0, 1, 3, 4, 2).reshape(b, -1, 8)
            box, obj, cls = torch.split(p, [4, 1, 3], dim=-1)
            return torch.cat([box * 2.0, obj.sigmoid(), cls.sigmoid()], dim=-1)

        def forward(self, x: Any) -> Any:
            p3 = self.c3(self.stem(x))
            p4 = self.c4(p3)
            csp = torch.cat([self.a(p4), self.b(p4)], dim=1)  # a CSP-style channel concat
            f = self.fuse(torch.cat([p3, self.up(csp)[:, :8]], dim=1))
            large = self.det_large(f)
            small = self.det_small(torch.nn.functional.max_pool2d(f, 2))
            return torch.cat([self._decode(large), self._decode(small)], dim=1)

    return Head()


def _crnn() -> Any:
    from torch import nn

    class CRNN(nn.Module):
        """An OCR-style CNN + bidirectional LSTM + per-step classifier (CTC logits)."""

        def __init__(self) -> None:
            super().__init__()
            self.cnn = nn.Sequential(
                nn.Conv2d(1, 8, 3, 1, 1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(8, 16, 3, 1, 1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                nn.MaxPool2d((2, 1)),
                nn.Conv2d(16, 16, (8, 1)),
            )
            self.rnn = nn.LSTM(16, 16, bidirectional=True, batch_first=False)
            self.fc = nn.Linear(32, 11)

        def forward(self, x: Any) -> Any:
            f = self.cnn(x).squeeze(2).permute(2, 0, 1)  # (T, B, C)
            out, _ = self.rnn(f)
            return self.fc(out).log_softmax(-1)

    return CRNN()


def _gpt2_kv() -> Any:
    from torch import nn

    class Decoder(nn.Module):
        """A 2-layer GPT-style decoder step with its KV cache as explicit inputs and outputs (dynamic lengths)."""

        def __init__(self, vocab: int = 128, d: int = 64, heads: int = 4, layers: int = 2) -> None:
            super().__init__()
            self.heads, self.d = heads, d
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(64, d)
            self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(layers))
            self.proj = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
            self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.mlp = nn.ModuleList(
                nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) for _ in range(layers)
            )
            self.lnf = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids: Any, past_k: Any, past_v: Any) -> Any:
            import torch

            b, t = ids.shape
            past = past_k.shape[3]
            pos = torch.arange(past, past + t, dtype=torch.long).unsqueeze(0)
            x = self.tok(ids) + self.pos(pos)
            ks, vs = [], []
            hd = self.d // self.heads
            for i in range(len(self.qkv)):
                q, k, v = self.qkv[i](self.ln1[i](x)).split(self.d, dim=-1)
                q = q.view(b, t, self.heads, hd).transpose(1, 2)
                k = torch.cat([past_k[i], k.view(b, t, self.heads, hd).transpose(1, 2)], dim=2)
                v = torch.cat([past_v[i], v.view(b, t, self.heads, hd).transpose(1, 2)], dim=2)
                ks.append(k)
                vs.append(v)
                att = (q @ k.transpose(-2, -1)) / (hd**0.5)
                n = k.shape[2]
                mask = torch.ones(t, n, dtype=torch.bool).tril(n - t)
                att = att.masked_fill(~mask, float("-inf")).softmax(-1)
                y = (att @ v).transpose(1, 2).reshape(b, t, self.d)
                x = x + self.proj[i](y)
                x = x + self.mlp[i](self.ln2[i](x))
            return self.head(self.lnf(x)), torch.stack(ks), torch.stack(vs)

    return Decoder()


def _gpt2_hf() -> Any:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=4,
        vocab_size=128,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="eager",
    )
    model = GPT2LMHeadModel(cfg)

    class Wrapped(torch.nn.Module):
        """transformers' GPT-2 (no cache: the exporter cannot trace its Cache objects) with an attention mask."""

        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, ids: Any, mask: Any) -> Any:
            return self.m(input_ids=ids, attention_mask=mask, use_cache=False).logits

    return Wrapped()


def _bert_tiny() -> Any:
    import torch
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    model = BertModel(cfg)

    class Wrapped(torch.nn.Module):
        """transformers' BERT encoder: token ids + attention mask -> hidden states and pooled output."""

        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, ids: Any, mask: Any) -> Any:
            out = self.m(input_ids=ids, attention_mask=mask)
            return out.last_hidden_state, out.pooler_output

    return Wrapped()


def _shape_math() -> Any:
    import torch
    from torch import nn
    from torch.nn import functional as F

    class ShapeMath(nn.Module):
        """Shape arithmetic on the input's own shape: reshape by x.shape, bilinear Resize, GELU (Erf), Pad, Expand."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(4, 8, 3, 1, 1)
            self.lin = nn.Linear(8, 8)

        def forward(self, x: Any) -> Any:
            b, _, h, w = x.shape
            y = self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect"))[:, :, 1:-1, 1:-1]
            y = F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False)
            tokens = y.reshape(b, y.shape[1], -1).transpose(1, 2)  # (b, 4hw, 8)
            tokens = F.gelu(self.lin(tokens))
            pooled = tokens.mean(dim=1, keepdim=True).expand(b, tokens.shape[1], tokens.shape[2])
            out = torch.where(tokens > 0, tokens, pooled)
            return out.reshape(b, 2 * h, 2 * w, -1).permute(0, 3, 1, 2), torch.max(out, dim=1).values

    return ShapeMath()


def _mobilenet_v3() -> Any:
    from torchvision.models import mobilenet_v3_small

    return mobilenet_v3_small(width_mult=0.25, num_classes=10)


def _shufflenet() -> Any:
    from torchvision.models import shufflenet_v2_x0_5

    return shufflenet_v2_x0_5(num_classes=10)


def _resnet_tiny() -> Any:
    from torchvision.models.resnet import BasicBlock, ResNet

    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)
    # the same architecture at 1/8 width: torchvision's ResNet fixes its widths, so rebuild its layers narrower
    from torch import nn

    widths = [8, 16, 32, 64]
    model.conv1 = nn.Conv2d(3, 8, 7, 2, 3, bias=False)
    model.bn1 = nn.BatchNorm2d(8)
    model.inplanes = 8
    model.layer1 = model._make_layer(BasicBlock, widths[0], 1)
    model.layer2 = model._make_layer(BasicBlock, widths[1], 1, stride=2)
    model.layer3 = model._make_layer(BasicBlock, widths[2], 1, stride=2)
    model.layer4 = model._make_layer(BasicBlock, widths[3], 1, stride=2)
    model.fc = nn.Linear(widths[3], 10)
    return model


def _unet_tiny() -> Any:
    import torch
    from torch import nn

    def block(i: int, o: int) -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(i, o, 3, 1, 1), nn.BatchNorm2d(o), nn.ReLU(), nn.Conv2d(o, o, 3, 1, 1), nn.ReLU()
        )

    class UNet(nn.Module):
        """A two-level U-Net: ConvTranspose upsampling and skip Concats along channels."""

        def __init__(self) -> None:
            super().__init__()
            self.e1, self.e2, self.mid = block(3, 8), block(8, 16), block(16, 32)
            self.u2, self.d2 = nn.ConvTranspose2d(32, 16, 2, 2), block(32, 16)
            self.u1, self.d1 = nn.ConvTranspose2d(16, 8, 2, 2), block(16, 8)
            self.out = nn.Conv2d(8, 2, 1)

        def forward(self, x: Any) -> Any:
            e1 = self.e1(x)
            e2 = self.e2(nn.functional.max_pool2d(e1, 2))
            m = self.mid(nn.functional.max_pool2d(e2, 2))
            d2 = self.d2(torch.cat([self.u2(m), e2], dim=1))
            d1 = self.d1(torch.cat([self.u1(d2), e1], dim=1))
            return self.out(d1)

    return UNet()


def _audio_conv1d() -> Any:
    from torch import nn

    class KWS(nn.Module):
        """A keyword-spotting 1-D conv net on raw audio (dynamic length): strided Conv1d, BN, pooling, classifier."""

        def __init__(self) -> None:
            super().__init__()
            layers: list[nn.Module] = [nn.Conv1d(1, 8, 80, 16), nn.BatchNorm1d(8), nn.ReLU(), nn.MaxPool1d(4)]
            for i, o in ((8, 16), (16, 16), (16, 32)):
                layers += [nn.Conv1d(i, o, 3, 1, 1), nn.BatchNorm1d(o), nn.ReLU(), nn.MaxPool1d(2)]
            self.features = nn.Sequential(*layers)
            self.fc = nn.Linear(32, 12)

        def forward(self, x: Any) -> Any:
            return self.fc(self.features(x).mean(dim=-1)).softmax(-1)

    return KWS()


def _branches_tiny() -> Any:
    import torch
    from torch import nn

    class Branches(nn.Module):
        """Inception-style branches on ops every runtime has: a channel Split, per-branch math, a Concat back.

        The one model of the corpus small enough (every weight up to 64 values) to check the harness's pass."""

        def __init__(self) -> None:
            super().__init__()
            self.mix = nn.Conv2d(4, 4, 1)

        def forward(self, x: Any) -> Any:
            a, b = torch.split(torch.relu(self.mix(x)), [1, 3], dim=1)
            y = torch.cat([a * 2.0, b + 1.0, torch.sigmoid(a)], dim=1)
            return y, torch.cat([y, x], dim=1)

    return Branches()


SPECS = [
    Spec(
        "branches_tiny",
        _branches_tiny,
        {"x": ((1, 4, 8, 8), "float32", 0)},
        ["y", "joined"],
        "torch",
        "1x1 conv, channel Split, per-branch elementwise ops, two Concats (weights small enough to be kept)",
    ),
    Spec(
        "yolo_head",
        _yolo_head,
        {"images": ((1, 3, 64, 64), "float32", 0)},
        ["detections"],
        "torch",
        "tiny YOLO-style detector: Concat of branches, Resize, Split into box/obj/cls",
    ),
    Spec(
        "crnn_ocr",
        _crnn,
        {"image": ((1, 1, 32, 64), "float32", 0)},
        ["logits"],
        "torch",
        "OCR CNN + bidirectional LSTM (CTC logits)",
        {"image": {0: "batch", 3: "width"}},
    ),
    Spec(
        "decoder_kv",
        _gpt2_kv,
        {
            "input_ids": ((1, 4), "int64", 128),
            "past_k": ((2, 1, 4, 6, 16), "float32", 0),
            "past_v": ((2, 1, 4, 6, 16), "float32", 0),
        },
        ["logits", "present_k", "present_v"],
        "torch",
        "GPT-style decoder step with a KV cache as inputs/outputs, dynamic batch/sequence/past lengths",
        {
            "input_ids": {0: "batch", 1: "seq"},
            "past_k": {1: "batch", 3: "past"},
            "past_v": {1: "batch", 3: "past"},
        },
    ),
    Spec(
        "gpt2_hf",
        _gpt2_hf,
        {"input_ids": ((1, 8), "int64", 128), "attention_mask": ((1, 8), "int64", 0)},
        ["logits"],
        "transformers",
        "transformers GPT2LMHeadModel (2 layers, 64 wide, vocab 128) with an attention mask",
        {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}},
    ),
    Spec(
        "bert_tiny",
        _bert_tiny,
        {"input_ids": ((2, 8), "int64", 128), "attention_mask": ((2, 8), "int64", 0)},
        ["last_hidden_state", "pooler_output"],
        "transformers",
        "transformers BertModel (2 layers, 32 wide): Gather embeddings, LayerNorm, mask arithmetic, Erf",
        {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}},
    ),
    Spec(
        "shape_math",
        _shape_math,
        {"x": ((1, 4, 8, 8), "float32", 0)},
        ["features", "peak"],
        "torch",
        "shape math on x.shape (Shape/Gather/Concat/Reshape), reflect Pad, bilinear Resize, GELU (Erf), Where, Expand",
        {"x": {0: "batch", 2: "height", 3: "width"}},
    ),
    Spec(
        "mobilenet_v3_small",
        _mobilenet_v3,
        {"input": ((1, 3, 64, 64), "float32", 0)},
        ["logits"],
        "torchvision",
        "torchvision mobilenet_v3_small(width_mult=0.25, num_classes=10): HardSwish, squeeze-excite",
    ),
    Spec(
        "shufflenet_v2",
        _shufflenet,
        {"input": ((1, 3, 64, 64), "float32", 0)},
        ["logits"],
        "torchvision",
        "torchvision shufflenet_v2_x0_5(num_classes=10): channel Split (chunk), Concat, channel shuffle",
    ),
    Spec(
        "resnet_tiny",
        _resnet_tiny,
        {"input": ((1, 3, 64, 64), "float32", 0)},
        ["logits"],
        "torchvision",
        "torchvision ResNet(BasicBlock, [1, 1, 1, 1]) at 1/8 width: residual Adds, GlobalAveragePool, Gemm",
    ),
    Spec(
        "unet_tiny",
        _unet_tiny,
        {"input": ((1, 3, 32, 32), "float32", 0)},
        ["mask"],
        "torch",
        "two-level U-Net: ConvTranspose upsampling, skip Concats",
    ),
    Spec(
        "audio_kws",
        _audio_conv1d,
        {"audio": ((1, 1, 4000), "float32", 0)},
        ["probs"],
        "torch",
        "keyword spotting 1-D conv net on raw audio (dynamic batch and length)",
        {"audio": {0: "batch", 2: "samples"}},
    ),
]


# ---- export, oracle, manifest --------------------------------------------------------------------------------
def _inputs(spec: Spec) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    out: dict[str, np.ndarray] = {}
    for name, (shape, dtype, high) in spec.inputs.items():
        if name == "attention_mask":  # all ones but the last token of the last row when there are two rows
            out[name] = np.ones(shape, np.int64)
            out[name][-1, -1] = 0 if shape[0] > 1 else 1
        elif dtype == "int64":
            out[name] = rng.integers(0, high, size=shape).astype(np.int64)
        else:
            out[name] = rng.standard_normal(shape).astype(np.float32)
    return out


def _export(spec: Spec, path: Path, feeds: dict[str, np.ndarray]) -> None:
    _torchvision_without_ops()
    import torch

    torch.manual_seed(SEED)
    model = spec.build().eval()
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    dynamic = {k: dict(v) for k, v in spec.dynamic.items()}
    with torch.no_grad():
        torch.onnx.export(
            model,
            args,
            str(path),
            input_names=list(spec.inputs),
            output_names=spec.outputs,
            opset_version=OPSET,
            dynamic_axes=dynamic or None,
            dynamo=False,
            do_constant_folding=True,
        )


def _graph_inputs(path: Path) -> list[dict[str, Any]]:
    import onnx

    model = onnx.load(str(path))
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim]
        out.append({"name": vi.name, "dims": dims})
    return out


def make(spec: Spec, out: Path) -> dict[str, Any]:
    """Export one model, store its seeded input and onnxruntime's outputs; its manifest entry."""
    import onnx
    import onnxruntime as ort

    feeds = _inputs(spec)
    path = out / f"{spec.name}.onnx"
    _export(spec, path, feeds)
    onnx.checker.check_model(str(path))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    results = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    np.savez(out / f"{spec.name}.inputs.npz", **feeds)
    np.savez(out / f"{spec.name}.outputs.npz", **dict(zip(names, results, strict=True)))
    inputs = []
    dims: dict[str, int] = {}
    for gi in _graph_inputs(path):
        shape = list(feeds[gi["name"]].shape)
        for d, v in zip(gi["dims"], shape, strict=True):
            if isinstance(d, str):
                dims[d] = v
        inputs.append({"name": gi["name"], "dims": gi["dims"], "shape": shape, "dtype": str(feeds[gi["name"]].dtype)})
    return {
        "name": spec.name,
        "file": path.name,
        "inputs_file": f"{spec.name}.inputs.npz",
        "outputs_file": f"{spec.name}.outputs.npz",
        "source": spec.source,
        "about": spec.about,
        "opset": OPSET,
        "inputs": inputs,
        "outputs": [
            {"name": n, "shape": list(r.shape), "dtype": str(r.dtype)} for n, r in zip(names, results, strict=True)
        ],
        "dims": dims,
        "input_shape": ";".join(f"{i['name']}:{','.join(map(str, i['shape']))}" for i in inputs),
        "bytes": path.stat().st_size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", default="", help="comma-separated model names (default: all)")
    args = parser.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    unknown = only - {s.name for s in SPECS}
    if unknown:
        parser.error(f"unknown model(s): {', '.join(sorted(unknown))}")
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"models": []}
    entries = {m["name"]: m for m in old["models"]}
    for spec in SPECS:
        if only and spec.name not in only:
            continue
        print(f"making {spec.name}", file=sys.stderr, flush=True)
        entries[spec.name] = make(spec, args.out)
    manifest = {
        "about": "Small real models for rulepass's tests and benchmarks, made by scripts/make_model_corpus.py: "
        "random weights (seed 0), tiny widths; the outputs files hold onnxruntime's outputs on the inputs files.",
        "licence": "Generated here from the architectures in torch, torchvision (BSD-3-Clause) and transformers "
        "(Apache-2.0); no pretrained weights: the weights are random. The files are under the project's licence.",
        "seed": SEED,
        "opset": OPSET,
        "exporter": "torch.onnx.export(dynamo=False)",
        "versions": {p: md.version(p) for p in PACKAGES},
        "models": [entries[s.name] for s in SPECS if s.name in entries],
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
