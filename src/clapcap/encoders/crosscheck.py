"""The checkpoint-identity step: embed the same clips with laion_clap and with transformers.

:func:`run_checkpoint_identity` (stage ``checkpoint_identity``)

1. the conversion self-test, always: random laion_clap weights (``seed``) saved as
   ``<out_dir>/laion_random.pt``, converted to ``<out_dir>/hf_converted``
   (:func:`~clapcap.encoders.convert.convert_laion_checkpoint`), both embed the same clips and
   captions -> ``identity.json`` (must say "same checkpoint"); a differently initialised HF
   model of the same architecture -> ``identity_control.json`` (must not);
2. the user's checkpoints, when ``laion_checkpoint`` is given: its embeddings against
   ``hf_checkpoint``'s (or, when that is empty, against clapcap's conversion of it) ->
   ``identity_checkpoints.json``, a finding (HF fused vs laion_clap's default checkpoint are
   "different checkpoints", as in the reference report). Without checkpoints that file says
   "not run: no checkpoints given".

:func:`check_identity_reports` is the gate: the self-test, and the user's comparison only
with ``gate_identity``. Run it in a process where transformers has not been imported yet when
``hf_home`` is set (see :func:`clapcap.encoders.laion.prepare_laion_env`).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from clapcap.clap.model import SIDECAR
from clapcap.compute import Compute, or_default
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.checkpoints import checkpoint_record, resolve_hf_checkpoint
from clapcap.encoders.config import IdentityParams
from clapcap.encoders.convert import convert_laion_checkpoint
from clapcap.encoders.embed import embed_dataset
from clapcap.encoders.laion import (
    LaionClapEncoder,
    build_laion_module,
    prepare_laion_env,
    save_laion_checkpoint,
)
from clapcap.errors import ClapcapError, InputError
from clapcap.retrieval.identity import SAME, identity_report
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

CHECKPOINTS_REPORT = "identity_checkpoints.json"
NOT_RUN = "not run: no checkpoints given"


def _fresh(path: Path) -> Path:
    """``path``'s temporary sibling, emptied (a crash leaves no half folder at ``path``)."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    return tmp


def _control_model(source: str, out_dir: Path, seed: int) -> Path:
    """Same architecture as the HF checkpoint ``source`` (a folder or a hub id, resolved like the
    ``hf_clap`` backend), different random weights, its tokenizer and feature extractor; returns
    the folder."""
    import torch
    from transformers import AutoTokenizer, ClapConfig, ClapFeatureExtractor, ClapModel

    if (out_dir / "config.json").is_file():
        return out_dir
    local = resolve_hf_checkpoint(source).path
    tmp = _fresh(out_dir)
    torch.manual_seed(seed)
    ClapModel(ClapConfig.from_pretrained(local)).save_pretrained(tmp)
    AutoTokenizer.from_pretrained(local).save_pretrained(tmp)
    ClapFeatureExtractor.from_pretrained(local).save_pretrained(tmp)
    if (local / SIDECAR).is_file():  # clapcap's preprocessing record
        shutil.copy(local / SIDECAR, tmp / SIDECAR)
    tmp.rename(out_dir)
    return out_dir


def _convert(checkpoint: str | Path, hf_dir: Path) -> Path:
    tmp = _fresh(hf_dir)
    convert_laion_checkpoint(checkpoint, tmp)
    shutil.rmtree(hf_dir, ignore_errors=True)
    tmp.rename(hf_dir)
    return hf_dir


def _check_checkpoints(params: IdentityParams) -> None:
    """Raise InputError for a user checkpoint that is not there, before anything is written."""
    if params.laion_checkpoint:
        path = Path(params.laion_checkpoint).expanduser()
        if not path.is_file():
            what = "a folder; a laion_clap checkpoint is one .pt file" if path.is_dir() else "no such file"
            raise InputError(f"checkpoint_identity.laion_checkpoint: {params.laion_checkpoint}: {what} "
                             "(leave it empty to run the random-weights self-test alone)")
    if params.hf_checkpoint:
        resolve_hf_checkpoint(params.hf_checkpoint, revision=params.hf_revision)


def run_checkpoint_identity(params: IdentityParams, *, progress: bool = True,
                            compute: Compute | None = None) -> dict[str, Any]:
    """Run the conversion self-test and, when given, the comparison of the user's checkpoints
    (all embedding on ``compute.device``). Writes the three reports of the module docstring.

    Returns:
        ``{"identity", "control", "checkpoints"}`` reports.

    Raises:
        InputError: a ``laion_checkpoint`` that is not a file, an ``hf_checkpoint`` that does
            not resolve, or a checkpoint the loaders refuse (nothing is written for the first two).
        LaionEnvError / AssetError: when laion_clap cannot be imported offline.
        ConversionError: when the laion state dict does not convert.
        DeviceUnavailable: when ``compute`` asks for CUDA and there is none.
    """
    compute = or_default(compute)
    _check_checkpoints(params)
    prepare_laion_env(params.hf_home or None)
    out = Path(params.out_dir)
    kw: dict[str, Any] = dict(max_clips=params.max_clips, progress=progress, compute=compute)
    reports = _self_test(params, out, kw)
    reports["checkpoints"] = _user_comparison(params, out, kw)
    return reports


