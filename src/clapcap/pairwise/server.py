"""The blind A/B rating page, served locally with the standard library.

Routes:

- ``GET /``: asks for a rater id.
- ``GET /rate?rater=ID``: the rater's next unrated item: the clip's audio player and the
  two captions in a random order, with the question "Which caption is more accurate
  (less wrong)?". When every item is rated it says so.
- ``POST /vote`` (form fields ``rater``, ``item_id``, ``choice`` = ``1``, ``2`` or ``tie``,
  each exactly once, URL-encoded in a body of at most :data:`MAX_BODY_BYTES` with a
  ``Content-Length``): stores the vote de-randomised to ``A``/``B``/``tie`` with the order
  shown, then redirects to the next item. A refused vote gets 400 (409 for a second,
  different vote on the same item; 411 without a ``Content-Length``; 413 for a larger
  body; 408 when the body does not arrive) and a page that says why.
- ``GET /audio/CLIP_ID``: the clip's audio file (only the files named in the pairs file,
  each as it resolved at the start, under the audio root; any other path gets 404), with single byte ranges (``Range: bytes=a-b``, ``a-``,
  ``-n``: 206, or 416 when unsatisfiable) so that the player can seek.
- ``GET /progress?rater=ID``: JSON ``{"rater", "done", "total"}``.

Every read and write on a connection times out after ``timeout_s`` (default
:data:`REQUEST_TIMEOUT_S`), so a client that stops sending (a ``Content-Length`` larger
than the body it sends) holds neither its connection nor its thread for longer.

The order shown and the item sequence are derived from ``(seed, rater, item_id)``, so a
rater who reloads or comes back after a restart sees the same order, and resumes at
their first unrated item (votes live in :class:`~clapcap.pairwise.store.VoteStore`).
The pairs file is checked when the server is built: every item needs an existing audio
file, so nobody votes on a clip they could not hear, and each file must lie under the
audio root once symbolic links are resolved (:mod:`clapcap.pairwise.audio_files`). The
port is taken before anything is written: a busy one fails with one line naming
``host:port`` and ``--port``, and leaves no vote database behind.
"""

from __future__ import annotations

import html
import json
import logging
import mimetypes
import random
import re
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pandas as pd

from clapcap.errors import ClapcapError
from clapcap.pairwise.audio_files import audio_files, still_listed
from clapcap.pairwise.http_input import (
    MAX_BODY_BYTES,
    VoteRefused,
    body_length,
    byte_range,
    parse_form,
)
from clapcap.pairwise.pairs import read_pairs
from clapcap.pairwise.store import VoteStore, derandomize, shown_order

logger = logging.getLogger(__name__)

_RATER = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_RATER_RULE = "letters, digits, _ . @ -, at most 64"
SHOWN_CHOICES = ("1", "2", "tie")
REQUEST_TIMEOUT_S = 30.0  # each read or write on a connection
QUESTION = "Which caption is more accurate (less wrong) for this clip?"

INSTRUCTIONS = ("<div id='instructions'><p>Listen to the whole clip, then pick the caption that is "
                "<b>more accurate</b>: the one that says less that is wrong about what you hear (a wrong "
                "sound, source or count is worse than a missing detail). Pick <b>Equally accurate</b> when "
                "neither is better. Judge what you hear, not the wording or grammar.</p>"
                "<p>The vote buttons unlock once the clip has played to its end. A vote is saved at once; "
                "<b>Undo my last vote</b> takes back the last one and shows that clip again.</p></div>")
# Listen before voting: the buttons stay disabled until the player fires 'ended' (a clip with
# no audio file has nothing to wait for). A page without JavaScript keeps them disabled.
_LISTEN_JS = ("<script>(function(){var p=document.getElementById('player');"
              "var b=document.querySelectorAll('.vote');function on(){b.forEach(function(x){x.disabled=false;});"
              "var h=document.getElementById('listen-hint');if(h){h.hidden=true;}}"
              "if(!p){on();return;}p.addEventListener('ended',on);})();</script>")

