"""The ``laion_clap`` backend: LAION-CLAP's ``CLAP_Module`` with a checkpoint path.

``import laion_clap`` downloads three tokenizers at module level. Offline, point
``EncoderConfig.hf_home`` at a cache built by :mod:`clapcap.encoders.hf_cache`:
:func:`prepare_laion_env` sets ``HF_HOME``/``HF_HUB_CACHE``/``HF_HUB_OFFLINE`` and must run
before ``transformers`` is first imported in the process (transformers reads the cache
path once, at import). Online, leave ``hf_home`` empty.

Determinism: clips longer than the 10 s window are cropped by
:func:`~clapcap.encoders.base.crop_wave` first (laion_clap's own crop is random), and the
fusion crops run under a fixed NumPy seed (``fusion_seed``).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.data.audio import crop_wave
from clapcap.encoders.base import EncoderConfig, check_texts, check_waves
from clapcap.encoders.checkpoints import (
    STAND_IN_MARK,
    is_stand_in,
    read_laion_checkpoint,
    tokenizer_label,
)
from clapcap.encoders.hf_cache import build_laion_hf_cache, laion_env
from clapcap.errors import AssetError, ClapcapError, InputError, MissingDependencyError
from clapcap.utils.rng import numpy_seed
from clapcap.utils.torch_io import save_torch

logger = logging.getLogger(__name__)

WINDOW = 480_000  # 10 s at 48 kHz, laion_clap's max_len


class LaionEnvError(ClapcapError, RuntimeError):
    """laion_clap cannot be imported offline in this process (cache path fixed too early)."""


def prepare_laion_env(hf_home: str | Path | None) -> None:
    """Make ``import laion_clap`` work offline from ``hf_home`` (built when missing).

    Raises:
        LaionEnvError: when transformers/huggingface_hub were already imported with
            another cache folder (start a fresh process, or set ``HF_HOME`` beforehand).
        AssetError: when the cache cannot be built.
    """

    if not hf_home or "laion_clap" in sys.modules:
        return
    env = laion_env(hf_home)
    if "huggingface_hub" in sys.modules:
        import huggingface_hub.constants as constants

        if Path(constants.HF_HUB_CACHE).resolve() != Path(env["HF_HUB_CACHE"]):
            raise LaionEnvError(
                f"huggingface_hub was imported with cache {constants.HF_HUB_CACHE}, not {env['HF_HUB_CACHE']}; "
                f"set {', '.join(f'{k}={v}' for k, v in env.items())} before Python starts")
    os.environ.update(env)
    build_laion_hf_cache(hf_home)


# What ``import laion_clap`` and ``CLAP_Module()`` read from the hub (laion_clap's hook.py and
# training/data.py): three tokenizers at import, roberta-base's weights at construction.
LAION_HUB_REPOS = ("roberta-base", "bert-base-uncased", "facebook/bart-base")


def import_laion() -> Any:
    """Import ``laion_clap``.

    Raises:
        MissingDependencyError: (an ImportError) naming what to install.
        AssetError: when its import-time hub downloads are not cached and the hub is offline.
    """
    _check_hub_cache()
    try:
        import laion_clap
    except ImportError as err:
        raise MissingDependencyError("the laion_clap backend needs `pip install laion-clap` (and torchvision, "
                                     "torchaudio builds matching torch)", name="laion_clap") from err
    except (OSError, TypeError, ValueError) as err:  # a hub download inside laion_clap's import
        raise AssetError(f"import laion_clap failed while it loaded {', '.join(LAION_HUB_REPOS)} from the "
                         f"Hugging Face hub ({err.__class__.__name__}: {str(err).splitlines()[0][:200]}); "
                         f"{_CACHE_HINT}") from err
    return laion_clap


_CACHE_HINT = ("cache them once online (`hf download roberta-base`, and likewise bert-base-uncased and "
               "facebook/bart-base), or set hf_home (--hf-home) to clapcap's offline stand-in, which is for "
               "random weights only")


def _check_hub_cache() -> None:
    """Fail in one line, before a slow import, when laion_clap's hub files are not cached offline."""
    if "laion_clap" in sys.modules:
        return
    from huggingface_hub import constants, try_to_load_from_cache

    if not constants.HF_HUB_OFFLINE:
        return
    missing = [r for r in LAION_HUB_REPOS if not isinstance(try_to_load_from_cache(r, "config.json"), str)]
    if missing:
        raise AssetError(f"laion_clap loads {', '.join(missing)} from the Hugging Face hub when it is imported, "
                         f"and HF_HUB_OFFLINE=1 while the cache ({constants.HF_HUB_CACHE}) lacks them: "
                         f"{_CACHE_HINT}")


