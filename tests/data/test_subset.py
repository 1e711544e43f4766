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


def test_column_subsets_cap_their_splits_and_keep_every_test_clip(music_corpus, tmp_path):
    from clapcap.data.subset import ColumnSubsetParams, column_subsets

    full = load_dataset(music_corpus).manifest
    params = ColumnSubsetParams(dataset_dir=str(music_corpus), out_dir=str(tmp_path / "subsets"), column="source",
                                values=["synthetic_music"], max_clips={"train": 3}, seed=0)
    out, = column_subsets(params)
    assert out == tmp_path / "subsets" / "synthetic_music"
    got = load_dataset(out).manifest
    music = full[full["source"] == "synthetic_music"]
    assert (music["split"] == "train").sum() > 3 and (got["split"] == "train").sum() == 3
    for split in ("val", "test"):  # not capped: every clip of the family
        assert list(got.loc[got["split"] == split, "clip_id"]) == list(music.loc[music["split"] == split, "clip_id"])
    assert set(got["clip_id"]) <= set(music["clip_id"])
    assert all(resolve_audio_path(load_dataset(out).root, p).is_file() for p in got["audio_path"])
    again, = column_subsets(ColumnSubsetParams(**{**params.__dict__, "out_dir": str(tmp_path / "again")}))
    assert (again / "manifest.csv").read_bytes() == (out / "manifest.csv").read_bytes()  # seeded draw
    other, = column_subsets(ColumnSubsetParams(**{**params.__dict__, "out_dir": str(tmp_path / "s1"), "seed": 1}))
    assert (other / "manifest.csv").read_bytes() != (out / "manifest.csv").read_bytes()


@pytest.mark.parametrize("change, message", [
    ({"column": "colour"}, "no column 'colour' in its manifest"),
    ({"values": ["synthetic_music", "birdsong"]}, r"no clip has source \['birdsong'\]"),
])
def test_column_subsets_name_a_bad_column_or_value(music_corpus, tmp_path, change, message):
    from clapcap.data.subset import ColumnSubsetParams, column_subsets

    params = ColumnSubsetParams(**{"dataset_dir": str(music_corpus), "out_dir": str(tmp_path / "s"),
                                   "column": "source", "values": ["synthetic_music"], **change})
    with pytest.raises(InputError, match=message):
        column_subsets(params)


@pytest.mark.parametrize("max_clips, message", [({"dev": 3}, r"\['dev'\] are not splits"), ({"train": 0}, "positive")])
def test_column_subset_caps_are_checked_at_load(max_clips, message):
    from clapcap.config import ConfigError, from_dict
    from clapcap.data.subset import ColumnSubsetParams

    with pytest.raises(ConfigError, match=message):
        from_dict(ColumnSubsetParams, {"max_clips": max_clips})


def test_a_column_can_be_a_key_of_each_clips_meta(music_corpus, tmp_path):
    """The real corpus keeps ``family`` in each clip's ``meta`` record, not as a column."""
    import shutil

    from clapcap.data.manifest import write_manifest
    from clapcap.data.subset import ColumnSubsetParams, column_subsets

    src = tmp_path / "corpus"
    shutil.copytree(music_corpus, src)
    ds = load_dataset(src)
    df = ds.manifest.copy()
    df["meta"] = [{**(m if isinstance(m, dict) else {}), "family": "instruments" if s == "synthetic_music" else "effects"}
                  for m, s in zip(df["meta"] if "meta" in df else [{}] * len(df), df["source"], strict=True)]
    write_manifest(df, src / "manifest.csv")
    out, = column_subsets(ColumnSubsetParams(dataset_dir=str(src), out_dir=str(tmp_path / "s"), column="family",
                                             values=["instruments"]))
    assert list(load_dataset(out).manifest["clip_id"]) == list(df.loc[df["source"] == "synthetic_music", "clip_id"])
    with pytest.raises(InputError, match="no 'colour' in its clips' meta"):
        column_subsets(ColumnSubsetParams(dataset_dir=str(src), out_dir=str(tmp_path / "t"), column="colour",
                                          values=["red"]))
