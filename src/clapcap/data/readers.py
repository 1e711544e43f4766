"""Readers that turn a local copy of a dataset into the manifest format.

Supported layouts (``root`` is the dataset folder; audio paths are relative to it):

- **Clotho**: a CSV with ``file_name, caption_1 .. caption_5``; audio at
  ``<audio_dir>/<file_name>``. Clotho's own split files may be given per split.
- **AudioCaps**: a CSV with ``audiocap_id, youtube_id, start_time, caption``; several rows
  per ``youtube_id`` are several captions of one clip (clip id: the ``youtube_id``), so they
  must agree on ``start_time``, and each ``audiocap_id`` appears once. Audio at
  ``<audio_dir>/<youtube_id>.<ext>`` (the usual yt-dlp naming), ``<ext>`` the first of
  ``exts`` that exists.
- **MusicCaps**: a CSV with ``ytid, start_s, end_s, aspect_list, caption,
  is_audioset_eval, is_balanced_subset``; audio at ``<audio_dir>/<ytid>.<ext>``.
- **Folder**: any audio folder plus a metadata CSV with ``file_name`` (relative to ``root``)
  and one or more ``caption*`` columns. The clip id is ``file_name`` without its extension
  (``dog/rec.wav`` -> ``dog/rec``), unique within the dataset even with one folder per class;
  a file at the top of ``root`` keeps its stem.

Every data row of a CSV becomes a clip (AudioCaps: a caption of a clip); none is dropped
silently. A malformed row (empty id or caption, a Clotho row with fewer than five
captions, a number or flag that does not parse, a clip listed twice, a wrong field count)
raises :class:`~clapcap.data.manifest.ManifestError` naming the file and the row as its
1-based file line (the header is line 1). Files that are missing or unreadable, hold
NaN/infinite samples, or (given :class:`AudioLimits`) have a duration or sample rate out of
range, raise :class:`~clapcap.data.audio.AudioError` (naming the audio file, the clip and
the CSV row), or, with ``on_error="skip"``, are listed in the returned report and left out.
The returned frame's ``attrs["source_rows"]`` holds each clip's ``"<csv>: row N"``.
"""

from __future__ import annotations

import ast
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

import pandas as pd

from clapcap.data.audio import AudioError, LoadReport, audio_info
from clapcap.data.csv_reader import file_line, read_text_table
from clapcap.data.manifest import REQUIRED_COLUMNS, SPLITS, ManifestError, resolve_audio_path

logger = logging.getLogger(__name__)
OnError = Literal["raise", "skip"]
Record = tuple[str, dict[str, str]]  # ("<csv>: row N", {column: cell text})
ROWS_ATTR = "source_rows"  # DataFrame.attrs key: each clip's "<csv>: row N"


@dataclass(frozen=True)
class AudioLimits:
    """The duration and sample-rate range a clip must have (``data.min_duration_s``,
    ``data.max_duration_s``, ``data.allowed_sample_rates``); ``None`` rates allow any."""

    min_duration_s: float = 0.0
    max_duration_s: float = math.inf
    sample_rates: tuple[int, ...] | None = None

    def check(self, path: Path, duration_s: float, sample_rate: int) -> None:
        """Raises AudioError naming ``path`` and the limit it breaks."""
        if duration_s < self.min_duration_s:
            raise AudioError(path, f"too short: {duration_s:.3f} s < data.min_duration_s {self.min_duration_s:g} s")
        if duration_s > self.max_duration_s:
            raise AudioError(path, f"too long: {duration_s:.3f} s > data.max_duration_s {self.max_duration_s:g} s")
        if self.sample_rates is not None and sample_rate not in self.sample_rates:
            raise AudioError(path, f"sample rate {sample_rate} Hz not in data.allowed_sample_rates "
                                   f"{list(self.sample_rates)}")


