"""The AudioCaps text-to-audio leaderboard: conversion of the source snapshot, placement of ours.

``data/audiocaps_t2a_leaderboard.source.csv`` is the public leaderboard snapshot as
received (columns ``model, settings, date, r@1, col2, col3, col4``; ``—`` marks an empty
cell). Only ``r@1`` is labelled there. :func:`convert_leaderboard` writes
``data/audiocaps_t2a_leaderboard.csv`` with explicit columns:

- ``model``, ``settings``, ``date`` as given; ``source`` names the snapshot;
- ``protocol``: ``fine-tuned`` or ``zero-shot`` when ``settings`` says so, else
  ``unspecified`` (never guessed);
- ``r1`` = ``r@1``; ``r10``, ``r5``, ``map10`` = ``col2``, ``col3``, ``col4`` only when all
  three are given and ``r1 <= col3 <= col2`` (the order of the full LAION-CLAP row
  34.1, 82.7, 69.7, 49 on its model card). That reading is not confirmed by the source,
  so such rows have ``verified`` false and say so in ``note``; rows with only some of
  ``col2..col4`` keep them unmapped (raw values in ``raw_col2..raw_col4``).
- Numbers are percentages, as in the source.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from clapcap.data.csv_reader import file_line, missing_columns, read_text_table
from clapcap.utils.io import atomic_path

logger = logging.getLogger(__name__)

SOURCE_NAME = "audiocaps_t2a_leaderboard.source.csv"
CONVERTED_NAME = "audiocaps_t2a_leaderboard.csv"
SOURCE_LABEL = "public AudioCaps text-to-audio leaderboard snapshot (source columns r@1, col2..col4)"
COLUMNS = ("model", "protocol", "r1", "r5", "r10", "map10", "settings", "date", "source",
           "verified", "note", "raw_col2", "raw_col3", "raw_col4")
METRICS = ("r1", "r5", "r10", "map10")
NOTE_MAPPED = ("col2..col4 are unlabelled at the source; read as R@10, R@5, mAP@10 "
               "(order of the LAION-CLAP model-card row); unverified")
NOTE_UNMAPPED = "col2..col4 partly given and unlabelled at the source; left unmapped"
_SOURCE_COLUMNS = ("model", "settings", "date", "r@1", "col2", "col3", "col4")


def data_path(name: str) -> Path:
    """Path of a file in ``clapcap/reporting/data``."""
    return Path(str(resources.files("clapcap.reporting").joinpath("data", name)))


def _number(value: Any, where: str) -> float | None:
    text = str(value).strip()
    if text in ("", "—", "-", "–", "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{where}: expected a number or '—', found {text!r}") from None


def parse_protocol(settings: str) -> str:
    """``fine-tuned``, ``zero-shot`` or ``unspecified`` from a settings string."""
    text = settings.lower()
    if re.search(r"fine-?tun", text):
        return "fine-tuned"
    if re.search(r"zero-?shot", text):
        return "zero-shot"
    return "unspecified"


def convert_row(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Convert one source row (see the module docstring). Returns the converted row."""
    r1 = _number(row["r@1"], f"{where}: r@1")
    if r1 is None:
        raise ValueError(f"{where}: r@1 is empty; every leaderboard row needs R@1")
    raw = [_number(row[c], f"{where}: {c}") for c in ("col2", "col3", "col4")]
    out: dict[str, Any] = {"model": str(row["model"]).strip(), "protocol": parse_protocol(str(row["settings"])),
                           "r1": r1, "r5": None, "r10": None, "map10": None,
                           "settings": str(row["settings"]).strip(), "date": str(row["date"]).strip(),
                           "source": SOURCE_LABEL, "verified": True, "note": "",
                           "raw_col2": raw[0], "raw_col3": raw[1], "raw_col4": raw[2]}
    if all(v is not None for v in raw) and r1 <= raw[1] <= raw[0]:
        out.update(r10=raw[0], r5=raw[1], map10=raw[2], verified=False, note=NOTE_MAPPED)
    elif any(v is not None for v in raw):
        out["note"] = NOTE_UNMAPPED
    return out


