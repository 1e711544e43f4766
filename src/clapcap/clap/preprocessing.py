"""CLAP input preprocessing: deterministic audio features and caption tokens for ``ClapModel``.

Shared by the ``hf_clap`` encoder backend (:mod:`clapcap.encoders.hf_clap`, which documents
how the feature extractor's randomness is removed), CLAP training and RobustCLAP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clapcap.data.audio import crop_wave
from clapcap.utils.rng import numpy_seed


@dataclass
class ClapPreprocessing:
    """Everything that decides the audio features of a clip."""

    fusion: bool = False
    crop: str = "head"
    fusion_seed: int = 0
    mel_floor_db: float | None = None


def clap_features(feature_extractor: Any, waves: Sequence[np.ndarray], prep: ClapPreprocessing) -> tuple[Any, Any]:
    """Deterministic CLAP input features for a batch of clips.

    Returns:
        ``(input_features, is_longer)``: float32 tensors of shape (B, C, T, F) with C = 1
        (unfused) or 4 (fused), and bool (B, 1).
    """
    import torch

    fe = feature_extractor
    window = int(fe.nb_max_samples)
    if not prep.fusion:
        cropped = [crop_wave(w, window, prep.crop) for w in waves]
        out = fe(cropped, sampling_rate=fe.sampling_rate, truncation="rand_trunc", padding="repeatpad",
                 return_tensors="np")
        feats = out["input_features"]
        longer = np.zeros((len(cropped), 1), dtype=bool)
    else:
        mels = []
        for w in waves:
            with numpy_seed(prep.fusion_seed):
                mels.append(fe([w], sampling_rate=fe.sampling_rate, truncation="fusion", padding="repeatpad",
                               return_tensors="np")["input_features"][0])
        feats = np.stack(mels)
        longer = np.array([[len(w) > window] for w in waves], dtype=bool)
    feats = torch.as_tensor(np.asarray(feats), dtype=torch.float32)
    if prep.mel_floor_db is not None:
        feats = feats.clamp_min(prep.mel_floor_db)
    return feats, torch.as_tensor(longer)


def tokenize(tokenizer: Any, texts: Sequence[str], max_length: int | None = None) -> dict[str, Any]:
    """Tokenize captions for ``ClapModel`` (padded, truncated, no ``token_type_ids``)."""
    max_length = max_length or min(int(getattr(tokenizer, "model_max_length", 77)), 512)
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_length,
                    return_tensors="pt", return_token_type_ids=False)
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
