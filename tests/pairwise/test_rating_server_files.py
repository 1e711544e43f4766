"""What the rating page serves, and how it starts, over plain HTTP.

A pairs file whose audio files share no folder but ``/`` used to make ``/`` the audio
root; files were checked only to lie under the root, so a listed file later replaced by a
link to any other file under it was served. A busy port ended in a traceback and left a
vote database behind.
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from clapcap.cli import main
from clapcap.pairwise.ratings import RatingsError
from clapcap.pairwise.server import make_server

SECRET = b"a private note beside the clips, not in the pairs file"


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert lines and lines[-1].startswith("clapcap: error: ") and "Traceback" not in stderr, stderr
    return lines[-1]


def test_the_default_audio_root_is_never_the_filesystem_root(study, tmp_path, capsys):
    elsewhere = Path(pytest.__file__).resolve()  # a readable file outside tmp_path
    if os.path.commonpath([elsewhere, tmp_path]) != os.sep:
        pytest.skip("tmp_path and the site-packages share a folder: no pairs file spans /")
    pairs = pd.read_csv(study["pairs"], dtype=str, keep_default_na=False)
    pairs.loc[pairs["clip_id"] == "clip1", "audio_path"] = str(elsewhere)
    pairs.to_csv(tmp_path / "wide.csv", index=False)
    db = tmp_path / "v.sqlite"
    with pytest.raises(RatingsError, match="share no folder but /.*--audio-root"):
        make_server(tmp_path / "wide.csv", db, port=0)
    assert main(["pairwise", "serve", "--pairs", str(tmp_path / "wide.csv"), "--db", str(db),
                 "--port", "0"]) == 2
    assert "--audio-root" in _error_line(capsys.readouterr().err) and not db.exists()


def test_only_the_files_the_pairs_file_names_are_served(study, tmp_path):
    audio = study["root"] / "audio"
    (audio / "notes.txt").write_bytes(SECRET)  # under the audio root, not in the pairs file
    server = make_server(study["pairs"], tmp_path / "v.sqlite", port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert _get(f"{base}/audio/clip0")[0] == 200
        for path in ("/audio/notes", "/audio/notes.txt", "/audio/..%2Fnotes.txt", "/audio/..%2Faudio%2Fnotes.txt",
                     "/audio/%2Fetc%2Fpasswd", "/notes.txt", "/audio/"):
            status, body = _get(base + path)
            assert status in (403, 404) and SECRET not in body, path
        # A listed file replaced, while the server runs, by a link to an unlisted file of the root.
        (audio / "clip1.wav").unlink()
        (audio / "clip1.wav").symlink_to(audio / "notes.txt")
        status, body = _get(f"{base}/audio/clip1")
        assert status in (403, 404) and SECRET not in body
    finally:
        server.shutdown()
        server.server_close()


def test_a_busy_port_fails_with_one_line_and_creates_no_database(study, tmp_path, capsys):
    db = tmp_path / "v.sqlite"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        rc = main(["pairwise", "serve", "--pairs", str(study["pairs"]), "--db", str(db),
                   "--port", str(port)])
    line = _error_line(capsys.readouterr().err)
    assert rc == 1 and f"127.0.0.1:{port}" in line and "--port" in line
    assert not db.exists() and not list(tmp_path.glob("v.sqlite*"))