_STYLE = ("body{font-family:sans-serif;max-width:46em;margin:2em auto;padding:0 1em}"
          ".caption{border:1px solid #999;border-radius:6px;padding:1em;margin:1em 0}"
          "button{font-size:1.1em;padding:.5em 1.5em;margin-right:1em}"
          "#instructions{background:#f4f4f4;padding:.5em 1em;border-radius:6px}")


def _page(title: str, body: str) -> bytes:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{_STYLE}</style></head><body>{body}</body></html>").encode()


class RatingApp:
    """State of the rating site: the items, the vote store and the rater pool name."""

    def __init__(self, pairs: pd.DataFrame, store: VoteStore, *, pool: str = "human",
                 seed: int = 0, audio_root: str | Path | None = None,
                 audio: tuple[Path | None, dict[str, Path]] | None = None) -> None:
        self.items = pairs.set_index("item_id", drop=False)
        self.store = store
        self.pool = pool
        self.seed = seed
        # audio: audio_files(pairs, audio_root), when the caller has checked it already
        self.audio_root, self.audio = audio if audio is not None else audio_files(pairs, audio_root)

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
        """Store a vote given as the position picked (``1``, ``2`` or ``tie``).

        Returns:
            True when it was new; False for a repeat of the same vote (a double click).

        Raises:
            VoteRefused: naming why (unknown item or choice, or a different second vote
                of the rater on the item, which would not be stored).
        """
        if item_id not in self.items.index:
            raise VoteRefused(f"unknown item_id {item_id!r}: not in the pairs file")
        if shown_choice not in SHOWN_CHOICES:
            raise VoteRefused(f"unknown choice {shown_choice!r}: expected one of {', '.join(SHOWN_CHOICES)}")
        row = self.items.loc[item_id]
        order = shown_order(self.seed, rater, item_id)
        choice = derandomize(shown_choice, order)
        new = self.store.record_vote(item_id=item_id, rater=rater, pool=self.pool,
                                     pair_id=row["pair_id"], choice=choice,
                                     shown_order=order, shown_choice=shown_choice)
        if not new:
            first = self.store.vote_of(item_id, rater)
            if first is not None and first != choice:
                raise VoteRefused(f"duplicate vote: rater {rater!r} already voted on item {item_id!r}; "
                                  "the first vote stands", HTTPStatus.CONFLICT)
        return new

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
        rater_field = f"<input type='hidden' name='rater' value='{html.escape(rater, quote=True)}'>"
        undo = ("<form method='post' action='/undo'>" + rater_field
                + "<button id='undo'>Undo my last vote</button></form>") if done else ""
        body = (f"<h1>Pairwise rating</h1>{INSTRUCTIONS}{progress}{audio}<p id='question'>{QUESTION}</p>"
                f"<div class='caption' id='caption-1'><b>Caption 1:</b> {html.escape(first)}</div>"
                f"<div class='caption' id='caption-2'><b>Caption 2:</b> {html.escape(second)}</div>"
                "<p id='listen-hint'><i>Play the clip to the end to vote.</i></p>"
                "<form method='post' action='/vote'>" + rater_field
                + f"<input type='hidden' name='item_id' value='{html.escape(item_id, quote=True)}'>"
                "<button class='vote' id='choose-1' name='choice' value='1' disabled>Caption 1</button>"
                "<button class='vote' id='choose-2' name='choice' value='2' disabled>Caption 2</button>"
                "<button class='vote' id='choose-tie' name='choice' value='tie' disabled>Equally accurate</button>"
                f"</form>{undo}{_LISTEN_JS}")
        return _page("Pairwise rating", body)

    def undo(self, rater: str) -> str | None:
        """Take back the rater's last vote (:meth:`VoteStore.undo_last`); its item is shown next."""
        return self.store.undo_last(rater, self.pool)