def build_laion_module(*, enable_fusion: bool = False, checkpoint: str = "", seed: int = 0,
                       device: str = "cpu") -> Any:
    """``CLAP_Module`` with weights from ``checkpoint`` or, when empty, random (seeded) weights.

    The checkpoint is read and checked (:func:`~clapcap.encoders.checkpoints.read_laion_checkpoint`)
    before laion_clap is imported, and loaded here rather than by ``CLAP_Module.load_ckpt``
    (which prints, and raises KeyError on checkpoints saved without ``position_ids``).
    ``module.clapcap_checkpoint`` keeps the checkpoint's record (sha256, fused, tokenizer).

    Raises:
        InputError: a bad checkpoint (see ``read_laion_checkpoint``), a checkpoint of another
            architecture, or a real checkpoint under clapcap's stand-in tokenizer.
        AssetError / MissingDependencyError: from :func:`import_laion`.
    """
    import torch

    sd, info = read_laion_checkpoint(checkpoint, enable_fusion=enable_fusion) if checkpoint else (None, {})
    laion_clap = import_laion()
    torch.manual_seed(seed)
    try:
        module = laion_clap.CLAP_Module(enable_fusion=enable_fusion, device=device)
    except (OSError, TypeError, ValueError) as err:  # roberta-base's weights from the hub
        raise AssetError(f"laion_clap's CLAP_Module could not load roberta-base ({err.__class__.__name__}); "
                         f"{_CACHE_HINT}") from err
    if sd is not None:
        if is_stand_in(module.tokenize) and not info["stand_in_tokenizer"]:
            raise InputError(f"{checkpoint}: a real laion_clap checkpoint, but this process has clapcap's offline "
                             "stand-in tokenizer (hf_home / --hf-home: GPT-2 ids shifted by 4, for random weights "
                             "only), which would feed its text tower the wrong token ids; unset hf_home and cache "
                             "roberta-base (`hf download roberta-base`)")
        try:
            module.model.load_state_dict(sd)
        except RuntimeError as err:
            raise InputError(f"{checkpoint}: the weights do not fit laion_clap's HTSAT/RoBERTa CLAP "
                             f"(enable_fusion={enable_fusion}): {_load_summary(err)}") from err
    module.clapcap_checkpoint = {**{k: v for k, v in info.items() if k != "stand_in_tokenizer"},
                                 "tokenizer": tokenizer_label(module.tokenize)}
    module.eval()
    return module


def _load_summary(err: RuntimeError) -> str:
    """The first line of each of torch's load_state_dict complaints, cut short."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip() and not ln.startswith("Error(s)")]
    return "; ".join(ln[:160] for ln in lines[:3]) or "load_state_dict failed"


def save_laion_checkpoint(module: Any, path: str | Path) -> Path:
    """Write ``module``'s weights in the format ``CLAP_Module.load_ckpt`` reads.

    ``{"state_dict": {"module." + key: tensor}}``, including
    ``text_branch.embeddings.position_ids`` that current transformers no longer saves. A module
    built under clapcap's stand-in tokenizer is marked so (``clapcap_tokenizer``), so that only
    such checkpoints load under the stand-in again.
    """
    import torch


    sd = {f"module.{k}": v.detach().cpu() for k, v in module.model.state_dict().items()}
    key = "module.text_branch.embeddings.position_ids"
    if key not in sd:
        n = module.model.text_branch.embeddings.position_embeddings.weight.shape[0]
        sd[key] = torch.arange(n)[None]
    payload: dict[str, Any] = {"state_dict": sd}
    if hasattr(module, "tokenize") and is_stand_in(module.tokenize):
        payload[STAND_IN_MARK] = "stand-in"
    save_torch(payload, path)
    return Path(path)


class LaionClapEncoder:
    """laion_clap ``CLAP_Module`` as an :class:`~clapcap.encoders.base.AudioTextEncoder`."""

    pipeline = "laion_clap"
    sample_rate = 48_000

    def __init__(self, module: Any, *, checkpoint: str, crop: str = "head", fusion_seed: int = 0,
                 batch_size: int = 16):
        self.module = module
        self.checkpoint = checkpoint
        self.crop = crop
        self.fusion_seed = fusion_seed
        self.batch_size = batch_size

    @classmethod
    def from_config(cls, cfg: EncoderConfig) -> LaionClapEncoder:
        prepare_laion_env(cfg.hf_home or None)
        module = build_laion_module(enable_fusion=cfg.enable_fusion, checkpoint=cfg.checkpoint,
                                    seed=cfg.tiny_seed, device=cfg.device)
        return cls(module, checkpoint=cfg.checkpoint or f"random-laion-seed{cfg.tiny_seed}", crop=cfg.crop,
                   fusion_seed=cfg.fusion_seed, batch_size=cfg.batch_size)

    def embed_audio(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, D) float32 audio embeddings via ``get_audio_embedding_from_data``."""
        import torch

        waves = check_waves(waves)
        if not self.module.enable_fusion:
            waves = [crop_wave(w, WINDOW, self.crop) for w in waves]
        out = []
        with torch.inference_mode():
            for i in range(0, len(waves), self.batch_size):
                chunk = waves[i:i + self.batch_size]
                if self.module.enable_fusion:  # one clip at a time: crops independent of the batch
                    embs = []
                    for w in chunk:
                        with numpy_seed(self.fusion_seed):
                            embs.append(self.module.get_audio_embedding_from_data([w]))
                    out.append(np.concatenate(embs))
                else:
                    out.append(self.module.get_audio_embedding_from_data(chunk))
        return np.concatenate(out).astype(np.float32)

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        """(N, D) float32 caption embeddings (RoBERTa tokenizer, padded to 77 tokens)."""
        import torch

        texts = check_texts(texts)
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                out.append(self.module.get_text_embedding(texts[i:i + self.batch_size]))
        return np.concatenate(out).astype(np.float32)

    def describe(self) -> dict[str, Any]:
        record = getattr(self.module, "clapcap_checkpoint", {})
        ident = {f"checkpoint_{k}": v for k, v in record.items() if k in ("sha256", "fused")}
        return {"pipeline": self.pipeline, "checkpoint": self.checkpoint, **ident,
                "tokenizer": record.get("tokenizer", "unknown"),
                "preprocessing": {"sample_rate": self.sample_rate, "window_samples": WINDOW,
                                  "truncation": "fusion" if self.module.enable_fusion else "rand_trunc",
                                  "padding": "repeatpad", "crop": self.crop, "fusion_seed": self.fusion_seed,
                                  "quantize_int16": True, "frequency_min": 50, "frequency_max": 14000}}
