"""Build the items of a pairwise study from predictions JSONs and a reference split.

A *pairs file* (CSV) has one row per item with the columns ``item_id``, ``pair_id``,
``clip_id``, ``system_a``, ``system_b``, ``caption_a``, ``caption_b``, ``reference``
(the first reference caption of the clip, which text judges see) and ``audio_path``
(may be empty when the split gives none: text judges can still vote, but the rating
page refuses such a file; written relative to the pairs file's folder, and read back as
absolute paths). An ``audio_path`` that names no file is refused by
:func:`make_pairs` and :func:`read_pairs`, with the file line of the clip (1-based, the
header is line 1).

Every unordered pair of systems is compared on every clip that all systems captioned.
The system order inside a pair is alphabetical, so ``pair_id`` does not depend on the
order of the command-line arguments; the order *shown* to a rater is randomised later.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from clapcap.data.csv_reader import TableError, file_line, missing_columns, read_text_table
from clapcap.pairwise.ratings import RatingsError, make_pair_id
from clapcap.utils.io import atomic_path, read_json

logger = logging.getLogger(__name__)

PAIR_COLUMNS = ("item_id", "pair_id", "clip_id", "system_a", "system_b", "caption_a",
                "caption_b", "reference", "audio_path")
REFERENCE_SYSTEM = "reference"


def read_predictions(path: str | Path) -> dict[str, str]:
    """Read a predictions JSON ``{clip_id: caption}``.

    Raises:
        FileNotFoundError: when the file is missing.
        ValueError: when it is not a mapping of strings to non-empty strings.
    """
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object {{clip_id: caption}}, found {type(data).__name__}")
    for key, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{path}: clip {key!r}: expected a non-empty caption string, "
                             f"found {type(value).__name__} {value!r}")
    return {str(k): v.strip() for k, v in data.items()}


def read_reference(path: str | Path) -> pd.DataFrame:
    """Read a split CSV (``clip_id``, ``caption``, optional ``audio_path``): one row per clip.

    Several rows per clip are several references; the first is kept as the clip's reference.
    The result has the columns ``caption``, ``captions`` (every reference of the clip, in file
    order), ``audio_path`` (absolute, or ``""``) and ``line`` (the file line of the clip's first
    row); ``attrs["origin"]`` is the path.

    Raises:
        FileNotFoundError: when the file is missing.
        TableError (a ValueError): when the file is not a CSV table, a required column is
            missing, or a row has an empty ``clip_id`` or ``caption`` or an ``audio_path`` with
            a NUL character (naming its 1-based file line).
    """
    path = Path(path)
    df = read_text_table(path, "reference split")
    missing = missing_columns(df, ("clip_id", "caption"))
    if missing:
        raise TableError(f"{path}: missing column(s) {', '.join(missing)}; expected clip_id, "
                         f"caption and optionally audio_path, found {', '.join(df.columns)}")
    if "audio_path" not in df.columns:
        df["audio_path"] = ""
    bad = ((df["clip_id"].str.strip() == "") | (df["caption"].str.strip() == "")
           | df["audio_path"].str.contains("\x00", regex=False)).to_numpy().nonzero()[0]
    if bad.size:
        raise TableError(f"{path}: row {file_line(df, int(bad[0]))}: expected a clip_id, a non-empty "
                         f"caption and an audio_path without NUL ({bad.size} such rows)")
    root = path.parent
    df["audio_path"] = [str((root / p).resolve()) if p and not Path(p).is_absolute() else p
                        for p in df["audio_path"]]
    df["line"] = [file_line(df, i) for i in range(len(df))]
    groups = df.groupby("clip_id", sort=True)
    out = groups.first()[["caption", "audio_path", "line"]]
    out.insert(1, "captions", groups["caption"].agg(list))
    out.attrs["origin"] = str(path)
    return out


def first_missing_audio(paths: list[str]) -> int | None:
    """The index of the first non-empty audio path that is not a file, else None."""
    for i, path in enumerate(paths):
        if path and not Path(path).is_file():
            return i
    return None


def make_pairs(predictions: Mapping[str, Mapping[str, str]], reference: pd.DataFrame, *,
               include_reference: bool = True, n_clips: int | None = None,
               seed: int = 0) -> pd.DataFrame:
    """Items comparing every pair of systems on the clips all of them captioned.

    Args:
        predictions: ``{system: {clip_id: caption}}`` (two or more systems, or one plus
            ``include_reference``).
        reference: the output of :func:`read_reference`.
        include_reference: add the first reference caption as system ``reference``.
        n_clips: keep a random sample of this many clips (seeded); all when None.

    Returns:
        The pairs DataFrame (columns :data:`PAIR_COLUMNS`).

    Raises:
        ValueError: with fewer than two systems, a reserved system name, no common clip,
            or a kept clip whose ``audio_path`` names no file (with the split's line).
    """
    systems = dict(predictions)
    if include_reference:
        if REFERENCE_SYSTEM in systems:
            raise ValueError(f"system name {REFERENCE_SYSTEM!r} is reserved for the reference captions")
        systems[REFERENCE_SYSTEM] = dict(reference["caption"])
    if len(systems) < 2:
        raise ValueError(f"need at least two systems to compare, found {sorted(systems)}")
    clips = set(reference.index)
    for preds in systems.values():
        clips &= set(preds)
    if not clips:
        raise ValueError(f"no clip is captioned by every system {sorted(systems)} and in the reference")
    clips_sorted = sorted(clips)
    if n_clips is not None and n_clips < len(clips_sorted):
        clips_sorted = sorted(random.Random(seed).sample(clips_sorted, n_clips))
    _check_reference_audio(reference, clips_sorted)
    rows = []
    for a, b in itertools.combinations(sorted(systems), 2):
        pair_id = make_pair_id(a, b)
        for clip in clips_sorted:
            rows.append({"item_id": f"{clip}::{pair_id}", "pair_id": pair_id, "clip_id": clip,
                         "system_a": a, "system_b": b, "caption_a": systems[a][clip],
                         "caption_b": systems[b][clip], "reference": reference.loc[clip, "caption"],
                         "audio_path": reference.loc[clip, "audio_path"]})
    logger.info("made %d items: %d clips x %d system pairs", len(rows), len(clips_sorted),
                len(rows) // len(clips_sorted))
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS))


def _check_reference_audio(reference: pd.DataFrame, clips: list[str]) -> None:
    kept = reference.loc[clips]
    i = first_missing_audio(list(kept["audio_path"]))
    if i is not None:
        where = reference.attrs.get("origin", "reference split")
        if "line" in kept.columns:
            where += f": row {kept['line'].iloc[i]}"
        raise ValueError(f"{where}: clip {kept.index[i]!r}: audio file {kept['audio_path'].iloc[i]} "
                         "not found; fix audio_path, or leave it empty for a text-only study")


def write_pairs(pairs: pd.DataFrame, path: str | Path) -> Path:
    """Atomically write a pairs CSV, each ``audio_path`` relative to the file's folder (no
    machine path in the file: a copy or a clone elsewhere reads the same bytes). Returns the path."""
    folder = Path(path).absolute().parent
    out = pairs.copy()
    out["audio_path"] = [os.path.relpath(p, folder) if p else "" for p in out["audio_path"]]
    with atomic_path(path) as tmp:
        out.to_csv(tmp, index=False)
    return Path(path)


def read_pairs(path: str | Path, *, require_audio: bool = False) -> pd.DataFrame:
    """Read a pairs CSV written by :func:`write_pairs` (``attrs["origin"]`` is the path).

    Args:
        require_audio: refuse rows with an empty ``audio_path`` too (the rating page,
            where people must hear the clip).

    Raises:
        FileNotFoundError: when the file is missing.
        RatingsError: on a missing column, a duplicated ``item_id``, or an ``audio_path``
            that names no file (or is empty, with ``require_audio``), naming the file line.
    """
    path = Path(path)
    df = read_text_table(path, "pairs file")
    missing = missing_columns(df, PAIR_COLUMNS)
    if missing:
        raise RatingsError(f"{path}: missing column(s) {', '.join(missing)}; expected {', '.join(PAIR_COLUMNS)}")
    lines = [file_line(df, i) for i in range(len(df))]
    # A relative audio_path is relative to the pairs file (write_pairs). Made absolute without
    # following links: the rating page checks where a link points (audio_files).
    root = path.absolute().parent
    df["audio_path"] = [os.path.abspath(root / p) if p and not Path(p).is_absolute() else p for p in df["audio_path"]]
    dup = df.duplicated("item_id").to_numpy().nonzero()[0]
    if dup.size:
        raise RatingsError(f"{path}: row {lines[dup[0]]}: duplicated item_id {df['item_id'].iloc[dup[0]]!r}")
    _check_pairs_audio(df, lines, path, require_audio)
    df.attrs["origin"] = str(path)
    return df


def _check_pairs_audio(df: pd.DataFrame, lines: list[int], path: Path, require_audio: bool) -> None:
    if require_audio:
        empty = (df["audio_path"].str.strip() == "").to_numpy().nonzero()[0]
        if empty.size:
            i = int(empty[0])
            raise RatingsError(f"{path}: row {lines[i]}: clip {df['clip_id'].iloc[i]!r} has no audio_path; "
                               f"the rating page needs every clip's audio ({empty.size} such rows)")
    i = first_missing_audio(list(df["audio_path"]))
    if i is not None:
        raise RatingsError(f"{path}: row {lines[i]}: clip {df['clip_id'].iloc[i]!r}: audio file "
                           f"{df['audio_path'].iloc[i]} not found")


def build_pairs_file(prediction_files: Mapping[str, str | Path], reference: str | Path,
                     out: str | Path, *, include_reference: bool = True,
                     n_clips: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Read predictions and the reference split, make the pairs and write them to ``out``.

    Returns:
        The pairs DataFrame.
    """
    preds = {name: read_predictions(p) for name, p in prediction_files.items()}
    pairs = make_pairs(preds, read_reference(reference), include_reference=include_reference,
                       n_clips=n_clips, seed=seed)
    write_pairs(pairs, out)
    return pairs
