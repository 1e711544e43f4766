"""The DVC metrics (clapcap.reporting.summary_metrics): a few small files, each one name's one
definition, and every stage's detailed results plain outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from clapcap.config import load_section
from clapcap.errors import InputError
from clapcap.reporting.summary_metrics import (
    MetricsSummaryParams,
    SummaryEntry,
    summarise,
    write_summary,
)
from clapcap.utils.io import write_json

ROOT = Path(__file__).resolve().parents[2]


def test_each_entry_writes_value_and_interval_and_nothing_stale(tmp_path):
    src = tmp_path / "metrics.json"
    write_json(src, {"test": {"t2a": {"r@10": {"value": 0.16, "low": 0.14, "high": 0.18}}}, "n": 534})
    entries = {"real/t2a_r10": SummaryEntry(str(src), "test.t2a.r@10.value", "test.t2a.r@10.low",
                                            "test.t2a.r@10.high"),
               "clips": SummaryEntry(str(src), "n")}
    out = tmp_path / "summary"
    (out / "old.json").parent.mkdir(parents=True)
    (out / "old.json").write_text("{}")
    paths = write_summary(MetricsSummaryParams(str(out), entries))
    assert json.loads(paths[0].read_text()) == {"value": 0.16, "low": 0.14, "high": 0.18}
    assert json.loads((out / "clips.json").read_text()) == {"value": 534.0}
    assert not (out / "old.json").exists()  # a removed entry leaves no file behind


def test_a_missing_key_or_a_value_that_is_not_a_number_names_the_entry(tmp_path):
    src = tmp_path / "m.json"
    write_json(src, {"a": {"b": 1.0, "msg": "unavailable", "nan": None}})
    with pytest.raises(InputError, match=r"entries.x \(.*m.json\): no 'a.c' \(found \['b', 'msg', 'nan'\]\)"):
        summarise({"x": SummaryEntry(str(src), "a.c")})
    with pytest.raises(InputError, match="a.msg is 'unavailable', not a finite number"):
        summarise({"x": SummaryEntry(str(src), "a.msg")})
    with pytest.raises(InputError, match="not found"):
        summarise({"x": SummaryEntry(str(tmp_path / "none.json"), "a")})
    with pytest.raises(ValueError, match="both low and high"):
        SummaryEntry(str(src), "a.b", low="a.b")


def test_the_project_declares_only_the_summary_as_dvc_metrics():
    """`dvc metrics show` fits a terminal: no stage but metrics_summary declares metrics, every
    summary entry reads a file its stage depends on, and each row has at most three columns."""
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    declaring = {name for name, st in dvc.items() if "metrics" in st.get("do", st)}
    assert declaring == {"metrics_summary"}
    params = load_section(MetricsSummaryParams, "metrics_summary", ROOT / "params.yaml")
    deps = dvc["metrics_summary"]["deps"]
    for name, entry in params.entries.items():
        assert any(entry.file == d or entry.file.startswith(d.rstrip("/") + "/") for d in deps), name
    assert dvc["metrics_summary"]["metrics"] == [{params.out_dir: {"cache": False}}]
    assert 10 <= len(params.entries) <= 40


def test_the_committed_summary_matches_its_sources():
    """The committed metrics/summary files are what the entries read from the committed results
    (a stale summary, or a source whose key moved, fails here)."""
    params = load_section(MetricsSummaryParams, "metrics_summary", ROOT / "params.yaml")
    rows = summarise({n: SummaryEntry(str(ROOT / e.file), e.value, e.low, e.high) for n, e in params.entries.items()})
    for name, row in rows.items():
        path = ROOT / params.out_dir / f"{name}.json"
        assert path.is_file(), f"{path} missing: run `dvc repro metrics_summary`"
        assert json.loads(path.read_text()) == row, name
