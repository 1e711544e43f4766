"""Readers that turn a local copy of a dataset into the manifest format.

Supported layouts (``root`` is the dataset folder; audio paths are relative to it):

- **Clotho**: a CSV with ``file_name, caption_1 .. caption_5``; audio at
  ``<audio_dir>/<file_name>``. Clotho's own split files may be given per split.
- **AudioCaps**: a CSV with ``audiocap_id, youtube_id, start_time, caption``; several rows
  per ``youtube_id`` are several captions of one clip. Audio at
  ``<audio_dir>/<youtube_id>.<ext>`` (the usual yt-dlp naming; ``name_pattern`` changes it).
- **MusicCaps**: a CSV with ``ytid, start_s, end_s, aspect_list, caption,
  is_audioset_eval, is_balanced_subset``; audio at ``<audio_dir>/<ytid>.<ext>``.
- **Folder**: any audio folder plus a metadata CSV with ``file_name`` and one or more
  ``caption*`` columns.

Files that are missing or unreadable, or hold NaN/infinite samples, raise
:class:`~clapcap.data.audio.AudioError`, or, with ``on_error="skip"``, are listed in the
returned report and left out. "row N" in a message is the CSV's row as a spreadsheet
numbers it: the header is row 1, so the first data row is row 2 (the file's line N when no
cell spans lines).
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pandas as pd

from clapcap.data.audio import AudioError, LoadReport, audio_info
from clapcap.data.manifest import ManifestError, resolve_audio_path

logger = logging.getLogger(__name__)
OnError = Literal["raise", "skip"]


def _require_columns(df: pd.DataFrame, columns: list[str], path: Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ManifestError(f"{path}: missing column(s) {missing}; found {list(df.columns)}")


def _read_csv(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: metadata file not found")
    return pd.read_csv(path, keep_default_na=False)


def _rows_with_audio(
    root: Path, entries: list[dict], on_error: OnError, report: LoadReport
) -> list[dict]:
    """Fill ``duration_s``/``sample_rate`` from each file's header and refuse float files
    holding NaN/inf samples; handle bad files as ``on_error`` says."""
    rows = []
    for entry in entries:
        try:
            full = resolve_audio_path(root, entry["audio_path"])
            entry["duration_s"], entry["sample_rate"] = audio_info(full, check_samples=True)
        except AudioError as err:
            if on_error == "raise":
                raise
            report.add(err)
            continue
        rows.append(entry)
    return rows


def _find_audio(root: Path, audio_dir: str, stem: str, exts: tuple[str, ...]) -> str:
    for ext in exts:
        rel = f"{audio_dir}/{stem}{ext}" if audio_dir else f"{stem}{ext}"
        if (root / rel).exists():
            return rel
    return f"{audio_dir}/{stem}{exts[0]}" if audio_dir else f"{stem}{exts[0]}"


def read_clotho(root: str | Path, csv_path: str | Path, *, audio_dir: str = "audio",
                split: str = "train", on_error: OnError = "raise") -> tuple[pd.DataFrame, LoadReport]:
    """Read a Clotho captions CSV. Returns ``(manifest rows, report of skipped files)``."""
    root, csv_path = Path(root), Path(csv_path)
    df = _read_csv(csv_path)
    cap_cols = [f"caption_{i}" for i in range(1, 6)]
    _require_columns(df, ["file_name", *cap_cols], csv_path)
    entries = []
    for i, rec in enumerate(df.to_dict("records")):
        caps = [str(rec[c]).strip() for c in cap_cols if str(rec[c]).strip()]
        if not caps:
            raise ManifestError(f"{csv_path}: row {i + 2} ({rec['file_name']}): no non-empty caption")
        rel = f"{audio_dir}/{rec['file_name']}" if audio_dir else str(rec["file_name"])
        entries.append({"clip_id": Path(rec["file_name"]).stem, "audio_path": rel, "split": split,
                        "source": "clotho", "captions": caps, "is_audioset_eval": None})
    report = LoadReport()
    return pd.DataFrame(_rows_with_audio(root, entries, on_error, report)), report


def read_audiocaps(root: str | Path, csv_path: str | Path, *, audio_dir: str = "audio",
                   split: str = "train", exts: tuple[str, ...] = (".wav", ".flac", ".mp3", ".ogg"),
                   on_error: OnError = "raise") -> tuple[pd.DataFrame, LoadReport]:
    """Read an AudioCaps CSV (one row per caption). Returns ``(rows, report)``."""
    root, csv_path = Path(root), Path(csv_path)
    df = _read_csv(csv_path)
    _require_columns(df, ["audiocap_id", "youtube_id", "start_time", "caption"], csv_path)
    entries = []
    for ytid, group in df.groupby("youtube_id", sort=False):
        caps = [str(c).strip() for c in group["caption"] if str(c).strip()]
        if not caps:
            raise ManifestError(f"{csv_path}: youtube_id {ytid}: no non-empty caption")
        entries.append({"clip_id": str(ytid), "audio_path": _find_audio(root, audio_dir, str(ytid), exts),
                        "split": split, "source": "audiocaps", "captions": caps, "is_audioset_eval": None,
                        "meta": {"audiocap_ids": [int(x) for x in group["audiocap_id"]],
                                 "start_time": float(group["start_time"].iloc[0])}})
    report = LoadReport()
    return pd.DataFrame(_rows_with_audio(root, entries, on_error, report)), report


def _parse_bool(value, where: str) -> bool:
    text = str(value).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ManifestError(f"{where}: expected a boolean, found {value!r}")


def read_musiccaps(root: str | Path, csv_path: str | Path, *, audio_dir: str = "audio",
                   split: str = "train", exts: tuple[str, ...] = (".wav", ".flac", ".mp3", ".ogg"),
                   on_error: OnError = "raise") -> tuple[pd.DataFrame, LoadReport]:
    """Read the MusicCaps CSV (one caption per clip). Returns ``(rows, report)``."""
    root, csv_path = Path(root), Path(csv_path)
    df = _read_csv(csv_path)
    cols = ["ytid", "start_s", "end_s", "aspect_list", "caption", "is_audioset_eval", "is_balanced_subset"]
    _require_columns(df, cols, csv_path)
    entries = []
    for i, rec in enumerate(df.to_dict("records")):
        where = f"{csv_path}: row {i + 2} ({rec['ytid']})"
        if not str(rec["caption"]).strip():
            raise ManifestError(f"{where}: empty caption")
        try:
            aspects = ast.literal_eval(str(rec["aspect_list"])) if rec["aspect_list"] else []
        except (ValueError, SyntaxError) as err:
            raise ManifestError(f"{where}: aspect_list is not a list literal: {rec['aspect_list']!r}") from err
        entries.append({"clip_id": str(rec["ytid"]), "audio_path": _find_audio(root, audio_dir, str(rec["ytid"]), exts),
                        "split": split, "source": "musiccaps", "captions": [str(rec["caption"]).strip()],
                        "is_audioset_eval": _parse_bool(rec["is_audioset_eval"], where),
                        "meta": {"aspect_list": list(aspects), "start_s": float(rec["start_s"]),
                                 "end_s": float(rec["end_s"]),
                                 "is_balanced_subset": _parse_bool(rec["is_balanced_subset"], where)}})
    report = LoadReport()
    return pd.DataFrame(_rows_with_audio(root, entries, on_error, report)), report


def read_folder(root: str | Path, metadata_csv: str | Path, *, source: str = "folder",
                split: str = "train", on_error: OnError = "raise") -> tuple[pd.DataFrame, LoadReport]:
    """Read an audio folder with a metadata CSV (``file_name`` + ``caption*`` columns)."""
    root, metadata_csv = Path(root), Path(metadata_csv)
    df = _read_csv(metadata_csv)
    cap_cols = [c for c in df.columns if c.startswith("caption")]
    _require_columns(df, ["file_name"], metadata_csv)
    if not cap_cols:
        raise ManifestError(f"{metadata_csv}: no caption column (expected caption or caption_N)")
    entries = []
    for i, rec in enumerate(df.to_dict("records")):
        caps = [str(rec[c]).strip() for c in cap_cols if str(rec[c]).strip()]
        if not caps:
            raise ManifestError(f"{metadata_csv}: row {i + 2} ({rec['file_name']}): no non-empty caption")
        entry = {"clip_id": Path(str(rec["file_name"])).stem, "audio_path": str(rec["file_name"]),
                 "split": str(rec.get("split") or split), "source": source, "captions": caps,
                 "is_audioset_eval": None}
        if rec.get("labels"):
            entry["labels"] = [s.strip() for s in str(rec["labels"]).split(";") if s.strip()]
        entries.append(entry)
    report = LoadReport()
    return pd.DataFrame(_rows_with_audio(root, entries, on_error, report)), report


READERS: dict[str, Callable[..., tuple[pd.DataFrame, LoadReport]]] = {
    "clotho": read_clotho, "audiocaps": read_audiocaps, "musiccaps": read_musiccaps, "folder": read_folder,
}
