"""Leaderboard conversion from the source snapshot and placement of our results."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from clapcap.cli import main
from clapcap.reporting.leaderboard import (
    CONVERTED_NAME,
    SOURCE_NAME,
    convert_leaderboard,
    data_path,
    load_leaderboard,
    normalise_metric_key,
    our_row,
    parse_protocol,
    place_in_leaderboard,
)


def test_packaged_file_is_the_conversion_of_the_packaged_source(tmp_path):
    fresh = convert_leaderboard(data_path(SOURCE_NAME), tmp_path / "lb.csv")
    assert (tmp_path / "lb.csv").read_text() == data_path(CONVERTED_NAME).read_text()
    source = pd.read_csv(data_path(SOURCE_NAME), dtype=str)
    assert len(fresh) == len(source) and list(fresh["r1"]) == [float(v) for v in source["r@1"]]


def test_known_rows():
    lb = load_leaderboard()
    laion = lb[lb["model"] == "LAION-CLAP"].iloc[0]
    assert (laion["r1"], laion["r10"], laion["r5"], laion["map10"]) == (34.1, 82.7, 69.7, 49.0)
    assert not laion["verified"] and "unverified" in laion["note"]
    ft = lb[(lb["model"] == "InternVideo2-6B") & (lb["protocol"] == "fine-tuned")].iloc[0]
    assert ft["r1"] == 55.2 and math.isnan(ft["r10"]) and ft["verified"]
    # Partial rows keep col2 raw and unmapped (PMRL gives only r@1 and one unlabelled number).
    pmrl = lb[lb["model"] == "PMRL"].iloc[0]
    assert pmrl["protocol"] == "zero-shot" and math.isnan(pmrl["r10"]) and pmrl["raw_col2"] == 75.9
    assert "unmapped" in pmrl["note"]
    assert set(lb["protocol"]) == {"fine-tuned", "zero-shot", "unspecified"}
    mapped = lb.dropna(subset=["r10"])
    assert (mapped["r1"] <= mapped["r5"]).all() and (mapped["r5"] <= mapped["r10"]).all()


@pytest.mark.parametrize("settings, protocol", [
    ("Evaluation protocol=Finetuning", "fine-tuned"), ("Setting=Zero-shot", "zero-shot"),
    ("Retrieval=BM25", "unspecified"), ("fine-tuned on AudioCaps", "fine-tuned")])
def test_parse_protocol(settings, protocol):
    assert parse_protocol(settings) == protocol


def test_bad_source_rows(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model,settings,date,r@1,col2,col3,col4\nX,s,2025,abc,—,—,—\n")
    with pytest.raises(ValueError, match=r"row 2: r@1: expected a number"):
        convert_leaderboard(bad, tmp_path / "o.csv")
    bad.write_text("model,date,r@1\nX,2025,3\n")
    with pytest.raises(ValueError, match="missing column"):
        convert_leaderboard(bad, tmp_path / "o.csv")


def test_cli_converts(tmp_path):
    out = tmp_path / "lb.csv"
    assert main(["report", "leaderboard", "--source", str(data_path(SOURCE_NAME)), "--out", str(out)]) == 0
    assert out.read_text() == data_path(CONVERTED_NAME).read_text()


def test_our_rows_and_placement():
    assert normalise_metric_key("t2a/R@10") == "r10" and normalise_metric_key("mAP@10") == "map10"
    ours = our_row("tiny", {"t2a": {"R@1": 0.23, "R@10": 0.95}, "a2t": {"R@1": 0.99}}, dataset="synthetic")
    assert ours["r1"] == pytest.approx(23.0) and ours["r10"] == pytest.approx(95.0)
    assert not ours["comparable"] and "not comparable" in ours["note"]
    ac = our_row("ac", {"R@1": 36.0}, dataset="AudioCaps", unit="percent")
    assert ac["comparable"] and ac["r1"] == 36.0
    with pytest.raises(ValueError, match="no text-to-audio R@1"):
        our_row("x", {"a2t/R@1": 0.5}, dataset="audiocaps")
    board = place_in_leaderboard(load_leaderboard(), [ours, ac])
    row = board[board["model"] == "ac"].iloc[0]
    assert row["rank"] == 13  # twelve published rows above 36.0 (55.2 ... 36.1)
    assert board["r1"].is_monotonic_decreasing and board["ours"].sum() == 2