class _Handler(BaseHTTPRequestHandler):
    """The routes. Why the standard library's ``http.server``: bound to loopback for a few
    raters, it does what is needed once configured. socketserver's ``timeout`` bounds every
    read and write on a connection (a timed-out one is closed), and http.server limits the
    request line and the headers (414, 431). It leaves the body to the handler, so
    :func:`_read_form` checks ``Content-Length`` and the size itself (a few lines). The
    installed alternatives fit worse: Werkzeug's development server reads a negative
    ``Content-Length`` as 0 and calls ``sys.exit`` when the port is taken, and gunicorn
    forks worker processes that an in-process test or a ``kill -9`` cannot manage.
    """

    app: RatingApp  # set on the subclass made by make_server
    max_body_bytes: int = MAX_BODY_BYTES

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        logger.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
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
            form = (f"<h1>Pairwise rating</h1>{INSTRUCTIONS}<form method='get' action='/rate'>"
                    "<label>Your rater id: <input id='rater' name='rater' required "
                    "pattern='[A-Za-z0-9_.@-]{1,64}'></label> <button id='start'>Start</button></form>")
            self._send(HTTPStatus.OK, _page("Pairwise rating", form))
        elif url.path in ("/rate", "/progress"):
            rater = self._rater(query)
            if rater is None:
                self._send(HTTPStatus.BAD_REQUEST, _page("Error", "<p>Invalid or missing rater id "
                           f"({_RATER_RULE}).</p>"))
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
        # Checked again here: a link planted after the start must lead nowhere, not even to
        # another file under the root. Only the files resolved at the start are served.
        if path is None or not still_listed(path):
            self._send(HTTPStatus.NOT_FOUND, b"no audio", "text/plain")
            return
        ctype = mimetypes.guess_type(path)[0] or "application/octet-stream"
        size = path.stat().st_size
        try:
            span = byte_range(self.headers.get("Range"), size)
        except ValueError:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if span is None:
            self._send(HTTPStatus.OK, path.read_bytes(), ctype, {"Accept-Ranges": "bytes"})
            return
        start, end = span
        with open(path, "rb") as fh:
            fh.seek(start)
            body = fh.read(end - start + 1)
        self._send(HTTPStatus.PARTIAL_CONTENT, body, ctype,
                   {"Accept-Ranges": "bytes", "Content-Range": f"bytes {start}-{end}/{size}"})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        path = urlsplit(self.path).path
        if path not in ("/vote", "/undo"):
            self._send(HTTPStatus.NOT_FOUND, _page("Not found", "<p>Not found.</p>"))
            return
        try:
            form = self._read_form()
            rater = _form_rater(form)
            if path == "/undo":
                logger.info("undo rater=%s item=%s", rater, self.app.undo(rater))
                self._redirect(f"/rate?rater={quote(rater)}")
                return
            item_id = _form_field(form, "item_id")
            new = self.app.vote(rater, item_id, _form_field(form, "choice"))
        except VoteRefused as err:
            logger.info("vote refused (%d): %s", err.status, err)
            self._send(err.status, _page("Bad vote", f"<p id='error'>Bad vote: {html.escape(str(err))}.</p>"))
            if err.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE:
                self._discard_body()
            return
        logger.info("vote rater=%s item=%s new=%s", rater, item_id, new)
        self._redirect(f"/rate?rater={quote(rater)}")

    def _read_form(self) -> dict[str, str]:
        """The URL-encoded form of the body: one value per field.

        Raises:
            VoteRefused: 411, 400, 413 or 408 (see :func:`body_length`), 400 for a body
                shorter than announced, not UTF-8, not a form, or with a repeated field.
        """
        length = body_length(self.headers, self.max_body_bytes)
        try:
            raw = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            raise VoteRefused(f"the body did not arrive within {self.timeout:g} s "
                              f"({length} bytes announced)", HTTPStatus.REQUEST_TIMEOUT) from None
        if len(raw) < length:
            raise VoteRefused(f"the body has {len(raw)} of the {length} bytes announced")
        return parse_form(raw)

    def _discard_body(self) -> None:
        """After a 413, read (briefly) what the client is still sending before the connection
        closes, so that it sees the answer rather than a reset connection (closing a socket
        with unread data resets it). At most 1 MiB, and 1 s per read: the rest is dropped."""
        self.close_connection = True
        left = min(int(self.headers["Content-Length"]), 1 << 20)  # digits: body_length checked
        self.connection.settimeout(1.0)
        try:
            while left > 0:
                chunk = self.rfile.read1(min(left, 65536))
                if not chunk:
                    return
                left -= len(chunk)
        except (TimeoutError, ConnectionError):
            return


