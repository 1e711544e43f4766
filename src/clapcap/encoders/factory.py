"""The one encoder factory, :func:`create_encoder` (kept apart from :mod:`.base`, which every
backend imports, so that no import circle runs through it).

Backends are imported inside :func:`create_encoder`: each pulls in torch, transformers or
laion_clap, and a caller of one backend should not pay for the others.
"""

from __future__ import annotations

from clapcap.encoders.base import AudioEncoder, EncoderConfig
from clapcap.encoders.frames import FrameEncoder
from clapcap.encoders.hf_clap import HFClapEncoder
from clapcap.encoders.laion import LaionClapEncoder
from clapcap.encoders.logmel import LogMelStatsEncoder


def create_encoder(cfg: EncoderConfig) -> AudioEncoder:
    """Build the encoder that ``cfg`` describes.

    Returns:
        An :class:`AudioTextEncoder` (``hf_clap``, ``laion_clap``) or an
        :class:`AudioEncoder` (``hf_frames``).

    Raises:
        ValueError: on an unknown backend; backend-specific errors on bad checkpoints.
    """
    if cfg.backend == "hf_clap":

        return HFClapEncoder.from_config(cfg)
    if cfg.backend == "laion_clap":

        return LaionClapEncoder.from_config(cfg)
    if cfg.backend == "hf_frames":

        return FrameEncoder.from_config(cfg)
    if cfg.backend == "logmel_stats":

        return LogMelStatsEncoder.from_config(cfg)
    raise ValueError(f"unknown encoder backend {cfg.backend!r}; "
                     "expected hf_clap, laion_clap, hf_frames or logmel_stats")
