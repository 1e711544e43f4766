"""The vote store under ``kill -9``: the rating server is SIGKILLed while votes stream in.

Every vote the server acknowledged (its 303 answer came back) must be in the store after a
restart, the database must open and pass SQLite's integrity check, and no row may be
partial or unknown. Votes in flight at the kill may land or not; both are fine.
"""

from __future__ import annotations

import http.client
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pandas as pd

import clapcap
from clapcap.pairwise.store import VoteStore, derandomize, shown_order

logger = logging.getLogger(__name__)

CHOICES = ("1", "2", "tie")


def _serve(pairs: Path, db: Path) -> tuple[subprocess.Popen, int]:
    """Start ``clapcap pairwise serve`` in a subprocess on a free port; returns (process, port)."""
    env = {**os.environ, "PYTHONPATH": str(Path(clapcap.__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from clapcap.cli import main; sys.exit(main())",
         "pairwise", "serve", "--pairs", str(pairs), "--db", str(db), "--port", "0"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    for line in proc.stderr:
        found = re.search(r"rating page on http://127\.0\.0\.1:(\d+)/", line)
        if found:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # drain
            return proc, int(found.group(1))
        assert time.monotonic() < deadline, "rating server did not start"
    raise AssertionError(f"rating server exited with {proc.wait()}")


def _poster(port: int, votes: list[tuple[str, str, str]], acked: list, stop: threading.Event) -> None:
    """POST ``votes`` (rater, item, shown choice) in turn; append each acknowledged one."""
    for rater, item, choice in votes:
        if stop.is_set():
            return
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("POST", "/vote", urllib.parse.urlencode(
                {"rater": rater, "item_id": item, "choice": choice}),
                {"Content-Type": "application/x-www-form-urlencoded"})
            if conn.getresponse().status == 303:
                acked.append((rater, item, choice))
        except OSError:  # the server was killed
            return
        finally:
            conn.close()


def _kill_mid_stream(pairs: Path, db: Path, votes: list, n_acked: int) -> list:
    """Serve, post ``votes`` from two threads, SIGKILL after ``n_acked`` acks; return the acks."""
    proc, port = _serve(pairs, db)
    acked: list = []
    stop = threading.Event()
    threads = [threading.Thread(target=_poster, args=(port, votes[k::2], acked, stop)) for k in (0, 1)]
    for t in threads:
        t.start()
    while len(acked) < n_acked and any(t.is_alive() for t in threads):
        time.sleep(0.001)
    os.kill(proc.pid, signal.SIGKILL)  # votes are still streaming: some are mid-write
    proc.wait()
    stop.set()
    for t in threads:
        t.join()
    return acked


def test_sigkill_mid_stream_loses_no_acknowledged_vote(study, tmp_path):
    pairs, db = study["pairs"], tmp_path / "votes.sqlite"
    items = sorted(pd.read_csv(pairs, dtype=str)["item_id"])
    rounds = [[(f"r{k}-{round_}", item, CHOICES[(k + i) % 3]) for k in range(40)
               for i, item in enumerate(items)] for round_ in range(2)]
    acked: list = []
    for round_, votes in enumerate(rounds):
        acked += _kill_mid_stream(pairs, db, votes, n_acked=40 + 25 * round_)
    sent = {(r, i): c for votes in rounds for r, i, c in votes}

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = VoteStore(db)  # opens (and recovers the WAL) after the kills
    stored = store.votes()
    rows = {(r.rater, r.item_id): r for r in stored.itertuples(index=False)}
    lost = [v for v in acked if (v[0], v[1]) not in rows]
    assert not lost, f"{len(lost)} acknowledged vote(s) lost: {lost[:3]}"
    for (rater, item), row in rows.items():  # every row whole, and one that was sent
        shown = sent[(rater, item)]
        order = shown_order(0, rater, item)
        assert (row.shown_choice, row.shown_order, row.choice, row.pool) == (
            shown, order, derandomize(shown, order), "human")
        assert row.pair_id == item.split("::")[1] and row.created_at > 0
    in_flight = len(rows) - len(acked)
    logger.info("acked %d, stored %d, lost 0, stored but unacknowledged (in flight) %d",
                len(acked), len(rows), in_flight)
    assert 0 <= in_flight <= 2 * len(rounds)  # at most one per posting thread per kill

    # A restarted server serves the same store and resumes each rater.
    proc, port = _serve(pairs, db)
    try:
        rater = acked[0][0]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", f"/progress?rater={rater}")
        done = int(re.search(rb'"done": (\d+)', conn.getresponse().read()).group(1))
        assert done == sum(1 for r, _ in rows if r == rater)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
