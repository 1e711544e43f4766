"""Two-stage ClipCap training from precomputed embeddings, resumable and skip-if-done.

:func:`train_captioner` is the one library function per training run. A run folder::

    tokenizer/            trained on the TRAIN captions only (or GPT-2 / pretrained)
    lm_pretrain/lm.pt     small decoders only: caption-LM warm-up on training text (no audio);
                          or ``<lm_cache_dir>/lm_<hash>.pt`` shared by runs with identical inputs
    stage1/ stage2/       last.pt (resume point, removed when done), best/ (saved captioner),
                          result.json
    result.json           the run's result: config, seed, per-stage history, best epochs, and
                          ``pretrained_lm``, the LM's record (hub commit or weights SHA-256)

Stage 1 trains the projection with the LM frozen; stage 2 trains projection and LM (or,
with ``lora_rank`` set, the LM's LoRA adapter) from stage 1's best checkpoint. The train seed drives initialisation, shuffling and dropout;
the data split is fixed upstream (split seed 42). Every epoch ends with an atomic
``last.pt``, so a crash loses at most the current epoch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from clapcap.captioning.config import CaptionerConfig, StageConfig, TrainConfig
from clapcap.captioning.data import CaptionSplit, load_caption_split
from clapcap.captioning.decoders import pin_lm, resolve_lm
from clapcap.captioning.model import ClipCapCaptioner, create_captioner, load_captioner
from clapcap.captioning.tokenizer import build_tokenizer, load_pretrained_tokenizer
from clapcap.compute import Compute, adamw, or_default
from clapcap.data.prepare import load_dataset
from clapcap.utils.hub import ResolvedCheckpoint
from clapcap.utils.io import read_json, sha256_json, write_json
from clapcap.utils.torch_io import save_torch

logger = logging.getLogger(__name__)


@dataclass
class RunData:
    """Train and validation splits of one run."""

    train: CaptionSplit
    val: CaptionSplit


def load_run_data(dump: str | Path, dataset_dir: str | Path, embedding_key: str = "audio_embeds") -> RunData:
    """Load train and val splits (embeddings from ``dump``, captions from the manifest)."""

    manifest = load_dataset(dataset_dir).manifest
    return RunData(load_caption_split(dump, manifest, "train", embedding_key=embedding_key),
                   load_caption_split(dump, manifest, "val", embedding_key=embedding_key))


EpochHook = Callable[[int, int, dict[str, float]], None]
"""``on_epoch_end(stage, epoch, {"train_loss", "val_loss"})``: a caller's hook (MLflow at the edge)."""


