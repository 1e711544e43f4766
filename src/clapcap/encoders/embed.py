"""Embed a dataset split into an embedding dump (see :mod:`clapcap.data.dump`).

Clips are decoded and embedded in batches (bounded memory) under ``torch.inference_mode()``
with a progress bar. A dump whose ``meta.signature`` matches the request is complete (dumps
are written atomically, and a truncated file is never taken as complete) and is not
recomputed. Every finished batch is kept in ``.<name>.npz.partial/``
(:mod:`clapcap.encoders.partial`) until the dump is written, so a killed run (even
SIGKILL) loses at most the batch in flight; the resumed dump is byte-identical.

``caption_column`` selects the text side: ``captions`` (default), or ``paraphrases_v1`` /
``paraphrases_v2`` for the RobustCLAP benchmark. Audio-only (frame-level) encoders write a
dump whose ``text_embeds`` are zeros (``meta.text_tower = false``) plus optional
``audio_frames`` / ``audio_frame_mask`` extras.

This is the one dump writer of both encoder configs. A
:class:`~clapcap.encoders.base.PretrainedEncoderConfig` (aisfx, Whisper, CREPE) can also keep
only the clips of one manifest ``source`` (the synthetic corpus marks its music clips
``synthetic_music``; the encoder ablation runs on them); its signature hashes the config
without the cache location and the weights' content
(:func:`~clapcap.encoders.factory.weights_digest`), and its config is recorded as
``meta.pretrained_encoder`` (not ``meta.encoder``, which the captioning registry reads as an
:class:`~clapcap.encoders.base.EncoderConfig`). ``embed_all`` (stage ``embed``) and
``embed_pretrained_splits`` (stage ``embed_pretrained``) write every split of one encoder.
"""

from __future__ import annotations

import logging
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.compute import Compute, or_default
from clapcap.config import ConfigError
from clapcap.data.audio import load_audio
from clapcap.data.dump import DumpError, EmbeddingDump, load_dump, save_dump
from clapcap.data.listing import DEFAULT_MEMO
from clapcap.data.manifest import resolve_audio_path
from clapcap.data.prepare import check_inputs, dataset_fingerprint, load_dataset
from clapcap.encoders.base import AudioEncoder, EncoderConfig, PretrainedEncoderConfig
from clapcap.encoders.config import EmbedPretrainedParams
from clapcap.encoders.factory import create_encoder, weights_digest
from clapcap.encoders.laion import prepare_laion_env
from clapcap.encoders.partial import BatchStore
from clapcap.utils.io import remove_stale_temps, sha256_json, sha256_tree
from clapcap.utils.skip import skip_if_inputs_skipped

logger = logging.getLogger(__name__)


AnyEncoderConfig = EncoderConfig | PretrainedEncoderConfig


def dump_signature(cfg: AnyEncoderConfig, dataset_dir: str | Path, split: str, column: str = "captions", *,
                   source: str | None = None, max_clips: int | None = None, save_frames: bool = False) -> str:
    """Hash of what decides a dump: the encoder config, the content of the dataset and of the
    weights (never their location or mtimes: two clones build the same bytes), the split, the
    caption column, the source filter and ``max_clips``.

    Raises:
        MissingDependencyError: when a pretrained backend's package is missing.
    """
    if isinstance(cfg, PretrainedEncoderConfig):
        return sha256_json([cfg.identity(), weights_digest(cfg), dataset_fingerprint(dataset_dir), split, source,
                            max_clips, column, save_frames])
    ckpt = sha256_tree(cfg.checkpoint) if cfg.checkpoint else None
    # The source filter joins the hash only when set, so the dumps written before it existed keep
    # their signature (a rebuild writes the same bytes).
    return sha256_json([cfg.to_dict(), dataset_fingerprint(dataset_dir), ckpt, split, column, max_clips]
                       + ([source] if source is not None else []))


