"""The content listing of a real dataset, and the build record that validate checks."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from clapcap.data import listing as listing_mod
from clapcap.data.audio import AudioError
from clapcap.data.config import DataParams, ExternalSource
from clapcap.data.listing import build_listing, listing_digest, write_listing
from clapcap.data.prepare import load_dataset, prepare_data
from clapcap.quality.validate import DataValidationError, validate_data
from clapcap.utils.io import read_json


def _params(root, out, **kw) -> DataParams:
    return DataParams(source="clotho", out_dir=str(out),
                      external=ExternalSource(root=str(root), csv={"train": "captions.csv"}), **kw)


def _edit_caption(root, old="tone number 1 variant 2", new="a different caption"):
    path = root / "captions.csv"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_synthetic_listing_lists_nothing_and_is_stable(tmp_path):
    out = write_listing(DataParams(), tmp_path / "listing.json")
    assert read_json(out) == {"source": "synthetic", "files": []}
    first = out.read_bytes()
    assert write_listing(DataParams(), out).read_bytes() == first


def test_listing_holds_content_not_location(tmp_path, make_clotho):
    a = make_clotho(tmp_path / "a")
    b = tmp_path / "elsewhere" / "b"
    shutil.copytree(a, b)
    la, lb = build_listing(_params(a, tmp_path / "o")), build_listing(_params(b, tmp_path / "o"))
    assert la == lb
    assert [f["path"] for f in la["files"]] == ["audio/clip0.wav", "audio/clip1.wav", "audio/clip2.wav",
                                                "captions.csv"]
    assert str(tmp_path) not in json.dumps(la)
    os.utime(a / "audio" / "clip0.wav", ns=(1, 1))  # an mtime alone is not a change
    assert build_listing(_params(a, tmp_path / "o")) == la


def test_listing_changes_with_every_content_change(tmp_path, make_clotho, write_wav):
    root = make_clotho(tmp_path / "ds")
    params = _params(root, tmp_path / "o")
    seen = [listing_digest(build_listing(params))]
    _edit_caption(root)
    seen.append(listing_digest(build_listing(params)))
    write_wav(root / "audio" / "clip0.wav", freq=999.0)  # same size, other samples
    seen.append(listing_digest(build_listing(params)))
    write_wav(root / "audio" / "extra.wav")
    seen.append(listing_digest(build_listing(params)))
    (root / "audio" / "clip2.wav").unlink()
    seen.append(listing_digest(build_listing(params)))
    assert len(set(seen)) == len(seen)


def test_memo_rehashes_only_changed_files(tmp_path, make_clotho, write_wav, monkeypatch):
    root = make_clotho(tmp_path / "ds")
    params, memo = _params(root, tmp_path / "o"), tmp_path / "memo" / "m.json"
    hashed = []
    real = listing_mod.sha256_file
    monkeypatch.setattr(listing_mod, "sha256_file", lambda p: hashed.append(p.name) or real(p))
    first = build_listing(params, memo_path=memo)
    assert len(hashed) == 4 and memo.is_file()
    hashed.clear()
    assert build_listing(params, memo_path=memo) == first and hashed == []
    write_wav(root / "audio" / "clip1.wav", freq=1234.0)
    changed = build_listing(params, memo_path=memo)
    assert hashed == ["clip1.wav"] and changed == build_listing(params)  # memo agrees with a full hash
    memo.write_text("{not json")
    assert build_listing(params, memo_path=memo) == changed  # a broken memo is only a cache miss


def test_listing_names_a_missing_root_or_csv(tmp_path, make_clotho):
    with pytest.raises(FileNotFoundError, match="nowhere: data.external.root is not a folder"):
        build_listing(_params(tmp_path / "nowhere", tmp_path / "o"))
    root = make_clotho(tmp_path / "ds")
    (root / "captions.csv").unlink()
    with pytest.raises(FileNotFoundError, match="captions.csv: metadata file not found"):
        build_listing(_params(root, tmp_path / "o"))
    with pytest.raises(ValueError, match="needs data.external.root"):
        build_listing(DataParams(source="clotho"))


def test_failed_prepare_leaves_no_manifest_that_validates(tmp_path, make_clotho):
    """Old code kept the good manifest of the first run, and validate passed for other params."""
    root = make_clotho(tmp_path / "ds")
    good = _params(root, tmp_path / "corpus")
    prepare_data(good, progress=False)
    validate_data(good, tmp_path / "rep")
    (root / "broken.csv").write_text("file_name,caption_1,caption_2,caption_3,caption_4,caption_5\n"
                                     "missing.wav,a,b,c,d,e\n")
    other = _params(root, tmp_path / "corpus")
    other.external.csv = {"train": "broken.csv"}
    with pytest.raises(AudioError, match="missing.wav: file not found"):
        prepare_data(other, progress=False)
    for params in (other, good):
        with pytest.raises(DataValidationError, match="corpus/dataset.json: not found .*rerun prepare"):
            validate_data(params, tmp_path / "rep")


def test_validate_refuses_other_params_or_inputs(tmp_path, make_clotho):
    root = make_clotho(tmp_path / "ds")
    params = _params(root, tmp_path / "corpus")
    prepare_data(params, progress=False)
    info = read_json(tmp_path / "corpus" / "dataset.json")
    assert set(info["build"]) == {"params_sha256", "listing_sha256", "manifest_sha256"}
    with pytest.raises(DataValidationError, match="dataset.json was built from other params .*rerun prepare"):
        validate_data(_params(root, tmp_path / "corpus", split_seed=7), tmp_path / "rep")
    validate_data(_params(root, tmp_path / "corpus", max_duration_s=30.0), tmp_path / "rep")  # a threshold only
    _edit_caption(root)
    with pytest.raises(DataValidationError, match="built from other input files"):
        validate_data(params, tmp_path / "rep")
    prepare_data(params, progress=False)
    validate_data(params, tmp_path / "rep")
    manifest = tmp_path / "corpus" / "manifest.csv"
    manifest.write_text(manifest.read_text().replace("variant 0", "variant zero"))
    with pytest.raises(DataValidationError, match="manifest.csv is missing or is not the manifest"):
        validate_data(params, tmp_path / "rep")
    shutil.rmtree(root)
    with pytest.raises(DataValidationError, match="cannot list its input files .*not a folder"):
        validate_data(params, tmp_path / "rep")


def test_dataset_json_holds_no_absolute_path_for_a_relative_root(tmp_path, make_clotho, write_wav,
                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_clotho(tmp_path / "ds")
    write_wav(tmp_path / "ds" / "audio" / "clip1.wav", subtype="FLOAT", nan_at=10)
    params = _params("ds", "corpus", on_error="skip")
    prepare_data(params, progress=False)
    text = (tmp_path / "corpus" / "dataset.json").read_text()
    assert str(tmp_path) not in text
    info = json.loads(text)
    assert info["root"] == "../ds"
    assert info["skipped"] == [{"path": "audio/clip1.wav", "reason": info["skipped"][0]["reason"]}]
    assert "NaN" in info["skipped"][0]["reason"]
    ds = load_dataset(tmp_path / "corpus")
    assert ds.audio_path("clip0") == (tmp_path / "ds" / "audio" / "clip0.wav").resolve()
    validate_data(params, tmp_path / "rep")


def test_validate_names_the_input_files_that_changed(tmp_path, make_clotho, write_wav):
    """Old code said only "a metadata CSV or audio file under <root> changed since"."""
    root = make_clotho(tmp_path / "ds")
    params = _params(root, tmp_path / "corpus")
    prepare_data(params, progress=False)
    write_wav(root / "audio" / "clip1.wav", freq=999.0)
    write_wav(root / "audio" / "new.wav")
    with pytest.raises(DataValidationError, match=r"corpus/dataset.json was built from other input files: "
                                                  r"audio/clip1.wav \(changed\), audio/new.wav \(added\): rerun prepare"):
        validate_data(params, tmp_path / "rep")
