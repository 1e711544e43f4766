"""The rating server under bad requests, sent as raw bytes over a socket.

Each case used to misbehave: ``Content-Length: -5`` got no answer and a logged
traceback; a ``Content-Length`` larger than the body held the connection and its thread
with no timeout; a body over 64 KiB was cut and read; a repeated ``choice`` was accepted;
an audio file that is a link out of the audio root was served. Every socket read here
has a timeout, so a server that hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from clapcap.cli import main
from clapcap.pairwise.ratings import RatingsError
from clapcap.pairwise.server import MAX_BODY_BYTES, make_server
from clapcap.pairwise.store import VoteStore

SECRET = b"RIFF not a clip: a private file outside the audio root"


@contextmanager
def _serving(pairs: Path, db: Path, **kw) -> Iterator[int]:
    """A rating server on 127.0.0.1 in a thread; yields its port; stopped on exit."""
    server = make_server(pairs, db, port=0, **kw)
    assert server.server_address[0] == "127.0.0.1"  # loopback unless asked otherwise
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _exchange(port: int, data: bytes, timeout_s: float = 5.0) -> tuple[int, bytes, float]:
    """Send ``data`` and read until the server closes: (status, answer, seconds waited).

    The write side stays open, as a client that stalls would leave it. A read that waits
    more than ``timeout_s`` raises ``TimeoutError``.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(data)
        start = time.monotonic()
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    return status, answer, time.monotonic() - start


def _post(body: bytes, headers: str) -> bytes:
    return (f"POST /vote HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/x-www-form-urlencoded\r\n{headers}\r\n").encode() + body


def _vote(study, **extra: str) -> bytes:
    item = pd.read_csv(study["pairs"], dtype=str)["item_id"].iloc[0]
    fields = {"rater": "r1", "item_id": item, "choice": "1", **extra}
    return "&".join(f"{k}={v}" for k, v in fields.items()).replace("|", "%7C").encode()


def _request_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if "process_request_thread" in t.name}


@pytest.mark.parametrize(("headers", "status", "says"), [
    ("Content-Length: -5\r\n", 400, b"invalid Content-Length &#x27;-5&#x27;"),
    ("Content-Length: 1e3\r\n", 400, b"invalid Content-Length"),
    ("Content-Length: 5\r\nContent-Length: 6\r\n", 400, b"invalid Content-Length"),
    ("", 411, b"needs a Content-Length"),
    ("Transfer-Encoding: chunked\r\n", 411, b"needs a Content-Length"),
])
def test_bad_content_length_is_answered_without_a_traceback(study, tmp_path, caplog, capsys,
                                                            headers, status, says):
    caplog.set_level(logging.DEBUG)
    with _serving(study["pairs"], tmp_path / "v.sqlite") as port:
        code, answer, _ = _exchange(port, _post(b"", headers))
    assert code == status and says in answer
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Traceback" not in capsys.readouterr().err + caplog.text
    assert VoteStore(tmp_path / "v.sqlite").votes().empty


def test_a_body_that_never_arrives_times_out_and_frees_its_thread(study, tmp_path):
    before = _request_threads()
    with _serving(study["pairs"], tmp_path / "v.sqlite", timeout_s=0.5) as port:
        body = _vote(study)
        code, answer, waited = _exchange(port, _post(body[:10], f"Content-Length: {len(body)}\r\n"))
        assert code == 408 and b"did not arrive within 0.5 s" in answer and waited < 4
        # Nothing sent at all: the connection is closed too (no answer to give).
        code, answer, waited = _exchange(port, b"")
        assert (code, answer) == (0, b"") and waited < 4
        deadline = time.monotonic() + 4
        while _request_threads() - before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _request_threads() - before, "a request thread outlived its timeout"
    assert VoteStore(tmp_path / "v.sqlite").votes().empty


