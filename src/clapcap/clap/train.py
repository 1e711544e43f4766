"""Contrastive training of a transformers ``ClapModel`` (the synthetic CLAP).

Reusable pieces (RobustCLAP imports them):

- :func:`clap_batches` - shuffled batches from a :class:`~clapcap.clap.features.FeatureCache`
  (one random caption per clip, seeded per epoch so a resumed run sees the same batches);
- :func:`symmetric_contrastive_loss` - the default ``loss_fn(model, batch) -> Tensor``;
- :func:`embed_cache` / :func:`t2a_recall` - validation embeddings and text-to-audio R@k;
- :func:`fit` - the resumable epoch loop (checkpoint after every epoch, so a crash loses at
  most the current epoch); it takes any ``loss_fn`` and ``make_batches``;
- :func:`train_clap` - the whole step: cache features, build, fit, guard, save.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.clap.collapse import ChanceTest, chance_test, collapse_advice, split_size_advice
from clapcap.clap.config import TrainClapParams
from clapcap.clap.features import FeatureCache, cache_features
from clapcap.clap.model import (
    build_feature_extractor,
    build_tiny_clap,
    build_vocab,
    load_clap,
    save_clap,
    tiny_preprocessing,
)
from clapcap.clap.preprocessing import ClapPreprocessing, tokenize
from clapcap.compute import Compute, adamw, full_precision, or_default, to_device
from clapcap.config import to_dict
from clapcap.data.prepare import dataset_fingerprint
from clapcap.errors import ClapcapError
from clapcap.retrieval.item_scores import retrieval_item_scores
from clapcap.retrieval.ranking import single_positive_ranks
from clapcap.utils.io import read_json, remove_stale_temps, sha256_json, write_json
from clapcap.utils.torch_io import save_torch

logger = logging.getLogger(__name__)

Batch = dict[str, Any]
LossFn = Callable[[Any, Batch], Any]
RESULT = "train_result.json"
COLLAPSED = "collapsed.json"


class TrainingCollapsed(ClapcapError, RuntimeError):
    """Validation retrieval stayed near chance: the contrastive training collapsed."""


def clap_batches(cache: FeatureCache, tokenizer: Any, *, batch_size: int, seed: int,
                 column: str = "captions") -> list[Batch]:
    """Shuffled batches of distinct clips with one random caption each (deterministic per seed)."""
    import torch

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(cache))
    batches = []
    for start in range(0, len(order) - 1, batch_size):
        idx = order[start:start + batch_size]
        if len(idx) < 2:  # a contrastive batch needs negatives
            continue
        caps = [cache.captions[column][i][rng.integers(len(cache.captions[column][i]))] for i in idx]
        batches.append({"input_features": torch.from_numpy(cache.features[idx].astype(np.float32)),
                        "is_longer": torch.from_numpy(cache.is_longer[idx]),
                        "clip_index": torch.from_numpy(idx), **tokenize(tokenizer, caps)})
    return batches


def symmetric_contrastive_loss(model: Any, batch: Batch) -> Any:
    """CLIP loss: mean of audio->text and text->audio cross-entropy over the batch.

    The towers may run under bf16 autocast; the logits, temperature and cross-entropy are
    computed in fp32 outside it (:func:`~clapcap.compute.full_precision`): a bf16 logit has
    8 bits of mantissa, too coarse for a softmax over the batch at temperature up to 100.
    """
    import torch
    import torch.nn.functional as F

    audio = model.get_audio_features(input_features=batch["input_features"], is_longer=batch["is_longer"])
    text = model.get_text_features(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    with full_precision(audio.device.type):
        audio, text = audio.float(), text.float()  # no-ops on fp32 tensors
        logits_t2a = model.logit_scale_t.exp().clamp(max=100) * text @ audio.T  # (B, B)
        logits_a2t = model.logit_scale_a.exp().clamp(max=100) * audio @ text.T
        labels = torch.arange(audio.shape[0], device=audio.device)
        return (F.cross_entropy(logits_t2a, labels) + F.cross_entropy(logits_a2t, labels)) / 2


def embed_cache(model: Any, tokenizer: Any, cache: FeatureCache, *, column: str = "captions",
                batch_size: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embed cached clips and all their captions on the model's device, in fp32 (no autocast).

    Returns:
        ``(audio, text, caption_clip_index)`` as NumPy arrays (on the CPU).
    """
    import torch

    caps = [(i, c) for i, cs in enumerate(cache.captions[column]) for c in cs]
    audio, text = [], []
    device = next(model.parameters()).device  # batches follow the model (hand-written: one line)
    model.eval()
    with torch.inference_mode():
        for s in range(0, len(cache), batch_size):
            feats = torch.from_numpy(cache.features[s:s + batch_size].astype(np.float32)).to(device)
            longer = torch.from_numpy(cache.is_longer[s:s + batch_size]).to(device)
            audio.append(model.get_audio_features(input_features=feats, is_longer=longer).float().cpu().numpy())
        for s in range(0, len(caps), batch_size):
            enc = tokenize(tokenizer, [c for _, c in caps[s:s + batch_size]])
            text.append(model.get_text_features(**{k: v.to(device) for k, v in enc.items()}).float().cpu().numpy())
    return np.concatenate(audio), np.concatenate(text), np.array([i for i, _ in caps], dtype=np.int64)


