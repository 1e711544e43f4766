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


def _shared_storage(tmp_path):
    """``root/audio`` is a symlink to ``shared/deep/audio`` (holding ``a.wav``); returns root."""
    shared = tmp_path / "shared" / "deep" / "audio"
    shared.mkdir(parents=True)
    (shared / "a.wav").write_bytes(b"x")
    (tmp_path / "shared" / "deep" / "b.wav").write_bytes(b"y")
    root = tmp_path / "root"
    root.mkdir()
    (root / "audio").symlink_to(shared, target_is_directory=True)
    return root


def test_symlinked_audio_folder_or_root_is_accepted(tmp_path):
    """Old code resolved the whole path: an audio folder on shared storage 'resolved outside'."""
    root = _shared_storage(tmp_path)
    full = resolve_audio_path(root, "audio/a.wav")
    assert full == root.resolve() / "audio" / "a.wav" and full.read_bytes() == b"x"
    (tmp_path / "root_link").symlink_to(root, target_is_directory=True)
    assert resolve_audio_path(tmp_path / "root_link", "audio/a.wav") == full  # the root is resolved first


@pytest.mark.parametrize("bad", ["audio/../../x.wav", "audio/../../shared/deep/b.wav", "../root/audio/a.wav"])
def test_dot_dot_through_a_symlinked_folder_is_refused(tmp_path, bad):
    root = _shared_storage(tmp_path)
    with pytest.raises(ManifestError, match="resolves outside the dataset root .*'..' climbs above the root"):
        resolve_audio_path(root, bad)


def test_dot_dot_never_leaves_the_root_through_a_symlink(tmp_path):
    """``audio/../b.wav`` is ``b.wav`` under the root, not the file beside the link's target."""
    root = _shared_storage(tmp_path)
    assert resolve_audio_path(root, "audio/../b.wav") == root.resolve() / "b.wav"


def test_symlinked_file_inside_the_root_is_followed(tmp_path):
    """A decision, not an accident: the rule is "no path text leaves the root". A symlink inside
    the root is the dataset owner's layout (a subset linked from a full copy), exactly like a
    symlinked audio folder, which reaches the same outside files; refusing one and not the
    other would protect nothing. Absolute paths and climbing '..' stay refused (above)."""
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.wav").write_bytes(b"x")
    (root / "link.wav").symlink_to(tmp_path / "outside.wav")
    assert resolve_audio_path(root, "link.wav").read_bytes() == b"x"


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
