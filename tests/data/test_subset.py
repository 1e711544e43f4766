"""A source subset of a prepared dataset: filtered manifest, shared audio, content-only bytes."""

from __future__ import annotations

import pytest

from clapcap.data.manifest import resolve_audio_path
from clapcap.data.prepare import dataset_fingerprint, load_dataset
from clapcap.data.subset import subset_dataset
from clapcap.errors import InputError


@pytest.fixture(scope="module")
def music_corpus(tmp_path_factory):
    """30 clips, most of them music, so that every split has music."""
    from clapcap.data.config import DataParams
    from clapcap.data.prepare import prepare_data
    from clapcap.data.synth import SynthConfig

    out = tmp_path_factory.mktemp("music_corpus")
    prepare_data(DataParams(out_dir=str(out), synthetic=SynthConfig(n_clips=30, seed=2, min_duration_s=1.0,
                                                                    max_duration_s=2.0, music_fraction=0.7)),
                 progress=False)
    return out


def test_music_subset_shares_audio_and_is_relocatable(music_corpus, tmp_path):
    tiny_corpus = music_corpus
    full = load_dataset(tiny_corpus).manifest
    music = full[full["source"] == "synthetic_music"]
    assert 0 < len(music) < len(full)
    out = subset_dataset(tiny_corpus, tmp_path / "a" / "music", source="synthetic_music")
    ds = load_dataset(out)
    assert list(ds.manifest["clip_id"]) == list(music["clip_id"])
    assert all(resolve_audio_path(ds.root, p).is_file() for p in ds.manifest["audio_path"])
    other = subset_dataset(tiny_corpus, tmp_path / "b" / "music", source="synthetic_music")
    assert (out / "manifest.csv").read_bytes() == (other / "manifest.csv").read_bytes()
    assert dataset_fingerprint(out) == dataset_fingerprint(other)


def test_unknown_source_and_empty_split(tiny_corpus, tmp_path):
    with pytest.raises(InputError, match="no clip has source 'jazz'"):
        subset_dataset(tiny_corpus, tmp_path / "x", source="jazz")
    with pytest.raises(InputError, match=r"no clips in split\(s\) \['val', 'test'\]"):  # 6 music clips, all train
        subset_dataset(tiny_corpus, tmp_path / "y", source="synthetic_music")