def t2a_recall(audio: np.ndarray, text: np.ndarray, clip_index: np.ndarray, ks: Iterable[int] = (1, 10)) -> dict:
    """Text-to-audio recall@k (ties pessimistic) plus chance levels ``chance@k = k / n_clips``."""
    a = audio / np.linalg.norm(audio, axis=1, keepdims=True)
    t = text / np.linalg.norm(text, axis=1, keepdims=True)
    sim = t @ a.T  # (n_captions, n_clips)
    rank = single_positive_ranks(sim, clip_index)  # 1-based; equal scores count against the positive
    out = {}
    for k in ks:
        out[f"t2a_r@{k}"] = float((rank <= k).mean())
        out[f"chance@{k}"] = min(1.0, k / a.shape[0])
    return out


def _lr_lambda(warmup: int, total: int) -> Callable[[int], float]:
    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + np.cos(np.pi * min(1.0, (step - warmup) / max(1, total - warmup))))
    return f


def fit(model: Any, *, make_batches: Callable[[int], list[Batch]], epochs: int, checkpoint_path: str | Path,
        lr: float = 1e-3, weight_decay: float = 0.01, warmup_steps: int = 50,
        loss_fn: LossFn = symmetric_contrastive_loss,
        evaluate: Callable[[Any], dict[str, float]] | None = None,
        on_epoch_end: Callable[[int, dict[str, float]], None] | None = None,
        signature: str = "", progress: bool = True, compute: Compute | None = None,
        param_groups: Callable[[Any], list[dict[str, Any]]] | None = None,
        eval_every: int = 1) -> list[dict[str, float]]:
    """Train ``model`` for ``epochs`` on ``compute.device``, resuming from ``checkpoint_path``.

    The model is moved to ``compute.device`` before the optimizer is built, and each batch
    before its step (:func:`~clapcap.compute.to_device`); ``loss_fn`` runs under
    :meth:`~clapcap.compute.Compute.autocast` (bf16 on CUDA only when asked; a no-op with fp32).
    ``compute`` None = the defaults with the environment overrides (:func:`~clapcap.compute.or_default`).

    ``make_batches(epoch)`` returns that epoch's batches; ``loss_fn(model, batch)`` returns a
    scalar tensor. After each epoch the model, optimizer, scheduler, torch's RNG state and the
    history are saved atomically (temporary file + rename) to ``checkpoint_path`` with
    ``signature``; a checkpoint with another signature (other params or data) is ignored
    rather than resumed. A process killed at any moment (even SIGKILL during the write)
    loses at most the epoch in progress, and the resumed run ends with the same weights,
    bit for bit, as an uninterrupted one (same machine and thread count).

    ``param_groups(model)`` (optional) returns AdamW parameter groups, for example a smaller
    ``lr`` for a pretrained tower; ``lr`` and ``weight_decay`` are the defaults of every group,
    the schedule scales each group's own LR. Parameters with ``requires_grad=False`` are
    frozen either way.

    ``evaluate(model)`` runs after every ``eval_every``-th epoch and after the last one (it
    must not draw from torch's RNG: the weights then do not depend on ``eval_every``).

    Returns:
        The per-epoch history (``epoch``, ``loss`` and ``evaluate``'s keys).
    """
    import torch
    from tqdm.auto import tqdm

    if eval_every < 1:
        raise ValueError(f"eval_every: expected an epoch count >= 1, found {eval_every}")
    compute = or_default(compute)
    model.to(compute.device)  # hand-written placement: the loop below is ours, not accelerate's
    steps_per_epoch = len(make_batches(0))
    groups = param_groups(model) if param_groups is not None else model.parameters()
    opt = adamw(groups, lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(warmup_steps, epochs * steps_per_epoch))
    checkpoint_path = Path(checkpoint_path)
    history = _resume(checkpoint_path, signature, model, opt, sched)
    for epoch in range(len(history), epochs):
        t0, losses = time.perf_counter(), []
        model.train()
        for batch in tqdm(make_batches(epoch), desc=f"epoch {epoch + 1}/{epochs}", disable=not progress, leave=False):
            with compute.autocast():
                loss = loss_fn(model, to_device(batch, compute))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
        # No wall-clock time in the history: it goes into DVC-tracked files, which must be
        # byte-stable (the refactor check compares them); the log line has the epoch's seconds.
        row = {"epoch": epoch + 1, "loss": float(np.mean(losses))}
        seconds = time.perf_counter() - t0
        if evaluate is not None and ((epoch + 1) % eval_every == 0 or epoch + 1 == epochs):
            row.update(evaluate(model))
        history.append(row)
        save_torch({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(), "history": history, "signature": signature,
                    "rng": _rng_state()}, checkpoint_path)
        logger.info("epoch %d (%.1f s): %s", epoch + 1, seconds, {k: round(v, 4) for k, v in row.items()})
        if on_epoch_end is not None:
            on_epoch_end(epoch + 1, row)
    return history


