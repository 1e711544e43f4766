"""The reference's parity report: envelope and field names of
``tests/fixtures/reference/metric_parity_example.json`` (a copy of
``../shared/reference/metric_parity_example.json``, HF fused and unfused on AudioCaps and Clotho,
whose identity verdict is "different checkpoints" while ``failures`` is empty)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clapcap.data.dump import save_dump
from clapcap.errors import InputError
from clapcap.retrieval.identity import DIFFERENT, SAME, identity_report
from clapcap.retrieval.parity import parity_envelope, run_parity_report

REFERENCE = Path(__file__).parents[1] / "fixtures" / "reference" / "metric_parity_example.json"


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text())


@pytest.fixture
def dumps(tmp_path, make_dump) -> list[Path]:
    """One single-caption and one five-caption dump, like the AudioCaps and Clotho cells."""
    return [save_dump(make_dump(n_clips=12, captions_per_clip=1, seed=0), tmp_path / "audiocaps.npz"),
            save_dump(make_dump(n_clips=12, captions_per_clip=5, seed=1), tmp_path / "clotho5.npz")]


@pytest.fixture
def different_identity(tmp_path, make_dump) -> Path:
    """An identity report of two unrelated checkpoints, as the stage writes it."""
    a = save_dump(make_dump(n_clips=8, captions_per_clip=1, seed=3), tmp_path / "laion.npz")
    b = save_dump(make_dump(n_clips=8, captions_per_clip=1, seed=4), tmp_path / "hf.npz")
    report = identity_report(a, b)
    report.update(dataset="audiocaps", enable_fusion=True, pipelines=["laion_clap", "hf_transformers"],
                  checkpoints=["630k-audioset-fusion-best.pt", "laion/clap-htsat-fused"])
    path = tmp_path / "identity_checkpoints.json"
    path.write_text(json.dumps(report))
    return path


def test_envelope_has_the_reference_keys(reference, dumps, different_identity, tmp_path):
    report = run_parity_report(dumps, tmp_path / "report.json", identity_path=different_identity)
    assert json.loads((tmp_path / "report.json").read_text()) == report
    assert list(report) == list(reference)
    assert set(report["metric_parity"]) == set(reference["metric_parity"])
    assert set(report["checkpoint_identity"]) == set(reference["checkpoint_identity"])
    ref_cell, ref_row = reference["metric_parity"]["cells"][0], reference["metric_parity"]["cells"][0]["rows"][0]
    for cell in report["metric_parity"]["cells"]:
        assert set(cell) == set(ref_cell)
        assert all(set(row) == set(ref_row) for row in cell["rows"])
        # The reference's rows are a subset of ours (we also check map@10, mrr, median_rank).
        assert {(r["direction"], r["metric"]) for r in ref_cell["rows"]} <= \
            {(r["direction"], r["metric"]) for r in cell["rows"]}
    ident = report["checkpoint_identity"]
    assert ident["fixture"] == "audiocaps" and ident["n"] == 8
    assert ident["hf_checkpoint"] == "laion/clap-htsat-fused"
    assert ident["control"] == "laion_clap 630k-audioset-fusion-best.pt (enable_fusion=True)"
    assert len(ident["audio_embedding_cosine_per_clip"]) == len(ident["text_embedding_cosine_per_clip"]) == 8
    assert isinstance(ident["similarity_matrix_correlation"], float)


def test_different_checkpoints_is_a_finding_not_a_failure(reference, dumps, different_identity, tmp_path):
    """As in the reference: identity says different, the gate passes."""
    report = run_parity_report(dumps, tmp_path / "r.json", identity_path=different_identity)
    assert report["checkpoint_identity"]["verdict"] == DIFFERENT == reference["checkpoint_identity"]["verdict"]
    assert report["failures"] == reference["failures"] == []
    assert report["metric_parity_passed"] is reference["metric_parity_passed"] is True
    assert report["cross_pipeline_comparable"] is reference["cross_pipeline_comparable"] is False
    gated = run_parity_report(dumps, tmp_path / "g.json", identity_path=different_identity, gate_identity=True)
    assert gated["metric_parity_passed"] is True
    assert len(gated["failures"]) == 1 and "checkpoint identity" in gated["failures"][0]


def test_same_checkpoint_and_metric_failures(dumps, tmp_path):
    same = identity_report(dumps[0], dumps[0])
    assert same["verdict"] == SAME
    parity = {"cells": [], "n_cells": 0, "cells_with_multi_positive_ap": 0, "tolerance": 1e-9,
              "worst_abs_delta": 0.5, "passed": False, "failures": ["a.npz t2a r@1: ..."]}
    env = parity_envelope(parity, same)
    assert env["cross_pipeline_comparable"] is True and env["metric_parity_passed"] is False
    assert env["failures"] == ["a.npz t2a r@1: ..."] and "failures" not in env["metric_parity"]


def test_without_identity_the_block_says_not_run(dumps, tmp_path, reference):
    report = run_parity_report(dumps, tmp_path / "r.json")
    block = report["checkpoint_identity"]
    assert set(block) == set(reference["checkpoint_identity"]) and block["verdict"].startswith("not run")
    assert report["cross_pipeline_comparable"] is False and report["failures"] == []


def test_bad_identity_file_is_an_input_error(dumps, tmp_path):
    bad = tmp_path / "identity.json"
    bad.write_text("[1, 2]")
    with pytest.raises(InputError, match=f"{bad}: not an identity report"):
        run_parity_report(dumps, tmp_path / "r.json", identity_path=bad)
    assert not (tmp_path / "r.json").exists()


def test_cli_parity_report(dumps, different_identity, tmp_path, capsys):
    from clapcap.cli import main

    out = tmp_path / "report.json"
    argv = ["retrieval", "parity-report", *map(str, dumps), "--identity", str(different_identity), "--out", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text())["failures"] == []
    assert main([*argv, "--gate-identity"]) == 1
    err = capsys.readouterr().err
    assert err.count("clapcap: error:") == 1 and "checkpoint identity" in err and str(out) in err


@pytest.mark.parametrize("gate", [False, True])
def test_the_dvc_stage_writes_the_report_and_gates_identity_only_when_asked(dumps, different_identity, tmp_path,
                                                                            monkeypatch, capsys, reference, gate):
    """`pipelines/parity_report.py` (stage parity_report) reads retrieval.dumps and the
    checkpoint_identity stage's finding: "different checkpoints" passes unless gate_identity."""
    import runpy
    import sys

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["parity_report.py"])
    out = tmp_path / "reports" / "parity_report.json"
    (tmp_path / "params.yaml").write_text(
        f"retrieval:\n  dumps: [{dumps[0]}, {dumps[1]}]\n  parity_report_out: {out}\n"
        f"checkpoint_identity:\n  out_dir: {different_identity.parent}\n  laion_checkpoint: x.pt\n"
        f"  gate_identity: {str(gate).lower()}\n")
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(Path(__file__).parents[2] / "pipelines" / "parity_report.py"), run_name="__main__")
    report = json.loads(out.read_text())
    assert set(reference) <= set(report) and report["metric_parity"]["n_cells"] == 2
    assert report["checkpoint_identity"]["verdict"] == DIFFERENT and report["metric_parity_passed"] is True
    if gate:
        assert info.value.code == 1 and "clapcap: error: parity report: 1 failure(s)" in capsys.readouterr().err
    else:
        assert info.value.code == 0 and report["failures"] == []
