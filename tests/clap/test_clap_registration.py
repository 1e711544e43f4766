"""The tracked edge of CLAP training (clapcap.tracked.clap.run_tracked_training): who may move
``@champion``, candidates that cannot be compared, and reruns that complete a registration.

The training and the logged model are fakes (the registration logic is under test, not the
weights): ``train_clap`` writes its result file as the real one does, the model is an echo
pyfunc, and each "dataset" has its own test items.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
from optim_kw import params_with

from clapcap import tracking
from clapcap.clap import train as clap_train
from clapcap.clap.config import TrainClapParams
from clapcap.tracked import clap as tracked_clap
from clapcap.utils.io import write_json


@pytest.fixture
def fake_training(monkeypatch):
    """Fake training, model logging and item scores; returns the list of trained out_dirs."""
    import mlflow

    trained: list[str] = []

    def train_clap(params, dataset_dir=None, out_dir=None, *, progress=True, on_epoch_end=None, compute=None):
        sig = clap_train.run_signature(params, Path(params.dataset_dir), compute)
        done = clap_train._load_done(Path(params.out_dir) / clap_train.RESULT, sig)
        if done is not None:
            return done
        trained.append(params.out_dir)
        row = {"epoch": 1, "loss": 2.0, "t2a_r@10": 0.5, "chance@10": 0.25, "seconds": 0.1}
        if on_epoch_end is not None:
            on_epoch_end(1, row)
        res = clap_train.TrainClapResult(model_dir=str(Path(params.out_dir) / "model"),
                                         result_path=str(Path(params.out_dir) / clap_train.RESULT),
                                         history=[row], val={"t2a_r@10": 0.5}, signature=sig)
        write_json(res.result_path, {k: v for k, v in asdict(res).items() if k != "skipped"})
        return res

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    def item_scores(params, model_dir, *, split="test"):
        data = Path(params.out_dir).name  # "toy" or "real": other clips, other test items
        n = 4 if data.startswith("toy") else 40
        return {"format": "clapcap.item_scores/1", "split": "test", "primary": "t2a/r@10", "dataset": None,
                "items": {"t2a": [f"{data}{i}#0" for i in range(n)]},
                "scores": {"t2a": {"r@10": [1.0, 0.0] * (n // 2)}}}

    monkeypatch.setattr(clap_train, "train_clap", train_clap)
    monkeypatch.setattr(clap_train, "test_item_scores", item_scores)
    monkeypatch.setattr(tracking, "log_loader_pyfunc_model", lambda name, loader, **kw: tracking.log_pyfunc_model(
        Echo(), name))
    return trained


def _params(tiny_corpus, tmp_path, name, out="real", **kw):
    return params_with(TrainClapParams, dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / out), registered_model=name,
                           epochs=1, **kw)


def _version_tags(name, version):
    import mlflow

    return mlflow.MlflowClient().get_model_version(name, str(version)).tags


def _runs(name):
    return tracking.search_runs("clapcap-retrieval", f"params.registered_model = '{name}'")


def test_an_adhoc_toy_run_cannot_take_champion_from_the_pipeline(tiny_corpus, tmp_path, mlflow_uri, monkeypatch,
                                                                  fake_training):
    """The incident: an ad-hoc `clapcap retrieval train-clap` on a toy dataset became @champion of
    a fresh store, and the pipeline's real training then failed to compare with it."""
    name = "test-reg-adhoc"
    monkeypatch.delenv("DVC_STAGE", raising=False)  # the CLI, outside DVC
    tracked_clap.run_synth_clap(_params(tiny_corpus, tmp_path, name, out="toy"))
    assert tracking.alias_version(name, "champion") is None
    tags = _version_tags(name, 1)
    assert tags["clapcap.decision"] == "none" and f"clapcap registry promote {name} 1" in tags["clapcap.reason"]
    monkeypatch.setenv("DVC_STAGE", "train_clap")  # dvc repro
    tracked_clap.run_synth_clap(_params(tiny_corpus, tmp_path, name, out="real", seed=1))
    assert tracking.alias_version(name, "champion") == 2 and _version_tags(name, 2)["clapcap.reason"] == "no champion yet"
    runs = _runs(name).sort_values("start_time")
    assert list(runs["tags.clapcap.dvc_stage"]) == ["none", "train_clap"]  # only DVC's runs name a DVC stage
    assert set(runs["tags.clapcap.stage"]) == {"train_clap"}
    import mlflow  # the model's own page: the val scores it was chosen on, with their dataset

    client = mlflow.MlflowClient()
    version = client.get_model_version(name, "2")
    on_model = {m.key: m for m in client.get_logged_model(version.model_id or version.source[len("models:/"):]).metrics}
    assert "val/t2a/r10" in on_model and on_model["val/t2a/r10"].dataset_name.endswith(tiny_corpus.name)
    run = client.get_run(version.run_id)  # chance is a constant of the run: a param, not a flat chart
    assert run.data.params["val/chance10"] == "0.25" and "val/chance10" not in run.data.metrics


