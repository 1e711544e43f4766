"""Metric-parity gate: harness vs the independent reference, and a broken metric is caught."""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest

from clapcap.cli import main
from clapcap.errors import ClapcapError
from clapcap.retrieval import independent, metrics
from clapcap.retrieval.parity import parity_report, run_parity
from clapcap.utils.io import read_json

CELL_KEYS = ["source", "n_clips", "n_captions", "captions_per_clip", "multi_positive",
             "worst_abs_delta", "passed", "rows"]
TOP_KEYS = ["cells", "n_cells", "cells_with_multi_positive_ap", "tolerance", "worst_abs_delta",
            "passed", "failures"]


def test_independent_shares_no_code_with_harness():
    tree = ast.parse(inspect.getsource(independent))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m and m.startswith("clapcap") for m in imported), imported


def test_parity_passes_on_random_dumps(tmp_path, dump_file):
    paths = [dump_file("single.npz", n_clips=30, captions_per_clip=1, seed=1),
             dump_file("clotho_like.npz", n_clips=25, captions_per_clip=5, seed=2),
             dump_file("ragged.npz", n_clips=20, captions_per_clip=[1, 2, 3, 4] * 5, seed=3)]
    report = run_parity(paths, tmp_path / "parity.json")
    assert report == read_json(tmp_path / "parity.json")
    assert list(report) == TOP_KEYS
    assert report["passed"] and report["failures"] == []
    assert report["n_cells"] == 3 and report["cells_with_multi_positive_ap"] == 2
    assert report["tolerance"] == 1e-9 and report["worst_abs_delta"] <= 1e-12
    cells = {c["source"]: c for c in report["cells"]}
    assert list(cells["single.npz"]) == CELL_KEYS
    assert cells["single.npz"]["captions_per_clip"] == 1 and not cells["single.npz"]["multi_positive"]
    assert cells["clotho_like.npz"]["captions_per_clip"] == 5
    assert cells["ragged.npz"]["captions_per_clip"] == pytest.approx(2.5)
    rows = cells["clotho_like.npz"]["rows"]
    assert len(rows) == 14 and {r["direction"] for r in rows} == {"t2a", "a2t"}
    assert list(rows[0]) == ["direction", "metric", "harness", "independent", "abs_delta"]
    assert {r["metric"] for r in rows} == {"r@1", "r@5", "r@10", "map", "map@10", "mrr", "median_rank"}


def test_parity_passes_with_ties(make_dump):
    dump = make_dump(n_clips=15, captions_per_clip=3, seed=4)
    dump.text_embeds[1::3] = dump.text_embeds[0::3]  # duplicate captions: tied positives
    dump.audio_embeds[1] = dump.audio_embeds[0]  # duplicate clips: tied t2a candidates
    dump.text_embeds[-1] = dump.audio_embeds[0]  # a caption exactly on a wrong clip
    report = parity_report([("ties", dump)])
    assert report["passed"], report["failures"]


def _off_by_one(original):
    def broken(query, position, within, n_queries, ks):
        return original(query, position + (position == 3), within, n_queries, ks)  # rank 3 -> 4
    return broken


def test_broken_metric_is_caught(monkeypatch, make_dump):
    monkeypatch.setattr(metrics, "_per_query", _off_by_one(metrics._per_query))
    report = parity_report([("d", make_dump(n_clips=30, captions_per_clip=2, seed=5))])
    assert not report["passed"]
    assert report["failures"] and "abs delta" in report["failures"][0]
    assert report["worst_abs_delta"] > 1e-3


def test_cli_parity_exit_codes(monkeypatch, tmp_path, dump_file):
    path = dump_file("d.npz", n_clips=20, captions_per_clip=2, seed=6)
    out = tmp_path / "parity.json"
    assert main(["retrieval", "parity", str(path), "--out", str(out)]) == 0
    assert read_json(out)["passed"]
    monkeypatch.setattr(metrics, "_per_query", _off_by_one(metrics._per_query))
    assert main(["retrieval", "parity", str(path), "--out", str(out)]) == 1
    assert not read_json(out)["passed"]


def test_cli_parity_bad_dump_exits_2(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, audio_embeds=np.eye(2, dtype=np.float32))
    assert main(["retrieval", "parity", str(bad), "--out", str(tmp_path / "p.json")]) == 2


def test_parity_rejects_bad_arguments(make_dump):
    with pytest.raises(ValueError, match="at least one dump"):
        parity_report([])
    with pytest.raises(ValueError, match="tolerance"):
        parity_report([("d", make_dump(n_clips=3, captions_per_clip=1))], tolerance=-1.0)


def _load_pipeline(name: str):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "pipelines" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"pipeline_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pipeline_stages_read_params(monkeypatch, tmp_path, dump_file):
    import yaml

    path = dump_file("d.npz", n_clips=12, captions_per_clip=2, seed=7)
    section = {"dumps": [str(path)], "out_dir": "metrics/retrieval", "n_resamples": 10,
               "parity_out": "metrics/metric_parity.json", "track": False}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"retrieval": section}))
    monkeypatch.chdir(tmp_path)
    assert _load_pipeline("metric_parity").main() == 0
    assert read_json(tmp_path / "metrics" / "metric_parity.json")["passed"]
    assert _load_pipeline("evaluate_retrieval").main() == 0
    assert "ci" in read_json(tmp_path / "metrics" / "retrieval" / "d.json")["t2a"]
    monkeypatch.setattr(metrics, "_per_query", _off_by_one(metrics._per_query))
    with pytest.raises(ClapcapError, match="metric parity failed: .*see metrics/metric_parity.json"):
        _load_pipeline("metric_parity").main()


def test_parity_sources_unique_when_file_names_repeat(tmp_path, make_dump):
    from clapcap.data.dump import save_dump

    paths = [save_dump(make_dump(n_clips=6, captions_per_clip=1, seed=s), tmp_path / enc / "test.npz")
             for s, enc in enumerate(("tiny", "hf"))]
    report = run_parity(paths, tmp_path / "p.json")
    assert [c["source"] for c in report["cells"]] == ["tiny__test.npz", "hf__test.npz"]


def test_dump_bytes_are_deterministic(tmp_path):
    """Rewriting the same dump gives identical bytes (DVC must not rerun downstream stages)."""
    import time

    import numpy as np

    from clapcap.data.dump import EmbeddingDump, load_dump, save_dump

    rng = np.random.default_rng(0)
    dump = EmbeddingDump(rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(6, 4)).astype(np.float32),
                         np.repeat(np.arange(3), 2), ["a", "b", "c"], [f"t{i}" for i in range(6)], {"k": 1})
    save_dump(dump, tmp_path / "a.npz")
    time.sleep(2.1)  # zip timestamps have a 2 s resolution
    save_dump(dump, tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    back = load_dump(tmp_path / "b.npz")
    assert np.array_equal(back.text_embeds, dump.text_embeds) and back.meta == {"k": 1}
