"""The registered champion captioner takes audio: it bundles the frozen encoder of its dump."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from caption_fixtures import TINY_MODEL, fake_score_captions

from clapcap.config import from_dict
from clapcap.experiments.captioning import study as exp

TRAIN = {"batch_size": 32, "lm_pretrain_epochs": 1, "stage1": {"epochs": 1, "lr_projection": 3e-3},
         "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}


@pytest.fixture()
def audio_study(tiny_corpus, tmp_path, monkeypatch):
    """A tiny saved CLAP, its dumps of the tiny corpus, and one trained GPT-2 captioner on them."""
    import torch

    from clapcap.clap.model import TinyClapConfig, build_tiny_clap, save_clap, tiny_preprocessing
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.embed import embed_dataset

    torch.set_num_threads(1)
    monkeypatch.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    cfg = TinyClapConfig()
    model, tok, fe = build_tiny_clap(cfg, ["a", "tone", "noise"], seed=3)
    clap_dir = save_clap(model, tok, fe, tmp_path / "clap", preprocessing=tiny_preprocessing(cfg))
    enc = EncoderConfig(name="tiny", backend="hf_clap", checkpoint=str(clap_dir))
    for split in ("train", "val", "test"):
        embed_dataset(enc, tiny_corpus, split, tmp_path / "dump" / f"{split}.npz", progress=False)
    params = from_dict(exp.CaptioningParams, {
        "dataset_dir": str(tiny_corpus), "dump": str(tmp_path / "dump"), "out_dir": str(tmp_path / "out"),
        "lms": ["gpt2"], "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}}, "train": {"gpt2": TRAIN},
        "use_lr_search": False, "noise_seeds": [0], "track": False, "progress": False,
        # its own registered name: the session's store is shared, and @champion moves on evidence only
        "registered_model": "captioner-audio-test",
        "arch": {"prefix_length": [], "dropout": [], "projection_depth": []}, "encoders": {}})
    exp.run_ablation(params, "lm", lm="gpt2")
    return params, clap_dir


def test_champion_captions_audio_files_like_the_dump_embeddings(audio_study, mlflow_uri):
    from clapcap.captioning.config import DecodingConfig
    from clapcap.captioning.data import embeddings_by_clip
    from clapcap.captioning.generation import generate_captions
    from clapcap.captioning.model import load_captioner
    from clapcap.data.manifest import resolve_audio_path
    from clapcap.data.prepare import load_dataset
    from clapcap.tracked.captioning_register import load_champion, register_champion

    params, clap_dir = audio_study
    result = register_champion(params)
    assert result["input"] == "audio" and result["encoder"]["checkpoint"] == str(clap_dir)
    ds = load_dataset(params.dataset_dir)
    test = ds.manifest[ds.manifest["split"] == "test"].head(4)
    paths = [str(resolve_audio_path(ds.root, p)) for p in test["audio_path"]]
    # The expected captions: the same checkpoint and decoding applied to the dump's embeddings.
    by_clip = embeddings_by_clip(f"{params.dump}/test.npz")
    expected = generate_captions(load_captioner(result["checkpoint"]),
                                 np.stack([by_clip[c] for c in test["clip_id"]]),
                                 from_dict(DecodingConfig, result["decoding"]))
    shutil.rmtree(clap_dir)  # the encoder must travel inside the registered model
    model = load_champion("captioner-audio-test", alias=result["alias"])
    assert model.predict(paths) == expected
    assert all(isinstance(c, str) and c for c in expected)


def test_service_errors_on_audio_without_encoder_and_on_bad_files(audio_study, tmp_path):
    from clapcap.captioning.serving import CaptionerService, audio_paths
    from clapcap.data.audio import AudioError
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.factory import create_encoder
    from clapcap.experiments.captioning.study import baseline_run_name

    params, clap_dir = audio_study
    checkpoint = exp.execute_run(params, exp.lm_specs(params, "gpt2")[0])["checkpoint"]
    assert baseline_run_name("gpt2", 0) in checkpoint
    bare = CaptionerService(checkpoint)
    with pytest.raises(ValueError, match="without its audio encoder"):
        bare.predict(["clip.wav"])
    with_encoder = CaptionerService(checkpoint, encoder=create_encoder(
        EncoderConfig(name="tiny", backend="hf_clap", checkpoint=str(clap_dir))))
    with pytest.raises(AudioError, match="file not found"):
        with_encoder.predict([str(tmp_path / "missing.wav")])
    wrong_dim = CaptionerService(checkpoint, encoder=create_encoder(EncoderConfig(name="lm", backend="logmel_stats")))
    with pytest.raises(ValueError, match="captioner expects"):
        wrong_dim.caption_waves([np.zeros(16000, dtype=np.float32)])
    assert audio_paths(np.zeros((2, 3))) is None and audio_paths("a.wav") == ["a.wav"]
    with pytest.raises(ValueError, match="no audio paths"):
        audio_paths(__import__("pandas").DataFrame({"audio_path": []}))


def test_cli_captions_audio_with_the_registered_champion(audio_study, mlflow_uri, tmp_path, capsys):
    from clapcap.cli import main
    from clapcap.data.manifest import resolve_audio_path
    from clapcap.data.prepare import load_dataset
    from clapcap.tracked.captioning_register import load_champion, register_champion
    from clapcap.utils.io import read_json

    params, _ = audio_study
    result = register_champion(params)
    ds = load_dataset(params.dataset_dir)
    paths = [str(resolve_audio_path(ds.root, p)) for p in ds.manifest["audio_path"].head(2)]
    uri = f"models:/captioner-audio-test@{result['alias']}"
    assert main(["captioning", "caption", *paths, "--model", uri, "--out", str(tmp_path / "caps.json")]) == 0
    written = read_json(tmp_path / "caps.json")
    assert list(written) == paths and list(written.values()) == load_champion(
        "captioner-audio-test", alias=result["alias"]).predict(paths)
    assert paths[0] in capsys.readouterr().out