def test_a_candidate_on_other_test_items_is_a_challenger_and_the_stage_succeeds(tiny_corpus, tmp_path, mlflow_uri,
                                                                                monkeypatch, fake_training):
    name = "test-reg-incomparable"
    monkeypatch.setenv("DVC_STAGE", "train_clap")
    tracked_clap.run_synth_clap(_params(tiny_corpus, tmp_path, name, out="toy"))
    res = tracked_clap.run_synth_clap(_params(tiny_corpus, tmp_path, name, out="real", seed=1))  # no exception
    assert not res.skipped
    assert tracking.alias_version(name, "champion") == 1 and tracking.alias_version(name, "challenger") == 2
    tags = _version_tags(name, 2)
    assert tags["clapcap.decision"] == "challenger" and "not the same test items" in tags["clapcap.reason"]
    assert f"clapcap registry promote {name} 2 --reason" in tags["clapcap.reason"]


def test_a_rerun_completes_a_registration_that_a_crash_cut_short(tiny_corpus, tmp_path, mlflow_uri, monkeypatch,
                                                                 fake_training):
    name = "test-reg-cut"
    monkeypatch.setenv("DVC_STAGE", "train_clap")
    params = _params(tiny_corpus, tmp_path, name)

    def crash(*_args, **_kwargs):
        raise RuntimeError("killed while registering")

    with monkeypatch.context() as m:
        m.setattr("clapcap.tracking.promotion.settle", crash)
        with pytest.raises(RuntimeError, match="killed while registering"):
            tracked_clap.run_synth_clap(params)
    assert (tmp_path / "real" / clap_train.RESULT).is_file()  # the result was written before the registration
    assert "clapcap.decision" not in _version_tags(name, 1) and tracking.alias_version(name, "champion") is None
    res = tracked_clap.run_synth_clap(params)  # not "skipped" and done: the registration is completed
    assert res.skipped and fake_training == [params.out_dir]  # trained once
    assert tracking.alias_version(name, "champion") == 1 and _version_tags(name, 1)["clapcap.decision"] == "champion"
    n_runs = len(_runs(name))
    tracked_clap.run_synth_clap(params)  # now all done: no run, no version
    assert len(_runs(name)) == n_runs and tracking.alias_version(name, "challenger") is None


def test_a_rerun_registers_a_training_whose_run_failed_before_registering(tiny_corpus, tmp_path, mlflow_uri,
                                                                          monkeypatch, fake_training):
    import mlflow

    name = "test-reg-unregistered"
    monkeypatch.setenv("DVC_STAGE", "train_clap")
    params = _params(tiny_corpus, tmp_path, name)
    with monkeypatch.context() as m:
        m.setattr(clap_train, "test_item_scores", lambda *_a, **_k: (_ for _ in ()).throw(OSError("disk full")))
        with pytest.raises(OSError):
            tracked_clap.run_synth_clap(params)
    assert tracking.alias_version(name, "champion") is None
    tracked_clap.run_synth_clap(params)
    assert tracking.alias_version(name, "champion") == 1 and fake_training == [params.out_dir]
    runs = _runs(name)
    finished = runs[runs["status"] == "FINISHED"]
    assert len(finished) == 1 and set(runs["status"]) == {"FAILED", "FINISHED"}
    history = mlflow.MlflowClient().get_metric_history(finished["run_id"].iloc[0], "train/loss")
    assert [(m.step, m.value) for m in history] == [(1, 2.0)]  # the epochs, from the result file


def test_the_minilm_clap_runs_as_the_train_clap_stage_of_dvc_yaml(tiny_corpus, tmp_path, mlflow_uri, monkeypatch,
                                                                  fake_training):
    import yaml

    monkeypatch.setenv("DVC_STAGE", "train_clap")
    name = "test-reg-minilm"
    tracked_clap.run_synth_clap(params_with(TrainClapParams, dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / "real"),
                                            registered_model=name, epochs=1, text_tower="minilm"))
    stages = yaml.safe_load((Path(__file__).parents[2] / "dvc.yaml").read_text())["stages"]
    runs = _runs(name)
    assert list(runs["tags.clapcap.stage"]) == ["train_clap"] and "train_clap" in stages
    assert list(runs["tags.mlflow.runName"])[0].startswith("retrieval/clap_minilm/")
    assert tracking.alias_version(name, "champion") == 1
