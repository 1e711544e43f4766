"""The `compute` section: resolution, environment overrides, refusals, and that every training
and embedding stage fails fast on CUDA-less machines when CUDA is asked for (issue 10)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest
import torch

from clapcap.compute import (
    Compute,
    ComputeParams,
    DeviceUnavailable,
    load_compute,
    parse_compute,
    resolve,
)
from clapcap.config import ConfigError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_cuda(monkeypatch):
    """A machine without CUDA, also where the tests run on a GPU box."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("CLAPCAP_DEVICE", raising=False)
    monkeypatch.delenv("CLAPCAP_PRECISION", raising=False)


def test_auto_is_cpu_without_cuda(no_cuda):
    assert resolve() == Compute(device="cpu", precision="fp32")
    assert resolve(ComputeParams(device="cpu")).device == "cpu"


def test_auto_is_cuda_when_available(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve(ComputeParams(), environ={}).device == "cuda"


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_cuda_fails_naming_cuda_and_the_setting(no_cuda, device):
    with pytest.raises(DeviceUnavailable, match=rf"compute.device: {device} asks for CUDA.*not available"):
        resolve(ComputeParams(device=device), environ={})


def test_missing_cuda_index_fails(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve(ComputeParams(device="cuda:0"), environ={}).device == "cuda:0"
    with pytest.raises(DeviceUnavailable, match="CUDA device 1, but this machine has 1"):
        resolve(ComputeParams(device="cuda:1"), environ={})


def test_env_override_wins(no_cuda):
    assert resolve(ComputeParams(device="auto"), environ={"CLAPCAP_DEVICE": "cpu"}).device == "cpu"
    with pytest.raises(DeviceUnavailable, match="CLAPCAP_DEVICE=cuda asks for CUDA"):
        resolve(ComputeParams(device="cpu"), environ={"CLAPCAP_DEVICE": "cuda"})
    with pytest.raises(ConfigError, match="CLAPCAP_DEVICE.*expected auto, cpu, cuda or cuda:N, found 'gpu'"):
        resolve(environ={"CLAPCAP_DEVICE": "gpu"})
    with pytest.raises(ConfigError, match="CLAPCAP_PRECISION.*expected fp32 or bf16, found 'fp16'"):
        resolve(environ={"CLAPCAP_PRECISION": "fp16"})


def test_bf16_on_cpu_is_refused_or_ignored(no_cuda, caplog):
    with pytest.raises(ConfigError, match="bf16 runs on CUDA only"):
        resolve(ComputeParams(device="cpu", precision="bf16"), environ={})
    assert resolve(ComputeParams(device="auto", precision="bf16"), environ={}).precision == "fp32"
    assert "bf16 is ignored on CPU" in caplog.text


def test_fp32_autocast_is_a_no_op():
    import contextlib

    assert isinstance(Compute().autocast(), contextlib.nullcontext)


@pytest.mark.parametrize("text,expected", [
    ("compute:\n  device: gpu\n", "params.yaml:2: compute.device: expected auto, cpu, cuda or cuda:N, found 'gpu'"),
    ("compute:\n  precision: fp16\n", "params.yaml:2: compute.precision: expected one of ['fp32', 'bf16']"),
    ("compute:\n  device: cpu\n  threads: 4\n", "params.yaml:3: unknown key(s) compute.threads"),
])
def test_section_rejects_unknown_keys_and_bad_values(no_cuda, tmp_path, monkeypatch, text, expected):
    monkeypatch.chdir(tmp_path)
    Path("params.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_compute("params.yaml")
    assert str(err.value).startswith(expected)


def test_load_compute_defaults_without_a_section(no_cuda, tmp_path):
    (tmp_path / "params.yaml").write_text("data: {}\n")
    assert load_compute(tmp_path / "params.yaml", environ={}) == Compute("cpu", "fp32")
    assert parse_compute({"device": "cpu"}) == ComputeParams(device="cpu")


def test_repository_params_have_the_default_section(no_cuda):
    assert load_compute(ROOT / "params.yaml", environ={}) == Compute("cpu", "fp32")


# Every DVC stage that trains, embeds or generates, with the smallest params.yaml it loads.
STAGES = [
    ("train_clap.py", [], "train_clap: {}\n"),
    ("embed.py", ["synth_clap", "corpus"], "embed: {}\n"),
    ("checkpoint_identity.py", [], "checkpoint_identity: {}\n"),
    ("robust_train.py", [], "robust_train: {}\n"),
    ("robust_train.py", ["--section", "robust_control"], "robust_control: {}\n"),
    ("robust_benchmark.py", [], "robust_benchmark: {}\n"),
    ("robust_seeds.py", [], "robust_train: {}\nrobust_control: {}\nrobust_benchmark: {}\nrobust_seeds: {}\n"),
    ("caption_lr_search.py", ["--lm", "gpt2"], "captioning: {}\n"),
    ("caption_ablation.py", ["--kind", "lm", "--lm", "gpt2"], "captioning: {}\n"),
    ("caption_noise_floor.py", ["--lm", "gpt2"], "captioning: {}\n"),
    ("reference_score.py", [], "reference: {}\n"),
]


@pytest.mark.parametrize("script,argv,section", STAGES, ids=[f"{s}{' '.join(a)}" for s, a, _ in STAGES])
def test_each_stage_fails_fast_on_cuda_without_cuda(no_cuda, tmp_path, monkeypatch, capsys, script, argv, section):
    monkeypatch.setenv("CLAPCAP_DEVICE", "cuda")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(section)
    monkeypatch.setattr(sys, "argv", [script, *argv])
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(ROOT / "pipelines" / script), run_name="__main__")
    err = capsys.readouterr().err
    assert info.value.code == 1, err
    assert "clapcap: error: CLAPCAP_DEVICE=cuda asks for CUDA, but CUDA is not available" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]  # no work was done


def test_params_section_cuda_fails_fast_naming_the_setting(no_cuda, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("compute: {device: cuda}\ntrain_clap: {}\n")
    monkeypatch.setattr(sys, "argv", ["train_clap.py"])
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(ROOT / "pipelines" / "train_clap.py"), run_name="__main__")
    assert info.value.code == 1
    assert "compute.device: cuda asks for CUDA" in capsys.readouterr().err
