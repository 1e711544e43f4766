"""The checkpoint-identity step: embed the same clips with laion_clap and with transformers.

:func:`run_checkpoint_identity` (stage ``checkpoint_identity``)

1. builds laion_clap's ``CLAP_Module`` from ``laion_checkpoint`` (or random weights, saved
   as a laion checkpoint so the conversion path is the users' path),
2. converts that checkpoint to an HF folder (:func:`~clapcap.encoders.convert.convert_laion_checkpoint`)
   unless ``hf_checkpoint`` is given,
3. embeds the same clips/captions with both pipelines and writes ``identity.json``
   (:func:`clapcap.retrieval.identity.identity_report`),
4. as a negative control, embeds with a differently initialised HF model of the same
   architecture and writes ``identity_control.json`` (must say "different checkpoints").

Run it in a process where transformers has not been imported yet when ``hf_home`` is set
(see :func:`clapcap.encoders.laion.prepare_laion_env`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clapcap.compute import Compute, or_default
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.config import IdentityParams
from clapcap.encoders.convert import convert_laion_checkpoint
from clapcap.encoders.embed import embed_dataset
from clapcap.encoders.laion import (
    LaionClapEncoder,
    build_laion_module,
    prepare_laion_env,
    save_laion_checkpoint,
)
from clapcap.retrieval.identity import identity_report

logger = logging.getLogger(__name__)


def _control_model(hf_dir: Path, out_dir: Path, seed: int) -> Path:
    """Same architecture as ``hf_dir``, different random weights; returns its folder."""
    import shutil

    import torch
    from transformers import ClapConfig, ClapModel

    if (out_dir / "config.json").is_file():
        return out_dir
    torch.manual_seed(seed)
    model = ClapModel(ClapConfig.from_pretrained(hf_dir))
    model.save_pretrained(out_dir)
    for f in hf_dir.iterdir():  # tokenizer and feature extractor files
        if f.name not in ("config.json", "model.safetensors"):
            shutil.copy(f, out_dir / f.name)
    return out_dir


def run_checkpoint_identity(params: IdentityParams, *, progress: bool = True,
                            compute: Compute | None = None) -> dict[str, Any]:
    """Run the laion_clap vs transformers identity check (both embedding on ``compute.device``).

    Returns:
        ``{"identity", "control"}`` reports.

    Raises:
        LaionEnvError / AssetError: when laion_clap cannot be imported offline.
        ConversionError: when the laion state dict does not convert.
        DeviceUnavailable: when ``compute`` asks for CUDA and there is none.
    """
    compute = or_default(compute)
    prepare_laion_env(params.hf_home or None)

    out = Path(params.out_dir)
    common = dict(enable_fusion=params.enable_fusion, hf_home=params.hf_home, tiny_seed=params.seed, batch_size=4)
    ckpt = Path(params.laion_checkpoint) if params.laion_checkpoint else out / "laion_random.pt"
    laion_cfg = EncoderConfig(name="laion", backend="laion_clap", checkpoint=str(ckpt), **common)
    module = None
    if not ckpt.is_file():
        module = build_laion_module(enable_fusion=params.enable_fusion, seed=params.seed, device=compute.device)
        save_laion_checkpoint(module, ckpt)
    encoder = LaionClapEncoder(module, checkpoint=str(ckpt), batch_size=4) if module is not None else None
    kw = dict(max_clips=params.max_clips, progress=progress, compute=compute)
    a = embed_dataset(laion_cfg, params.dataset_dir, params.split, out / "laion.npz", encoder=encoder, **kw)
    hf_dir = Path(params.hf_checkpoint) if params.hf_checkpoint else out / "hf_converted"
    if not params.hf_checkpoint and not (hf_dir / "config.json").is_file():
        convert_laion_checkpoint(ckpt, hf_dir)
    b = embed_dataset(EncoderConfig(name="hf", backend="hf_clap", checkpoint=str(hf_dir), **common),
                      params.dataset_dir, params.split, out / "hf.npz", **kw)
    ctrl_dir = _control_model(hf_dir, out / "hf_control", params.seed + 1)
    c = embed_dataset(EncoderConfig(name="hf_control", backend="hf_clap", checkpoint=str(ctrl_dir), **common),
                      params.dataset_dir, params.split, out / "hf_control.npz", **kw)
    return {"identity": identity_report(a, b, out / "identity.json", cos_threshold=params.cos_threshold),
            "control": identity_report(a, c, out / "identity_control.json", cos_threshold=params.cos_threshold)}
