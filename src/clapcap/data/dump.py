"""Embedding dumps: the ``.npz`` contract between encoders and retrieval/captioning.

A dump holds

- ``audio_embeds``: float32 (N_clips, D)
- ``text_embeds``: float32 (N_captions, D)
- ``caption_clip_index``: int64 (N_captions,), the row of ``audio_embeds`` each caption describes
- ``clip_ids``: str (N_clips,) and ``captions``: str (N_captions,)
- ``meta``: a JSON string (checkpoint, pipeline, dataset, split, preprocessing, ...)

Optional extra arrays (for example ``audio_frames`` for frame-level encoders) are kept in
``extras``. Embeddings are stored as produced; similarity is the dot product of
L2-normalised embeddings (:func:`normalize`).
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.errors import InputError
from clapcap.utils.io import atomic_path

REQUIRED = ("audio_embeds", "text_embeds", "caption_clip_index", "clip_ids", "captions", "meta")


class DumpError(InputError, ValueError):
    """An embedding dump is malformed; the message names the file and the problem."""


@dataclass
class EmbeddingDump:
    """In-memory embedding dump (see module docstring for shapes)."""

    audio_embeds: np.ndarray
    text_embeds: np.ndarray
    caption_clip_index: np.ndarray
    clip_ids: list[str]
    captions: list[str]
    meta: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_clips(self) -> int:
        return int(self.audio_embeds.shape[0])

    @property
    def n_captions(self) -> int:
        return int(self.text_embeds.shape[0])

    def validate(self, origin: str = "<dump>", *, require_every_clip_captioned: bool = True) -> None:
        """Check shapes, dtypes, index range and finiteness.

        Raises:
            DumpError: naming ``origin`` and the first problem found.
        """
        a, t, idx = self.audio_embeds, self.text_embeds, self.caption_clip_index
        if a.ndim != 2 or t.ndim != 2:
            raise DumpError(f"{origin}: audio_embeds and text_embeds must be 2-D, found {a.shape} and {t.shape}")
        if a.shape[0] == 0 or t.shape[0] == 0:
            raise DumpError(f"{origin}: empty dump ({a.shape[0]} clips, {t.shape[0]} captions)")
        if a.shape[1] != t.shape[1]:
            raise DumpError(f"{origin}: embedding dims differ: audio {a.shape[1]} vs text {t.shape[1]}")
        if idx.shape != (t.shape[0],):
            raise DumpError(f"{origin}: caption_clip_index has shape {idx.shape}, expected ({t.shape[0]},)")
        if len(self.clip_ids) != a.shape[0] or len(self.captions) != t.shape[0]:
            raise DumpError(f"{origin}: {len(self.clip_ids)} clip_ids for {a.shape[0]} clips or "
                            f"{len(self.captions)} captions for {t.shape[0]} text embeddings")
        if len(set(self.clip_ids)) != len(self.clip_ids):
            raise DumpError(f"{origin}: clip_ids are not unique")
        bad = np.flatnonzero((idx < 0) | (idx >= a.shape[0]))
        if bad.size:
            raise DumpError(f"{origin}: caption {int(bad[0])} points to clip row {int(idx[bad[0]])}, "
                            f"outside 0..{a.shape[0] - 1}")
        for name, arr in (("audio_embeds", a), ("text_embeds", t)):
            rows = np.flatnonzero(~np.isfinite(arr).all(axis=1))
            if rows.size:
                raise DumpError(f"{origin}: {name} row {int(rows[0])} has NaN or infinite values "
                                f"({rows.size} such rows)")
        if require_every_clip_captioned:
            missing = np.setdiff1d(np.arange(a.shape[0]), idx)
            if missing.size:
                raise DumpError(f"{origin}: clip {self.clip_ids[int(missing[0])]!r} (row {int(missing[0])}) "
                                f"has no caption ({missing.size} such clips)")


def normalize(x: np.ndarray) -> np.ndarray:
    """L2-normalise rows in float64 (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def save_dump(dump: EmbeddingDump, path: str | Path) -> Path:
    """Validate and atomically write ``dump`` to ``path`` (``.npz``). Returns the path."""
    dump.validate(str(path), require_every_clip_captioned=False)
    arrays = {
        "audio_embeds": np.asarray(dump.audio_embeds, dtype=np.float32),
        "text_embeds": np.asarray(dump.text_embeds, dtype=np.float32),
        "caption_clip_index": np.asarray(dump.caption_clip_index, dtype=np.int64),
        "clip_ids": np.asarray(dump.clip_ids, dtype=str),
        "captions": np.asarray(dump.captions, dtype=str),
        "meta": np.asarray(json.dumps(dump.meta, sort_keys=True)),
        **dump.extras,
    }
    with atomic_path(path) as tmp:
        write_npz_deterministic(tmp, arrays)
    return Path(path)


def write_npz_deterministic(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """Write an uncompressed ``.npz`` whose bytes depend only on the arrays.

    ``numpy.savez`` stamps each zip entry with the current time, so rewriting the same
    arrays gives a different file, and DVC would rerun every downstream stage. Entries
    here get a fixed timestamp and a fixed order.
    """
    import io
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def load_dump(path: str | Path, *, validate: bool = True) -> EmbeddingDump:
    """Read a dump written by :func:`save_dump` (or any npz with the same keys).

    Raises:
        FileNotFoundError: when ``path`` does not exist.
        DumpError: when the file is not a readable ``.npz``, a key is missing or the
            arrays are inconsistent; the message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: dump not found")
    try:
        dump = _read_dump(path)
    except DumpError:
        raise
    # np.load of a file that is not a zip of .npy arrays raises ValueError ("Cannot load
    # file containing pickled data when allow_pickle=False"), a truncated one BadZipFile,
    # EOFError or OSError: none of them names the file.
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        raise DumpError(f"{path}: not a valid .npz embedding dump ({type(err).__name__}: {err})") from err
    if validate:
        dump.validate(str(path), require_every_clip_captioned=False)
    return dump


def _read_dump(path: Path) -> EmbeddingDump:
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in REQUIRED if k not in data.files]
        if missing:
            raise DumpError(f"{path}: missing key(s) {missing}; expected {list(REQUIRED)}")
        meta_raw = str(data["meta"])
        try:
            meta = json.loads(meta_raw) if meta_raw else {}
        except json.JSONDecodeError as err:
            raise DumpError(f"{path}: meta is not a JSON string: {err}") from err
        return EmbeddingDump(
            audio_embeds=np.asarray(data["audio_embeds"]),
            text_embeds=np.asarray(data["text_embeds"]),
            caption_clip_index=np.asarray(data["caption_clip_index"]).astype(np.int64),
            clip_ids=[str(x) for x in data["clip_ids"]],
            captions=[str(x) for x in data["captions"]],
            meta=meta,
            extras={k: np.asarray(data[k]) for k in data.files if k not in REQUIRED},
        )


def dump_labels(paths: list[str | Path] | tuple[str | Path, ...]) -> list[str]:
    """Short unique labels of dump paths: the part after their common folder, ``/`` -> ``__``.

    ``data/embeddings/tiny/synth/test.npz`` and ``data/embeddings/hf/synth/test.npz`` give
    ``tiny__synth__test`` and ``hf__synth__test``; a single dump gives its stem.
    """
    resolved = [Path(p).resolve() for p in paths]
    if not resolved:
        return []
    common = Path(os.path.commonpath([p.parent for p in resolved]))
    labels = ["__".join(p.relative_to(common).with_suffix("").parts) for p in resolved]
    if len(set(labels)) != len(labels):  # the same file listed twice
        labels = [f"{label}__{i}" for i, label in enumerate(labels)]
    return labels
