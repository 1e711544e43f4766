"""Tiny CLAP contrastive training: runs, saves a loadable model, skips, resumes, guards collapse."""

import json

import numpy as np
import pytest
import torch
from optim_kw import params_with

from clapcap.clap.config import TrainClapParams
from clapcap.clap.optim import OptimConfig
from clapcap.clap.train import (
    TrainingCollapsed,
    symmetric_contrastive_loss,
    t2a_recall,
    train_clap,
)


def _params(tmp_path, tiny_corpus, **kw):
    base = dict(dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / "clap"), epochs=2, batch_size=8,
                warmup_steps=2, track=False)
    return params_with(TrainClapParams, **{**base, **kw})


def test_train_save_load_and_skip(tiny_corpus, tmp_path):
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.factory import create_encoder

    res = train_clap(_params(tmp_path, tiny_corpus), progress=False)
    assert len(res.history) == 2 and all(np.isfinite(r["loss"]) for r in res.history)
    assert {"t2a_r@1", "t2a_r@10", "chance@10"} <= set(res.val)
    saved = json.loads((tmp_path / "clap" / "train_result.json").read_text())
    assert saved["model_dir"] == res.model_dir
    enc = create_encoder(EncoderConfig(checkpoint=res.model_dir))
    assert enc.prep.mel_floor_db == -50.0
    assert enc.embed_text(["a dog barks"]).shape == (1, 64)
    again = train_clap(_params(tmp_path, tiny_corpus), progress=False)
    assert again.skipped and again.history == res.history


def _crash_after_the_first_epoch():
    """An ``on_epoch_end`` hook that records each epoch and interrupts training after the first."""
    calls = []

    def crash_after_first(epoch, _row):
        calls.append(epoch)
        if epoch == 1:
            raise KeyboardInterrupt("simulated crash")

    return calls, crash_after_first


def test_resume_after_crash(tiny_corpus, tmp_path):
    calls, crash_after_first = _crash_after_the_first_epoch()
    with pytest.raises(KeyboardInterrupt):
        train_clap(_params(tmp_path, tiny_corpus), progress=False, on_epoch_end=crash_after_first)
    assert (tmp_path / "clap" / "checkpoints" / "last.pt").is_file()
    assert not (tmp_path / "clap" / "train_result.json").exists()
    res = train_clap(_params(tmp_path, tiny_corpus), progress=False, on_epoch_end=lambda e, r: calls.append(e))
    assert calls == [1, 2] and [r["epoch"] for r in res.history] == [1, 2]
    (tmp_path / "clap" / "train_result.json").unlink()  # keep the 2-epoch checkpoint of the old params
    other = train_clap(_params(tmp_path, tiny_corpus, epochs=1, lr=5e-4), progress=False)
    assert not other.skipped and len(other.history) == 1  # other params: neither skipped nor resumed
    assert other.signature != res.signature


def test_a_checkpoint_of_an_older_build_resumes_without_its_timings(tiny_corpus, tmp_path):
    """Older builds wrote each epoch's wall-clock seconds into the history; a resumed run must
    not carry them into train_result.json and metrics.json (DVC outputs, byte-stable)."""
    import json

    import torch

    calls, crash_after_first = _crash_after_the_first_epoch()
    with pytest.raises(KeyboardInterrupt):
        train_clap(_params(tmp_path, tiny_corpus), progress=False, on_epoch_end=crash_after_first)
    last = tmp_path / "clap" / "checkpoints" / "last.pt"
    state = torch.load(last, weights_only=False)
    state["history"] = [{**row, "seconds": 12.5} for row in state["history"]]  # as an older build wrote it
    torch.save(state, last)
    res = train_clap(_params(tmp_path, tiny_corpus), progress=False)
    assert [r["epoch"] for r in res.history] == [1, 2]
    for name in ("train_result.json", "metrics.json"):
        assert "seconds" not in (tmp_path / "clap" / name).read_text(), name
    assert "seconds" not in json.dumps(res.history)


def test_four_clip_val_split_trains_saves_and_warns_instead_of_collapsing(tiny_corpus, tmp_path, caplog):
    # 4 val clips: chance R@10 is 1.0, and no permutation test can reach p < 0.01 (1/4! = 0.04).
    res = train_clap(_params(tmp_path, tiny_corpus, epochs=1), progress=False)
    assert res.val["chance@10"] == 1.0
    assert (tmp_path / "clap" / "train_result.json").is_file() and (tmp_path / "clap" / "model").is_dir()
    assert "too small to test training against chance (4 clips" in caplog.text
    assert not (tmp_path / "clap" / "collapsed.json").exists()


