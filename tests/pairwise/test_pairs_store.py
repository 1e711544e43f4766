"""Pairs files, the SQLite vote store and the rating server without a browser."""

from __future__ import annotations

import json
import sqlite3
import threading
import urllib.parse
import urllib.request

import pandas as pd
import pytest

from clapcap.cli import main
from clapcap.pairwise.pairs import make_pairs, read_pairs, read_reference
from clapcap.pairwise.ratings import read_ratings
from clapcap.pairwise.server import make_server
from clapcap.pairwise.store import VoteStore, derandomize, shown_order


def test_make_pairs_all_system_pairs_on_common_clips(study):
    pairs = read_pairs(study["pairs"])
    assert sorted(pairs["pair_id"].unique()) == ["gpt2|reference", "gpt2|t5", "reference|t5"]
    assert sorted(pairs["clip_id"].unique()) == ["clip0", "clip1", "clip2"]  # t5's clip3 dropped
    row = pairs[(pairs["pair_id"] == "gpt2|reference") & (pairs["clip_id"] == "clip1")].iloc[0]
    assert row["caption_b"] == "a dog barks 1" and row["reference"] == "a dog barks 1"
    assert row["audio_path"].endswith("audio/clip1.wav")


def test_make_pairs_errors_and_sampling(study):
    ref = read_reference(study["split"])
    with pytest.raises(ValueError, match="at least two systems"):
        make_pairs({"gpt2": {"clip0": "x"}}, ref, include_reference=False)
    with pytest.raises(ValueError, match="no clip"):
        make_pairs({"a": {"zzz": "x"}}, ref)
    with pytest.raises(ValueError, match="reserved"):
        make_pairs({"reference": {"clip0": "x"}}, ref)
    sample = make_pairs({"a": dict.fromkeys(ref.index, "x"), "b": dict.fromkeys(ref.index, "y")},
                        ref, n_clips=2, seed=3)
    assert sample["clip_id"].nunique() == 2 and len(sample) == 2 * 3


def test_make_pairs_cli_and_bad_predictions(study, tmp_path):
    out = tmp_path / "p.csv"
    assert main(["pairwise", "make-pairs", "--predictions", f"g={study['gpt2']}", str(study["t5"]),
                 "--reference", str(study["split"]), "--out", str(out), "--no-reference"]) == 0
    assert list(read_pairs(out)["pair_id"].unique()) == ["g|t5"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"clip0": 3}))
    assert main(["pairwise", "make-pairs", "--predictions", str(bad), "--reference",
                 str(study["split"]), "--out", str(out)]) == 2


def test_derandomize_and_order():
    assert derandomize("1", "AB") == "A" and derandomize("1", "BA") == "B"
    assert derandomize("2", "BA") == "A" and derandomize("tie", "BA") == "tie"
    with pytest.raises(ValueError):
        derandomize("3", "AB")
    orders = {shown_order(0, "r", f"i{k}") for k in range(20)}
    assert orders == {"AB", "BA"} and shown_order(0, "r", "i1") == shown_order(0, "r", "i1")


def test_store_persists_ignores_repeats_and_exports(tmp_path):
    db = tmp_path / "votes.sqlite"
    store = VoteStore(db)
    assert store.record_vote(item_id="i1", rater="r1", pool="human", pair_id="a|b", choice="A")
    assert not store.record_vote(item_id="i1", rater="r1", pool="human", pair_id="a|b", choice="B")
    store.record_failure(item_id="i2", rater="m", pool="text_llm", pair_id="a|b", error="bad")
    with pytest.raises(ValueError):
        store.record_vote(item_id="i3", rater="r1", pool="human", pair_id="a|b", choice="C")
    with sqlite3.connect(db) as conn:  # an independent reader sees the committed vote
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT choice FROM votes").fetchall() == [("A",)]
    again = VoteStore(db)
    assert again.voted_items("r1") == {"i1"} and len(again.failures()) == 1
    assert again.export_csv(tmp_path / "r.csv") == 1
    assert read_ratings(tmp_path / "r.csv")["choice"].tolist() == ["A"]


def _post(url: str, data: dict) -> int:
    body = urllib.parse.urlencode(data).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST")) as resp:
        return resp.status


def test_server_http_flow(study, tmp_path):
    db = tmp_path / "votes.sqlite"
    server = make_server(study["pairs"], db, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        page = urllib.request.urlopen(f"{base}/rate?rater=r1").read().decode()
        assert "Caption 1" in page and "<audio" in page and "0 of 9 rated" in page
        item_id = page.split("name='item_id' value='")[1].split("'")[0]
        assert _post(f"{base}/vote", {"rater": "r1", "item_id": item_id, "choice": "1"}) == 200
        progress = json.loads(urllib.request.urlopen(f"{base}/progress?rater=r1").read())
        assert progress == {"rater": "r1", "done": 1, "total": 9}
        audio = urllib.request.urlopen(f"{base}/audio/clip0")
        assert audio.headers["Content-Type"] == "audio/x-wav" and audio.read()[:4] == b"RIFF"
        for bad in (f"{base}/rate?rater=bad%20id", f"{base}/audio/..%2Fsplit.csv"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(bad)
            assert err.value.code in (400, 404)
        with pytest.raises(urllib.error.HTTPError):
            _post(f"{base}/vote", {"rater": "r1", "item_id": "nope", "choice": "1"})
    finally:
        server.shutdown()
        server.server_close()
    votes = VoteStore(db).votes()
    order = shown_order(0, "r1", item_id)
    assert votes["choice"].tolist() == [order[0]] and votes["shown_order"].tolist() == [order]
    pd.testing.assert_series_equal(votes["item_id"], pd.Series([item_id], name="item_id"))


def test_pairs_file_holds_no_machine_path(tmp_path):
    """audio_path is written relative to the pairs file and read back absolute: two clones of a
    study write the same bytes."""
    from clapcap.pairwise.pairs import read_pairs, write_pairs

    files = []
    for clone in ("a", "b"):
        wav = tmp_path / clone / "data" / "c1.wav"
        wav.parent.mkdir(parents=True)
        wav.write_bytes(b"RIFF")
        row = {"item_id": "c1::x|y", "pair_id": "x|y", "clip_id": "c1", "system_a": "x", "system_b": "y",
               "caption_a": "a", "caption_b": "b", "reference": "r", "audio_path": str(wav)}
        out = write_pairs(pd.DataFrame([row]), tmp_path / clone / "results" / "pairs.csv")
        files.append(out.read_bytes())
        assert read_pairs(out)["audio_path"].iloc[0] == str(wav)
    assert files[0] == files[1] and b"../data/c1.wav" in files[0]
