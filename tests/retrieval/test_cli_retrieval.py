"""`clapcap retrieval evaluate|compare`, the step functions, config and MLflow logging."""

from __future__ import annotations

import importlib.machinery
import sys
import types

import numpy as np
import pytest
import yaml

from clapcap.cli import build_parser, main
from clapcap.config import ConfigError, from_dict, load_section
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.evaluate import evaluate_all, evaluate_file, metrics_path
from clapcap.retrieval.metrics import evaluate_dump
from clapcap.utils.io import read_json

KEYS = ["r@1", "r@5", "r@10", "map", "map@10", "mrr", "median_rank"]


def test_cli_evaluate_writes_metrics_with_ci(tmp_path, dump_file, make_dump, capsys):
    path = dump_file("d.npz", n_clips=30, captions_per_clip=3, seed=0)
    out = tmp_path / "m" / "metrics.json"
    assert main(["retrieval", "evaluate", str(path), "--out", str(out), "--bootstrap", "100"]) == 0
    result = read_json(out)
    printed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    ci = result["t2a"]["ci"]["r@10"]
    assert f"{result['t2a']['r@10']:.4f} [{ci['low']:.4f}, {ci['high']:.4f}]" in printed["r@10"]
    assert list(result) == ["t2a", "a2t", "n_clips", "n_captions", "multi_positive"]
    assert list(result["t2a"]) == KEYS + ["ci"] and list(result["t2a"]["ci"]) == KEYS
    plain = evaluate_dump(make_dump(n_clips=30, captions_per_clip=3, seed=0))
    assert {k: v for k, v in result["a2t"].items() if k != "ci"} == plain["a2t"]
    assert (result["n_clips"], result["n_captions"], result["multi_positive"]) == (30, 90, True)


def test_cli_evaluate_laion_and_no_bootstrap(tmp_path, dump_file):
    path = dump_file("d.npz", n_clips=20, captions_per_clip=5, noise=0.7, seed=1)
    out = tmp_path / "laion.json"
    assert main(["retrieval", "evaluate", str(path), "--out", str(out), "--bootstrap", "0",
                 "--laion-compatible"]) == 0
    laion = read_json(out)
    assert laion["laion_compatible"] is True and "ci" not in laion["a2t"]
    default = evaluate_file(path, bootstrap=0)
    assert "laion_compatible" not in default
    assert laion["a2t"]["map@10"] > default["a2t"]["map@10"]


def test_cli_evaluate_bad_dump_exits_2(tmp_path, capsys, make_dump):
    from clapcap.data.dump import save_dump

    dump = make_dump(n_clips=4, captions_per_clip=1)
    dump.caption_clip_index = np.array([0, 1, 2, 2])  # clip 3 has no caption
    path = save_dump(dump, tmp_path / "uncaptioned.npz")
    assert main(["retrieval", "evaluate", str(path), "--out", str(tmp_path / "o.json")]) == 2
    assert "uncaptioned.npz: clip 'clip0003' (row 3) has no caption" in capsys.readouterr().err
    assert main(["retrieval", "evaluate", str(tmp_path / "missing.npz"), "--out", "x.json"]) == 2


def test_cli_compare(tmp_path, dump_file):
    a = dump_file("a.npz", n_clips=40, captions_per_clip=2, noise=0.5, seed=3)
    b = dump_file("b.npz", n_clips=40, captions_per_clip=2, noise=0.5, seed=3)
    out = tmp_path / "cmp.json"
    assert main(["retrieval", "compare", str(a), str(b), "--out", str(out), "--bootstrap", "50"]) == 0
    result = read_json(out)
    assert result["t2a"]["map"]["difference"] == 0.0 and result["t2a"]["map"]["p_value"] == 1.0
    assert set(result["a2t"]) == set(KEYS)
    other = dump_file("c.npz", n_clips=41, captions_per_clip=2, seed=3)
    assert main(["retrieval", "compare", str(a), str(other), "--out", str(out)]) == 2


def test_retrieval_models_hook_is_called(monkeypatch):
    calls = []
    module = types.ModuleType("clapcap.cli.retrieval_models")
    module.__spec__ = importlib.machinery.ModuleSpec("clapcap.cli.retrieval_models", None)
    module.register_commands = lambda group: (calls.append(group), group.add_parser("embed"))
    monkeypatch.setitem(sys.modules, "clapcap.cli.retrieval_models", module)
    args = build_parser().parse_args(["retrieval", "embed"])
    assert calls and args.command == "embed"