def test_collapsed_model_raises_keeps_weights_and_is_not_taken_as_done(tiny_corpus, tmp_path, collapse_fit):
    collapse_fit()
    # 28 clips: testable; 8 epochs, so that the weights left unzeroed beat chance
    params = _params(tmp_path, tiny_corpus, eval_split="train", epochs=8)
    out = tmp_path / "clap"
    with pytest.raises(TrainingCollapsed, match=r"t2a MRR 0\.036 vs chance 0\.140 over 28 clips.*p = 1,") as err:
        train_clap(params, progress=False)
    assert "fell below chance but train retrieval did not" in str(err.value)
    assert "lower the learning rate" not in str(err.value)
    assert str(out / "collapsed.json") in str(err.value)
    assert (out / "model" / "model.safetensors").is_file()  # weights kept for inspection
    record = json.loads((out / "collapsed.json").read_text())
    assert record["collapse"]["p_value"] == 1.0 and len(record["history"]) == 8
    assert not (out / "train_result.json").exists() and not (out / "metrics.json").exists()
    with pytest.raises(TrainingCollapsed):  # a rerun is not skipped as done: it checks again
        train_clap(params, progress=False)

    collapse_fit(False)  # the trained (not zeroed) weights beat chance
    res = train_clap(params, progress=False)
    assert not res.skipped and (out / "train_result.json").is_file()
    assert not (out / "collapsed.json").exists()


def test_collapse_advice_follows_the_loss():
    from clapcap.clap.collapse import collapse_advice

    def advice(losses, chance=2.0):
        return collapse_advice([{"loss": v} for v in losses], 2e-3, "val", chance_loss=chance)

    assert "non-finite" in advice([4.1, float("nan")])
    stuck = advice([2.5, 2.0, 2.0])
    assert "stuck, the chance level of the contrastive loss (2.000)" in stuck and "lower the learning rate" in stuck
    assert "still falling" in advice([3.0, 2.5, 2.1]) and "train more epochs" in advice([3.0, 2.5, 2.1])
    below = advice([3.0, 1.2, 1.0])
    assert "val captions describe their clips" in below and "learning rate" not in below
    assert "stuck" in collapse_advice([{"loss": 4.1}, {"loss": 4.1}], 2e-3, "val")  # chance loss unknown


