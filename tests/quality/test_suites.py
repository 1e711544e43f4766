"""great-expectations suites: a clean corpus passes, each planted violation fails."""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.data.prepare import load_dataset
from clapcap.quality.suites import validate_dump_arrays, validate_manifest, validate_split_sizes
from clapcap.quality.validate import DataValidationError, validate_data

KW = dict(min_duration_s=0.5, max_duration_s=60.0, allowed_sample_rates=[16000])


def test_clean_corpus_passes_and_writes_report(tiny_corpus_params, tmp_path):
    report = validate_data(tiny_corpus_params, tmp_path / "rep")
    assert report.success
    assert "PASSED" in (tmp_path / "rep" / "validation.md").read_text()


@pytest.mark.parametrize("plant,expectation", [
    ("duplicate_id", "expect_column_values_to_be_unique"),
    ("empty_caption", "expect_column_values_to_be_between"),
    ("too_long", "expect_column_values_to_be_between"),
    ("bad_rate", "expect_column_values_to_be_in_set"),
])
def test_planted_violation_fails(tiny_corpus, plant, expectation):
    df = load_dataset(tiny_corpus).manifest.copy()
    if plant == "duplicate_id":
        df.loc[1, "clip_id"] = df.loc[0, "clip_id"]
    elif plant == "empty_caption":
        df.at[2, "captions"] = ["  "]
    elif plant == "too_long":
        df.loc[3, "duration_s"] = 600.0
    else:
        df.loc[4, "sample_rate"] = 8000
    report = validate_manifest(df, **KW)
    assert not report.success
    failed = [r["expectation"] for r in report.suites["manifest"]["results"] if not r["success"]]
    assert expectation in failed


def test_split_sizes_checked(tiny_corpus):
    df = load_dataset(tiny_corpus).manifest.copy()
    fractions = {"train": 0.7, "val": 0.1, "test": 0.2}
    assert validate_split_sizes(df, fractions).success
    df.loc[df["split"] == "test", "split"] = "train"
    assert not validate_split_sizes(df, fractions).success


def test_validate_data_stage_fails_on_violation(tiny_corpus_params, tmp_path):
    params = tiny_corpus_params
    params.max_duration_s = 3.0  # clips are up to 4 s; a validation threshold, not a build input
    with pytest.raises(DataValidationError, match="duration_s"):
        validate_data(params, tmp_path / "rep")
    assert "FAILED" in (tmp_path / "rep" / "validation.md").read_text()


def test_dump_suite():
    rng = np.random.default_rng(0)
    audio, text = rng.normal(size=(4, 8)), rng.normal(size=(8, 8))
    idx = np.repeat(np.arange(4), 2)
    assert validate_dump_arrays(audio, text, idx).success
    text[3, 2] = np.nan
    assert not validate_dump_arrays(audio, text, idx).success
    text[3, 2] = 0.0
    idx[0] = 9
    assert not validate_dump_arrays(audio, text, idx).success
    assert not validate_dump_arrays(audio, np.zeros((8, 8)), np.repeat(np.arange(4), 2)).success