def test_params_section_and_evaluate_all(tmp_path, dump_file):
    paths = [str(dump_file("x.npz", n_clips=10, captions_per_clip=2)),
             str(dump_file("y.npz", n_clips=12, captions_per_clip=1))]
    section = {"dumps": paths, "out_dir": str(tmp_path / "metrics"), "n_resamples": 20}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"retrieval": section}))
    params = load_section(RetrievalEvalParams, "retrieval", tmp_path / "params.yaml")
    results = evaluate_all(params)
    assert set(results) == set(paths)
    assert read_json(metrics_path(params, paths[1]))["n_clips"] == 12
    with pytest.raises(ConfigError, match="unknown key"):
        from_dict(RetrievalEvalParams, {"dumsp": []})
    with pytest.raises(ConfigError, match="confidence"):
        RetrievalEvalParams(confidence=2.0)
    with pytest.raises(ValueError, match="dumps is empty"):
        evaluate_all(RetrievalEvalParams())


def test_mlflow_keys_and_logging(tmp_path, dump_file, mlflow_uri, monkeypatch):
    """The retrieval run's keys are the vocabulary's (``test/t2a/r10``), one run per dump, named
    after it, with the dump as its dataset input."""
    import mlflow

    from clapcap.tracked.retrieval import track_evaluation
    from clapcap.tracking.vocab import check_key

    monkeypatch.chdir(tmp_path)
    path = dump_file("enc/corpus/test.npz", n_clips=10, captions_per_clip=2)
    result = evaluate_file(path, bootstrap=10)
    keys = track_evaluation(result, path, params={"bootstrap": 10})
    assert {"test/t2a/r1", "test/t2a/r10", "test/t2a/map", "test/t2a/map10", "test/t2a/mrr",
            "test/t2a/median_rank", "test/a2t/r1", "test/t2a/r1_ci_low", "test/a2t/map10_ci_high",
            "test/n_clips"} <= set(keys)
    for key in keys:
        check_key(key)
    (run,) = mlflow.search_runs(experiment_names=["clapcap-retrieval"], output_format="list",
                                filter_string="attributes.run_name = 'retrieval/evaluate/enc/corpus/test'")
    assert run.data.metrics["test/t2a/r1"] == pytest.approx(result["t2a"]["r@1"])
    assert run.data.tags["clapcap.stage"] == "evaluate_retrieval" and run.data.tags["clapcap.params_hash"]
    assert [d.dataset.digest for d in run.inputs.dataset_inputs]  # the dump, as a dataset input


def test_the_run_records_the_checkpoint_revision(tmp_path, make_dump, mlflow_uri, monkeypatch):
    """Two revisions of one hub id are two different param values in the runs table."""
    import mlflow

    from clapcap.data.dump import save_dump
    from clapcap.tracked.retrieval import track_evaluation

    monkeypatch.chdir(tmp_path)
    dump = make_dump(n_clips=6, captions_per_clip=1)
    dump.meta.update({"checkpoint": "laion/clap-htsat-unfused", "checkpoint_kind": "hub",
                      "checkpoint_revision": "8fa0f1c6d0433df6e97c127f64b2a1d6c0dcda8a",
                      "tokenizer": "RobertaTokenizerFast (roberta-base ids)"})
    path = save_dump(dump, tmp_path / "pub" / "corpus" / "test.npz")
    track_evaluation(evaluate_file(path, bootstrap=10), path, params={"bootstrap": 10})
    (run,) = mlflow.search_runs(experiment_names=["clapcap-retrieval"], output_format="list",
                                filter_string="attributes.run_name = 'retrieval/evaluate/pub/corpus/test'")
    assert run.data.params["checkpoint_revision"] == "8fa0f1c6d0433df6e97c127f64b2a1d6c0dcda8a"
    assert run.data.params["checkpoint"] == "laion/clap-htsat-unfused"


def test_dump_labels_and_metrics_paths_are_unique(tmp_path):
    from clapcap.data.dump import dump_labels

    paths = [str(tmp_path / "emb" / enc / "synth" / "test.npz") for enc in ("tiny", "hf")]
    assert dump_labels(paths) == ["tiny__synth__test", "hf__synth__test"]
    assert dump_labels(paths[:1]) == ["test"]
    params = RetrievalEvalParams(dumps=paths, out_dir="m")
    assert {metrics_path(params, p).name for p in paths} == {"tiny__synth__test.json", "hf__synth__test.json"}
    with pytest.raises(ValueError, match="not listed"):
        metrics_path(params, "other.npz")
