"""The one manifest format every dataset is converted to.

A manifest is a CSV table with one row per clip:

============================  ==========================================================
column                        meaning
============================  ==========================================================
``clip_id``                   unique id (str)
``audio_path``                audio file path, relative to the dataset root
``duration_s``                duration in seconds (float)
``sample_rate``               native sample rate in Hz (int)
``split``                     ``train``, ``val`` or ``test``
``source``                    dataset name (``clotho``, ``audiocaps``, ``synthetic`` ...)
``captions``                  JSON list of one or more reference captions
``is_audioset_eval``          ``True``/``False`` where the source has the flag, else empty
``paraphrases_v1`` (opt.)     JSON list aligned with ``captions``: structure changed
``paraphrases_v2`` (opt.)     JSON list aligned with ``captions``: words and structure changed
``paraphrases_heldout`` (opt.) JSON list aligned with ``captions``: view 2 in words no training
                              caption or view uses (``robust_paraphrase``'s held-out view)
``paraphrases_events`` (opt.) JSON list aligned with ``captions``: only the sound-event words
                              changed (``robust_kinds``' view, :mod:`clapcap.experiments.robust.kinds`)
``paraphrases_attributes``    JSON list aligned with ``captions``: only the attribute words
(opt.)                        changed (``robust_kinds``' view)
``labels`` (opt.)             JSON list of sound-event labels (zero-shot classification)
``meta`` (opt.)               JSON object with source-specific fields
============================  ==========================================================

List and object columns are JSON strings in the file and Python objects in memory.
Paths are relative to the dataset root; an absolute one, or one whose ``..`` climbs above
the root, is refused (see :func:`resolve_audio_path` for symlinks). "row N" in a message
counts the header as row 1 (the first clip is row 2), as a spreadsheet does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from clapcap.errors import InputError
from clapcap.utils.io import atomic_path

REQUIRED_COLUMNS = [
    "clip_id", "audio_path", "duration_s", "sample_rate", "split", "source", "captions",
    "is_audioset_eval",
]
JSON_COLUMNS = ["captions", "paraphrases_v1", "paraphrases_v2", "paraphrases_heldout", "paraphrases_events",
                "paraphrases_attributes", "labels", "meta"]
OPTIONAL_COLUMNS = ["paraphrases_v1", "paraphrases_v2", "paraphrases_heldout", "paraphrases_events",
                    "paraphrases_attributes", "labels", "meta"]
SPLITS = ("train", "val", "test")


class ManifestError(InputError, ValueError):
    """A manifest row or file does not follow the manifest format."""


def resolve_audio_path(root: str | Path, audio_path: str | Path) -> Path:
    """The file ``audio_path`` names under the dataset ``root``.

    The root itself is resolved first (it may be, or lie under, a symlink). The path is then
    measured against it as written: it must be relative, and its ``..`` components must not
    climb above the root. Symlinks *inside* the root (an ``audio`` folder on shared storage,
    or a file linked from a full copy of the dataset) are the dataset owner's layout and are
    followed wherever they point, like any folder the owner chose as ``root``; only the
    metadata's text is kept inside the root. ``a/../b`` is read as ``b`` under the root even
    when ``a`` is a symlink, so a path never reaches outside through ``..``.

    Returns:
        ``<resolved root>/<normalised audio_path>`` (symlinks below the root not resolved).

    Raises:
        ManifestError: when the path is absolute or its ``..`` climbs above ``root``.
    """
    root = Path(root).resolve()
    text = str(audio_path)
    if Path(text).is_absolute():
        raise ManifestError(f"audio_path {text!r} is absolute; it must be relative to {root}")
    rel = Path(os.path.normpath(text))  # lexical: "a/../b" -> "b", "a/../../b" -> "../b"
    if rel.parts[:1] == ("..",):
        raise ManifestError(f"audio_path {text!r} resolves outside the dataset root {root}: "
                            f"its '..' climbs above the root")
    return root / rel


def _parse_json_cell(value: Any, column: str, row: int, path: Path | str) -> Any:
    if isinstance(value, (list, dict)):
        return value
    if value is None or (isinstance(value, float) and pd.isna(value)) or value == "":
        return None
    try:
        return json.loads(value)
    except (TypeError, json.JSONDecodeError) as err:
        raise ManifestError(f"{path}: row {row}: column {column} is not valid JSON: {value!r}") from err


def _parse_flag(value: Any) -> bool | None:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value == "":
        return None
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise ManifestError(f"is_audioset_eval must be true/false or empty, found {value!r}")
    return bool(value)


def normalize(df: pd.DataFrame, *, origin: str | Path = "<memory>") -> pd.DataFrame:
    """Check columns and per-row types; parse JSON columns. Returns a new DataFrame.

    Raises:
        ManifestError: naming ``origin``, the row and the expectation.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ManifestError(f"{origin}: missing column(s) {missing}; expected {REQUIRED_COLUMNS}")
    out = df.copy()
    out["clip_id"] = out["clip_id"].astype(str)
    out["audio_path"] = out["audio_path"].astype(str)
    for col in JSON_COLUMNS:
        if col in out.columns:
            out[col] = [_parse_json_cell(v, col, i + 2, origin) for i, v in enumerate(out[col])]
    for i, caps in enumerate(out["captions"]):
        if not isinstance(caps, list) or not caps or not all(isinstance(c, str) for c in caps):
            raise ManifestError(f"{origin}: row {i + 2} (clip {out['clip_id'].iat[i]}): captions must be "
                                f"a non-empty list of str, found {caps!r}")
    bad_split = sorted(set(out["split"]) - set(SPLITS))
    if bad_split:
        raise ManifestError(f"{origin}: unknown split value(s) {bad_split}; expected {list(SPLITS)}")
    out["is_audioset_eval"] = [_parse_flag(v) for v in out["is_audioset_eval"]]
    out["duration_s"] = out["duration_s"].astype(float)
    out["sample_rate"] = out["sample_rate"].astype(int)
    return out


def write_manifest(df: pd.DataFrame, path: str | Path) -> Path:
    """Validate and atomically write a manifest CSV (JSON-encoding list columns)."""
    df = normalize(df, origin=path)
    cols = REQUIRED_COLUMNS + [c for c in OPTIONAL_COLUMNS if c in df.columns]
    out = df[cols].copy()
    for col in JSON_COLUMNS:
        if col in out.columns:
            out[col] = [json.dumps(v, ensure_ascii=False, sort_keys=True) if v is not None else ""
                        for v in out[col]]
    out["is_audioset_eval"] = ["" if v is None else str(bool(v)) for v in out["is_audioset_eval"]]
    with atomic_path(path) as tmp:
        out.to_csv(tmp, index=False)
    return Path(path)


def read_manifest(path: str | Path) -> pd.DataFrame:
    """Read and validate a manifest CSV.

    Raises:
        FileNotFoundError: when ``path`` does not exist.
        ManifestError: when a column or row is malformed.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: manifest not found")
    df = pd.read_csv(path, dtype={"clip_id": str, "audio_path": str, "split": str, "source": str},
                     keep_default_na=False)
    return normalize(df, origin=path)


def caption_table(df: pd.DataFrame, column: str = "captions") -> pd.DataFrame:
    """Explode a manifest into one row per caption: ``clip_id``, ``caption_index``, ``caption``."""
    rows = [
        {"clip_id": cid, "caption_index": j, "caption": cap}
        for cid, caps in zip(df["clip_id"], df[column], strict=True)
        for j, cap in enumerate(caps or [])
    ]
    return pd.DataFrame(rows, columns=["clip_id", "caption_index", "caption"])
