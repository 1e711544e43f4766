"""The CLAP trainer: one resumable loop for every CLAP family.

- :func:`fit` - the resumable epoch loop (checkpoint after every epoch, so a crash loses at
  most the current epoch), with the :class:`~clapcap.clap.optim.OptimConfig` schedule;
- :func:`train` - a :class:`~clapcap.clap.task.ClapTask` (the family's model, batches, loss,
  parameter groups and text freezing) through :func:`fit`;
- :func:`check_collapse` - the guard against training that stayed at chance;
- :func:`train_clap` - the ``train_clap`` step: build the task of ``text_tower``
  (:mod:`clapcap.clap.tasks`), train, save, guard. RobustCLAP's step is
  :func:`clapcap.robust.train.train_robust_clap`, through the same :func:`train`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.clap.collapse import ChanceTest, chance_test, collapse_advice, split_size_advice
from clapcap.clap.config import TrainClapParams
from clapcap.clap.features import FeatureCache, cache_features
from clapcap.clap.frozen_text import cached_frozen_bottom, precompute
from clapcap.clap.model import load_clap, save_clap
from clapcap.clap.optim import OptimConfig, make_optimizer
from clapcap.clap.preprocessing import ClapPreprocessing
from clapcap.clap.task import (  # re-exported: the loop's callers and tests import them from here
    Batch,
    ClapTask,
    LossFn,
    clap_batches,
    embed_cache,
    symmetric_contrastive_loss,
    t2a_recall,
)
from clapcap.compute import Compute, or_default, to_device
from clapcap.config import to_dict
from clapcap.data.prepare import dataset_fingerprint
from clapcap.errors import ClapcapError
from clapcap.retrieval.item_scores import retrieval_item_scores
from clapcap.utils.io import read_json, remove_stale_temps, sha256_file, sha256_json, write_json
from clapcap.utils.torch_io import save_torch

__all__ = ["Batch", "ClapTask", "LossFn", "TrainClapResult", "TrainingCollapsed", "check_collapse", "clap_batches",
           "embed_cache", "fit", "symmetric_contrastive_loss", "t2a_recall", "train", "train_clap"]

logger = logging.getLogger(__name__)

RESULT = "train_result.json"
COLLAPSED = "collapsed.json"


class TrainingCollapsed(ClapcapError, RuntimeError):
    """Validation retrieval stayed near chance: the contrastive training collapsed."""


def fit(model: Any, *, optim: OptimConfig, make_batches: Callable[[int], list[Batch]], checkpoint_path: str | Path,
        loss_fn: LossFn = symmetric_contrastive_loss,
        evaluate: Callable[[Any], dict[str, float]] | None = None,
        on_epoch_end: Callable[[int, dict[str, float]], None] | None = None,
        signature: str = "", progress: bool = True, compute: Compute | None = None,
        param_groups: Callable[[Any], list[dict[str, Any]]] | None = None,
        eval_every: int = 1) -> list[dict[str, float]]:
    """Train ``model`` for ``optim.epochs`` on ``compute.device``, resuming from ``checkpoint_path``.

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

    ``optim`` gives the epochs and the optimiser (:func:`~clapcap.clap.optim.make_optimizer`:
    AdamW, warm-up then cosine over all the steps); its ``batch_size`` and ``seed`` are the
    batches' business (``make_batches``). ``param_groups(model)`` (optional) returns AdamW
    parameter groups, for example a smaller ``lr`` for a pretrained tower; ``optim.lr`` and
    ``optim.weight_decay`` are the defaults of every group, the schedule scales each group's own LR. Parameters with ``requires_grad=False`` are
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
    epochs, steps_per_epoch = optim.epochs, len(make_batches(0))
    groups = param_groups(model) if param_groups is not None else model.parameters()
    opt, sched = make_optimizer(groups, optim, epochs * steps_per_epoch)
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


def train(task: ClapTask, optim: OptimConfig, *, checkpoint_path: Path, signature: str, eval_every: int = 1,
          progress: bool = True, on_epoch_end: Callable[[int, dict[str, float]], None] | None = None,
          compute: Compute | None = None) -> list[dict[str, float]]:
    """Train ``task.model`` with ``optim`` (:func:`fit`), its text tower's frozen bottom computed
    once per text when ``task.text_trainable_layers`` leaves one
    (:func:`~clapcap.clap.frozen_text.cached_frozen_bottom`; the tower is restored on return).

    Returns:
        The per-epoch history of :func:`fit`.
    """
    with cached_frozen_bottom(task.model, task.text_trainable_layers, store=task.text_store,
                              read_only=task.text_store_read_only) as n_cached:
        if n_cached and task.precompute:
            precompute(task.model, task.tokenizer, task.precompute, progress=progress)
        logger.info("text tower: %d frozen layer(s) computed once per text", n_cached)
        return fit(task.model, optim=optim, make_batches=task.batches, checkpoint_path=checkpoint_path,
                   loss_fn=task.loss, evaluate=task.evaluate, on_epoch_end=on_epoch_end, signature=signature,
                   progress=progress, compute=compute, param_groups=task.param_groups, eval_every=eval_every)


