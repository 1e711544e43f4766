"""The ratings CSV of the pairwise study: reading, validation and the choice vocabulary.

A ratings file has one row per vote with the columns

- ``item_id``: one rated comparison (a clip shown with two captions);
- ``pair_id``: which two systems the item compares, written ``SYSTEM_A|SYSTEM_B``
  (the order fixes what ``A`` and ``B`` mean); optional ``system_a`` and ``system_b``
  columns override the parsing of ``pair_id``;
- ``rater``: who voted (a person's id or an LLM judge's model name);
- ``pool``: the rater pool (``human``, ``audio_llm``, ``text_llm``, ...);
- ``choice``: ``A``, ``B`` or ``tie`` (case-insensitive), always in the de-randomised
  order of ``pair_id``, never in the order shown to the rater.

Extra columns (``shown_order``, ``timestamp``, ...) are kept and ignored by the analysis.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from clapcap.data.csv_reader import file_line, read_text_table
from clapcap.errors import InputError

logger = logging.getLogger(__name__)

REQUIRED_COLUMNS = ("item_id", "pair_id", "rater", "pool", "choice")
CHOICES = ("A", "B", "tie")
PAIR_SEPARATOR = "|"


class RatingsError(InputError, ValueError):
    """A ratings or pairs file is malformed; the message names the file, the row and why."""


def normalize_choice(value: object) -> str | None:
    """Map a raw choice (``a``, ``B``, ``Tie``) to ``A``/``B``/``tie``; None when unknown."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.upper() in ("A", "B"):
        return text.upper()
    if text.lower() == "tie":
        return "tie"
    return None


def make_pair_id(system_a: str, system_b: str) -> str:
    """The ``pair_id`` of two systems (``A|B``).

    Raises:
        ValueError: when a name is empty or contains the separator ``|``.
    """
    for name in (system_a, system_b):
        if not name or PAIR_SEPARATOR in name:
            raise ValueError(f"system name {name!r} must be non-empty and must not contain '|'")
    if system_a == system_b:
        raise ValueError(f"a pair needs two different systems, found {system_a!r} twice")
    return f"{system_a}{PAIR_SEPARATOR}{system_b}"


def _split_pair(pair_id: str, where: str) -> tuple[str, str]:
    parts = pair_id.split(PAIR_SEPARATOR)
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise RatingsError(
            f"{where}: pair_id {pair_id!r} must be 'SYSTEM_A|SYSTEM_B' "
            "(or give system_a and system_b columns)"
        )
    return parts[0].strip(), parts[1].strip()


def _check_columns(df: pd.DataFrame, origin: str) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise RatingsError(
            f"{origin}: missing column(s) {', '.join(missing)}; "
            f"expected {', '.join(REQUIRED_COLUMNS)}, found {', '.join(map(str, df.columns))}"
        )


def validate_ratings(df: pd.DataFrame, origin: str = "<ratings>") -> pd.DataFrame:
    """Validate a ratings table and return a clean copy.

    The copy has string columns, ``choice`` normalised to ``A``/``B``/``tie`` and
    ``system_a``/``system_b`` columns filled from ``pair_id`` when absent.
    Row numbers in messages are 1-based CSV file lines (the header is line 1; exact for a
    frame from :func:`clapcap.data.csv_reader.read_text_table`, which records them).

    Returns:
        The validated DataFrame.

    Raises:
        RatingsError: on a missing column, an empty cell, an unknown choice, a bad
            ``pair_id``, an item with two pair ids or a rater voting twice on one item.
    """
    _check_columns(df, origin)
    if df.empty:
        raise RatingsError(f"{origin}: no rating rows")
    out = df.copy()
    for col in REQUIRED_COLUMNS:
        blank = out[col].isna() | (out[col].astype(str).str.strip() == "")
        if blank.any():
            row = int(blank.to_numpy().nonzero()[0][0])
            raise RatingsError(f"{origin}: row {file_line(df, row)}: empty {col!r}")
        out[col] = out[col].astype(str).str.strip()
    choices = out["choice"].map(normalize_choice)
    bad = choices.isna().to_numpy().nonzero()[0]
    if bad.size:
        row = int(bad[0])
        raise RatingsError(
            f"{origin}: row {file_line(df, row)}: unknown choice {df['choice'].iloc[row]!r}; "
            f"expected one of {', '.join(CHOICES)} ({bad.size} such rows)"
        )
    out["choice"] = choices
    _fill_systems(out, origin)
    _check_consistency(out, origin)
    return out


def _fill_systems(out: pd.DataFrame, origin: str) -> None:
    has_cols = "system_a" in out.columns and "system_b" in out.columns
    a_list, b_list = [], []
    for i, (pair_id, *given) in enumerate(
        zip(out["pair_id"], *(([out["system_a"], out["system_b"]]) if has_cols else []), strict=True)
    ):
        where = f"{origin}: row {file_line(out, i)}"
        if has_cols and all(isinstance(g, str) and g.strip() for g in given):
            a, b = given[0].strip(), given[1].strip()
        else:
            a, b = _split_pair(pair_id, where)
        if a == b:
            raise RatingsError(f"{where}: pair {pair_id!r} compares {a!r} with itself")
        a_list.append(a)
        b_list.append(b)
    out["system_a"], out["system_b"] = a_list, b_list


def _first_conflict(out: pd.DataFrame, key: str, value: str) -> tuple[int, str, str] | None:
    """First row whose ``value`` differs from the first row of its ``key``: (row, value, first)."""
    first = out.groupby(key, sort=False)[value].transform("first")
    rows = (out[value] != first).to_numpy().nonzero()[0]
    return None if not rows.size else (int(rows[0]), out[value].iloc[rows[0]], first.iloc[rows[0]])


def _check_consistency(out: pd.DataFrame, origin: str) -> None:
    conflict = _first_conflict(out, "item_id", "pair_id")
    if conflict:
        row, found, first = conflict
        raise RatingsError(f"{origin}: row {file_line(out, row)}: item {out['item_id'].iloc[row]!r} has "
                           f"pair_id {found!r} but {first!r} on an earlier row; expected one per item")
    dup = out.duplicated(subset=["item_id", "rater"], keep="first").to_numpy().nonzero()[0]
    if dup.size:
        row = int(dup[0])
        raise RatingsError(
            f"{origin}: row {file_line(out, row)}: rater {out['rater'].iloc[row]!r} voted twice on item "
            f"{out['item_id'].iloc[row]!r}; keep one vote per rater and item"
        )
    conflict = _first_conflict(out, "rater", "pool")
    if conflict:
        row, found, first = conflict
        raise RatingsError(f"{origin}: row {file_line(out, row)}: rater {out['rater'].iloc[row]!r} is in "
                           f"pool {found!r} but in {first!r} on an earlier row; expected one pool per rater")


def read_ratings(path: str | Path) -> pd.DataFrame:
    """Read and validate a ratings CSV (see the module docstring).

    Returns:
        The validated DataFrame (see :func:`validate_ratings`).

    Raises:
        FileNotFoundError: when ``path`` does not exist.
        RatingsError: when the file is not a valid ratings CSV.
    """
    path = Path(path)
    df = read_text_table(path, "ratings file", error=RatingsError)
    out = validate_ratings(df, str(path))
    logger.info("read %d ratings (%d items, %d raters) from %s",
                len(out), out["item_id"].nunique(), out["rater"].nunique(), path)
    return out
