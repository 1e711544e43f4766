"""prepare_data's checks on a real source: audio limits, one split per clip, symlinked folders."""

from __future__ import annotations

import re

import pytest

from clapcap.data.audio import AudioError
from clapcap.data.config import DataParams, ExternalSource
from clapcap.data.listing import build_listing
from clapcap.data.manifest import ManifestError
from clapcap.data.prepare import load_dataset, prepare_data
from clapcap.quality.validate import DataValidationError, validate_data
from clapcap.utils.io import read_json

# (seconds, sample rate, reason) of a clip out of the default limits (0.5-60 s, 16-48 kHz)
# or of max_duration_s=2 (a 10-minute clip, without writing 10 minutes of audio).
OUT_OF_LIMITS = [
    (0.01, 16000, r"too short: 0.010 s < data.min_duration_s 0.5 s"),
    (3.0, 16000, r"too long: 3.000 s > data.max_duration_s 2 s"),
    (1.0, 96000, r"sample rate 96000 Hz not in data.allowed_sample_rates \[16000, 22050, 32000, 44100, 48000\]"),
]


def _params(root, out, **kw) -> DataParams:
    csv = kw.pop("csv", {"train": "captions.csv"})
    return DataParams(source="clotho", out_dir=str(out), external=ExternalSource(root=str(root), csv=csv),
                      max_duration_s=2.0, **kw)


@pytest.mark.parametrize("seconds, sr, reason", OUT_OF_LIMITS)
def test_out_of_limit_audio_is_refused_at_prepare_naming_clip_file_and_row(tmp_path, make_clotho, write_wav,
                                                                           seconds, sr, reason):
    """Old code: prepare passed, then validate failed naming only the value (``-> ['0.01']``)."""
    root = make_clotho(tmp_path / "ds")
    write_wav(root / "audio" / "clip1.wav", seconds=seconds, sr=sr)
    with pytest.raises(AudioError, match=rf"audio/clip1.wav: {reason} \(clip 'clip1', listed in "
                                         rf".*captions.csv: row 3\)"):
        prepare_data(_params(root, tmp_path / "corpus"), progress=False)


@pytest.mark.parametrize("seconds, sr, reason", OUT_OF_LIMITS)
def test_out_of_limit_audio_is_skipped_and_recorded(tmp_path, make_clotho, write_wav, seconds, sr, reason):
    """Old code: ``skipped: []``, and the whole dataset then failed validation."""
    root = make_clotho(tmp_path / "ds")
    write_wav(root / "audio" / "clip1.wav", seconds=seconds, sr=sr)
    params = _params(root, tmp_path / "corpus", on_error="skip")
    prepare_data(params, progress=False)
    info = read_json(tmp_path / "corpus" / "dataset.json")
    assert [s["path"] for s in info["skipped"]] == ["audio/clip1.wav"]
    assert re.fullmatch(reason, info["skipped"][0]["reason"])
    assert info["n_clips"] == 2 and list(load_dataset(tmp_path / "corpus").manifest["clip_id"]) == ["clip0", "clip2"]
    validate_data(params, tmp_path / "rep")


def test_limits_are_build_inputs_only_when_they_skip(tmp_path, make_clotho):
    """With ``on_error: skip`` a wider limit would keep clips that were skipped: the old build
    record left the limits out, so validate accepted a dataset built with other ones."""
    root = make_clotho(tmp_path / "ds")
    params = _params(root, tmp_path / "corpus", on_error="skip")
    prepare_data(params, progress=False)
    with pytest.raises(DataValidationError, match="built from other params .*rerun prepare"):
        validate_data(_params(root, tmp_path / "corpus", on_error="skip", min_duration_s=0.1), tmp_path / "rep")
    raising = _params(root, tmp_path / "corpus")
    prepare_data(raising, progress=False)
    validate_data(_params(root, tmp_path / "corpus", min_duration_s=0.1), tmp_path / "rep")  # a threshold only


def test_clip_in_two_splits_is_refused_naming_both_rows(tmp_path, make_clotho):
    """Old code: prepare passed; validate failed with ``-> ['clip1', 'clip1']``, no file or row."""
    root = make_clotho(tmp_path / "ds")
    lines = (root / "captions.csv").read_text().splitlines(keepends=True)
    (root / "val.csv").write_text(lines[0] + lines[2])  # clip1 again
    params = _params(root, tmp_path / "corpus", csv={"train": "captions.csv", "val": "val.csv"})
    with pytest.raises(ManifestError, match=r"val.csv: row 2: clip 'clip1' \(split val\) is also listed in "
                                            r".*captions.csv: row 3 \(split train\); a clip belongs to one split"):
        prepare_data(params, progress=False)


def test_symlinked_audio_folder_is_read_and_listed(tmp_path, make_clotho):
    """Old code refused every clip: "resolves outside the dataset root"."""
    shared = make_clotho(tmp_path / "shared")
    root = tmp_path / "ds"
    root.mkdir()
    (root / "captions.csv").write_bytes((shared / "captions.csv").read_bytes())
    (root / "audio").symlink_to(shared / "audio", target_is_directory=True)
    params = _params(root, tmp_path / "corpus")
    prepare_data(params, progress=False)
    ds = load_dataset(tmp_path / "corpus")
    assert ds.audio_path("clip1") == root.resolve() / "audio" / "clip1.wav"
    assert [f["path"] for f in build_listing(params)["files"]] == \
        ["audio/clip0.wav", "audio/clip1.wav", "audio/clip2.wav", "captions.csv"]
    validate_data(params, tmp_path / "rep")


def test_folder_listing_follows_symlinked_subfolders_without_looping(tmp_path, write_wav):
    """Old listing skipped a symlinked sub-folder, so a change there never reran prepare."""
    shared = tmp_path / "shared"
    write_wav(shared / "a.wav")
    root = tmp_path / "ds"
    write_wav(root / "own" / "b.wav")
    (root / "clips").symlink_to(shared, target_is_directory=True)
    (root / "own" / "loop").symlink_to(root / "own", target_is_directory=True)
    (root / "meta.csv").write_text("file_name,caption\nclips/a.wav,a tone\nown/b.wav,another tone\n")
    params = DataParams(source="folder", out_dir=str(tmp_path / "corpus"),
                        external=ExternalSource(root=str(root), csv={"train": "meta.csv"}))
    assert [f["path"] for f in build_listing(params)["files"]] == ["clips/a.wav", "meta.csv", "own/b.wav"]
    prepare_data(params, progress=False)
    assert list(load_dataset(tmp_path / "corpus").manifest["audio_path"]) == ["clips/a.wav", "own/b.wav"]


def test_references_are_each_clip_of_the_split_with_all_its_captions(tmp_path, make_clotho):
    root = make_clotho(tmp_path / "ds")
    prepare_data(_params(root, tmp_path / "corpus"), progress=False)
    ds = load_dataset(tmp_path / "corpus")
    train = ds.split("train")
    refs = ds.references("train")
    assert sorted(refs) == sorted(map(str, train["clip_id"]))
    for cid, caps in zip(train["clip_id"], train["captions"], strict=True):
        assert refs[str(cid)] == list(caps) and len(caps) > 1
    assert ds.references("test") == {}
