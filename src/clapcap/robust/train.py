"""The ``robust_train`` step: fine-tune a CLAP with the multi-view contrastive loss.

RobustCLAP is one more CLAP task (:class:`~clapcap.clap.task.ClapTask`, built by
:func:`robust_task`: the base model, view batches, the multi-view loss, the text tower's
parameter groups and frozen bottom), trained by the CLAP trainer
(:func:`clapcap.clap.train.train`: resumable, a checkpoint after every epoch) with the
section's ``optim`` block. Views come from the **train** split only; validation reports
t2a R@k on the original captions and on each view.

Output folder (``out_dir``): ``model/`` (an HF CLAP folder the ``hf_clap`` backend
loads), ``checkpoints/last.pt``, ``cache/``, ``train_result.json`` (its presence skips
the step), or ``collapsed.json`` instead when the collapse check failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.clap.features import cache_features
from clapcap.clap.minilm import set_text_trainable, text_param_groups
from clapcap.clap.model import SPECIALS, build_tokenizer, build_vocab, load_clap, save_clap
from clapcap.clap.preprocessing import ClapPreprocessing
from clapcap.clap.task import ClapTask, embed_cache, t2a_recall
from clapcap.clap.train import check_collapse, signature_params, train
from clapcap.compute import Compute, full_precision, or_default
from clapcap.config import from_dict, to_dict
from clapcap.data.prepare import load_dataset
from clapcap.encoders.checkpoints import resolve_base_clap
from clapcap.robust.config import RobustTrainParams
from clapcap.robust.data import VIEW_COLUMNS, attach_views, subset, text_embeddings, view_batches
from clapcap.robust.loss import MultiViewLossConfig, multiview_loss, schedule_factors
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

RESULT = "train_result.json"


@dataclass
class RobustTrainResult:
    """What :func:`train_robust_clap` produced."""

    model_dir: str
    result_path: str
    base_model: str
    history: list[dict[str, float]]
    val: dict[str, float]
    n_train_clips: int
    added_words: list[str]
    # The base's record (clapcap.encoders.checkpoints): hub commit or weights SHA-256.
    base_checkpoint: dict[str, Any] = field(default_factory=dict)
    skipped: bool = False


def extend_vocabulary(model: Any, tokenizer: Any, texts: list[str]) -> tuple[Any, list[str]]:
    """Add the words of ``texts`` that a word-level tokenizer lacks; resize the text embeddings.

    Existing token ids are kept. Subword tokenizers are returned unchanged.

    Returns:
        ``(tokenizer, added words)``.
    """

    if type(tokenizer.backend_tokenizer.model).__name__ != "WordLevel":
        return tokenizer, []
    vocab = tokenizer.get_vocab()
    new = [w for w in build_vocab(texts) if w not in vocab]
    if not new:
        return tokenizer, []
    words = [w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if w not in SPECIALS]
    extended = build_tokenizer(words + new, int(tokenizer.model_max_length))
    assert all(extended.get_vocab()[w] == i for w, i in vocab.items()), "token ids must not move"
    model.text_model.resize_token_embeddings(len(extended))
    model.config.text_config.vocab_size = len(extended)
    return extended, new


def make_loss_fn(cfg: MultiViewLossConfig) -> Callable[[Any, dict[str, Any]], Any]:
    """The task's ``loss(model, batch)`` (the view factors ride in the batch)."""

    def loss_fn(model: Any, batch: dict[str, Any]) -> Any:
        audio = model.get_audio_features(input_features=batch["input_features"], is_longer=batch["is_longer"])
        caption = model.get_text_features(**batch["caption"])
        views = {v: (model.get_text_features(**tokens), mask) for v, (tokens, mask) in batch["views"].items()
                 if batch["factors"].get(v, 0.0) > 0}
        with full_precision(audio.device.type):  # logits, softmax and losses in fp32 (docs/compute.md)
            views = {v: (emb.float(), mask) for v, (emb, mask) in views.items()}
            loss, _ = multiview_loss(audio.float(), caption.float(), views, model.logit_scale_a,
                                     model.logit_scale_t, cfg, batch["factors"])
        return loss

    return loss_fn