def convert_leaderboard(source: str | Path, out: str | Path) -> pd.DataFrame:
    """Convert the source snapshot CSV to the explicit leaderboard CSV ``out``.

    Returns:
        The converted DataFrame (columns :data:`COLUMNS`).

    Raises:
        FileNotFoundError: when ``source`` is missing.
        ValueError: on a missing column or a non-numeric cell (naming the row).
    """
    source = Path(source)
    df = read_text_table(source, "leaderboard source")
    missing = missing_columns(df, _SOURCE_COLUMNS)
    if missing:
        raise ValueError(f"{source}: missing column(s) {', '.join(missing)}; expected {', '.join(_SOURCE_COLUMNS)}")
    rows = [convert_row(r, f"{source}: row {file_line(df, i)}") for i, r in enumerate(df.to_dict("records"))]
    converted = pd.DataFrame(rows, columns=list(COLUMNS))
    with atomic_path(out) as tmp:
        converted.to_csv(tmp, index=False)
    logger.info("converted %d leaderboard rows to %s", len(converted), out)
    return converted


def load_leaderboard(path: str | Path | None = None) -> pd.DataFrame:
    """Read the converted leaderboard (the packaged one by default).

    Raises:
        FileNotFoundError: when the file is missing.
    """
    path = Path(path) if path else data_path(CONVERTED_NAME)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: leaderboard file not found")
    df = pd.read_csv(path)
    df["verified"] = df["verified"].astype(bool)
    df["note"] = df["note"].fillna("")
    return df


_KEY_ALIASES = {"r1": "r1", "r5": "r5", "r10": "r10", "map10": "map10", "recall1": "r1",
                "recall5": "r5", "recall10": "r10", "map": "map10"}


def normalise_metric_key(key: str) -> str | None:
    """Map ``t2a/R@1``, ``R1``, ``t2a_mAP@10``, ... to ``r1``/``r5``/``r10``/``map10``."""
    text = key.lower().replace("text_to_audio", "").replace("t2a", "")
    text = re.sub(r"[^a-z0-9]", "", text)
    return _KEY_ALIASES.get(text)


def our_row(name: str, metrics: Mapping[str, Any], *, dataset: str, unit: str = "fraction",
            protocol: str = "unspecified") -> dict[str, Any]:
    """A leaderboard row for one of our retrieval results (text-to-audio metrics only).

    ``metrics`` keys may be nested or prefixed (``{"t2a": {"R@1": ..}}``, ``t2a/R@10``);
    audio-to-text keys (``a2t``) are ignored. ``unit`` ``fraction`` values are scaled to
    percentages. Comparable with the leaderboard only when ``dataset`` is AudioCaps.

    Raises:
        ValueError: on an unknown unit or when no R@1 is found.
    """
    if unit not in ("fraction", "percent"):
        raise ValueError(f"{name}: unit must be 'fraction' or 'percent', found {unit!r}")
    scale = 100.0 if unit == "fraction" else 1.0
    values: dict[str, float] = {}
    for key, value in _flatten(metrics).items():
        if "a2t" in key.lower() or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        norm = normalise_metric_key(key.rsplit("/", 1)[-1] if "/" in key else key)
        if norm and norm not in values:
            values[norm] = float(value) * scale
    if "r1" not in values:
        raise ValueError(f"{name}: no text-to-audio R@1 among metrics {sorted(_flatten(metrics))}")
    comparable = dataset.strip().lower() == "audiocaps"
    return {"model": name, "protocol": protocol, **{m: values.get(m) for m in METRICS},
            "settings": f"dataset={dataset}", "date": "", "source": "ours", "verified": True,
            "note": "" if comparable else f"evaluated on {dataset}, not AudioCaps: not comparable",
            "ours": True, "comparable": comparable}


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        out.update(_flatten(value, name) if isinstance(value, Mapping) else {name: value})
    return out


def place_in_leaderboard(leaderboard: pd.DataFrame, ours: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Published rows plus ours, sorted by R@1 (descending), with ``rank``, ``ours``, ``comparable``.

    Returns:
        The combined DataFrame; ``rank`` counts published rows strictly above plus one.
    """
    pub = leaderboard.copy()
    pub["ours"], pub["comparable"] = False, True
    combined = pd.DataFrame(pub.to_dict("records") + [dict(r) for r in ours])
    for col in METRICS:
        combined[col] = combined[col].astype(float)
    combined = combined.sort_values("r1", ascending=False, kind="stable").reset_index(drop=True)
    published_r1 = pub["r1"].to_numpy()
    combined["rank"] = [int((published_r1 > r).sum()) + 1 if not math.isnan(r) else None
                        for r in combined["r1"]]
    return combined
