"""Captioning data: clip embeddings from a dump joined to the manifest's captions.

A dump is either one ``.npz`` holding clips of any splits, or a folder holding
``<split>.npz`` files. Rows are selected by the manifest's ``clip_id`` for the split; an
id with no embedding is an error naming it. ``embedding_key`` picks the array
(``audio_embeds`` or an extra such as ``audio_frames``); a 3-D (N, T, D) array from a
frame-level encoder is mean-pooled over time (over the valid frames when the dump has an
``audio_frame_mask`` (N, T) extra).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from clapcap.data.dump import DumpError, load_dump

logger = logging.getLogger(__name__)


@dataclass
class CaptionSplit:
    """One split: ``embeds`` (N, D) float32 aligned with ``clip_ids`` and ``captions``."""

    name: str
    clip_ids: list[str]
    embeds: np.ndarray
    captions: list[list[str]]

    def pairs(self, per_clip: int = 0, *, offset: int = 0) -> tuple[np.ndarray, list[str]]:
        """(clip row, caption) training pairs: rows (M,) int64 and the M captions.

        ``per_clip`` 0 gives every caption of every clip; k > 0 gives k captions per clip,
        those at positions ``offset, offset + 1, ...`` (mod the clip's caption count), so
        consecutive offsets cycle through every caption.
        """
        if per_clip < 0:
            raise ValueError(f"per_clip: expected >= 0, found {per_clip}")
        if per_clip == 0:
            chosen = self.captions
        else:
            chosen = [[caps[(offset + j) % len(caps)] for j in range(min(per_clip, len(caps)))]
                      for caps in self.captions]
        rows = [i for i, caps in enumerate(chosen) for _ in caps]
        return np.asarray(rows, dtype=np.int64), [c for caps in chosen for c in caps]

    def subset(self, n: int, seed: int = 0) -> CaptionSplit:
        """``n`` clips drawn by a fixed ``seed`` (not a run's training seed, so every run with
        the same ``n`` trains on the same clips), kept in split order; the whole split when
        ``n`` is 0 or at least its size. The draw for a smaller ``n`` is a prefix of the draw
        for a larger one, so subsets nest."""
        if n < 0:
            raise ValueError(f"subset: expected n >= 0, found {n}")
        if n == 0 or n >= len(self.clip_ids):
            return self
        keep = np.sort(np.random.default_rng(seed).permutation(len(self.clip_ids))[:n])
        return CaptionSplit(self.name, [self.clip_ids[i] for i in keep], self.embeds[keep],
                            [self.captions[i] for i in keep])

    def references(self) -> dict[str, list[str]]:
        """``{clip_id: [reference captions]}`` for scoring."""
        return dict(zip(self.clip_ids, self.captions, strict=True))


def _dump_file(dump: str | Path, split: str) -> Path:
    path = Path(dump)
    return path / f"{split}.npz" if path.is_dir() else path


def dump_encoder_config(dump: str | Path, split: str = "train") -> dict | None:
    """The encoder config recorded in a dump's ``meta["encoder"]`` (written by
    :func:`clapcap.encoders.embed.embed_dataset`), or None when the dump does not record one.

    Raises:
        FileNotFoundError: when the dump file is missing.
    """
    meta = load_dump(_dump_file(dump, split), validate=False).meta
    enc = meta.get("encoder")
    return dict(enc) if isinstance(enc, dict) else None


def _mean_pool(frames: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Mean over time; with a (N, T) validity mask (``audio_frame_mask``), over valid frames only."""
    if mask is None or mask.shape != frames.shape[:2]:
        return frames.mean(axis=1)
    weights = mask.astype(np.float64)[..., None]  # (N, T, 1)
    return (frames * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


def embeddings_by_clip(dump_path: str | Path, *, embedding_key: str = "audio_embeds") -> dict[str, np.ndarray]:
    """Map clip id to its (D,) embedding from one dump file.

    Raises:
        FileNotFoundError: when the dump is missing.
        DumpError: when ``embedding_key`` is absent or has the wrong shape.
    """
    dump = load_dump(dump_path)
    if embedding_key == "audio_embeds":
        arr = dump.audio_embeds
    elif embedding_key in dump.extras:
        arr = dump.extras[embedding_key]
    else:
        raise DumpError(f"{dump_path}: no array {embedding_key!r}; has audio_embeds and "
                        f"extras {sorted(dump.extras)}")
    if arr.ndim == 3:
        arr = _mean_pool(arr, dump.extras.get("audio_frame_mask"))  # (N, T, D) -> (N, D)
    if arr.ndim != 2 or arr.shape[0] != dump.n_clips:
        raise DumpError(f"{dump_path}: {embedding_key} has shape {arr.shape}, expected "
                        f"({dump.n_clips}, D) or ({dump.n_clips}, T, D)")
    arr = np.asarray(arr, dtype=np.float32)
    return {cid: arr[i] for i, cid in enumerate(dump.clip_ids)}


def load_caption_split(dump: str | Path, manifest: pd.DataFrame, split: str, *,
                       embedding_key: str = "audio_embeds") -> CaptionSplit:
    """Join the ``split`` rows of ``manifest`` to their embeddings in ``dump``.

    Raises:
        ValueError: when the split is empty, a clip has no captions, or clip ids lack embeddings.
    """
    rows = manifest[manifest["split"] == split]
    if rows.empty:
        raise ValueError(f"manifest has no clips in split {split!r}")
    path = _dump_file(dump, split)
    by_clip = embeddings_by_clip(path, embedding_key=embedding_key)
    ids = [str(c) for c in rows["clip_id"]]
    missing = [c for c in ids if c not in by_clip]
    if missing:
        raise ValueError(f"{path}: {len(missing)} {split} clip(s) have no embedding, e.g. {missing[:5]}")
    captions = [list(c) for c in rows["captions"]]
    empty = [cid for cid, caps in zip(ids, captions, strict=True) if not caps]
    if empty:
        raise ValueError(f"manifest: {split} clip(s) without captions: {empty[:5]}")
    embeds = np.stack([by_clip[c] for c in ids])
    return CaptionSplit(split, ids, embeds, captions)


def most_common_caption(captions: list[list[str]]) -> str:
    """The most frequent caption (ties broken alphabetically) among ``captions``.

    Raises:
        ValueError: when there is no caption.
    """
    counts = Counter(c for caps in captions for c in caps)
    if not counts:
        raise ValueError("no captions to pick the most common one from")
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def trivial_baseline(train: CaptionSplit, clip_ids: list[str]) -> dict[str, str]:
    """Predictions that give every clip the most common training caption."""
    caption = most_common_caption(train.captions)
    return {cid: caption for cid in clip_ids}
