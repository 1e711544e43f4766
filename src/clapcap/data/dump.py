"""Embedding dumps: the ``.npz`` contract between encoders and retrieval/captioning.

A dump holds

- ``audio_embeds``: float32 (N_clips, D)
- ``text_embeds``: float32 (N_captions, D)
- ``caption_clip_index``: int64 (N_captions,), the row of ``audio_embeds`` each caption describes
- ``clip_ids``: str (N_clips,) and ``captions``: str (N_captions,)
- ``meta``: a JSON string (checkpoint, pipeline, dataset, split, preprocessing, ...)

:func:`load_dump` enforces these kinds: embeddings of any floating-point dtype, an index of any
integer dtype (read as int64; a float index, even ``1.0``, is refused, never truncated), 1-D str
arrays and a JSON object, each error naming the file and the array. Optional extra arrays
(for example ``audio_frames`` for frame-level encoders) are kept in ``extras``. Embeddings
are stored as produced; similarity is the dot product of L2-normalised embeddings
(:func:`normalize`).
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from clapcap.errors import InputError
from clapcap.utils.io import atomic_path

T = TypeVar("T")

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
        """Check dtypes, shapes, index range and finiteness.

        ``audio_embeds`` and ``text_embeds`` must be floating-point and 2-D with the same
        (non-zero) width; ``caption_clip_index`` must have an integer dtype: a float index,
        even an integral one (``1.0``), is refused rather than truncated to a clip row.

        Raises:
            DumpError: naming ``origin``, the array and the first problem found.
        """
        a, t, idx = self.audio_embeds, self.text_embeds, self.caption_clip_index
        for name, arr in (("audio_embeds", a), ("text_embeds", t)):
            _check_dtype(arr, name, origin, "a floating-point", np.floating)
            if arr.ndim != 2:
                raise DumpError(f"{origin}: {name}: expected a 2-D array (rows, dim), found shape {arr.shape}")
        _check_dtype(idx, "caption_clip_index", origin, "an integer", np.integer)
        if a.shape[0] == 0 or t.shape[0] == 0:
            raise DumpError(f"{origin}: empty dump ({a.shape[0]} clips, {t.shape[0]} captions)")
        if a.shape[1] != t.shape[1]:
            raise DumpError(f"{origin}: embedding dims differ: audio {a.shape[1]} vs text {t.shape[1]}")
        if a.shape[1] == 0:
            raise DumpError(f"{origin}: audio_embeds and text_embeds have width 0, expected >= 1")
        if idx.shape != (t.shape[0],):
            raise DumpError(f"{origin}: caption_clip_index has shape {idx.shape}, expected ({t.shape[0]},)")
        if len(self.clip_ids) != a.shape[0] or len(self.captions) != t.shape[0]:
            raise DumpError(f"{origin}: {len(self.clip_ids)} clip_ids for {a.shape[0]} clips or "
                            f"{len(self.captions)} captions for {t.shape[0]} text embeddings")
        if len(set(self.clip_ids)) != len(self.clip_ids):
            raise DumpError(f"{origin}: clip_ids are not unique")
        self._check_values(origin, require_every_clip_captioned)

    def _check_values(self, origin: str, require_every_clip_captioned: bool) -> None:
        """Index range, finiteness and (optionally) a caption for every clip."""
        a, idx = self.audio_embeds, self.caption_clip_index
        bad = np.flatnonzero((idx < 0) | (idx >= a.shape[0]))
        if bad.size:
            raise DumpError(f"{origin}: caption {int(bad[0])} points to clip row {int(idx[bad[0]])}, "
                            f"outside 0..{a.shape[0] - 1}")
        for name, arr in (("audio_embeds", a), ("text_embeds", self.text_embeds)):
            rows = np.flatnonzero(~np.isfinite(arr).all(axis=1))
            if rows.size:
                raise DumpError(f"{origin}: {name} row {int(rows[0])} has NaN or infinite values "
                                f"({rows.size} such rows)")
        if require_every_clip_captioned:
            missing = np.setdiff1d(np.arange(a.shape[0]), idx)
            if missing.size:
                raise DumpError(f"{origin}: clip {self.clip_ids[int(missing[0])]!r} (row {int(missing[0])}) "
                                f"has no caption ({missing.size} such clips)")


def _check_dtype(arr: Any, name: str, origin: str, expected: str, kind: type) -> None:
    """Raise unless ``arr`` is a numpy array whose dtype is a subtype of ``kind`` (numpy's
    ``bool`` is neither an integer nor a floating-point type; an integer is not a float)."""
    dtype = getattr(arr, "dtype", None)
    if dtype is None or not np.issubdtype(dtype, kind):
        found = dtype if dtype is not None else type(arr).__name__
        raise DumpError(f"{origin}: {name}: expected {expected} array, found {found}")


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
        DumpError: when the file is not a readable ``.npz``, a key is missing or an array
            has the wrong dtype or shape, or (``validate``) the arrays are inconsistent;
            the message names the file and the array.
    """
    path = Path(path)
    dump = _read_checked(path, _read_dump)
    if validate:
        dump.validate(str(path), require_every_clip_captioned=False)
    return dump


