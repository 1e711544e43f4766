"""The synthetic CLAP's two task objects (``train_clap.text_tower``), each built from the
``train_clap`` section and trained by :func:`clapcap.clap.train.train_clap`:

- :func:`scratch_task`: the tiny word-level text tower, trained from scratch with the audio
  tower (a vocabulary from the train captions);
- :func:`minilm_task`: the real all-MiniLM-L6-v2 text tower, its top
  ``text_trainable_layers`` layers at ``text_lr`` and the frozen bottom computed once per
  caption (:mod:`clapcap.clap.frozen_text`).

Both cache the train and validation features, draw the same batches and use the CLIP loss.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clapcap.clap.config import TrainClapParams
from clapcap.clap.features import FeatureCache, cache_features
from clapcap.clap.preprocessing import ClapPreprocessing
from clapcap.clap.task import Batch, ClapTask, clap_batches, embed_cache, t2a_recall

logger = logging.getLogger(__name__)


@dataclass
class BuiltTask:
    """A task with what :func:`~clapcap.clap.train.train_clap` saves beside the weights."""

    task: ClapTask
    feature_extractor: Any
    train: FeatureCache
    val: FeatureCache
    preprocessing: dict[str, Any]  # the model folder's sidecar
    metrics: dict[str, Any] = field(default_factory=dict)  # extra metrics.json keys


def _caches(params: TrainClapParams, fe: Any, dataset_dir: Path, out_dir: Path,
            progress: bool) -> tuple[FeatureCache, FeatureCache]:
    prep = ClapPreprocessing(mel_floor_db=params.model.mel_floor_db)
    train, val = (cache_features(fe, prep, dataset_dir, split, out_dir / "cache" / f"{split}.npz",
                                 caption_columns=[params.caption_column], progress=progress)
                  for split in ("train", params.eval_split))
    return train, val


def _task(params: TrainClapParams, model: Any, tokenizer: Any, train: FeatureCache, val: FeatureCache,
          **kw: Any) -> ClapTask:
    col, optim = params.caption_column, params.optim

    def batches(epoch: int) -> list[Batch]:
        return clap_batches(train, tokenizer, batch_size=optim.batch_size, seed=optim.seed * 1000 + epoch, column=col)

    return ClapTask(model=model, tokenizer=tokenizer, batches=batches,
                    evaluate=lambda m: t2a_recall(*embed_cache(m, tokenizer, val, column=col)), **kw)


def scratch_task(params: TrainClapParams, dataset_dir: Path, out_dir: Path, *, progress: bool = True) -> BuiltTask:
    """The tiny CLAP: features cached, a vocabulary of the train captions (``min_word_count``),
    the model built with ``optim.seed``."""
    from clapcap.clap.model import (
        build_feature_extractor,
        build_tiny_clap,
        build_vocab,
        tiny_preprocessing,
    )

    fe = build_feature_extractor(params.model)
    train, val = _caches(params, fe, dataset_dir, out_dir, progress)
    vocab = build_vocab((c for cs in train.captions[params.caption_column] for c in cs),
                        min_count=params.min_word_count)
    model, tokenizer, fe = build_tiny_clap(params.model, vocab, seed=params.optim.seed)
    return BuiltTask(_task(params, model, tokenizer, train, val), fe, train, val, tiny_preprocessing(params.model))


def text_dir_of(params: TrainClapParams) -> Path:
    """The MiniLM folder: ``params.text_dir`` or the installed package's."""
    if params.text_dir:
        return Path(params.text_dir)
    from clapcap.pretrained.assets import minilm_dir

    return minilm_dir()


def minilm_task(params: TrainClapParams, dataset_dir: Path, out_dir: Path, *, progress: bool = True) -> BuiltTask:
    """The MiniLM CLAP: the model built with ``optim.seed`` (a random tiny audio tower), features
    cached, the text tower frozen below its top ``text_trainable_layers`` layers, which train
    at ``text_lr``; every train and validation caption's frozen bottom computed up front.

    Raises:
        MissingDependencyError: when the MiniLM package is not installed.
    """
    from clapcap.clap.minilm import (
        TEXT_TOWER,
        build_minilm_clap,
        set_text_trainable,
        text_param_groups,
    )

    model, tokenizer, fe = build_minilm_clap(params.model, text_dir_of(params), seed=params.optim.seed)
    train, val = _caches(params, fe, dataset_dir, out_dir, progress)
    n_text = sum(p.numel() for p in set_text_trainable(model, params.text_trainable_layers))
    logger.info("text tower: %d of %d parameters trained (text_trainable_layers=%d, text_lr=%g)", n_text,
                sum(p.numel() for p in model.text_model.parameters()), params.text_trainable_layers, params.text_lr)
    texts = [c for cache in (train, val) for caps in cache.captions[params.caption_column] for c in caps]
    task = _task(params, model, tokenizer, train, val, param_groups=text_param_groups(params.text_lr),
                 text_trainable_layers=params.text_trainable_layers, text_store=out_dir / "cache", precompute=texts)
    sidecar = {"mel_floor_db": params.model.mel_floor_db, "tiny_config": asdict(params.model),
               "text_tower": TEXT_TOWER, "text_trainable_layers": params.text_trainable_layers}
    return BuiltTask(task, fe, train, val, sidecar, metrics={"text_trained_parameters": n_text})


TASKS = {"scratch": scratch_task, "minilm": minilm_task}
