"""Every model step honours `compute`: library steps fail fast without CUDA, and the resolved
device reaches models and batches (checked with spies: this machine has no GPU). The same steps
really run on CUDA in the `gpu`-marked tests at the end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from optim_kw import params_with

from clapcap.clap.optim import OptimConfig
from clapcap.compute import Compute, ComputeParams, DeviceUnavailable, resolve


class Reached(Exception):
    """Raised by a spy: the step got this far with the expected device."""


@pytest.fixture
def cuda_env_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("CLAPCAP_DEVICE", "cuda")


def _library_steps(tmp: Path) -> dict:
    """Each training/embedding/generation step, called as a flow or a user would, without `compute`."""
    from clapcap.captioning.config import CaptionerConfig
    from clapcap.captioning.evaluate import caption_dump
    from clapcap.captioning.train import train_captioner
    from clapcap.clap.config import TrainClapParams
    from clapcap.clap.train import train_clap
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.config import EmbedParams, IdentityParams
    from clapcap.encoders.crosscheck import run_checkpoint_identity
    from clapcap.encoders.embed import embed_all, embed_dataset
    from clapcap.experiments.captioning.config import CaptioningParams, LRSearchConfig
    from clapcap.experiments.captioning.lr_search import search_learning_rates
    from clapcap.experiments.captioning.study import execute_run, lm_specs
    from clapcap.experiments.robust.benchmark import run_benchmark
    from clapcap.experiments.robust.config import RobustBenchParams
    from clapcap.reference.config import GenerationConfig, HFLocalConfig
    from clapcap.reference.hf_local import HFLocalCaptioner
    from clapcap.robust.config import RobustTrainParams
    from clapcap.robust.train import train_robust_clap

    cap = CaptioningParams(out_dir=str(tmp / "cap"))
    return {
        "train_clap": lambda: train_clap(TrainClapParams(out_dir=str(tmp / "clap"))),
        "train_robust_clap": lambda: train_robust_clap(RobustTrainParams(out_dir=str(tmp / "robust"))),
        "robust_benchmark": lambda: run_benchmark(RobustBenchParams(out_dir=str(tmp / "bench"))),
        "embed_dataset": lambda: embed_dataset(EncoderConfig(), tmp / "corpus", "test", tmp / "d.npz"),
        "embed_all": lambda: embed_all(EmbedParams(out_dir=str(tmp / "emb")), "x", "y"),
        "checkpoint_identity": lambda: run_checkpoint_identity(IdentityParams(out_dir=str(tmp / "id"))),
        "train_captioner": lambda: train_captioner(CaptionerConfig(), cap.train["gpt2"], dump=tmp / "d",
                                                   dataset_dir=tmp / "corpus", out_dir=tmp / "run"),
        "lr_search": lambda: search_learning_rates(CaptionerConfig(), cap.train["gpt2"], LRSearchConfig(),
                                                   dump=tmp / "d", dataset_dir=tmp / "c", out_dir=tmp / "lr"),
        "captioning_run": lambda: execute_run(cap, lm_specs(cap, "gpt2")[0]),
        "caption_dump": lambda: caption_dump(str(tmp / "ckpt"), str(tmp / "d.npz")),
        "hf_local": lambda: HFLocalCaptioner(HFLocalConfig(model_dir=str(tmp)), GenerationConfig()),
    }


STEPS = list(_library_steps(Path("/nonexistent")))


@pytest.mark.parametrize("name", STEPS)
def test_library_step_fails_fast_naming_cuda(cuda_env_without_cuda, tmp_path, name):
    with pytest.raises(DeviceUnavailable, match="CLAPCAP_DEVICE=cuda asks for CUDA, but CUDA is not available"):
        _library_steps(tmp_path)[name]()
    assert not any(tmp_path.iterdir())  # failed before writing anything


def test_fit_moves_model_and_batches_to_the_device(monkeypatch, tmp_path):
    """fit puts the model on compute.device before building the optimizer and sends every
    batch there (spied: a CUDA device is only named, never used, on this machine)."""
    from clapcap.clap import train as clap_train

    model = torch.nn.Linear(2, 1)
    moved, sent = [], []
    monkeypatch.setattr(model, "to", lambda device: moved.append(str(device)) or model)
    monkeypatch.setattr(clap_train, "to_device", lambda batch, compute: sent.append(compute.device) or batch)
    batches = [{"x": torch.ones(3, 2)}, {"x": torch.zeros(3, 2)}]
    clap_train.fit(model, optim=OptimConfig(epochs=1, warmup_steps=1), make_batches=lambda epoch: batches,
                   checkpoint_path=tmp_path / "last.pt", loss_fn=lambda m, b: m(b["x"]).pow(2).mean(), progress=False,
                   compute=Compute(device="cuda:1"))
    assert moved == ["cuda:1"] and sent == ["cuda:1", "cuda:1"]


def test_fit_on_cpu_really_places_batches(tmp_path):
    from clapcap.clap.train import fit

    seen = []

    def loss_fn(model, batch):
        seen.append((batch["x"].device.type, next(model.parameters()).device.type))
        return model(batch["x"]).pow(2).mean()

    fit(torch.nn.Linear(2, 1), optim=OptimConfig(epochs=1, warmup_steps=1), make_batches=lambda e: [{"x": torch.ones(3, 2)}],
        checkpoint_path=tmp_path / "last.pt", loss_fn=loss_fn, progress=False,
        compute=resolve(ComputeParams(device="cpu"), environ={}))
    assert seen == [("cpu", "cpu")]


def test_embed_builds_the_encoder_on_the_device(monkeypatch, tiny_corpus, tmp_path):
    from clapcap.encoders import embed
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.config import EmbedParams

    def spy(cfg):
        raise Reached(cfg.device)

    monkeypatch.setattr(embed, "create_encoder", spy)
    params = EmbedParams(out_dir=str(tmp_path), datasets={"corpus": str(tiny_corpus)},
                         encoders={"logmel": EncoderConfig(name="logmel", backend="logmel_stats")})
    with pytest.raises(Reached, match="cuda:1"):
        embed.embed_all(params, "logmel", "corpus", compute=Compute(device="cuda:1"))
    with pytest.raises(Reached, match="cuda"):
        embed.embed_dataset(EncoderConfig(), tiny_corpus, "test", tmp_path / "x.npz", compute=Compute("cuda"))


def test_embedding_device_is_not_a_params_key():
    from clapcap.config import ConfigError, from_dict
    from clapcap.encoders.base import EncoderConfig

    with pytest.raises(ConfigError, match="unknown key"):
        from_dict(EncoderConfig, {"device": "cuda"})
    assert EncoderConfig().with_device("cuda:1").to_dict()["device"] == "cuda:1"
    assert EncoderConfig().to_dict()["device"] == "cpu"  # dumps made on CPU keep their bytes


def test_captioner_device_is_not_a_params_key():
    from clapcap.captioning.config import TrainConfig
    from clapcap.experiments.captioning.config import CaptioningParams

    with pytest.raises(ValueError, match="captioning.train.gpt2.device: the device is set by the compute"):
        CaptioningParams(train={"gpt2": TrainConfig(device="cuda"), "t5": TrainConfig()})


def test_captioner_training_and_generation_use_the_device(monkeypatch, tmp_path):
    from caption_fixtures import tiny_model, tiny_train

    from clapcap.captioning import evaluate as cap_eval
    from clapcap.captioning import train as cap_train

    def initial(model_cfg, tokenizer, data, cfg, warmup, progress, compute, *_):
        raise Reached(f"{cfg.device} {compute.device}")

    monkeypatch.setattr(cap_train, "load_run_data", lambda *a, **k: _FakeData())
    monkeypatch.setattr(cap_train, "prepare_tokenizer", lambda *a, **k: None)
    monkeypatch.setattr(cap_train, "_warmup_path", lambda *a, **k: tmp_path / "lm.pt")
    monkeypatch.setattr(cap_train, "_initial_model", initial)
    with pytest.raises(Reached, match="cuda:1 cuda:1"):
        cap_train.train_captioner(tiny_model(), tiny_train(), dump="d", dataset_dir="c", out_dir=tmp_path / "r", compute=Compute("cuda:1"))

    def load(folder, *, device):
        raise Reached(device)

    monkeypatch.setattr(cap_eval, "embeddings_by_clip", lambda *a, **k: {})
    monkeypatch.setattr(cap_eval, "load_captioner", load)
    with pytest.raises(Reached, match="cuda:1"):
        cap_eval.caption_dump("ckpt", "d.npz", compute=Compute("cuda:1"))


class _FakeSplit:
    embeds = np.zeros((2, 4), dtype=np.float32)


class _FakeData:
    train = _FakeSplit()


def test_reference_captioner_follows_compute(monkeypatch):
    from clapcap.reference.config import HFLocalConfig
    from clapcap.reference.hf_local import _dtype_and_device

    monkeypatch.delenv("CLAPCAP_DEVICE", raising=False)
    assert _dtype_and_device(HFLocalConfig(), Compute("cuda:1")) == (torch.bfloat16, "cuda:1")
    assert _dtype_and_device(HFLocalConfig(), Compute("cpu")) == (torch.float32, "cpu")
    assert _dtype_and_device(HFLocalConfig(device="cpu"), Compute("cuda")) == (torch.float32, "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DeviceUnavailable, match="CUDA"):
        _dtype_and_device(HFLocalConfig(device="cuda"), None)


def test_contrastive_loss_stays_fp32_under_autocast():
    """The towers may run in bf16; logits and the loss are fp32 (CPU autocast stands in for CUDA's)."""
    from clapcap.clap.train import symmetric_contrastive_loss

    class Towers(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.t = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
            self.logit_scale_a = self.logit_scale_t = torch.nn.Parameter(torch.tensor(2.0))

        def get_audio_features(self, input_features, is_longer):
            return self.a(input_features)

        def get_text_features(self, input_ids, attention_mask):
            return self.t(input_ids)

    batch = {"input_features": torch.randn(5, 4), "is_longer": None, "input_ids": torch.randn(5, 4),
             "attention_mask": None}
    model = Towers()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert model.get_audio_features(batch["input_features"], None).dtype == torch.bfloat16
        loss = symmetric_contrastive_loss(model, batch)
    assert loss.dtype == torch.float32


# --- the same steps on a real GPU (make gpu-check) ---------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_clap_trains_and_embeds_on_cuda(tiny_corpus, tmp_path, precision):
    from clapcap.clap.config import TrainClapParams
    from clapcap.clap.train import train_clap
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.embed import embed_dataset

    compute = resolve(ComputeParams(device="cuda", precision=precision), environ={})
    res = train_clap(params_with(TrainClapParams, dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / "clap"), epochs=2,
                                     batch_size=8, warmup_steps=2, track=False, collapse_alpha=0.0),
                     progress=False, compute=compute)
    assert all(np.isfinite(r["loss"]) for r in res.history)
    cfg = EncoderConfig(checkpoint=res.model_dir, batch_size=8)
    on_gpu = embed_dataset(cfg, tiny_corpus, "test", tmp_path / "gpu.npz", progress=False, compute=compute)
    on_cpu = embed_dataset(cfg, tiny_corpus, "test", tmp_path / "cpu.npz", progress=False, compute=Compute("cpu"))
    from clapcap.data.dump import load_dump

    a, b = load_dump(on_gpu), load_dump(on_cpu)
    assert a.meta["encoder"]["device"] == "cuda" and b.meta["encoder"]["device"] == "cpu"
    np.testing.assert_allclose(a.audio_embeds, b.audio_embeds, atol=1e-4)


@pytest.mark.gpu
def test_captioner_trains_and_generates_on_cuda(tiny_corpus, tmp_path):
    from caption_fixtures import make_dump, tiny_model, tiny_train

    from clapcap.captioning.evaluate import caption_dump
    from clapcap.captioning.train import train_captioner

    dump = make_dump(tiny_corpus, tmp_path / "dump.npz")
    compute = resolve(ComputeParams(device="cuda", precision="bf16"), environ={})
    res = train_captioner(tiny_model(), tiny_train(), dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "r",
                          progress=False, compute=compute)
    assert res["train"]["device"] == "cuda" and res["precision"] == "bf16"
    caps = caption_dump(res["checkpoint"], str(dump), compute=compute)
    assert len(caps) == 40
