"""The checkpoint_identity stage's control flow (clapcap.encoders.crosscheck), fast.

laion_clap and the embedding step are replaced by stand-ins that write dumps whose content
follows the checkpoint they embed with (the real models run in test_laion_pipeline.py, slow):
the self-test's random laion weights and their conversion embed alike, the control and the
user's checkpoints do not. ``_control_model`` itself runs for real on a tiny CLAP, from a
folder and from a hub id in an offline cache of the hub's own layout.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from published_clap import build_published_clap, put_in_hub_cache

from clapcap.data.dump import EmbeddingDump, save_dump
from clapcap.encoders import crosscheck
from clapcap.encoders.config import IdentityParams
from clapcap.errors import ClapcapError, InputError
from clapcap.retrieval.identity import DIFFERENT, SAME

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "laion/clap-htsat-fused"


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    """A tiny CLAP in laion/clap-htsat-fused's layout (HTSAT with fusion, RoBERTa BPE)."""
    return build_published_clap(tmp_path_factory.mktemp("tiny") / "clap", fused=True)


def _weights_of(checkpoint: str) -> int:
    """Which weights a checkpoint path stands for in the stand-ins (a seed)."""
    name = Path(checkpoint).name
    if name in ("laion_random.pt", "hf_converted") and "checkpoints" not in Path(checkpoint).parts:
        return 0  # the self-test: random laion weights and their conversion
    if name == "hf_control":
        return 1
    if "checkpoints" in Path(checkpoint).parts or name == "user.pt":
        return 2  # the user's laion checkpoint and clapcap's conversion of it
    return 3  # any other HF checkpoint: different weights


@pytest.fixture
def stubbed(monkeypatch):
    """Stand-ins for laion_clap, the conversion and the embedding step; returns the calls."""
    calls: list[tuple[str, str]] = []

    def embed(cfg, dataset_dir, split, out_path, **_kw):
        calls.append(("embed", cfg.checkpoint))
        rng = np.random.default_rng(_weights_of(cfg.checkpoint))
        audio, text = rng.normal(size=(4, 8)), rng.normal(size=(4, 8))
        dump = EmbeddingDump(audio.astype(np.float32), text.astype(np.float32), np.arange(4),
                             [f"c{i}" for i in range(4)], [f"cap {i}" for i in range(4)],
                             {"pipeline": cfg.backend, "checkpoint": cfg.checkpoint, "dataset": "data/corpus"})
        return save_dump(dump, out_path)

    def save(_module, path):
        calls.append(("save", str(path)))
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(b"random laion weights")
        return Path(path)

    def convert(ckpt, out_dir, **_kw):
        calls.append(("convert", str(ckpt)))
        Path(out_dir).mkdir(parents=True)
        (Path(out_dir) / "config.json").write_text("{}")
        return Path(out_dir)

    def control(_source, out_dir, _seed):
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        return out_dir

    monkeypatch.setattr(crosscheck, "build_laion_module", lambda **_kw: object())
    monkeypatch.setattr(crosscheck, "save_laion_checkpoint", save)
    monkeypatch.setattr(crosscheck, "LaionClapEncoder", lambda *_a, **_k: None)
    monkeypatch.setattr(crosscheck, "convert_laion_checkpoint", convert)
    monkeypatch.setattr(crosscheck, "embed_dataset", embed)
    monkeypatch.setattr(crosscheck, "_control_model", control)
    return calls


@pytest.mark.parametrize("given", ["630k-audioset-best.pt", "a_folder"])
def test_missing_laion_checkpoint_is_one_input_error_and_writes_nothing(stubbed, tmp_path, given):
    """A mistyped path used to become random weights saved at the user's path."""
    (tmp_path / "a_folder").mkdir()
    ckpt, out = tmp_path / given, tmp_path / "out"
    params = IdentityParams(out_dir=str(out), laion_checkpoint=str(ckpt))
    with pytest.raises(InputError, match=f"{ckpt}: .*(no such file|a folder)"):
        crosscheck.run_checkpoint_identity(params, progress=False)
    assert stubbed == [] and not out.exists()
    assert not ckpt.is_file()