def is_complete(out_path: str | Path, signature: str) -> bool:
    """True when ``out_path`` is a readable, valid dump written for ``signature``.

    A truncated or corrupt file (no zip directory, a bad CRC, a short array) is not
    complete: it is recomputed, never read as finished work.
    """
    try:
        dump = load_dump(out_path)
    except (FileNotFoundError, DumpError, ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as err:
        if Path(out_path).exists():
            logger.warning("%s is unreadable (%s): recomputing it", out_path, err)
        return False
    return dump.meta.get("signature") == signature


def select_rows(dataset_dir: str | Path, split: str, column: str = "captions", *, source: str | None = None,
                max_clips: int | None = None) -> tuple[Any, list[dict]]:
    """The dataset and the manifest rows of ``split`` (``all`` = every split), keeping only the
    clips whose ``source`` column equals ``source`` when given, then the first ``max_clips``.

    Raises:
        ValueError: naming the manifest when no clip is left (with the sources the split has),
            the caption column is missing, or a clip has no caption in it.
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
        raise ValueError(f"{dataset_dir}: split {split!r} has no clips")
    if column not in df.columns:
        raise ValueError(f"{dataset_dir}/manifest.csv: no column {column!r}; expected captions, "
                         f"paraphrases_v1 or paraphrases_v2")
    rows = df.to_dict("records")[: max_clips or None]
    for r in rows:
        if not isinstance(r[column], list) or not r[column]:
            raise ValueError(f"{dataset_dir}/manifest.csv: clip {r['clip_id']}: column {column!r} is empty")
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


def embed_audio_rows(encoder: AudioEncoder, ds: Any, rows: list[dict], batch_size: int, progress: bool,
                     frames: bool, store: BatchStore) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The audio embeddings of ``rows`` in batches, each batch kept in ``store`` (a crash or a
    retry recomputes none that finished). With ``frames``, also the padded (N, T_max, D)
    float16 frames and their (N, T_max) mask as ``audio_frames``/``audio_frame_mask``. The one
    loop of the dump writer (:func:`embed_dataset`)."""
    from tqdm.auto import tqdm

    def compute(batch: list[dict]) -> dict[str, np.ndarray]:
        waves = [load_audio(resolve_audio_path(ds.root, r["audio_path"]), encoder.sample_rate)[0] for r in batch]
        if not frames:
            return {"embeds": encoder.embed_audio(waves)}
        pooled, fr = encoder.embed_audio_frames(waves)  # type: ignore[attr-defined]
        return {"embeds": pooled, **{f"frame_{i:06d}": f for i, f in enumerate(fr)}}

    out, frame_list = [], []
    with tqdm(total=len(rows), desc=f"embed {getattr(encoder, 'pipeline', 'audio')}", unit="clip",
              disable=not progress) as bar:
        for b, start in enumerate(range(0, len(rows), batch_size)):
            batch = rows[start:start + batch_size]
            arrays = store.get_or_compute("audio", b, lambda batch=batch: compute(batch))
            out.append(arrays["embeds"])
            frame_list.extend(arrays[k] for k in sorted(arrays) if k.startswith("frame_"))
            bar.update(len(batch))
    extras = {}
    if frames:
        t_max = max(f.shape[0] for f in frame_list)
        pad = np.zeros((len(frame_list), t_max, frame_list[0].shape[1]), dtype=np.float16)
        mask = np.zeros((len(frame_list), t_max), dtype=bool)
        for i, f in enumerate(frame_list):
            pad[i, : f.shape[0]], mask[i, : f.shape[0]] = f, True
        extras = {"audio_frames": pad, "audio_frame_mask": mask}
    return np.concatenate(out), extras


def embed_dataset(cfg: AnyEncoderConfig, dataset_dir: str | Path, split: str, out_path: str | Path, *,
                  caption_column: str = "captions", source: str | None = None, max_clips: int | None = None,
                  save_frames: bool = False, progress: bool = True, encoder: AudioEncoder | None = None,
                  partial_root: str | Path | None = None, compute: Compute | None = None,
                  memo_path: str | Path | None = DEFAULT_MEMO) -> Path:
    """Embed the clips and captions of ``split`` (of ``source`` only, when given) on
    ``compute.device`` and write the dump to ``out_path``; skip it when a complete dump with
    the same signature is there.

    Resumes the batches a killed run finished (:mod:`clapcap.encoders.partial`). The device
    replaces ``cfg.device`` and is recorded in the dump's meta and signature.
    Embedding always runs in fp32 (``compute.precision`` is a training setting; docs/compute.md).

    Args:
        cfg: an :class:`EncoderConfig` or a :class:`PretrainedEncoderConfig`.
        source: keep only the clips whose manifest ``source`` is this (``synthetic_music``).
        max_clips: the first ``max_clips`` clips (after the filter); None = all.
        encoder: an already built encoder for ``cfg`` (saves reloading it).
        save_frames: frame-level encoders only: also store padded frames (float16) and their mask.
        partial_root: folder of the per-batch progress (default: the dump's folder).
        memo_path: the listing's hash memo for the input-file check (:mod:`clapcap.data.listing`).

    Returns:
        ``out_path``.

    Raises:
        ValueError: on an empty selection or a missing/empty caption column (names file and clip).
        StaleDatasetError: when a real dataset's input files changed since prepare
            (:func:`~clapcap.data.prepare.check_inputs`, as ``clapcap data validate`` checks them),
            naming the files; nothing is embedded.
        AudioError: naming the audio file that cannot be decoded.
        DeviceUnavailable: when ``compute`` asks for CUDA and there is none.
        MissingDependencyError: when a pretrained backend's package is not installed.
    """
    import torch

    cfg = cfg.with_device(or_default(compute).device)
    pretrained = isinstance(cfg, PretrainedEncoderConfig)
    dataset_dir, out_path = Path(dataset_dir), Path(out_path)
    sig = dump_signature(cfg, dataset_dir, split, caption_column, source=source, max_clips=max_clips,
                         save_frames=save_frames)
    if is_complete(out_path, sig):
        logger.info("%s is complete: skipped", out_path)
        return out_path
    remove_stale_temps(out_path)  # a final write cut by a kill
    check_inputs(dataset_dir, memo_path=memo_path)
    ds, rows = select_rows(dataset_dir, split, caption_column, source=source, max_clips=max_clips)
    encoder = encoder or create_encoder(cfg)
    captions = [c for r in rows for c in r[caption_column]]
    index = np.array([i for i, r in enumerate(rows) for _ in r[caption_column]], dtype=np.int64)
    store = BatchStore(out_path, sig, partial_root)
    with torch.inference_mode():
        audio, extras = embed_audio_rows(encoder, ds, rows, cfg.batch_size, progress,
                                         save_frames and hasattr(encoder, "embed_audio_frames"), store)
        has_text = hasattr(encoder, "embed_text")
        text = (_embed_text(encoder, captions, cfg.batch_size, progress, store) if has_text
                else np.zeros((len(captions), audio.shape[1]), dtype=np.float32))
    if store.loaded:
        logger.info("%s: resumed; %d batches read back, %d computed", out_path, store.loaded, store.computed)
    if pretrained:
        audio = audio.astype(np.float32)
        meta = {**encoder.describe(), "pretrained_encoder": cfg.identity(), "dataset": _portable(dataset_dir),
                "split": split, "source_filter": source, "max_clips": max_clips, "caption_column": caption_column,
                "text_tower": has_text, "signature": sig}
    else:
        meta = {**encoder.describe(), "encoder": cfg.to_dict(), "dataset": str(dataset_dir), "split": split,
                "caption_column": caption_column, "text_tower": has_text, "signature": sig}
        if source is not None:
            meta["source_filter"] = source
    dump = EmbeddingDump(audio, text, index, [str(r["clip_id"]) for r in rows], captions, meta, extras)
    save_dump(dump, out_path)
    store.remove()
    logger.info("wrote %s: %d clips, %d captions, dim %d", out_path, len(rows), len(captions), audio.shape[1])
    return out_path


def _embed_text(encoder: Any, captions: Sequence[str], batch_size: int, progress: bool,
                store: BatchStore) -> np.ndarray:
    from tqdm.auto import tqdm

    out, size = [], batch_size * 4
    for b, start in enumerate(tqdm(range(0, len(captions), size), desc="embed text", disable=not progress)):
        texts = captions[start:start + size]
        out.append(store.get_or_compute("text", b, lambda texts=texts: {"embeds": encoder.embed_text(texts)})["embeds"])
    return np.concatenate(out)


def dump_path(out_dir: str | Path, encoder: str, dataset: str, split: str, column: str = "captions",
              source: str | None = None) -> Path:
    """``<out_dir>/<encoder>/<dataset>/<split>.npz`` (``<split>__<column>.npz`` for paraphrases,
    ``<split>__<source>.npz`` for one source)."""
    name = split if column == "captions" else f"{split}__{column}"
    if source:
        name = f"{name}__{source}"
    return Path(out_dir) / encoder / dataset / f"{name}.npz"


def embed_all(params: Any, encoder: str, dataset: str, *, progress: bool = True,
              compute: Compute | None = None) -> list[Path]:
    """Stage ``embed`` for one encoder x dataset: every split x caption column in ``params``,
    embedded on ``compute.device``.

    ``params`` is an :class:`~clapcap.encoders.config.EmbedParams`. The encoder is built once.
    The per-batch progress of a killed run is kept in ``<out_dir>/.partial/<encoder>/<dataset>/``
    (outside the stage's output folder) and removed when the dumps are written.

    Returns:
        The dump paths.

    Raises:
        ConfigError: naming the unknown encoder or dataset and the known ones.
        DeviceUnavailable: when ``compute`` asks for CUDA and there is none (before any work).
    """
    compute = or_default(compute)
    if encoder not in params.encoders:
        raise ConfigError(f"embed.encoders has no {encoder!r}; known: {sorted(params.encoders)}")
    if dataset not in params.datasets:
        raise ConfigError(f"embed.datasets has no {dataset!r}; known: {sorted(params.datasets)}")
    cfg = params.encoders[encoder].with_device(compute.device)
    if cfg.backend == "laion_clap":

        prepare_laion_env(cfg.hf_home or None)
    built: AudioEncoder | None = None
    paths = []
    # Progress lives outside <out_dir>/<encoder>/<dataset>, the stage's DVC output, which DVC
    # deletes before rerunning the stage.
    partial_root = Path(params.out_dir) / ".partial" / encoder / dataset
    present = set(load_dataset(params.datasets[dataset]).manifest.columns)
    for split in params.splits_of(encoder):
        for column in params.columns_of(split):
            if column != "captions" and column not in present:
                # A real dataset has no corpus views: its view dumps are not made, and the
                # RobustCLAP stages that would read them skip (clapcap.utils.skip).
                logger.info("%s: no %s column (views exist only in the synthetic corpus or from "
                            "robust_paraphrase's llm backend): %s dump not made", dataset, column, split)
                continue
            out = dump_path(params.out_dir, encoder, dataset, split, column)
            sig = dump_signature(cfg, params.datasets[dataset], split, column)
            if not is_complete(out, sig):
                built = built or create_encoder(cfg)
            paths.append(embed_dataset(cfg, params.datasets[dataset], split, out, caption_column=column,
                                       progress=progress, encoder=built, partial_root=partial_root,
                                       compute=compute))
    for folder in (partial_root, partial_root.parent, partial_root.parent.parent):  # empty once all are done
        try:
            folder.rmdir()
        except OSError:  # missing, or still holding another stage's progress
            logger.debug("%s kept", folder)
    return paths


def embed_pretrained_splits(params: EmbedPretrainedParams, name: str, *, progress: bool = True,
                            compute: Compute | None = None) -> list[Path]:
    """Stage ``embed_pretrained``: every split's dump of ``params.dataset_dir`` with the pretrained
    encoder ``name`` (built once).

    Returns:
        The dump paths, in ``params.splits`` order; none when the dataset folder was skipped
        (:mod:`clapcap.utils.skip`: a real dataset has no corpus music subset).

    Raises:
        ValueError: when ``name`` is not one of ``params.encoders``.
    """
    if name not in params.encoders:
        raise ValueError(f"embed_pretrained: no encoder {name!r}; have {sorted(params.encoders)}")
    dataset_dir, dataset = params.dataset_of(name)
    if skip_if_inputs_skipped([dataset_dir], [Path(params.out_dir) / name / dataset],
                              stage=f"embed_pretrained@{name}"):
        return []
    cfg = params.encoders[name].with_device(or_default(compute).device)
    encoder = None
    paths = []
    for split in params.splits:
        out = dump_path(params.out_dir, name, dataset, split)
        if encoder is None and not is_complete(out, dump_signature(cfg, dataset_dir, split)):
            encoder = create_encoder(cfg)
        paths.append(embed_dataset(cfg, dataset_dir, split, out, progress=progress, encoder=encoder,
                                   compute=compute))
    return paths