def _rng_state() -> dict[str, Any]:
    """Torch's global RNG state (dropout draws from it), so a resumed run continues its stream."""
    import torch

    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _resume(checkpoint_path: Path, signature: str, model: Any, opt: Any, sched: Any) -> list[dict[str, float]]:
    """Load ``checkpoint_path`` into model, optimizer, scheduler and torch's RNG when it belongs
    to this run (same ``signature``); remove temporary files a killed write left behind.

    Returns:
        The history of the finished epochs (empty when starting afresh).
    """
    import torch

    if removed := remove_stale_temps(checkpoint_path):
        logger.info("%s: removed %d temporary file(s) of an interrupted checkpoint write", checkpoint_path, removed)
    if not checkpoint_path.is_file():
        return []
    state = torch.load(checkpoint_path, map_location="cpu", weights_only=False)
    if state.get("signature", "") != signature:
        logger.warning("%s belongs to another run (signature differs): starting afresh", checkpoint_path)
        return []
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    rng = state.get("rng")
    if rng is not None:
        torch.set_rng_state(rng["torch"])
        if "cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])
    else:  # written before the RNG was saved: the dropout stream differs from an uninterrupted run
        logger.warning("%s holds no RNG state: the resumed run will not match an uninterrupted one bit for bit",
                       checkpoint_path)
    logger.info("resuming from %s after epoch %d", checkpoint_path, len(state["history"]))
    # A checkpoint of an older build holds each epoch's wall-clock seconds: not carried into
    # the results, which must be byte-stable.
    return [{k: v for k, v in row.items() if k != "seconds"} for row in state["history"]]