def test_no_checkpoints_runs_the_self_test_and_says_the_comparison_did_not_run(stubbed, tmp_path):
    out = tmp_path / "out"
    reports = crosscheck.run_checkpoint_identity(IdentityParams(out_dir=str(out)), progress=False)
    assert reports["identity"]["verdict"] == SAME and reports["control"]["verdict"] == DIFFERENT
    assert (out / "laion_random.pt").is_file() and (out / "hf_converted" / "config.json").is_file()
    saved = json.loads((out / "identity_checkpoints.json").read_text())
    assert saved == reports["checkpoints"]
    assert saved["verdict"] == "not run: no checkpoints given" and saved["cross_pipeline_comparable"] is False
    crosscheck.check_identity_reports(reports, IdentityParams(out_dir=str(out)))  # passes


def test_user_checkpoints_are_a_finding_and_the_self_test_outs_are_written(stubbed, tmp_path, tiny_folder):
    """The DVC outs (laion_random.pt, hf_converted) exist whatever the user gives, and
    "different checkpoints" fails the stage only when gate_identity asks for it."""
    user = tmp_path / "user.pt"
    user.write_bytes(b"a laion checkpoint")
    out = tmp_path / "out"
    params = IdentityParams(out_dir=str(out), laion_checkpoint=str(user), hf_checkpoint=str(tiny_folder))
    reports = crosscheck.run_checkpoint_identity(params, progress=False)
    assert (out / "laion_random.pt").is_file() and (out / "hf_converted" / "config.json").is_file()
    assert user.read_bytes() == b"a laion checkpoint"  # never overwritten
    assert reports["identity"]["verdict"] == SAME and reports["control"]["verdict"] == DIFFERENT
    found = json.loads((out / "identity_checkpoints.json").read_text())
    assert found["verdict"] == DIFFERENT and found["checkpoints"] == [str(user), str(tiny_folder)]
    assert found["dataset"] == "corpus" and found["split"] == "test" and found["gated"] is False
    crosscheck.check_identity_reports(reports, params)  # a finding, not a failure

    gated = IdentityParams(out_dir=str(out), laion_checkpoint=str(user), hf_checkpoint=str(tiny_folder),
                           gate_identity=True)
    with pytest.raises(ClapcapError, match="gate_identity.*identity_checkpoints.json"):
        crosscheck.check_identity_reports(crosscheck.run_checkpoint_identity(gated, progress=False), gated)


def test_laion_checkpoint_alone_is_compared_with_its_conversion(stubbed, tmp_path):
    user = tmp_path / "user.pt"
    user.write_bytes(b"a laion checkpoint")
    out = tmp_path / "out"
    reports = crosscheck.run_checkpoint_identity(IdentityParams(out_dir=str(out), laion_checkpoint=str(user)),
                                                 progress=False)
    assert ("convert", str(user)) in stubbed
    assert reports["checkpoints"]["verdict"] == SAME


def test_params_refuse_an_hf_checkpoint_alone_and_a_gate_without_checkpoints():
    with pytest.raises(ValueError, match="hf_checkpoint: compared with laion_checkpoint"):
        IdentityParams(hf_checkpoint="laion/clap-htsat-fused")
    with pytest.raises(ValueError, match="gate_identity"):
        IdentityParams(gate_identity=True)
    with pytest.raises(ValueError, match="pearson_threshold"):
        IdentityParams(pearson_threshold=0)


def test_self_test_failures_fail_the_stage(tmp_path):
    params = IdentityParams(out_dir=str(tmp_path))
    bad = {"identity": {"cross_pipeline_comparable": False, "verdict": DIFFERENT},
           "control": {"cross_pipeline_comparable": False, "verdict": DIFFERENT}}
    with pytest.raises(ClapcapError, match="converted HF model does not embed like laion_clap.*identity.json"):
        crosscheck.check_identity_reports(bad, params)


