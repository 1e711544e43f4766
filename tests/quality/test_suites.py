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


def test_failures_name_the_offending_clips_and_their_count(tiny_corpus):
    """Old messages named only values (``duration_s ... -> ['0.01']``): no clip, file or row."""
    df = load_dataset(tiny_corpus).manifest.copy()
    df.loc[[3, 5, 6, 7, 8, 9, 10], "duration_s"] = 600.0  # seven clips, five named
    df.loc[12, "duration_s"] = 0.01
    df.loc[20, ["clip_id", "split"]] = [df.loc[1, "clip_id"], "test" if df.loc[1, "split"] != "test" else "val"]
    report = validate_manifest(df, **KW)
    lines = report.failures()
    duration = next(line for line in lines if "duration_s" in line)
    first = f"clip {df.loc[3, 'clip_id']!r} ({df.loc[3, 'audio_path']}, split {df.loc[3, 'split']}, " \
            f"manifest row 5): duration_s=600.0"
    assert "; 8 offending row(s): " + first in duration and duration.endswith("; and 3 more")
    assert f"clip {df.loc[12, 'clip_id']!r}" not in duration  # only the first five are named
    twice = next(line for line in lines if "'column': 'clip_id'" in line)
    assert "2 offending row(s)" in twice
    for i in (1, 20):  # the clip in two splits: both rows, each with its file and split
        assert f"({df.loc[i, 'audio_path']}, split {df.loc[i, 'split']}, manifest row {i + 2})" in twice
    assert "Offending rows:" in report.to_markdown()


def test_a_passing_report_carries_nothing_extra(tiny_corpus):
    """A clean dataset's validation.json/.md stay as they were (no new key, no new line)."""
    report = validate_manifest(load_dataset(tiny_corpus).manifest, **KW)
    assert report.success and "Offending" not in report.to_markdown()
    assert all(set(r) == {"expectation", "kwargs", "success", "unexpected"}
               for r in report.to_dict()["suites"]["manifest"]["results"])


def test_split_and_dump_failures_name_their_rows(tiny_corpus):
    df = load_dataset(tiny_corpus).manifest.copy()
    df.loc[df["split"] == "test", "split"] = "train"
    line = validate_split_sizes(df, {"train": 0.7, "val": 0.1, "test": 0.2}).failures()[0]
    assert "2 offending row(s): split test: 0 clips, expected 8; split train: 36 clips, expected 28" in line
    audio, text = np.ones((2, 4)), np.ones((3, 4))
    text[1, 0] = np.nan
    line = validate_dump_arrays(audio, text, np.array([0, 1, 1])).failures()[0]
    assert line.endswith("; 1 offending row(s): text embedding 1: finite=False")


def test_split_sizes_checked(tiny_corpus):
    df = load_dataset(tiny_corpus).manifest.copy()
    fractions = {"train": 0.7, "val": 0.1, "test": 0.2}
    assert validate_split_sizes(df, fractions).success
    df.loc[df["split"] == "test", "split"] = "train"
    assert not validate_split_sizes(df, fractions).success


def test_validate_data_stage_fails_on_violation(tiny_corpus_params, tmp_path):
    params = tiny_corpus_params
    params.max_duration_s = 3.0  # clips are up to 4 s; a validation threshold, not a build input
    with pytest.raises(DataValidationError, match=r"duration_s.*offending row\(s\): clip '.+' \(.+\.wav, "
                                                  r"split \w+, manifest row \d+\): duration_s=3\.\d+"):
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


def test_file_project_stores_suites_and_checkpoints_and_builds_data_docs(tiny_corpus, tiny_corpus_params, tmp_path):
    """validate_data(data_docs=...): great-expectations' own file project, its checkpoint
    results the same as the ephemeral run's (offending rows included), and a Data Docs site
    that lists the failed run; a second run starts from a clean project."""
    import json

    import great_expectations as gx

    from clapcap.quality.validate import DATA_DOCS_INDEX

    docs = tmp_path / "gx_project"
    validate_data(tiny_corpus_params, tmp_path / "rep", data_docs=docs)
    assert (docs / DATA_DOCS_INDEX).is_file()
    ctx = gx.get_context(mode="file", project_root_dir=str(docs))
    assert {s.name for s in ctx.suites.all()} == {"manifest", "split_sizes"}
    assert {c.name for c in ctx.checkpoints.all()} == {"manifest_checkpoint", "split_sizes_checkpoint"}
    stored = json.loads((docs / "gx" / "expectations" / "manifest.json").read_text())
    assert len(stored["expectations"]) == 8
    df = load_dataset(tiny_corpus).manifest.copy()
    df.loc[3, "duration_s"] = 600.0
    in_file = validate_manifest(df, **KW, context_dir=tmp_path / "bad")
    assert in_file.to_dict() == validate_manifest(df, **KW).to_dict() and not in_file.success
    assert "manifest" in (tmp_path / "bad" / DATA_DOCS_INDEX).read_text()
    validate_data(tiny_corpus_params, tmp_path / "rep", data_docs=docs)  # rebuilt, not accumulated
    runs = list((docs / "gx" / "uncommitted" / "validations").rglob("*.json"))
    assert len(runs) == 2, runs
