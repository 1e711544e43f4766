"""MusicCaps with its own split: ``data.split_by: is_audioset_eval`` (the AudioSet evaluation
segments are the test set; the rest is train and val in the ratio of ``split_fractions``)."""

from __future__ import annotations

import csv
import dataclasses

import pandas as pd
import pytest

from clapcap.config import load_section
from clapcap.data.config import DataParams, ExternalSource
from clapcap.data.manifest import read_manifest
from clapcap.data.prepare import params_digest, prepare_data
from clapcap.data.splits import split_by_flag
from clapcap.errors import ConfigError
from clapcap.utils.io import sha256_json


def test_flagged_clips_are_the_test_split_and_the_rest_train_and_val():
    df = pd.DataFrame({"clip_id": [f"c{i:02d}" for i in range(40)], "is_audioset_eval": [i % 4 == 0 for i in range(40)]})
    out = split_by_flag(df, "is_audioset_eval", {"train": 0.8, "val": 0.1, "test": 0.1}, seed=42)
    assert set(out.loc[out["split"] == "test", "clip_id"]) == {f"c{i:02d}" for i in range(0, 40, 4)}
    assert (out["split"] == "val").sum() == 3 and (out["split"] == "train").sum() == 27  # floor(30 / 9)
    again = split_by_flag(df, "is_audioset_eval", {"train": 0.8, "val": 0.1, "test": 0.1}, seed=42)
    assert out["split"].tolist() == again["split"].tolist()


def test_every_clip_flagged_or_a_missing_flag_is_refused():
    df = pd.DataFrame({"clip_id": ["a", "b"], "is_audioset_eval": [True, True]})
    with pytest.raises(ValueError, match="true for every clip: no train split"):
        split_by_flag(df, "is_audioset_eval", {"train": 0.9, "val": 0.1})
    df = pd.DataFrame({"clip_id": ["a", "b"], "is_audioset_eval": [True, None]})
    with pytest.raises(ValueError, match=r"empty for clip\(s\) \['b'\]"):
        split_by_flag(df, "is_audioset_eval", {"train": 0.9, "val": 0.1})


def test_prepare_musiccaps_by_is_audioset_eval(tmp_path, write_wav):
    root = tmp_path / "musiccaps"
    rows = []
    for i in range(12):
        ytid = f"yt{i:02d}"
        write_wav(root / "audio" / f"{ytid}.wav", seconds=1.0)
        rows.append([ytid, 30, 40, "['piano']", f"A piano plays tune {i}.", 0, "False", str(i < 4)])
    with open(root / "musiccaps-public.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["ytid", "start_s", "end_s", "aspect_list", "caption", "author_id", "is_balanced_subset",
                    "is_audioset_eval"])
        w.writerows(rows)
    params = DataParams(source="musiccaps", out_dir=str(tmp_path / "out"), split_by="is_audioset_eval",
                        external=ExternalSource(root=str(root), csv={"all": "musiccaps-public.csv"}),
                        split_fractions={"train": 0.75, "val": 0.25, "test": 0.0})
    out = prepare_data(params, progress=False)
    manifest = read_manifest(out)
    assert sorted(manifest.loc[manifest["split"] == "test", "clip_id"]) == ["yt00", "yt01", "yt02", "yt03"]
    assert (manifest["split"] == "val").sum() == 2 and (manifest["split"] == "train").sum() == 6


def test_split_by_is_audioset_eval_needs_one_musiccaps_csv(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("data:\n  source: clotho\n  split_by: is_audioset_eval\n"
                    "  external: {root: /x, csv: {test: t.csv}}\n")
    with pytest.raises(ConfigError, match=r"p.yaml:3: data.split_by: is_audioset_eval splits one MusicCaps CSV"):
        load_section(DataParams, "data", path)


def test_the_default_split_by_leaves_the_build_digest_as_it_was():
    params = DataParams()
    fields = {k: v for k, v in dataclasses.asdict(params).items()
              if k not in ("out_dir", "min_duration_s", "max_duration_s", "allowed_sample_rates", "split_by")}
    assert params_digest(params) == sha256_json(fields)
    assert params_digest(DataParams(source="musiccaps", split_by="is_audioset_eval",
                                    external=ExternalSource(root="/x", csv={"all": "m.csv"}))) != \
        params_digest(DataParams(source="musiccaps", external=ExternalSource(root="/x", csv={"all": "m.csv"})))
