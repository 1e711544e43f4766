"""Load a dataset split's audio and cache its CLAP input features once (for training).

The cache is an ``.npz`` holding ``features`` float16 (N, C, T, F), ``is_longer`` bool
(N, 1), ``clip_ids`` and, per caption column, a JSON list of caption lists. It is keyed by
a signature of the feature extractor, the preprocessing and the dataset's content
(:func:`dataset_fingerprint`: never a path or an mtime); a cache with another signature is
recomputed. RobustCLAP fine-tuning reuses it with ``caption_columns`` that include
``paraphrases_v1`` / ``paraphrases_v2``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.clap.preprocessing import ClapPreprocessing, clap_features
from clapcap.data.audio import load_audio
from clapcap.data.manifest import resolve_audio_path
from clapcap.data.prepare import dataset_fingerprint, load_dataset
from clapcap.utils.io import atomic_path, sha256_json

logger = logging.getLogger(__name__)


@dataclass
class FeatureCache:
    """Cached features of one split: rows align with ``clip_ids``."""

    features: np.ndarray  # (N, C, T, F) float16
    is_longer: np.ndarray  # (N, 1) bool
    clip_ids: list[str]
    captions: dict[str, list[list[str]]]  # column -> per-clip caption list

    def __len__(self) -> int:
        return len(self.clip_ids)


def iter_split_audio(dataset_dir: str | Path, split: str, sample_rate: int,
                     *, progress: bool = True) -> Iterator[tuple[dict[str, Any], np.ndarray]]:
    """Yield ``(manifest row as dict, mono float32 wave at sample_rate)`` for a split.

    Raises:
        ValueError: when the split has no clips.
        AudioError: naming the file when a clip cannot be decoded.
    """
    from tqdm.auto import tqdm


    ds = load_dataset(dataset_dir)
    df = ds.split(split) if split != "all" else ds.manifest
    if df.empty:
        raise ValueError(f"{dataset_dir}: split {split!r} has no clips")
    for row in tqdm(df.to_dict("records"), desc=f"audio {split}", disable=not progress, leave=False):
        wave, _ = load_audio(resolve_audio_path(ds.root, row["audio_path"]), sample_rate)
        yield row, wave


def _signature(feature_extractor: Any, prep: ClapPreprocessing, dataset_dir: Path, split: str,
               columns: Sequence[str]) -> str:
    fe = {k: v for k, v in feature_extractor.to_dict().items() if not k.startswith("mel_filters")}
    return sha256_json([fe, asdict(prep), dataset_fingerprint(dataset_dir), split, list(columns)])


def cache_features(feature_extractor: Any, prep: ClapPreprocessing, dataset_dir: str | Path, split: str,
                   cache_path: str | Path, *, caption_columns: Sequence[str] = ("captions",),
                   batch_size: int = 64, progress: bool = True) -> FeatureCache:
    """Compute (or reuse) the features of ``split`` and return them.

    Raises:
        ValueError: when a requested caption column is missing or empty for a clip.
    """
    cache_path = Path(cache_path)
    sig = _signature(feature_extractor, prep, Path(dataset_dir), split, caption_columns)
    if cache_path.is_file():
        with np.load(cache_path, allow_pickle=False) as data:
            if str(data["signature"]) == sig:
                return _from_npz(data, caption_columns)
        logger.info("%s: stale feature cache, recomputing", cache_path)
    sr = int(feature_extractor.sampling_rate)
    feats, longer, ids, caps = [], [], [], {c: [] for c in caption_columns}
    batch: list[np.ndarray] = []
    for row, wave in iter_split_audio(dataset_dir, split, sr, progress=progress):
        for col in caption_columns:
            value = row.get(col)
            if not isinstance(value, list) or not value:
                raise ValueError(f"{dataset_dir}: clip {row['clip_id']}: column {col!r} has no captions")
            caps[col].append([str(c) for c in value])
        ids.append(str(row["clip_id"]))
        batch.append(wave)
        if len(batch) == batch_size:
            _flush(feature_extractor, prep, batch, feats, longer)
    _flush(feature_extractor, prep, batch, feats, longer)
    cache = FeatureCache(np.concatenate(feats), np.concatenate(longer), ids, caps)
    with atomic_path(cache_path) as tmp:
        np.savez(tmp, features=cache.features, is_longer=cache.is_longer, clip_ids=np.asarray(ids, dtype=str),
                 signature=np.asarray(sig), **{f"captions__{c}": np.asarray(json.dumps(v)) for c, v in caps.items()})
    return cache


def _flush(fe: Any, prep: ClapPreprocessing, batch: list[np.ndarray], feats: list, longer: list) -> None:
    if batch:
        f, lg = clap_features(fe, batch, prep)
        feats.append(f.numpy().astype(np.float16))
        longer.append(lg.numpy())
        batch.clear()


def _from_npz(data: Any, columns: Sequence[str]) -> FeatureCache:
    return FeatureCache(np.asarray(data["features"]), np.asarray(data["is_longer"]),
                        [str(x) for x in data["clip_ids"]],
                        {c: json.loads(str(data[f"captions__{c}"])) for c in columns})
