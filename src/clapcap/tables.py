"""Reading the project's small CSV inputs (splits, ratings, pairs, leaderboards, metadata)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd


def read_text_table(path: str | Path, what: str) -> pd.DataFrame:
    """Read a CSV with every cell as text (empty cells stay ``""``, never NaN).

    Raises:
        FileNotFoundError: ``"<path>: <what> not found"`` when the file does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: {what} not found")
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def missing_columns(df: pd.DataFrame, required: Iterable[str]) -> list[str]:
    """The ``required`` columns absent from ``df``, in the order given."""
    return [c for c in required if c not in df.columns]