def _evaluator(tokenizer: Any, val: Any) -> Callable[[Any], dict[str, float]]:
    """Validation t2a R@1/R@10 on the captions and on each view (audio embedded once)."""

    def evaluate(model: Any) -> dict[str, float]:
        audio, text, index = embed_cache(model, tokenizer, val)
        out = t2a_recall(audio, text, index, ks=(1, 10))
        for view in VIEW_COLUMNS:
            texts = [(i, t) for i, caps in enumerate(val.captions[view]) for t in caps if t is not None]
            emb = text_embeddings(model, tokenizer, [t for _, t in texts])
            rec = t2a_recall(audio, emb, np.array([i for i, _ in texts]), ks=(1, 10))
            out.update({f"{view}_{k}": v for k, v in rec.items() if not k.startswith("chance")})
        return out

    return evaluate


def _batches_fn(params: RobustTrainParams, train: Any, tokenizer: Any, clips: Any) -> Callable[[int], list]:
    def make_batches(epoch: int) -> list[dict[str, Any]]:
        batches = view_batches(train, tokenizer, clips, batch_size=params.optim.batch_size,
                               seed=params.optim.seed * 1000 + epoch)
        for b, batch in enumerate(batches):  # fractional epoch, for a ramped schedule
            batch["factors"] = schedule_factors(epoch + b / max(1, len(batches)), params.loss)
        return batches

    return make_batches


# Not in the signature: they do not decide the weights (the two paths are hashed by content).
_UNTRACKED = ("track", "experiment", "out_dir", "collapse_alpha", "paraphrase_dir", "base_model", "base_revision",
              "feature_cache", "text_store", "eval_every")


def run_signature(params: RobustTrainParams, compute: Compute | None = None, *, base: Any = None) -> str:
    """Hash of what decides the fine-tuned weights: the params and the content of the
    paraphrase manifest and of the base model's files. A checkpoint with another signature
    is not resumed (the checkpoint folder outlives reruns: it is a persistent DVC output).
    A bf16 run adds its precision; fp32 (and the device) leave the hash unchanged.

    Returns:
        A hex digest.
    """
    import hashlib
    import json

    canonical = from_dict(RobustTrainParams, to_dict(params))  # typed as parsed: 1 -> 1.0 for floats
    tracked = signature_params(canonical, _UNTRACKED)
    if compute is not None and compute.precision != "fp32":
        tracked["precision"] = compute.precision
    digest = hashlib.sha1(json.dumps(tracked, sort_keys=True, default=str).encode())
    base = (base or _base(params)).path  # the resolved base, when the caller has it
    for path in [Path(params.paraphrase_dir) / "manifest.csv", *sorted(base.iterdir() if base.is_dir() else [])]:
        if path.is_file():
            digest.update(path.name.encode())
            with path.open("rb") as fh:
                digest.update(hashlib.file_digest(fh, "sha1").digest())
    return digest.hexdigest()


def _base(params: RobustTrainParams) -> Any:
    """The base CLAP resolved (:func:`~clapcap.encoders.checkpoints.resolve_base_clap`)."""
    return resolve_base_clap(params.base_model, revision=params.base_revision, section="robust_train")