def test_body_over_the_limit_is_refused_with_413(study, tmp_path):
    db = tmp_path / "v.sqlite"
    vote = _vote(study)
    pad = b"&pad="
    at_limit = vote + pad + b"x" * (MAX_BODY_BYTES - len(vote) - len(pad))
    with _serving(study["pairs"], db) as port:
        code, answer, _ = _exchange(port, _post(at_limit + b"x", f"Content-Length: {MAX_BODY_BYTES + 1}\r\n"))
        assert code == 413 and f"over the limit of {MAX_BODY_BYTES} bytes".encode() in answer
        # Announced but not sent: refused at once, from the header alone.
        code, _, waited = _exchange(port, _post(b"", "Content-Length: 1000000000\r\n"))
        assert code == 413 and waited < 4
        assert VoteStore(db).votes().empty
        code, _, _ = _exchange(port, _post(at_limit, f"Content-Length: {len(at_limit)}\r\n"))
        assert code == 303 and len(VoteStore(db).votes()) == 1  # 64 KiB exactly: read whole


@pytest.mark.parametrize("field", ["choice", "rater", "item_id"])
def test_a_repeated_field_is_refused(study, tmp_path, field):
    db = tmp_path / "v.sqlite"
    body = _vote(study) + f"&{field}={'2' if field == 'choice' else 'other'}".encode()
    with _serving(study["pairs"], db) as port:
        code, answer, _ = _exchange(port, _post(body, f"Content-Length: {len(body)}\r\n"))
    assert code == 400 and f"field &#x27;{field}&#x27; given 2 times".encode() in answer
    assert VoteStore(db).votes().empty


def _link_out(study, clip: str) -> Path:
    """Replace ``audio/CLIP.wav`` by a symbolic link to a file outside the audio folder."""
    secret = study["root"] / "private" / "secret.wav"
    secret.parent.mkdir(exist_ok=True)
    secret.write_bytes(SECRET)
    path = study["root"] / "audio" / f"{clip}.wav"
    path.unlink()
    path.symlink_to(secret)
    return path


def test_audio_linked_out_of_the_root_is_refused_at_start(study, tmp_path, capsys):
    link = _link_out(study, "clip1")
    pairs = pd.read_csv(study["pairs"], dtype=str)
    line = int(pairs.index[pairs["clip_id"] == "clip1"][0]) + 2
    with pytest.raises(RatingsError, match=f"row {line}: clip 'clip1': audio file {link} is "
                                           ".*secret.wav, outside the audio root .*audio"):
        make_server(study["pairs"], tmp_path / "v.sqlite", port=0)
    assert main(["pairwise", "serve", "--pairs", str(study["pairs"]), "--db",
                 str(tmp_path / "v.sqlite"), "--port", "0"]) == 2
    assert "outside the audio root" in capsys.readouterr().err
    # A wider --audio-root that holds the target allows it; a narrower one refuses all.
    make_server(study["pairs"], tmp_path / "v.sqlite", port=0, audio_root=study["root"]).server_close()
    (study["root"] / "elsewhere").mkdir()
    with pytest.raises(RatingsError, match="clip 'clip0'.*outside the audio root .*elsewhere"):
        make_server(study["pairs"], tmp_path / "v.sqlite", port=0, audio_root=study["root"] / "elsewhere")


def test_link_inside_the_root_is_served_one_planted_later_is_not(study, tmp_path):
    inside = study["root"] / "audio" / "clip2.wav"
    whole = (study["root"] / "audio" / "clip0.wav").read_bytes()
    inside.unlink()
    inside.symlink_to(study["root"] / "audio" / "clip0.wav")  # a link within the root: fine
    with _serving(study["pairs"], tmp_path / "v.sqlite") as port:
        code, answer, _ = _exchange(port, b"GET /audio/clip2 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert code == 200 and answer.endswith(whole)
        _link_out(study, "clip1")  # planted while the server runs
        code, answer, _ = _exchange(port, b"GET /audio/clip1 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert code == 404 and SECRET not in answer
        code, answer, _ = _exchange(port, b"GET /audio/..%2Fprivate%2Fsecret.wav HTTP/1.1\r\n\r\n")
        assert code == 404 and SECRET not in answer
