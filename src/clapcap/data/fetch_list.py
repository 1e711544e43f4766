"""The clips to fetch from AudioCaps and MusicCaps CSVs: YouTube id, start and end.

AudioCaps (``audiocap_id, youtube_id, start_time, caption``) lists one row per caption and
10-s segments; MusicCaps (``ytid, start_s, end_s, ...``) one row per clip. The format is
told by the columns. The rows of one id are one clip (the readers' one file per id), so
they must agree on the segment, also across several CSVs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from clapcap.data.csv_reader import file_line, read_text_table
from clapcap.data.manifest import ManifestError

AUDIOCAPS_CLIP_S = 10.0  # AudioCaps segments: start_time .. start_time + 10 s
# A clip id names a file (<audio_dir>/<id>.<ext>) and fills a URL: YouTube ids are 11 of
# [A-Za-z0-9_-]; a leading dot is refused since the fetch's temporary files start with one.
_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}")
_FORMATS = {"audiocaps": ("youtube_id", "start_time", None), "musiccaps": ("ytid", "start_s", "end_s")}


@dataclass(frozen=True)
class FetchClip:
    """One segment to download: ``id`` (the file stem), ``start_s`` .. ``end_s`` and the
    CSV rows (``"<csv name>: row N"``) that list it."""

    id: str
    start_s: float
    end_s: float
    rows: tuple[str, ...]


def _dataset_of(columns: list[str], path: Path) -> str:
    for name, (id_col, start_col, end_col) in _FORMATS.items():
        if {id_col, start_col} <= set(columns) and (end_col is None or end_col in columns):
            return name
    raise ManifestError(f"{path}: neither an AudioCaps CSV (youtube_id, start_time) nor a MusicCaps "
                        f"CSV (ytid, start_s, end_s); found columns {columns}")


def _seconds(value: str, column: str, where: str) -> float:
    try:
        out = float(value.strip())
    except ValueError:
        out = math.nan
    if not math.isfinite(out) or out < 0:
        raise ManifestError(f"{where}: {column} must be a number of seconds >= 0, found {value!r}")
    return out


def _clip_of(rec: dict[str, str], dataset: str, where: str) -> FetchClip:
    id_col, start_col, end_col = _FORMATS[dataset]
    clip_id = rec[id_col].strip()
    if not _ID.fullmatch(clip_id):
        raise ManifestError(f"{where}: {id_col} must be a video id of letters, digits, '_', '-' "
                            f"(and '.' after the first), found {rec[id_col]!r}")
    start = _seconds(rec[start_col], start_col, where)
    end = start + AUDIOCAPS_CLIP_S if end_col is None else _seconds(rec[end_col], end_col, where)
    if end <= start:
        raise ManifestError(f"{where} ({clip_id}): {end_col} {end:g} is not after {start_col} {start:g}")
    return FetchClip(clip_id, start, end, (where,))


def read_fetch_list(csv_paths: list[str | Path]) -> tuple[list[str], list[FetchClip]]:
    """The clips that ``csv_paths`` list, each once, in file and row order.

    Returns:
        ``(dataset of each CSV ("audiocaps" or "musiccaps"), clips)``.

    Raises:
        FileNotFoundError: for a CSV that does not exist.
        ManifestError: naming the file and row of an unknown format, a malformed id or time,
            or an id listed with two different segments.
    """
    datasets, clips = [], {}
    for csv_path in map(Path, csv_paths):
        df = read_text_table(csv_path, "clip list", error=ManifestError)
        dataset = _dataset_of(list(df.columns), csv_path)
        datasets.append(dataset)
        for i, rec in enumerate(df.to_dict("records")):
            clip = _clip_of(rec, dataset, f"{csv_path.name}: row {file_line(df, i)}")
            first = clips.setdefault(clip.id, clip)
            if first is clip:
                continue
            if (first.start_s, first.end_s) != (clip.start_s, clip.end_s):
                raise ManifestError(f"{clip.rows[0]} ({clip.id}): segment {clip.start_s:g}-{clip.end_s:g} s "
                                    f"differs from {first.start_s:g}-{first.end_s:g} s on {first.rows[0]}; "
                                    f"<audio_dir>/<id>.<ext> holds one segment per video")
            clips[clip.id] = FetchClip(first.id, first.start_s, first.end_s, first.rows + clip.rows)
    return datasets, list(clips.values())
