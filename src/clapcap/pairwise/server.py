"""The blind A/B rating page, served locally with the standard library.

Routes:

- ``GET /``: asks for a rater id.
- ``GET /rate?rater=ID``: the rater's next unrated item: the clip's audio player and the
  two captions in a random order, with the question "Which caption is more accurate
  (less wrong)?". When every item is rated it says so.
- ``POST /vote`` (form fields ``rater``, ``item_id``, ``choice`` = ``1`` or ``2``): stores
  the vote de-randomised to ``A``/``B`` with the order shown, then redirects to the next
  item.
- ``GET /audio/CLIP_ID``: the clip's audio file (only files named in the pairs file).
- ``GET /progress?rater=ID``: JSON ``{"rater", "done", "total"}``.

The order shown and the item sequence are derived from ``(seed, rater, item_id)``, so a
rater who reloads or comes back after a restart sees the same order, and resumes at
their first unrated item (votes live in :class:`~clapcap.pairwise.store.VoteStore`).
"""

from __future__ import annotations

import html
import json
import logging
import mimetypes
import random
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pandas as pd

from clapcap.pairwise.pairs import read_pairs
from clapcap.pairwise.store import VoteStore, derandomize, shown_order

logger = logging.getLogger(__name__)

_RATER = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
QUESTION = "Which caption is more accurate (less wrong) for this clip?"

_STYLE = ("body{font-family:sans-serif;max-width:46em;margin:2em auto;padding:0 1em}"
          ".caption{border:1px solid #999;border-radius:6px;padding:1em;margin:1em 0}"
          "button{font-size:1.1em;padding:.5em 1.5em;margin-right:1em}")


def _page(title: str, body: str) -> bytes:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{_STYLE}</style></head><body>{body}</body></html>").encode()


class RatingApp:
    """State of the rating site: the items, the vote store and the rater pool name."""

    def __init__(self, pairs: pd.DataFrame, store: VoteStore, *, pool: str = "human",
                 seed: int = 0) -> None:
        self.items = pairs.set_index("item_id", drop=False)
        self.store = store
        self.pool = pool
        self.seed = seed
        self.audio = {c: p for c, p in zip(pairs["clip_id"], pairs["audio_path"], strict=True) if p}

    def sequence(self, rater: str) -> list[str]:
        """The rater's item order (a seeded shuffle, stable across restarts)."""
        ids = sorted(self.items.index)
        random.Random(f"{self.seed}:{rater}").shuffle(ids)
        return ids

    def next_item(self, rater: str) -> tuple[str | None, int]:
        """The rater's first unrated item (None when done) and how many they rated."""
        done = self.store.voted_items(rater) & set(self.items.index)
        for item_id in self.sequence(rater):
            if item_id not in done:
                return item_id, len(done)
        return None, len(done)

    def vote(self, rater: str, item_id: str, shown_choice: str) -> bool:
        """Store a vote given as the position picked. Returns True when it was new.

        Raises:
            KeyError: for an unknown item.
            ValueError: for an unknown choice.
        """
        row = self.items.loc[item_id]
        order = shown_order(self.seed, rater, item_id)
        return self.store.record_vote(item_id=item_id, rater=rater, pool=self.pool,
                                      pair_id=row["pair_id"], choice=derandomize(shown_choice, order),
                                      shown_order=order, shown_choice=shown_choice)

    def rate_page(self, rater: str) -> bytes:
        """HTML of the rater's next item (or the done page)."""
        item_id, done = self.next_item(rater)
        total = len(self.items)
        progress = f"<p id='progress'>{done} of {total} rated</p>"
        if item_id is None:
            return _page("Done", f"<h1 id='done'>All done, thank you!</h1>{progress}")
        row = self.items.loc[item_id]
        order = shown_order(self.seed, rater, item_id)
        first, second = (row["caption_a"], row["caption_b"]) if order == "AB" else (
            row["caption_b"], row["caption_a"])
        audio = (f"<audio id='player' controls preload='none' src='/audio/{quote(row['clip_id'])}'>"
                 "</audio>" if row["clip_id"] in self.audio else "<p>(no audio for this clip)</p>")
        body = (f"<h1>Pairwise rating</h1>{progress}{audio}<p id='question'>{QUESTION}</p>"
                f"<div class='caption' id='caption-1'><b>Caption 1:</b> {html.escape(first)}</div>"
                f"<div class='caption' id='caption-2'><b>Caption 2:</b> {html.escape(second)}</div>"
                "<form method='post' action='/vote'>"
                f"<input type='hidden' name='rater' value='{html.escape(rater, quote=True)}'>"
                f"<input type='hidden' name='item_id' value='{html.escape(item_id, quote=True)}'>"
                "<button id='choose-1' name='choice' value='1'>Caption 1</button>"
                "<button id='choose-2' name='choice' value='2'>Caption 2</button></form>")
        return _page("Pairwise rating", body)