# Not in the signature: they do not decide the weights (the collapse level only judges them).
_UNTRACKED = ("track", "registered_model", "alias", "torch_threads", "out_dir", "dataset_dir",
              "collapse_alpha", "eval_every")
# A MiniLM tower's signature leaves out what names its tower (its weights are hashed instead)
# and what only the scratch tower reads.
_UNTRACKED_MINILM = (*_UNTRACKED, "text_dir", "text_tower", "min_word_count")


def signature_params(params: Any, untracked: tuple[str, ...]) -> dict[str, Any]:
    """``params`` as the signature hashes them: the ``optim`` block's keys at the top level,
    as they were before the block existed, so that results and checkpoints of earlier builds
    keep their signature (a rebuild of unchanged settings retrains nothing)."""
    flat = to_dict(params)
    flat.update(flat.pop("optim"))
    return {k: v for k, v in flat.items() if k not in untracked}


def run_signature(cfg: TrainClapParams, dataset_dir: Path, compute: Compute | None = None) -> str:
    """Hash of what decides the trained weights: the params and the dataset's content (no
    path, no mtime, so two clones of the repository agree); a MiniLM tower adds its weights'
    SHA-256 (the tower's folder is not hashed by name).

    The device is not part of it (a run resumes across devices; docs/compute.md). A bf16 run
    adds its precision, so it never passes for an fp32 run; fp32 leaves the hash unchanged.
    """
    minilm = cfg.text_tower == "minilm"
    params = signature_params(cfg, _UNTRACKED_MINILM if minilm else _UNTRACKED)
    if minilm:
        params["audio"] = params.pop("model")
    if compute is not None and compute.precision != "fp32":
        params["precision"] = compute.precision
    if not minilm:
        return sha256_json([params, dataset_fingerprint(dataset_dir)])
    from clapcap.clap.tasks import text_dir_of

    return sha256_json([params, dataset_fingerprint(dataset_dir), sha256_file(text_dir_of(cfg) / "model.safetensors")])


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
    """Train the CLAP of ``cfg`` (the task of ``cfg.text_tower``, :mod:`clapcap.clap.tasks`) on
    the train split on ``compute.device``; save it to ``out_dir/model``.

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
        MissingDependencyError: for a MiniLM tower when the MiniLM package is not installed.
    """
    import torch

    from clapcap.clap.tasks import TASKS

    compute = or_default(compute)  # resolved first: a missing CUDA fails before any work
    dataset_dir, out_dir = Path(dataset_dir or cfg.dataset_dir), Path(out_dir or cfg.out_dir)
    sig = run_signature(cfg, dataset_dir, compute)
    done = _load_done(out_dir / RESULT, sig)
    if done is not None:
        return done
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    built = TASKS[cfg.text_tower](cfg, dataset_dir, out_dir, progress=progress)
    task = built.task
    history = train(task, cfg.optim, checkpoint_path=out_dir / "checkpoints" / "last.pt", signature=sig,
                    eval_every=cfg.eval_every, progress=progress, on_epoch_end=on_epoch_end, compute=compute)
    final = {k: v for k, v in history[-1].items() if k != "epoch"}
    # Saved before the collapse check, so that a collapsed model stays there for inspection.
    model_dir = save_clap(task.model, task.tokenizer, built.feature_extractor, out_dir / "model",
                          preprocessing=built.preprocessing)
    result = TrainClapResult(model_dir=str(model_dir), result_path=str(out_dir / RESULT), history=history,
                             val=final, signature=sig)
    check_collapse(task.model, task.tokenizer, built.val, alpha=cfg.collapse_alpha, out_dir=out_dir,
                   split=cfg.eval_split, lr=cfg.optim.lr, result=asdict(result), column=cfg.caption_column,
                   chance_loss=task.chance_loss())
    write_json(out_dir / "metrics.json", {"val": final, "epochs": len(history), **built.metrics,
                                          "n_train_clips": len(built.train), "n_val_clips": len(built.val)})
    write_json(out_dir / RESULT, {k: v for k, v in asdict(result).items() if k != "skipped"})
    return result


def test_item_scores(cfg: TrainClapParams, model_dir: str | Path, *, split: str = "test") -> dict[str, Any]:
    """Per-query retrieval scores of the saved model (either text tower) on ``split`` (what a
    registered version carries, so that two versions compare paired on the same queries):
    :func:`clap_item_scores`.
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
