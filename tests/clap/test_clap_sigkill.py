"""CLAP training survives SIGKILL: at most one epoch lost, and the same weights bit for bit."""

from __future__ import annotations

import torch
from optim_kw import params_with

from clapcap.clap.config import TrainClapParams
from clapcap.clap.train import train_clap
from clapcap.config import to_dict


def _params(tmp_path, tiny_corpus, name: str) -> TrainClapParams:
    return params_with(TrainClapParams, dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / name), epochs=4, batch_size=8,
                           warmup_steps=2, track=False, torch_threads=1)


def _history(res) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in res.history]


def test_sigkill_during_checkpoint_write_loses_one_epoch_and_resumes_bit_for_bit(
        tiny_corpus, tmp_path, sigkill_at, one_torch_thread):
    params = _params(tmp_path, tiny_corpus, "killed")
    # Killed while writing epoch 3's checkpoint: half of it is in the temporary file.
    sigkill_at("clap", to_dict(params), at="checkpoint_write", n=3)
    ckpt_dir = tmp_path / "killed" / "checkpoints"
    state = torch.load(ckpt_dir / "last.pt", map_location="cpu", weights_only=False)
    assert [row["epoch"] for row in state["history"]] == [1, 2]
    assert len(list(ckpt_dir.glob(".last.pt.*.tmp.pt"))) == 1
    assert not (tmp_path / "killed" / "train_result.json").exists()

    trained = []
    resumed = train_clap(params, progress=False, on_epoch_end=lambda epoch, _row: trained.append(epoch))
    assert trained == [3, 4]  # resumed after epoch 2: only epoch 3, in flight at the kill, is redone
    assert [p.name for p in ckpt_dir.iterdir()] == ["last.pt"]  # the cut write is gone

    reference = train_clap(_params(tmp_path, tiny_corpus, "reference"), progress=False)
    assert _history(resumed) == _history(reference)
    weights = [(tmp_path / name / "model" / "model.safetensors").read_bytes() for name in ("killed", "reference")]
    assert weights[0] == weights[1]


def test_sigkill_of_tracked_training_then_rerun_leaves_one_finished_run(
        tiny_corpus, tmp_path, sigkill_at, one_torch_thread, monkeypatch):
    import mlflow

    from clapcap.tracked.clap import run_synth_clap

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    params = params_with(TrainClapParams, dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / "tracked"), epochs=4, batch_size=8,
                             warmup_steps=2, torch_threads=1, registered_model="t-sigkill-clap")
    sigkill_at("tracked_clap", to_dict(params), at="checkpoint_write", n=3)  # its run is open, epochs 1-2 logged
    run_synth_clap(params, progress=False)

    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name("clapcap-retrieval")
    runs = client.search_runs([exp.experiment_id])
    assert [(r.info.run_name.split("/")[1], r.info.status) for r in runs] == [("synth_clap", "FINISHED")]
    history = client.get_metric_history(runs[0].info.run_id, "train/loss")
    assert sorted(m.step for m in history) == [1, 2, 3, 4]  # epochs 1-2 before the kill, 3-4 after
