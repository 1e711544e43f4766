"""The rating server over HTTP: byte ranges, refused votes and why, ties, missing audio."""

from __future__ import annotations

import http.client
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from clapcap.cli import main
from clapcap.pairwise.pairs import read_pairs
from clapcap.pairwise.ratings import RatingsError
from clapcap.pairwise.server import byte_range, make_server
from clapcap.pairwise.store import VoteStore, shown_order


@pytest.fixture
def site(study, tmp_path):
    """A running rating server on the study's pairs; yields (base url, db path)."""
    db = tmp_path / "votes.sqlite"
    server = make_server(study["pairs"], db, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", db
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _post(base: str, form: dict[str, str], path: str = "/vote") -> tuple[int, str]:
    """POST ``path`` without following the redirect: (status, body text)."""
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("POST", path, urllib.parse.urlencode(form),
                     {"Content-Type": "application/x-www-form-urlencoded"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def test_audio_byte_ranges(site, study):
    base, _ = site
    whole = (study["root"] / "audio" / "clip0.wav").read_bytes()
    size = len(whole)
    status, headers, body = _get(f"{base}/audio/clip0", {})
    assert status == 200 and body == whole and headers["Accept-Ranges"] == "bytes"
    status, headers, body = _get(f"{base}/audio/clip0", {"Range": "bytes=0-99"})
    assert status == 206 and body == whole[:100]
    assert headers["Content-Range"] == f"bytes 0-99/{size}" and headers["Content-Length"] == "100"
    status, headers, body = _get(f"{base}/audio/clip0", {"Range": "bytes=100-"})
    assert status == 206 and body == whole[100:] and headers["Content-Range"] == f"bytes 100-{size - 1}/{size}"
    status, headers, body = _get(f"{base}/audio/clip0", {"Range": "bytes=-10"})
    assert status == 206 and body == whole[-10:]
    status, headers, body = _get(f"{base}/audio/clip0", {"Range": f"bytes=10-{size + 50}"})
    assert status == 206 and body == whole[10:]  # the end is clipped to the file
    status, headers, _ = _get(f"{base}/audio/clip0", {"Range": f"bytes={size}-"})
    assert status == 416 and headers["Content-Range"] == f"bytes */{size}"
    status, _, body = _get(f"{base}/audio/clip0", {"Range": "bytes=0-1,5-9"})
    assert status == 200 and body == whole  # several ranges: the whole file


def test_byte_range_parsing():
    assert byte_range(None, 10) is None and byte_range("items=0-1", 10) is None
    assert byte_range("bytes=2-5", 10) == (2, 5) and byte_range("bytes=2-", 10) == (2, 9)
    assert byte_range("bytes=-3", 10) == (7, 9) and byte_range("bytes=-30", 10) == (0, 9)
    assert byte_range("bytes=5-2", 10) is None and byte_range("bytes=-", 10) is None
    for bad in ("bytes=10-", "bytes=-0", "bytes=12-20"):
        with pytest.raises(ValueError, match="unsatisfiable"):
            byte_range(bad, 10)


def _item(base: str, rater: str) -> str:
    page = urllib.request.urlopen(f"{base}/rate?rater={rater}").read().decode()
    return page.split("name='item_id' value='")[1].split("'")[0]


@pytest.mark.parametrize(("form", "status", "reason"), [
    ({"item_id": "ITEM", "choice": "1"}, 400, "missing rater"),
    ({"rater": "bad id!", "item_id": "ITEM", "choice": "1"}, 400, "invalid rater id"),
    ({"rater": "r1", "choice": "1"}, 400, "missing item_id"),
    ({"rater": "r1", "item_id": "nope", "choice": "1"}, 400, "unknown item_id &#x27;nope&#x27;"),
    ({"rater": "r1", "item_id": "ITEM"}, 400, "missing choice"),
    ({"rater": "r1", "item_id": "ITEM", "choice": "3"}, 400, "unknown choice &#x27;3&#x27;"),
])
def test_bad_vote_says_why(site, form, status, reason):
    base, db = site
    item = _item(base, "r1")
    form = {k: v.replace("ITEM", item) for k, v in form.items()}
    code, text = _post(base, form)
    assert code == status and f"Bad vote: {reason}" in text
    assert VoteStore(db).votes().empty


def test_duplicate_vote_same_is_ignored_different_is_refused(site):
    base, db = site
    item = _item(base, "r1")
    assert _post(base, {"rater": "r1", "item_id": item, "choice": "1"})[0] == 303
    assert _post(base, {"rater": "r1", "item_id": item, "choice": "1"})[0] == 303  # a double click
    code, text = _post(base, {"rater": "r1", "item_id": item, "choice": "2"})
    assert code == 409 and "duplicate vote" in text and "first vote stands" in text
    votes = VoteStore(db).votes()
    assert votes["shown_choice"].tolist() == ["1"]


def test_tie_is_offered_and_stored(site, tmp_path):
    from clapcap.pairwise.agreement import compute_agreement
    from clapcap.pairwise.ratings import read_ratings

    base, db = site
    page = urllib.request.urlopen(f"{base}/rate?rater=r2").read().decode()
    assert "id='choose-tie'" in page and "value='tie'" in page
    item = _item(base, "r2")
    assert _post(base, {"rater": "r2", "item_id": item, "choice": "tie"})[0] == 303
    votes = VoteStore(db).votes()
    assert votes[["item_id", "choice", "shown_choice"]].values.tolist() == [[item, "tie", "tie"]]
    assert votes["shown_order"].iloc[0] == shown_order(0, "r2", item)
    # The exported tie is a valid rating, counted as half a win for both systems.
    VoteStore(db).export_csv(tmp_path / "ratings.csv")
    systems = compute_agreement(read_ratings(tmp_path / "ratings.csv"))["win_rates"]["human"]["systems"]
    assert all(s["ties"] == 1 and s["win_rate"] == 0.5 for s in systems.values())


def _drop_audio(study) -> Path:
    missing = study["root"] / "audio" / "clip1.wav"
    missing.unlink()
    return missing


def test_make_pairs_refuses_missing_audio(study, tmp_path, capsys):
    missing = _drop_audio(study)
    out = tmp_path / "p.csv"
    code = main(["pairwise", "make-pairs", "--predictions", str(study["gpt2"]), str(study["t5"]),
                 "--reference", str(study["split"]), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    # clip1's first row in the split CSV is data row 3, file line 4 (the header is line 1).
    assert f"{study['split']}: row 4: clip 'clip1': audio file {missing} not found" in err


def test_server_refuses_pairs_with_missing_or_empty_audio(study, tmp_path):
    missing = _drop_audio(study)
    pairs = pd.read_csv(study["pairs"], dtype=str, keep_default_na=False)
    line = int(pairs.index[pairs["clip_id"] == "clip1"][0]) + 2
    with pytest.raises(RatingsError, match=f"row {line}: clip 'clip1': audio file {missing} not found"):
        make_server(study["pairs"], tmp_path / "v.sqlite", port=0)
    assert main(["pairwise", "serve", "--pairs", str(study["pairs"]), "--db",
                 str(tmp_path / "v.sqlite"), "--port", "0"]) == 2
    no_audio = tmp_path / "no_audio.csv"
    pairs.loc[pairs["clip_id"] == "clip1", "audio_path"] = ""
    pairs.to_csv(no_audio, index=False)
    assert len(read_pairs(no_audio)) == len(pairs)  # text judges need no audio
    with pytest.raises(RatingsError, match=f"row {line}: clip 'clip1' has no audio_path"):
        make_server(no_audio, tmp_path / "v.sqlite", port=0)


def test_pairs_file_lines_count_multiline_cells(study, tmp_path):
    pairs = pd.read_csv(study["pairs"], dtype=str, keep_default_na=False)
    pairs.loc[0, "caption_a"] = "two\nlines"
    pairs.loc[2, "audio_path"] = str(tmp_path / "gone.wav")
    path = tmp_path / "multi.csv"
    pairs.to_csv(path, index=False)
    # Row 0 spans lines 2-3, so row 2 (third record) starts on line 5.
    with pytest.raises(RatingsError, match="multi.csv: row 5: clip 'clip2': audio file .*gone.wav not found"):
        read_pairs(path)


def test_undo_takes_back_only_the_raters_last_vote(site):
    base, db = site
    store = VoteStore(db)
    page = urllib.request.urlopen(f"{base}/rate?rater=u1").read().decode()
    assert "id='undo'" not in page  # nothing to undo yet
    assert _post(base, {"rater": "u1"}, "/undo")[0] == 303  # and undoing nothing is harmless
    first = page.split("name='item_id' value='")[1].split("'")[0]
    assert _post(base, {"rater": "u1", "item_id": first, "choice": "1"})[0] == 303
    page = urllib.request.urlopen(f"{base}/rate?rater=u1").read().decode()
    second = page.split("name='item_id' value='")[1].split("'")[0]
    assert "id='undo'" in page
    assert _post(base, {"rater": "u1", "item_id": second, "choice": "2"})[0] == 303
    assert _post(base, {"rater": "u2", "item_id": second, "choice": "1"})[0] == 303
    assert _post(base, {"rater": "u1"}, "/undo")[0] == 303
    assert store.voted_items("u1") == {first} and store.voted_items("u2") == {second}
    page = urllib.request.urlopen(f"{base}/rate?rater=u1").read().decode()
    assert f"name='item_id' value='{second}'" in page  # the undone clip comes back
    assert _post(base, {"rater": "bad id!"}, "/undo")[0] == 400