def test_identity_check_failure_is_one_error_line(monkeypatch, tmp_path, capsys):
    """It exited 1 with INFO lines only."""
    from clapcap.cli import main

    (tmp_path / "params.yaml").write_text(f"checkpoint_identity:\n  out_dir: {tmp_path / 'out'}\n")
    monkeypatch.setattr(crosscheck, "run_checkpoint_identity", lambda *_a, **_k: {
        "identity": {"cross_pipeline_comparable": True, "verdict": SAME},
        "control": {"cross_pipeline_comparable": True, "verdict": SAME}})
    assert main(["retrieval", "identity-check", "--params", str(tmp_path / "params.yaml")]) == 1
    err = capsys.readouterr().err
    assert "clapcap: error: checkpoint identity failed: a differently initialised model was not told apart" in err
    assert "identity_control.json" in err


def test_identity_check_refuses_a_mistyped_gate(tmp_path, capsys):
    from clapcap.cli import main

    (tmp_path / "params.yaml").write_text("checkpoint_identity:\n  gate_identity: true\n")
    assert main(["retrieval", "identity-check", "--params", str(tmp_path / "params.yaml")]) == 2
    assert "gate_identity" in capsys.readouterr().err


def test_hub_revision_is_resolved_before_anything_and_recorded(stubbed, tmp_path, tiny_folder, monkeypatch):
    """hf_revision picks the hub snapshot; the finding records the commit and the .pt's SHA-256,
    and a revision the cache does not hold is one InputError with nothing written."""
    import hashlib

    import huggingface_hub.constants as constants

    put_in_hub_cache(tiny_folder, tmp_path / "hub", REPO, COMMIT)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    user = tmp_path / "user.pt"
    user.write_bytes(b"a laion checkpoint")
    out = tmp_path / "out"
    params = IdentityParams(out_dir=str(out), laion_checkpoint=str(user), hf_checkpoint=REPO, hf_revision=COMMIT)
    found = crosscheck.run_checkpoint_identity(params, progress=False)["checkpoints"]
    laion, hf = found["checkpoint_records"]
    assert laion["checkpoint_sha256"] == hashlib.sha256(b"a laion checkpoint").hexdigest()
    assert hf["checkpoint_revision"] == COMMIT and ("embed", REPO) in stubbed
    assert json.loads((out / "identity_checkpoints.json").read_text())["checkpoint_records"][1]["checkpoint_revision"] == COMMIT

    stubbed.clear()
    bad = IdentityParams(out_dir=str(tmp_path / "out2"), laion_checkpoint=str(user), hf_checkpoint=REPO,
                         hf_revision="v9-does-not-exist")
    with pytest.raises(InputError, match="v9-does-not-exist"):
        crosscheck.run_checkpoint_identity(bad, progress=False)
    assert stubbed == [] and not (tmp_path / "out2").exists()
    with pytest.raises(ValueError, match="hf_revision"):
        IdentityParams(laion_checkpoint=str(user), hf_revision="main")


@pytest.mark.parametrize("as_hub_id", [False, True])
def test_control_model_from_a_folder_or_a_hub_id(tiny_folder, tmp_path, monkeypatch, as_hub_id):
    """It iterated the checkpoint as a folder, so a hub id crashed."""
    import torch
    from transformers import ClapModel

    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.hf_clap import HFClapEncoder

    source = str(tiny_folder)
    if as_hub_id:
        import huggingface_hub.constants as constants

        put_in_hub_cache(tiny_folder, tmp_path / "hub", REPO, COMMIT)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        source = REPO
    out = crosscheck._control_model(source, tmp_path / "control", seed=1)
    assert (out / "config.json").is_file() and (out / "preprocessor_config.json").is_file()
    original, control = ClapModel.from_pretrained(tiny_folder), ClapModel.from_pretrained(out)
    assert original.config.to_dict()["projection_dim"] == control.config.to_dict()["projection_dim"]
    w0, w1 = (m.text_projection.linear1.weight for m in (original, control))
    assert w0.shape == w1.shape and not torch.equal(w0, w1)
    encoder = HFClapEncoder.from_config(EncoderConfig(backend="hf_clap", checkpoint=str(out), enable_fusion=True))
    assert encoder.embed_text(["a dog barks"]).shape[0] == 1  # the tokenizer and extractor came along
    assert not list(tmp_path.glob("control.*"))  # no temporary folder left
