"""Manifest format: round trip, path escapes, malformed rows."""

from __future__ import annotations

import pandas as pd
import pytest

from clapcap.data.manifest import (
    ManifestError,
    normalize,
    read_manifest,
    resolve_audio_path,
    write_manifest,
)


def _row(**kw):
    row = {"clip_id": "c1", "audio_path": "a/c1.wav", "duration_s": 1.0, "sample_rate": 16000,
           "split": "train", "source": "x", "captions": ["hello"], "is_audioset_eval": None}
    row.update(kw)
    return row


@pytest.mark.parametrize("bad", ["../secret.wav", "a/../../secret.wav", "/etc/passwd"])
def test_path_escape_refused(tmp_path, bad):
    with pytest.raises(ManifestError):
        resolve_audio_path(tmp_path, bad)


def test_symlink_escape_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.wav").write_bytes(b"x")
    (root / "link.wav").symlink_to(tmp_path / "outside.wav")
    with pytest.raises(ManifestError, match="outside the dataset root"):
        resolve_audio_path(root, "link.wav")


def test_round_trip_keeps_lists_and_flags(tmp_path):
    df = pd.DataFrame([_row(), _row(clip_id="c2", audio_path="a/c2.wav", captions=["x, y", "z"],
                                    is_audioset_eval=True, labels=["dog"])])
    back = read_manifest(write_manifest(df, tmp_path / "m.csv"))
    assert back["captions"].tolist() == [["hello"], ["x, y", "z"]]
    assert back["is_audioset_eval"].tolist() == [None, True]
    assert back["labels"].tolist() == [None, ["dog"]]


@pytest.mark.parametrize("kw,match", [
    ({"captions": []}, "captions must be a non-empty list"),
    ({"split": "dev"}, "unknown split"),
    ({"captions": "not json ["}, "not valid JSON"),
])
def test_malformed_rows_are_named(kw, match):
    with pytest.raises(ManifestError, match=match):
        normalize(pd.DataFrame([_row(**kw)]), origin="m.csv")


def test_missing_column_named(tmp_path):
    (tmp_path / "m.csv").write_text("clip_id,audio_path\nx,y\n")
    with pytest.raises(ManifestError, match="missing column"):
        read_manifest(tmp_path / "m.csv")