def check_collapse(model: Any, tokenizer: Any, val: FeatureCache, *, alpha: float, out_dir: Path, split: str,
                   lr: float, result: dict[str, Any], column: str = "captions",
                   chance_loss: float | None = None) -> ChanceTest | None:
    """Raise unless validation text-to-audio retrieval beats chance (:func:`~clapcap.clap.collapse.chance_test`).

    The test is the one-sided permutation test of the MRR at level ``alpha`` (0 = no check).
    A split too small for any outcome to reach ``p < alpha`` (4 clips or fewer at 0.01) is
    not judged: a warning says so. ``chance_loss`` (the training loss of uninformative
    embeddings) sharpens the advice (:func:`~clapcap.clap.collapse.collapse_advice`).
    A collapsed run writes ``result`` plus the test to ``out_dir/collapsed.json`` (so a
    rerun never mistakes it for a finished run: it has no ``train_result.json``); any other
    outcome removes a stale ``collapsed.json``.

    Returns:
        The :class:`ChanceTest`, or None when ``alpha`` is 0.

    Raises:
        TrainingCollapsed: naming the statistic, the chance level, the p-value and advice;
            "training collapsed" at or below chance, "training not distinguishable from
            chance on N clips" above it (:meth:`~clapcap.clap.collapse.ChanceTest.verdict`).
    """
    marker = out_dir / COLLAPSED
    if alpha <= 0:
        marker.unlink(missing_ok=True)
        return None
    test = chance_test(*embed_cache(model, tokenizer, val, column=column), alpha=alpha)
    if not test.testable:
        logger.warning("%s: the %s split is too small to test training against chance (%d clips: the smallest "
                       "attainable p-value is not below %g); collapse check skipped. %s", out_dir, split,
                       test.n_clips, alpha, test.describe())
    elif not test.significant:
        write_json(marker, {**result, "collapse": asdict(test)})
        # Above chance but not significant: the split, not the training, is what to change.
        advice = split_size_advice(test, split) if test.above_chance else collapse_advice(
            result["history"], lr, split, chance_loss=chance_loss)
        raise TrainingCollapsed(f"{out_dir}: training {test.verdict()}: on the {split} split, {test.describe()}. {advice} "
                                f"The weights are in {result['model_dir']} and the run in {marker}, for inspection.")
    else:
        logger.info("%s: %s split beats chance: %s", out_dir, split, test.describe())
    marker.unlink(missing_ok=True)
    return test


@dataclass
class TrainClapResult:
    """What :func:`train_clap` produced."""

    model_dir: str
    result_path: str
    history: list[dict[str, float]]
    val: dict[str, float]
    signature: str = ""
    skipped: bool = False


# Not in the signature: they do not decide the weights (the collapse level only judges them).
_UNTRACKED = ("track", "registered_model", "alias", "torch_threads", "out_dir", "dataset_dir",
              "collapse_alpha", "eval_every")


def run_signature(cfg: TrainClapParams, dataset_dir: Path, compute: Compute | None = None) -> str:
    """Hash of what decides the trained weights: the params and the dataset's content (no
    path, no mtime, so two clones of the repository agree).

    The device is not part of it (a run resumes across devices; docs/compute.md). A bf16 run
    adds its precision, so it never passes for an fp32 run; fp32 leaves the hash unchanged.
    """

    params = {k: v for k, v in to_dict(cfg).items() if k not in _UNTRACKED}
    if compute is not None and compute.precision != "fp32":
        params["precision"] = compute.precision
    return sha256_json([params, dataset_fingerprint(dataset_dir)])


def _load_done(result_path: Path, signature: str) -> TrainClapResult | None:
    if not result_path.is_file():
        return None
    res = read_json(result_path)
    if res.get("signature") != signature:
        logger.info("%s was written for other params: retraining", result_path)
        return None
    logger.info("%s exists: training skipped", result_path)
    known = {f.name for f in fields(TrainClapResult)}  # a file of an older build may hold more
    return TrainClapResult(**{**{k: v for k, v in res.items() if k in known}, "skipped": True})


