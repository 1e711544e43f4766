"""Move a local MLflow store: point a copied ``mlruns/`` at its own artifacts.

MLflow records every artifact location as an absolute URI (an experiment's
``artifact_location``, a run's ``artifact_uri``, a model version's ``source`` and
``storage_location``, a logged model's ``artifact_location``). A copied or moved
``mlruns/`` therefore still reads its artifacts from the original checkout, and a model
load writes into it. :func:`relocate_store` rewrites, in the SQLite database, every value
that starts with the store's old artifacts root so it starts with ``<db folder>/artifacts``
instead. It touches nothing else, and running it twice changes nothing the second time.
Written here because MLflow has no command for it (``mlflow gc`` and ``mlflow db upgrade``
do not move roots).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from clapcap.errors import InputError

logger = logging.getLogger(__name__)


def _roots(con: sqlite3.Connection) -> set[str]:
    """The store's artifact roots as recorded: each experiment's location, when it is a local
    ``.../artifacts`` folder (the layout :func:`clapcap.tracking.store.open_store` creates)."""
    roots = set()
    for (loc,) in con.execute("SELECT artifact_location FROM experiments"):
        path = loc[len("file://"):] if loc and loc.startswith("file://") else loc
        if path and path.startswith("/") and Path(path).name == "artifacts":
            roots.add(path)
    return roots


def relocate_store(db: str | Path) -> dict[str, int]:
    """Point the SQLite store ``db`` at ``<db's folder>/artifacts`` (the module doc).

    Returns:
        ``{"<table>.<column>": cells rewritten}`` (empty when the store already points there).

    Raises:
        InputError: ``db`` is not an MLflow SQLite store, or its artifacts folder is missing.
    """
    db = Path(db).resolve()
    if not db.is_file():
        raise InputError(f"{db}: no such MLflow SQLite store")
    new = db.parent / "artifacts"
    if not new.is_dir():
        raise InputError(f"{new}: the store's artifacts folder is missing (copy mlruns/ whole)")
    con = sqlite3.connect(db)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "experiments" not in tables:
            raise InputError(f"{db}: not an MLflow store (no experiments table)")
        changed: dict[str, int] = {}
        for old in sorted(_roots(con) - {str(new)}):
            pairs = [(f"file://{old}", new.as_uri()), (old, str(new))]
            for table in sorted(tables):
                cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")') if r[2].upper().startswith(("VARCHAR", "TEXT"))]
                for col in cols:
                    for prefix, target in pairs:
                        cur = con.execute(
                            f'UPDATE "{table}" SET "{col}" = ? || substr("{col}", ?) '
                            f'WHERE substr("{col}", 1, ?) = ? AND (length("{col}") = ? OR substr("{col}", ?, 1) = \'/\')',
                            (target, len(prefix) + 1, len(prefix), prefix, len(prefix), len(prefix) + 1))
                        if cur.rowcount:
                            key = f"{table}.{col}"
                            changed[key] = changed.get(key, 0) + cur.rowcount
        con.commit()
    finally:
        con.close()
    logger.info("%s: %d artifact locations now under %s", db, sum(changed.values()), new)
    return changed