def _batches(n: int, batch_size: int, seed: int) -> list[np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def _mean_loss(model: ClipCapCaptioner, split: CaptionSplit, batch_size: int, zero_audio: bool = False,
               per_clip: int = 0) -> float:
    rows, caps = split.pairs(per_clip)  # a fixed subset (offset 0): comparable across epochs
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for idx in _batches(len(rows), batch_size, 0):
            x = torch.from_numpy(split.embeds[rows[idx]])
            if zero_audio:
                x = torch.zeros_like(x)
            total += float(model.loss_on_captions(x, [caps[i] for i in idx])) * len(idx)
            count += len(idx)
    return total / count


def _train_epoch(model: ClipCapCaptioner, opt: torch.optim.Optimizer, split: CaptionSplit,
                 cfg: TrainConfig, seed: int, desc: str, progress: bool, zero_audio: bool = False,
                 compute: Compute | None = None, epoch: int = 0) -> float:
    """One epoch; the forward pass under ``compute.autocast()`` (bf16 on CUDA when asked), the
    backward pass and the optimizer step outside it. Batches reach the model's device in
    :meth:`ClipCapCaptioner.loss_on_captions`. With ``cfg.captions_per_clip`` k > 0 the epoch
    takes k captions of each clip, the next k in the following epoch (``epoch``, from 1).
    Returns the mean training loss."""
    autocast = compute.autocast if compute is not None else contextlib.nullcontext
    rows, caps = split.pairs(cfg.captions_per_clip, offset=(epoch - 1) * cfg.captions_per_clip)
    torch.manual_seed(seed)  # dropout masks of this epoch
    params = [p for g in opt.param_groups for p in g["params"]]
    losses = []
    for idx in tqdm(_batches(len(rows), cfg.batch_size, seed), desc=desc, disable=not progress, leave=False):
        x = torch.from_numpy(split.embeds[rows[idx]])
        if zero_audio:
            x = torch.zeros_like(x)
        with autocast():
            loss = model.loss_on_captions(x, [caps[i] for i in idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        losses.append(loss.item())
    return float(np.mean(losses))


def prepare_tokenizer(model_cfg: CaptionerConfig, train: CaptionSplit, folder: Path,
                      lm: ResolvedCheckpoint | None = None) -> Any:
    """Load the run's tokenizer from ``folder``, or build it from training captions (or take the
    pretrained LM's, from ``lm``'s files) and save it."""
    if (folder / "tokenizer_config.json").is_file():
        return load_pretrained_tokenizer(folder)
    tok = build_tokenizer(model_cfg.tokenizer_kind(), [c for caps in train.captions for c in caps],
                          vocab_size=model_cfg.vocab_size, pretrained_dir=str(lm.path) if lm else "")
    tok.save_pretrained(str(folder))
    return tok


def pretrain_lm(model_cfg: CaptionerConfig, tokenizer: Any, data: RunData, cfg: TrainConfig,
                path: Path, *, progress: bool = True, compute: Compute | None = None) -> Path:
    """Warm up a small decoder as a caption LM on training text (constant prefix, no audio).

    Gives stage 1 a frozen LM that knows caption language, as a pretrained LM would.
    Returns ``path`` (the LM state dict); skipped when it exists.
    """
    if path.is_file():
        return path
    seed = warmup_seed(cfg)
    torch.manual_seed(seed + 7919)
    model = create_captioner(_warmup_config(model_cfg), tokenizer).to(cfg.device)
    model.train()
    opt = adamw(model.parameters(), lr=cfg.lm_pretrain_lr)
    for epoch in range(cfg.lm_pretrain_epochs):
        loss = _train_epoch(model, opt, data.train, cfg, seed * 1000 + epoch,
                            f"lm warm-up {epoch + 1}/{cfg.lm_pretrain_epochs}", progress, zero_audio=True,
                            compute=compute, epoch=epoch + 1)
        logger.info("lm warm-up epoch %d: train loss %.4f", epoch + 1, loss)
    save_torch(model.lm.state_dict(), path)
    return path


def _optimizer(model: ClipCapCaptioner, stage: int, st: StageConfig) -> torch.optim.Optimizer:
    model.set_lm_trainable(stage == 2)
    groups = [{"params": list(model.projection.parameters()), "lr": st.lr_projection}]
    if stage == 2:
        groups.append({"params": model.lm_parameters(), "lr": st.lr_lm})  # all, or the LoRA adapter
    return adamw(groups, weight_decay=st.weight_decay)


def _resume(folder: Path, model: ClipCapCaptioner, opt: torch.optim.Optimizer) -> dict[str, Any]:
    state = {"epoch": 0, "history": [], "best_epoch": None, "best_val_loss": float("inf")}
    last = folder / "last.pt"
    if last.is_file():
        ckpt = torch.load(last, map_location="cpu", weights_only=False)
        model.load_weights(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        state = ckpt["state"]
        logger.info("%s: resuming after epoch %d", folder, state["epoch"])
    return state


def train_stage(model: ClipCapCaptioner, stage: int, data: RunData, cfg: TrainConfig, folder: str | Path, *,
                progress: bool = True, on_epoch_end: EpochHook | None = None,
                compute: Compute | None = None) -> dict[str, Any]:
    """Train one stage into ``folder`` (resuming from ``last.pt``; skipped if ``result.json`` exists).

    Returns:
        ``{"stage", "history": [{"epoch", "train_loss", "val_loss"}], "best_epoch",
        "best_val_loss", "checkpoint", "config"}``; ``model`` ends with the best weights. No
        wall-clock time: the result lies in a DVC output, which must be byte-stable (the log has
        each epoch's seconds).
    """
    folder = Path(folder)
    if (folder / "result.json").is_file():  # finished: continue from its best weights
        model.load_weights(torch.load(folder / "best" / "weights.pt", map_location="cpu", weights_only=True))
        return read_json(folder / "result.json")
    st: StageConfig = getattr(cfg, f"stage{stage}")
    opt = _optimizer(model, stage, st)
    state = _resume(folder, model, opt)
    for epoch in range(state["epoch"] + 1, st.epochs + 1):
        start = time.perf_counter()
        model.train()
        if stage == 1:
            model.lm.eval()  # frozen LM: deterministic
        train_loss = _train_epoch(model, opt, data.train, cfg, cfg.seed * 1000 + stage * 100 + epoch,
                                  f"stage {stage} epoch {epoch}/{st.epochs}", progress, compute=compute,
                                  epoch=epoch)
        val_loss = _mean_loss(model, data.val, cfg.batch_size, per_clip=cfg.captions_per_clip)
        state["history"].append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss})
        if val_loss < state["best_val_loss"]:
            state["best_epoch"], state["best_val_loss"] = epoch, val_loss
            model.save(folder / "best")
        state["epoch"] = epoch
        save_torch({"model": model.weights(), "optimizer": opt.state_dict(), "state": state}, folder / "last.pt")
        if on_epoch_end is not None:
            on_epoch_end(stage, epoch, {"train_loss": train_loss, "val_loss": val_loss})
        logger.info("stage %d epoch %d (%.1f s): train %.4f val %.4f", stage, epoch, time.perf_counter() - start,
                    train_loss, val_loss)
    best = torch.load(folder / "best" / "weights.pt", map_location="cpu", weights_only=True)
    model.load_weights(best)
    result = {"stage": stage, "history": state["history"], "best_epoch": state["best_epoch"],
              "best_val_loss": state["best_val_loss"], "checkpoint": str(folder / "best"),
              "config": dataclasses.asdict(st)}
    write_json(folder / "result.json", result)
    (folder / "last.pt").unlink(missing_ok=True)
    return result


def warmup_seed(cfg: TrainConfig) -> int:
    """The seed of the LM warm-up: ``lm_pretrain_seed``, or the run's own seed when None."""
    return cfg.seed if cfg.lm_pretrain_seed is None else cfg.lm_pretrain_seed


def _warmup_config(model_cfg: CaptionerConfig) -> CaptionerConfig:
    """The warm-up's config: projection options do not matter (its input is constant), so
    they are canonical and runs that differ only in them share one warm-up."""
    return dataclasses.replace(model_cfg, projection_depth=1, projection_hidden=0, dropout=0.0)


def _warmup_path(model_cfg: CaptionerConfig, cfg: TrainConfig, tokenizer: Any, data: RunData,
                 out: Path, cache_dir: str | Path | None, precision: str = "fp32") -> Path:
    """Where the LM warm-up is stored: per run, or shared by runs with identical inputs.

    The shared name is a content key: what the warm-up trains on (the training captions in
    order, the tokenizer, the warm-up config and options), never a path or an mtime, so
    edited captions get a new warm-up and two clones share nothing stale.
    """
    if cache_dir is None:
        return out / "lm_pretrain" / "lm.pt"
    key = sha256_json({"config": dataclasses.asdict(_warmup_config(model_cfg)), "seed": warmup_seed(cfg),
                       "batch_size": cfg.batch_size, "epochs": cfg.lm_pretrain_epochs, "lr": cfg.lm_pretrain_lr,
                       "grad_clip": cfg.grad_clip, "device": cfg.device, "torch_threads": cfg.torch_threads,
                       "train_captions": data.train.captions, "tokenizer": _tokenizer_content(tokenizer),
                       **({"precision": precision} if precision != "fp32" else {}),
                       **({"captions_per_clip": cfg.captions_per_clip} if cfg.captions_per_clip else {})})
    return Path(cache_dir) / f"lm_{key[:16]}.pt"


def _tokenizer_content(tokenizer: Any) -> Any:
    """What defines a tokenizer: its serialised fast tokenizer and special tokens (or its vocabulary)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = backend.to_str() if backend is not None else sorted(tokenizer.get_vocab().items())
    return [text, sorted(tokenizer.special_tokens_map.items())]


def _initial_model(model_cfg: CaptionerConfig, tokenizer: Any, data: RunData, cfg: TrainConfig,
                   warmup: Path, progress: bool, compute: Compute, lm: ResolvedCheckpoint | None) -> ClipCapCaptioner:
    lm_path = None
    if lm is None and cfg.lm_pretrain_epochs > 0:
        lm_path = pretrain_lm(model_cfg, tokenizer, data, cfg, warmup, progress=progress, compute=compute)
    torch.manual_seed(cfg.seed)
    model = create_captioner(model_cfg, tokenizer, lm=lm)
    if lm_path is not None:
        model.lm.load_state_dict(torch.load(lm_path, map_location="cpu", weights_only=True))
    return model.to(cfg.device)


def train_captioner(model_cfg: CaptionerConfig, cfg: TrainConfig, *, dump: str | Path, dataset_dir: str | Path,
                    out_dir: str | Path, init_from: str | Path | None = None, progress: bool = True,
                    on_epoch_end: EpochHook | None = None, lm_cache_dir: str | Path | None = None,
                    compute: Compute | None = None, lm: ResolvedCheckpoint | None = None) -> dict[str, Any]:
    """Train a captioner (stages ``cfg.stages``) into ``out_dir``; skipped if its result exists.

    Model and batches go to ``compute.device``, which replaces ``cfg.device`` (recorded in the
    result); ``compute.precision`` bf16 autocasts the training forward passes on CUDA.

    ``init_from`` is a saved captioner to start from (for a stage-2-only run).
    ``on_epoch_end(stage, epoch, losses)`` is called after each epoch (not for finished stages).
    ``lm_cache_dir`` shares the small decoder's LM warm-up between runs whose inputs
    (model config, seed, warm-up options, data) are identical, such as LR-search trials.
    ``lm`` is ``model_cfg``'s pretrained LM resolved by the caller (:func:`resolve_lm`); else it
    is resolved here, once, before anything is written. The saved captioners name a hub LM by
    the commit it resolved to (:func:`pin_lm`).

    Returns:
        The run result (also ``out_dir/result.json``): ``model``, ``train``, ``seed``,
        ``dump``, ``stages`` (per-stage results), ``checkpoint`` (the last stage's best) and,
        with a pretrained LM, ``pretrained_lm`` (its record: ``checkpoint``, ``checkpoint_kind`` and the hub
        ``checkpoint_revision`` commit or the folder's ``checkpoint_sha256``).

    Raises:
        ValueError / FileNotFoundError: on bad options, dumps or manifests.
        InputError: a pretrained LM that does not resolve (:func:`resolve_lm`).
        DeviceUnavailable: when ``compute`` asks for CUDA and there is none.
    """
    compute = or_default(compute)  # resolved first: a missing CUDA fails before any work
    cfg = dataclasses.replace(cfg, device=compute.device)
    out = Path(out_dir)
    if (out / "result.json").is_file():
        logger.info("%s: finished run found, skipping", out / "result.json")
        return read_json(out / "result.json")
    cfg.validate()
    lm = lm if lm is not None else resolve_lm(model_cfg)
    if cfg.torch_threads > 0:
        torch.set_num_threads(cfg.torch_threads)
    data = load_run_data(dump, dataset_dir, cfg.embedding_key)
    if cfg.train_clips:  # the same clips for every run with this train_clips
        data = RunData(data.train.subset(cfg.train_clips), data.val)
    model_cfg = pin_lm(dataclasses.replace(model_cfg, in_dim=int(data.train.embeds.shape[1])), lm)
    if init_from is not None:  # continue a saved captioner: its tokenizer and weights
        model = load_captioner(init_from, device=cfg.device)
        if model.cfg != model_cfg:
            raise ValueError(f"{init_from}: saved config {model.cfg} differs from the run's {model_cfg}")
    else:
        tokenizer = prepare_tokenizer(model_cfg, data.train, out / "tokenizer", lm)
        warmup = _warmup_path(model_cfg, cfg, tokenizer, data, out, lm_cache_dir, compute.precision)
        model = _initial_model(model_cfg, tokenizer, data, cfg, warmup, progress, compute, lm)
    params = {"model": dataclasses.asdict(model_cfg), "train": cfg.record(), "dump": str(dump)}
    if lm is not None:  # which LM weights: the hub commit, or the folder's weights SHA-256
        params["pretrained_lm"] = lm.record()
    if compute.precision != "fp32":  # recorded only when not the default, so fp32 results keep their bytes
        params["precision"] = compute.precision
    stages: dict[str, Any] = {}
    for stage in cfg.stages:
        stages[str(stage)] = train_stage(model, stage, data, cfg, out / f"stage{stage}",
                                         progress=progress, on_epoch_end=on_epoch_end, compute=compute)
    result = {**params, "seed": cfg.seed, "stages": stages,
              "checkpoint": stages[str(cfg.stages[-1])]["checkpoint"]}
    write_json(out / "result.json", result)
    return result
