"""tower_clap: the tower CLAP (:mod:`clapcap.clap.towers`: YAMNet and all-MiniLM-L6-v2 with
trained heads) as an audio-text encoder, so ``clapcap retrieval embed --backend tower_clap
--checkpoint models/real_clap/model`` writes the same dumps as any CLAP, for every stage that
reads dumps (evaluation, parity, identity).

Audio is embedded at 16 kHz exactly as the heads were trained (:func:`clapcap.clap.towers.yamnet_features`:
YAMNet's clip embedding, the mean over its 0.96-s patches); embeddings are the heads' unit-length outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from clapcap.encoders.base import EncoderConfig, check_texts, check_waves
from clapcap.errors import InputError


class TowerClapEncoder:
    """The heads in ``cfg.checkpoint`` (a folder :func:`~clapcap.clap.towers.save_tower_clap` wrote)."""

    sample_rate = 16000

    def __init__(self, cfg: EncoderConfig) -> None:
        from clapcap.clap.towers import TowerClap

        if not cfg.checkpoint:
            raise InputError("tower_clap: --checkpoint names the model folder (models/real_clap/model); "
                             "there is no random tower CLAP")
        self.cfg = cfg
        self.model = TowerClap(cfg.checkpoint)

    def embed_audio(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        return self.model.audio_embeds(check_waves(waves)).astype(np.float32)

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.text_embeds(check_texts(texts)).astype(np.float32)

    def describe(self) -> dict[str, Any]:
        config = self.model.config
        return {"pipeline": "tower_clap", "checkpoint": self.cfg.checkpoint, "towers": config["towers"],
                "heads": {k: config[k] for k in ("projection_dim", "hidden_dim")},
                "preprocessing": {"sample_rate": self.sample_rate,
                                  "audio": "YAMNet clip embedding: mean over 0.96-s patches (zero-padded to one)",
                                  "text": "all-MiniLM-L6-v2 mean pooling, unit length"}}
