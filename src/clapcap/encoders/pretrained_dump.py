"""Embedding dumps of a dataset split by a pretrained encoder, in the project's dump format
(:mod:`clapcap.data.dump`), optionally for the clips of one ``source`` only (the synthetic
corpus marks its music clips ``synthetic_music``; the encoder ablation runs on them).

As :func:`clapcap.encoders.embed.embed_dataset` does: clips are decoded at the encoder's rate
and embedded in batches with a progress bar; every finished batch is kept in
``.<name>.npz.partial/`` (:class:`clapcap.encoders.partial.BatchStore`) so a killed run
resumes; a dump whose ``meta.signature`` matches the request is complete and skipped. The
signature hashes the config (without the cache location), the weights' content
(:func:`~clapcap.encoders.pretrained_factory.weights_digest`), the dataset's content
(:func:`clapcap.data.prepare.dataset_fingerprint`), the split, the source filter and
``max_clips``: no path, no mtime.

The encoders are audio-only: ``text_embeds`` are zeros (``meta.text_tower = false``), as
for the project's frame-level encoders. The config is recorded as ``meta.pretrained_encoder``
(not ``meta.encoder``, which the captioning registry reads as an
:class:`~clapcap.encoders.base.EncoderConfig`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.compute import Compute, or_default
from clapcap.data.dump import EmbeddingDump, save_dump
from clapcap.data.prepare import dataset_fingerprint, load_dataset
from clapcap.encoders.base import AudioEncoder
from clapcap.encoders.embed import embed_audio_rows, is_complete
from clapcap.encoders.partial import BatchStore
from clapcap.encoders.pretrained_config import PretrainedEncoderConfig
from clapcap.encoders.pretrained_factory import create_pretrained_encoder, weights_digest
from clapcap.utils.io import remove_stale_temps, sha256_json
from clapcap.utils.skip import skip_if_inputs_skipped

logger = logging.getLogger(__name__)

CAPTION_COLUMN = "captions"


def pretrained_dump_path(out_dir: str | Path, encoder: str, dataset: str, split: str, source: str | None = None) -> Path:
    """``<out_dir>/<encoder>/<dataset>/<split>.npz``, or ``<split>__<source>.npz`` for one source."""
    return Path(out_dir) / encoder / dataset / (f"{split}__{source}.npz" if source else f"{split}.npz")


def select_rows(dataset_dir: str | Path, split: str, *, source: str | None = None,
                max_clips: int | None = None) -> tuple[Any, list[dict]]:
    """The dataset and the manifest rows of ``split`` (``all`` = every split), keeping only the
    clips whose ``source`` column equals ``source`` when given, then the first ``max_clips``.

    Raises:
        ValueError: naming the manifest when no clip is left (with the sources the split has)
            or a clip has no caption.
    """
    ds = load_dataset(dataset_dir)
    df = ds.manifest if split == "all" else ds.split(split)
    if source is not None:
        known = sorted(df["source"].astype(str).unique()) if not df.empty else []
        df = df[df["source"] == source]
        if df.empty:
            raise ValueError(f"{dataset_dir}/manifest.csv: split {split!r} has no clip of source {source!r}; "
                             f"its sources: {known}")
    if df.empty:
        raise ValueError(f"{dataset_dir}/manifest.csv: split {split!r} has no clips")
    rows = df.to_dict("records")[: max_clips or None]
    for r in rows:
        if not isinstance(r[CAPTION_COLUMN], list) or not r[CAPTION_COLUMN]:
            raise ValueError(f"{dataset_dir}/manifest.csv: clip {r['clip_id']}: column {CAPTION_COLUMN!r} is empty")
    return ds, rows


def _portable(path: Path) -> str:
    """``path`` as given when relative; an absolute one relative to the working folder when it lies
    under it, else only its name (no machine path in an output)."""
    if not path.is_absolute():
        return path.as_posix()
    try:
        return path.relative_to(Path(os.getcwd())).as_posix()
    except ValueError:
        return path.name


def dump_signature(cfg: PretrainedEncoderConfig, dataset_dir: str | Path, split: str, source: str | None,
                   max_clips: int | None, save_frames: bool) -> str:
    """SHA-256 of what decides the dump (module docstring). Raises MissingDependencyError
    when the backend's package is missing."""
    return sha256_json([cfg.identity(), weights_digest(cfg), dataset_fingerprint(dataset_dir), split, source,
                        max_clips, CAPTION_COLUMN, save_frames])