def train_clap(cfg: TrainClapParams, dataset_dir: str | Path | None = None, out_dir: str | Path | None = None,
               *, progress: bool = True,
               on_epoch_end: Callable[[int, dict[str, float]], None] | None = None,
               compute: Compute | None = None) -> TrainClapResult:
    """Train the tiny synthetic CLAP on the train split on ``compute.device``; save it to ``out_dir/model``.

    Skips all work when ``out_dir/train_result.json`` exists for the same params
    (:func:`run_signature`). Resumes from ``out_dir/checkpoints/last.pt`` after a crash, even
    SIGKILL (at most the epoch in progress is lost; see :func:`fit`). Saves the model, then
    runs :func:`check_collapse`; only a model that passes gets ``out_dir/metrics.json`` (flat
    validation metrics, for ``dvc metrics``) and ``train_result.json``.

    Returns:
        A :class:`TrainClapResult`.

    Raises:
        TrainingCollapsed: when validation retrieval is not better than chance (the model and
            ``out_dir/collapsed.json`` are kept for inspection).
    """
    import torch

    compute = or_default(compute)  # resolved first: a missing CUDA fails before any work
    dataset_dir, out_dir = Path(dataset_dir or cfg.dataset_dir), Path(out_dir or cfg.out_dir)
    sig = run_signature(cfg, dataset_dir, compute)
    done = _load_done(out_dir / RESULT, sig)
    if done is not None:
        return done
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    prep, col = ClapPreprocessing(mel_floor_db=cfg.model.mel_floor_db), cfg.caption_column
    fe = build_feature_extractor(cfg.model)
    train, val = (cache_features(fe, prep, dataset_dir, split, out_dir / "cache" / f"{split}.npz",
                                 caption_columns=[col], progress=progress) for split in ("train", cfg.eval_split))
    vocab = build_vocab((c for cs in train.captions[col] for c in cs), min_count=cfg.min_word_count)
    model, tokenizer, fe = build_tiny_clap(cfg.model, vocab, seed=cfg.seed)

    def make_batches(epoch: int) -> list[Batch]:
        return clap_batches(train, tokenizer, batch_size=cfg.batch_size, seed=cfg.seed * 1000 + epoch, column=col)

    history = fit(model, make_batches=make_batches, epochs=cfg.epochs,
                  checkpoint_path=out_dir / "checkpoints" / "last.pt", lr=cfg.lr,
                  weight_decay=cfg.weight_decay, warmup_steps=cfg.warmup_steps, signature=sig,
                  evaluate=lambda m: t2a_recall(*embed_cache(m, tokenizer, val, column=col)),
                  on_epoch_end=on_epoch_end, progress=progress, compute=compute, eval_every=cfg.eval_every)
    final = {k: v for k, v in history[-1].items() if k != "epoch"}
    # Saved before the collapse check, so that a collapsed model stays there for inspection.
    model_dir = save_clap(model, tokenizer, fe, out_dir / "model", preprocessing=tiny_preprocessing(cfg.model))
    result = TrainClapResult(model_dir=str(model_dir), result_path=str(out_dir / RESULT), history=history,
                             val=final, signature=sig)
    chance_loss = float(np.mean([np.log(len(b["clip_index"])) for b in make_batches(0)]))  # CLIP loss at chance
    check_collapse(model, tokenizer, val, alpha=cfg.collapse_alpha, out_dir=out_dir, split=cfg.eval_split,
                   lr=cfg.lr, result=asdict(result), column=col, chance_loss=chance_loss)
    write_json(out_dir / "metrics.json", {"val": final, "epochs": len(history),
                                          "n_train_clips": len(train), "n_val_clips": len(val)})
    write_json(out_dir / RESULT, {k: v for k, v in asdict(result).items() if k != "skipped"})
    return result


def test_item_scores(cfg: TrainClapParams, model_dir: str | Path, *, split: str = "test") -> dict[str, Any]:
    """Per-query retrieval scores of the saved model on ``split`` (what a registered version
    carries, so that two versions compare paired on the same queries): :func:`clap_item_scores`.
    """
    return clap_item_scores(model_dir, cfg.dataset_dir, caption_column=cfg.caption_column,
                            mel_floor_db=cfg.model.mel_floor_db, split=split)


def clap_item_scores(model_dir: str | Path, dataset_dir: str | Path, *, caption_column: str, mel_floor_db: float,
                     split: str = "test") -> dict[str, Any]:
    """Per-query retrieval scores of a saved CLAP (either text tower) on ``split``. The split's
    features go to a temporary folder: the training's ``out_dir`` (a DVC output) is not touched.

    Returns:
        The item-scores dict of :func:`clapcap.retrieval.item_scores.retrieval_item_scores`.
    """
    import tempfile

    model, tokenizer, fe, _ = load_clap(model_dir)
    prep = ClapPreprocessing(mel_floor_db=mel_floor_db)
    with tempfile.TemporaryDirectory(prefix="clapcap-scores-") as tmp:
        cache = cache_features(fe, prep, dataset_dir, split, Path(tmp) / f"{split}.npz",
                               caption_columns=[caption_column], progress=False)
    audio, text, clip_index = embed_cache(model, tokenizer, cache, column=caption_column)
    return retrieval_item_scores(audio, text, clip_index, clip_ids=cache.clip_ids, split=split,
                                 dataset=dataset_fingerprint(dataset_dir))
