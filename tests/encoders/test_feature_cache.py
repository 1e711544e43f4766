"""The feature cache is keyed by content: two copies of a dataset agree, an edited caption does not."""

from __future__ import annotations

import shutil

import pytest

from clapcap.clap import features
from clapcap.clap.features import cache_features, dataset_fingerprint
from clapcap.clap.model import TinyClapConfig, build_feature_extractor
from clapcap.clap.preprocessing import ClapPreprocessing
from clapcap.data.manifest import read_manifest, write_manifest


def _copy(corpus, dest):
    shutil.copytree(corpus, dest)
    return dest


def _edit_first_caption(folder):
    df = read_manifest(folder / "manifest.csv")
    df.at[0, "captions"] = ["an edited caption", *df.at[0, "captions"][1:]]
    write_manifest(df, folder / "manifest.csv")


def test_signature_depends_on_content_not_location(tiny_corpus, tmp_path):
    """Old code hashed the absolute folder and the manifest's mtime: two copies never agreed."""
    fe, prep = build_feature_extractor(TinyClapConfig()), ClapPreprocessing()
    a, b = _copy(tiny_corpus, tmp_path / "a"), _copy(tiny_corpus, tmp_path / "deeper" / "b")
    sig = features._signature(fe, prep, a, "train", ["captions"])
    assert features._signature(fe, prep, b, "train", ["captions"]) == sig
    assert str(tmp_path) not in repr(sig)
    assert features._signature(fe, prep, a, "val", ["captions"]) != sig
    _edit_first_caption(b)
    assert dataset_fingerprint(b) != dataset_fingerprint(a)
    assert features._signature(fe, prep, b, "train", ["captions"]) != sig


def test_cache_made_for_one_copy_serves_another(tiny_corpus, tmp_path, monkeypatch):
    fe, prep = build_feature_extractor(TinyClapConfig()), ClapPreprocessing()
    a, b = _copy(tiny_corpus, tmp_path / "a"), _copy(tiny_corpus, tmp_path / "b")
    cache = tmp_path / "cache" / "val.npz"
    made = cache_features(fe, prep, a, "val", cache, progress=False)
    monkeypatch.setattr(features, "iter_split_audio", lambda *a, **k: pytest.fail("recomputed a valid cache"))
    assert cache_features(fe, prep, b, "val", cache, progress=False).clip_ids == made.clip_ids