def embed_pretrained(cfg: PretrainedEncoderConfig, dataset_dir: str | Path, split: str, out_path: str | Path, *,
                     source: str | None = None, max_clips: int | None = None, save_frames: bool = False,
                     progress: bool = True, encoder: AudioEncoder | None = None,
                     partial_root: str | Path | None = None, compute: Compute | None = None) -> Path:
    """Embed the clips of ``split`` (of ``source`` only, when given) with the pretrained encoder
    ``cfg`` on ``compute.device`` and write the dump to ``out_path``; skip it when a complete
    dump with the same signature is there.

    Args:
        source: keep only the clips whose manifest ``source`` is this (``synthetic_music``).
        max_clips: the first ``max_clips`` clips (after the filter); None = all.
        save_frames: also store the padded frame embeddings (``audio_frames``, float16) and
            their mask (``audio_frame_mask``).
        encoder: an encoder already built for ``cfg`` (saves reloading it).
        partial_root: folder of the per-batch progress (default: the dump's folder).

    Returns:
        ``out_path``.

    Raises:
        ValueError: on an empty selection or a clip without captions (names the manifest).
        MissingDependencyError: when the backend's package is not installed (names ``make setup``).
        AudioError: naming an audio file that cannot be decoded.
    """
    cfg = cfg.with_device(or_default(compute).device)
    dataset_dir, out_path = Path(dataset_dir), Path(out_path)
    sig = dump_signature(cfg, dataset_dir, split, source, max_clips, save_frames)
    if is_complete(out_path, sig):
        logger.info("%s is complete: skipped", out_path)
        return out_path
    remove_stale_temps(out_path)
    ds, rows = select_rows(dataset_dir, split, source=source, max_clips=max_clips)
    encoder = encoder or create_pretrained_encoder(cfg)
    store = BatchStore(out_path, sig, partial_root)
    audio, extras = embed_audio_rows(encoder, ds, rows, cfg.batch_size, progress, save_frames, store)
    audio = audio.astype(np.float32)
    if store.loaded:
        logger.info("%s: resumed; %d batches read back, %d computed", out_path, store.loaded, store.computed)
    captions = [c for r in rows for c in r[CAPTION_COLUMN]]
    index = np.array([i for i, r in enumerate(rows) for _ in r[CAPTION_COLUMN]], dtype=np.int64)
    meta = {**encoder.describe(), "pretrained_encoder": cfg.identity(), "dataset": _portable(dataset_dir),
            "split": split, "source_filter": source, "max_clips": max_clips, "caption_column": CAPTION_COLUMN,
            "text_tower": False, "signature": sig}
    text = np.zeros((len(captions), audio.shape[1]), dtype=np.float32)
    save_dump(EmbeddingDump(audio, text, index, [str(r["clip_id"]) for r in rows], captions, meta, extras), out_path)
    store.remove()
    logger.info("wrote %s: %d clips, dim %d", out_path, len(rows), audio.shape[1])
    return out_path


@dataclass
class EmbedPretrainedParams:
    """Section ``embed_pretrained``: each pretrained encoder's dumps of one dataset's splits, at
    ``<out_dir>/<encoder>/<dataset>/<split>.npz`` (the layout the captioning study reads)."""

    dataset_dir: str = "data/music"
    dataset: str = "music"
    out_dir: str = "data/embeddings"
    splits: list[str] = field(default_factory=lambda: ["train", "val", "test"])
    encoders: dict[str, PretrainedEncoderConfig] = field(default_factory=dict)


def embed_pretrained_splits(params: EmbedPretrainedParams, name: str, *, progress: bool = True,
                            compute: Compute | None = None) -> list[Path]:
    """Write every split's dump of ``params.dataset_dir`` with encoder ``name`` (built once).

    Returns:
        The dump paths, in ``params.splits`` order; none when the dataset folder was skipped
        (:mod:`clapcap.utils.skip`: a real dataset has no corpus music subset).

    Raises:
        ValueError: when ``name`` is not one of ``params.encoders``.
    """
    if name not in params.encoders:
        raise ValueError(f"embed_pretrained: no encoder {name!r}; have {sorted(params.encoders)}")
    if skip_if_inputs_skipped([params.dataset_dir], [Path(params.out_dir) / name / params.dataset],
                              stage=f"embed_pretrained@{name}"):
        return []
    cfg = params.encoders[name].with_device(or_default(compute).device)
    encoder = None
    paths = []
    for split in params.splits:
        out = Path(params.out_dir) / name / params.dataset / f"{split}.npz"
        if encoder is None and not is_complete(out, dump_signature(cfg, Path(params.dataset_dir), split, None, None,
                                                                    False)):
            encoder = create_pretrained_encoder(cfg)
        paths.append(embed_pretrained(cfg, params.dataset_dir, split, out, progress=progress, encoder=encoder,
                                      compute=compute))
    return paths
