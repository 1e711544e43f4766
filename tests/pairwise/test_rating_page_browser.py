"""The rating page in a real headless Chromium (Debian's /usr/bin/chromium via Playwright).

This test fails (it does not skip) when Chromium is missing: `make test` installs it
(``make browser``).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from browser import chromium  # tests/support/browser.py

from clapcap.pairwise.server import make_server
from clapcap.pairwise.store import shown_order


def _start(pairs: Path, db: Path):
    server = make_server(pairs, db, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _stop(server) -> None:
    server.shutdown()
    server.server_close()


def _listen(page) -> None:
    """Play the clip to its end: the vote buttons are disabled until then."""
    assert page.is_disabled("#choose-1") and page.is_disabled("#choose-tie")
    page.evaluate("""() => new Promise((res, rej) => { const a = document.getElementById('player');
        a.addEventListener('ended', () => res(true)); a.currentTime = 0; a.play().catch(rej); })""")
    page.wait_for_function("!document.getElementById('choose-1').disabled")


@pytest.fixture
def browser():
    with chromium() as b:
        yield b


def test_vote_in_browser_seeks_lands_in_sqlite_and_survives_restart(study, tmp_path, browser):
    db = tmp_path / "votes.sqlite"
    server, base = _start(study["pairs"], db)
    page = browser.new_page()
    try:
        page.goto(f"{base}/")
        page.fill("#rater", "alice")
        page.click("#start")
        page.wait_for_selector("#caption-1")
        assert page.inner_text("#progress") == "0 of 9 rated"
        assert "more accurate" in page.inner_text("#question")
        # The clip's audio player really loads the served file (0.5 s of audio).
        duration = page.evaluate("""() => new Promise(res => {
            const a = document.getElementById('player'); a.preload = 'auto';
            a.onloadedmetadata = () => res(a.duration); a.onerror = () => res(-1); a.load(); })""")
        assert duration == pytest.approx(0.5, abs=0.05)
        # The server answers byte ranges, so the player can seek (without them Chromium
        # reported seekable [[0, 0]]).
        seekable = page.evaluate("""() => { const s = document.getElementById('player').seekable;
            return Array.from({length: s.length}, (_, i) => [s.start(i), s.end(i)]); }""")
        assert seekable and seekable[0][1] == pytest.approx(0.5, abs=0.05), seekable
        seeked = page.evaluate("""() => new Promise(res => {
            const a = document.getElementById('player');
            a.onseeked = () => res(a.currentTime); a.currentTime = 0.3; })""")
        assert seeked == pytest.approx(0.3, abs=0.02)
        item_id = page.get_attribute("input[name=item_id]", "value")
        first_caption = page.inner_text("#caption-1")
        assert "Listen to the whole clip" in page.inner_text("#instructions")
        _listen(page)
        page.click("#choose-1")
        page.wait_for_function("document.getElementById('progress')?.innerText === '1 of 9 rated'")
    finally:
        _stop(server)

    # The vote is committed in SQLite, de-randomised with the order shown.
    order = shown_order(0, "alice", item_id)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT item_id, rater, pool, choice, shown_order, shown_choice "
                            "FROM votes").fetchall()
    assert rows == [(item_id, "alice", "human", order[0], order, "1")]
    caption_key = "caption_a" if order[0] == "A" else "caption_b"
    import pandas as pd

    pairs = pd.read_csv(study["pairs"], dtype=str, keep_default_na=False).set_index("item_id")
    assert pairs.loc[item_id, caption_key] in first_caption

    # A fresh server on the same database keeps the vote and resumes the session.
    server, base = _start(study["pairs"], db)
    try:
        page.goto(f"{base}/rate?rater=alice")
        assert page.inner_text("#progress") == "1 of 9 rated"
        second = page.get_attribute("input[name=item_id]", "value")
        assert second != item_id
        _listen(page)
        page.click("#choose-2")
        page.wait_for_function("document.getElementById('progress')?.innerText === '2 of 9 rated'")
        page.click("#undo")  # takes back the last vote and shows its clip again
        page.wait_for_function("document.getElementById('progress')?.innerText === '1 of 9 rated'")
        assert page.get_attribute("input[name=item_id]", "value") == second
        _listen(page)
        page.click("#choose-tie")  # agreement counts ties (Fleiss' category, half a win)
        page.wait_for_function("document.getElementById('progress')?.innerText === '2 of 9 rated'")
    finally:
        _stop(server)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM votes WHERE rater = 'alice'").fetchone()[0] == 2
        assert conn.execute("SELECT choice, shown_choice FROM votes WHERE item_id = ?",
                            (second,)).fetchone() == ("tie", "tie")
