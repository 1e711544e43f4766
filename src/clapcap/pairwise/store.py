"""SQLite store of pairwise votes: one committed row per vote, safe across restarts.

The database runs in WAL mode and every vote is committed on its own (a transaction, so
a row is stored whole or not at all) before the server answers. ``synchronous=FULL``
syncs the WAL at each commit: a killed server (``kill -9``, tested) and also a power
loss keep every vote a rater saw confirmed. A vote is keyed
by ``(item_id, rater)``: a second vote of the same rater on the same item (a double click,
a resubmitted form) is ignored, which also makes rater sessions resumable. LLM judges
write to the same store (``pool`` tells them apart) and record failed judgements in the
``failures`` table instead of inventing a vote.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from clapcap.pairwise.ratings import CHOICES
from clapcap.utils.io import atomic_path

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS votes (
    item_id TEXT NOT NULL,
    rater TEXT NOT NULL,
    pool TEXT NOT NULL,
    pair_id TEXT NOT NULL,
    choice TEXT NOT NULL CHECK (choice IN ('A', 'B', 'tie')),
    shown_order TEXT NOT NULL CHECK (shown_order IN ('AB', 'BA')),
    shown_choice TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (item_id, rater)
);
CREATE TABLE IF NOT EXISTS failures (
    item_id TEXT NOT NULL,
    rater TEXT NOT NULL,
    pool TEXT NOT NULL,
    pair_id TEXT NOT NULL,
    error TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (item_id, rater)
);
"""

EXPORT_COLUMNS = ("item_id", "pair_id", "rater", "pool", "choice", "shown_order",
                  "shown_choice", "created_at")


def shown_order(seed: int, rater: str, item_id: str) -> str:
    """The order (``AB`` or ``BA``) in which ``rater`` sees the captions of ``item_id``.

    Derived from a hash of ``(seed, rater, item_id)``: stable across restarts and
    independent between raters.
    """
    digest = hashlib.sha256(f"{seed}\x00{rater}\x00{item_id}".encode()).digest()
    return "AB" if digest[0] % 2 == 0 else "BA"


def derandomize(shown_choice: str, shown_order: str) -> str:
    """Map the position a rater picked (``1``, ``2`` or ``tie``) back to ``A``/``B``/``tie``.

    ``shown_order`` ``AB`` means caption A was shown first; ``BA`` means B was first.

    Raises:
        ValueError: on an unknown position or order.
    """
    if shown_order not in ("AB", "BA"):
        raise ValueError(f"shown_order must be 'AB' or 'BA', found {shown_order!r}")
    if shown_choice == "tie":
        return "tie"
    if shown_choice not in ("1", "2"):
        raise ValueError(f"choice must be '1', '2' or 'tie', found {shown_choice!r}")
    return shown_order[int(shown_choice) - 1]


class VoteStore:
    """Votes and failures of one study in a SQLite file (created on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per operation: safe from any server thread.
        conn = sqlite3.connect(self.path, timeout=30.0)
        try:
            # FULL: each commit is synced to disk before the rater sees it confirmed
            # (NORMAL in WAL mode survives a killed process but not a power loss).
            conn.execute("PRAGMA synchronous=FULL")
            with conn:  # commits on success, rolls back on error
                yield conn
        finally:
            conn.close()

    def record_vote(self, *, item_id: str, rater: str, pool: str, pair_id: str, choice: str,
                    shown_order: str = "AB", shown_choice: str = "") -> bool:
        """Store one vote (committed at once); a repeat for the same item and rater is ignored.

        Returns:
            True when the vote was new.

        Raises:
            ValueError: on an unknown choice or order.
        """
        if choice not in CHOICES:
            raise ValueError(f"choice must be one of {CHOICES}, found {choice!r}")
        if shown_order not in ("AB", "BA"):
            raise ValueError(f"shown_order must be 'AB' or 'BA', found {shown_order!r}")
        with self._connect() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO votes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (item_id, rater, pool, pair_id, choice, shown_order, shown_choice, time.time()))
            new = cur.rowcount == 1
            if new:
                conn.execute("DELETE FROM failures WHERE item_id = ? AND rater = ?", (item_id, rater))
        return new

    def record_failure(self, *, item_id: str, rater: str, pool: str, pair_id: str, error: str) -> None:
        """Record (or replace) a failed judgement of ``rater`` on ``item_id``."""
        with self._connect() as conn:
            conn.execute("INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?, ?)",
                         (item_id, rater, pool, pair_id, error[:2000], time.time()))

    def undo_last(self, rater: str, pool: str) -> str | None:
        """Delete ``rater``'s most recent vote in ``pool`` (committed at once, as a vote is).

        Returns:
            The item id whose vote was deleted, or None when the rater has no vote.
        """
        with self._connect() as conn:
            row = conn.execute("SELECT item_id FROM votes WHERE rater = ? AND pool = ? "
                               "ORDER BY created_at DESC, rowid DESC LIMIT 1", (rater, pool)).fetchone()
            if row is None:
                return None
            conn.execute("DELETE FROM votes WHERE item_id = ? AND rater = ?", (row[0], rater))
        logger.info("undid the vote of %s on %s", rater, row[0])
        return row[0]

    def vote_of(self, item_id: str, rater: str) -> str | None:
        """The stored choice (``A``/``B``/``tie``) of ``rater`` on ``item_id``, or None."""
        with self._connect() as conn:
            row = conn.execute("SELECT choice FROM votes WHERE item_id = ? AND rater = ?",
                               (item_id, rater)).fetchone()
        return row[0] if row else None

    def voted_items(self, rater: str) -> set[str]:
        """Item ids that ``rater`` has voted on."""
        with self._connect() as conn:
            rows = conn.execute("SELECT item_id FROM votes WHERE rater = ?", (rater,)).fetchall()
        return {r[0] for r in rows}

    def votes(self) -> pd.DataFrame:
        """All votes, oldest first (columns :data:`EXPORT_COLUMNS`)."""
        with self._connect() as conn:
            rows = conn.execute(f"SELECT {', '.join(EXPORT_COLUMNS)} FROM votes "
                                "ORDER BY created_at, item_id, rater").fetchall()
        return pd.DataFrame(rows, columns=list(EXPORT_COLUMNS))

    def failures(self) -> pd.DataFrame:
        """All recorded failures (item_id, rater, pool, pair_id, error, created_at)."""
        with self._connect() as conn:
            rows = conn.execute("SELECT * FROM failures ORDER BY created_at").fetchall()
        return pd.DataFrame(rows, columns=["item_id", "rater", "pool", "pair_id", "error", "created_at"])

    def export_csv(self, path: str | Path) -> int:
        """Atomically write all votes as a ratings CSV. Returns the number of rows."""
        df = self.votes()
        with atomic_path(path) as tmp:
            df.to_csv(tmp, index=False)
        logger.info("exported %d votes to %s", len(df), path)
        return len(df)