def _form_field(form: dict[str, str], name: str) -> str:
    value = form.get(name, "")
    if not value:
        raise VoteRefused(f"missing {name}")
    return value


def _form_rater(form: dict[str, str]) -> str:
    rater = _form_field(form, "rater").strip()
    if not _RATER.match(rater):
        raise VoteRefused(f"invalid rater id {rater[:80]!r} ({_RATER_RULE})")
    return rater


class PortBusy(ClapcapError):
    """The rating page cannot listen on its host and port (taken, or not allowed): exit code 1."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        err = sys.exc_info()[1]
        if isinstance(err, ConnectionError | TimeoutError):  # the client went away or stalled
            logger.debug("connection from %s dropped: %s", client_address, err)
        else:  # a bug: keep its traceback, in the log
            logger.exception("error answering %s", client_address)


def make_server(pairs: str | Path, db: str | Path, *, host: str = "127.0.0.1", port: int = 8765,
                pool: str = "human", seed: int = 0, audio_root: str | Path | None = None,
                timeout_s: float = REQUEST_TIMEOUT_S,
                max_body_bytes: int = MAX_BODY_BYTES) -> ThreadingHTTPServer:
    """Build (not start) the rating server. ``port=0`` picks a free port.

    Args:
        audio_root: the folder the audio files must lie in (links resolved); by default the
            deepest folder holding every audio file of the pairs file.
        timeout_s: the limit of each read and write on a connection.
        max_body_bytes: the largest request body accepted (larger ones get 413).

    Returns:
        The server; call ``serve_forever()`` and later ``shutdown()`` / ``server_close()``.

    Raises:
        FileNotFoundError, RatingsError: when the pairs file is missing or malformed, or
            an item's audio file is missing or outside the audio root (the error names
            the file line).
        ValueError: when ``timeout_s`` or ``max_body_bytes`` is not positive.
        PortBusy: when ``host:port`` cannot be bound (before the vote store is created).
    """
    if not timeout_s > 0 or max_body_bytes <= 0:
        raise ValueError(f"timeout_s and max_body_bytes must be positive, found {timeout_s}, "
                         f"{max_body_bytes}")
    table = read_pairs(pairs, require_audio=True)
    audio = audio_files(table, audio_root)  # checked before the port is taken or the store made
    handler = type("RatingHandler", (_Handler,), {"timeout": timeout_s, "max_body_bytes": max_body_bytes})
    try:
        server = _Server((host, port), handler)
    except OSError as err:
        raise PortBusy(f"cannot listen on {host}:{port} ({err.strerror or err}); is another server "
                       "using it? choose another port with --port (0: any free one)") from None
    try:
        handler.app = RatingApp(table, VoteStore(db), pool=pool, seed=seed, audio=audio)
    except BaseException:
        server.server_close()
        raise
    return server


def serve(pairs: str | Path, db: str | Path, *, host: str = "127.0.0.1", port: int = 8765,
          pool: str = "human", seed: int = 0, audio_root: str | Path | None = None,
          stop: threading.Event | None = None) -> None:
    """Serve the rating page until interrupted (Ctrl-C) or ``stop`` is set."""
    server = make_server(pairs, db, host=host, port=port, pool=pool, seed=seed, audio_root=audio_root)
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