def load_meta(path: str | Path) -> dict[str, Any]:
    """The ``meta`` of a dump, without reading its arrays.

    Raises:
        FileNotFoundError / DumpError: as :func:`load_dump`.
    """
    return _read_checked(Path(path), _read_meta_only)


def _read_checked(path: Path, reader: Callable[[Path], T]) -> T:
    """``reader(path)``, with a missing or unreadable file as an error naming ``path``."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: dump not found")
    try:
        return reader(path)
    except DumpError:
        raise
    # np.load of a file that is not a zip of .npy arrays raises ValueError ("Cannot load
    # file containing pickled data when allow_pickle=False"), a truncated one BadZipFile,
    # EOFError or OSError: none of them names the file.
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        raise DumpError(f"{path}: not a valid .npz embedding dump ({type(err).__name__}: {err})") from err


def _read_meta_only(path: Path) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as data:  # lazy: only ``meta`` is read
        if "meta" not in data.files:
            raise DumpError(f"{path}: missing key(s) ['meta']; expected {list(REQUIRED)}")
        return _read_meta(data["meta"], path)


def _read_dump(path: Path) -> EmbeddingDump:
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in REQUIRED if k not in data.files]
        if missing:
            raise DumpError(f"{path}: missing key(s) {missing}; expected {list(REQUIRED)}")
        idx = np.asarray(data["caption_clip_index"])
        if np.issubdtype(idx.dtype, np.integer):  # any other dtype is refused by validate()
            idx = idx.astype(np.int64)
        return EmbeddingDump(
            audio_embeds=np.asarray(data["audio_embeds"]),
            text_embeds=np.asarray(data["text_embeds"]),
            caption_clip_index=idx,
            clip_ids=_read_strings(data["clip_ids"], "clip_ids", path),
            captions=_read_strings(data["captions"], "captions", path),
            meta=_read_meta(data["meta"], path),
            extras={k: np.asarray(data[k]) for k in data.files if k not in REQUIRED},
        )


def _read_strings(arr: np.ndarray, name: str, path: Path) -> list[str]:
    """A 1-D string array as a list (``str`` of a number, a byte string or a row would
    silently make up an id or a caption)."""
    if arr.dtype.kind != "U" or arr.ndim != 1:
        raise DumpError(f"{path}: {name}: expected a 1-D array of str, found {arr.dtype} of shape {arr.shape}")
    return [str(x) for x in arr]


def _read_meta(arr: np.ndarray, path: Path) -> dict[str, Any]:
    """``meta``: a 0-d str array holding a JSON object (an empty string is ``{}``)."""
    if arr.dtype.kind != "U" or arr.ndim != 0:
        raise DumpError(f"{path}: meta: expected a JSON string (0-d str array), "
                        f"found {arr.dtype} of shape {arr.shape}")
    raw = str(arr)
    try:
        meta = json.loads(raw) if raw else {}
    except json.JSONDecodeError as err:
        raise DumpError(f"{path}: meta is not a JSON string: {err}") from err
    if not isinstance(meta, dict):
        raise DumpError(f"{path}: meta: expected a JSON object, found {type(meta).__name__}")
    return meta


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