class _Handler(BaseHTTPRequestHandler):
    app: RatingApp  # set on the subclass made by make_server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        logger.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _rater(self, query: dict[str, list[str]]) -> str | None:
        rater = (query.get("rater") or [""])[0].strip()
        return rater if _RATER.match(rater) else None

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path == "/":
            form = ("<h1>Pairwise rating</h1><form method='get' action='/rate'>"
                    "<label>Your rater id: <input id='rater' name='rater' required "
                    "pattern='[A-Za-z0-9_.@-]{1,64}'></label> <button id='start'>Start</button></form>")
            self._send(HTTPStatus.OK, _page("Pairwise rating", form))
        elif url.path in ("/rate", "/progress"):
            rater = self._rater(query)
            if rater is None:
                self._send(HTTPStatus.BAD_REQUEST, _page("Error", "<p>Invalid or missing rater id "
                           "(letters, digits, _ . @ -, at most 64).</p>"))
            elif url.path == "/rate":
                self._send(HTTPStatus.OK, self.app.rate_page(rater))
            else:
                _, done = self.app.next_item(rater)
                body = json.dumps({"rater": rater, "done": done, "total": len(self.app.items)})
                self._send(HTTPStatus.OK, body.encode(), "application/json")
        elif url.path.startswith("/audio/"):
            self._send_audio(unquote(url.path[len("/audio/"):]))
        else:
            self._send(HTTPStatus.NOT_FOUND, _page("Not found", "<p>Not found.</p>"))

    def _send_audio(self, clip_id: str) -> None:
        path = self.app.audio.get(clip_id)
        if path is None or not Path(path).is_file():
            self._send(HTTPStatus.NOT_FOUND, b"no audio", "text/plain")
            return
        ctype = mimetypes.guess_type(path)[0] or "application/octet-stream"
        self._send(HTTPStatus.OK, Path(path).read_bytes(), ctype)

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        if urlsplit(self.path).path != "/vote":
            self._send(HTTPStatus.NOT_FOUND, _page("Not found", "<p>Not found.</p>"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(min(length, 65536)).decode("utf-8", "replace"))
        rater = self._rater(form)
        item_id = (form.get("item_id") or [""])[0]
        choice = (form.get("choice") or [""])[0]
        if rater is None or item_id not in self.app.items.index or choice not in ("1", "2"):
            self._send(HTTPStatus.BAD_REQUEST, _page("Error", "<p>Bad vote.</p>"))
            return
        new = self.app.vote(rater, item_id, choice)
        logger.info("vote rater=%s item=%s new=%s", rater, item_id, new)
        self._redirect(f"/rate?rater={quote(rater)}")


def make_server(pairs: str | Path, db: str | Path, *, host: str = "127.0.0.1", port: int = 8765,
                pool: str = "human", seed: int = 0) -> ThreadingHTTPServer:
    """Build (not start) the rating server. ``port=0`` picks a free port.

    Returns:
        The server; call ``serve_forever()`` and later ``shutdown()`` / ``server_close()``.

    Raises:
        FileNotFoundError, RatingsError: when the pairs file is missing or malformed.
    """
    app = RatingApp(read_pairs(pairs), VoteStore(db), pool=pool, seed=seed)
    handler = type("RatingHandler", (_Handler,), {"app": app})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve(pairs: str | Path, db: str | Path, *, host: str = "127.0.0.1", port: int = 8765,
          pool: str = "human", seed: int = 0, stop: threading.Event | None = None) -> None:
    """Serve the rating page until interrupted (Ctrl-C) or ``stop`` is set."""
    server = make_server(pairs, db, host=host, port=port, pool=pool, seed=seed)
    logger.info("rating page on http://%s:%d/ (votes in %s)", host, server.server_address[1], db)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        (stop or threading.Event()).wait()
    except KeyboardInterrupt:
        logger.info("stopping the rating server")
    finally:
        server.shutdown()
        server.server_close()
