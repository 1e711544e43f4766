"""The one factory of the pretrained encoders, :func:`create_pretrained_encoder`.

Backends are imported inside it: each pulls in torch and its own package.
"""

from __future__ import annotations

from clapcap.encoders.base import AudioEncoder
from clapcap.encoders.pretrained_config import PretrainedEncoderConfig


def create_pretrained_encoder(cfg: PretrainedEncoderConfig) -> AudioEncoder:
    """Build the encoder ``cfg`` describes (an :class:`~clapcap.encoders.base.AudioEncoder` that
    also has ``embed_audio_frames``).

    Raises:
        MissingDependencyError: when the backend's PyPI package is not installed (names
            ``make setup`` and the pip line).
        ValueError: on an unknown backend.
    """
    if cfg.backend == "aisfx":
        from clapcap.encoders.sfx import AisfxEncoder

        return AisfxEncoder(cfg)
    if cfg.backend == "whisper_ct2":
        from clapcap.encoders.whisper import WhisperCt2Encoder

        return WhisperCt2Encoder(cfg)
    if cfg.backend == "torchcrepe":
        from clapcap.encoders.crepe import CrepeEncoder

        return CrepeEncoder(cfg)
    raise ValueError(f"unknown pretrained encoder backend {cfg.backend!r}; expected aisfx, whisper_ct2 or torchcrepe")


def weights_digest(cfg: PretrainedEncoderConfig) -> dict[str, str]:
    """What identifies the weights ``cfg`` loads, by content: the package version and the SHA-256 of
    its checkpoint file (for Whisper, of the CTranslate2 ``model.bin`` the cache is converted
    from, and the converter's version). No path.

    Raises:
        MissingDependencyError: when the backend's package is not installed.
    """
    from clapcap.pretrained.assets import package_dir, package_version
    from clapcap.utils.io import sha256_file

    if cfg.backend == "aisfx":
        module, rel = "aisfx", "models/checkpoint.pth"
    elif cfg.backend == "torchcrepe":
        module, rel = "torchcrepe", f"assets/{cfg.crepe_model}.pth"
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