def _load_base(params: RobustTrainParams, base: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
    model, tokenizer, fe, sidecar = load_clap(base.path)
    if params.freeze_audio:
        for p in model.audio_model.parameters():
            p.requires_grad_(False)
    return model, tokenizer, fe, sidecar


def robust_task(params: RobustTrainParams, base: Any, *, progress: bool = True) -> tuple[ClapTask, Any, dict, Any,
                                                                                      np.ndarray, list[str]]:
    """RobustCLAP's task: the base model (audio frozen with ``freeze_audio``), the train split's
    seeded clip subset with its views, the multi-view loss, and the text tower trained whole
    (-1) or above a frozen bottom computed once per text (the ``text_store`` when given).

    Returns:
        ``(task, feature extractor, sidecar, validation cache, train clip rows, added words)``.
    """
    import torch

    model, tokenizer, fe, sidecar = _load_base(params, base)
    torch.manual_seed(params.optim.seed)  # new token rows (resize_token_embeddings) and dropout
    prep = ClapPreprocessing(fusion=bool(model.config.audio_config.enable_fusion), crop="head",
                             mel_floor_db=sidecar.get("mel_floor_db"))
    manifest = load_dataset(params.paraphrase_dir).manifest
    caches = {}
    cache_dir = Path(params.feature_cache) if params.feature_cache else Path(params.out_dir) / "cache"
    for split in ("train", params.eval_split):
        cache = cache_features(fe, prep, params.paraphrase_dir, split, cache_dir / f"{split}.npz", progress=progress)
        caches[split] = attach_views(cache, manifest)
    train_cache, val = caches["train"], caches[params.eval_split]
    clips = subset(train_cache, params.data_fraction, params.optim.seed)
    added: list[str] = []
    if params.extend_vocab:  # train-split texts only: the test views stay unseen text
        texts = [t for col in ("captions", *VIEW_COLUMNS) for i in clips for t in train_cache.captions[col][i] if t]
        tokenizer, added = extend_vocabulary(model, tokenizer, texts)
        logger.info("vocabulary: %d words added from train captions and views", len(added))
    groups = None
    if params.text_trainable_layers >= 0:  # a pretrained tower: freeze all but its top layers
        n_text = sum(p.numel() for p in set_text_trainable(model, params.text_trainable_layers))
        groups = text_param_groups(params.optim.lr if params.text_lr is None else params.text_lr)
        logger.info("text tower: %d parameters trained (text_trainable_layers=%d)", n_text,
                    params.text_trainable_layers)
    task = ClapTask(model=model, tokenizer=tokenizer, batches=_batches_fn(params, train_cache, tokenizer, clips),
                    evaluate=_evaluator(tokenizer, val), loss=make_loss_fn(params.loss), param_groups=groups,
                    text_trainable_layers=params.text_trainable_layers,
                    text_store=Path(params.text_store or cache_dir), text_store_read_only=bool(params.text_store))
    return task, fe, sidecar, val, clips, added


def train_robust_clap(params: RobustTrainParams, *, progress: bool = True,
                      on_epoch_end: Callable[[int, dict[str, float]], None] | None = None,
                      compute: Compute | None = None) -> RobustTrainResult:
    """Fine-tune ``params.base_model`` into RobustCLAP on ``compute.device``; save it to ``out_dir/model``.

    Skips all work when ``out_dir/train_result.json`` exists; resumes from
    ``out_dir/checkpoints/last.pt`` after a crash, even SIGKILL (at most the epoch in
    progress is lost; see :func:`~clapcap.clap.train.fit`). The task is :func:`robust_task`,
    trained by :func:`clapcap.clap.train.train` with ``params.optim``. The model is saved before
    :func:`~clapcap.clap.train.check_collapse`; ``train_result.json`` only after it passes.

    Returns:
        A :class:`RobustTrainResult`.

    Raises:
        FileNotFoundError: when the base model or the paraphrase manifest is missing.
        ValueError: when the views are missing or misaligned for a train clip.
        TrainingCollapsed: when validation retrieval on the captions is not better than chance
            (the model and ``out_dir/collapsed.json`` are kept for inspection).
    """
    compute = or_default(compute)  # resolved first: a missing CUDA fails before any work
    out_dir = Path(params.out_dir)
    result_path = out_dir / RESULT
    if result_path.is_file():
        logger.info("%s exists: RobustCLAP training skipped", result_path)
        known = {f.name for f in fields(RobustTrainResult)}  # a file of an older build may hold more
        return RobustTrainResult(**{**{k: v for k, v in read_json(result_path).items() if k in known},
                                    "skipped": True})
    base = _base(params)  # resolved once: a folder's weights are hashed for its record
    task, fe, sidecar, val, clips, added = robust_task(params, base, progress=progress)
    history = train(task, params.optim, checkpoint_path=out_dir / "checkpoints" / "last.pt",
                    signature=run_signature(params, compute, base=base), eval_every=params.eval_every,
                    progress=progress, on_epoch_end=on_epoch_end, compute=compute)
    model, tokenizer = task.model, task.tokenizer
    final = history[-1]
    # Saved before the collapse check, so that a collapsed model stays there for inspection.
    model_dir = save_clap(model, tokenizer, fe, out_dir / "model", preprocessing=sidecar)
    result = RobustTrainResult(
        model_dir=str(model_dir), result_path=str(result_path), base_model=params.base_model, history=history,
        val={k: v for k, v in final.items() if k != "epoch"}, n_train_clips=int(len(clips)),
        added_words=added, base_checkpoint=base.record())
    check_collapse(model, tokenizer, val, alpha=params.collapse_alpha, out_dir=out_dir, split=params.eval_split,
                   lr=params.optim.lr, result={k: v for k, v in asdict(result).items() if k != "skipped"})
    write_json(result_path, {k: v for k, v in asdict(result).items() if k != "skipped"})
    return result


def robust_model_label(params: RobustTrainParams) -> str:
    """What the fine-tune is, for its run name: ``robust_clap`` (paraphrase-view losses on) or
    ``robust_control`` (the CLIP loss alone). From the loss, not from ``out_dir``: a run name
    holds no output path."""
    loss = params.loss
    return "robust_clap" if max(loss.w_view1, loss.w_view2, loss.w_align) > 0 else "robust_control"