def test_loss_and_recall_helpers():
    from clapcap.clap.model import TinyClapConfig, build_tiny_clap

    model, tok, _ = build_tiny_clap(TinyClapConfig(), ["a", "dog"], seed=0)
    enc = tok(["a dog", "dog a"], padding=True, return_tensors="pt", return_token_type_ids=False)
    batch = {"input_features": torch.randn(2, 1, 251, 64), "is_longer": torch.zeros(2, 1, dtype=torch.bool),
             "input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
    loss = symmetric_contrastive_loss(model, batch)
    assert loss.ndim == 0 and torch.isfinite(loss)
    audio = np.eye(4)
    rec = t2a_recall(audio, audio[[0, 1, 2, 3, 3]], np.array([0, 1, 2, 3, 2]), ks=(1,))
    assert rec["t2a_r@1"] == pytest.approx(0.8) and rec["chance@1"] == 0.25
    const = t2a_recall(np.ones((4, 2)), np.ones((4, 2)), np.arange(4), ks=(1,))
    assert const["t2a_r@1"] == 0.0  # ties are pessimistic


@pytest.mark.slow
def test_tracked_run_registers_champion(tiny_corpus, tmp_path, mlflow_uri, monkeypatch):
    from clapcap import tracking
    from clapcap.tracked.clap import run_synth_clap

    monkeypatch.setenv("DVC_STAGE", "train_clap")  # the pipeline's stage: it may move @champion

    params = _params(tmp_path, tiny_corpus, epochs=1, track=True, registered_model="test-synth-clap")
    res = run_synth_clap(params, progress=False)
    version = tracking.get_model_version_by_alias("test-synth-clap", "champion")
    assert int(version.version) == 1
    model = tracking.load_pyfunc_model("models:/test-synth-clap@champion")
    emb = np.asarray(model.predict(["a dog barks", "rain"]))
    assert emb.shape == (2, 64)
    runs = tracking.search_runs("clapcap-retrieval")
    assert "metrics.val/t2a/r10" in runs.columns and "metrics.train/loss" in runs.columns and res.model_dir
    # The version carries its per-query test scores, for `clapcap registry compare`.
    from clapcap.retrieval.item_scores import ITEM_SCORES_FILE, check_item_scores

    scores = tracking.version_artifact_json("test-synth-clap", 1, ITEM_SCORES_FILE)
    check_item_scores(scores, ITEM_SCORES_FILE)
    assert scores["split"] == "test" and scores["primary"] == "t2a/r@10"
    assert len(scores["items"]["t2a"]) == len(scores["scores"]["t2a"]["r@10"]) > 0


@pytest.mark.slow
def test_worse_registration_leaves_champion_and_becomes_challenger(tiny_corpus, tmp_path, mlflow_uri, monkeypatch):
    """Promotion on evidence: a second, worse configuration (no learning) registers a version
    that gets @challenger, with the decision, its p-value and the compared version as tags;
    @champion stays. A rerun whose result exists opens no run."""
    import mlflow

    from clapcap import tracking
    from clapcap.tracked.clap import run_synth_clap

    monkeypatch.setenv("DVC_STAGE", "train_clap")

    name = "test-evidence-clap"
    good = _params(tmp_path, tiny_corpus, epochs=2, track=True, registered_model=name)
    run_synth_clap(good, progress=False)
    n_runs = len(tracking.search_runs("clapcap-retrieval"))
    run_synth_clap(good, progress=False)  # skipped: result exists, so no run
    assert len(tracking.search_runs("clapcap-retrieval")) == n_runs
    worse = _params(tmp_path, tiny_corpus, epochs=1, lr=1e-9, track=True, registered_model=name,
                    collapse_alpha=0.0, out_dir=str(tmp_path / "worse"))
    run_synth_clap(worse, progress=False)
    assert tracking.alias_version(name, "champion") == 1 and tracking.alias_version(name, "challenger") == 2
    tags = mlflow.MlflowClient().get_model_version(name, "2").tags
    assert tags["clapcap.decision"] == "challenger" and tags["clapcap.compared_to"] == "1"
    assert float(tags["clapcap.p_value"]) >= 0.05 and tags["clapcap.metric"] == "t2a/r@10"
    assert mlflow.MlflowClient().get_model_version(name, "1").tags["clapcap.reason"] == "no champion yet"


def test_fit_param_groups_give_each_group_its_own_lr(tmp_path):
    """A group with lr 0 keeps its weights while the rest trains (the pretrained-tower recipe)."""
    from clapcap.clap.train import fit

    torch.manual_seed(0)
    model = torch.nn.ModuleDict({"a": torch.nn.Linear(4, 4), "b": torch.nn.Linear(4, 4)})
    x = torch.randn(8, 4)

    def loss_fn(m, batch):
        return (m["b"](m["a"](batch["x"])) ** 2).mean()

    before = {k: v.clone() for k, v in model.state_dict().items()}
    fit(model, optim=OptimConfig(epochs=2, lr=1e-2, warmup_steps=1), make_batches=lambda e: [{"x": x}],
        checkpoint_path=tmp_path / "last.pt", loss_fn=loss_fn, progress=False,
        param_groups=lambda m: [{"params": m["a"].parameters(), "lr": 0.0}, {"params": m["b"].parameters()}])
    after = model.state_dict()
    assert torch.equal(after["a.weight"], before["a.weight"])
    assert not torch.equal(after["b.weight"], before["b.weight"])


def test_the_optim_block_leaves_every_signature_as_it_was():
    """The optimiser keys moved into ``optim`` (one typed block for every CLAP family); the
    signatures still hash them flat, as before, so results and checkpoints of earlier builds
    are recognised (a rebuild retrains nothing). The key sets are the ones hashed before the move."""
    from clapcap.clap.train import _UNTRACKED, _UNTRACKED_MINILM, signature_params
    from clapcap.robust.config import RobustTrainParams
    from clapcap.robust.train import _UNTRACKED as ROBUST_UNTRACKED

    optim = {"epochs", "batch_size", "lr", "weight_decay", "warmup_steps", "seed"}
    scratch = signature_params(TrainClapParams(), _UNTRACKED)
    assert set(scratch) == optim | {"model", "min_word_count", "eval_split", "caption_column", "text_tower",
                                    "text_dir", "text_trainable_layers", "text_lr"}
    assert scratch["epochs"] == 20 and scratch["lr"] == 1e-3 and "optim" not in scratch
    minilm = signature_params(TrainClapParams(text_tower="minilm"), _UNTRACKED_MINILM)
    assert set(minilm) == optim | {"model", "eval_split", "caption_column", "text_trainable_layers", "text_lr"}
    robust = signature_params(RobustTrainParams(), ROBUST_UNTRACKED)
    assert set(robust) == optim | {"loss", "data_fraction", "extend_vocab", "freeze_audio", "text_trainable_layers",
                                   "text_lr", "eval_split"}
    assert (robust["epochs"], robust["lr"], robust["warmup_steps"]) == (4, 5e-4, 10)


def test_optim_block_rejects_a_bad_value_by_its_path():
    from clapcap.config import ConfigError, from_dict

    with pytest.raises(ConfigError, match=r"optim.epochs: expected >= 1, found 0"):
        from_dict(TrainClapParams, {"optim": {"epochs": 0}}, where="train_clap")
    with pytest.raises(ConfigError, match=r"optim.lr: expected > 0, found 0.0"):
        from_dict(TrainClapParams, {"optim": {"lr": 0}}, where="train_clap")
    with pytest.raises(ConfigError, match=r"optim.batch_size: expected >= 2"):
        from_dict(TrainClapParams, {"optim": {"batch_size": 1}}, where="train_clap")