def _encoder_cfg(params: IdentityParams, name: str, backend: str, checkpoint: str | Path,
                 revision: str = "") -> EncoderConfig:
    return EncoderConfig(name=name, backend=backend, checkpoint=str(checkpoint), enable_fusion=params.enable_fusion,
                         hf_home=params.hf_home, tiny_seed=params.seed, batch_size=4, revision=revision)


def _thresholds(params: IdentityParams) -> dict[str, float]:
    return {"cos_threshold": params.cos_threshold, "pearson_threshold": params.pearson_threshold,
            "max_abs_diff_threshold": params.max_abs_diff_threshold}


def _self_test(params: IdentityParams, out: Path, kw: dict[str, Any]) -> dict[str, Any]:
    """Random laion weights -> ``laion_random.pt`` -> ``hf_converted``: must embed the same."""
    ckpt = out / "laion_random.pt"
    encoder = None
    if not ckpt.is_file():
        module = build_laion_module(enable_fusion=params.enable_fusion, seed=params.seed,
                                    device=kw["compute"].device)
        save_laion_checkpoint(module, ckpt)
        encoder = LaionClapEncoder(module, checkpoint=str(ckpt), batch_size=4)
    data = (params.dataset_dir, params.split)
    a = embed_dataset(_encoder_cfg(params, "laion", "laion_clap", ckpt), *data, out / "laion.npz",
                      encoder=encoder, **kw)
    hf_dir = out / "hf_converted"
    if not (hf_dir / "config.json").is_file():
        _convert(ckpt, hf_dir)
    b = embed_dataset(_encoder_cfg(params, "hf", "hf_clap", hf_dir), *data, out / "hf.npz", **kw)
    ctrl_dir = _control_model(str(hf_dir), out / "hf_control", params.seed + 1)
    c = embed_dataset(_encoder_cfg(params, "hf_control", "hf_clap", ctrl_dir), *data, out / "hf_control.npz", **kw)
    th = _thresholds(params)
    return {"identity": identity_report(a, b, out / "identity.json", **th),
            "control": identity_report(a, c, out / "identity_control.json", **th)}


def _user_comparison(params: IdentityParams, out: Path, kw: dict[str, Any]) -> dict[str, Any]:
    """The user's laion_clap checkpoint against ``hf_checkpoint`` (or its own conversion)."""
    path = out / CHECKPOINTS_REPORT
    if not params.laion_checkpoint:
        report: dict[str, Any] = {"verdict": NOT_RUN, "cross_pipeline_comparable": False, "gated": False}
        write_json(path, report)
        return report
    user = out / "checkpoints"
    data = (params.dataset_dir, params.split)
    laion_cfg = _encoder_cfg(params, "laion_user", "laion_clap", params.laion_checkpoint)
    a = embed_dataset(laion_cfg, *data, user / "laion.npz", **kw)
    hf = params.hf_checkpoint or str(_convert(params.laion_checkpoint, user / "hf_converted"))
    hf_cfg = _encoder_cfg(params, "hf_user", "hf_clap", hf, params.hf_revision if params.hf_checkpoint else "")
    b = embed_dataset(hf_cfg, *data, user / "hf.npz", **kw)
    report = {**identity_report(a, b, **_thresholds(params)), "dataset": Path(params.dataset_dir).name,
              "split": params.split, "enable_fusion": params.enable_fusion, "gated": params.gate_identity}
    report["checkpoints"] = [params.laion_checkpoint, params.hf_checkpoint or "clapcap's conversion"]
    # What each side was, by content: the .pt's SHA-256, the hub commit a revision resolved to
    # (or a folder's weights SHA-256), so two findings from two hub revisions can be told apart.
    report["checkpoint_records"] = [checkpoint_record(laion_cfg),
                                    checkpoint_record(hf_cfg) if params.hf_checkpoint
                                    else {"checkpoint_kind": "conversion", "checkpoint": "clapcap's conversion"}]
    write_json(path, report)
    return report


def check_identity_reports(reports: dict[str, Any], params: IdentityParams) -> None:
    """The stage's gate over :func:`run_checkpoint_identity`'s reports.

    Raises:
        ClapcapError: the converted model does not embed like laion_clap, the control was not
            told apart, or (``gate_identity`` only) the user's checkpoints are not the same.
    """
    out = params.out_dir
    if not reports["identity"]["cross_pipeline_comparable"]:
        raise ClapcapError(f"checkpoint identity failed: the converted HF model does not embed like laion_clap "
                           f"({reports['identity'].get('verdict')}); see {out}/identity.json")
    if reports["control"]["cross_pipeline_comparable"]:
        raise ClapcapError(f"checkpoint identity failed: a differently initialised model was not told apart; "
                           f"see {out}/identity_control.json")
    found = reports.get("checkpoints") or {}
    if params.gate_identity and found.get("verdict") != SAME:
        raise ClapcapError(f"checkpoint identity failed: gate_identity is set and {params.laion_checkpoint} vs "
                           f"{params.hf_checkpoint or 'its conversion'} gives {found.get('verdict')!r}; "
                           f"see {out}/{CHECKPOINTS_REPORT}")
