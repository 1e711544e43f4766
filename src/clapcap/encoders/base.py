"""The encoder interface and its config dataclass (the factory is :mod:`clapcap.encoders.factory`).

Every backend turns mono float32 waveforms at ``encoder.sample_rate`` into one embedding
per clip, and (for CLAP-style encoders) captions into embeddings in the same space.
This module imports no backend, so every backend can import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

Backend = Literal["hf_clap", "laion_clap", "hf_frames", "logmel_stats"]


@dataclass
class EncoderConfig:
    """One encoder: which backend, which weights, which preprocessing.

    Attributes:
        name: label used in dump file names and reports.
        backend: ``hf_clap`` (transformers ``ClapModel``), ``laion_clap`` (``CLAP_Module``)
            or ``hf_frames`` (any HF audio encoder, frame-level output, audio only).
        checkpoint: HF folder or hub id (``hf_clap``/``hf_frames``); a laion ``.pt`` file
            (``laion_clap``; empty = random weights). Empty for ``hf_clap``/``hf_frames``
            builds a tiny random model from ``tiny_seed`` (tests, smoke runs).
        enable_fusion: laion_clap: build the fusion model; hf_clap: must match the checkpoint.
        crop: how a clip longer than the model's window is cut, deterministically
            (``head`` = first window, ``center`` = middle window).
        mel_floor_db: clamp log-mel features from below (dB); ``None`` = the value saved
            with the checkpoint (``clapcap_encoder.json``), else no clamp.
        fusion_seed: seed of the fusion crops of clips longer than the window (fused models).
        batch_size: clips or captions per forward pass.
        device: the torch device the encoder runs on. Not a ``params.yaml`` key: the steps
            set it from the ``compute`` section (:meth:`with_device`), so that one setting
            decides every model's device (docs/compute.md). It is part of a dump's meta and
            signature, so a CUDA dump is never taken for a CPU one.
        hf_home: laion_clap only: offline HF cache folder (built when missing, see
            :mod:`clapcap.encoders.hf_cache`); empty = the environment's.
        tiny_seed: seed of the random tiny model when ``checkpoint`` is empty.
    """

    name: str = "default_clap"
    backend: Backend = "hf_clap"
    checkpoint: str = ""
    enable_fusion: bool = False
    crop: Literal["head", "center"] = "head"
    mel_floor_db: float | None = None
    fusion_seed: int = 0
    batch_size: int = 16
    device: str = field(default="cpu", init=False)
    hf_home: str = ""
    tiny_seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_device(self, device: str) -> EncoderConfig:
        """A copy of this config that runs on ``device`` (a resolved :class:`~clapcap.compute.Compute` device)."""
        out = replace(self)
        out.device = device
        return out


@runtime_checkable
class AudioEncoder(Protocol):
    """Audio-only encoder (frame-level backends implement this)."""

    sample_rate: int

    def embed_audio(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """Return float32 (N, D) clip embeddings (not normalised)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Checkpoint, pipeline and preprocessing, for the dump's meta."""
        ...


@runtime_checkable
class AudioTextEncoder(AudioEncoder, Protocol):
    """CLAP-style encoder: audio and text in one embedding space."""

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 (N, D) caption embeddings (not normalised)."""
        ...


def check_waves(waves: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Validate a batch of waveforms at the encoder boundary.

    Raises:
        ValueError: naming the first item that is not a finite non-empty 1-D array.
    """
    if isinstance(waves, np.ndarray) and waves.ndim == 1:
        raise ValueError("expected a sequence of 1-D waveforms, found a single 1-D array")
    out = []
    for i, w in enumerate(waves):
        arr = np.asarray(w, dtype=np.float32)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"waveform {i}: expected a non-empty 1-D array, found shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"waveform {i}: contains NaN or infinite samples")
        out.append(arr)
    return out


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate a batch of captions. Raises ValueError naming the first non-string."""
    if isinstance(texts, str):
        raise ValueError("expected list[str], found a single str")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"caption {i}: expected str, found {type(t).__name__}")
    return list(texts)
