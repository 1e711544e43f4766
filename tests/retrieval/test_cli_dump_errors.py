"""`clapcap retrieval evaluate|parity` on malformed dumps, and `evaluate --mlflow` on dumps of
any documented split: one `clapcap: error:` line, exit 2, and nothing written before an error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clapcap.cli import main
from clapcap.data.dump import DumpError, load_dump, save_dump, write_npz_deterministic
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.evaluate import metrics_path, tracking_scope
from clapcap.tracked.retrieval import run_evaluate_all
from clapcap.utils.io import read_json


def _malformed(tmp_path, make_dump, name: str, **overrides):
    """A dump file whose arrays ``overrides`` replace, written as is (save_dump would refuse it)."""
    dump = make_dump(n_clips=6, captions_per_clip=2)
    arrays = {"audio_embeds": dump.audio_embeds, "text_embeds": dump.text_embeds,
              "caption_clip_index": dump.caption_clip_index, "clip_ids": np.asarray(dump.clip_ids),
              "captions": np.asarray(dump.captions), "meta": np.asarray(json.dumps(dump.meta)), **overrides}
    write_npz_deterministic(tmp_path / name, arrays)
    return tmp_path / name


@pytest.mark.parametrize("command", ["evaluate", "parity"])
@pytest.mark.parametrize("overrides,expected", [
    ({"audio_embeds": np.full((6, 8), "hello")}, "audio_embeds: expected a floating-point array, found <U5"),
    ({"text_embeds": np.full((12, 8), "hi")}, "text_embeds: expected a floating-point array, found <U2"),
    ({"caption_clip_index": np.repeat(np.arange(6), 2) + np.tile([0.0, 0.5], 6)},
     "caption_clip_index: expected an integer array, found float64"),
])
def test_malformed_dump_is_one_error_line(tmp_path, make_dump, capsys, command, overrides, expected):
    path = _malformed(tmp_path, make_dump, "bad.npz", **overrides)
    out = tmp_path / "out.json"
    assert main(["retrieval", command, str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"clapcap: error: {path}: {expected}"]
    assert "Traceback" not in err and not out.exists()


def _dump_of_split(tmp_path, make_dump, split: str | None, name: str):
    dump = make_dump(n_clips=8, captions_per_clip=2)
    dump.meta = {} if split is None else {"split": split}
    return save_dump(dump, tmp_path / "enc" / "corpus" / name)


@pytest.mark.parametrize("split,scope", [("all", "data"), ("test", "test"), ("val", "val"), ("train", "train"),
                                         (None, "test")])
def test_tracking_scope_of_each_documented_split(tmp_path, make_dump, split, scope):
    """`embed --split` documents train, val, test or all; a dump without a split is a test dump."""
    assert tracking_scope(_dump_of_split(tmp_path, make_dump, split, "d.npz")) == scope


def test_evaluate_mlflow_on_a_split_all_dump(tmp_path, make_dump, mlflow_uri, monkeypatch, capsys):
    """A dump of `embed --split all` is logged under the whole-dataset scope ``data``; the run
    finishes (it used to write the metrics and then fail the run: scope 'all')."""
    import mlflow

    monkeypatch.chdir(tmp_path)
    path = _dump_of_split(tmp_path, make_dump, "all", "all.npz")
    out = tmp_path / "all.json"
    assert main(["retrieval", "evaluate", str(path), "--out", str(out), "--bootstrap", "10", "--mlflow"]) == 0
    result = read_json(out)
    (run,) = mlflow.search_runs(experiment_names=["clapcap-retrieval"], output_format="list",
                                filter_string="attributes.run_name = 'retrieval/evaluate/enc/corpus/all'")
    assert run.info.status == "FINISHED"
    assert run.data.metrics["data/t2a/r10"] == pytest.approx(result["t2a"]["r@10"])
    assert run.data.metrics["data/a2t/map10_ci_low"] == pytest.approx(result["a2t"]["ci"]["map@10"]["low"])
    assert not any(k.startswith(("all/", "test/")) for k in run.data.metrics)


def test_evaluate_mlflow_refuses_an_unknown_split_before_writing(tmp_path, make_dump, mlflow_uri, monkeypatch,
                                                                 capsys):
    import mlflow

    monkeypatch.chdir(tmp_path)
    path = _dump_of_split(tmp_path, make_dump, "dev", "dev.npz")
    out = tmp_path / "dev.json"
    assert main(["retrieval", "evaluate", str(path), "--out", str(out), "--mlflow"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"clapcap: error: {path}: meta split 'dev' has no MLflow metric scope; expected one of "
                   "['train', 'val', 'test', 'all']"]
    assert not out.exists()
    assert not mlflow.search_runs(experiment_names=["clapcap-retrieval"], output_format="list",
                                  filter_string="attributes.run_name = 'retrieval/evaluate/enc/corpus/dev'")
    # Without --mlflow the split does not matter.
    assert main(["retrieval", "evaluate", str(path), "--out", str(out), "--bootstrap", "0"]) == 0


def test_run_evaluate_all_checks_every_scope_before_writing(tmp_path, make_dump, mlflow_uri, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = str(_dump_of_split(tmp_path, make_dump, "all", "all.npz"))
    bad = str(_dump_of_split(tmp_path, make_dump, "dev", "dev.npz"))
    params = RetrievalEvalParams(dumps=[good, bad], out_dir=str(tmp_path / "metrics"), n_resamples=0)
    with pytest.raises(DumpError, match="meta split 'dev' has no MLflow metric scope"):
        run_evaluate_all(params)
    assert not (tmp_path / "metrics").exists()
    params.track = False
    run_evaluate_all(params)
    assert metrics_path(params, bad).is_file() and load_dump(bad).meta == {"split": "dev"}
