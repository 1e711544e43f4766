"""The seed study's fine-tunes go through the trainer its entry point passes (the tracked one in
the stage and the flow), each with the stage's ``track`` flag, so every seed is an MLflow run."""

from __future__ import annotations

from types import SimpleNamespace

from optim_kw import params_with

from clapcap.compute import Compute
from clapcap.experiments.robust import seeds
from clapcap.experiments.robust.config import RobustSeedParams
from clapcap.robust.config import RobustTrainParams


def test_each_missing_seed_is_trained_by_the_given_trainer_with_the_stage_track_flag(tmp_path):
    calls = []

    def trainer(params, *, progress, compute):
        calls.append(params)
        return SimpleNamespace(model_dir=str(tmp_path / f"m{params.optim.seed}"))

    params = params_with(RobustTrainParams, out_dir=str(tmp_path / "robust_clap"), seed=0, track=True)
    study = RobustSeedParams(seeds=[0, 1, 2], out_dir=str(tmp_path / "seeds"))
    dirs = seeds._seed_models(params, study, "candidate", False, Compute(), trainer)
    assert dirs == {0: str(tmp_path / "robust_clap" / "model"), 1: str(tmp_path / "m1"), 2: str(tmp_path / "m2")}
    assert [p.optim.seed for p in calls] == [1, 2] and all(p.track for p in calls)
    assert calls[0].out_dir == str(tmp_path / "seeds" / "candidate" / "seed1")