def _require_columns(df: pd.DataFrame, columns: list[str], path: Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ManifestError(f"{path}: missing column(s) {missing}; found {list(df.columns)}")


def _short(value: str, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _read_records(path: Path, required: list[str]) -> tuple[pd.DataFrame, list[Record]]:
    """The table and its data rows, each with ``"<path>: row N"`` (N the 1-based file line).

    Raises:
        FileNotFoundError: when ``path`` does not exist.
        ManifestError: on an unparsable CSV, a missing column or no data row.
    """
    df = read_text_table(path, "metadata file", error=ManifestError)
    _require_columns(df, required, path)
    if df.empty:
        raise ManifestError(f"{path}: no data rows after the header")
    return df, [(f"{path}: row {file_line(df, i)}", rec) for i, rec in enumerate(df.to_dict("records"))]


def _name(value: str, column: str, where: str) -> str:
    """A non-empty id or file name cell, returned unchanged."""
    if not value.strip() or "\x00" in value:
        raise ManifestError(f"{where}: {column} must be a non-empty name without NUL, found {_short(value)}")
    return value


def _number(value: str, kind: type[int] | type[float], column: str, where: str) -> float:
    """An ``int`` or finite ``float`` cell."""
    try:
        out = kind(value.strip())
        if math.isfinite(out):
            return out
    except ValueError:
        pass
    raise ManifestError(f"{where}: {column} must be {'an integer' if kind is int else 'a finite number'}, "
                        f"found {_short(value)}")


def _row(where: str) -> str:
    """``row N`` of a ``"<csv>: row N"``."""
    return where.rsplit(": ", 1)[-1]


def _relative_id(name: str) -> str:
    """A clip id from a file name relative to the dataset: the path without its extension
    (POSIX), so ``x/rec.wav`` and ``y/rec.wav`` differ and a top-level file's id is its stem."""
    path = PurePosixPath(name)
    return path.with_suffix("").as_posix() if path.name else ""  # "." names no file: refused


def _check_unique(entries: list[dict]) -> None:
    seen: dict[str, str] = {}
    for entry in entries:
        first = seen.setdefault(entry["clip_id"], entry["_where"])
        if first != entry["_where"]:
            raise ManifestError(f"{entry['_where']}: clip {entry['clip_id']!r} is already on "
                                f"{_row(first)}; list each clip once")


def _rows_with_audio(
    root: Path, entries: list[dict], on_error: OnError, limits: AudioLimits | None
) -> tuple[pd.DataFrame, LoadReport]:
    """Fill ``duration_s``/``sample_rate`` from each file's header; refuse float files
    holding NaN/inf samples and files out of ``limits``; handle bad files as ``on_error`` says."""
    _check_unique(entries)
    rows, wheres, report = [], [], LoadReport()
    for entry in entries:
        where = entry.pop("_where")
        try:
            full = resolve_audio_path(root, entry["audio_path"])
        except ManifestError as err:
            raise ManifestError(f"{where}: {err}") from err
        try:
            entry["duration_s"], entry["sample_rate"] = audio_info(full, check_samples=True)
            if limits is not None:
                limits.check(full, entry["duration_s"], entry["sample_rate"])
        except AudioError as err:
            if on_error == "raise":
                raise AudioError(err.path, f"{err.reason} (clip {entry['clip_id']!r}, listed in {where})") from err
            report.add(err)
            continue
        rows.append(entry)
        wheres.append(where)
    out = pd.DataFrame(rows) if rows else pd.DataFrame(columns=REQUIRED_COLUMNS)
    out.attrs[ROWS_ATTR] = wheres
    return out, report


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for the filesystem, or with a NUL, cannot exist
        return False


def _find_audio(root: Path, audio_dir: str, stem: str, exts: tuple[str, ...]) -> str:
    for ext in exts:
        rel = f"{audio_dir}/{stem}{ext}" if audio_dir else f"{stem}{ext}"
        if _exists(root / rel):
            return rel
    return f"{audio_dir}/{stem}{exts[0]}" if audio_dir else f"{stem}{exts[0]}"


def read_clotho(root: str | Path, csv_path: str | Path, *, audio_dir: str = "audio",
                split: str = "train", on_error: OnError = "raise",
                limits: AudioLimits | None = None) -> tuple[pd.DataFrame, LoadReport]:
    """Read a Clotho captions CSV. Returns ``(manifest rows, report of skipped files)``.

    Every row must have its five captions: a blank one is refused, as AudioCaps refuses an
    empty caption, since a clip with fewer captions silently changes the query set.

    Raises:
        ManifestError: naming the file and row (1-based file line) of a malformed row, and
            the column of an empty caption.
        AudioError: for a missing, unreadable or (``limits``) out-of-range audio file,
            unless ``on_error="skip"``.
    """
    root, csv_path = Path(root), Path(csv_path)
    cap_cols = [f"caption_{i}" for i in range(1, 6)]
    _, records = _read_records(csv_path, ["file_name", *cap_cols])
    entries = []
    for where, rec in records:
        name = _name(rec["file_name"], "file_name", where)
        caps = [rec[c].strip() for c in cap_cols]
        if not any(caps):
            raise ManifestError(f"{where} ({name}): no non-empty caption")
        if not all(caps):
            empty = [c for c, cap in zip(cap_cols, caps, strict=True) if not cap]
            raise ManifestError(f"{where} ({name}): empty caption in column(s) {', '.join(empty)}; "
                                f"a Clotho row has five captions (caption_1..caption_5)")
        rel = f"{audio_dir}/{name}" if audio_dir else name
        entries.append({"clip_id": _name(Path(name).stem, "clip id (file_name stem)", where),
                        "audio_path": rel, "split": split, "source": "clotho", "captions": caps,
                        "is_audioset_eval": None, "_where": where})
    return _rows_with_audio(root, entries, on_error, limits)


def read_audiocaps(root: str | Path, csv_path: str | Path, *, audio_dir: str = "audio",
                   split: str = "train", exts: tuple[str, ...] = (".wav", ".flac", ".mp3", ".ogg"),
                   on_error: OnError = "raise", limits: AudioLimits | None = None,
                   ) -> tuple[pd.DataFrame, LoadReport]:
    """Read an AudioCaps CSV (one row per caption). Returns ``(rows, report)``.

    Raises:
        ManifestError: naming the file and row of a malformed row (an empty caption too).
        AudioError: for a missing, unreadable or (``limits``) out-of-range audio file,
            unless ``on_error="skip"``.
    """
    root, csv_path = Path(root), Path(csv_path)
    _, records = _read_records(csv_path, ["audiocap_id", "youtube_id", "start_time", "caption"])
    clips: dict[str, dict] = {}
    cap_rows: dict[int, str] = {}  # audiocap_id -> "<csv>: row N"
    for where, rec in records:
        ytid = _name(rec["youtube_id"], "youtube_id", where)
        caption = rec["caption"].strip()
        if not caption:
            raise ManifestError(f"{where} ({ytid}): empty caption")
        cap_id = int(_number(rec["audiocap_id"], int, "audiocap_id", where))
        start = _number(rec["start_time"], float, "start_time", where)
        first = cap_rows.setdefault(cap_id, where)
        if first != where:
            raise ManifestError(f"{where} ({ytid}): audiocap_id {cap_id} is already on {_row(first)}; "
                                f"each caption has its own id")
        if ytid not in clips:
            clips[ytid] = {"clip_id": ytid, "audio_path": _find_audio(root, audio_dir, ytid, exts),
                           "split": split, "source": "audiocaps", "captions": [], "is_audioset_eval": None,
                           "meta": {"audiocap_ids": [], "start_time": start}, "_where": where}
        elif clips[ytid]["meta"]["start_time"] != start:
            # One file per youtube_id holds one segment: a second one cannot be told apart.
            raise ManifestError(f"{where} ({ytid}): start_time {start:g} differs from "
                                f"{clips[ytid]['meta']['start_time']:g} on {_row(clips[ytid]['_where'])} (the same "
                                f"youtube_id); the audio <audio_dir>/<youtube_id>.<ext> holds one segment, so "
                                f"list one segment per video")
        clips[ytid]["captions"].append(caption)
        clips[ytid]["meta"]["audiocap_ids"].append(cap_id)
    return _rows_with_audio(root, list(clips.values()), on_error, limits)


def _parse_bool(value: str, where: str) -> bool:
    text = value.strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ManifestError(f"{where}: expected a boolean, found {_short(value)}")


def _aspect_list(value: str, where: str) -> list[str]:
    if not value.strip():
        return []
    try:
        aspects = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as err:
        raise ManifestError(f"{where}: aspect_list is not a list literal: {_short(value)}") from err
    if not isinstance(aspects, (list, tuple)) or not all(isinstance(a, str) for a in aspects):
        raise ManifestError(f"{where}: aspect_list must be a list of strings, found {_short(value)}")
    return list(aspects)


def read_musiccaps(root: str | Path, csv_path: str | Path, *, audio_dir: str = "audio",
                   split: str = "train", exts: tuple[str, ...] = (".wav", ".flac", ".mp3", ".ogg"),
                   on_error: OnError = "raise", limits: AudioLimits | None = None,
                   ) -> tuple[pd.DataFrame, LoadReport]:
    """Read the MusicCaps CSV (one caption per clip). Returns ``(rows, report)``.

    Raises:
        ManifestError: naming the file and row of a malformed row.
        AudioError: for a missing, unreadable or (``limits``) out-of-range audio file,
            unless ``on_error="skip"``.
    """
    root, csv_path = Path(root), Path(csv_path)
    cols = ["ytid", "start_s", "end_s", "aspect_list", "caption", "is_audioset_eval", "is_balanced_subset"]
    _, records = _read_records(csv_path, cols)
    entries = []
    for row_where, rec in records:
        ytid = _name(rec["ytid"], "ytid", row_where)
        where = f"{row_where} ({ytid})"
        if not rec["caption"].strip():
            raise ManifestError(f"{where}: empty caption")
        meta = {"aspect_list": _aspect_list(rec["aspect_list"], where),
                "start_s": _number(rec["start_s"], float, "start_s", where),
                "end_s": _number(rec["end_s"], float, "end_s", where),
                "is_balanced_subset": _parse_bool(rec["is_balanced_subset"], where)}
        entries.append({"clip_id": ytid, "audio_path": _find_audio(root, audio_dir, ytid, exts),
                        "split": split, "source": "musiccaps", "captions": [rec["caption"].strip()],
                        "is_audioset_eval": _parse_bool(rec["is_audioset_eval"], where),
                        "meta": meta, "_where": row_where})
    return _rows_with_audio(root, entries, on_error, limits)


def read_folder(root: str | Path, metadata_csv: str | Path, *, source: str = "folder",
                split: str = "train", on_error: OnError = "raise",
                limits: AudioLimits | None = None) -> tuple[pd.DataFrame, LoadReport]:
    """Read an audio folder with a metadata CSV (``file_name`` + ``caption*`` columns).

    Optional columns: ``split`` (overrides ``split`` when not empty) and ``labels``
    (``;``-separated).

    Raises:
        ManifestError: naming the file and row of a malformed row.
        AudioError: for a missing, unreadable or (``limits``) out-of-range audio file,
            unless ``on_error="skip"``.
    """
    root, metadata_csv = Path(root), Path(metadata_csv)
    df, records = _read_records(metadata_csv, ["file_name"])
    cap_cols = [c for c in df.columns if c.startswith("caption")]
    if not cap_cols:
        raise ManifestError(f"{metadata_csv}: no caption column (expected caption or caption_N)")
    entries = []
    for where, rec in records:
        name = _name(rec["file_name"], "file_name", where)
        caps = [rec[c].strip() for c in cap_cols if rec[c].strip()]
        if not caps:
            raise ManifestError(f"{where} ({name}): no non-empty caption")
        row_split = rec.get("split", "").strip() or split
        if row_split not in SPLITS:
            raise ManifestError(f"{where} ({name}): split must be one of {list(SPLITS)} or empty, "
                                f"found {_short(rec['split'])}")
        entry = {"clip_id": _name(_relative_id(name), "clip id (file_name without extension)", where),
                 "audio_path": name,
                 "split": row_split, "source": source, "captions": caps, "is_audioset_eval": None,
                 "_where": where}
        if rec.get("labels", "").strip():
            entry["labels"] = [s.strip() for s in rec["labels"].split(";") if s.strip()]
        entries.append(entry)
    return _rows_with_audio(root, entries, on_error, limits)


READERS: dict[str, Callable[..., tuple[pd.DataFrame, LoadReport]]] = {
    "clotho": read_clotho, "audiocaps": read_audiocaps, "musiccaps": read_musiccaps, "folder": read_folder,
}
